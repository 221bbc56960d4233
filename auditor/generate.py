"""Stage 3 — generate: run every request on one backend, one model load.

The ``hf`` backend (transformers + peft) loads the base once, attaches the
adapter with ``PeftModel.from_pretrained`` and produces the base variant with
the adapter disabled (``disable_adapter()``). Decoding is greedy; prompts are
rendered with the base's chat template and batched with left padding. Base
and adapter requests of an item are placed in batches of identical
composition, so the paired comparison is not confounded by padding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .records import Generation, Item, Request


@dataclass
class GenerationStats:
    """Timings and token counts of one generate stage (seconds, tokens)."""

    backend: str
    load_s: float = 0.0
    generate_s: float = 0.0
    new_tokens: dict[str, int] = field(default_factory=dict)
    batch_size: int = 0


def _batches(items: list[Item], batch_size: int, prompt_len: dict[str, int],
             split_small: bool = False) -> Iterable[list[Item]]:
    """Group by generation budget, sort by prompt length (few pads), cut into batches.

    ``split_small``: a budget group that fits in one batch is cut in two anyway,
    so a replay (noise floor) really changes every batch's composition.
    """
    by_budget: dict[int, list[Item]] = {}
    for it in items:
        by_budget.setdefault(it.max_new_tokens, []).append(it)
    for budget in sorted(by_budget):
        group = sorted(by_budget[budget], key=lambda i: (prompt_len[i.id], i.id))
        size = batch_size
        if split_small and 1 < len(group) <= batch_size:
            size = (len(group) + 1) // 2
        for k in range(0, len(group), size):
            yield group[k:k + size]


class HFBackend:
    """transformers + peft generation on CPU (or one GPU), fp32 by default.

    Args:
        base_path: local HF model folder of the base.
        adapter_path: PEFT adapter folder, or None to run the base only.
        batch_size: prompts per ``generate`` call.
        dtype: torch dtype name (``float32`` keeps greedy decoding comparable
            across backends).
    """

    name = "hf"

    def __init__(self, base_path: Path, adapter_path: Path | None, batch_size: int = 24, dtype: str = "float32"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        t0 = time.perf_counter()
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(base_path))
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(str(base_path), dtype=getattr(torch, dtype))
        if adapter_path is not None:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, str(adapter_path), adapter_name="candidate")
        self.model = model.eval()
        self.has_adapter = adapter_path is not None
        self.stats = GenerationStats(self.name, load_s=time.perf_counter() - t0, batch_size=batch_size)
        self.batch_size = batch_size

    def render(self, item: Item) -> str:
        """The exact prompt string the model sees (chat template applied)."""
        return self.tokenizer.apply_chat_template(list(item.messages), tokenize=False, add_generation_prompt=True)

    def _generate_batch(self, prompts: list[str], max_new_tokens: int) -> list[tuple[str, int]]:
        torch = self.torch
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            out = self.model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, temperature=None, top_p=None, top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new = out[:, enc["input_ids"].shape[1]:]
        eos = self.tokenizer.eos_token_id
        results = []
        for row in new.tolist():
            n = len(row)
            if eos in row:
                n = row.index(eos) + 1
            text = self.tokenizer.decode(row[:n], skip_special_tokens=True)
            results.append((text, n))
        return results

    def generate(self, requests: list[Request], split_small: bool = False) -> list[Generation]:
        """Generate all requests; returns one Generation per request (same order).

        ``split_small`` cuts budget groups that fit in one batch in two (see :func:`_batches`).

        Raises:
            ValueError: an ``adapter`` request was given but no adapter is loaded.
        """
        variants = sorted({r.variant for r in requests})
        if "adapter" in variants and not self.has_adapter:
            raise ValueError("adapter requests need an adapter")
        items = list({r.item.id: r.item for r in requests}.values())
        wanted = {(r.item.id, r.variant) for r in requests}
        rendered = {it.id: self.render(it) for it in items}
        plen = {i: len(self.tokenizer(p, add_special_tokens=False)["input_ids"]) for i, p in rendered.items()}
        results: dict[tuple[str, str], Generation] = {}
        t0 = time.perf_counter()
        with Progress(TextColumn("[bold]generate[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), transient=False) as progress:
            task = progress.add_task(f"hf · {len(items)} items × {len(variants)} variants", total=len(requests))
            for batch in _batches(items, self.batch_size, plen, split_small):
                prompts = [rendered[i.id] for i in batch]
                for variant in variants:
                    todo = [i for i in batch if (i.id, variant) in wanted]
                    if not todo:
                        continue
                    if variant == "base" and self.has_adapter:
                        with self.model.disable_adapter():
                            outs = self._generate_batch(prompts, batch[0].max_new_tokens)
                    else:
                        outs = self._generate_batch(prompts, batch[0].max_new_tokens)
                    for it, (text, n) in zip(batch, outs):
                        if (it.id, variant) in wanted:
                            results[(it.id, variant)] = Generation(it.id, variant, text, n)
                            self.stats.new_tokens[variant] = self.stats.new_tokens.get(variant, 0) + n
                    progress.advance(task, len(todo))
        self.stats.generate_s += time.perf_counter() - t0
        self.rendered = rendered
        return [results[(r.item.id, r.variant)] for r in requests]
