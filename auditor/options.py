"""The settings of one audit: what the command line (or a caller of :func:`auditor.audit`) asks for."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class AuditOptions:
    """Settings of one audit (what the CLI passes in; :func:`auditor.audit` takes the same names, and the
    command's own names where they differ from these fields: :data:`auditor.api.CLI_NAMES`).

    Every field has the default the ``audit`` command has.
    """

    #: ``--base``: an embedded base's word, a local folder, a hub id, or ``"declared"``; None: the declared base
    #: when it can be had without the hub, else the embedded default (:func:`auditor.inspect.choose_base`)
    base: str | None = None
    policy: str | None = None
    suite: str = "smoke"
    label: str | None = None
    limit: int | None = None
    capabilities: tuple[str, ...] = ()
    #: continuous batching: requests decoded at once; static: items per generate call; or "auto"
    #: (continuous: measured, :mod:`auditor.backends.hf.throughput`; static: what fits in half the free memory)
    batch_size: int | str = "auto"
    #: ``auto`` (bf16 where the hardware has native bf16, else fp32: :mod:`auditor.backends.hardware`),
    #: ``float32``, ``bfloat16`` or ``float16``
    dtype: str = "auto"
    #: why ``dtype`` is what it is (``--dtype X``, or ``auto: ...``); set by the pipeline when it resolves ``auto``
    dtype_reason: str = ""
    #: hf backend: ``auto`` / ``continuous`` (transformers' continuous batching) / ``static`` (generate calls)
    batching: str = "auto"
    #: ``auto`` / ``base`` / ``off``: an adapter's answer from the base's answer as its draft, verified in one
    #: forward pass (:mod:`auditor.backends.hf.draft`); ``auto`` drafts where the backend can (hf, continuous)
    draft: str = "auto"
    #: local folder with standard benchmark files (``--data-dir`` / ``$AUDITOR_DATA_DIR``)
    data_dir: str | None = None
    #: replay the base on another numeric path (the other dtype on a batch-invariant CPU path, else another batch
    #: composition), record what moved and mark the rules decided within it
    noise_floor: bool = False
    #: read and write the generation cache (``--no-cache`` turns it off)
    cache: bool = True
    #: ``--cache-dir``: a folder (the whole cache moves there, as with ``$AUDITOR_CACHE_DIR``) or an fsspec URL
    #: (``s3://bucket/prefix``, ``gs://…``, ``file:///…``: the answer cache, generations and weight-space
    #: pre-screens, goes there; converted models and the rest stay local); None: ``$AUDITOR_GENERATION_CACHE``
    #: for the answer cache when set, else the local cache (:func:`auditor.cache.store.using_cache_dir`)
    cache_dir: str | None = None
    #: show rich progress bars on stderr (``--quiet`` turns them off)
    progress: bool = True
    #: ``--verbose``: show the engine's own log lines (vLLM's) instead of keeping them in a log file
    verbose: bool = False
    #: ``--chat-template``: ``adapter`` (each adapter variant with the template it ships when that differs from
    #: the base's), ``base`` (every variant with the base's), ``none`` (plain prompts, no template) or a Jinja
    #: template file (every variant with it)
    chat_template: str = "adapter"
    #: ``--chat-template-arg KEY=VALUE``: keyword arguments every chat template is rendered with
    #: (:func:`auditor.inspect.chat_template.parse_template_args`), e.g. ``{"enable_thinking": False}``
    chat_template_args: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    #: a previously approved adapter to compare each candidate with as well (release-checklist mode)
    baseline: str | None = None
    #: ``auto`` (vllm when importable and a GPU is present, else hf), ``hf`` or ``vllm``
    backend: str = "auto"
    #: further ``vllm.LLM`` keyword arguments (``--vllm-arg KEY=VALUE``)
    vllm_args: dict[str, Any] = field(default_factory=dict)
    #: ``--backend openai``: the server's API root, the base's served name, the adapters' served
    #: names (in the order of the adapters, then --baseline), requests in flight at once
    endpoint: str | None = None
    served_base: str | None = None
    served_adapters: tuple[str, ...] = ()
    concurrency: int = 8
    #: ``--allow-bin``: convert a pickle ``adapter_model.bin`` (torch.load weights_only=True) and audit that
    allow_bin: bool = False
    #: ``--max-adapter-size``: the largest adapter weights file accepted (None: $AUDITOR_MAX_ADAPTER_SIZE or 4 GiB)
    max_adapter_bytes: int | None = None
    #: ``--budget``: items the rounds may add for undecided rules (None: auto, the suite's item count on
    #: the CPU, twice them on a GPU; 0: no rounds) and seconds they may take (None: no time limit)
    budget_items: int | None = None
    budget_seconds: float | None = None
    #: ``--budget Ntok``: new tokens (every variant's) the rounds may generate (None: no token limit)
    budget_tokens: int | None = None
    #: ``--ray [ADDRESS]``: generate on a Ray cluster (:mod:`auditor.backends.ray.cluster`); None: in this process;
    #: ``""``: Ray's default (``$RAY_ADDRESS``, else a new local cluster); ``local``, ``auto``, ``HOST:PORT`` or
    #: ``ray://HOST:PORT``
    ray: str | None = None
    #: ``--ray-workers``: engines (Ray actors) the adapters are split over (None: one per GPU, else one per node;
    #: never more than the adapters)
    ray_workers: int | None = None
    #: ``--ray-cpus`` / ``--ray-gpus``: each worker's CPUs (its torch threads) and GPUs (None: sized to the cluster)
    ray_cpus: float | None = None
    ray_gpus: float | None = None


def parse_budget(value: str | int) -> tuple[int | None, float | None, int | None]:
    """``--budget`` (and :func:`auditor.audit`'s ``budget=``) as :class:`AuditOptions`' ``(budget_items,
    budget_seconds, budget_tokens)``.

    ``value`` is ``auto``, a number of items (``40``, or the int 40), a time (``90s``, ``10m``, ``1h``) or new
    tokens (``20000tok``, ``50ktok``), or several of them joined by commas (``auto,20m``: auto's items, within
    20 minutes). Items are None for ``auto``, the number given, else unlimited (10**9: a time or a token budget
    alone); seconds and tokens are None when not given. Each kind may appear once.

    Raises:
        ValueError: ``value`` is none of these, or gives one kind twice (the message says which).
    """
    items: int | None = 10 ** 9  # items unlimited unless given: a time or tokens alone
    seconds: float | None = None
    tokens: int | None = None
    seen = set()
    for part in str(value).strip().lower().split(","):
        part = part.strip()
        time_m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|m|h)", part)
        tok_m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(k?)\s*tok(ens)?", part)
        kind = ("items" if part == "auto" or part.isdigit() else "time" if time_m else
                "tokens" if tok_m else None)
        if kind is None or kind in seen:
            what = "is not" if kind is None else f"gives {kind} twice:"
            raise ValueError(f"{value!r} {what} a number of items, a time (90s, 10m), new tokens (20000tok, 50ktok) "
                             "or 'auto', or several of them joined by commas (auto,20m)")
        seen.add(kind)
        if kind == "items":
            items = None if part == "auto" else int(part)
        elif time_m:
            seconds = float(time_m.group(1)) * {"s": 1, "m": 60, "h": 3600}[time_m.group(2)]
        elif tok_m:
            tokens = int(float(tok_m.group(1)) * (1000 if tok_m.group(2) else 1))
    return (items, seconds, tokens)
