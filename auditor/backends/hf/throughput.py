"""``--batch-size auto`` for continuous batching: the requests decoded at once beyond which this
machine's tokens per second stop rising, measured once per model shape and machine, then cached.

More requests per step read the weights once for more tokens (decoding is bound by reading them), so
tokens/s rise with the slot count, until the step's other costs catch up: attention over every
request's cache (per request, :mod:`auditor.backends.hf.attention`; the library's dense mask over all of
them cost ∝ slots² × length), and the compute itself. Memory is not what bounds it here: the
paged cache holds only the tokens of the requests in flight.

The sweep is one stream (:func:`sweep`): :data:`MAX_SLOTS` prompts of :data:`PROBE_PROMPT_TOKENS`
tokens, prefilled in one forward, then decoded with forced tokens (EOS off) whose budgets make a staircase:
the stream decodes :data:`STEPS_PER_LEVEL` steps with every request, then half of them end, and so on down to
:data:`SLOT_STEPS`' first count. A forward pre-hook stamps each step; a step in which every request of the
stream decodes one token is timed from its start to the next step's (the library's scheduling and sampling
included), and a count's rate is its steps' tokens over their time. Prefill says nothing about the slots (it
is chunked by ``max_batch_tokens`` whatever their count), so it is left out. Until 2026-12-06 each count was a
stream of its own, run twice (prefill alone, then with the forced tokens): 179 s on a 2-core AVX2 CPU in fp32,
where the staircase takes about a third of that. The choice is the
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
from dataclasses import dataclass, field, replace
from typing import Any

#: the slot counts measured (the staircase's levels, each half the one above)
SLOT_STEPS = (8, 16, 32, 64, 128, 256)
MAX_SLOTS = 256
#: decoding steps timed at each slot count, and the probe's prompt length in tokens
STEPS_PER_LEVEL = 8
PROBE_PROMPT_TOKENS = 48
#: the choice: the fewest slots whose tokens/s are within this fraction of the best
NEAR_BEST = 0.05
CACHE_FOLDER, CACHE_VERSION = "throughput", 5


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


#: the slots where the sweep timed no step (a transformers version that no longer passes the packed query offsets,
#: ``cu_seq_lens_q``, that :func:`staircase` reads): a middle count of :data:`SLOT_STEPS`, not kept in the cache
UNMEASURED_SLOTS = 64


def choose(tokens_per_s: dict[int, float]) -> int:
    """The fewest slots whose tokens/s are within :data:`NEAR_BEST` of the best measured;
    :data:`UNMEASURED_SLOTS` where nothing was measured."""
    if not tokens_per_s:
        return UNMEASURED_SLOTS
    best = max(tokens_per_s.values())
    return min(k for k, v in tokens_per_s.items() if v >= (1 - NEAR_BEST) * best)


def sweep(model: Any, vocab_size: int, limit: int = MAX_SLOTS) -> dict[int, float]:
    """Tokens/s of forced decoding at each of :data:`SLOT_STEPS` up to ``limit`` (slots → new tokens a
    second), from one staircase stream (see the module doc; :func:`staircase` gives its timed steps).

    Raises:
        ValueError: ``limit`` is below the smallest of :data:`SLOT_STEPS`.
    """
    levels = [n for n in SLOT_STEPS if n <= limit]
    if not levels:
        raise ValueError(f"a slot sweep up to {limit} measures nothing: the smallest count is {SLOT_STEPS[0]}")
    by: dict[int, list[float]] = {}
    for requests, seconds in staircase(model, vocab_size, levels):
        by.setdefault(requests, []).append(seconds)
    return {n: round(n * len(by[n]) / max(1e-6, sum(by[n])), 1) for n in sorted(by) if n in levels}


def staircase(model: Any, vocab_size: int, levels: list[int]) -> list[tuple[int, float]]:
    """The timed steps of one staircase stream: ``max(levels)`` requests decode :data:`STEPS_PER_LEVEL`
    steps at each count of ``levels``, largest first.

    Returns:
        ``(requests, seconds)`` for each step in which every request still in the stream decoded one token
        (query tokens = requests), timed from its forward's start to the next forward's (the last step, with
        no next, is left out).
    """
    from transformers import GenerationConfig

    from .stream import MAX_BATCH_TOKENS, called_module, stream_generate

    levels = sorted(levels, reverse=True)
    slots = levels[0]
    # distinct prompts of ordinary token ids (no two alike, so nothing is shared between requests)
    prompts = [[(97 + 31 * k + 7 * j) % max(1000, vocab_size // 2) + 10 for j in range(PROBE_PROMPT_TOKENS)]
               for k in range(slots)]
    # request k decodes until the stream is down to the level below its rank: the first step (the prefill, one
    # forward for every prompt) gives each its first token, then STEPS_PER_LEVEL steps per level it stays for
    budgets = [1 + STEPS_PER_LEVEL * sum(k < n for n in levels) for k in range(slots)]
    config = GenerationConfig(do_sample=False, eos_token_id=-1, pad_token_id=0, max_new_tokens=max(budgets))
    stamps: list[tuple[float, int]] = []  # (a forward's start, its requests where each decodes one token, else 0)

    def stamp(_module: Any, args: Any, kwargs: Any) -> None:
        ids, cu = kwargs.get("input_ids", args[0] if args else None), kwargs.get("cu_seq_lens_q")
        decoding = ids is not None and cu is not None and ids.shape[-1] == cu.numel() - 1
        stamps.append((time.perf_counter(), int(ids.shape[-1]) if decoding else 0))

    hook = called_module(model).register_forward_pre_hook(stamp, with_kwargs=True)
    try:
        stream_generate(model, prompts, budgets, slots=slots, generation_config=config,
                        max_batch_tokens=max(MAX_BATCH_TOKENS, slots * PROBE_PROMPT_TOKENS))
    finally:
        hook.remove()
    return [(n, b - a) for (a, n), (b, _) in zip(stamps, stamps[1:]) if n]


def best_slots(model: Any, dtype: str, device: str) -> SlotsChoice:
    """The slots of a stream with ``--batch-size auto``: the cached measurement for this model shape and
    machine, else a :func:`sweep` (seconds), then kept. A stream of fewer requests than the choice gets
    as many slots as it has requests (the library does that itself)."""
    import torch
    import transformers

    from ...util.files import atomic_write, cache_dir
    from ...util.hashing import canonical_sha256
    from .attention import attention_path

    config = getattr(model, "config", None)
    key = canonical_sha256({"version": CACHE_VERSION, "shape": _shape(config), "dtype": dtype,
                            "device": device.split(":")[0], "machine": _machine(), "torch": torch.__version__,
                            "transformers": transformers.__version__, "probe": ["staircase", STEPS_PER_LEVEL, PROBE_PROMPT_TOKENS],
                            "attention": attention_path(config)})
    path = cache_dir() / CACHE_FOLDER / f"{key}.json"
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        rates = dict(sorted((int(k), float(v)) for k, v in d["tokens_per_s"].items()))  # (the file's keys sort as text)
        return SlotsChoice(slots=choose(rates), tokens_per_s=rates, how=d["how"], cached=True,
                           seconds=float(d.get("seconds", 0.0)))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # not measured on this machine yet (or written by another layout): measure
    t0 = time.perf_counter()
    rates = sweep(model, int(getattr(config, "vocab_size", 32000) or 32000))
    how = (f"measured: forced decoding after {PROBE_PROMPT_TOKENS}-token prompts, {STEPS_PER_LEVEL} steps at each of "
           f"{', '.join(map(str, rates))} requests at once in one stream (prefill left out); the fewest within "
           f"{NEAR_BEST:.0%} of the best decoding tokens/s")
    choice = SlotsChoice(slots=choose(rates), tokens_per_s=rates, how=how, cached=False,
                         seconds=round(time.perf_counter() - t0, 1))
    if not rates:  # (measured again next run, not kept)
        return replace(choice, how=f"not measured: the sweep timed no decoding step here; {UNMEASURED_SLOTS} requests "
                                   "at once")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(choice.as_dict() | {"shape": _shape(config), "dtype": dtype,
                                                      "machine": _machine()}, sort_keys=True).encode("utf-8"))
    return choice
