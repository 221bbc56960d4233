"""The base an adapter declares (``base_model_name_or_path``): which base to audit on when no
``--base`` is given (:func:`choose_base`), and, once the tensor shapes fit, how it compares with the
audited one: the same model, none declared, a folder on the training machine, an audited base whose
identity is unknown, or another model (only that one is a base mismatch)."""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from ..errors import AuditInputError
from ..records import AdapterConfig, AdapterTensor, BaseModel
from . import hub
from .base_model import EMBEDDED, resolve_base
from .base_shapes import base_linear_shapes, embedded_linear_shapes
from .tensors import classify_tensors, lora_fits

#: the ``--base`` word that audits on the declared base, fetching a declared hub id from the hub
DECLARED = "declared"


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


def declared_base_status(declared: str, base_name: str, base_path: Path | None = None) -> tuple[str, list[str]]:
    """``(status, warnings)`` for ``base_model_name_or_path`` once the tensor shapes fit the base.

    ``status`` is one of :data:`auditor.records.DECLARED_BASE_STATUSES`: ``none`` (nothing declared),
    ``local_folder`` (a folder on the machine it was trained on, whose name matches), ``match``,
    ``unknown`` (the audited base folder records no name) or ``mismatch`` (another model, the only
    base mismatch: the policy's ``on_base_mismatch`` acts on it). Every status but ``match`` comes
    with one warning for the report. A declared folder that is the audited ``base_path`` (the base
    chosen from it) is a ``match`` whatever name its config.json records.
    """
    if declared and base_path is not None and _local_folder(declared) == base_path.resolve():
        return "match", []
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
    how = "--base DIR" if _is_local_path(declared) else "--base declared fetches it from the hub, or --base DIR"
    return f"; the adapter declares base {declared!r}: audit it on that base ({how})"


def embedded_fit_hint(weights: Path, tensors: list[AdapterTensor], base_path: Path, base_name: str, shown: str) -> str:
    """For an error about an adapter refused on the audited base: when its LoRA tensors (the safetensors header's
    shapes) do not fit that base but fit another embedded base (its recorded architecture: nothing installed,
    converted or loaded), the command that audits ``shown`` (the adapter as the user gave it) on that one; else "".
    """
    try:
        lora = classify_tensors(weights, tensors)[0]
        if lora_fits(lora, base_linear_shapes(base_path)):
            return ""
        for spec in EMBEDDED.values():
            if spec.name != base_name and lora_fits(lora, embedded_linear_shapes(spec.key)):
                return f"; it fits the embedded base {spec.key}: audit {shlex.quote(shown)} --base {spec.key}"
    except AuditInputError:  # tensors no base can take: the error says what is wrong with them
        pass
    return ""


def _local_folder(declared: str) -> Path | None:
    """The folder ``base_model_name_or_path`` names on this machine, if it is one here (resolved)."""
    try:
        path = Path(declared).expanduser()
        return path.resolve() if path.is_dir() else None
    except (OSError, RuntimeError, ValueError):  # a name the file system cannot hold
        return None


@dataclasses.dataclass(frozen=True)
class _Choice:
    """One adapter's declared base as a ``--base`` value: ``base`` (an embedded word, a local folder, a
    hub id; None: it declares none), ``kind`` (``embedded``, ``local``, ``hub``, or ``fallback``: the
    declared base cannot be had and ``base`` is the embedded default) and ``how`` (said in the reason)."""

    base: str | None
    kind: str = ""
    how: str = ""

    def key(self) -> str:
        """What two adapters must share to be audited on one base (hub ids are case-insensitive)."""
        return str(self.base).lower() if self.kind == "hub" else str(self.base)


