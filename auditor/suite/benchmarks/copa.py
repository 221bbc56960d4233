"""COPA (Roemmele, Bejan and Gordon, 2011, *Choice of Plausible Alternatives: An Evaluation of Commonsense Causal
Reasoning*, AAAI Spring Symposium on Logical Formalizations of Commonsense Reasoning; no arXiv version), as
SuperGLUE's ``val.jsonl`` (100 premises) → multiple-choice rows (:mod:`.choice_rows`) as lm-evaluation-harness's
``copa`` task (``super_glue/copa/utils.py``) builds them: context the premise without its last character (the
period) and ``" because"`` (cause) or ``" therefore"`` (effect); choices the two alternatives with their first
letter lower-cased, each *with a leading space*, as that task's ``doc_to_choice`` returns them (so the scored
continuation, after the target delimiter, starts with two spaces, as lm-evaluation-harness scores it).

``meta.question`` is ``cause`` or ``effect``. Item ids are ``copa-<split>-<idx>``. XCOPA (:mod:`.xcopa`) shares
:func:`copa_fields`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, hub_rows, jsonl_rows, text_field

#: COPA's connectors (lm-evaluation-harness's ``copa``)
COPA_CONNECTORS = {"cause": "because", "effect": "therefore"}


def lower_first(choice: str) -> str:
    """The alternative with its first letter lower-cased (lm-evaluation-harness's ``convert_choice``)."""
    return choice[0].lower() + choice[1:]


def copa_fields(rec: dict[str, Any], where: Path | str, lineno: Where
                ) -> tuple[str, str, list[str], int, int | None]:
    """(premise, ``cause``/``effect``, [choice1, choice2], gold index, ``idx``) of a COPA-shaped record.

    Raises:
        AuditInputError: a missing field, a question other than cause/effect, a label other than 0/1.
    """
    premise = text_field(where, lineno, rec, "premise")
    question = rec.get("question")
    if not isinstance(question, str) or question not in COPA_CONNECTORS:
        raise bad_record(where, lineno, f"question {question!r} is not 'cause' or 'effect'")
    options = [text_field(where, lineno, rec, "choice1"), text_field(where, lineno, rec, "choice2")]
    label = rec.get("label")
    if isinstance(label, bool) or label not in (0, 1):
        raise bad_record(where, lineno, f"label {label!r} is not 0 (choice1) or 1 (choice2)")
    idx = rec.get("idx")
    return premise, question, options, int(label), idx if isinstance(idx, int) and not isinstance(idx, bool) \
        else None


def copa_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where,
             source: str) -> dict[str, Any]:
    """One COPA record (``premise``, ``choice1``, ``choice2``, ``question``, ``label``, ``idx``) → row."""
    premise, question, options, answer, idx = copa_fields(rec, where, lineno)
    return choice_row(where, lineno, rid=f"copa-{split}-{index if idx is None else idx}", question=premise,
                      context=premise.strip()[:-1] + f" {COPA_CONNECTORS[question]}",
                      choices=[" " + lower_first(c) for c in options], answer=answer, labels=options,
                      meta={"benchmark": "copa", "source": source, "index": index, "question": question})


def read_copa(path: str | Path, split: str = "validation") -> BenchmarkRows:
    """COPA ``val.jsonl`` → rows (100).

    Raises:
        AuditInputError: a bad JSON line or record (naming the line).
    """
    return jsonl_rows("copa", path, split, copa_row)


def _hub_copa(hub_id: str, split: str) -> BenchmarkRows:
    return hub_rows("copa", hub_id, "copa", split, split, copa_row)


register(Benchmark("copa", ("validation",), lambda s: data_names("copa", "val.jsonl", flat="copa_val.jsonl"),
                   lambda p, s: read_copa(p, s), "aps/super_glue", _hub_copa))
