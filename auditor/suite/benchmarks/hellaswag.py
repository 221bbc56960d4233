"""HellaSwag (Zellers et al., 2019, *HellaSwag: Can a Machine Really Finish Your Sentence?*, arXiv:1905.07830):
validation (10042 contexts) → multiple-choice rows (:mod:`.choice_rows`) as lm-evaluation-harness's ``hellaswag``
task (``hellaswag/utils.py``) builds them: context ``preprocess(activity_label + ": " + ctx_a + " " +
ctx_b.capitalize())``, choices the four endings, each ``preprocess``-ed (:func:`hellaswag_preprocess`).

Two local forms are read:

* the release's ``hellaswag_val.jsonl`` (the hub's records, the same fields): exactly as that task does;
* llama.cpp's text form ``hellaswag_val_full.txt.bz2``, six lines a context: ``activity_label: ctx``, the gold
  index 0-3, the four endings. It holds ``ctx`` and not ``ctx_a``/``ctx_b``, so ``ctx_b`` is not capitalised (nor
  the rest of it lower-cased, as ``str.capitalize`` does), and it has replaced the ``[title]`` markers and dropped
  the ``[header]``, ``[step]`` and ``[substeps]`` ones already; ``preprocess`` is applied to each line on top, and
  removes the other ``[...]`` as the task does.

Item ids are ``hellaswag-<split>-<index>`` (the text form has no ``ind``; the jsonl's is in ``meta.ind``).
"""

from __future__ import annotations

import bz2
import re
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_regular_file
from .benchmark import Benchmark, BenchmarkRows, register
from .choice_rows import Where, bad_record, choice_row, data_names, hub_rows, jsonl_rows, text_field

#: the largest decompressed text form read (bytes; the validation file is about 9 MB)
MAX_TEXT_BYTES = 256 * 1024 * 1024


def hellaswag_preprocess(text: str) -> str:
    """lm-evaluation-harness's HellaSwag ``preprocess``: strip; ``" [title]"`` → ``". "``; every ``[...]``
    removed; double spaces made single (once)."""
    text = text.strip()
    text = text.replace(" [title]", ". ")
    text = re.sub("\\[.*?\\]", "", text)
    return text.replace("  ", " ")


def _row(context: str, endings: list[str], gold: int, index: int, split: str, where: Path | str, lineno: Where,
         meta: dict[str, Any]) -> dict[str, Any]:
    query = hellaswag_preprocess(context)
    choices = [hellaswag_preprocess(e) for e in endings]
    return choice_row(where, lineno, rid=f"hellaswag-{split}-{index}", question=query, context=query,
                      choices=choices, answer=gold, labels=list(choices),
                      meta={"benchmark": "hellaswag", "index": index, **meta})


def hellaswag_row(rec: dict[str, Any], index: int, split: str, where: Path | str, lineno: Where,
                  source: str) -> dict[str, Any]:
    """One record of the release / the hub (``activity_label``, ``ctx_a``, ``ctx_b``, ``endings``, ``label``)
    → row.

    Raises:
        AuditInputError: a missing field, endings that are not strings, a label that is no ending's index.
    """
    activity = text_field(where, lineno, rec, "activity_label")
    ctx_a, ctx_b = rec.get("ctx_a"), rec.get("ctx_b")
    if not isinstance(ctx_a, str) or not isinstance(ctx_b, str):
        raise bad_record(where, lineno, "fields 'ctx_a' and 'ctx_b' must be strings")
    endings = rec.get("endings")
    if not isinstance(endings, list) or not all(isinstance(e, str) for e in endings):
        raise bad_record(where, lineno, "field 'endings' missing or not a list of strings")
    label = str(rec.get("label")).strip()
    if not label.isdigit():
        raise bad_record(where, lineno, f"label {rec.get('label')!r} is not an ending's index")
    meta = {"source": source, "ind": rec.get("ind"), "activity_label": activity}
    return _row(activity + ": " + ctx_a + " " + ctx_b.capitalize(), endings, int(label), index, split, where,
                lineno, meta)


def _bunzip2(path: Path, data: bytes) -> bytes:
    """The bz2 ``data`` decompressed, every stream of it, at most :data:`MAX_TEXT_BYTES`."""
    out = bytearray()
    while data:
        unpack = bz2.BZ2Decompressor()
        try:
            out += unpack.decompress(data, MAX_TEXT_BYTES + 1 - len(out))
        except (OSError, EOFError, ValueError) as e:
            raise AuditInputError(path, f"not bz2 data ({e})") from None
        if len(out) > MAX_TEXT_BYTES:
            raise AuditInputError(path, f"decompresses to over {MAX_TEXT_BYTES:,} bytes")
        if not unpack.eof:
            raise AuditInputError(path, "truncated bz2 data")
        data = unpack.unused_data
    return bytes(out)


def read_hellaswag_text(path: Path, split: str) -> BenchmarkRows:
    """llama.cpp's ``hellaswag_val_full.txt.bz2`` (or the text uncompressed) → rows (10042).

    Raises:
        AuditInputError: not bz2 data, not UTF-8, a line count not a multiple of six, a gold line not 0-3.
    """
    data = read_regular_file(path)
    if path.suffix == ".bz2":
        data = _bunzip2(path, data)
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) % 6:
        raise bad_record(path, len(lines) - len(lines) % 6 + 1,
                         f"an incomplete context: {len(lines)} lines is not six per context "
                         "(context, gold index, four endings)")
    rows: list[dict[str, Any]] = []
    for index, start in enumerate(range(0, len(lines), 6)):
        context, gold, *endings = (line.removesuffix("\r") for line in lines[start:start + 6])
        if gold.strip() not in ("0", "1", "2", "3"):
            raise bad_record(path, start + 2, f"gold index {gold[:40]!r} is not 0-3")
        if not context.strip():
            raise bad_record(path, start + 1, "empty context")
        rows.append(_row(context, endings, int(gold), index, split, path, start + 1, {"source": path.name}))
    return BenchmarkRows("hellaswag", split, str(path), rows, len(rows))


def read_hellaswag(path: str | Path, split: str = "validation") -> BenchmarkRows:
    """``hellaswag_val.jsonl`` or llama.cpp's ``hellaswag_val_full.txt.bz2`` → rows (10042).

    Raises:
        AuditInputError: a bad line or record (naming the line).
    """
    path = Path(path)
    if path.name.endswith(".jsonl"):
        return jsonl_rows("hellaswag", path, split, hellaswag_row)
    return read_hellaswag_text(path, split)


def _hub_hellaswag(hub_id: str, split: str) -> BenchmarkRows:
    return hub_rows("hellaswag", hub_id, None, split, split, hellaswag_row)


register(Benchmark("hellaswag", ("validation",),
                   lambda s: data_names("hellaswag", "hellaswag_val.jsonl", "hellaswag_val_full.txt.bz2"),
                   lambda p, s: read_hellaswag(p, s), "Rowan/hellaswag", _hub_hellaswag))
