"""ARC-Easy (Clark et al., 2018, *Think you have Solved Question Answering? Try ARC, the AI2 Reasoning
Challenge*, arXiv:1803.05457): ``ARC-Easy-Test.jsonl`` (2376 questions) → multiple-choice rows
(:mod:`.choice_rows`) as lm-evaluation-harness's ``arc_easy`` task builds them: context
``"Question: {question}\\nAnswer:"``, choices the option texts, gold the option whose label equals ``answerKey``.

The labels are compared as strings: most items are keyed A-D, some 1-4, a few have 3 or 5 options (A-C, A-E, 1-3).
The ARC-Challenge loader (:mod:`.arc_challenge`) reads its file with :func:`read_arc`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, gold_by_key, hub_rows, jsonl_rows, text_field


def arc_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where, source: str,
            benchmark: str = "arc_easy") -> dict[str, Any]:
    """One ARC record → row. Takes the release's shape (``question: {stem, choices: [{text, label}]}``) and the
    hub's (``question`` the stem, ``choices: {text: [...], label: [...]}``).

    Raises:
        AuditInputError: a missing field, an option without text or label, an answer key that is no label.
    """
    rid = text_field(where, lineno, rec, "id")
    question = rec.get("question")
    if isinstance(question, dict):  # the release's jsonl
        stem = text_field(where, lineno, question, "stem")
        options = question.get("choices")
        if not isinstance(options, list) or not all(isinstance(o, dict) for o in options):
            raise bad_record(where, lineno, "field 'question.choices' missing or not a list of {text, label}")
        texts = [o.get("text") for o in options]
        keys = [o.get("label") for o in options]
    else:  # the hub's
        stem = text_field(where, lineno, rec, "question")
        options = rec.get("choices")
        if not isinstance(options, dict):
            raise bad_record(where, lineno, "field 'choices' missing or not {text: [...], label: [...]}")
        texts, keys = list(options.get("text") or []), list(options.get("label") or [])
    if not all(isinstance(t, str) for t in texts) or not all(isinstance(k, str) and k for k in keys) \
            or len(texts) != len(keys):
        raise bad_record(where, lineno, "every option needs a text and a label (strings)")
    answer = gold_by_key(where, lineno, keys, rec.get("answerKey"))
    return choice_row(where, lineno, rid=rid, question=stem, context=f"Question: {stem}\nAnswer:",
                      choices=texts, answer=answer, labels=list(texts),
                      meta={"benchmark": benchmark, "source": source, "index": index, "keys": keys})


def read_arc(path: str | Path, benchmark: str = "arc_easy", split: str = "test") -> BenchmarkRows:
    """An ARC ``.jsonl`` (``ARC-Easy-Test.jsonl``, ``ARC-Challenge-Test.jsonl``) → rows, ids the file's own.

    Raises:
        AuditInputError: a bad JSON line or record (naming the line).
    """
    return jsonl_rows(benchmark, path, split, partial(arc_row, benchmark=benchmark))


def hub_arc(benchmark: str, config: str) -> Callable[[str, str], BenchmarkRows]:
    """The hub reader of an ARC set (``allenai/ai2_arc``, config ``ARC-Easy`` / ``ARC-Challenge``)."""
    return lambda hub_id, split: hub_rows(benchmark, hub_id, config, split, split,
                                          partial(arc_row, benchmark=benchmark))


register(Benchmark("arc_easy", ("test",), lambda s: data_names("arc_easy", "ARC-Easy-Test.jsonl"),
                   lambda p, s: read_arc(p, "arc_easy", s), "allenai/ai2_arc", hub_arc("arc_easy", "ARC-Easy")))
