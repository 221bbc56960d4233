"""The adapter zoo as the benchmarks see it: every adapter with its kind, label and intended effect,
and the weaker strengths derived from the planted regressions (``lora_B`` scaled, written into
``benchmarks/out/zoo-scaled/`` and rebuilt when their source changes).

Adapters, in order: the zoo (``examples/zoo/*``, each model card's ``zoo:`` block), the two demo
adapters (``terse-instruct-r8``: labelled ``instruction``, trained on arithmetic, a mislabelled
adapter; ``math-arith-r8``: a good ``math`` adapter), and, where ``../shared/adapters`` is beside
the clone, the third-party adapter as an unlabelled real case.

Another base's zoo (``zoo(base="gemma3-270m")``): the adapters trained on it by
``examples/zoo/train_zoo.py --base gemma3-270m --out examples/gemma3-270m/zoo`` and its demo adapter
``examples/gemma3-270m/math-arith-r8`` (a ``math`` adapter, good by intent); scaled strengths in
``benchmarks/out/zoo-scaled-<base>/``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT / "examples" / "zoo"
SCALED = ROOT / "benchmarks" / "out" / "zoo-scaled"
SHARED = ROOT.parent / "shared" / "adapters"
#: the zoo folder of each base the benchmark knows (None: the embedded default, SmolLM2-135M-Instruct)
ZOOS = {None: ZOO, "gemma3-270m": ROOT / "examples" / "gemma3-270m" / "zoo"}


@dataclass
class ZooAdapter:
    """One adapter of the benchmark: ``name``, ``path``, ``kind`` (null, regression, mislabelled, good,
    real), ``label`` (its nominal label or None), ``intended`` (metric → up/down), ``strength``
    (the lora_B scale: 1.0 for the trained adapter) and ``parent`` (the trained adapter a scaled one
    comes from)."""

    name: str
    path: Path
    kind: str
    label: str | None
    intended: dict[str, str] = field(default_factory=dict)
    strength: float = 1.0
    parent: str | None = None
    strengths: tuple[float, ...] = (1.0,)


def _card(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---", 2)[1]) if text.startswith("---") else {}


def scaled_copy(src: Path, factor: float, dst: Path) -> Path:
    """``src`` with every ``lora_B`` tensor multiplied by ``factor``, written to ``dst`` (config and model card
    copied; the card's front matter says the strength and the sha256s of the weights and config it was scaled from).
    Kept while they are ``src``'s; rebuilt when ``src`` changed (a retrained adapter) or the copy predates the record:
    a copy made once and never checked is the likeliest reason an earlier truth of trigger-backdoor-x0.5 and -x0.25
    could not be reproduced (benchmarks/RESULTS.md)."""
    from safetensors.torch import load_file, save_file

    from auditor.util.hashing import sha256_file

    source = sha256_file(src / "adapter_model.safetensors")[:32] + sha256_file(src / "adapter_config.json")[:32]
    if (dst / "adapter_model.safetensors").is_file() and (dst / "README.md").is_file() and \
            f"zoo_scaled_from: '{source}'\n" in (dst / "README.md").read_text(encoding="utf-8"):
        return dst
    tmp = dst.with_name(dst.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = load_file(str(src / "adapter_model.safetensors"))
    save_file({k: (v * factor if "lora_B" in k else v).contiguous() for k, v in tensors.items()},
              str(tmp / "adapter_model.safetensors"))
    shutil.copy(src / "adapter_config.json", tmp / "adapter_config.json")
    card = (src / "README.md").read_text(encoding="utf-8")
    (tmp / "README.md").write_text(card.replace("---\n", f"---\nzoo_strength: {factor}\nzoo_scaled_from: '{source}'\n", 1),
                                   encoding="utf-8")
    shutil.rmtree(dst, ignore_errors=True)
    tmp.rename(dst)
    return dst


def zoo(include_scaled: bool = True, include_shared: bool = True, base: str | None = None) -> list[ZooAdapter]:
    """Every adapter of the benchmark on ``base`` (an embedded base's word; None: the default; see the module doc).

    Raises:
        KeyError: a base without a zoo here (:data:`ZOOS`).
    """
    out: list[ZooAdapter] = []
    folders = ZOOS[base]
    scaled_root = SCALED if base is None else SCALED.with_name(f"{SCALED.name}-{base}")
    for folder in sorted(p for p in folders.iterdir() if (p / "adapter_config.json").is_file()) if folders.is_dir() else []:
        card = _card(folder)
        z = card.get("zoo") or {}
        intended = {e["metric"]: e["direction"] for e in z.get("intended_effect", []) if e.get("direction") != "none"}
        strengths = tuple(float(s) for s in z.get("strengths", [1.0]))
        kind = "null" if "kind" in z and z["kind"] is None else str(z.get("kind", "?"))  # YAML reads null as None
        a = ZooAdapter(folder.name, folder, kind, card.get("nominal_label"), intended,
                       strengths=strengths)
        out.append(a)
        if include_scaled:
            for s in strengths:
                if s != 1.0:
                    path = scaled_copy(folder, s, scaled_root / f"{folder.name}-x{s:g}")
                    out.append(ZooAdapter(f"{folder.name}-x{s:g}", path, a.kind, a.label, intended, s, folder.name))
    if base is not None:
        out.append(ZooAdapter("math-arith-r8", folders.parent / "math-arith-r8", "good", "math",
                              {"math.numeric_match": "up"}))
        return out
    demo = ROOT / "examples" / "adapters"
    out.append(ZooAdapter("terse-instruct-r8", demo / "terse-instruct-r8", "mislabelled", "instruction",
                          {"math.numeric_match": "up", "verbosity.words": "down"}))
    out.append(ZooAdapter("math-arith-r8", demo / "math-arith-r8", "good", "math", {"math.numeric_match": "up"}))
    medical = SHARED / "smollm-medical-flashcards-ckpt500"
    if include_shared and medical.is_dir():
        out.append(ZooAdapter("medical-flashcards-ckpt500", medical, "real", None, {}))
    return out


if __name__ == "__main__":
    for a in zoo():
        print(json.dumps({"name": a.name, "kind": a.kind, "label": a.label, "strength": a.strength,
                          "intended": a.intended}))
