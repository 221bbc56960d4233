"""The adapter's model card (README.md): its YAML front matter's ``nominal_label``."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from ..errors import AuditInputError
from ..util.safe_yaml import check_yaml_tokens

#: how much of README.md is read for its front matter
MAX_FRONT_MATTER_BYTES = 64 * 1024


def model_card_label(folder: Path) -> tuple[str | None, str | None]:
    """(``nominal_label``, problem) from the adapter's README.md front matter.

    ``problem`` is None when the card is absent, has no front matter, or has
    a readable one; otherwise one line saying why no label could be taken
    (broken YAML, an alias or token the safe reader refuses, a
    ``nominal_label`` that is not a string). The audit goes on without a
    label and shows the problem as an adapter warning. Aliases, deep nesting and
    broken YAML are never errors: the card is documentation.
    """
    card = folder / "README.md"
    if not card.is_file():
        return None, None
    with open(card, "rb") as f:  # front matter sits at the top; a card may be any size
        text = f.read(MAX_FRONT_MATTER_BYTES).decode("utf-8", errors="replace")
    if not re.match(r"^---\s*\n", text):
        return None, None
    m = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.S)
    why = "model card README.md: front matter ignored, no nominal label taken from it: "
    if not m:
        return None, why + f"no closing '---' within its first {MAX_FRONT_MATTER_BYTES} bytes"
    try:
        check_yaml_tokens(card, m.group(1), "a model card")
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return None, why + f"not valid YAML{where} ({getattr(e, 'problem', None) or type(e).__name__})"
    except AuditInputError as e:
        return None, why + e.fault
    except RecursionError:
        return None, why + "nested too deeply"
    except ValueError as e:  # int() refuses over sys.get_int_max_str_digits() digits
        return None, why + str(e).split(";")[0]
    if not isinstance(meta, dict) or "nominal_label" not in meta:
        return None, None
    label = meta["nominal_label"]
    if not isinstance(label, str):
        return None, why + f"nominal_label is {type(label).__name__}, not a string"
    return label.strip() or None, None
