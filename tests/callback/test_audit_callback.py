"""AuditCallback on real Trainer runs: a tiny random llama (the embedded base's tokenizer, see
test_model_families) and a LoRA trained a few steps on CPU, a checkpoint every 2 steps, each audited by the
``audit`` command in its own process on ``--capability math --limit 2 --budget 0``. Checked: the reports next to
each checkpoint and the copy beside them, the ``audit/`` entries in the trainer's log history and in the
TensorBoard event file ``report_to=["tensorboard"]`` writes, ``stop_on="fail"`` ending the run, and audits that
give no verdict (a missing suite file, a missing base, the time limit) logged while training completes with its
checkpoints intact. The random weights make the answers noise: what is checked is the plumbing, not the scores.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import pytest
from test_model_families import _tiny_family

from auditor.callback import AuditCallback

#: the audit each test asks for: two math items, no rounds, the hf backend, no throughput sweep
FAST = {"capabilities": ["math"], "limit": 2, "budget": 0, "backend": "hf", "batch_size": 2}
#: what a Trainer writes into a checkpoint of a PEFT model (the audit adds only its ``audit/`` folder)
TRAINER_FILES = {"adapter_model.safetensors", "adapter_config.json", "README.md", "trainer_state.json",
                 "training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"}


@pytest.fixture(scope="module")
def tiny_base(base_model, tmp_path_factory):
    base, _ = _tiny_family("llama", base_model, tmp_path_factory.mktemp("tiny"))
    return base


def _train(base, out, callback_kwargs: dict, steps: int = 4, save_steps: int = 2, report_to=(),
           pass_trainer: bool = True):
    """A LoRA on ``base`` trained ``steps`` steps by a real Trainer with an AuditCallback; returns (trainer,
    callback)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.0,
                                      task_type="CAUSAL_LM"))
    g = torch.Generator().manual_seed(0)
    rows = [{"input_ids": ids, "labels": ids} for ids in torch.randint(10, 1000, (8, 12), generator=g).tolist()]
    args = TrainingArguments(output_dir=str(out), max_steps=steps, save_steps=save_steps, save_strategy="steps",
                             per_device_train_batch_size=2, learning_rate=1e-2, logging_steps=1,
                             report_to=list(report_to), use_cpu=True, dataloader_num_workers=0,
                             remove_unused_columns=False, disable_tqdm=True, seed=0)
    trainer = Trainer(model=model, args=args, train_dataset=rows)
    callback = AuditCallback(trainer=trainer if pass_trainer else None, **callback_kwargs)
    trainer.add_callback(callback)
    trainer.train()
    return trainer, callback


def _audit_entries(log_history: list[dict]) -> dict[int, dict]:
    return {e["step"]: e for e in log_history if "audit/error" in e}


