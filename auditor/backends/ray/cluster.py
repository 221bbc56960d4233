"""``--ray [ADDRESS]``: one audit run's generation executed by Ray actors, each holding one engine.

The plan is the single-process run's (:func:`auditor.pipeline.run_audits`): the same requests, the same
calls in the same order; only where a call's rows are generated changes. :class:`RayBackend` is the
run's :class:`~auditor.backends.Backend` on the driver. It splits the run's adapters into contiguous
groups, one per worker (an :class:`~auditor.backends.ray.worker.EngineWorker` actor holding one hf or vllm
engine: the base loaded once, its group's adapters on it, and ``--baseline``'s on every worker), and
routes each ``generate`` call's rows:

* the first look (every item under the base and every adapter): each adapter's rows to its worker, the
  base's (and the baseline's) to worker 0, the base-pass worker, whose group is one adapter smaller
  (:func:`plan_groups`); the workers generate at once;
* a round of one adapter (base, that adapter, the baseline, on the round's new items): every row to the
  worker holding that adapter, as the single-process engine generates them together;
* a base-only call (``--noise-floor``'s replay): worker 0.

Rounds are drawn on the driver from the verdicts, adapter after adapter in the order given, so the
items, their order and the cache's hits and misses are the single-process run's; the counters each worker
returns are summed into :attr:`RayBackend.stats` and the cache's stats, so results.json's ``run`` block
is the single-process run's too, apart from the timings, the engine's per-worker streams
(``run.hf.streams``) and ``run.ray`` (the placement). Scoring, analysis, policy and reports stay on the
driver. Every worker opens the same generation cache (the driver's store: a folder, or an fsspec location such as
``s3://…`` given by ``--cache-dir``; with every ``AUDITOR_*`` variable
passed in the actors' ``runtime_env``), and the base, the adapters and the cache must be at the same paths
on every node.

This is the actor path: it runs the project's own engines, on CPU nodes as on GPU nodes. Ray Data's LLM
batch path (``ray.data.llm`` with a vLLM engine and LoRA requests) is the field's way for offline batch
inference on GPU clusters; it is not built here (future work, see the README).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.generations import CacheStats, GenerationCache
from ...errors import EXIT_INTERNAL_ERROR, AuditInputError
from ...records import BaseModel, Generation, Item, PromptTemplate, Request, Variant
from ...util.env import env_seconds
from ..base import GenerationStats
from .placement import plan_groups, size_workers

if TYPE_CHECKING:
    from ...options import AuditOptions

#: seconds the workers may take to be placed and to start (import torch, load the tokenizer); the variable
#: :data:`PLACEMENT_TIMEOUT_ENV` overrides it (read when the workers start: a bad value is one line, exit 2)
PLACEMENT_TIMEOUT_S = 300.0
PLACEMENT_TIMEOUT_ENV = "AUDITOR_RAY_PLACEMENT_TIMEOUT"
#: the base pass worker: the base's rows of the first look and of base-only calls
BASE_WORKER = 0
#: besides every AUDITOR_* variable, what the workers get of the driver's environment (offline hub switches)
PASSED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME")


class RayWorkerError(AuditInputError):
    """A Ray worker that died or failed for reasons of its own: one line naming the worker, exit code 3
    (:data:`~auditor.errors.EXIT_INTERNAL_ERROR`), and no verdict."""

    exit_code = EXIT_INTERNAL_ERROR


def raise_fault(fault: dict[str, Any], worker: str) -> None:
    """Raise again what a worker's envelope reports (:func:`auditor.backends.ray.worker._fault`)."""
    if fault["kind"] == "engine-start":
        from ..vllm.startup import EngineStartError

        raise EngineStartError(fault["cause"], fault["fix"], fault["user_caused"],
                               Path(fault["log"]) if fault.get("log") else None)
    if fault["kind"] == "input" and fault["exit_code"] != EXIT_INTERNAL_ERROR:
        raise AuditInputError(fault["path"], fault["fault"])
    raise RayWorkerError(fault.get("path") or worker, fault["fault"])