def _choice(config: Path, declared: str, hub_allowed: bool) -> _Choice:
    """What ``base_model_name_or_path`` (read from ``config``) names, in this order: a folder that exists
    here, an embedded base of that name (a folder on the training machine counts by its name), a hub id
    (``hub_allowed``: ``--base declared``), else nothing that can be had.

    Raises:
        AuditInputError: ``hub_allowed`` and the declared base cannot be had (naming ``config``).
    """
    if not declared:
        return _Choice(None)
    if (folder := _local_folder(declared)) is not None:
        return _Choice(str(folder), "local", "a local folder")
    for spec in EMBEDDED.values():
        if _same_model(declared, spec.name):
            return _Choice(spec.key, "embedded", f"the embedded {spec.key}")
    if hub_allowed and hub.looks_like_hub_id(declared):
        from huggingface_hub.constants import is_offline_mode

        return _Choice(declared, "hub", "from the local hub cache (HF_HUB_OFFLINE=1)" if is_offline_mode()
                       else "from the hub")
    local = _is_local_path(declared)
    if hub_allowed:
        where = "a folder on the machine it was trained on, not here" if local else "not a hub id"
        raise AuditInputError(config, f"--base {DECLARED}: base_model_name_or_path {declared!r} cannot be had "
                                      f"({where}, and not an embedded base); pass --base DIR or a hub id")
    how = ("a folder on the machine it was trained on, not here (--base DIR names a copy)" if local else
           f"not an embedded base nor a folder here, and the hub is asked only with --base {DECLARED}"
           if hub.looks_like_hub_id(declared) else "neither an embedded base, a folder here nor a hub id")
    return _Choice(next(iter(EMBEDDED)), "fallback", how)


def choose_base(base: str | None, declared: Sequence[tuple[Path, str]]) -> tuple[BaseModel, dict[Path, str]]:
    """The base of a run, with its ``reason``, and a warning per adapter whose declared base cannot be had
    (keyed by its ``adapter_config.json``).

    ``--base X`` is audited as given (:func:`~auditor.inspect.base_model.resolve_base`). Without it, the
    base the adapters declare when it can be had without the hub (a local folder that exists, an embedded
    base it names), else the embedded default, with a warning (an adapter of another architecture is
    then refused on its tensor shapes, by a one-line error that names the fix). ``--base declared`` also
    fetches a declared hub id (with ``HF_HUB_OFFLINE=1`` only from the local hub cache) and refuses a
    declared base it cannot have. Adapters that declare no base go with the others; when none declares
    one, the embedded default.

    Args:
        base: ``--base`` (None when not given).
        declared: each adapter's ``adapter_config.json`` and its ``base_model_name_or_path`` ("" for none).

    Raises:
        AuditInputError: the adapters declare different bases (one run has one base: pass ``--base``);
            ``--base declared`` and a declared base it cannot have; a declared embedded base that is not
            installed (naming the install command), a declared local folder that is not a model folder,
            a declared hub id that cannot be fetched (each naming the adapter_config.json); and what
            :func:`~auditor.inspect.base_model.resolve_base` raises for ``--base X``.
    """
    if base is not None and base != DECLARED:
        return dataclasses.replace(resolve_base(base), reason=f"--base {base}"), {}
    choices = [(cfg, name, _choice(cfg, name, hub_allowed=base == DECLARED)) for cfg, name in declared]
    # the ones that name a base they have, first: they give the reason
    named = sorted(((cfg, name, c) for cfg, name, c in choices if c.base is not None),
                   key=lambda x: x[2].kind == "fallback")
    if len({c.key() for _, _, c in named}) > 1:
        listed = "; ".join(f"{cfg}: {name!r} ({c.how if c.kind != 'fallback' else 'the embedded default'})"
                           for cfg, name, c in named)
        raise AuditInputError("--base", f"the adapters declare different bases ({listed}); one run audits on "
                                        "one base: pass --base, and audit the others in a run of their own")
    if not named:
        who = "the adapter declares no" if len(declared) == 1 else "no adapter declares a"
        return dataclasses.replace(resolve_base(None), reason=f"default: {who} base_model_name_or_path"), {}
    cfg, name, c = named[0]
    try:
        chosen = resolve_base(c.base)
    except AuditInputError as e:
        at = f"{e.path}: " if e.path and e.path not in ("--base", c.base) else ""
        raise AuditInputError(cfg, f"base_model_name_or_path {name!r} ({c.how}): {at}{e.fault}") from None
    n = sum(x.kind == c.kind for _, _, x in named)
    who = ("the adapter declares" if len(declared) == 1 else "the adapters declare" if n == len(declared)
           else f"{n} of {len(declared)} adapters declare")
    prefix = "default" if c.kind == "fallback" else f"--base {DECLARED}" if base == DECLARED else "declared"
    warnings = {f_cfg: f"base_model_name_or_path {f_name!r} is {f.how}: audited on the embedded default "
                       f"{chosen.name!r} instead" for f_cfg, f_name, f in named if f.kind == "fallback"}
    return dataclasses.replace(chosen, reason=f"{prefix}: {who} {name!r}, {c.how}"), warnings