def test_each_save_is_audited_reported_next_to_it_and_logged_to_tensorboard(tiny_base, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "run"
    trainer, cb = _train(tiny_base, out, FAST, report_to=["tensorboard"])
    assert [a.step for a in cb.audits] == [2, 4] and trainer.state.global_step == 4
    for a in cb.audits:
        assert a.error is None and a.verdict in ("pass", "fail"), a
        ckpt = out / f"checkpoint-{a.step}"
        assert a.checkpoint == ckpt and a.results == ckpt / "audit" / "results.json"
        assert {p.name for p in ckpt.iterdir()} == TRAINER_FILES | {"audit"}
        for name in ("report.html", "summary.md", "junit.xml", "audit.log"):
            assert (ckpt / "audit" / name).is_file(), name
        log = (ckpt / "audit" / "audit.log").read_text(encoding="utf-8")
        assert log.startswith("$ ") and f"-m auditor.cli run {ckpt} --out {ckpt / 'audit'}" in log.splitlines()[0]
        results = json.loads(a.results.read_text(encoding="utf-8"))
        # the audited weights are the checkpoint's, which the audit left as they were
        digest = hashlib.sha256((ckpt / "adapter_model.safetensors").read_bytes()).hexdigest()
        assert results["adapter"]["sha256"] == digest
        assert results["base"]["path"] == str(tiny_base) and results["base"]["reason"].startswith("--base declared")
        assert results["verdict"]["verdict"] == a.verdict
        assert a.copy == out / "audits" / f"checkpoint-{a.step}.json"
        assert a.copy.read_bytes() == a.results.read_bytes()
    # the trainer's log history: the flat metrics, at each save's step
    entries = _audit_entries(trainer.state.log_history)
    assert sorted(entries) == [2, 4]
    for step, e in entries.items():
        a = next(a for a in cb.audits if a.step == step)
        assert e["audit/error"] == 0.0 and e["audit/verdict_pass"] == (a.verdict == "pass")
        assert e["audit/math.numeric_match/n_items"] == 2.0 and "audit/math.numeric_match/delta_pts" in e
        assert e["audit/seconds"] > 0
    # the step-2 audit was logged before checkpoint-4 was saved: its trainer_state.json holds it
    saved = json.loads((out / "checkpoint-4" / "trainer_state.json").read_text(encoding="utf-8"))
    assert 2 in _audit_entries(saved["log_history"]) and 4 not in _audit_entries(saved["log_history"])
    # report_to=["tensorboard"]: the event file holds the same figures at the same steps (transformers' integrations
    # put every key that does not start with eval_ or test_ under train/)
    events = list((out / "runs").rglob("events.out.tfevents.*"))
    assert len(events) == 1
    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    for tag in ("audit/verdict_pass", "audit/error", "audit/rules_fail_n", "audit/math.numeric_match/delta_pts"):
        assert f"train/{tag}" in acc.Tags()["scalars"], tag
        assert [(s.step, s.value) for s in acc.Scalars(f"train/{tag}")] == [
            (step, pytest.approx(entries[step][tag])) for step in (2, 4)]


def test_stop_on_fail_ends_the_run_at_the_first_failing_checkpoint(tiny_base, tmp_path, caplog):
    """A policy that fails every adapter without a nominal label (on_missing_label: fail) fails the first save's
    audit; the run stops there, with the figures in state.log_history (no trainer given: no report_to)."""
    policy = tmp_path / "strict.yaml"
    policy.write_text("version: 1\nextends: default\ndrift: {on_missing_label: fail}\n", encoding="utf-8")
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="auditor.callback"):
        trainer, cb = _train(tiny_base, out, {**FAST, "policy": str(policy), "stop_on": "fail"}, steps=6,
                             pass_trainer=False)
    assert trainer.state.global_step == 2 and [a.step for a in cb.audits] == [2]
    assert cb.audits[0].verdict == "fail" and any("label" in r for r in cb.audits[0].failing)
    assert cb.last_passing is None
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-2"]
    entry = _audit_entries(trainer.state.log_history)[2]
    assert entry["audit/verdict_pass"] == 0.0 and entry["audit/rules_fail_n"] >= 1 and entry["audit/error"] == 0.0
    assert "training stops" in caplog.text and "no trainer given" in caplog.text


@pytest.mark.parametrize("case", ["missing suite", "missing base", "timeout"])
def test_an_audit_without_a_verdict_is_logged_and_training_goes_on(case, tiny_base, tmp_path, caplog):
    kwargs = {**FAST, "stop_on": "fail"}
    if case == "missing suite":  # (a missing policy file is refused when the callback is built)
        kwargs["suite"] = str(tmp_path / "no-such-suite.yaml")
    elif case == "missing base":
        kwargs["base"] = str(tmp_path / "no-such-base")
    else:
        kwargs["timeout_s"] = 0.5
    out = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="auditor.callback"):
        trainer, cb = _train(tiny_base, out, kwargs)
    assert trainer.state.global_step == 4 and [a.step for a in cb.audits] == [2, 4]
    for a in cb.audits:
        assert a.verdict is None and a.results is None
        if case == "timeout":
            assert "timeout" in a.error
        else:
            assert a.error.startswith("exit code 2: error: ") and "no-such-" in a.error, a.error
        ckpt = out / f"checkpoint-{a.step}"
        assert {p.name for p in ckpt.iterdir()} == TRAINER_FILES | {"audit"}
        assert [p.name for p in (ckpt / "audit").iterdir()] == ["audit.log"]
    assert not (out / "audits").exists()
    entries = _audit_entries(trainer.state.log_history)
    assert sorted(entries) == [2, 4] and all(e["audit/error"] == 1.0 for e in entries.values())
    assert caplog.text.count("gave no verdict") == 2 and "training goes on" in caplog.text
    # the checkpoints are whole: the last one loads as an adapter
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_base), out / "checkpoint-4")


# --- the callback's own logic, without a Trainer run ----------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, needle", [
    ({"every": 0}, ValueError, "every"),
    ({"every": 1.5}, ValueError, "every"),
    ({"stop_on": "warn"}, ValueError, "stop_on"),
    ({"timeout_s": 0}, ValueError, "timeout_s"),
    ({"capability": "math"}, TypeError, "capabilities"),
    ({"budget": "lots"}, ValueError, "--budget"),
])
def test_a_callback_the_audit_would_refuse_is_refused_when_built(kwargs, error, needle):
    with pytest.raises(error) as e:
        AuditCallback(**kwargs)
    assert needle in str(e.value)


