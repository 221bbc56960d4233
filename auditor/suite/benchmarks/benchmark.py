"""What every benchmark loader shares: the rows record, the registry, CSV records, field checks,
and the hub's ``datasets`` access.

A loader module of this package (one per benchmark) registers one :class:`Benchmark` with
:func:`register`; a new benchmark is one new module.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import AuditInputError
from ...util.jsonio import read_text
from ...util.registry import Registry


class UnknownBenchmarkError(AuditInputError):
    """A suite manifest names a benchmark or split that does not exist (the manifest's fault:
    :func:`auditor.suite.manifest.load_suite` names the manifest and the field)."""

    def __init__(self, fault: str) -> None:
        super().__init__("suite source", fault)


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


#: name → benchmark, filled by the loader modules of this package (:func:`register`), frozen once
#: :mod:`auditor.suite.benchmarks` has imported them all
BENCHMARKS: Registry[Benchmark] = Registry("benchmark")


def register(bench: Benchmark) -> Benchmark:
    """Add a benchmark to :data:`BENCHMARKS` (one call at the bottom of its loader module).

    Raises:
        ValueError: a benchmark of that name is registered already, or the registry is frozen.
    """
    return BENCHMARKS.register(bench.name, bench)


def csv_records(path: Path, required: tuple[str, ...]) -> Iterable[tuple[int, dict[str, str]]]:
    """(line number, row by header name) for every record of a CSV file.

    The delimiter (``,``, ``;`` or tab) is sniffed from the header line only
    (multi-line quoted fields confuse the sniffer on longer samples); quoting
    is the standard doubled-quote CSV dialect. Columns are mapped by header
    name, so their order does not matter.

    Raises:
        AuditInputError: empty file, a required column missing, a record with
            more fields than the header, or malformed quoting.
    """
    text = read_text(path)
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


def need(path: Path | str, lineno: int | str, rec: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = rec.get(key)
    if isinstance(value, bool) or not isinstance(value, kind):
        where = f"line {lineno}: " if isinstance(lineno, int) else f"{lineno}: "
        raise AuditInputError(path, f"{where}field {key!r} missing or not a {getattr(kind, '__name__', kind)}")
    return value


# --------------------------------------------------------------------------- hub
def hub_offline() -> bool:
    return any(os.environ.get(v, "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


def hub_split(hub_id: str, config: str | None, split: str | None) -> Any:
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
