"""GSM8K (Cobbe et al., 2021, arXiv:2110.14168): ``test.jsonl`` (1319 problems) → rows with
``question`` and ``answer`` = the number after ``####`` in the reference solution (thousands
separators removed); scorer ``numeric_match``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_jsonl
from .benchmark import Benchmark, BenchmarkRows, hub_split, need, register

# --------------------------------------------------------------------------- GSM8K
_GSM8K_GOLD = re.compile(r"####\s*(-?[\d,]*\.?\d+)\s*$")


def gsm8k_gold(solution: str) -> int | float:
    """The gold number of a GSM8K reference solution: the number after ``####``.

    Thousands separators are removed (``#### 1,450,000`` → 1450000).

    Raises:
        ValueError: no ``#### <number>`` at the end of the solution.
    """
    m = _GSM8K_GOLD.search(solution.strip())
    if not m:
        raise ValueError("no '#### <number>' at the end of the answer")
    raw = m.group(1).replace(",", "")
    value = float(raw)
    return int(value) if value.is_integer() and "." not in raw else value


def gsm8k_row(rec: dict[str, Any], index: int, where: Path | str, lineno: int | str, source: str,
              split: str) -> dict[str, Any]:
    """One GSM8K record (``question``, ``answer`` = solution) → item row with a numeric ``answer``."""
    question = need(where, lineno, rec, "question", str)
    solution = need(where, lineno, rec, "answer", str)
    try:
        gold = gsm8k_gold(solution)
    except ValueError as e:
        raise AuditInputError(where, f"line {lineno}: {e}" if isinstance(lineno, int) else f"{lineno}: {e}") from None
    return {"id": f"gsm8k-{split}-{index}", "question": question, "answer": gold,
            "meta": {"benchmark": "gsm8k", "source": source, "index": index}}


def read_gsm8k(path: str | Path, split: str = "test") -> BenchmarkRows:
    """GSM8K ``test.jsonl`` (or ``train.jsonl``) → rows (1319 in the test file).

    Item ids are ``gsm8k-<split>-<index>`` with the 0-based record index.

    Raises:
        AuditInputError: a bad JSON line or a solution without ``#### <number>``.
    """
    path = Path(path)
    rows = [gsm8k_row(rec, i, path, n, path.name, split) for i, (n, rec) in enumerate(read_jsonl(path))]
    return BenchmarkRows("gsm8k", split, str(path), rows, len(rows))


def _hub_gsm8k(hub_id: str, split: str) -> BenchmarkRows:
    ds = hub_split(hub_id, "main", split)
    rows = [gsm8k_row(dict(r), i, f"hub:{hub_id}", f"record {i}", hub_id, split) for i, r in enumerate(ds)]
    return BenchmarkRows("gsm8k", split, f"hub:{hub_id}", rows, len(rows))


register(Benchmark("gsm8k", ("test", "train"), lambda s: (f"gsm8k_{s}.jsonl", f"{s}.jsonl"),
                   lambda p, s: read_gsm8k(p, s), "openai/gsm8k", _hub_gsm8k))