def _state(step: int = 2, main: bool = True):
    from types import SimpleNamespace

    return SimpleNamespace(global_step=step, is_world_process_zero=main, log_history=[])


def test_every_nth_save_is_audited_on_the_main_process_only(monkeypatch):
    from types import SimpleNamespace

    from transformers import TrainerControl

    from auditor.callback import CheckpointAudit

    cb = AuditCallback(every=2, stop_on="fail", budget=0)
    assert cb.args == ["--base", "declared", "--budget", "0"]  # the declared base: the model being trained
    audited = []
    monkeypatch.setattr(cb, "audit_checkpoint", lambda args, state: audited.append(state.global_step) or
                        CheckpointAudit(step=state.global_step, checkpoint=None, verdict="fail"))
    args = SimpleNamespace(output_dir="unused")
    for step in (1, 2, 3, 4):
        control = cb.on_save(args, _state(step), TrainerControl())
        assert control.should_training_stop == (step in (2, 4))
    assert audited == [2, 4]
    worker = AuditCallback(every=1, stop_on="fail")
    monkeypatch.setattr(worker, "audit_checkpoint", lambda *a: pytest.fail("a worker process audited"))
    assert not worker.on_save(args, _state(main=False), TrainerControl()).should_training_stop


def test_the_time_limit_in_a_distributed_run_is_within_the_other_processes_wait():
    from types import SimpleNamespace

    assert AuditCallback()._timeout(SimpleNamespace(world_size=1, ddp_timeout=1800)) is None
    assert AuditCallback()._timeout(SimpleNamespace(world_size=4, ddp_timeout=1000)) == 900
    assert AuditCallback(timeout_s=60)._timeout(SimpleNamespace(world_size=4, ddp_timeout=1000)) == 60


def test_the_checkpoint_is_found_in_the_output_dir_or_a_trial_folder(tmp_path):
    from auditor.callback.audit_callback import find_checkpoint

    (tmp_path / "checkpoint-10").mkdir()
    (tmp_path / "run-3" / "checkpoint-20").mkdir(parents=True)
    assert find_checkpoint(tmp_path, 10) == tmp_path / "checkpoint-10"
    assert find_checkpoint(tmp_path, 20) == tmp_path / "run-3" / "checkpoint-20"
    with pytest.raises(FileNotFoundError, match="no checkpoint-30 folder"):
        find_checkpoint(tmp_path, 30)


def test_a_missing_checkpoint_or_a_failing_logger_is_a_warning(tmp_path, caplog):
    from types import SimpleNamespace

    class BrokenTrainer:
        def log(self, logs):
            raise OSError("disk full")

    cb = AuditCallback(trainer=BrokenTrainer(), budget=0)
    with caplog.at_level(logging.WARNING, logger="auditor.callback"):
        record = cb.audit_checkpoint(SimpleNamespace(output_dir=str(tmp_path), world_size=1), _state(7))
    assert record.verdict is None and record.checkpoint is None and "no checkpoint-7 folder" in record.error
    assert "gave no verdict" in caplog.text and "logging the audit of step 7 failed: OSError: disk full" in caplog.text
    assert cb.audits == [record] and list(tmp_path.iterdir()) == []


DISTRIBUTED = '''
import json, sys
from types import SimpleNamespace
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, init, out):
    from transformers import TrainerControl
    from auditor.callback import AuditCallback, CheckpointAudit
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    cb = AuditCallback(stop_on="fail", budget=0)
    verdicts = iter(["pass", "fail"])
    calls = []
    cb.audit_checkpoint = lambda args, state: calls.append(state.global_step) or CheckpointAudit(
        step=state.global_step, checkpoint=None, verdict=next(verdicts))
    stops = [cb.on_save(SimpleNamespace(), SimpleNamespace(global_step=s, is_world_process_zero=rank == 0),
                        TrainerControl()).should_training_stop for s in (1, 2)]
    json.dump({"stops": stops, "calls": calls}, open(f"{out}/rank{rank}.json", "w"))
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], sys.argv[2]), nprocs=2)
'''


def test_stop_on_fail_stops_every_process_of_a_distributed_run(tmp_path):
    """Two gloo processes: only rank 0 audits; its verdict reaches rank 1 (a broadcast at each audited save), so
    both stop at the same save and neither waits on the other."""
    import subprocess
    import sys

    from conftest import ROOT

    script = tmp_path / "dist.py"
    script.write_text(DISTRIBUTED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script), f"file://{tmp_path / 'init'}", str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks == [{"stops": [False, True], "calls": [1, 2]}, {"stops": [False, True], "calls": []}]


