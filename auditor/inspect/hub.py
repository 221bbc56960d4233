"""Hugging Face hub ids for ``--base``, adapters and ``--baseline``.

An argument that is not an existing local path and looks like a hub id
(``owner/name``, optionally ``owner/name@revision``) is resolved with
``huggingface_hub.snapshot_download``: from the local hub cache when
``HF_HUB_OFFLINE=1`` (or when the revision is already there), otherwise
downloaded. The resolved commit (the snapshot folder's name) is recorded in
results.json, so a report names exactly which revision it audited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import AuditInputError

#: owner/name[@revision], as the hub spells repository ids (huggingface_hub's validate_repo_id)
_HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96})(?:@(?P<rev>[\w./-]{1,200}))?$")
#: what an audit reads from an adapter repository (nothing pickled, no other weights)
ADAPTER_PATTERNS = ["adapter_config.json", "adapter_model.safetensors", "README.md"]
#: what a base model needs: config, safetensors weights (sharded or not), tokenizer and chat template
BASE_PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "tokenizer*"]


@dataclass(frozen=True)
class HubRef:
    """A hub id resolved to a local snapshot.

    Attributes:
        repo_id: ``owner/name``.
        requested: the revision asked for (``main`` when none was given).
        revision: the resolved commit sha (40 hex digits).
        path: the local snapshot folder.
    """

    repo_id: str
    requested: str
    revision: str
    path: Path

    def as_dict(self) -> dict[str, str]:
        return {"repo_id": self.repo_id, "requested": self.requested, "revision": self.revision}


def looks_like_hub_id(arg: str) -> bool:
    """True for ``owner/name`` or ``owner/name@rev`` that is not an existing local path."""
    return not Path(arg).expanduser().exists() and bool(_HUB_ID.fullmatch(arg)) and not arg.startswith((".", "/", "~"))


def resolve(arg: str, kind: str) -> HubRef:
    """Resolve hub id ``arg`` to a local snapshot.

    Args:
        arg: ``owner/name`` or ``owner/name@revision``.
        kind: ``"adapter"`` or ``"base"``: which files to fetch.

    Raises:
        AuditInputError: the id is not in the local cache while offline, the
            repository or revision does not exist (or is gated/private), or
            the hub cannot be reached.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (GatedRepoError, LocalEntryNotFoundError, OfflineModeIsEnabled,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    m = _HUB_ID.fullmatch(arg)
    if not m:
        raise AuditInputError(arg, "neither a local path nor a Hugging Face hub id (owner/name[@revision])")
    repo, rev = m.group("repo"), m.group("rev") or "main"
    patterns = ADAPTER_PATTERNS if kind == "adapter" else BASE_PATTERNS
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
    return HubRef(repo, rev, path.name, path)
