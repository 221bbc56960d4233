"""Standard benchmark sources: local copies or the Hugging Face hub → item rows.

Each loader module here reads one standard benchmark file as published upstream and turns its
records into *item rows*: plain dicts that :func:`auditor.suite.rows.item_from_row` takes (an
``id``, the fields a prompt template names, the scorer's gold fields, and ``meta`` with at least
``source`` and ``benchmark``): :mod:`.ifeval`, :mod:`.gsm8k`, :mod:`.xstest`, :mod:`.mmlu_redux`; and, as rows
for log-likelihood multiple-choice scoring (a context, its choices, the gold index: :mod:`.choice_rows`, built as
lm-evaluation-harness's tasks build them), :mod:`.arc_easy`, :mod:`.arc_challenge`, :mod:`.piqa`,
:mod:`.winogrande`, :mod:`.boolq`, :mod:`.copa`, :mod:`.openbookqa`, :mod:`.xcopa` (split ``test.<lang>`` /
``validation.<lang>``) and :mod:`.hellaswag`. Each registers itself (:func:`~.benchmark.register`); a new
benchmark is one new module.

Where the data comes from: a local folder (``data_dir`` argument, else ``$AUDITOR_DATA_DIR``)
holding the files under their upstream names or the flat names of the project's test copies
(``gsm8k_test.jsonl``, ...); without one, the hub dataset is fetched (and cached) by the
``datasets`` library. With ``HF_HUB_OFFLINE=1`` and no local folder the loaders fail with one
clear :class:`~auditor.errors.AuditInputError` instead of trying the network.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

from ...errors import AuditInputError
from .benchmark import BENCHMARKS, Benchmark, BenchmarkRows, UnknownBenchmarkError, hub_offline

for _mod in pkgutil.iter_modules(__path__):
    if _mod.name != "base":
        importlib.import_module(f"{__name__}.{_mod.name}")
BENCHMARKS.freeze()

#: environment variable naming the local data folder (same as ``--data-dir``)
DATA_DIR_ENV = "AUDITOR_DATA_DIR"


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
        name: a key of :data:`BENCHMARKS` (``ifeval``, ``gsm8k``, ``xstest``, ``mmlu_redux``, ``arc_easy``,
            ``arc_challenge``, ``piqa``, ``winogrande``, ``boolq``, ``copa``, ``openbookqa``, ``xcopa``,
            ``hellaswag``).
        split: the benchmark's split (default: its first); for ``xstest``
            ``safe``, ``unsafe`` or ``all``; for ``xcopa`` ``test.<lang>`` or ``validation.<lang>``.
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
    if bench is None:  # "unknown benchmark 'x'; known: [...]", and the closest name
        raise UnknownBenchmarkError(BENCHMARKS.unknown(name).message)
    split = split or bench.splits[0]
    if split not in bench.splits:
        raise UnknownBenchmarkError(f"benchmark {name!r} has no split {split!r}; it has {list(bench.splits)}")
    folder = resolve_data_dir(data_dir)
    if folder is not None:
        local = local_benchmark_file(name, split, folder)
        if local is not None:
            return bench.read_local(local, split)
        raise AuditInputError(folder, f"no {name} data for split {split!r}: expected one of "
                                      f"{list(bench.local_names(split))} in this folder")
    if hub_offline():
        raise AuditInputError("--data-dir", f"benchmark {name!r} needs its data and the hub is offline "
                                            f"(HF_HUB_OFFLINE=1): pass --data-dir DIR (or set {DATA_DIR_ENV}) "
                                            f"naming a folder with {' or '.join(bench.local_names(split))}")
    return bench.read_hub(hub_id or bench.hub_id, split)


__all__ = ["BENCHMARKS", "Benchmark", "BenchmarkRows", "UnknownBenchmarkError", "DATA_DIR_ENV", "load_benchmark",
           "local_benchmark_file", "resolve_data_dir"]
