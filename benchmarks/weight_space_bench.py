"""The weight-space pre-screen's cost on a Llama-3-8B-shaped base, no downloads.

    PYTHONPATH=. python benchmarks/weight_space_bench.py                 # Llama-3-8B shapes (about 15 GB on disk)
    PYTHONPATH=. python benchmarks/weight_space_bench.py --shape tiny    # a small base: checks the script itself

Writes, in a temporary folder, the base's projection weights with the real shapes of Llama-3-8B (hidden 4096,
32 layers, 32 query / 8 key-value heads of 128, MLP 14336), random bf16 values, as a sharded safetensors
checkpoint with its index (what the pre-screen reads: the adapted modules' weights only, memory-mapped; the
embeddings and norms, which it never reads, are left out), and two random LoRA adapters of rank 16: one on the
query and value projections (64 modules), one on all seven linear projections (224 modules). It then times
:func:`auditor.inspect.weight_space.weight_space` on each adapter in a fresh process (nothing remembered),
and a second adapter of the same targets in the same process (the base's singular vectors remembered, as in a
run of several adapters), and prints one JSON line per case with the seconds and the modules screened.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = {
    "llama-8b": dict(hidden=4096, kv=1024, mlp=14336, layers=32),
    "tiny": dict(hidden=256, kv=64, mlp=512, layers=2),
}
TARGETS = {"qv": ("q_proj", "v_proj"),
           "all-linear": ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")}
RANK, ALPHA = 16, 32


def _shapes(s: dict) -> dict[str, tuple[int, int]]:
    """Module → the base weight's [out, in]."""
    h, kv, mlp = s["hidden"], s["kv"], s["mlp"]
    return {"q_proj": (h, h), "k_proj": (kv, h), "v_proj": (kv, h), "o_proj": (h, h),
            "gate_proj": (mlp, h), "up_proj": (mlp, h), "down_proj": (h, mlp)}


def _module(layer: int, m: str) -> str:
    return f"model.layers.{layer}.{'mlp' if m in ('gate_proj', 'up_proj', 'down_proj') else 'self_attn'}.{m}"


def build_base(folder: Path, s: dict) -> None:
    """The projections of every layer, random bf16 (scaled as an initialised model's), one shard per 8 layers."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(0)
    shapes, weight_map = _shapes(s), {}
    for shard, start in enumerate(range(0, s["layers"], 8)):
        tensors = {}
        for layer in range(start, min(start + 8, s["layers"])):
            for m, (out_f, in_f) in shapes.items():
                tensors[f"{_module(layer, m)}.weight"] = (torch.randn(out_f, in_f, generator=g) * in_f ** -0.5
                                                          ).to(torch.bfloat16)
        name = f"model-{shard:05d}.safetensors"
        save_file(tensors, str(folder / name))
        weight_map.update({k: name for k in tensors})
        del tensors
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def build_adapter(folder: Path, s: dict, targets: tuple[str, ...], seed: int) -> None:
    """A PEFT LoRA adapter (r 16, alpha 32) on ``targets`` of every layer, random A and non-zero B."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    shapes, tensors = _shapes(s), {}
    for layer in range(s["layers"]):
        for m in targets:
            out_f, in_f = shapes[m]
            prefix = f"base_model.model.{_module(layer, m)}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(RANK, in_f, generator=g) * in_f ** -0.5
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(out_f, RANK, generator=g) * 0.01
    folder.mkdir(parents=True)
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": RANK, "lora_alpha": ALPHA, "target_modules": list(targets),
        "base_model_name_or_path": "llama-3-8b-shaped"}))


def time_case(base: Path, adapters: list[Path]) -> list[dict]:
    """In this process: the pre-screen of each adapter in turn, timed."""
    from safetensors import safe_open

    from auditor.inspect.peft_config import read_config
    from auditor.inspect.weight_space import weight_space

    out = []
    for a in adapters:
        cfg = read_config(a)
        with safe_open(str(a / "adapter_model.safetensors"), framework="pt") as h:
            ranks = {k.removeprefix("base_model.model.").removesuffix(".lora_A.weight"): RANK
                     for k in h.keys() if k.endswith("lora_A.weight")}
        t0 = time.perf_counter()
        ws = weight_space(a / "adapter_model.safetensors", cfg, base, ranks)
        out.append({"adapter": a.name, "modules": len(ws.modules), "seconds": round(time.perf_counter() - t0, 2),
                    "relative_norm_mean": round(ws.relative_norm_mean or 0.0, 5),
                    "intruders_total": ws.intruders_total, "intruders_checked": ws.intruders_checked})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="llama-8b")
    ap.add_argument("--time", nargs="+", help=argparse.SUPPRESS)  # internal: base folder, then adapter folders
    args = ap.parse_args()
    if args.time:
        print(json.dumps(time_case(Path(args.time[0]), [Path(p) for p in args.time[1:]])))
        return
    s = SHAPES[args.shape]
    with tempfile.TemporaryDirectory(dir=ROOT / "benchmarks" / "out") as tmp:
        root = Path(tmp)
        (root / "base").mkdir()
        t0 = time.perf_counter()
        build_base(root / "base", s)
        print(json.dumps({"built_base_s": round(time.perf_counter() - t0, 1), "shape": args.shape}), flush=True)
        for name, targets in TARGETS.items():
            first, second = root / f"{name}-1", root / f"{name}-2"
            build_adapter(first, s, targets, 1)
            build_adapter(second, s, targets, 2)
            # a fresh process: no singular vectors of the base remembered from another case
            proc = subprocess.run([sys.executable, __file__, "--time", str(root / "base"), str(first), str(second)],
                                  capture_output=True, text=True, check=True)
            runs = json.loads(proc.stdout.strip().splitlines()[-1])
            print(json.dumps({"targets": name, "first_adapter": runs[0], "second_adapter_same_process": runs[1]}),
                  flush=True)


if __name__ == "__main__":
    main()
