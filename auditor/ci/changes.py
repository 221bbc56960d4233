"""Which adapters a pull request (or push) changed: the git diff against its base, the adapter
folders at or above the changed files, and the ``adapters`` input's paths and globs. Stdlib only."""

from __future__ import annotations

import glob
import json
import shlex
import subprocess
from pathlib import Path

from .runner import GateError, env

ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _has_commit(rev: str, cwd: Path) -> bool:
    return _git("cat-file", "-e", f"{rev}^{{commit}}", cwd=cwd).returncode == 0


def load_event() -> dict:
    path = env("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GateError(f"{path}: the event file is not readable JSON ({e})") from None
    return event if isinstance(event, dict) else {}


def base_revision(event: dict, cwd: Path) -> str:
    """The commit the change is compared with: the pull request's base (fetched
    if the checkout lacks it), else the commit before a push.

    Raises:
        GateError: no base can be found (not a pull request or push, or the commit is not reachable).
    """
    pr = event.get("pull_request") or {}
    base = pr.get("base") or {}
    ref = env("GITHUB_BASE_REF") or base.get("ref") or ""
    before = event.get("before") or ""
    # (revision, what `git fetch origin` needs to bring it into a shallow checkout)
    candidates = [(base["sha"], base["sha"])] if base.get("sha") else []
    if ref:
        candidates.append((f"origin/{ref}", f"+refs/heads/{ref}:refs/remotes/origin/{ref}"))
    if not pr and before.strip("0"):
        candidates.append((before, before))
    if not candidates:
        raise GateError("adapters: no input given and this is not a pull request or push event, so there is no "
                        "base to diff against; name the adapters (paths or globs)")
    for rev, _ in candidates:
        if _has_commit(rev, cwd):
            return rev
    # actions/checkout fetches one commit by default: fetch the base commit (or branch) itself
    for rev, refspec in candidates:
        _git("fetch", "--no-tags", "--depth=1", "origin", refspec, cwd=cwd)
        if _has_commit(rev, cwd):
            return rev
    raise GateError(f"cannot find the base commit ({', '.join(r for r, _ in candidates)}) in the checkout; check "
                    "out with actions/checkout's fetch-depth: 0, or name the adapters")


def changed_files(base: str, cwd: Path) -> list[str]:
    """Files changed between ``base`` and HEAD, relative to the repository root.

    With the whole history the diff starts at the merge base (only the pull
    request's own changes); in a shallow checkout it is the plain two-tree
    diff, which is exact for the merge commit that pull_request checks out.
    """
    mb = _git("merge-base", base, "HEAD", cwd=cwd)
    start = mb.stdout.strip() if mb.returncode == 0 else base
    if mb.returncode != 0:
        print(f"adapter-auditor: no merge base with {base} (shallow checkout?): diffing {base}..HEAD", flush=True)
    proc = _git("diff", "--name-only", "-z", start, "HEAD", cwd=cwd)
    if proc.returncode != 0:
        raise GateError(f"git diff {start} HEAD failed: {' '.join(proc.stderr.split())}")
    return [p for p in proc.stdout.split("\0") if p]


def is_adapter_folder(folder: Path) -> bool:
    return any((folder / name).is_file() for name in ADAPTER_FILES)


def adapter_folders(files: list[str], root: Path) -> list[str]:
    """The adapter folders holding the changed ``files``: for each file, the
    nearest folder at or above it (inside ``root``) with ``adapter_config.json``
    or ``adapter_model.safetensors``. Folders deleted by the change are left out."""
    found: set[str] = set()
    top = Path(_git("rev-parse", "--show-toplevel", cwd=root).stdout.strip() or root).resolve()
    for f in files:
        folder = (top / f).parent
        while folder == root or root in folder.parents:
            if is_adapter_folder(folder):
                found.add(folder.relative_to(root).as_posix())
                break
            folder = folder.parent
    return sorted(found)


def split_adapter_input(text: str) -> list[str]:
    """The ``adapters`` input: one path or glob per line, or several per line separated by spaces (quote a path
    with spaces)."""
    try:
        return [item for line in text.splitlines() for item in shlex.split(line, comments=True)]
    except ValueError as e:
        raise GateError(f"input adapters: {e}") from None


def expand_adapters(patterns: list[str], root: Path) -> list[str]:
    """Expand globs (``**`` included) relative to ``root``; a glob keeps only adapter folders and
    ``.safetensors`` files inside ``root`` (symlinks resolved: a pull request cannot make a glob
    reach outside the checkout). A plain path is kept as given (``audit`` reports a wrong one).

    Raises:
        GateError: a glob matches no adapter, or only ones outside the workspace.
    """
    out: list[str] = []
    inside = root.resolve()
    for pat in patterns:
        if not glob.has_magic(pat):
            out.append(pat)
            continue
        found = sorted(glob.glob(pat, root_dir=root, recursive=True))
        found = [h for h in found if (root / h).is_dir() and is_adapter_folder(root / h)
                 or (root / h).is_file() and h.endswith(".safetensors")]
        hits = [h for h in found if (root / h).resolve().is_relative_to(inside)]
        if found and not hits:
            raise GateError(f"adapters: {pat!r} matches only adapters outside the workspace {root} "
                            f"(e.g. {(root / found[0]).resolve()}); name such an adapter by its path")
        if not hits:
            raise GateError(f"adapters: {pat!r} matches no adapter folder (one holding {' or '.join(ADAPTER_FILES)})")
        out.extend(hits)
    return list(dict.fromkeys(out))
