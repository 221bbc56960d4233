"""Standard benchmark sources: local copies or the Hugging Face hub → item rows.

Each loader reads one standard benchmark file as published upstream and turns
its records into *item rows*: plain dicts that :func:`auditor.plan._item_from_row`
takes (an ``id``, the fields a prompt template names, the scorer's gold
fields, and ``meta`` with at least ``source`` and ``benchmark``).

Benchmarks (name → upstream file, row fields, scorer):

* ``ifeval`` — IFEval (Zhou et al., 2023, arXiv:2311.07911), ``input_data.jsonl``
  (541 prompts): ``prompt``, ``instruction_id_list``, ``kwargs``; scorer ``ifeval``.
  ``meta.instruction_group`` is the group of the first instruction
  (``detectable_format``, ``keywords``, ...), for stratified sampling.
* ``gsm8k`` — GSM8K (Cobbe et al., 2021, arXiv:2110.14168), ``test.jsonl``
  (1319 problems): ``question`` and ``answer`` = the number after ``####``
  in the reference solution (thousands separators removed); scorer ``numeric_match``.
* ``xstest`` — XSTest (Röttger et al., 2024, arXiv:2308.01263),
  ``xstest_prompts.csv`` (450 prompts): split ``safe`` (250 prompts that only
  look unsafe) or ``unsafe`` (200, the ``contrast_*`` types); ``prompt``;
  ``meta.type``; scorers ``refusal`` / ``refusal_unsafe``.
* ``mmlu_redux`` — MMLU-Redux (Gema et al., 2024, arXiv:2406.04127), a folder
  of ``mmlu_<subject>.csv`` (or the hub's per-subject configs): ``question``,
  ``choices`` (list of option texts), ``answer`` (letter); ``meta.subject``;
  scorer ``multiple_choice``. Rows whose re-annotated ``error_type`` is not
  ``ok`` (case-insensitive, after stripping) are excluded and counted.

Where the data comes from: a local folder (``data_dir`` argument, else
``$AUDITOR_DATA_DIR``) holding the files under their upstream names or the
flat names of the project's test copies (``gsm8k_test.jsonl``, ...); without
one, the hub dataset is fetched (and cached) by the ``datasets`` library.
With ``HF_HUB_OFFLINE=1`` and no local folder the loaders fail with one
clear :class:`~auditor.errors.AuditInputError` instead of trying the network.

Sampling (:func:`sample_rows`) is stratified (proportional allocation, largest
remainder) and seeded (``numpy.random.default_rng``), so a preset always
selects the same item ids from the same data; :func:`first_rows` keeps the
first rows (or clusters) of a file instead, a fixed subset that stays the same
when rows are appended.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from .errors import AuditInputError

LETTERS = "ABCDEFGHIJ"

#: environment variable naming the local data folder (same as ``--data-dir``)
DATA_DIR_ENV = "AUDITOR_DATA_DIR"


@dataclass
class BenchmarkRows:
    """Item rows read from one benchmark split.

    Attributes:
        benchmark: benchmark name (``gsm8k``, ...).
        split: the split read.
        origin: where they came from: the local file or folder, or ``hub:<id>``.
        rows: item rows in source order (excluded rows left out).
        n_records: records read, including excluded ones.
        excluded: reason → number of records left out (e.g. MMLU-Redux
            ``error_type`` labels other than ``ok``, per label as written
            lower-cased and stripped).
    """

    benchmark: str
    split: str
    origin: str
    rows: list[dict[str, Any]]
    n_records: int
    excluded: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- file readers
def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise AuditInputError(path, "not UTF-8 text") from None
    except OSError as e:
        raise AuditInputError(path, f"cannot be read ({e.strerror or e})") from None


def read_jsonl(path: Path, objects_only: bool = True) -> list[tuple[int, Any]]:
    """(line number, parsed value) for every non-blank line of a JSONL file.

    Raises:
        AuditInputError: not UTF-8, a line that is not JSON (names the line),
            or, with ``objects_only``, a line that is not a JSON object.
    """
    out: list[tuple[int, Any]] = []
    for lineno, line in enumerate(_read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise AuditInputError(path, f"line {lineno}: invalid JSON ({e.msg})") from None
        except RecursionError:
            raise AuditInputError(path, f"line {lineno}: JSON nested too deeply") from None
        except ValueError as e:  # int() refuses over sys.get_int_max_str_digits() digits
            raise AuditInputError(path, f"line {lineno}: {str(e).split(';')[0]}") from None
        if objects_only and not isinstance(rec, dict):
            raise AuditInputError(path, f"line {lineno}: a record must be a JSON object")
        out.append((lineno, rec))
    return out


def _csv_records(path: Path, required: tuple[str, ...]) -> Iterable[tuple[int, dict[str, str]]]:
    """(line number, row by header name) for every record of a CSV file.

    The delimiter (``,``, ``;`` or tab) is sniffed from the header line only
    (multi-line quoted fields confuse the sniffer on longer samples); quoting
    is the standard doubled-quote CSV dialect. Columns are mapped by header
    name, so their order does not matter.

    Raises:
        AuditInputError: empty file, a required column missing, a record with
            more fields than the header, or malformed quoting.
    """
    text = _read_text(path)
    header = text.split("\n", 1)[0]
    if not header.strip():
        raise AuditInputError(path, "empty CSV file (no header line)")
    try:
        delimiter = csv.Sniffer().sniff(header, delimiters=",;\t").delimiter
    except csv.Error:
        delimiter = ","
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, restkey="\0extra")
    try:
        fields = [f.strip() for f in (reader.fieldnames or [])]
        reader.fieldnames = fields
        missing = [c for c in required if c not in fields]
        if missing:
            raise AuditInputError(path, f"line 1: column(s) {missing} missing (header has {fields})")
        for rec in reader:
            lineno = reader.line_num
            if "\0extra" in rec:
                raise AuditInputError(path, f"line {lineno}: more fields than the header has columns")
            if any(rec.get(c) is None for c in required):
                raise AuditInputError(path, f"line {lineno}: fewer fields than the header has columns")
            yield lineno, rec
    except csv.Error as e:
        raise AuditInputError(path, f"line {reader.line_num}: malformed CSV ({e})") from None


def _need(path: Path | str, lineno: int | str, rec: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        where = f"line {lineno}: " if isinstance(lineno, int) else f"{lineno}: "
        raise AuditInputError(path, f"{where}field {key!r} missing or not a {getattr(kind, '__name__', kind)}")
    return value


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
    prompt = _need(where, lineno, rec, "prompt", str)
    ids = _need(where, lineno, rec, "instruction_id_list", list)
    kwargs = _need(where, lineno, rec, "kwargs", list)
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
    question = _need(where, lineno, rec, "question", str)
    solution = _need(where, lineno, rec, "answer", str)
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


# --------------------------------------------------------------------------- XSTest
XSTEST_SPLITS = ("safe", "unsafe", "all")


def xstest_label(rec: dict[str, Any]) -> str:
    """``safe`` / ``unsafe``: the ``label`` column, else from the type (``contrast_*`` are unsafe)."""
    label = str(rec.get("label") or "").strip().lower()
    if label in ("safe", "unsafe"):
        return label
    return "unsafe" if str(rec.get("type", "")).startswith("contrast_") else "safe"


def xstest_rows(records: Iterable[tuple[int | str, dict[str, Any]]], where: Path | str, source: str,
                split: str) -> BenchmarkRows:
    """XSTest records → rows of one split (``safe``, ``unsafe`` or ``all``).

    Item ids are ``xstest-<id>`` with the file's ``id`` column (1-based row
    number where a copy has no id column).
    """
    rows, n = [], 0
    excluded: Counter[str] = Counter()
    for k, (lineno, rec) in enumerate(records, 1):
        n += 1
        prompt = _need(where, lineno, rec, "prompt", str)
        typ = _need(where, lineno, rec, "type", str).strip()
        label = xstest_label(rec)
        if label == "unsafe" and not typ.startswith("contrast_"):
            raise AuditInputError(where, f"line {lineno}: label 'unsafe' but type {typ!r} is not a contrast_ type")
        if split != "all" and label != split:
            excluded[f"label {label}"] += 1
            continue
        rid = str(rec.get("id") or k).strip()
        rows.append({"id": f"xstest-{rid}", "prompt": prompt,
                     "meta": {"benchmark": "xstest", "source": source, "type": typ, "label": label,
                              "focus": rec.get("focus") or "", "note": rec.get("note") or ""}})
    return BenchmarkRows("xstest", split, str(where), rows, n, dict(excluded))


def read_xstest(path: str | Path, split: str = "all") -> BenchmarkRows:
    """XSTest ``xstest_prompts.csv`` → rows (250 safe + 200 unsafe in the v2 file).

    Raises:
        AuditInputError: a missing column, a malformed record, unknown split.
    """
    if split not in XSTEST_SPLITS:
        raise AuditInputError("xstest", f"unknown split {split!r}; use one of {list(XSTEST_SPLITS)}")
    path = Path(path)
    return xstest_rows(_csv_records(path, ("prompt", "type")), path, path.name, split)


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
    question = _need(where, lineno, rec, "question", str)
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
        subject = _MMLU_FILE.fullmatch(f.name)["subject"]
        for index, (lineno, rec) in enumerate(_csv_records(f, MMLU_COLUMNS)):
            n += 1
            row, err = mmlu_redux_row(rec, subject, index, f, lineno, f.name)
            if row is None:
                excluded[err] += 1
            else:
                rows.append(row)
    return BenchmarkRows("mmlu_redux", "test", str(folder), rows, n, dict(excluded))


# --------------------------------------------------------------------------- hub
def _hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def _hub_split(hub_id: str, config: str | None, split: str | None) -> Any:
    """One split of a hub dataset, fetched and cached by ``datasets``.

    ``split=None``: the dataset's ``test`` split, else its only/first one.
    """
    import datasets  # lazy: heavy, and only needed without a data dir

    try:
        ds = datasets.load_dataset(hub_id, config, split=split)
    except Exception as e:  # network, auth, missing config/split: all the user's to fix
        what = f"split {split!r}" if split else "the dataset"
        raise AuditInputError(f"hub:{hub_id}", f"could not load {what}{f' of config {config!r}' if config else ''} "
                                               f"({type(e).__name__}: {e}); pass --data-dir DIR with a local copy") from None
    if split is None:
        ds = ds["test"] if "test" in ds else ds[next(iter(ds))]
    return ds


def _hub_ifeval(hub_id: str, split: str) -> BenchmarkRows:
    ds = _hub_split(hub_id, None, "train")
    rows = [ifeval_row(dict(r), f"hub:{hub_id}", f"record {i}", hub_id) for i, r in enumerate(ds)]
    return BenchmarkRows("ifeval", split, f"hub:{hub_id}", rows, len(rows))


def _hub_gsm8k(hub_id: str, split: str) -> BenchmarkRows:
    ds = _hub_split(hub_id, "main", split)
    rows = [gsm8k_row(dict(r), i, f"hub:{hub_id}", f"record {i}", hub_id, split) for i, r in enumerate(ds)]
    return BenchmarkRows("gsm8k", split, f"hub:{hub_id}", rows, len(rows))


def _hub_xstest(hub_id: str, split: str) -> BenchmarkRows:
    part = _hub_split(hub_id, None, None)
    return xstest_rows(((f"record {i}", dict(r)) for i, r in enumerate(part)), f"hub:{hub_id}", hub_id, split)


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
        for index, rec in enumerate(_hub_split(hub_id, subject, split)):
            n += 1
            row, err = mmlu_redux_row(dict(rec), subject, index, f"hub:{hub_id}/{subject}", f"record {index}", hub_id)
            if row is None:
                excluded[err] += 1
            else:
                rows.append(row)
    return BenchmarkRows("mmlu_redux", split, f"hub:{hub_id}", rows, n, dict(excluded))


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Benchmark:
    """A standard benchmark the suites can draw items from.

    Attributes:
        name: name used in suite manifests (``source: {benchmark: <name>}``).
        splits: accepted splits; the first is the default.
        local_names: per split, file (or folder) names searched in the data
            dir, flat test-copy names first, then the upstream names.
        read_local: reads the local file or folder of a split.
        hub_id: default hub dataset; ``read_hub(hub_id, split)`` fetches it.
    """

    name: str
    splits: tuple[str, ...]
    local_names: Callable[[str], tuple[str, ...]]
    read_local: Callable[[Path, str], BenchmarkRows]
    hub_id: str
    read_hub: Callable[[str, str], BenchmarkRows]


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("ifeval", ("train",), lambda s: ("ifeval_input_data.jsonl", "input_data.jsonl"),
              lambda p, s: read_ifeval(p), "google/IFEval", _hub_ifeval),
    Benchmark("gsm8k", ("test", "train"), lambda s: (f"gsm8k_{s}.jsonl", f"{s}.jsonl"),
              lambda p, s: read_gsm8k(p, s), "openai/gsm8k", _hub_gsm8k),
    Benchmark("xstest", XSTEST_SPLITS, lambda s: ("xstest_prompts.csv", "xstest_v2_prompts.csv"),
              lambda p, s: read_xstest(p, s), "walledai/XSTest", _hub_xstest),
    Benchmark("mmlu_redux", ("test",), lambda s: ("mmlu_redux", "mmlu-redux"),
              lambda p, s: read_mmlu_redux(p), "edinburgh-dawg/mmlu-redux-2.0", _hub_mmlu_redux),
)}


def resolve_data_dir(data_dir: str | Path | None) -> Path | None:
    """The local data folder: ``data_dir``, else ``$AUDITOR_DATA_DIR``, else None.

    Raises:
        AuditInputError: the folder named does not exist.
    """
    if data_dir is None or str(data_dir) == "":
        data_dir = os.environ.get(DATA_DIR_ENV) or None
    if data_dir is None:
        return None
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise AuditInputError("--data-dir", f"{path} is not a folder")
    return path


def local_benchmark_file(name: str, split: str, folder: Path) -> Path | None:
    """The file (or folder) of a benchmark split in a local data folder, or None:
    the flat test-copy name first, then the upstream name (:attr:`Benchmark.local_names`)."""
    for candidate in BENCHMARKS[name].local_names(split):
        if (folder / candidate).exists():
            return folder / candidate
    return None


def load_benchmark(name: str, split: str | None = None, data_dir: str | Path | None = None,
                   hub_id: str | None = None) -> BenchmarkRows:
    """Read one split of a standard benchmark as item rows.

    Args:
        name: a key of :data:`BENCHMARKS` (``ifeval``, ``gsm8k``, ``xstest``, ``mmlu_redux``).
        split: the benchmark's split (default: its first); for ``xstest``
            ``safe``, ``unsafe`` or ``all``.
        data_dir: local folder with the benchmark files (default
            ``$AUDITOR_DATA_DIR``). When set, the hub is never used.
        hub_id: hub dataset to fetch when there is no data dir (default: the
            benchmark's own, e.g. ``openai/gsm8k``).

    Raises:
        AuditInputError: unknown benchmark or split; the data dir lacks the
            file; a malformed file; no data dir while the hub is offline
            (``HF_HUB_OFFLINE=1``) or unreachable.
    """
    bench = BENCHMARKS.get(name)
    if bench is None:
        raise AuditInputError("suite source", f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    split = split or bench.splits[0]
    if split not in bench.splits:
        raise AuditInputError("suite source", f"benchmark {name!r} has no split {split!r}; it has {list(bench.splits)}")
    folder = resolve_data_dir(data_dir)
    if folder is not None:
        local = local_benchmark_file(name, split, folder)
        if local is not None:
            return bench.read_local(local, split)
        raise AuditInputError(folder, f"no {name} data for split {split!r}: expected one of "
                                      f"{list(bench.local_names(split))} in this folder")
    if _hub_offline():
        raise AuditInputError("--data-dir", f"benchmark {name!r} needs its data and the hub is offline "
                                            f"(HF_HUB_OFFLINE=1): pass --data-dir DIR (or set {DATA_DIR_ENV}) "
                                            f"naming a folder with {' or '.join(bench.local_names(split))}")
    return bench.read_hub(hub_id or bench.hub_id, split)


# --------------------------------------------------------------------------- sampling
def row_field(row: dict[str, Any], key: str) -> Any:
    """``row["meta"][key]`` if present, else ``row[key]``, else None."""
    meta = row.get("meta")
    if isinstance(meta, dict) and key in meta:
        return meta[key]
    return row.get(key)


def allocate(sizes: list[int], n: int) -> list[int]:
    """Proportional allocation of ``n`` draws over strata of ``sizes`` (largest remainder).

    Each stratum gets ``floor(n·size/total)``; the draws left go to the
    largest fractional parts (ties: earlier stratum first). Never more than a
    stratum holds; ``sum(result) == min(n, total)``.
    """
    total = sum(sizes)
    n = min(n, total)
    exact = [n * s / total for s in sizes]
    quota = [int(np.floor(x)) for x in exact]
    order = sorted(range(len(sizes)), key=lambda k: (-(exact[k] - quota[k]), k))
    left = n - sum(quota)
    for k in order:
        if left == 0:
            break
        if quota[k] < sizes[k]:
            quota[k] += 1
            left -= 1
    return quota


def _units(rows: list[dict[str, Any]], unit: str) -> list[list[int]]:
    """Row indices grouped into sampling units, in order of first appearance.

    Raises:
        ValueError: unknown ``unit``, or ``unit == "cluster"`` and a row lacks ``meta.cluster``.
    """
    if unit not in ("item", "cluster"):
        raise ValueError(f"unknown sampling unit {unit!r}; use 'item' or 'cluster'")
    units: dict[Any, list[int]] = {}
    for k, row in enumerate(rows):
        key = k
        if unit == "cluster":
            key = row_field(row, "cluster")
            if key is None:
                raise ValueError(f"row {row.get('id', k)!r} has no meta.cluster to sample by cluster")
        units.setdefault(key, []).append(k)
    return list(units.values())


def first_rows(rows: list[dict[str, Any]], n: int, unit: str = "item") -> list[dict[str, Any]]:
    """The first ``n`` sampling units of ``rows``, in source order (no randomness).

    For a preset that must keep a fixed subset while its item file grows by
    appended rows (smoke keeps the rows it had; fast takes them all). With
    ``unit == "cluster"`` the first ``n`` distinct ``meta.cluster`` values are
    kept with all their rows.

    Raises:
        ValueError: as :func:`sample_rows` for ``unit``.
    """
    keep = sorted(k for g in _units(rows, unit)[:n] for k in g)
    return [rows[k] for k in keep]


def sample_rows(rows: list[dict[str, Any]], n: int | None, stratify: str | None = None, seed: int = 0,
                unit: str = "item") -> list[dict[str, Any]]:
    """Seeded, stratified sample of item rows, in source order.

    Args:
        rows: item rows.
        n: how many sampling units to keep; None (or ``n`` ≥ the number of
            units) keeps every row.
        stratify: a row field (looked up in ``meta`` first) whose values are
            the strata; draws are allocated to strata in proportion to their
            size (:func:`allocate`), strata in sorted order of their value.
        seed: seed of ``numpy.random.default_rng``; the same rows, ``n``,
            ``stratify`` and seed always give the same sample.
        unit: ``item`` (each row is a unit) or ``cluster`` (all rows sharing
            ``meta.cluster`` are kept or dropped together, e.g. a question and
            its perturbations; the stratum is that of the cluster's first row).

    Raises:
        ValueError: a row lacks the stratify field or its cluster.
    """
    groups = _units(rows, unit)
    if n is None or n >= len(groups):
        return list(rows)
    strata: dict[str, list[int]] = {}
    for u, members in enumerate(groups):
        first = rows[members[0]]
        if stratify is None:
            value = ""
        else:
            value = row_field(first, stratify)
            if value is None:
                raise ValueError(f"row {first.get('id', members[0])!r} has no field {stratify!r} to stratify by")
        strata.setdefault(str(value), []).append(u)
    keys = sorted(strata)
    quotas = allocate([len(strata[k]) for k in keys], n)
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for key, q in zip(keys, quotas):
        members = strata[key]
        picks = rng.choice(len(members), size=q, replace=False) if q else []
        chosen.extend(members[int(p)] for p in picks)
    keep = sorted(k for u in chosen for k in groups[u])
    return [rows[k] for k in keep]
