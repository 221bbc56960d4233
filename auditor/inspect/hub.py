"""Hugging Face hub ids for ``--base``, adapters and ``--baseline``.

An argument that is not an existing local path and looks like a hub id
(``owner/name``, optionally ``owner/name@revision``, optionally ``:path/in/repo`` naming a
subfolder, as ``huggingface_hub``'s ``subfolder`` argument does: ``owner/name@v2:run-5/checkpoint-500``)
is resolved with ``huggingface_hub.snapshot_download``: from the local hub cache when
``HF_HUB_OFFLINE=1`` (or when the revision is already there), otherwise downloaded (only the
subfolder's files, when one is named). The resolved commit (the snapshot folder's name) and the
subfolder are recorded in results.json, so a report names exactly which revision and folder it audited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditInputError

#: owner/name[@revision][:sub/folder], as the hub spells repository ids (huggingface_hub's validate_repo_id);
#: a revision holds no ``:``, so the first ``:`` after the id starts the subfolder
_HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96})(?:@(?P<rev>[\w./-]{1,200}))?"
                     r"(?::(?P<sub>[\w.][\w./-]{0,300}))?$")
#: the tokenizer files an adapter folder may ship (JSON and Jinja, nothing pickled or executable)
ADAPTER_TOKENIZER_PATTERNS = ["tokenizer_config.json", "tokenizer.json", "special_tokens_map.json",
                              "chat_template.jinja", "chat_template.json", "added_tokens.json"]
#: what an audit reads from an adapter repository (nothing pickled, no other weights)
ADAPTER_PATTERNS = ["adapter_config.json", "adapter_model.safetensors", "README.md", *ADAPTER_TOKENIZER_PATTERNS]
#: what a base model needs: config, safetensors weights (sharded or not), tokenizer and chat template
BASE_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]


@dataclass(frozen=True)
class HubRef:
    """A hub id resolved to a local snapshot.

    Attributes:
        repo_id: ``owner/name``.
        requested: the revision asked for (``main`` when none was given).
        revision: the resolved commit sha (40 hex digits).
        path: the local folder audited: the snapshot folder, or its ``subfolder``.
        subfolder: the folder inside the repository (``run-5/checkpoint-500``), "" for the repository's root.
    """

    repo_id: str
    requested: str
    revision: str
    path: Path
    subfolder: str = ""

    def as_dict(self) -> dict[str, str]:
        """results.json's ``hub`` record (``subfolder`` only when one was named)."""
        out = {"repo_id": self.repo_id, "requested": self.requested, "revision": self.revision}
        return out | ({"subfolder": self.subfolder} if self.subfolder else {})


def looks_like_hub_id(arg: str) -> bool:
    """True for ``owner/name[@rev][:sub/folder]`` that is not an existing local path."""
    return not Path(arg).expanduser().exists() and bool(_HUB_ID.fullmatch(arg)) and not arg.startswith((".", "/", "~"))


def resolve(arg: str, kind: str) -> HubRef:
    """Resolve hub id ``arg`` to a local snapshot.

    Args:
        arg: ``owner/name``, ``owner/name@revision``, either followed by ``:path/in/repo``.
        kind: ``"adapter"`` or ``"base"``: which files to fetch.

    Raises:
        AuditInputError: the id is not in the local cache while offline, the
            repository or revision does not exist (or is gated/private), the
            subfolder is not a plain relative path or does not exist in the
            snapshot, or the hub cannot be reached.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    m = _HUB_ID.fullmatch(arg)
    if not m:
        raise AuditInputError(arg, "neither a local path nor a Hugging Face hub id "
                                   "(owner/name[@revision][:path/in/repo])")
    repo, rev, sub = m.group("repo"), m.group("rev") or "main", _subfolder(arg, m.group("sub") or "")
    patterns = ADAPTER_PATTERNS if kind == "adapter" else BASE_PATTERNS
    if sub:
        patterns = [f"{sub}/{p}" for p in patterns]
    try:
        path = Path(snapshot_download(repo, revision=rev, allow_patterns=patterns))
    except GatedRepoError:
        raise AuditInputError(arg, "gated hub repository: accept its terms and log in (`hf auth login`)") from None
    except RepositoryNotFoundError:
        raise AuditInputError(arg, "no such local file or folder, and no such hub repository (or it is private: "
                                   "log in with `hf auth login`)") from None
    except RevisionNotFoundError:
        raise AuditInputError(arg, f"the hub repository has no revision {rev!r}") from None
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        raise AuditInputError(arg, f"no such local file or folder; as a hub id it is not in the local Hugging Face "
                                   f"cache at revision {rev!r}, and the hub cannot be reached (HF_HUB_OFFLINE=1 "
                                   "or no network)") from None
    except OSError as e:
        raise AuditInputError(arg, f"cannot fetch from the hub: {' '.join(str(e).split())[:160]}") from None
    if sub and not (path / sub).is_dir():
        from huggingface_hub.constants import is_offline_mode

        where = "the local Hugging Face cache's snapshot" if is_offline_mode() else "the repository"
        raise AuditInputError(arg, f"no folder {sub!r} in {where} of {repo} at commit {path.name}"
                                   f"{' (HF_HUB_OFFLINE=1)' if is_offline_mode() else ''}")
    return HubRef(repo, rev, path.name, path / sub if sub else path, sub)


def _subfolder(arg: str, sub: str) -> str:
    """The subfolder part of a hub id, without a trailing ``/``.

    Raises:
        AuditInputError: it is not a plain relative path (an empty, ``.`` or ``..`` part).
    """
    sub = sub.rstrip("/")
    if sub and any(part in ("", ".", "..") for part in sub.split("/")):
        raise AuditInputError(arg, f"subfolder {sub!r} must be a plain path inside the repository "
                                   "(no empty, '.' or '..' parts)")
    return sub
