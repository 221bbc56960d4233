"""The stage order of one audit, and nothing else (docs/concepts/design.md, the data flow).

``inspect → suite/plan → generate → score → analysis → policy → results`` (the reports are written
by the caller from the returned :class:`~auditor.results.AuditResult`). Cheap checks (arguments,
adapter headers, suite, policy) run before any model is loaded for generation, in the order the
user meets them: backend options, each adapter's files, the suite, the policy, the base.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from rich.markup import escape

from ..analysis.noise_floor import Replay, noise_floor
from ..backends import BACKENDS, Backend, base_on_dtype, choose_backend, fall_back_for, fall_back_for_base
from ..backends.hardware import choose_dtype
from ..backends.ray.cluster import RayBackend
from ..backends.ray.placement import check_ray_options
from ..backends.vllm.compat import gpu_present
from ..backends.vllm.startup import EngineStartError
from ..cache import GenerationCache
from ..cache.store import using_cache_dir
from ..errors import AuditInputError
from ..inspect import bin_adapter_file, choose_base, convert_bin_adapter, hub, inspect_adapter, preflight_adapter
from ..inspect.adapter import Preflight
from ..inspect.chat_template import MODES as TEMPLATE_MODES
from ..inspect.chat_template import choose_templates, load_template_file
from ..inspect.checkpoints import run_note
from ..inspect.declared_base import embedded_fit_hint
from ..inspect.weight_space import cached_weight_space
from ..options import AuditOptions
from ..policy import load_policy
from ..records import AdapterConfig, AdapterRecord, BaseModel, Generation, PromptTemplate, Request, Variant
from ..results import AuditResult
from ..scorers import SCORERS, check_scorer_data, score_all
from ..suite import load_suite, plan_requests, preset_metric_units
from ..util.files import cache_dir
from ..util.hashing import adapter_digest, folder_digest, sha256_file
from . import progress
from .assembly import BaselineRun, Run
from .rounds import one_result

Log = Callable[[str], Any]


def _check_given_once(opts: AuditOptions, given: tuple[str, ...], arg: str, digest: str, seen: dict[str, str]) -> None:
    """Refuse an adapter given twice (same weights and config), named as the user gave it (folder or
    weights file); checked before the suite, the base or any model loads.

    Raises:
        AuditInputError: the second occurrence, naming the first (or the --baseline clash).
    """
    if digest in seen:
        what = "--baseline is the" if opts.baseline and arg is given[-1] else "same adapter (weights and config) as"
        raise AuditInputError(arg, f"{what} {seen[digest]}{' adapter' if what.startswith('--') else ''}; "
                                   "give each adapter once")
    seen[digest] = arg


def _given_adapters(opts: AuditOptions, adapters: tuple[str, ...]
                    ) -> tuple[tuple[str, ...], dict[str, dict[str, str]], dict[str, Path]]:
    """The adapters (and ``--baseline``) as local folders: hub ids resolved to snapshots, ``--allow-bin``
    pickles converted in the cache. Returns (paths, hub record per path, user's .bin per converted path)."""
    given = (*adapters, opts.baseline) if opts.baseline else tuple(adapters)
    # hub ids (owner/name[@revision][:path/in/repo]) become local snapshots; the resolved commit goes into results.json
    hub_refs = {a: hub.resolve(a, "adapter") for a in given if hub.looks_like_hub_id(a)}
    given = tuple(str(hub_refs[a].path) if a in hub_refs else a for a in given)
    hub_of = {str(ref.path): ref.as_dict() for ref in hub_refs.values()}
    # --allow-bin: pickle adapters become safetensors ones in the cache (the user's folder is never written)
    converted: dict[str, Path] = {}  # converted folder -> the user's .bin file
    if opts.allow_bin:
        conv = {a: str(convert_bin_adapter(a, cache_dir(), opts.max_adapter_bytes))
                for a in given if bin_adapter_file(a) is not None}
        converted = {c: f for a, c in conv.items() if (f := bin_adapter_file(a)) is not None}
        given = tuple(conv.get(a, a) for a in given)
    return given, hub_of, converted


def _weight_space(infos: list[AdapterRecord], configs: list[AdapterConfig], names: list[str], base_path: Path,
                  base_digest: str, log: Log) -> tuple[list[AdapterRecord], dict[str, float]]:
    """The weight-space pre-screen of each adapter (:func:`~auditor.inspect.weight_space.cached_weight_space`: SVDs
    of every adapted module against the base's weights, before any model loads; cached by content), announced in
    the log. Returns the records with it and its seconds per variant name (``run.timings.weight_space_s``)."""
    n_modules = sum(len(i.ranks) for i in infos)
    log(f"weight-space pre-screen: {len(infos)} adapter{'s' if len(infos) != 1 else ''}, {n_modules} adapted "
        "modules against the base's weights (cached by content)")
    out, seconds = [], {}
    for info, cfg, name in zip(infos, configs, names):
        t0 = time.perf_counter()
        space = cached_weight_space(Path(info.weights_file), cfg, base_path, info.ranks, base_digest)
        seconds[name] = round(time.perf_counter() - t0, 3)
        out.append(replace(info, weight_space=space))
    return out, seconds


def _inspected(pre: Preflight, base: BaseModel, opts: AuditOptions, converted_from: Path | None,
               hub_record: dict[str, str] | None, shown: str) -> AdapterRecord:
    """:func:`~auditor.inspect.inspect_adapter` of one adapter; refused on a base its tensors do not fit, the error
    names the embedded base they fit, if one does, and the command that audits ``shown`` (as given) on it.

    Raises:
        AuditInputError: as :func:`~auditor.inspect.inspect_adapter`.
    """
    try:
        return inspect_adapter(pre, base.path, base.name, opts.max_adapter_bytes, converted_from=converted_from,
                               hub=hub_record)
    except AuditInputError as e:
        hint = embedded_fit_hint(pre.weights, pre.tensors, base.path, base.name, shown)
        if not hint:
            raise
        raise AuditInputError(e.path, e.fault + hint) from None


def run_audits(adapters: tuple[str, ...], opts: AuditOptions, log: Log = print,
               stop_after: Callable[[AuditResult], bool] | None = None) -> list[AuditResult]:
    """Audit several adapters of one base against one base pass, with the cache ``opts.cache_dir`` names
    (checked first: a location that cannot be opened, reached or written is refused before anything else)."""
    with using_cache_dir(opts.cache_dir):
        return _run_audits(adapters, opts, log, stop_after)


def _run_audits(adapters: tuple[str, ...], opts: AuditOptions, log: Log = print,
                stop_after: Callable[[AuditResult], bool] | None = None) -> list[AuditResult]:
    """Audit several adapters of one base against one base pass.

    The base variant of every item is generated once (or taken from the cache) and each adapter's
    answers are compared with it; one :class:`~auditor.results.AuditResult` per adapter, in the order
    given. Every adapter is checked (headers, tensors, base match) before any model is loaded.
    ``stop_after``: the adapters are judged in the order given, and the first result it is true of
    ends the run (the later adapters get no rounds and no result; their suite answers, generated in the
    one shared pass, are in the cache): ``--stop-at-first-fail``.

    Raises:
        AuditInputError: any fault in the inputs, or the same adapter given twice.
    """
    t_start = time.perf_counter()
    given, hub_of, converted = _given_adapters(opts, adapters)
    # each adapter's files and headers first (read once: inspection takes them on): a broken adapter is refused
    # before the backend's choice imports torch
    checked = [preflight_adapter(a, opts.max_adapter_bytes) for a in given]
    backend_name, backend_reason = choose_backend(opts.backend)
    BACKENDS[backend_name].check_options(opts, len(given))
    check_ray_options(opts, backend_name)
    if len(opts.served_adapters) > len(given):
        raise AuditInputError("--served-adapter", f"{len(opts.served_adapters)} names for {len(given)} adapters")
    seen: dict[str, str] = {}  # adapter digest -> the argument that named it, in the order given
    for a, pre in zip(given, checked):
        _check_given_once(opts, given, a, adapter_digest(sha256_file(pre.weights), pre.folder / "adapter_config.json"),
                          seen)
        backend_name, backend_reason = fall_back_for(opts.backend, backend_name, backend_reason, pre.config, pre.tensors)
        BACKENDS[backend_name].check_adapter(pre.weights, pre.config, pre.tensors)
    dtype, dtype_reason = choose_dtype(opts.dtype, backend_name, backend_name != "openai" and gpu_present())
    opts = replace(opts, dtype=dtype, dtype_reason=dtype_reason)
    suite = load_suite(opts.suite, limit=opts.limit, only=opts.capabilities, data_dir=opts.data_dir, scorers=SCORERS)
    units = {**preset_metric_units(SCORERS), **suite.metric_units}
    policy = load_policy(opts.policy, sorted(units), units)
    for line in policy.warnings:
        log(progress.warning(line))
    check_scorer_data(c.scorer for c in suite.capabilities)
    base, base_warnings = choose_base(opts.base, [(pre.folder / "adapter_config.json", pre.config.base_model_name_or_path)
                                                  for pre in checked])
    backend_name, backend_reason = fall_back_for_base(opts.backend, backend_name, backend_reason, base.path)
    if opts.chat_template not in TEMPLATE_MODES:  # a --chat-template FILE is checked now, before the pre-screen's SVDs
        load_template_file(opts.chat_template, base.path)
    base_digest = folder_digest(base.path)
    shown = (*adapters, opts.baseline) if opts.baseline else tuple(adapters)  # as the user gave them
    infos = [_inspected(pre, base, opts, converted.get(a), hub_of.get(str(pre.folder)), arg)
             for a, arg, pre in zip(given, shown, checked)]
    # variant names: "adapter" for a single audit (what results.json has always said), adapter0.. for several,
    # "baseline" for the previously approved adapter
    names = ["adapter"] if len(adapters) == 1 else [f"adapter{k}" for k in range(len(adapters))]
    if opts.baseline:
        names.append("baseline")
    # the chat template of each variant's prompts (checked now: a bad template is refused before any model loads, and
    # before the pre-screen says a word: a refused input gets its one error line only)
    templates, template_warnings = choose_templates(opts.chat_template, base.path, dict(zip(names, infos)),
                                                    opts.chat_template_args)
    infos, weight_space_s = _weight_space(infos, [pre.config for pre in checked], names, base.path, base_digest, log)
    # an adapter whose declared base cannot be had (audited on the embedded default instead) is warned about, and
    # one that is a Trainer's output_dir holding checkpoint-N folders (audited as its final adapter only)
    variants = [Variant(name=n, info=i,
                        warnings=(*([w] if (w := base_warnings.get(pre.folder / "adapter_config.json")) else []),
                                  *template_warnings[n], *([note] if (note := run_note(a)) else [])))
                for n, i, pre, a in zip(names, infos, checked, given)]
    for line in progress.setup_lines(base, variants):
        log(line)

    cache = GenerationCache.default(enabled=opts.cache)
    log(f"backend: {backend_name} ({backend_reason})")
    started: list[Backend] = []  # a Ray run's workers end with the run, and a fallback's first engine before it
    try:
        start = partial(_start, opts=opts, base=base, variants=variants, cache=cache, base_digest=base_digest,
                        templates=templates, log=log, started=started)
        backend, backend_reason, generations = _first_look(start, backend_name, backend_reason, opts.backend,
                                                           plan_requests(suite, ("base", *names)), log)
        for w in backend.setup_warnings:
            log(progress.warning(w))
        for line in progress.cache_lines(cache.stats):
            log(line)
        items = {i.id: i for i in suite.items}
        scorer_of = {c.name: c.scorer for c in suite.capabilities}
        base_gens = tuple(g for g in generations if g.variant == "base")
        base_scores = tuple(score_all(items, list(base_gens), scorer_of))
        noise = None
        if opts.noise_floor:
            replay = _other_dtype(backend, opts, base, cache, base_digest, templates) if backend.batch_invariant else None
            noise = noise_floor(backend, suite, list(base_gens), list(base_scores), scorer_of, log, replay)
        baseline = None
        if opts.baseline:
            prev = tuple(g for g in generations if g.variant == "baseline")
            baseline = BaselineRun(variant=variants[-1], generations=prev,
                                   scores=tuple(score_all(items, list(prev), scorer_of)))
        run = Run(opts=opts, t_start=t_start, suite=suite, policy=policy, base=base, base_digest=base_digest,
                  backend=backend, backend_reason=backend_reason, scorer_of=scorer_of, base_gens=base_gens,
                  base_scores=base_scores, noise=noise, n_adapters=len(infos), baseline=baseline,
                  warnings=(*policy.warnings, *backend.setup_warnings), weight_space_s=weight_space_s)
        results = []
        for v in variants[:len(adapters)]:
            results.append(one_result(run, v, [g for g in generations if g.variant == v.name], log))
            if stop_after is not None and stop_after(results[-1]) and len(results) < len(adapters):
                log(progress.stopped_line(v, len(adapters) - len(results)))
                break
        return results
    finally:
        for b in started:
            _close(b)


def _first_look(start: Callable[[str], Backend], name: str, reason: str, requested: str, requests: list[Request],
                log: Log) -> tuple[Backend, str, list[Generation]]:
    """The run's backend started (``start``) and every variant's answers to the suite's items, with the backend's
    name-and-reason as the run records it: with ``--backend auto``, a vLLM engine that cannot start falls back to
    hf, as auto does for adapters vLLM cannot serve."""
    backend = start(name)
    try:
        return backend, reason, backend.generate(requests)
    except EngineStartError as e:
        if requested != "auto":
            raise
        reason = f"auto: the vLLM engine did not start ({e.cause}), hf"
        backend = start("hf")
        backend.setup_warnings.append(reason)
        log(f"backend: hf ({escape(reason)})")
        return backend, reason, backend.generate(requests)


def _start(name: str, *, opts: AuditOptions, base: BaseModel, variants: list[Variant], cache: GenerationCache,
           base_digest: str, templates: dict[str, PromptTemplate], log: Log, started: list[Backend]) -> Backend:
    """The run's backend, with each variant's chat template set (no engine loads yet), added to ``started``;
    with ``--ray``, the engine on the Ray cluster's workers (:class:`~auditor.backends.ray.cluster.RayBackend`:
    connected, its actors started)."""
    backend: Backend
    if opts.ray is None:
        backend = BACKENDS[name].create(opts, base, variants, cache, base_digest)
        backend.show_progress = opts.progress
    else:
        backend = RayBackend(name, opts, base, variants, cache, base_digest)
    started.append(backend)
    backend.set_templates(templates)
    if isinstance(backend, RayBackend):
        log(f"ray: {escape(backend.describe())}")
    return backend


def _other_dtype(backend: Backend, opts: AuditOptions, base: BaseModel, cache: GenerationCache, base_digest: str,
                 templates: dict[str, PromptTemplate]) -> Replay:
    """The base alone on the other dtype (float32, or bfloat16 for a float32 audit): ``--noise-floor``'s replay
    for a backend whose answers do not depend on the batch (with ``--ray``, on the base pass's worker). A second
    copy of the base's weights; its answers are cached under their own dtype, not counted in the run's cache
    figures."""
    other = "bfloat16" if backend.dtype == "float32" else "float32"
    if isinstance(backend, RayBackend):
        return backend.replay_on(other)
    return base_on_dtype(backend.name, opts, base, GenerationCache(cache.store), base_digest, templates, other,
                         progress=opts.progress)


def _close(backend: Backend) -> None:
    """End a Ray run's workers and its connection (a single-process engine is freed with the process)."""
    if isinstance(backend, RayBackend):
        backend.close()