def test_an_earlier_runs_reports_in_the_audit_folder_are_not_left_beside_a_new_audit(tmp_path):
    """A run that saves into an output_dir an earlier run audited: the old reports go before the audit starts (an
    audit without a verdict then leaves its log alone there); what else the folder holds stays. The checkpoint here
    holds no adapter (a full fine-tune's, say): the audit's one line says so."""
    from types import SimpleNamespace

    audit = tmp_path / "checkpoint-7" / "audit"
    audit.mkdir(parents=True)
    for name in ("results.json", "report.html", "audit.log", "notes.txt"):
        (audit / name).write_text("old", encoding="utf-8")
    cb = AuditCallback(budget=0)
    record = cb.audit_checkpoint(SimpleNamespace(output_dir=str(tmp_path), world_size=1), _state(7))
    assert record.error.startswith("exit code 2: error: ") and "no adapter files in this folder" in record.error
    assert sorted(p.name for p in audit.iterdir()) == ["audit.log", "notes.txt"]
    assert (audit / "audit.log").read_text(encoding="utf-8").startswith("$ ")


@pytest.mark.slow
def test_the_training_run_example_audits_each_checkpoint_on_the_embedded_base(tmp_path, capsys, base_model):
    """examples/training_run/train_run.py --audit: the zoo's over-refusal recipe trained by a real Trainer on the
    embedded SmolLM2, each checkpoint audited on the smoke suite's over-refusal items as it is saved, the figures in
    TensorBoard, the run ended at the first checkpoint that fails (the later ones refuse more)."""
    import sys

    from conftest import ROOT
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    sys.path.insert(0, str(ROOT / "examples" / "training_run"))
    import train_run

    out = tmp_path / "run"
    # two steps, a checkpoint after each: the second audit is of a checkpoint saved after an audit had run
    assert train_run.main([str(out), "--steps", "2", "--save-steps", "1", "--n", "16", "--generic", "8", "--audit", "--audit-capability",
                           "over_refusal", "--audit-limit", "10", "--audit-budget", "0", "--stop-on-fail",
                           "--report-to", "tensorboard"]) == 0
    printed = capsys.readouterr().out
    steps = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    audits = {s: json.loads((out / f"checkpoint-{s}" / "audit" / "results.json").read_text(encoding="utf-8"))
              for s in steps}
    verdicts = {s: r["verdict"]["verdict"] for s, r in audits.items()}
    assert steps[0] == 1 and set(verdicts.values()) <= {"pass", "fail"}, printed
    # stop_on="fail": no checkpoint after the first that fails
    assert "fail" not in [verdicts[s] for s in steps[:-1]]
    assert steps[-1] == 2 or verdicts[steps[-1]] == "fail"
    for s, r in audits.items():
        assert f"audit of step {s}: {verdicts[s]}" in printed
        assert Path(r["adapter"]["declared_base"]).resolve() == Path(base_model.path).resolve()
        assert {it["capability"] for it in r["items"]} == {"over_refusal"} and len(r["items"]) == 10
        assert (out / "audits" / f"checkpoint-{s}.json").is_file()
    acc = EventAccumulator(str(next((out / "runs").rglob("events.out.tfevents.*")).parent))
    acc.Reload()
    logged = {e.step: e.value for e in acc.Scalars("train/audit/verdict_pass")}
    assert logged == {s: float(v == "pass") for s, v in verdicts.items()}
    assert [e.step for e in acc.Scalars("train/audit/over_refusal.refusal_rate/delta_pts")] == steps


def test_a_copy_that_cannot_be_written_is_a_warning(tmp_path, caplog):
    results = tmp_path / "results.json"
    results.write_text("{}", encoding="utf-8")
    (tmp_path / "audits").write_text("a file where the folder goes", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="auditor.callback"):
        assert AuditCallback()._copy(results, tmp_path / "audits" / "checkpoint-2.json") is None
    assert "could not be copied" in caplog.text
    assert AuditCallback(keep_copy=False)._copy(results, tmp_path / "elsewhere.json") is None
    assert not (tmp_path / "elsewhere.json").exists()
    assert AuditCallback()._copy(results, tmp_path / "ok" / "checkpoint-2.json") == tmp_path / "ok" / "checkpoint-2.json"


def test_the_package_root_gives_the_callback():
    import auditor

    assert auditor.AuditCallback is AuditCallback and "AuditCallback" in auditor.__all__
