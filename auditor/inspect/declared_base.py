"""The base an adapter declares (``base_model_name_or_path``) against the audited one, once the
tensor shapes fit: the same model, none declared, a folder on the training machine, an audited
base whose identity is unknown, or another model (only that one is a base mismatch)."""

from __future__ import annotations

import re

from ..records import AdapterConfig


def _is_local_path(declared: str) -> bool:
    """``base_model_name_or_path`` names a folder (on the machine the adapter was trained on), not a hub id."""
    return declared.startswith(("/", "~", "./", "../", "\\")) or "\\" in declared \
        or re.match(r"^[A-Za-z]:[\\/]", declared) is not None


def _same_model(declared: str, base_name: str) -> bool:
    """The declared base names the audited one (a local folder, declared or audited, counts by its
    folder name: ``/models/SmolLM2-135M-Instruct`` is ``HuggingFaceTB/SmolLM2-135M-Instruct``)."""
    d, b = declared.rstrip("/\\").lower(), base_name.rstrip("/\\").lower()
    if _is_local_path(declared) or _is_local_path(base_name):
        return re.split(r"[/\\]", d)[-1] == re.split(r"[/\\]", b)[-1]
    return d == b


def declared_base_status(declared: str, base_name: str) -> tuple[str, list[str]]:
    """``(status, warnings)`` for ``base_model_name_or_path`` once the tensor shapes fit the base.

    ``status`` is one of :data:`auditor.records.DECLARED_BASE_STATUSES`: ``none`` (nothing declared),
    ``local_folder`` (a folder on the machine it was trained on, whose name matches), ``match``,
    ``unknown`` (the audited base folder records no name) or ``mismatch`` (another model, the only
    base mismatch: the policy's ``on_base_mismatch`` acts on it). Every status but ``match`` comes
    with one warning for the report.
    """
    if not declared:
        return "none", [f"adapter_config.json declares no base_model_name_or_path; audited on {base_name!r} "
                        "(tensor shapes are compatible)"]
    local = " (a local folder on the machine it was trained on)" if _is_local_path(declared) else ""
    if _same_model(declared, base_name):
        if local and declared.rstrip("/").lower() != base_name.rstrip("/").lower():
            return "local_folder", [
                f"adapter_config.json's base_model_name_or_path {declared!r} is a local folder on the machine "
                f"it was trained on; its name matches the audited base {base_name!r} (tensor shapes are "
                "compatible)"]
        return "match", []
    if _is_local_path(base_name):
        # a base folder whose config.json records no _name_or_path: its identity is unknown, not different
        return "unknown", [
            f"the audited base folder {base_name!r} records no model name (config.json has no _name_or_path), "
            f"so the adapter's base_model_name_or_path {declared!r} cannot be checked against it "
            "(tensor shapes are compatible)"]
    return "mismatch", [f"adapter declares base {declared!r}{local} but is audited on {base_name!r} "
                        "(tensor shapes are compatible)"]


def declared_hint(cfg: AdapterConfig, base_name: str) -> str:
    """For an error about a base that does not fit: the base the adapter declares, if another."""
    declared = cfg.base_model_name_or_path
    if not declared or _same_model(declared, base_name):
        return ""
    return f"; the adapter declares base {declared!r}: audit it on that base (--base)"
