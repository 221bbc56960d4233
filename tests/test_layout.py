"""The package layout: no import cycle between auditor's modules, deferred imports included (every
``import`` / ``from ... import`` anywhere in a module counts), the stages import only earlier stages
(:func:`test_stages_import_only_earlier_stages_and_the_foundation`), the package docstring walks one adapter
through the packages in that order, no two packages hold modules of the same name, and the version is
written once. A file holds one concern whatever its length: a long one is named in a warning, never split
by a test."""

from __future__ import annotations

import ast
import collections
import re
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import networkx as nx
from conftest import ROOT

PKG = ROOT / "auditor"

#: the stages in data-flow order, as auditor/__init__.py's docstring gives them
STAGES = ("inspect", "suite", "backends", "scorers", "analysis", "policy", "reports")
#: one adapter's walk from ``audit ADAPTER`` to its verdict, as auditor/__init__.py's docstring gives it: the
#: command line, what runs an audit, then the stages in order
WALK = ("cli", "pipeline", *STAGES)
#: a module this long is named in a warning (read it: does it hold one concern?); no test splits it
LONG_MODULE_LINES = 400
#: what every module may import and what imports no stage: the errors, the leaf utilities, the records between
#: the stages, the whole audit's record, and the settings of an audit (AuditOptions: a record the top hands to
#: the backends, which import it, under TYPE_CHECKING, for their hooks' signatures), and the answer cache (which the
#: pre-screen of inspection and the backends both read and write)
FOUNDATION = ("errors", "util", "records", "results", "options", "cache")
#: above the stages, may import anything: the package root (its lazy API), what runs an audit (the stage order,
#: the rounds, the results' assembly), the Python API, the command line, the GitHub Action's steps, the trainer callback
TOP = ("auditor", "pipeline", "api", "cli", "ci", "callback")


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _imports(name: str, path: Path, known: set[str], parent_names: bool = False) -> set[str]:
    """The modules of ``known`` that module ``name`` imports, anywhere in it (functions and ``if TYPE_CHECKING:``
    blocks included). Its own parent packages are left out (Python imports them for any submodule), unless
    ``parent_names`` and it imports a name a parent's ``__init__`` defines (``from . import __version__``)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                target = ".".join(parts[:len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            candidates = [target, *(f"{target}.{a.name}" for a in node.names)]
            if parent_names and name.startswith(target + ".") and any(f"{target}.{a.name}" not in known
                                                                      for a in node.names):
                found.add(target)
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        # a module importing its own parent package is Python's package semantics, not a cycle
        found |= {c for c in candidates if c in known and c != name and not name.startswith(c + ".")}
    return found


def _layer(module: str) -> tuple[str, int | None]:
    """("foundation" | "stage" | "top", the stage's position) of one of auditor's modules."""
    part = module.split(".")[1] if "." in module else module
    if part in STAGES:
        return "stage", STAGES.index(part)
    if part in FOUNDATION:
        return "foundation", None
    assert part in TOP, f"{module}: place it in STAGES, FOUNDATION or TOP"
    return "top", None


def _layer_faults(mods: dict[str, Path]) -> list[str]:
    """Every import that breaks the layering (see the test below), as ``module -> target: why``."""
    faults = []
    for name, path in sorted(mods.items()):
        layer, rank = _layer(name)
        for target in sorted(_imports(name, path, set(mods), parent_names=True)):
            t_layer, t_rank = _layer(target)
            top = name.split(".")[1] if "." in name else name
            t_top = target.split(".")[1] if "." in target else target
            if top == "util" and t_top not in ("util", "errors"):
                faults.append(f"{name} -> {target}: auditor.util imports only util and errors")
            elif top == "errors":
                faults.append(f"{name} -> {target}: auditor.errors imports nothing of the auditor's")
            elif layer == "foundation" and t_layer != "foundation":
                faults.append(f"{name} -> {target}: the foundation imports no stage and not the top")
            elif layer == "stage" and t_layer == "top":
                faults.append(f"{name} -> {target}: a stage does not import the top")
            elif layer == "stage" and t_layer == "stage" and t_rank > rank:
                faults.append(f"{name} -> {target}: stage {STAGES[rank]} imports the later stage {STAGES[t_rank]}")
    return faults


def test_no_import_cycle_between_modules_deferred_imports_included():
    mods = _modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in _imports(name, path, set(mods)))
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert len(mods) > 50 and cycles == []


def test_long_modules_are_named_not_split():
    """One concern per file: a module over :data:`LONG_MODULE_LINES` lines is named in a warning, and the test
    passes whatever the lengths (a file is split where it holds two concerns, not at a line count)."""
    lengths = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8").count("\n") for p in PKG.rglob("*.py")}
    for path, n in sorted(lengths.items()):
        if n > LONG_MODULE_LINES:
            warnings.warn(f"{path}: {n} lines; does it hold one concern?", stacklevel=1)
    assert lengths


def test_no_two_packages_hold_modules_of_the_same_name():
    """A module's name says what it holds wherever it is: no two of auditor's packages have a module of the same
    name (``__init__`` and ``__main__`` aside), except the standard benchmarks' loaders, named after the benchmark
    as the scorer of the same benchmark is (``suite/benchmarks/ifeval.py`` loads IFEval, ``scorers/ifeval.py``
    scores it)."""
    where = collections.defaultdict(list)
    for p in PKG.rglob("*.py"):
        if p.stem not in ("__init__", "__main__"):
            where[p.stem].append(str(p.parent.relative_to(PKG)))
    assert {name: sorted(dirs) for name, dirs in where.items() if len(dirs) > 1} == {
        "ifeval": ["scorers", "suite/benchmarks"]}


def test_the_docstring_walks_one_adapter_through_the_packages_in_stage_order():
    """auditor/__init__.py's docstring walks one adapter from ``audit ADAPTER`` to its verdict: the packages it
    names between its arrows are the command line, what runs an audit, then the stages in the order the layering
    checks (:data:`WALK`)."""
    doc = ast.get_docstring(ast.parse((PKG / "__init__.py").read_text(encoding="utf-8")))
    pieces = doc.split("→")
    named = [re.findall(r":mod:`auditor\.(\w+)`", p) for p in pieces]
    assert (named[0][-1], *(n[0] for n in named[1:])) == WALK


def test_stages_import_only_earlier_stages_and_the_foundation():
    """The layering of auditor's modules, deferred imports included: a module of a stage (:data:`STAGES`, in
    data-flow order) imports the foundation and its own or earlier stages only, never a later stage nor the
    top; the foundation (:data:`FOUNDATION`) imports only the foundation (auditor.util only util and errors,
    auditor.errors nothing of ours); the top (:data:`TOP`) imports anything. Imports under
    ``if TYPE_CHECKING:`` count too (a dependency on another module's types): none needs an exemption, since
    the backends' AuditOptions is in the foundation. A name imported from a parent package's ``__init__``
    (``from . import __version__``) counts as importing that package. A later stage reaches an earlier one's
    work by being handed it: the suite gets the scorer catalogue as an argument (``load_suite(...,
    scorers=SCORERS)``) from the pipeline."""
    mods = _modules()
    assert {_layer(m)[0] for m in mods} == {"foundation", "stage", "top"}
    assert _layer_faults(mods) == []


def test_the_layering_check_catches_a_stage_importing_a_later_one(tmp_path):
    """The check above fails for a stage importing a later one (the suite reaching into the scorers)."""
    bad = tmp_path / "items.py"
    bad.write_text("def f():\n    from ..scorers import SCORERS\n", encoding="utf-8")
    mods = {**_modules(), "auditor.suite.rows": bad}
    fault = "auditor.suite.rows -> auditor.scorers: stage suite imports the later stage scorers"
    assert _layer_faults(mods) == [fault]
    (tmp_path / "version.py").write_text("from .. import __version__\n", encoding="utf-8")
    mods = {**_modules(), "auditor.util.files": tmp_path / "version.py"}
    assert _layer_faults(mods) == ["auditor.util.files -> auditor: auditor.util imports only util and errors"]


def test_the_version_is_written_once_in_a_leaf():
    """auditor/util/version.py holds the version and imports nothing; pyproject reads it; importing the
    package loads nothing else (the GitHub Action imports it before installing anything)."""
    leaf = ast.parse((PKG / "util" / "version.py").read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(leaf) if isinstance(n, (ast.Import, ast.ImportFrom))]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "auditor/util/version.py"
    code = "import sys, auditor; print(auditor.__version__, sorted(m for m in sys.modules if m.startswith('auditor')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    from auditor.util.version import __version__

    assert out.split(" ", 1) == [__version__, "['auditor', 'auditor.util', 'auditor.util.version']\n"]
