"""MMLU-Redux (Gema et al., 2024, arXiv:2406.04127): a folder of ``mmlu_<subject>.csv`` (or the hub's
per-subject configs) → rows with ``question``, ``choices`` (option texts), ``answer`` (letter) and
``meta.subject``; scorer ``multiple_choice``. Rows whose re-annotated ``error_type`` is not ``ok``
(case-insensitive, after stripping) are excluded and counted."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...records import LETTERS
from .benchmark import Benchmark, BenchmarkRows, csv_records, hub_split, need, register

# --------------------------------------------------------------------------- MMLU-Redux
MMLU_COLUMNS = ("question", "choices", "answer", "error_type")


_MMLU_FILE = re.compile(r"^mmlu_(?P<subject>[a-z0-9_]+)\.csv$")


def mmlu_redux_row(rec: dict[str, Any], subject: str, index: int, where: Path | str, lineno: int | str,
                   source: str) -> tuple[dict[str, Any] | None, str]:
    """One MMLU-Redux record → (item row, error type), or (None, error type) when excluded.

    ``choices`` may be a list or its Python-literal string (the CSV copies,
    parsed with :func:`ast.literal_eval`); ``answer`` is the 0-based index of
    the original MMLU label, turned into a letter. ``error_type`` is compared
    case-insensitively after stripping: only ``ok`` rows are kept.
    """
    err = str(rec.get("error_type") or "").strip().lower()
    at = f"line {lineno}" if isinstance(lineno, int) else str(lineno)
    question = need(where, lineno, rec, "question", str)
    choices = rec.get("choices")
    if isinstance(choices, str):
        try:
            choices = ast.literal_eval(choices.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise AuditInputError(where, f"{at}: 'choices' is not a Python list literal") from None
    if not isinstance(choices, (list, tuple)) or not 2 <= len(choices) <= len(LETTERS) \
            or not all(isinstance(c, str) for c in choices):
        raise AuditInputError(where, f"{at}: 'choices' must be a list of 2 to {len(LETTERS)} option texts")
    try:
        answer = int(str(rec.get("answer")).strip())
    except ValueError:
        raise AuditInputError(where, f"{at}: 'answer' must be an option index 0-{len(choices) - 1}") from None
    if not 0 <= answer < len(choices):
        raise AuditInputError(where, f"{at}: 'answer' {answer} out of range 0-{len(choices) - 1}")
    if not err:
        raise AuditInputError(where, f"{at}: empty 'error_type'")
    if err != "ok":
        return None, err
    return {"id": f"{subject}-{index}", "question": question.strip(), "choices": [c.strip() for c in choices],
            "answer": LETTERS[answer],
            "meta": {"benchmark": "mmlu_redux", "source": source, "subject": subject, "index": index}}, err


def read_mmlu_redux(folder: str | Path) -> BenchmarkRows:
    """A folder of MMLU-Redux ``mmlu_<subject>.csv`` files → rows of every ``ok`` record.

    Files are read in name order; item ids are ``<subject>-<index>`` with the
    0-based record index in its file (excluded records keep their index, so
    ids are stable). ``BenchmarkRows.excluded`` counts the left-out records
    per error type.

    Raises:
        AuditInputError: no ``mmlu_*.csv`` file, a missing column, a choices
            cell that is not a list literal, an answer out of range.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.glob("mmlu_*.csv") if _MMLU_FILE.fullmatch(p.name))
    if not files:
        raise AuditInputError(folder, "no MMLU-Redux files (mmlu_<subject>.csv) in this folder")
    rows, n = [], 0
    excluded: Counter[str] = Counter()
    for f in files:
        match = _MMLU_FILE.fullmatch(f.name)
        assert match is not None  # the files were listed by this pattern
        subject = match["subject"]
        for index, (lineno, rec) in enumerate(csv_records(f, MMLU_COLUMNS)):
            n += 1
            row, err = mmlu_redux_row(rec, subject, index, f, lineno, f.name)
            if row is None:
                excluded[err] += 1
            else:
                rows.append(row)
    return BenchmarkRows("mmlu_redux", "test", str(folder), rows, n, dict(excluded))


def _hub_mmlu_redux(hub_id: str, split: str) -> BenchmarkRows:
    import datasets

    try:
        subjects = sorted(datasets.get_dataset_config_names(hub_id))
    except Exception as e:
        raise AuditInputError(f"hub:{hub_id}", f"could not list subjects ({type(e).__name__}: {e}); "
                                               "pass --data-dir DIR with local mmlu_<subject>.csv files") from None
    rows, n = [], 0
    excluded: Counter[str] = Counter()
    for subject in subjects:
        for index, rec in enumerate(hub_split(hub_id, subject, split)):
            n += 1
            row, err = mmlu_redux_row(dict(rec), subject, index, f"hub:{hub_id}/{subject}", f"record {index}", hub_id)
            if row is None:
                excluded[err] += 1
            else:
                rows.append(row)
    return BenchmarkRows("mmlu_redux", split, f"hub:{hub_id}", rows, n, dict(excluded))


register(Benchmark("mmlu_redux", ("test",), lambda s: ("mmlu_redux", "mmlu-redux"),
                   lambda p, s: read_mmlu_redux(p), "edinburgh-dawg/mmlu-redux-2.0", _hub_mmlu_redux))
