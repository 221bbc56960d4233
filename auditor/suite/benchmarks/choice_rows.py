"""What the multiple-choice loaders share: the row they build for log-likelihood scoring, the fault of a bad
record, where they look for their files, and the hub's records turned into rows.

A multiple-choice row (every loader of :mod:`.arc_easy`, :mod:`.arc_challenge`, :mod:`.piqa`, :mod:`.winogrande`,
:mod:`.boolq`, :mod:`.copa`, :mod:`.openbookqa`, :mod:`.xcopa`, :mod:`.hellaswag` builds it with :func:`choice_row`)::

    {"id": str, "question": str, "context": str, "choices": [str, ...], "answer": int, "labels": [str, ...],
     "meta": {"benchmark": str, "source": str, "index": int, ...}}

``context`` is the text the choices continue, built as lm-evaluation-harness's task builds it (its
``doc_to_text``); ``choices`` are lm-evaluation-harness's ``doc_to_choice``, without the target delimiter (one
space) that the scorer puts between the context and each choice; ``answer`` is the 0-based gold index; ``labels``
are the options' display texts. Winogrande's rows, scored on the text after the blank, hold ``contexts`` (one per
option: the sentence up to the blank with the option in it) instead of ``context``, and the same continuation once
per option in ``choices``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_jsonl
from .benchmark import BenchmarkRows, hub_split

#: a record's place in its source: a line number of a file, or ``record N`` of a hub split
Where = int | str


def bad_record(path: Path | str, lineno: Where, fault: str) -> AuditInputError:
    """The error of a bad record: ``<path>: line N: <fault>`` (``<path>: record N: <fault>`` on the hub)."""
    return AuditInputError(path, f"line {lineno}: {fault}" if isinstance(lineno, int) else f"{lineno}: {fault}")


def choice_row(where: Path | str, lineno: Where, *, rid: str, question: str, choices: list[str], answer: int,
               labels: list[str], meta: dict[str, Any], context: str | None = None,
               contexts: list[str] | None = None) -> dict[str, Any]:
    """One multiple-choice row (the module docstring's shape): exactly one of ``context`` / ``contexts``.

    Raises:
        AuditInputError: fewer than two choices, labels (or contexts) not one per choice, the answer out of range.
    """
    if len(choices) < 2:
        raise bad_record(where, lineno, f"{len(choices)} choice(s); a multiple-choice item needs at least 2")
    if len(labels) != len(choices):
        raise bad_record(where, lineno, f"{len(labels)} option labels for {len(choices)} choices")
    if not 0 <= answer < len(choices):
        raise bad_record(where, lineno, f"gold answer index {answer} out of range 0-{len(choices) - 1}")
    row: dict[str, Any] = {"id": rid, "question": question}
    if contexts is not None:
        if len(contexts) != len(choices):
            raise bad_record(where, lineno, f"{len(contexts)} contexts for {len(choices)} choices")
        row["contexts"] = contexts
    else:
        assert context is not None  # one of context / contexts, by every caller
        row["context"] = context
    row.update(choices=choices, answer=answer, labels=labels, meta=meta)
    return row


def text_field(where: Path | str, lineno: Where, rec: dict[str, Any], key: str) -> str:
    """``rec[key]``, a non-empty string.

    Raises:
        AuditInputError: missing, not a string, or empty (blank).
    """
    value = rec.get(key)
    if not isinstance(value, str) or not value.strip():
        raise bad_record(where, lineno, f"field {key!r} missing, empty or not a string")
    return value


def data_names(folder: str, *files: str, flat: str | None = None) -> tuple[str, ...]:
    """Where a data dir may hold a benchmark's file: flat (under ``flat``, else the file's own name), in
    ``<folder>/`` and in ``mc/<folder>/`` (a data dir that keeps the multiple-choice benchmarks apart), each of
    ``files`` in turn. A generic upstream name (``val.jsonl``: BoolQ's and COPA's) goes flat as ``flat`` only."""
    names = [flat] if flat else list(files)
    return tuple(names + [f"{prefix}{name}" for prefix in (f"{folder}/", f"mc/{folder}/") for name in files])


#: a loader's record → row: ``row(record, index, split, where, place, source)`` (``where`` the file or hub dataset,
#: ``place`` the line number or ``record N``, ``source`` the file name or hub id)
RowFn = Callable[[dict[str, Any], int, str, Path | str, Where, str], dict[str, Any]]


def jsonl_rows(benchmark: str, path: str | Path, split: str, row: RowFn) -> BenchmarkRows:
    """A JSONL file → rows, ``row`` turning each record into one.

    Raises:
        AuditInputError: a bad JSON line, or ``row``'s fault with a record (naming the line).
    """
    path = Path(path)
    rows = [row(rec, i, split, path, n, path.name) for i, (n, rec) in enumerate(read_jsonl(path))]
    return BenchmarkRows(benchmark, split, str(path), rows, len(rows))


def hub_rows(benchmark: str, hub_id: str, config: str | None, hub_split_name: str, split: str,
             row: RowFn) -> BenchmarkRows:
    """One split of a hub dataset → rows, ``row`` turning each record into one (``where`` names the dataset and
    config, ``place`` is ``record N``)."""
    where = f"hub:{hub_id}" + (f"/{config}" if config else "")
    records: Iterable[Any] = hub_split(hub_id, config, hub_split_name)
    rows = [row(dict(rec), i, split, where, f"record {i}", hub_id) for i, rec in enumerate(records)]
    return BenchmarkRows(benchmark, split, f"hub:{hub_id}", rows, len(rows))


def gold_by_key(where: Path | str, lineno: Where, keys: list[str], answer_key: Any) -> int:
    """The index of the option whose key (``A``, ``1``, ...) equals ``answer_key``, compared as strings
    (ARC's keys are not always A-D: some items are keyed 1-4, some have 3 or 5 options).

    Raises:
        AuditInputError: the answer key missing, a key repeated, or the answer key none of the keys.
    """
    if not isinstance(answer_key, str) or not answer_key.strip():
        raise bad_record(where, lineno, "field 'answerKey' missing, empty or not a string")
    if len(set(keys)) != len(keys):
        raise bad_record(where, lineno, f"option labels {keys} repeat")
    if answer_key.strip() not in keys:
        raise bad_record(where, lineno, f"answerKey {answer_key!r} is none of the option labels {keys}")
    return keys.index(answer_key.strip())