def _summed(dicts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


class RayBackend:
    """The run's backend on the driver (the :class:`~auditor.backends.Backend` protocol) when ``--ray`` is
    given: ``engine`` (``hf`` or ``vllm``) on Ray actors, see the module's doc for what goes where.

    Connects on construction (``ray.init``: ``opts.ray`` empty is Ray's default, ``RAY_ADDRESS`` or a new
    local cluster; ``local`` a new one; ``auto`` the running local one; else that address); the actors start
    in :meth:`set_templates` (named ``auditor-<run id>-worker-<k>`` in the driver's namespace), engines load
    on the first generation; :meth:`close` ends them (and the
    connection, when this backend made it).

    Raises:
        AuditInputError: ``ray.init`` refused the address (on construction); (from :meth:`set_templates`) the
            workers cannot be placed within
            :data:`PLACEMENT_TIMEOUT_S`, a worker of another auditor version, or what the engine refuses.
        RayWorkerError: a worker died or failed (exit code 3).
    """

    def __init__(self, engine: str, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant],
                 cache: GenerationCache, base_digest: str) -> None:
        import logging

        import ray

        self.name, self.opts, self.base, self.variants, self.cache = engine, opts, base, list(variants), cache
        self.base_digest = base_digest
        #: engine attributes every worker sets, so that a group decides as the whole run does (hf: no mixed
        #: rows when any adapter of the run is DoRA; static batching when any has a resized vocabulary)
        self.overrides: dict[str, Any] = {}
        if engine == "hf" and any(v.info.dora for v in variants):
            self.overrides["mix_variants"] = False
        if engine == "hf" and opts.batching == "auto" and any(v.info.vocab_resize is not None for v in variants):
            self.overrides["batching"] = "static"
        self.stats = GenerationStats(engine, batch_size=opts.batch_size)
        self.batch_size: int | str = opts.batch_size
        self.dtype = opts.dtype
        self.show_progress = False
        self.templates: dict[str, PromptTemplate] = {}
        self.setup_warnings: list[str] = []
        self._owns = not ray.is_initialized()
        if self._owns:
            address = {"": None, "local": "local"}.get(opts.ray.strip() if opts.ray else "", opts.ray)
            try:  # Ray's own log lines: errors only
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            except (ConnectionError, RuntimeError, ValueError) as e:  # e.g. a cluster that wants an auth token
                raise AuditInputError("--ray", f"ray.init({address!r}) failed: {type(e).__name__}: "
                                               f"{' '.join(str(e).split())[:300]}") from None
        self.address = str(ray.get_runtime_context().gcs_address)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        names = [v.name for v in self.variants if v.name != "baseline"]
        workers, self.cpus, self.gpus = size_workers(opts, len(names), nodes)
        self.groups = plan_groups(names, workers)
        self._worker_of = {n: k for k, g in enumerate(self.groups) for n in g}
        self._actors: list[Any] = []
        self._where: list[dict[str, Any]] = []
        self._snapshots: dict[int, dict[str, Any]] = {}
        self._nodes = nodes

    # ------------------------------------------------------------------ the actors

    def set_templates(self, templates: dict[str, PromptTemplate]) -> None:
        """Start one actor per group, each with the chat templates of the base and its variants, and wait
        until every one is placed and has its engine's tokenizer (at most :data:`PLACEMENT_TIMEOUT_S`)."""
        import ray

        from .worker import EngineWorker

        self.templates = dict(templates)
        env = {k: v for k, v in os.environ.items() if k.startswith("AUDITOR_") or k in PASSED_ENV}
        remote = ray.remote(EngineWorker)
        baseline = [v for v in self.variants if v.name == "baseline"]
        run_id = uuid.uuid4().hex[:8]
        for k, group in enumerate(self.groups):
            held = [v for v in self.variants if v.name in group] + baseline
            tpl = {n: t for n, t in templates.items() if n == "base" or n in {v.name for v in held}}
            actor = remote.options(name=f"auditor-{run_id}-worker-{k}", num_cpus=self.cpus, num_gpus=self.gpus, scheduling_strategy="SPREAD",
                                   runtime_env={"env_vars": env}, max_restarts=0).remote(
                self.name, self.opts, self.base, held, self.cache.store,
                self.base_digest, tpl, self.overrides, max(1, int(self.cpus)))
            self._actors.append(actor)
        refs = [a.where.remote() for a in self._actors]
        placement_s = env_seconds(PLACEMENT_TIMEOUT_ENV, PLACEMENT_TIMEOUT_S, most=86400.0)
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=placement_s)
        if len(ready) < len(refs):
            total = {k: sum(float(n["Resources"].get(k, 0)) for n in self._nodes) for k in ("CPU", "GPU")}
            raise AuditInputError("--ray-workers", f"{len(refs)} workers of {self.cpus:g} CPUs and {self.gpus:g} GPUs "
                                                   f"could not all start within {placement_s:g} s on the "
                                                   f"cluster ({len(self._nodes)} nodes, {total['CPU']:g} CPUs, "
                                                   f"{total['GPU']:g} GPUs): give fewer --ray-workers or --ray-cpus")
        self._where = [self._get(k, ref) for k, ref in enumerate(refs)]
        from ...util.version import __version__

        for k, w in enumerate(self._where):
            if w["auditor_version"] != __version__:
                raise AuditInputError("--ray", f"worker {k} on {w['node']} runs adapter-auditor {w['auditor_version']}, "
                                               f"the driver {__version__}: install the same version on every node")

    def _get(self, k: int, ref: Any) -> Any:
        """The value of worker ``k``'s call ``ref``, or its fault raised (:func:`raise_fault`)."""
        import ray

        who = f"ray worker {k}" + (f" (node {self._where[k]['node']})" if k < len(self._where) else "")
        try:
            envelope = ray.get(ref)
        except ray.exceptions.RayActorError as e:
            raise RayWorkerError(who, f"died: {' '.join(str(e).split())[:300]}; no verdict was made") from None
        except ray.exceptions.RayError as e:
            raise RayWorkerError(who, f"{type(e).__name__}: {' '.join(str(e).split())[:300]}") from None
        if "error" in envelope:
            raise_fault(envelope["error"], who)
        return envelope["ok"]

    def close(self) -> None:
        """End the actors (their engines' memory is freed), and the connection when this backend made it."""
        import ray

        if not ray.is_initialized():
            return
        for a in self._actors:
            ray.kill(a)
        self._actors = []
        if self._owns:
            ray.shutdown()

    # ------------------------------------------------------------------ the Backend protocol

    @property
    def device(self) -> str | None:
        """The base pass worker's torch device (hf: ``cpu`` or ``cuda``; None for vllm)."""
        return self._where[BASE_WORKER]["device"] if self._where else None

    @property
    def batch_invariant(self) -> bool:
        """The base pass worker's engine says its answers do not depend on the batch (hf on a CPU)."""
        return bool(self._where) and bool(self._where[BASE_WORKER].get("batch_invariant"))

    def replay_on(self, dtype: str) -> RayReplay:
        """``--noise-floor``'s replay of the base on ``dtype``, on the base pass's worker (:class:`RayReplay`)."""
        return RayReplay(self, dtype)

    def generate_replay(self, requests: list[Request], dtype: str) -> list[Generation]:
        """The base's answers to ``requests`` from the base pass's worker's engine of the base alone in ``dtype``
        (:meth:`EngineWorker.replay`), in order.

        Raises:
            RayWorkerError: the worker died or failed (exit code 3).
        """
        actor = self._actors[BASE_WORKER]
        return list(self._get(BASE_WORKER, actor.replay.remote(requests, dtype)))

    @property
    def model_loaded(self) -> bool:
        return any(s["model_loaded"] for s in self._snapshots.values())

    def _worker_for(self, variant: str) -> int:
        return self._worker_of.get(variant, BASE_WORKER)

    def render(self, item: Item, variant: str = "base") -> str:
        k = self._worker_for(variant)
        return str(self._get(k, self._actors[k].call.remote("render", item, variant)))

    def settings(self) -> dict:
        return dict(self._get(BASE_WORKER, self._actors[BASE_WORKER].call.remote("settings")))

    def generate(self, requests: list[Request], split_small: bool = False, use_cache: bool = True) -> list[Generation]:
        """One Generation per request, in order: each worker's rows generated at once (see the module's doc for
        which rows go where), its counters added to :attr:`stats` and the cache's stats.

        Raises:
            RayWorkerError: a worker died or failed (exit code 3).
            AuditInputError: what the engine refused (as the single-process backend raises it).
        """
        t0 = time.perf_counter()
        holders = {self._worker_of[r.variant] for r in requests if r.variant in self._worker_of}
        shared = next(iter(holders)) if len(holders) == 1 else BASE_WORKER  # base and baseline rows
        rows: dict[int, list[int]] = {}
        for i, r in enumerate(requests):
            rows.setdefault(self._worker_of.get(r.variant, shared), []).append(i)
        refs = {k: self._actors[k].generate.remote([requests[i] for i in idx], split_small, use_cache,
                                                   self.batch_size) for k, idx in sorted(rows.items())}
        out: list[Generation | None] = [None] * len(requests)
        for k, ref in refs.items():
            gens, snapshot = self._get(k, ref)
            self._snapshots[k] = snapshot
            for i, g in zip(rows[k], gens):
                out[i] = g
        self._sum_counters()
        self.stats.generate_s += time.perf_counter() - t0
        return [g for g in out if g is not None]

    def _sum_counters(self) -> None:
        """:attr:`stats` and the cache's stats: every worker's counters summed (load time: the slowest worker's)."""
        snaps = [self._snapshots[k] for k in sorted(self._snapshots)]
        st = [s["stats"] for s in snaps]
        self.stats.new_tokens = _summed([s["new_tokens"] for s in st])
        self.stats.generated = _summed([s["generated"] for s in st])
        self.stats.batch_sizes_used = {k: v for s in st for k, v in s["batch_sizes_used"].items()}
        self.stats.load_s = max(s["load_s"] for s in st)
        cs = [s["cache"] for s in snaps]
        self.cache.stats = CacheStats(enabled=self.cache.stats.enabled, hits=_summed([c["hits"] for c in cs]),
                                      misses=_summed([c["misses"] for c in cs]), writes=sum(c["writes"] for c in cs),
                                      unreadable=sum(c["unreadable"] for c in cs),
                                      failed_writes=sum(c.get("failed_writes", 0) for c in cs),
                                      location=self.cache.stats.location,
                                      write_error=next((c["write_error"] for c in cs if c.get("write_error")), ""))
        for s in snaps:
            self.setup_warnings += [w for w in s["setup_warnings"] if w not in self.setup_warnings]

    def run_info(self, variant: str) -> dict[str, Any] | None:
        """The engine's record (``run.hf`` / ``run.vllm``) of the worker holding ``variant``."""
        snap = self._snapshots.get(self._worker_for(variant))
        return None if snap is None else snap["run_info"].get(variant)

    # ------------------------------------------------------------------ what results.json records

    def placement(self, variant: str) -> dict[str, Any]:
        """results.json's ``run.ray``: the cluster's address, each worker (node, CPUs, GPUs, torch threads, the
        adapters it served), the base pass worker and the worker that served ``variant``."""
        path_of = {v.name: v.info.path for v in self.variants}
        return {"address": self.address, "base_pass_worker": BASE_WORKER, "worker": self._worker_for(variant),
                "workers": [{"worker": k, "node": w["node"], "cpus": self.cpus, "gpus": self.gpus,
                             "threads": w["threads"], "adapters": [path_of[n] for n in self.groups[k]]}
                            for k, w in enumerate(self._where)]}

    def describe(self) -> str:
        """One line for the log: the address and each worker's node and adapters."""
        folder = {v.name: Path(v.info.path).name for v in self.variants}
        n = len(self.groups)
        return f"{n} worker{'s' if n != 1 else ''} at {self.address}: " + "; ".join(
            f"worker {k} on {w['node']} ({self.cpus:g} CPUs, {self.gpus:g} GPUs): "
            + ", ".join((["base pass"] if k == BASE_WORKER else []) + [folder[n] for n in self.groups[k]])
            for k, w in enumerate(self._where))


class RayReplay:
    """The base alone on another dtype, on the base pass's worker (:meth:`EngineWorker.replay`): what
    ``--noise-floor`` replays on a batch-invariant engine.

    Attributes:
        dtype: the replay's dtype.
        batch_size: the run's (the worker's engine sizes itself).
    """

    def __init__(self, owner: RayBackend, dtype: str) -> None:
        self.owner, self.dtype, self.batch_size = owner, dtype, owner.batch_size

    def generate(self, requests: list[Request]) -> list[Generation]:
        """One Generation per request, in order.

        Raises:
            RayWorkerError: the worker died or failed (exit code 3).
        """
        return self.owner.generate_replay(requests, self.dtype)
