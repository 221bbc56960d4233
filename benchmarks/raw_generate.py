"""The baseline both speed benchmarks compare the audit's generation stage with:
a plain loop of ``model.generate`` such as a user would write."""

from __future__ import annotations

import time
from typing import Any


def raw_generate_loop(model: Any, tok: Any, items: list, batch_size: int, device: str = "cpu") -> tuple[float, int]:
    """Generate every item for the base (adapter disabled) and then the active adapter of a ``PeftModel``.

    Items are taken in suite order and cut every ``batch_size``; a batch's
    budget is the largest ``max_new_tokens`` among its items; chat template,
    left padding, greedy decoding. One short warm-up generation is not timed.

    Returns:
        (wall seconds, new tokens that are not padding).
    """
    import torch

    kw0 = dict(do_sample=False, temperature=None, top_p=None, top_k=None, pad_token_id=tok.pad_token_id)
    with torch.inference_mode():  # warm-up: one-time kernel and allocator set-up
        model.generate(**tok(["Hello"], return_tensors="pt").to(device), max_new_tokens=4, **kw0)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    new_tokens = 0
    sync()
    t0 = time.perf_counter()
    for variant in ("base", "adapter"):
        for k in range(0, len(items), batch_size):
            chunk = items[k:k + batch_size]
            prompts = [tok.apply_chat_template(list(i.messages), tokenize=False, add_generation_prompt=True)
                       for i in chunk]
            enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            kw = kw0 | {"max_new_tokens": max(i.max_new_tokens for i in chunk)}
            with torch.inference_mode():
                if variant == "base":
                    with model.disable_adapter():
                        out = model.generate(**enc, **kw)
                else:
                    out = model.generate(**enc, **kw)
            new_tokens += int((out[:, enc["input_ids"].shape[1]:] != tok.pad_token_id).sum())
    sync()
    return time.perf_counter() - t0, new_tokens
