"""Item rows → :class:`~auditor.records.Item`: the prompt template filled, earlier turns, meta, and
the scorer's gold data checked (the scorer's ``build_target``, handed in by the caller)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from ..records import LETTERS, Item
from .specs import CapabilitySpec, TargetFn, fill_template


def format_options(choices: list[str]) -> str:
    """Option texts → the ``options`` block of a multiple-choice prompt: ``A. text`` lines."""
    return "\n".join(f"{LETTERS[k]}. {c}" for k, c in enumerate(choices))


def check_prompt_template(manifest: Path, k: int, template: str) -> None:
    """A prompt template fills plain ``{field}`` names only: no attribute or index access
    (``{prompt.__class__}``), no conversion and no format spec (``{prompt:>999999999}`` would
    build a gigabyte string).

    Raises:
        AuditInputError: naming the capability and the offending field.
    """
    import string

    where = f"capabilities.{k}.prompt_template"
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as e:
        raise AuditInputError(manifest, f"{where}: {e} (write a literal brace as {{{{ or }}}})") from None
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise AuditInputError(manifest, f"{where}: {shown[:60]!r} is not a plain field name like {{prompt}} "
                                            "(no attributes, indexes, conversions or format specs)")


def at(lineno: int | str) -> str:
    return f"line {lineno}" if isinstance(lineno, int) else str(lineno)


def local_id(row: dict[str, Any]) -> str:
    """An item's id within its capability: the record's ``id``, else its ``key`` (IFEval)."""
    return str(row.get("id", row.get("key")))


def check_unique_ids(src: Path | str, rows: list[tuple[int | str, Any]]) -> None:
    """Every record of a capability's source has its own id (``id``, else ``key``), checked
    on the whole source before any sampling, so a repeat fails whatever the seed or limit.

    Raises:
        AuditInputError: naming the source, the repeating record and the first one.
    """
    seen: dict[str, int | str] = {}
    for pos, row in rows:
        if not isinstance(row, dict):
            continue  # reported where the row is used
        local = local_id(row)
        if local in seen:
            raise AuditInputError(src, f"{at(pos)}: item id {local!r} repeats {at(seen[local])}")
        seen[local] = pos


def item_from_row(cap: CapabilitySpec, row: Any, src: Path | str, lineno: int | str, *,
                  build_target: TargetFn | None, output_type: str = "generate_until") -> Item:
    """One item row → Item.

    Row fields used here: ``id`` (or ``key``), the fields the prompt template
    names, optional ``history`` (earlier chat turns, a list of
    ``{"role": "user"|"assistant", "content": str}`` placed before the
    templated user turn) and optional ``meta`` (an object, e.g. the context
    of a conditional-trigger item). A row with a ``choices`` list and no
    ``options`` field gets ``options`` (:func:`format_options`) for the
    template. The scorer's ``build_target`` reads the rest (None: an empty target), e.g.
    ``SCORERS[cap.scorer].build_target``.

    A ``multiple_choice`` item (``output_type``, the scorer's) is not decoded: the filled template is the
    context each choice continues, and ``build_target`` is handed the row with ``contexts`` (one per choice:
    the row's own ``contexts``, each filled in as ``{context}``, for per-choice contexts such as WinoGrande's
    partial scoring; else the filled template repeated) and the manifest's ``target_delimiter``; with the
    manifest's ``choices_as: letter`` the choices become the options' letters (the texts kept as ``labels``). Its
    ``max_new_tokens`` is 0.
    ``lineno`` is a line number or a position text (``record 12``).

    Raises:
        AuditInputError: naming the source and the line: not an object, a field the template needs
            missing, a bad ``history`` or ``meta``, or gold data the scorer refuses.
    """
    template = cap.prompt_template
    if not isinstance(row, dict):
        raise AuditInputError(src, f"{at(lineno)}: an item must be a JSON object")
    fields = dict(row)
    choices = row.get("choices")
    if "options" not in row and isinstance(choices, list) and all(isinstance(c, str) for c in choices) \
            and len(choices) <= len(LETTERS):
        fields["options"] = format_options(choices)
    own_contexts = row.get("contexts") if output_type == "multiple_choice" else None
    if isinstance(own_contexts, list) and own_contexts and "context" not in fields:
        fields["context"] = own_contexts[0]  # (each is filled in below)
    local = local_id(row)
    content = fill_template(template, fields, src, at(lineno))
    history = row.get("history", [])
    if not isinstance(history, list) or not all(
            isinstance(m, dict) and set(m) == {"role", "content"} and m["role"] in ("user", "assistant")
            and isinstance(m["content"], str) for m in history):
        raise AuditInputError(src, f"{at(lineno)}: 'history' must be a list of "
                                   "{\"role\": \"user\"|\"assistant\", \"content\": text} objects")
    meta = row.get("meta", {})
    if not isinstance(meta, dict):
        raise AuditInputError(src, f"{at(lineno)}: 'meta' must be a JSON object")
    for key in ("cluster", "context", "perturbation", "language"):
        if key in meta and (isinstance(meta[key], bool) or not isinstance(meta[key], (str, int))):
            raise AuditInputError(src, f"{at(lineno)}: meta.{key} must be a string")
    if output_type == "multiple_choice":
        own = row.get("contexts")
        choices = row.get("choices")
        if isinstance(own, list) and all(isinstance(c, str) for c in own):
            contexts = [fill_template(template, {**fields, "context": c}, src, at(lineno)) for c in own]
            content = contexts[0] if len(set(contexts)) == 1 else "\n".join(dict.fromkeys(contexts))
        else:
            contexts = [content] * (len(choices) if isinstance(choices, list) else 0)
        row = {**row, "contexts": contexts, "target_delimiter": cap.target_delimiter}
        if cap.choices_as == "letter" and isinstance(choices, list):
            row |= {"labels": choices, "choices": list(LETTERS[:len(choices)])}
    try:
        target = build_target(row) if build_target else {}
    except ValueError as e:
        raise AuditInputError(src, f"{at(lineno)}: {e}") from None
    return Item(
        id=f"{cap.name}/{local}",
        capability=cap.name,
        group=cap.group,
        messages=(*({"role": m["role"], "content": m["content"]} for m in history), {"role": "user", "content": content}),
        max_new_tokens=0 if output_type == "multiple_choice" else cap.max_new_tokens,
        target=target,
        meta=meta,
        output_type="multiple_choice" if output_type == "multiple_choice" else "generate_until",
        fewshot=cap.fewshot,
        fewshot_always=cap.fewshot_when == "always",
        until=cap.fewshot_until,
    )
