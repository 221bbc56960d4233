"""YAML from files we did not write (policies, suite manifests, model cards).

PyYAML's ``safe_load`` executes nothing, but two things still hurt: aliases
("billion laughs" documents that expand to gigabytes once walked) and deeply
nested flow collections, on which the pure-Python scanner is quadratic (4,000
``[`` take about 20 seconds). :func:`check_yaml_tokens` makes one lazy pass
over the tokens and stops at the first of them, before anything is built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import AuditInputError

#: deepest bracket nesting accepted (policies and manifests need 2 or 3)
MAX_FLOW_DEPTH = 32


def check_yaml_tokens(path: str | Path, text: str, what: str) -> None:
    """Refuse aliases and flow nesting deeper than :data:`MAX_FLOW_DEPTH` in ``text``.

    Args:
        path: the file, named in the error.
        text: its content.
        what: what the file is, for the message ("a policy", "a suite manifest").

    Raises:
        AuditInputError: an alias (``*name``) or too deep nesting, with its line.
        yaml.YAMLError: the text is not YAML (the caller reports it).
    """
    depth = 0
    for tok in yaml.scan(text, Loader=yaml.SafeLoader):
        if isinstance(tok, yaml.AliasToken):
            raise AuditInputError(path, f"line {tok.start_mark.line + 1}: YAML aliases (*name) are not allowed in {what}")
        if isinstance(tok, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)):
            depth += 1
            if depth > MAX_FLOW_DEPTH:
                raise AuditInputError(path, f"line {tok.start_mark.line + 1}: YAML nested too deeply "
                                            f"(more than {MAX_FLOW_DEPTH} brackets)")
        elif isinstance(tok, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)):
            depth -= 1


def duplicate_key(node: yaml.Node | None) -> tuple[str, int] | None:
    """(key, line) of the first key that appears twice in one mapping of a composed
    document (``yaml.compose``), or None; ``yaml.safe_load`` keeps the last silently."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: set[str] = set()
            for k, v in n.value:
                if k.value in seen:
                    return str(k.value), k.start_mark.line + 1
                seen.add(k.value)
                stack.append(v)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return None


def load_yaml_text(path: str | Path, text: str, what: str) -> tuple[yaml.Node | None, Any]:
    """Parse untrusted YAML once: (composed node, for line numbers; the plain data).

    :func:`check_yaml_tokens` first, then PyYAML's safe loader; a key given twice
    in one mapping is refused (``yaml.safe_load`` would keep the last silently).

    Args:
        path: the file, named in the error.
        text: its content.
        what: what the file is, for the message ("a policy", "a suite manifest").

    Raises:
        AuditInputError: an alias, too deep nesting, invalid YAML (with its line),
            a duplicate key (with its line), or a number of more digits than
            ``int()`` reads (``sys.get_int_max_str_digits()``).
    """
    try:
        check_yaml_tokens(path, text, what)
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except RecursionError:
        raise AuditInputError(path, "YAML nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise AuditInputError(path, f"invalid YAML{f' at line {mark.line + 1}' if mark else ''}") from None
    except ValueError as e:  # int() refuses over sys.get_int_max_str_digits() digits
        raise AuditInputError(path, f"a value YAML cannot read: {str(e).split(';')[0]}") from None
    dup = duplicate_key(node)
    if dup:
        raise AuditInputError(path, f"line {dup[1]}: duplicate key {dup[0]!r}")
    return node, data
