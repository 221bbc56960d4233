"""The package layout (issue 17): no import cycle between auditor's modules, deferred imports
included (every ``import`` / ``from ... import`` anywhere in a module counts), and no module over
400 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from conftest import ROOT

PKG = ROOT / "auditor"


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
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
        elif isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        else:
            continue
        # a module importing its own parent package is Python's package semantics, not a cycle
        found |= {c for c in candidates if c in known and c != name and not name.startswith(c + ".")}
    return found


def test_no_import_cycle_between_modules_deferred_imports_included():
    mods = _modules()
    graph = nx.DiGraph()
    for name, path in mods.items():
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in _imports(name, path, set(mods)))
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert len(mods) > 50 and cycles == []


def test_no_module_over_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py") if (n := p.read_text(encoding="utf-8").count("\n")) > 400}
    assert long == {}
