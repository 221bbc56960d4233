"""A weight-space pre-screen: how large and how foreign the adapter's update is, from the tensors
alone, in seconds, before any generation.

Per adapted module, with ``ΔW = scale · B · A`` (``scale = lora_alpha / r``, ``lora_alpha / √r``
with ``use_rslora``; ``rank_pattern`` / ``alpha_pattern`` per module) and the base's weight ``W``:

* **relative norm** ``‖ΔW‖_F / ‖W‖_F`` (a fraction);
* **effective rank** of ΔW: ``exp(H(p))`` with ``p`` the normalised singular values of ΔW
  (Roy & Vetterli, 2007), between 1 and the LoRA rank;
* **intruder dimensions**: among the top ``top_k`` left singular vectors of ``W + ΔW``, those whose
  largest absolute cosine similarity with every left singular vector of ``W`` is below
  ``epsilon`` (Shuttleworth et al., "LoRA vs full fine-tuning: an illusion of equivalence",
  arXiv:2410.21228; ``top_k=10``, ``epsilon=0.5`` as PEFT's ``reduce_intruder_dimension``, which
  computes the same similarity but needs the model loaded and rewrites the adapter, so it is not
  called here). Counted on every module when the adapted base weights hold at most
  :data:`~auditor.records.inputs.INTRUDER_BUDGET` elements, else on an even sample
  (:func:`intruder_sample`): on a Llama-3-8B-shaped base, decomposing all 224 projections of an
  all-linear adapter took minutes on two CPU cores.

The summary is descriptive: whether it predicts behavioural drift is measured on the adapter zoo
(``benchmarks/gate_accuracy.py``); the policy does not fail an adapter on it.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..records import AdapterConfig, ModuleWeightSpace, WeightSpace
from ..records.inputs import INTRUDER_BUDGET as BUDGET
from ..records.inputs import INTRUDER_EPSILON as EPSILON
from ..records.inputs import INTRUDER_TOP_K as TOP_K
from .tensors import PEFT_PREFIX, VOCAB_MODULES

#: above this many elements the intruder check uses randomised truncated SVDs (torch.svd_lowrank): the top
#: ``top_k`` directions of W + ΔW against the top ``4 · top_k`` of W (a Llama-8B projection is 4096² or
#: 14336 × 4096; the embedded bases' are below it)
_FULL_SVD_MAX = 2**21


def _natural(name: str) -> list:
    """``name`` as a sort key with its numbers as numbers (``layers.2`` before ``layers.10``)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def intruder_sample(shapes: Mapping[str, tuple[int, int]], budget: int = BUDGET) -> set[str]:
    """The modules whose intruder dimensions are counted (``shapes``: module → the base weight's [out, in]):
    every one when their weights hold at most ``budget`` elements in all; else, for each module kind (the
    name's last part: ``q_proj``, ``down_proj``, ...), the same share of its layers (at least one), spread
    evenly from the first layer to the last."""
    total = sum(o * i for o, i in shapes.values())
    if total <= budget:
        return set(shapes)
    share = budget / total
    kinds: dict[str, list[str]] = {}
    for m in sorted(shapes, key=_natural):
        kinds.setdefault(m.rsplit(".", 1)[-1], []).append(m)
    chosen: set[str] = set()
    for mods in kinds.values():
        n = max(1, int(share * len(mods)))
        picks = {len(mods) // 2} if n == 1 else {round(j * (len(mods) - 1) / (n - 1)) for j in range(n)}
        chosen.update(mods[j] for j in picks)
    return chosen


def _base_tensor_files(base_path: Path) -> dict[str, Path]:
    """Weight name → the safetensors file holding it (one file, or a sharded checkpoint's index)."""
    index = base_path / "model.safetensors.index.json"
    if index.is_file():
        mapping = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        return {k: base_path / v for k, v in mapping.items()}
    files = sorted(base_path.glob("*.safetensors"))
    out: dict[str, Path] = {}
    from safetensors import safe_open

    for f in files:
        with safe_open(str(f), framework="pt") as h:
            out.update({k: f for k in h.keys()})
    return out


def _left_singular(m, k: int):
    import torch

    if m.numel() <= _FULL_SVD_MAX:
        return torch.linalg.svd(m, full_matrices=False)[0][:, :k]
    return torch.svd_lowrank(m, q=k + 10, niter=4)[0][:, :k]


#: the base's left singular vectors per weight, keyed by the file's identity (resolved path, device, inode, size,
#: modification time), the weight's name, whether it is transposed and how many vectors: the same for every adapter
#: on one base, so a run of several adapters (the demo's two, a zoo, a training run's checkpoints) computes them once.
#: Least recently used first out beyond :data:`_BASE_BASES_BYTES`, so a large base holds at most that much.
_BASE_BASES: OrderedDict[tuple, Any] = OrderedDict()
_BASE_BASES_BYTES = 512 * 2**20


def _file_identity(f: Path) -> tuple:
    """``f`` as :data:`_BASE_BASES` keys it: a rewritten base has another modification time or size."""
    st = f.stat()
    return str(f.resolve()), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _base_left_singular(w, file_identity: tuple, name: str, transposed: bool, k: int):
    """:func:`_left_singular` of the base's weight ``name`` in the file of ``file_identity``
    (:func:`_file_identity`), remembered for the process while that file is unchanged."""
    key = (*file_identity, name, transposed, k)
    u = _BASE_BASES.get(key)
    if u is not None:
        _BASE_BASES.move_to_end(key)
        return u
    u = _left_singular(w, k)
    size = u.numel() * u.element_size()
    if size <= _BASE_BASES_BYTES:
        _BASE_BASES[key] = u
        while sum(v.numel() * v.element_size() for v in _BASE_BASES.values()) > _BASE_BASES_BYTES:
            _BASE_BASES.popitem(last=False)
    return u


def lora_singular_values(a, b, scale: float):
    """The singular values of ``ΔW = scale · B · A`` from its factors (``a``: [r, in], ``b``: [out, r]), in
    float64: with ``B = Q_B R_B`` and ``Aᵀ = Q_A R_A`` (thin QR), ``ΔW = Q_B (scale R_B R_Aᵀ) Q_Aᵀ`` has the
    singular values of the small core, so no out × in matrix is decomposed. Shape [min(r, out, in)], descending."""
    import torch

    r_b = torch.linalg.qr(b.double(), mode="r")[1]
    r_a = torch.linalg.qr(a.double().T, mode="r")[1]
    return torch.linalg.svdvals(scale * (r_b @ r_a.T))


def weight_space(weights: Path, cfg: AdapterConfig, base_path: Path, ranks: Mapping[str, int],
                 top_k: int = TOP_K, epsilon: float = EPSILON, budget: int = BUDGET) -> WeightSpace:
    """The pre-screen of an adapter that passed inspection (``ranks``: module → real rank).

    Reads the adapter's LoRA factors and, for the same modules only, the base's weights (memory-mapped
    safetensors); nothing else of the base is loaded. Computed in float32, ΔW's singular values in float64.
    Intruder dimensions on :func:`intruder_sample`'s modules (``budget`` elements of base weights).
    """
    import torch
    from safetensors import safe_open

    base_files = _base_tensor_files(Path(base_path))
    modules: list[ModuleWeightSpace] = []
    skipped: list[str] = []
    handles: dict[Path, Any] = {}
    identities: dict[Path, tuple] = {}
    with safe_open(str(weights), framework="pt") as ad:
        names = set(ad.keys())
        factors: dict[str, tuple[str, str]] = {}
        for module in sorted(ranks):
            if module.rsplit(".", 1)[-1] in VOCAB_MODULES:
                skipped.append(f"{module} (vocabulary-sized)")
                continue
            a_name = next((n for n in (f"{PEFT_PREFIX}{module}.lora_A.weight", f"{PEFT_PREFIX}{module}.lora_A.default.weight")
                           if n in names), None)
            b_name = a_name.replace("lora_A", "lora_B") if a_name else None
            if a_name is None or b_name is None or b_name not in names or f"{module}.weight" not in base_files:
                skipped.append(f"{module} (no LoRA factors or base weight found)")
                continue
            factors[module] = (a_name, b_name)
        # ΔW's shape from the factors' headers ([out, r] and [r, in]), before any tensor is read
        checked = intruder_sample({m: (ad.get_slice(b).get_shape()[0], ad.get_slice(a).get_shape()[-1])
                                   for m, (a, b) in factors.items()}, budget)
        for module, (a_name, b_name) in factors.items():
            w_name = f"{module}.weight"
            f = base_files[w_name]
            if f not in handles:
                handles[f] = safe_open(str(f), framework="pt").__enter__()
                identities[f] = _file_identity(f)
            w = handles[f].get_tensor(w_name).float()
            a, b = ad.get_tensor(a_name).float(), ad.get_tensor(b_name).float()
            if cfg.fan_in_fan_out:
                w = w.T  # transformers' Conv1D (GPT-2) stores [in, out] (PEFT's fan_in_fan_out); ΔW = B A is [out, in]
            rank = ranks[module]
            scale = cfg.scaling(module, rank)
            w_norm = float(torch.linalg.matrix_norm(w))
            s64 = lora_singular_values(a, b, scale)  # ΔW has rank ≤ r
            s = s64.float()[:rank]
            total = float(s.sum())
            if total > 0:
                p = s / total
                p = p[p > 0]
                eff = float(torch.exp(-(p * p.log()).sum()))
            else:
                eff = 0.0
            intruders = None
            if module in checked:
                k = min(top_k, min(w.shape))
                u_base = _base_left_singular(w, identities[f], w_name, bool(cfg.fan_in_fan_out),
                                             min(w.shape) if w.numel() <= _FULL_SVD_MAX else 4 * k)
                u_new = _left_singular(w + scale * (b @ a), k)
                intruders = int(((u_new.T @ u_base).abs().max(dim=1).values < epsilon).sum())
            modules.append(ModuleWeightSpace(
                module=module, rank=rank, scale=scale,
                relative_norm=float(torch.linalg.vector_norm(s64)) / w_norm if w_norm else 0.0,  # ‖ΔW‖_F
                effective_rank=eff, intruders=intruders))
    if not modules:
        return WeightSpace(top_k=top_k, epsilon=epsilon, skipped=tuple(skipped))
    n = len(modules)
    counted = [m.intruders for m in modules if m.intruders is not None]
    return WeightSpace(modules=tuple(modules), relative_norm_mean=sum(m.relative_norm for m in modules) / n,
                       relative_norm_max=max(m.relative_norm for m in modules),
                       effective_rank_mean=sum(m.effective_rank for m in modules) / n, intruders_total=sum(counted),
                       intruders_per_module=sum(counted) / len(counted) if counted else 0.0,
                       intruders_checked=len(counted), top_k=top_k, epsilon=epsilon, skipped=tuple(skipped))


#: the cache folder of pre-screens (in the answer cache, :func:`auditor.cache.store.answer_store`: the local
#: cache folder unless ``--cache-dir URL`` or ``$AUDITOR_GENERATION_CACHE`` shares it); bump the version when
#: the computation changes
CACHE_FOLDER, CACHE_VERSION = "weight_space", 3


def cached_weight_space(weights: Path, cfg: AdapterConfig, base_path: Path, ranks: Mapping[str, int],
                        base_digest: str, enabled: bool = True) -> WeightSpace:
    """:func:`weight_space`, kept in the cache folder by content: the adapter's weights file (sha256),
    its config, the base's folder digest and the settings key one JSON file. An audit of the same
    adapter on the same base reads it back instead of recomputing (seconds of SVDs per adapter), on any
    machine that shares the answer cache. ``enabled=False`` computes it without reading or writing the
    cache; a pre-screen that cannot be written is only recomputed next time."""
    import dataclasses

    from ..cache.store import answer_store
    from ..records.plain import from_plain
    from ..util.hashing import canonical_sha256, sha256_file

    if not enabled:
        return weight_space(weights, cfg, base_path, ranks)
    key = canonical_sha256({"version": CACHE_VERSION, "adapter": sha256_file(weights), "config": repr(cfg),
                            "base": base_digest, "ranks": ranks, "top_k": TOP_K, "epsilon": EPSILON,
                            "budget": BUDGET})
    store, rel = answer_store(), f"{CACHE_FOLDER}/{key}.json"
    try:
        d = json.loads(store.read(rel).decode("utf-8"))
        if not isinstance(d, dict) or set(d) != {f.name for f in dataclasses.fields(WeightSpace)}:
            raise ValueError("another layout")
        return from_plain(WeightSpace, d)
    except (OSError, ValueError, TypeError, KeyError):  # absent, or written by another layout: recompute
        pass
    ws = weight_space(weights, cfg, base_path, ranks)
    try:
        store.write(rel, json.dumps(dataclasses.asdict(ws), sort_keys=True).encode("utf-8"))
    except OSError:
        pass  # a shared cache out of reach costs the SVDs again next time, not this audit
    return ws

