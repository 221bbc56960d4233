"""BoolQ (Clark et al., 2019, *BoolQ: Exploring the Surprising Difficulty of Natural Yes/No Questions*,
arXiv:1905.10044), as SuperGLUE's ``val.jsonl`` (3270 questions) → multiple-choice rows (:mod:`.choice_rows`)
as lm-evaluation-harness's ``boolq`` task builds them: context ``"{passage}\\nQuestion: {question}?\\nAnswer:"``,
choices ``["no", "yes"]``, gold 1 for a true label.

The label may be a JSON bool, the string ``"true"``/``"false"`` (the copy this project tests with) or the hub's
0/1; Google's own release names it ``answer``. Item ids are ``boolq-<split>-<idx>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, hub_rows, jsonl_rows, text_field

_TRUTH = {"true": 1, "false": 0}


def boolq_gold(where: Path | str, lineno: Where, rec: dict[str, Any]) -> int:
    """1 for a true ``label`` (or ``answer``), 0 for a false one.

    Raises:
        AuditInputError: no label, or one that is neither true nor false.
    """
    label = rec["label"] if "label" in rec else rec.get("answer")
    if isinstance(label, bool):
        return int(label)
    if isinstance(label, int) and label in (0, 1):
        return label
    if isinstance(label, str) and label.strip().lower() in _TRUTH:
        return _TRUTH[label.strip().lower()]
    raise bad_record(where, lineno, f"label {label!r} is not true or false")


def boolq_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where,
              source: str) -> dict[str, Any]:
    """One BoolQ record (``question``, ``passage``, ``label``, ``idx``) → row.

    Raises:
        AuditInputError: a missing field, a label neither true nor false.
    """
    question = text_field(where, lineno, rec, "question")
    passage = text_field(where, lineno, rec, "passage")
    idx = rec.get("idx")
    key = idx if isinstance(idx, int) and not isinstance(idx, bool) else index
    return choice_row(where, lineno, rid=f"boolq-{split}-{key}", question=question,
                      context=f"{passage}\nQuestion: {question}?\nAnswer:", choices=["no", "yes"],
                      answer=boolq_gold(where, lineno, rec), labels=["no", "yes"],
                      meta={"benchmark": "boolq", "source": source, "index": index})


def read_boolq(path: str | Path, split: str = "validation") -> BenchmarkRows:
    """BoolQ ``val.jsonl`` → rows (3270).

    Raises:
        AuditInputError: a bad JSON line or record (naming the line).
    """
    return jsonl_rows("boolq", path, split, boolq_row)


def _hub_boolq(hub_id: str, split: str) -> BenchmarkRows:
    return hub_rows("boolq", hub_id, "boolq", split, split, boolq_row)


register(Benchmark("boolq", ("validation",), lambda s: data_names("boolq", "val.jsonl", flat="boolq_val.jsonl"),
                   lambda p, s: read_boolq(p, s), "aps/super_glue", _hub_boolq))
