"""The product uses other libraries through their public interfaces only: no module of ``auditor`` reads or
writes another object's private attribute (a name with one leading underscore), by attribute syntax or by
name through ``getattr`` / ``hasattr`` / ``setattr`` / ``delattr``; its own objects' through ``self`` and
``cls`` only. Such an access is how a library's internals get driven, and the next release moves them."""

from __future__ import annotations

import ast

from conftest import ROOT

PKG = ROOT / "auditor"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _accesses(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append((node.lineno, ast.unparse(node)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr", "setattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and _private(node.args[1].value)):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_touches_another_objects_private_attributes():
    offenders = [f"{p.relative_to(ROOT)}:{line}: {text}" for p in sorted(PKG.rglob("*.py"))
                 for line, text in _accesses(ast.parse(p.read_text(encoding="utf-8")))]
    assert not offenders, "\n".join(offenders)


def test_the_check_finds_each_kind_of_access():
    code = "x._cache\ngetattr(m, '_impl', None)\nself._own\ncls._own\nx.__class__\nobj.public\n"
    assert [t for _, t in _accesses(ast.parse(code))] == ["x._cache", "getattr(m, '_impl', None)"]
