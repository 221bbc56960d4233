"""Policy files: reading one safely, following its ``extends:`` chain, merging the chain, and naming
the file and line that set a key (for one-line errors).

A policy ``extends:`` a bundled policy by name (``default``, ``release``: ``<name>.yaml`` in
:data:`BUNDLED_POLICIES`) or a file by a path relative to itself; :func:`extends_chain` reads the
chain child first, :func:`merge_policies` merges it, :func:`locate` finds which file of it sets a key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from ..errors import AuditInputError
from ..util.safe_yaml import load_yaml_text
from .schema import EXTENDS_SCHEMA

DEFAULT_POLICY = Path(__file__).resolve().parent.parent / "policies" / "default.yaml"
if not DEFAULT_POLICY.is_file():  # source checkout: policies/ lives at the repository root
    DEFAULT_POLICY = Path(__file__).resolve().parents[2] / "policies" / "default.yaml"
#: the bundled policies' folder: ``extends: <name>`` names ``<name>.yaml`` in it
BUNDLED_POLICIES = DEFAULT_POLICY.parent
#: the most policies one ``extends:`` chain may hold (the file itself included)
MAX_EXTENDS_DEPTH = 8
def _line_of(node: yaml.Node | None, path: list[Any]) -> int | None:
    """1-based line of the YAML node at ``path`` (deepest existing key)."""
    return _locate_in(node, path)[1]


def _locate_in(node: yaml.Node | None, path: list[Any]) -> tuple[int, int | None]:
    """(how many keys of ``path`` exist in ``node``, 1-based line of the deepest of them)."""
    line = node.start_mark.line + 1 if node is not None else None
    depth = 0
    for key in path:
        if isinstance(node, yaml.MappingNode):
            nxt = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if nxt is None:
                break
            line, node = nxt[0].start_mark.line + 1, nxt[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
        depth += 1
    return depth, line


def _non_finite(obj: Any, path: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """Key path of the first NaN/inf number (JSON Schema's "number" admits them)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        if (hit := _non_finite(v, (*path, k))) is not None:
            return hit
    return None


#: a policy is a few KB; PyYAML is pure Python, so a large file alone could stall the audit
MAX_POLICY_BYTES = 1 << 20


@dataclass(frozen=True)
class PolicyFile:
    """One file of an ``extends:`` chain: its path, composed YAML (for lines) and mapping."""

    path: Path
    node: yaml.Node | None
    raw: dict[str, Any]


def where(keypath: list[Any], line: int | None) -> str:
    """``a.b.c (line N)``: a key path and its line, as the one-line errors name it."""
    return f"{'.'.join(map(str, keypath)) or '(top level)'}{f' (line {line})' if line else ''}"


def _read_policy_file(p: Path) -> PolicyFile:
    """Read, parse and pre-check one policy file (size, YAML safety, a mapping, finite numbers).

    Raises:
        AuditInputError: as :func:`load_policy`, naming ``p``.
    """
    if not p.is_file():
        raise AuditInputError(p, "policy file not found")
    if p.stat().st_size > MAX_POLICY_BYTES:
        raise AuditInputError(p, f"{p.stat().st_size:,} bytes; a policy is at most {MAX_POLICY_BYTES:,} bytes")
    text = p.read_text(encoding="utf-8", errors="replace")
    node, raw = load_yaml_text(p, text, "a policy")
    if not isinstance(raw, dict):
        raise AuditInputError(p, "a policy must be a YAML mapping")
    bad = _non_finite(raw)
    if bad is not None:
        raise AuditInputError(p, f"{where(list(bad), _line_of(node, list(bad)))}: limits must be finite numbers")
    return PolicyFile(path=p, node=node, raw=raw)


def bundled_policies() -> list[str]:
    """The names ``extends:`` accepts for the policies shipped with the auditor (``default``, ``release``)."""
    return sorted(f.stem for f in BUNDLED_POLICIES.glob("*.yaml"))


def _bare_name(value: str) -> bool:
    """Whether ``value`` may name a bundled policy: no folder, no ``.yaml``/``.yml``."""
    return "/" not in value and "\\" not in value and not value.endswith((".yaml", ".yml"))


def policy_path(arg: str | Path) -> Path:
    """The file ``--policy`` names: the path as given when it is a file, else the bundled policy of that name
    (``--policy release``, as ``extends: release`` names it).

    Raises:
        AuditInputError: neither a file nor a bundled policy's name (the bundled ones listed).
    """
    p = Path(arg).expanduser()
    if p.is_file() or not _bare_name(str(arg)):
        return p
    bundled = BUNDLED_POLICIES / f"{arg}.yaml"
    if bundled.is_file():
        return bundled
    raise AuditInputError(p, f"policy file not found, and no bundled policy of that name (bundled: "
                             f"{', '.join(bundled_policies())})")


def _parent_path(child: PolicyFile) -> Path:
    """The file a policy's ``extends:`` names: a bundled policy by name (no folder, no ``.yaml``), else a
    path relative to the child's folder.

    Raises:
        AuditInputError: ``extends`` is not a non-empty string, or names no bundled policy / no file.
    """
    value = child.raw["extends"]
    at = where(["extends"], _line_of(child.node, ["extends"]))
    if not jsonschema.Draft202012Validator(EXTENDS_SCHEMA).is_valid(value) or not value.strip():
        raise AuditInputError(child.path, f"{at}: extends names one policy: a bundled name "
                                          f"({', '.join(bundled_policies())}) or a file path")
    if _bare_name(value):
        p = BUNDLED_POLICIES / f"{value}.yaml"
        if not p.is_file():
            raise AuditInputError(child.path, f"{at}: no bundled policy {value!r} (bundled: "
                                              f"{', '.join(bundled_policies())}; a file is named by its path)")
        return p
    p = Path(value).expanduser()
    p = p if p.is_absolute() else child.path.parent / p
    if not p.is_file():
        raise AuditInputError(child.path, f"{at}: the policy it extends, {value!r}, is not a file ({p})")
    return p


def extends_chain(p: Path) -> list[PolicyFile]:
    """The policy at ``p`` and the policies it extends, child first.

    Raises:
        AuditInputError: a file fault (:func:`_read_policy_file`), a parent that is missing, a cycle
            (naming every file in it) or a chain of more than :data:`MAX_EXTENDS_DEPTH` files.
    """
    chain = [_read_policy_file(p)]
    seen = {p.resolve()}
    while "extends" in chain[-1].raw:
        child = chain[-1]
        parent = _parent_path(child)
        at = where(["extends"], _line_of(child.node, ["extends"]))
        if parent.resolve() in seen:
            loop = " → ".join(str(f.path) for f in chain) + f" → {parent}"
            raise AuditInputError(child.path, f"{at}: policies extend each other in a cycle: {loop}")
        if len(chain) >= MAX_EXTENDS_DEPTH:
            raise AuditInputError(child.path, f"{at}: more than {MAX_EXTENDS_DEPTH} policies in one extends chain")
        seen.add(parent.resolve())
        chain.append(_read_policy_file(parent))
    return chain


def merge_policies(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """``child`` over ``parent``, deeply: mappings merge key by key (recursively), any other child value
    (a number, a string, a list) replaces the parent's, and a child key set to null (``~``) removes the
    parent's key (``verbosity.words: ~`` drops that rule). ``extends`` itself is not kept."""
    out = {k: v for k, v in parent.items() if k != "extends"}
    for k, v in child.items():
        if k == "extends":
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = merge_policies(out[k], v)
        else:
            out[k] = v
    return out


def locate(chain: list[PolicyFile], keypath: list[Any]) -> tuple[Path, int | None]:
    """The file of the chain that sets the deepest part of ``keypath`` (the child on a tie) and its line."""
    best = max(chain, key=lambda f: _locate_in(f.node, keypath)[0])
    return best.path, _locate_in(best.node, keypath)[1]
