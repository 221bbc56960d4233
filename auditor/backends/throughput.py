"""``--batch-size auto`` for continuous batching: the requests decoded at once beyond which this
machine's tokens per second stop rising, measured once per model shape and machine, then cached.

More requests per step read the weights once for more tokens (decoding is bound by reading them), so
tokens/s rise with the slot count, until the step's other costs catch up: attention over every
request's cache (per request, :mod:`auditor.backends.hf_attention`; the library's dense mask over all of
them cost ∝ slots² × length), and the compute itself. Memory is not what bounds it here: the
paged cache holds only the tokens of the requests in flight.

The sweep decodes :data:`PROBE_TOKENS` forced tokens (EOS off) for ``slots`` prompts of
:data:`PROBE_PROMPT_TOKENS` tokens, at slots 8, 16, 32, ... up to :data:`MAX_SLOTS`, stopping when a
doubling adds less than :data:`RISE`; each point is timed twice, once with one new token (the prefill
alone) and once with all of them, and the rate is of decoding (the difference): prefill is chunked by
``max_batch_tokens`` whatever the slot count, so it says nothing about the slots. The choice is the
fewest slots within :data:`NEAR_BEST` of the best decoding tokens/s (fewer slots: less memory, the
same speed). The result is kept under the cache folder,
keyed by the model's shape (not its weights), the dtype, the device and the machine (CPU model, core
count, torch threads) and library versions; a run records the choice, its figures and whether it was
measured or read back (results.json ``run.hf.slots``).
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from typing import Any

#: the slot counts tried, in order (the sweep stops early once tokens/s stop rising)
SLOT_STEPS = (8, 16, 32, 64, 128, 256)
MAX_SLOTS = 256
#: forced new tokens per request, and prompt length, of the probe
PROBE_TOKENS = 24
PROBE_PROMPT_TOKENS = 48
#: a doubling of slots that raises tokens/s by less than this fraction ends the sweep
RISE = 0.08
#: the choice: the fewest slots whose tokens/s are within this fraction of the best
NEAR_BEST = 0.05
CACHE_FOLDER, CACHE_VERSION = "throughput", 4


@dataclass(frozen=True, kw_only=True)
class SlotsChoice:
    """How many requests a stream decodes at once, and how that was decided.

    Attributes:
        slots: the requests decoded at once.
        tokens_per_s: slots tried → new tokens per second measured (forced decoding of the probe).
        how: the rule, in words.
        cached: read back from an earlier run's measurement (True) or measured in this one.
        seconds: what the sweep took when it was measured.
    """

    slots: int
    tokens_per_s: dict[int, float] = field(default_factory=dict)
    how: str = ""
    cached: bool = False
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"slots": self.slots, "tokens_per_s": {str(k): v for k, v in self.tokens_per_s.items()},
                "how": self.how, "cached": self.cached, "seconds": self.seconds}


def _machine() -> dict[str, Any]:
    import torch

    model_name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            model_name = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"cpu": model_name or platform.processor(), "cores": os.cpu_count(), "threads": torch.get_num_threads(),
            "machine": platform.machine()}


def _shape(config: Any) -> dict[str, Any]:
    keys = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "vocab_size")
    return {k: getattr(config, k, None) for k in keys}


def choose(tokens_per_s: dict[int, float]) -> int:
    """The fewest slots whose tokens/s are within :data:`NEAR_BEST` of the best measured."""
    best = max(tokens_per_s.values())
    return min(k for k, v in tokens_per_s.items() if v >= (1 - NEAR_BEST) * best)


def sweep(model: Any, vocab_size: int, limit: int = MAX_SLOTS) -> dict[int, float]:
    """Tokens/s of forced decoding at each of :data:`SLOT_STEPS` up to ``limit``, stopping when a doubling
    rises less than :data:`RISE` (see the module doc)."""
    from transformers import GenerationConfig

    from .hf_stream import stream_generate

    config = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=0, max_new_tokens=PROBE_TOKENS)
    out: dict[int, float] = {}
    previous = 0.0
    for slots in SLOT_STEPS:
        if slots > limit:
            break
        # distinct prompts of ordinary token ids (no two alike, so nothing is shared between requests)
        prompts = [[(97 + 31 * k + 7 * j) % max(1000, vocab_size // 2) + 10 for j in range(PROBE_PROMPT_TOKENS)]
                   for k in range(slots)]
        t0 = time.perf_counter()
        stream_generate(model, prompts, [1] * slots, slots=slots, generation_config=config)
        t1 = time.perf_counter()
        stream_generate(model, prompts, [PROBE_TOKENS + 1] * slots, slots=slots, generation_config=config)
        decode_s = max(1e-6, (time.perf_counter() - t1) - (t1 - t0))
        rate = slots * PROBE_TOKENS / decode_s
        out[slots] = round(rate, 1)
        if previous and rate < (1 + RISE) * previous:
            break
        previous = rate
    return out


def best_slots(model: Any, dtype: str, device: str) -> SlotsChoice:
    """The slots of a stream with ``--batch-size auto``: the cached measurement for this model shape and
    machine, else a :func:`sweep` (seconds), then kept. A stream of fewer requests than the choice gets
    as many slots as it has requests (the library does that itself)."""
    import torch
    import transformers

    from ..util.files import atomic_write, cache_dir
    from ..util.hashing import canonical_sha256
    from .hf_attention import attention_path

    config = getattr(model, "config", None)
    key = canonical_sha256({"version": CACHE_VERSION, "shape": _shape(config), "dtype": dtype,
                            "device": device.split(":")[0], "machine": _machine(), "torch": torch.__version__,
                            "transformers": transformers.__version__, "probe": [PROBE_TOKENS, PROBE_PROMPT_TOKENS],
                            "attention": attention_path(config)})
    path = cache_dir() / CACHE_FOLDER / f"{key}.json"
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        rates = {int(k): float(v) for k, v in d["tokens_per_s"].items()}
        return SlotsChoice(slots=choose(rates), tokens_per_s=rates, how=d["how"], cached=True,
                           seconds=float(d.get("seconds", 0.0)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # not measured on this machine yet (or written by another layout): measure
    t0 = time.perf_counter()
    rates = sweep(model, int(getattr(config, "vocab_size", 32000) or 32000))
    how = (f"measured: decoding of {PROBE_TOKENS} forced tokens after {PROBE_PROMPT_TOKENS}-token prompts (prefill "
           f"timed apart and left out) at {', '.join(map(str, rates))} requests at once; the fewest within "
           f"{NEAR_BEST:.0%} of the best decoding tokens/s")
    choice = SlotsChoice(slots=choose(rates), tokens_per_s=rates, how=how, cached=False,
                         seconds=round(time.perf_counter() - t0, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(choice.as_dict() | {"shape": _shape(config), "dtype": dtype,
                                                      "machine": _machine()}, sort_keys=True).encode("utf-8"))
    return choice
