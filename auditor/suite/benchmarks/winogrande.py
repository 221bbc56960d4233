"""WinoGrande (Sakaguchi et al., 2020, *WinoGrande: An Adversarial Winograd Schema Challenge at Scale*,
arXiv:1907.10641): the ``dev.jsonl`` release (1267 sentences; the hub's ``winogrande_xl`` validation) →
multiple-choice rows (:mod:`.choice_rows`) for lm-evaluation-harness's ``winogrande`` task, which scores the text
after the blank: ``contexts`` are the sentence up to the ``_`` with each option in it, ``choices`` the rest of the
sentence after the blank, stripped, once per option (its ``preprocess_winogrande``); gold ``answer`` "1" → 0,
"2" → 1.

Item ids are the release's ``qID`` (the hub's records have none: ``winogrande-<split>-<index>`` there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, hub_rows, jsonl_rows, text_field


def winogrande_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where,
                   source: str) -> dict[str, Any]:
    """One WinoGrande record (``sentence`` with one ``_``, ``option1``, ``option2``, ``answer`` "1"/"2") → row.

    Raises:
        AuditInputError: a missing field, a sentence without ``_``, an answer other than "1"/"2".
    """
    sentence = text_field(where, lineno, rec, "sentence")
    options = [text_field(where, lineno, rec, "option1"), text_field(where, lineno, rec, "option2")]
    answer = rec.get("answer")
    if str(answer) not in ("1", "2") or isinstance(answer, bool):
        raise bad_record(where, lineno, f"answer {answer!r} is not \"1\" (option1) or \"2\" (option2)")
    blank = sentence.find("_")
    if blank < 0:
        raise bad_record(where, lineno, "the sentence has no '_' blank")
    rid = rec["qID"] if isinstance(rec.get("qID"), str) and rec["qID"].strip() else f"winogrande-{split}-{index}"
    rest = sentence[blank + 1:].strip()
    return choice_row(where, lineno, rid=rid, question=sentence,
                      contexts=[sentence[:blank] + option for option in options], choices=[rest] * len(options),
                      answer=int(str(answer)) - 1, labels=options,
                      meta={"benchmark": "winogrande", "source": source, "index": index})


def read_winogrande(path: str | Path, split: str = "validation") -> BenchmarkRows:
    """WinoGrande ``dev.jsonl`` → rows (1267).

    Raises:
        AuditInputError: a bad JSON line or record (naming the line).
    """
    return jsonl_rows("winogrande", path, split, winogrande_row)


def _hub_winogrande(hub_id: str, split: str) -> BenchmarkRows:
    return hub_rows("winogrande", hub_id, "winogrande_xl", split, split, winogrande_row)


register(Benchmark("winogrande", ("validation",),
                   lambda s: data_names("winogrande", "dev.jsonl", flat="winogrande_dev.jsonl"),
                   lambda p, s: read_winogrande(p, s), "allenai/winogrande", _hub_winogrande))
