"""A training run's folder: checkpoint-N folders in global_step order, --checkpoints selection, and the
one-line refusals (exit 2). Pure and fast: the folders hold small real-format adapters (conftest.write_adapter)."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT, assert_one_line_error, write_adapter

from auditor.errors import AuditInputError
from auditor.inspect.checkpoints import find_checkpoints, is_run_dir, parse_selection, select, training_run


def _run(tmp_path, steps: dict[str, int | None]):
    """A run folder: ``checkpoint-N`` name → its trainer_state.json global_step (None: no trainer_state.json)."""
    run = tmp_path / "run"
    for name, step in steps.items():
        folder = run / name
        folder.mkdir(parents=True)
        shutil.copy(ROOT / "examples" / "zoo" / "null-selfdistill-a" / "adapter_config.json", folder)
        (folder / "adapter_model.safetensors").write_bytes(b"")
        if step is not None:
            (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": []}))
    return run


def test_steps_come_from_trainer_state_else_the_folder_name(tmp_path):
    # checkpoint-9 sorts after checkpoint-10 by name; its trainer_state says step 9; checkpoint-3 has none
    run = _run(tmp_path, {"checkpoint-10": 10, "checkpoint-9": 9, "checkpoint-3": None, "checkpoint-200": 20})
    found = find_checkpoints(run)
    assert [(c.step, c.path.name, c.step_source) for c in found] == [
        (3, "checkpoint-3", "folder name"), (9, "checkpoint-9", "trainer_state"), (10, "checkpoint-10", "trainer_state"),
        (20, "checkpoint-200", "trainer_state")]
    assert is_run_dir(run) and not is_run_dir(run / "checkpoint-10") and not is_run_dir(tmp_path / "missing")


def test_selection_forms(tmp_path):
    found = find_checkpoints(_run(tmp_path, {f"checkpoint-{s}": s for s in (100, 200, 300, 400, 500)}))
    steps = lambda text: [c.step for c in select(found, parse_selection(text))]  # noqa: E731
    assert steps("all") == [100, 200, 300, 400, 500]
    assert steps("last:2") == [400, 500] and steps("last:9") == [100, 200, 300, 400, 500]
    assert steps("every:2") == [100, 300, 500] and steps("every:3") == [100, 400, 500]
    assert steps("steps:300,100") == [100, 300] and steps("steps:200") == [200]


@pytest.mark.parametrize("bad", ["", "some", "last:0", "last:x", "every:-1", "steps:", "steps:a", "steps:-5", "first:2"])
def test_a_bad_selection_is_refused(bad):
    with pytest.raises(AuditInputError) as e:
        parse_selection(bad)
    assert e.value.path == "--checkpoints" and "all, last:K, every:N or steps:a,b" in e.value.fault


def test_a_step_that_does_not_exist_names_the_runs_steps(tmp_path):
    run = _run(tmp_path, {"checkpoint-10": 10, "checkpoint-20": 20})
    with pytest.raises(AuditInputError, match="no checkpoint at step 15; the run's steps are 10, 20"):
        training_run(run, "steps:10,15")


def test_two_checkpoints_at_one_step_and_a_checkpoint_without_weights_are_refused_when_selected(tmp_path):
    run = _run(tmp_path, {"checkpoint-10": 10, "checkpoint-11": 10, "checkpoint-20": 20})
    with pytest.raises(AuditInputError, match="is at step 10, as checkpoint-1[01] is"):
        training_run(run)
    # a selection that leaves the ambiguous step out is audited
    assert [c.step for c in training_run(run, "steps:20").checkpoints] == [20]
    assert [c.step for c in training_run(run, "last:1").checkpoints] == [20]
    (run / "checkpoint-11" / "adapter_model.safetensors").unlink()
    (run / "checkpoint-11" / "trainer_state.json").unlink()
    # a save still being written (an empty checkpoint-30/): refused when selected, not when left out
    (run / "checkpoint-30").mkdir()
    with pytest.raises(AuditInputError, match="checkpoint-30: no adapter_model.safetensors in this checkpoint"):
        training_run(run, "last:1")
    assert [c.step for c in training_run(run, "steps:10,20").checkpoints] == [10, 20]
    with pytest.raises(AuditInputError, match="no adapter_model.safetensors in this checkpoint"):
        training_run(run)


@pytest.mark.parametrize(("args", "needles"), [
    (["--checkpoints", "last:0"], ["--checkpoints: 'last:0' is not one of"]),
    (["--checkpoints", "steps:7"], ["no checkpoint at step 7; the run's steps are 10, 20"]),
])
def test_the_command_refuses_bad_values_in_one_line(tmp_path, cli, args, needles):
    run = tmp_path / "run"
    for s in (10, 20):
        write_adapter(run / f"checkpoint-{s}", layers=1)
        (run / f"checkpoint-{s}" / "trainer_state.json").write_text(json.dumps({"global_step": s}))
    assert_one_line_error(cli(run, *args, "--out", tmp_path / "out"), *needles)
    assert not (tmp_path / "out").exists()


def test_checkpoints_without_a_run_folder_and_a_run_folder_among_adapters_are_refused(tmp_path, cli):
    adapter = write_adapter(tmp_path / "a", layers=1)
    assert_one_line_error(cli(adapter, "--checkpoints", "all"), "--checkpoints: needs a training run folder")
    assert_one_line_error(cli(adapter, "--stop-at-first-fail"), "--stop-at-first-fail: needs a training run folder")
    run = tmp_path / "run"
    write_adapter(run / "checkpoint-1", layers=1)
    assert_one_line_error(cli(run, adapter), "is a training run folder (checkpoint-N folders): audit it alone")


def test_an_output_dir_that_is_an_adapter_too_is_a_run_when_checkpoints_are_asked_for(tmp_path):
    """A Trainer's output_dir after save_model(): the final adapter beside its checkpoint-N folders."""
    from auditor.inspect.checkpoints import expand_run

    run = _run(tmp_path, {"checkpoint-10": 10, "checkpoint-20": 20})
    write_adapter(run, layers=1)
    assert not is_run_dir(run) and is_run_dir(run, adapter_too=True)
    assert expand_run((str(run),), None, False) == ((str(run),), None)  # the final adapter alone
    adapters, found = expand_run((str(run),), "last:1", False)
    assert found is not None and adapters == (str(run / "checkpoint-20"),)


def test_a_checkpoint_saved_as_bin_is_taken_with_allow_bin_only(tmp_path):
    run = _run(tmp_path, {"checkpoint-10": 10, "checkpoint-20": 20})
    pickled = run / "checkpoint-20"
    (pickled / "adapter_model.safetensors").unlink()
    (pickled / "adapter_model.bin").write_bytes(b"")
    with pytest.raises(AuditInputError, match="holds adapter_model.bin .* audit it with --allow-bin") as e:
        training_run(run)
    assert e.value.path == str(pickled)
    assert [c.step for c in training_run(run, allow_bin=True).checkpoints] == [10, 20]
    assert [c.step for c in training_run(run, "steps:10").checkpoints] == [10]  # not selected: not in the way
