"""Long fuzz run of the input readers: only the clean error path may be reached.

    HF_HUB_OFFLINE=1 python fuzz/fuzz_inputs.py [--cases 100000] [--seed 0] [--out DIR]

Four targets, each fed inputs from a seeded random generator (the same seed
gives the same cases), most of them mutations of valid inputs so that they get
past the first checks:

* ``weights``: ``adapter_model.safetensors`` bytes (flipped bytes, rewritten
  header lengths up to 2**64-1, truncation, header JSON entries with wrong
  dtypes, shapes and offsets) through :func:`auditor.inspect.preflight_adapter`;
* ``config``: ``adapter_config.json`` (wrong types, values, keys, broken JSON,
  MLX-LM and model configs) through ``preflight_adapter``;
* ``tensors``: well-formed safetensors files with fuzzed tensor names, shapes,
  dtypes and values (NaN, Inf, zeros, DoRA magnitudes, modules_to_save copies,
  prefixes) through :func:`auditor.inspect.inspect_adapter` on a small
  Llama base (its config only: shapes come from the meta device);
* ``policy``: policy YAML (mutated real policies, generated ones, aliases,
  deep nesting, typos) through :func:`auditor.policy.load_policy`.

Each case ends in one of: ``accepted``, ``clean error`` (an
:class:`~auditor.errors.AuditInputError` whose message is one line naming the
file), or a **finding**: any other exception, a malformed error message, or a
case slower than ``--slow-s``. Findings are written to ``--out`` with the input
that caused them; the exit code is 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import struct
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from auditor.errors import AuditInputError  # noqa: E402

#: a small Llama: hidden 16, 2 layers, kv heads 1 of 8 dims, MLP 32, vocabulary 64
TINY_BASE = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64, "hidden_size": 16,
             "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
             "head_dim": 8, "max_position_embeddings": 64, "tie_word_embeddings": True}
TINY_LINEAR = {"self_attn.q_proj": (16, 16), "self_attn.k_proj": (16, 8), "self_attn.v_proj": (16, 8),
               "self_attn.o_proj": (16, 16), "mlp.gate_proj": (16, 32), "mlp.up_proj": (16, 32),
               "mlp.down_proj": (32, 16)}
DTYPES = ["F32", "F16", "BF16", "F64", "I64", "I32", "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2", "F4", "F6_E2M3",
          "E8M0", "C64", "f32", "", "F99", 7, None]
PREFIXES = ["base_model.model.model.layers", "base_model.model.layers", "model.layers",
            "base_model.model.model.model.layers", "base_model.model.transformer.h", "layers", ""]
POLICY_KEYS = ["version", "metrics", "statistics", "labels", "drift", "on_base_mismatch", "on_no_effect",
               "on_noise_floor", "max_drop_pts", "max_rise_pts", "max_drop_pct", "max_rise_pct", "mode", "action",
               "confidence", "n_resamples", "seed", "multiplicity", "min_items", "on_inconclusive", "target",
               "off_target", "max_drift_score_pts", "on_label_mismatch", "on_unknown_label", "on_missing_label",
               "max_dorp_pts", "math.numeric_match", "knowledge.acc", "verbosity.words", "nope.metric",
               "instruction", "math", "<<", "~", ""]
CONFIG_KEYS = ["peft_type", "r", "lora_alpha", "target_modules", "lora_dropout", "bias", "task_type", "use_dora",
               "use_rslora", "fan_in_fan_out", "rank_pattern", "alpha_pattern", "layers_to_transform",
               "layers_pattern", "modules_to_save", "base_model_name_or_path", "lora_parameters", "model_type",
               "architectures", "fine_tune_type", ""]


def scalar(rng: random.Random) -> Any:
    """A random JSON/YAML scalar, biased to edge cases."""
    return rng.choice([
        0, 1, -1, 2, 3, 8, 16, 0.5, -0.0, 1e308, -1e308, 2 ** 63, -(2 ** 63), 2 ** 64 + 1, 10 ** 40, 1.5e-300,
        True, False, None, "", "fail", "warn", "pass", "point", "confident", "non_inferiority", "bh", "none",
        "LORA", "q_proj", "all-linear", "(", ".*", "a" * rng.randint(1, 300), "\x1b[31m", "\u202e", "\ud7ff",
        rng.random() * rng.choice([1, 100, 1e6]), rng.randint(-10 ** 6, 10 ** 6),
    ])


def value(rng: random.Random, keys: list[str], depth: int = 0) -> Any:
    """A random nested JSON/YAML value whose keys come from ``keys``."""
    kind = rng.random()
    if depth > 3 or kind < 0.45:
        return scalar(rng)
    if kind < 0.75:
        return {rng.choice(keys): value(rng, keys, depth + 1) for _ in range(rng.randint(0, 4))}
    return [value(rng, keys, depth + 1) for _ in range(rng.randint(0, 3))]


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Byte-level damage: flips, truncation, insertion, splicing."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.random()
        if op < 0.35 and b:
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.55 and b:
            del b[rng.randrange(len(b) + 1):]
        elif op < 0.75:
            pos = rng.randrange(len(b) + 1)
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op < 0.9 and len(b) > 2:
            i, j = sorted(rng.sample(range(len(b)), 2))
            del b[i:j]
        else:
            b += rng.choice([b"\0" * 8, b"\xff" * 8, b"{}", b'"', b"\\u0000", b"PK\x03\x04"])
    return bytes(b)


# ---- safetensors files -----------------------------------------------------------------------------------------


def _st_bytes(header: dict, data: bytes, length: int | None = None) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h) if length is None else length) + h + data


def _lora_header(rng: random.Random, prefix: str = "base_model.model.model.layers") -> tuple[dict, bytes]:
    """A valid header (+ data) of a small LoRA adapter of the tiny base, with F32 values."""
    header: dict[str, Any] = {}
    data = bytearray()
    r = rng.choice([1, 2, 4])
    for i in range(rng.randint(1, 2)):
        for mod in rng.sample(sorted(TINY_LINEAR), rng.randint(1, 3)):
            in_f, out_f = TINY_LINEAR[mod]
            for kind, shape in (("lora_A", [r, in_f]), ("lora_B", [out_f, r])):
                n = shape[0] * shape[1]
                header[f"{prefix}.{i}.{mod}.{kind}.weight"] = {"dtype": "F32", "shape": shape,
                                                               "data_offsets": [len(data), len(data) + 4 * n]}
                data += struct.pack(f"<{n}f", *(rng.uniform(-1, 1) for _ in range(n)))
    return header, bytes(data)


def fuzz_header(rng: random.Random, header: dict, data: bytes) -> bytes:
    """Structure-aware damage to a safetensors header: entries, dtypes, shapes, offsets, lengths."""
    header = json.loads(json.dumps(header))
    names = [k for k in header if k != "__metadata__"]
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(names) if names else "x"
        entry = header.get(name)
        if not isinstance(entry, dict):
            entry = header[name] = {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}
        op = rng.random()
        if op < 0.2:
            entry["dtype"] = rng.choice(DTYPES)
        elif op < 0.4:
            entry["shape"] = rng.choice([[], [0], [-1], [2 ** 40, 2 ** 40], [2 ** 64], [1.5], ["2"], None,
                                         [rng.randint(0, 40) for _ in range(rng.randint(0, 4))]])
        elif op < 0.6:
            a, b = (rng.choice([0, 4, len(data), len(data) + 4, 2 ** 63, -4, rng.randint(0, len(data) + 8)])
                    for _ in range(2))
            entry["data_offsets"] = rng.choice([[a, b], [b, a], [a], [], None, [a, b, 0]])
        elif op < 0.7:
            entry.pop(rng.choice(["dtype", "shape", "data_offsets"]), None)
        elif op < 0.8:
            header["__metadata__"] = value(rng, ["format", "pt", ""])
        elif op < 0.9:
            header[name + rng.choice(["", ".x", "\x00", " "])] = value(rng, ["dtype", "shape", "data_offsets"])
        else:
            header.pop(name, None)
    length = None
    if rng.random() < 0.3:
        h = len(json.dumps(header).encode())
        length = rng.choice([0, 1, 7, h - 1, h + 1, h + len(data), h + len(data) + 1, 2 ** 32, 6 * 2 ** 30,
                             2 ** 63, 2 ** 64 - 1])
    try:
        return _st_bytes(header, data, length)
    except (struct.error, ValueError):
        return _st_bytes(header, data)


def gen_weights(rng: random.Random) -> bytes:
    header, data = _lora_header(rng)
    op = rng.random()
    if op < 0.45:
        return fuzz_header(rng, header, data)
    if op < 0.85:
        return mutate_bytes(rng, _st_bytes(header, data))
    if op < 0.92:
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 64)))
    return rng.choice([b"", b"PK\x03\x04" + data[:20], b"\x80\x04\x95" + data[:20],
                       b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
                       struct.pack("<Q", 2 ** 64 - 1), struct.pack("<Q", 5) + b"{}}}}"])


# ---- adapter_config.json ---------------------------------------------------------------------------------------


def valid_config() -> dict[str, Any]:
    return {"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj", "v_proj"],
            "base_model_name_or_path": "tiny", "task_type": "CAUSAL_LM", "bias": "none", "lora_dropout": 0.0}


def gen_config(rng: random.Random) -> bytes:
    cfg = valid_config()
    op = rng.random()
    if op < 0.6:
        for _ in range(rng.randint(1, 3)):
            key = rng.choice(CONFIG_KEYS)
            if rng.random() < 0.2:
                cfg.pop(key, None)
            else:
                cfg[key] = value(rng, ["q_proj", "v_proj", "rank", "alpha", ".*", "(", "model.layers.0"])
        return json.dumps(cfg).encode()
    if op < 0.8:
        return mutate_bytes(rng, json.dumps(cfg).encode())
    return rng.choice([b"[]", b"null", b"1e999", b'{"r": NaN}', b"\xff\xfe{}", b"[" * 100_000,
                       json.dumps({"lora_parameters": {"rank": 8}, "num_layers": 16}).encode(),
                       json.dumps(value(rng, CONFIG_KEYS)).encode()])


# ---- tensors against a base --------------------------------------------------------------------------------------


def gen_tensors(rng: random.Random) -> tuple[bytes, bytes]:
    """A well-formed safetensors file (and config) whose tensors may not fit the base."""
    import torch
    from safetensors.torch import save

    prefix = rng.choice(PREFIXES) if rng.random() < 0.3 else PREFIXES[0]
    tensors: dict[str, torch.Tensor] = {}
    cfg = valid_config()
    cfg["target_modules"] = rng.choice([["q_proj", "v_proj"], "all-linear", [m.split(".")[1] for m in TINY_LINEAR],
                                        ["q_proj"], ".*q_proj", ["c_attn"]])
    r = rng.choice([1, 2, 4])
    cfg["r"] = r if rng.random() < 0.8 else rng.choice([1, 2, 8])
    if rng.random() < 0.15:
        cfg["rank_pattern"] = {rng.choice(["q_proj", "layers.0.self_attn.q_proj", "v_proj"]): rng.choice([1, 4, 8])}
    if rng.random() < 0.1:
        cfg["use_dora"] = rng.random() < 0.5
    dtype = rng.choice([torch.float32] * 6 + [torch.float16, torch.bfloat16, torch.float64, torch.int8])
    for i in range(rng.randint(1, 2)):
        for mod in rng.sample(sorted(TINY_LINEAR), rng.randint(1, 4)):
            in_f, out_f = TINY_LINEAR[mod]
            rr = r if rng.random() < 0.9 else rng.choice([1, 3, 8])
            a_shape = [rr, in_f] if rng.random() < 0.93 else [rr, rng.choice([in_f + 1, out_f, 1])]
            b_shape = [out_f, rr] if rng.random() < 0.93 else [rng.choice([out_f + 8, in_f]), rr]
            base = f"{prefix}.{i}.{mod}" if prefix else f"{i}.{mod}"
            for kind, shape in (("lora_A", a_shape), ("lora_B", b_shape)):
                if rng.random() < 0.03:
                    continue  # a missing partner
                t = torch.randn(*shape)
                if rng.random() < 0.1:
                    t = torch.zeros(*shape)
                if rng.random() < 0.03:
                    t.view(-1)[rng.randrange(t.numel())] = rng.choice([math.nan, math.inf, -math.inf])
                tensors[f"{base}.{kind}.weight"] = t.to(dtype)
            if rng.random() < 0.1:
                tensors[f"{base}.lora_magnitude_vector"] = torch.rand(rng.choice([out_f, in_f, 1])).to(dtype)
    if rng.random() < 0.05:
        tensors[rng.choice(["base_model.model.lm_head.weight", "base_model.model.model.embed_tokens.weight"])] = \
            torch.zeros(rng.choice([64, 65, 128]), 16)
    if rng.random() < 0.05:
        tensors[rng.choice(["junk", "base_model.model.model.norm.weight", "x.lora_B.bias", "a.lora_embedding_A"])] = \
            torch.zeros(rng.choice([1, 16]))
    if not tensors:
        tensors["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"] = torch.zeros(2, 16)
    return save(tensors), json.dumps(cfg).encode()


# ---- policies ----------------------------------------------------------------------------------------------------


def seed_policies() -> list[str]:
    return [(ROOT / "policies" / "default.yaml").read_text(encoding="utf-8"),
            "version: 1\nmetrics:\n  math.numeric_match: {max_drop_pts: 10, mode: confident}\n",
            "version: 1\nlabels:\n  math:\n    target: math.numeric_match\n    off_target: [knowledge.acc]\n"
            "drift:\n  max_drift_score_pts: 15\n  on_label_mismatch: fail\n",
            "version: 1\nstatistics:\n  confidence: 0.9\n  n_resamples: 1000\n  min_items: 5\n"]


def gen_policy(rng: random.Random, seeds: list[str]) -> str:
    import yaml

    op = rng.random()
    if op < 0.35:
        lines = rng.choice(seeds[1:] if rng.random() < 0.8 else seeds).splitlines()
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(lines))
            m = rng.random()
            if m < 0.25:
                del lines[k]
            elif m < 0.45:
                lines.insert(k, lines[k])
            elif m < 0.7 and ":" in lines[k]:
                head, _, _ = lines[k].partition(":")
                lines[k] = f"{head}: {json.dumps(scalar(rng))}" if rng.random() < 0.6 else \
                    f"{head[:len(head) - len(head.lstrip())]}{rng.choice(POLICY_KEYS)}:{lines[k].partition(':')[2]}"
            elif m < 0.85:
                lines[k] = " " * rng.randint(0, 6) + lines[k].lstrip()
            else:
                lines.insert(k, rng.choice(["x: &a [1, 2]", "y: *a", "<<: *a", "? [a]\n: 1", "!!python/object:os.system",
                                            "\t- x", "%YAML 1.1", "---", "...", "z: !!binary AAAA", "w: 1e999"]))
        return "\n".join(lines) + "\n"
    if op < 0.75:
        doc: dict[str, Any] = {"version": rng.choice([1, 1, 1, 2, "1", None])}
        for _ in range(rng.randint(0, 4)):
            doc[rng.choice(POLICY_KEYS)] = value(rng, POLICY_KEYS)
        if rng.random() < 0.4:
            doc["metrics"] = {rng.choice(["math.numeric_match", "verbosity.words", "knowledge.acc", "x.y"]):
                              value(rng, POLICY_KEYS) for _ in range(rng.randint(1, 3))}
        return yaml.safe_dump(doc, allow_unicode=True)
    if op < 0.9:
        return mutate_bytes(rng, rng.choice(seeds).encode()).decode("utf-8", errors="replace")
    return rng.choice([
        "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nversion: 1\n",  # billion laughs, small
        "version: 1\nx: " + "[" * rng.randint(50, 5000) + "\n",
        "version: 1\nx: " + "{a: " * rng.randint(50, 3000) + "\n",
        "", "~", "- 1\n- 2\n", "version: 1\nversion: 1\n", "\ufeffversion: 1\n", "version: 1\x00\n",
    ])


# ---- driver ------------------------------------------------------------------------------------------------------


def run_case(fn: Callable[[], Any], expect_path: str) -> str:
    """``accepted`` or ``clean error``; anything else raises AssertionError (a finding)."""
    try:
        fn()
    except AuditInputError as e:
        msg = e.one_line()
        if "\n" in msg or "\r" in msg:
            raise AssertionError(f"multi-line error message: {msg!r}") from None
        if e.path is None or (expect_path not in e.path and "--" not in e.path):
            raise AssertionError(f"error does not name the input file ({expect_path}): {msg!r}") from None
        return "clean error"
    return "accepted"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000, help="total cases over the four targets")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slow-s", type=float, default=5.0, help="a case slower than this is a finding (a hang)")
    ap.add_argument("--out", type=Path, default=None, help="folder for findings (default: a temporary folder)")
    args = ap.parse_args()

    from auditor.inspect.adapter import inspect_adapter, preflight_adapter
    from auditor.policy.loading import load_policy
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import preset_metric_units

    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="auditor-fuzz-"))
    out = args.out or work / "findings"
    base = work / "tiny-base"
    base.mkdir()
    (base / "config.json").write_text(json.dumps(TINY_BASE))
    units = preset_metric_units(SCORERS)
    names = sorted(units)
    seeds = seed_policies()
    adapter = work / "adapter"
    adapter.mkdir()
    weights, config, policy = adapter / "adapter_model.safetensors", adapter / "adapter_config.json", work / "p.yaml"
    valid_st = _st_bytes(*_lora_header(random.Random(0)))

    def case_weights() -> tuple[Callable[[], Any], str, dict[str, bytes]]:
        config.write_text(json.dumps(valid_config()))
        weights.write_bytes(data := gen_weights(rng))
        return (lambda: preflight_adapter(adapter)), str(adapter), {"adapter_model.safetensors": data}

    def case_config() -> tuple[Callable[[], Any], str, dict[str, bytes]]:
        weights.write_bytes(valid_st)
        config.write_bytes(data := gen_config(rng))
        return (lambda: preflight_adapter(adapter)), str(adapter), {"adapter_config.json": data}

    def case_tensors() -> tuple[Callable[[], Any], str, dict[str, bytes]]:
        st, cfg = gen_tensors(rng)
        weights.write_bytes(st)
        config.write_bytes(cfg)
        return (lambda: inspect_adapter(adapter, base, "tiny")), str(adapter), {"adapter_model.safetensors": st,
                                                                                "adapter_config.json": cfg}

    def case_policy() -> tuple[Callable[[], Any], str, dict[str, bytes]]:
        data = gen_policy(rng, seeds).encode("utf-8", errors="surrogatepass")
        policy.write_bytes(data)
        return (lambda: load_policy(policy, names, units)), str(policy), {"policy.yaml": data}

    targets = {"weights": (case_weights, 0.35), "config": (case_config, 0.15), "tensors": (case_tensors, 0.15),
               "policy": (case_policy, 0.35)}
    counts: dict[str, Counter] = {t: Counter() for t in targets}
    # warm-up outside the clock: imports and the base's meta-device shapes (built once, then cached)
    weights.write_bytes(valid_st)
    config.write_text(json.dumps(valid_config() | {"target_modules": "all-linear"}))
    inspect_adapter(adapter, base, "tiny")
    findings = 0
    t0 = time.perf_counter()
    for k in range(args.cases):
        target = rng.choices(list(targets), weights=[w for _, w in targets.values()])[0]
        fn, expect, inputs = targets[target][0]()
        t1 = time.perf_counter()
        try:
            outcome = run_case(fn, expect)
        except Exception as e:  # noqa: BLE001 - every other exception is what the fuzzer looks for
            outcome = f"FINDING {type(e).__name__}"
            note = "".join(traceback.format_exception(e))
        else:
            note = ""
        dt = time.perf_counter() - t1
        if dt > args.slow_s:
            outcome, note = "FINDING slow", f"took {dt:.1f} s\n{note}"
        if outcome.startswith("FINDING"):
            findings += 1
            case_dir = out / f"{k:06d}-{target}"
            case_dir.mkdir(parents=True, exist_ok=True)
            for name, data in inputs.items():
                (case_dir / name).write_bytes(data)
            (case_dir / "finding.txt").write_text(note)
            print(f"case {k} ({target}): {outcome}: {note.strip().splitlines()[-1][:200]}", file=sys.stderr)
        counts[target][outcome] += 1
        if (k + 1) % 10_000 == 0:
            print(f"{k + 1:,} cases, {time.perf_counter() - t0:.0f} s, {findings} findings", file=sys.stderr)
    elapsed = time.perf_counter() - t0
    print(f"{args.cases:,} cases in {elapsed:.0f} s (seed {args.seed}); findings: {findings}")
    for target, c in counts.items():
        print(f"  {target:8s} {sum(c.values()):7,d}: " + ", ".join(f"{o} {n:,}" for o, n in sorted(c.items())))
    if findings:
        print(f"findings written to {out}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
