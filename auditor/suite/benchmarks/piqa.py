"""PIQA (Bisk et al., 2020, *PIQA: Reasoning about Physical Commonsense in Natural Language*, arXiv:1911.11641):
the authors' ``valid.jsonl`` (1838 goals, no labels) with ``valid-labels.lst`` beside it (one ``0``/``1`` per line,
aligned with the records) → multiple-choice rows (:mod:`.choice_rows`) as lm-evaluation-harness's ``piqa`` task
builds them: context ``"Question: {goal}\\nAnswer:"``, choices ``[sol1, sol2]``, gold the label.

Item ids are the record's ``id`` where it has one (the AI2 leaderboard's copy), else ``piqa-<split>-<index>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_jsonl, read_text
from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, hub_rows, text_field


def piqa_row(rec: dict[str, Any], label: Any, index: int, split: str, where: Path | str, lineno: Where,
             source: str) -> dict[str, Any]:
    """One PIQA record and its label (0: ``sol1``, 1: ``sol2``) → row.

    Raises:
        AuditInputError: a missing field, a label other than 0/1.
    """
    goal = text_field(where, lineno, rec, "goal")
    sols = [text_field(where, lineno, rec, "sol1"), text_field(where, lineno, rec, "sol2")]
    if isinstance(label, bool) or label not in (0, 1):
        raise bad_record(where, lineno, f"label {label!r} is not 0 (sol1) or 1 (sol2)")
    rid = rec["id"] if isinstance(rec.get("id"), str) and rec["id"].strip() else f"piqa-{split}-{index}"
    return choice_row(where, lineno, rid=rid, question=goal, context=f"Question: {goal}\nAnswer:",
                      choices=sols, answer=int(label), labels=list(sols),
                      meta={"benchmark": "piqa", "source": source, "index": index})


def labels_file(path: Path) -> Path:
    """The labels file beside a PIQA records file: ``valid.jsonl`` → ``valid-labels.lst``."""
    return path.with_name(path.name.removesuffix(".jsonl") + "-labels.lst")


def read_piqa(path: str | Path, split: str = "validation") -> BenchmarkRows:
    """PIQA ``valid.jsonl`` and the ``valid-labels.lst`` beside it → rows (1838).

    Raises:
        AuditInputError: no labels file, a label that is not 0/1 (naming the labels file and line), a record count
            the labels do not match, a bad JSON line or record.
    """
    path = Path(path)
    lst = labels_file(path)
    if not lst.is_file():
        raise AuditInputError(lst, f"PIQA labels file not found (the labels of {path.name}, one 0/1 per line)")
    labels: list[tuple[int, int]] = []
    for n, line in enumerate(read_text(lst).splitlines(), 1):
        if line.strip():
            if line.strip() not in ("0", "1"):
                raise bad_record(lst, n, f"label {line.strip()[:40]!r} is not 0 or 1")
            labels.append((n, int(line)))
    records = read_jsonl(path)
    if len(labels) != len(records):
        raise AuditInputError(lst, f"{len(labels)} labels for the {len(records)} records of {path.name}")
    rows = [piqa_row(rec, label, i, split, path, n, path.name)
            for i, ((n, rec), (_, label)) in enumerate(zip(records, labels))]
    return BenchmarkRows("piqa", split, str(path), rows, len(rows))


def _hub_piqa(hub_id: str, split: str) -> BenchmarkRows:
    return hub_rows("piqa", hub_id, None, split, split,
                    lambda rec, i, s, where, place, source: piqa_row(rec, rec.get("label"), i, s, where, place, source))


register(Benchmark("piqa", ("validation",), lambda s: data_names("piqa", "valid.jsonl", flat="piqa_valid.jsonl"),
                   lambda p, s: read_piqa(p, s), "baber/piqa", _hub_piqa))
