"""auditor.callback.process: the ``audit run`` arguments the callback's options make (checked as the command checks
them, when the callback is built), the audit process's command and environment, and how a process that ends, fails,
dies or hangs is reported. The processes here are small Python scripts, not audits."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from auditor.callback import process
from auditor.callback.process import audit_args, audit_command, audit_env, last_error_line, run_audit


def test_options_become_the_commands_arguments():
    args = audit_args({"base": Path("/models/b"), "capabilities": ["math", "ifeval"], "budget": 0, "limit": 2,
                       "no_cache": True, "noise_floor": False, "label": None,
                       "chat_template_args": {"enable_thinking": False, "style": "short"}, "served_adapters": "a"})
    assert args == ["--base", "/models/b", "--capability", "math", "--capability", "ifeval", "--budget", "0",
                    "--limit", "2", "--no-cache", "--chat-template-arg", "enable_thinking=false",
                    "--chat-template-arg", "style=short", "--served-adapter", "a"]
    assert audit_args({}) == []
    assert set(process.option_names()) >= {"base", "policy", "suite", "label", "budget", "dtype", "backend"}
    assert not set(process.option_names()) & set(process.RESERVED)


@pytest.mark.parametrize("options, error, needle", [
    ({"capability": "math"}, TypeError, "did you mean 'capabilities'"),
    ({"cache": False}, TypeError, "'no_cache'"),
    ({"out": "x"}, TypeError, "sets 'out' itself"),
    ({"checkpoints": "all"}, TypeError, "itself"),
    ({"no_cache": "yes"}, TypeError, "True or False"),
    ({"budget": "lots"}, ValueError, "--budget"),
    ({"dtype": "fp8"}, ValueError, "--dtype"),
    ({"limit": 0}, ValueError, "--limit"),
    ({"vllm_args": {"dtype": "half"}}, ValueError, "use --dtype"),
    ({"chat_template_args": ["novalue"]}, ValueError, "KEY=VALUE"),
    ({"max_adapter_size": "huge"}, ValueError, "--max-adapter-size"),
    ({"policy": "policies/no-such-policy.yaml"}, ValueError, "no-such-policy.yaml"),
    ({"eval_results": "hub"}, TypeError, "does not take 'eval_results'"),
    ({"model_card": "README.md"}, TypeError, "audit report"),
])
def test_options_the_command_would_refuse_are_refused_at_once(options, error, needle):
    with pytest.raises(error, match=None) as e:
        audit_args(options)
    assert needle in str(e.value)


def test_the_command_is_this_interpreter_running_this_auditor(tmp_path):
    cmd = audit_command(tmp_path / "checkpoint-5", tmp_path / "checkpoint-5" / "audit", ["--budget", "0"])
    assert cmd == [sys.executable, "-m", "auditor.cli", "run", str(tmp_path / "checkpoint-5"), "--out",
                   str(tmp_path / "checkpoint-5" / "audit"), "--budget", "0"]
    env = audit_env({"CUDA_VISIBLE_DEVICES": "1", "TQDM_DISABLE": "0"})
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)  # a source checkout: its auditor, not another
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and env["TQDM_DISABLE"] == "0"
    assert audit_env()["TQDM_DISABLE"] == "1"


def _script(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "fake_audit.py"
    script.write_text("import os, signal, subprocess, sys, time\n" + body, encoding="utf-8")
    return [sys.executable, str(script)]


@pytest.mark.parametrize("body, code, error", [
    ("print('verdict: PASS')\n", 0, None),
    ("print('verdict: FAIL'); sys.exit(1)\n", 1, None),
    ("print('base: x', file=sys.stderr); print('error: policy.yaml: not found', file=sys.stderr); "
     "print('  '); sys.exit(2)\n", 2, "exit code 2: error: policy.yaml: not found"),
    ("print('internal error: ValueError: boom'); sys.exit(3)\n", 3, "exit code 3: internal error: ValueError: boom"),
    ("print('loading'); sys.stdout.flush(); os.kill(os.getpid(), signal.SIGKILL)\n", -9, "killed by SIGKILL: loading"),
    ("sys.exit(4)\n", 4, "exit code 4"),
])
def test_how_an_audit_process_ends_is_reported(tmp_path, body, code, error):
    log = tmp_path / "audit.log"
    outcome = run_audit(_script(tmp_path, body), log, audit_env(), timeout_s=60)
    assert (outcome.returncode, outcome.error) == (code, error)
    assert outcome.seconds > 0
    assert log.read_text(encoding="utf-8").startswith(f"$ {sys.executable} ")


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")  # a zombie nobody reaped (no init in a container) is dead too
    return stat.exists() and stat.read_text().split(") ")[-1].startswith("Z")


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_a_process_past_its_time_limit_is_stopped_with_the_processes_it_started(tmp_path, monkeypatch):
    """SIGTERM to its session first; one that ignores it is killed after the grace period; a process it started
    (an engine's worker) goes too."""
    monkeypatch.setattr(process, "GRACE_S", 0.5)
    pid_file = tmp_path / "child.pid"
    body = (f"signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
            "print('generating', flush=True); time.sleep(60)\n")
    t0 = time.monotonic()
    outcome = run_audit(_script(tmp_path, body), tmp_path / "audit.log", audit_env(), timeout_s=2)
    assert outcome.returncode is None and outcome.error == "still running after 2 s: stopped (timeout)"
    assert time.monotonic() - t0 < 20
    deadline = time.monotonic() + 5
    while not _dead(int(pid_file.read_text())) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _dead(int(pid_file.read_text()))


def test_the_last_error_line_is_the_audits_own_account(tmp_path):
    log = tmp_path / "audit.log"
    assert last_error_line(log) == ""
    log.write_text("$ audit run x\nbase: b\nerror: x: no adapter_model.safetensors\n\n", encoding="utf-8")
    assert last_error_line(log) == "error: x: no adapter_model.safetensors"
    log.write_text("$ audit run x\n" + "Traceback ... " * 100 + "\n", encoding="utf-8")
    assert last_error_line(log) == ("Traceback ... " * 100).strip()[:300]
    log.write_text("$ audit run x\n", encoding="utf-8")
    assert last_error_line(log) == ""


def test_the_callbacks_own_keywords_are_checked_and_base_none_is_declared():
    from auditor.callback import AuditCallback

    for bad in ({"timeout_s": "10"}, {"timeout_s": True}, {"env": {"X": 1}}, {"prefix": 3}):
        with pytest.raises(ValueError):
            AuditCallback(**bad)
    assert AuditCallback(base=None).args == ["--base", "declared"] == AuditCallback().args
    args = AuditCallback(policy=str(ROOT / "policies" / "release.yaml")).args
    assert args[args.index("--policy") + 1] == str(ROOT / "policies" / "release.yaml")
