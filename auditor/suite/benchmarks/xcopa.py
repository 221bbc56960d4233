"""XCOPA (Ponti et al., 2020, *XCOPA: A Multilingual Dataset for Causal Commonsense Reasoning*, arXiv:2005.00333):
the authors' ``test.<lang>.jsonl`` (500 premises) and ``val.<lang>.jsonl`` (100) in 11 languages → multiple-choice
rows (:mod:`.choice_rows`) as lm-evaluation-harness's ``xcopa_<lang>`` tasks (``xcopa/utils.py``) build them:
context the premise without its last character (the period) and the language's connector for ``cause`` or
``effect`` (:data:`XCOPA_CONNECTORS`); choices the two alternatives with their first letter lower-cased (no leading
space, unlike :mod:`.copa`).

The split names the language: ``test.<lang>`` or ``validation.<lang>`` (``test.it``, ``validation.zh``, ...; the
hub's config ``<lang>``, split ``test`` / ``validation``). ``meta.language`` is the ISO 639 code and
``meta.question`` the record's own ``cause``/``effect`` (a few items differ across the languages' files). The
files' CRLF line ends are read as line ends. Item ids are ``xcopa-<lang>-<test|validation>-<idx>``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, choice_row, data_names, hub_rows, jsonl_rows
from .copa import copa_fields, lower_first

#: language → connector of ``cause`` and of ``effect`` (lm-evaluation-harness's ``xcopa/utils.py``)
XCOPA_CONNECTORS: dict[str, dict[str, str]] = {
    "et": {"cause": "sest", "effect": "seetõttu"},
    "ht": {"cause": "poukisa", "effect": "donk sa"},
    "id": {"cause": "karena", "effect": "maka"},
    "it": {"cause": "perché", "effect": "quindi"},
    "qu": {"cause": "imataq", "effect": "chaymi"},
    "sw": {"cause": "kwa sababu", "effect": "kwa hiyo"},
    "ta": {"cause": "காரணமாக", "effect": "எனவே"},
    "th": {"cause": "เพราะ", "effect": "ดังนั้น"},
    "tr": {"cause": "çünkü", "effect": "bu yüzden"},
    "vi": {"cause": "bởi vì", "effect": "vì vậy"},
    "zh": {"cause": "因为", "effect": "所以"},
}
XCOPA_SPLITS = tuple(f"{part}.{lang}" for part in ("test", "validation") for lang in XCOPA_CONNECTORS)
#: a split's part → the release's file prefix
_FILE_PART = {"test": "test", "validation": "val"}


def xcopa_split(split: str) -> tuple[str, str]:
    """``test.it`` → (``test``, ``it``).

    Raises:
        AuditInputError: not ``test.<lang>`` / ``validation.<lang>`` of a known language.
    """
    part, _, lang = split.partition(".")
    if part not in _FILE_PART or lang not in XCOPA_CONNECTORS:
        raise AuditInputError("xcopa", f"unknown split {split!r}: use test.<lang> or validation.<lang>, <lang> one "
                                       f"of {list(XCOPA_CONNECTORS)}")
    return part, lang


def xcopa_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where,
              source: str) -> dict[str, Any]:
    """One XCOPA record (COPA's fields and ``changed``) of split ``test.<lang>`` / ``validation.<lang>`` → row.

    Raises:
        AuditInputError: a missing field, a question other than cause/effect, a label other than 0/1.
    """
    part, lang = xcopa_split(split)
    premise, question, options, answer, idx = copa_fields(rec, where, lineno)
    return choice_row(where, lineno, rid=f"xcopa-{lang}-{part}-{index if idx is None else idx}", question=premise,
                      context=premise.strip()[:-1] + f" {XCOPA_CONNECTORS[lang][question]}",
                      choices=[lower_first(c) for c in options], answer=answer, labels=options,
                      meta={"benchmark": "xcopa", "source": source, "index": index, "language": lang,
                            "question": question})


def read_xcopa(path: str | Path, split: str = "test.et") -> BenchmarkRows:
    """An XCOPA ``test.<lang>.jsonl`` / ``val.<lang>.jsonl`` → rows of split ``test.<lang>`` / ``validation.<lang>``
    (500 / 100).

    Raises:
        AuditInputError: an unknown split, a bad JSON line or record (naming the line).
    """
    xcopa_split(split)
    return jsonl_rows("xcopa", path, split, xcopa_row)


def xcopa_names(split: str) -> tuple[str, ...]:
    """``test.it`` → ``test.it.jsonl``, flat, in ``xcopa/`` and in ``mc/xcopa/``, then the release's
    ``data/it/test.it.jsonl`` (``validation.it`` → ``val.it.jsonl``)."""
    part, lang = xcopa_split(split)
    name = f"{_FILE_PART[part]}.{lang}.jsonl"
    return (*data_names("xcopa", name), f"xcopa/data/{lang}/{name}", f"data/{lang}/{name}")


def _hub_xcopa(hub_id: str, split: str) -> BenchmarkRows:
    part, lang = xcopa_split(split)
    return hub_rows("xcopa", hub_id, lang, part, split, xcopa_row)


register(Benchmark("xcopa", XCOPA_SPLITS, xcopa_names, lambda p, s: read_xcopa(p, s), "cambridgeltl/xcopa",
                   _hub_xcopa))
