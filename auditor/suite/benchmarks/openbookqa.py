"""OpenBookQA (Mihaylov et al., 2018, *Can a Suit of Armor Conduct Electricity? A New Dataset for Open Book
Question Answering*, arXiv:1809.02789): the release's ``Main/test.tsv`` (500 questions) → multiple-choice rows
(:mod:`.choice_rows`) as lm-evaluation-harness's ``openbookqa`` task builds them: context the bare question stem,
choices the option texts, gold the option whose label equals the answer key.

The TSV has a header row (``ID``, ``Question Stem``, ``Choices``, ``Complete Question``, ``Answer Key``) and is
read without quoting (a ``"`` is text); its ``Choices`` cell holds the four options as
``(A) text (B) text (C) text (D) text``. Item ids are the release's ``ID``.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from ...util.jsonio import read_text
from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, gold_by_key, hub_rows, text_field

OPENBOOKQA_COLUMNS = ("ID", "Question Stem", "Choices", "Answer Key")
_OPTION = re.compile(r"\(([A-D])\) ")


def openbookqa_options(where: Path | str, lineno: Where, cell: str) -> tuple[list[str], list[str]]:
    """``(A) x (B) y (C) z (D) w`` → (option texts, stripped; their labels).

    Raises:
        AuditInputError: text before ``(A)``, or fewer than two options.
    """
    parts = _OPTION.split(cell.strip())
    if parts[0].strip() or len(parts) < 5:
        raise bad_record(where, lineno, f"'Choices' {cell[:60]!r} is not of the form '(A) ... (B) ...'")
    return [t.strip() for t in parts[2::2]], parts[1::2]


def openbookqa_row(rid: str, stem: str, texts: list[str], keys: list[str], answer_key: Any, index: int,
                   where: Path | str, lineno: Where, source: str) -> dict[str, Any]:
    """One OpenBookQA question → row."""
    return choice_row(where, lineno, rid=rid, question=stem, context=stem, choices=texts,
                      answer=gold_by_key(where, lineno, keys, answer_key), labels=list(texts),
                      meta={"benchmark": "openbookqa", "source": source, "index": index, "keys": keys})


def read_openbookqa(path: str | Path, split: str = "test") -> BenchmarkRows:
    """OpenBookQA ``test.tsv`` → rows (500).

    Raises:
        AuditInputError: a missing column, a row with more or fewer cells than the header, an empty cell, a
            ``Choices`` cell not of the ``(A) ... (B) ...`` form, an answer key that is no option's label.
    """
    path = Path(path)
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in OPENBOOKQA_COLUMNS if c not in header]
    if missing:
        raise bad_record(path, 1, f"column(s) {missing} missing (header has {header})")
    col = {c: header.index(c) for c in OPENBOOKQA_COLUMNS}
    rows: list[dict[str, Any]] = []
    for cells in reader:
        lineno = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise bad_record(path, lineno, f"{len(cells)} tab-separated cells; the header has {len(header)}")
        rec = {c: cells[i] for c, i in col.items()}
        rid, stem = text_field(path, lineno, rec, "ID").strip(), text_field(path, lineno, rec, "Question Stem")
        texts, keys = openbookqa_options(path, lineno, text_field(path, lineno, rec, "Choices"))
        rows.append(openbookqa_row(rid, stem, texts, keys, rec["Answer Key"], len(rows), path, lineno, path.name))
    return BenchmarkRows("openbookqa", split, str(path), rows, len(rows))


def _hub_openbookqa(hub_id: str, split: str) -> BenchmarkRows:
    def row(rec: dict[str, Any], i: int, _split: str, where: Path | str, place: Where, source: str) -> dict[str, Any]:
        options = rec.get("choices")
        if not isinstance(options, dict):
            raise bad_record(where, place, "field 'choices' missing or not {text: [...], label: [...]}")
        return openbookqa_row(text_field(where, place, rec, "id"), text_field(where, place, rec, "question_stem"),
                              list(options.get("text") or []), list(options.get("label") or []),
                              rec.get("answerKey"), i, where, place, source)
    return hub_rows("openbookqa", hub_id, "main", split, split, row)


register(Benchmark("openbookqa", ("test",), lambda s: data_names("openbookqa", "test.tsv", flat="openbookqa_test.tsv"),
                   lambda p, s: read_openbookqa(p, s), "allenai/openbookqa", _hub_openbookqa))
