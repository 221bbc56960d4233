"""IFEval (Zhou et al., 2023, arXiv:2311.07911): ``input_data.jsonl`` (541 prompts) → rows with
``prompt``, ``instruction_id_list``, ``kwargs``; scorer ``ifeval``. ``meta.instruction_group`` is
the group of the first instruction (``detectable_format``, ``keywords``, ...), for stratified sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_jsonl
from .benchmark import Benchmark, BenchmarkRows, hub_split, need, register


# --------------------------------------------------------------------------- IFEval
def ifeval_row(rec: dict[str, Any], where: Path | str, lineno: int | str, source: str) -> dict[str, Any]:
    """One IFEval record (``key``, ``prompt``, ``instruction_id_list``, ``kwargs``) → item row.

    ``kwargs`` entries whose value is None are dropped (the hub copy stores
    every possible argument of every instruction, mostly None; the reference
    checkers take only the ones given).
    """
    key = rec.get("key")
    if isinstance(key, bool) or not isinstance(key, (int, str)) or str(key) == "":
        raise AuditInputError(where, f"line {lineno}: field 'key' missing" if isinstance(lineno, int)
                              else f"{lineno}: field 'key' missing")
    prompt = need(where, lineno, rec, "prompt", str)
    ids = need(where, lineno, rec, "instruction_id_list", list)
    kwargs = need(where, lineno, rec, "kwargs", list)
    if not ids or len(ids) != len(kwargs) or not all(isinstance(i, str) for i in ids) \
            or not all(isinstance(k, dict) for k in kwargs):
        raise AuditInputError(where, f"line {lineno}: 'instruction_id_list' and 'kwargs' must be lists of the "
                                     "same length (instruction ids and one object each)")
    kwargs = [{k: v for k, v in kw.items() if v is not None} for kw in kwargs]
    return {"id": f"ifeval-{key}", "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs,
            "meta": {"benchmark": "ifeval", "source": source, "key": key,
                     "instruction_group": ids[0].split(":")[0]}}


def read_ifeval(path: str | Path) -> BenchmarkRows:
    """IFEval ``input_data.jsonl`` → rows (541 in the published file).

    Raises:
        AuditInputError: a line that is not a JSON object or lacks a field.
    """
    path = Path(path)
    rows = [ifeval_row(rec, path, n, path.name) for n, rec in read_jsonl(path)]
    return BenchmarkRows("ifeval", "train", str(path), rows, len(rows))


def _hub_ifeval(hub_id: str, split: str) -> BenchmarkRows:
    ds = hub_split(hub_id, None, "train")
    rows = [ifeval_row(dict(r), f"hub:{hub_id}", f"record {i}", hub_id) for i, r in enumerate(ds)]
    return BenchmarkRows("ifeval", split, f"hub:{hub_id}", rows, len(rows))


register(Benchmark("ifeval", ("train",), lambda s: ("ifeval_input_data.jsonl", "input_data.jsonl"),
                   lambda p, s: read_ifeval(p), "google/IFEval", _hub_ifeval))
