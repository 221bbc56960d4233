"""Hostile and broken inputs, fault kinds 11-14 and the ``--allow-bin`` opt-in of kind 1.

Each test builds its bad input and asserts the one line on stderr (exit code 2) or,
where the right outcome is a warning, the warning and the judge rule it feeds.
Only pre-load paths: no test here generates text.
"""

from __future__ import annotations

import os
import pickle
import time

import pytest
import torch
from conftest import HIDDEN, assert_one_line_error, write_adapter
from safetensors.torch import load_file, save_file
from test_hostile import Q, _weights

from auditor.errors import AuditInputError
from auditor.inspect.adapter import inspect_adapter, preflight_adapter
from auditor.inspect.bin_convert import convert_bin_adapter
from auditor.inspect.paths import DEFAULT_MAX_ADAPTER_BYTES

BASE = "HuggingFaceTB/SmolLM2-135M-Instruct"


# ---- 11. another architecture, another task -------------------------------------------------------------------


def _gpt2_adapter(folder, targets=("c_attn", "c_proj")):
    """A LoRA of GPT-2 (hidden 768; c_attn 768 -> 2304 and c_proj 768 -> 768, Conv1D: fan_in_fan_out)."""
    g = torch.Generator().manual_seed(2)
    out = {"c_attn": 3 * 768, "c_proj": 768}
    t = {}
    for i in range(2):
        for m in ("c_attn", "c_proj"):
            name = f"base_model.model.transformer.h.{i}.attn.{m}"
            t[f"{name}.lora_A.weight"] = torch.randn(4, 768, generator=g) * 0.01
            t[f"{name}.lora_B.weight"] = torch.randn(out[m], 4, generator=g) * 0.01
    return write_adapter(folder, tensors=t, config={"target_modules": targets if isinstance(targets, str)
                                                    else list(targets), "fan_in_fan_out": True,
                                                    "base_model_name_or_path": "openai-community/gpt2"})


def test_gpt2_adapter_on_a_llama_base_names_the_architecture(cli, tmp_path):
    a = _gpt2_adapter(tmp_path / "a")
    assert_one_line_error(
        cli(a, "--out", tmp_path / "o"), "adapter_config.json",
        f"target modules ['c_attn', 'c_proj'] do not exist in the base ({BASE}); its linear modules end in",
        "c_attn, c_proj are GPT-2 module names: the adapter was trained for another architecture",
        "the adapter declares base 'openai-community/gpt2': audit it on that base (--base declared fetches it "
        "from the hub, or --base DIR)")
    assert not (tmp_path / "o").exists()


def test_gpt2_tensors_under_all_linear_match_no_module(tmp_path, base_model):
    a = _gpt2_adapter(tmp_path / "a", targets="all-linear")
    with pytest.raises(AuditInputError, match=r"0 of 8 tensors match a module of the base .* names no module of it"):
        inspect_adapter(a, base_model.path, base_model.name)


def _seq_cls_adapter(folder, task_type):
    a = write_adapter(folder, layers=1, config={"task_type": task_type, "modules_to_save": ["score"]})
    t = load_file(str(_weights(a)))
    t["base_model.model.score.weight"] = torch.zeros(2, HIDDEN)  # a two-class classifier head
    save_file(t, str(_weights(a)))
    return a


def test_sequence_classification_adapter_is_refused(cli, tmp_path):
    a = _seq_cls_adapter(tmp_path / "a", "SEQ_CLS")
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_config.json",
                          "task_type is 'SEQ_CLS' (sequence classification, with a classifier head), not a causal "
                          "language model (CAUSAL_LM): the auditor compares generated answers")


def test_classifier_head_without_task_type_is_named(cli, tmp_path):
    a = _seq_cls_adapter(tmp_path / "a", None)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          "4 of 5 tensors match a module of the base",
                          "score is a classification head: the adapter is for a sequence-classification model "
                          "(task_type SEQ_CLS), not a causal language model")


# ---- 12. the declared base: a warning unless the shapes disagree -------------------------------------------------


def _judged_rules(info, policy_text=None, tmp_path=None):
    from auditor.analysis.drift import drift_score
    from auditor.policy.loading import load_policy
    from auditor.policy.rules import judge
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import load_suite

    path = None
    if policy_text is not None:
        path = tmp_path / "p.yaml"
        path.write_text(policy_text)
    policy = load_policy(path, list(load_suite("smoke", scorers=SCORERS).all_metrics))
    v = judge(policy, [], drift_score([], None, "none", None, [], 15), info)
    return {r.outcome for r in v.rules if r.rule == "declared base matches"}, v


@pytest.mark.parametrize("declared,warning,rule", [
    ("", f"adapter_config.json declares no base_model_name_or_path; audited on '{BASE}' (tensor shapes are "
         "compatible)", set()),
    ("/home/alice/models/SmolLM2-135M-Instruct/",
     "adapter_config.json's base_model_name_or_path '/home/alice/models/SmolLM2-135M-Instruct/' is a local folder on "
     f"the machine it was trained on; its name matches the audited base '{BASE}' (tensor shapes are compatible)",
     set()),
    ("C:\\Users\\bob\\llama-ft-base", "adapter declares base 'C:\\\\Users\\\\bob\\\\llama-ft-base' (a local folder on "
                                      f"the machine it was trained on) but is audited on '{BASE}' (tensor shapes are "
                                      "compatible)", {"warn"}),
    ("HuggingFaceTB/SmolLM-135M-Instruct", "adapter declares base 'HuggingFaceTB/SmolLM-135M-Instruct' but is "
                                           f"audited on '{BASE}' (tensor shapes are compatible)", {"warn"}),
    (BASE.upper(), None, set()),  # hub ids are case-insensitive
])
def test_declared_base_is_a_warning_when_the_shapes_fit(tmp_path, base_model, declared, warning, rule):
    a = write_adapter(tmp_path / "a", layers=2, config={"base_model_name_or_path": declared})
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.warnings == ((warning,) if warning else ())
    outcomes, v = _judged_rules(info)
    assert outcomes == rule and v.verdict == "pass"


def test_another_model_id_fails_only_where_the_policy_says_so(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", layers=2, config={"base_model_name_or_path": "HuggingFaceTB/SmolLM-135M"})
    info = inspect_adapter(a, base_model.path, base_model.name)
    outcomes, v = _judged_rules(info, "version: 1\non_base_mismatch: fail\n", tmp_path)
    assert outcomes == {"fail"} and v.verdict == "fail"


def test_declared_base_whose_shapes_disagree_is_an_error(cli, tmp_path):
    t = {Q.format(0) + ".lora_A.weight": torch.zeros(4, 4096), Q.format(0) + ".lora_B.weight": torch.zeros(4096, 4)}
    a = write_adapter(tmp_path / "a", tensors=t, modules=("q_proj",),
                      config={"base_model_name_or_path": "meta-llama/Llama-2-7b-hf"})
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          "shapes of model.layers.0.self_attn.q_proj do not fit the base: lora_A [4, 4096], "
                          "lora_B [4096, 4], base layer in=576 out=576; the adapter declares base "
                          "'meta-llama/Llama-2-7b-hf': audit it on that base (--base declared fetches it from the hub, "
                          "or --base DIR)")


# ---- 13. paths: links out of the folder, folders without adapter files, oversized files --------------------------


@pytest.mark.parametrize("name", ["README.md", "adapter_model.safetensors", "adapter_config.json", "tokenizer.json"])
def test_symlink_out_of_the_adapter_folder_is_refused(cli, tmp_path, name):
    a = write_adapter(tmp_path / "a", layers=1)
    secret = tmp_path / "elsewhere" / "secret"
    secret.parent.mkdir()
    os.replace(a / name, secret) if (a / name).exists() else secret.write_text("---\nnominal_label: math\n---\n")
    (a / name).symlink_to(secret)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), f"{a / name}: is a symbolic link to {secret.resolve()}, "
                          "outside the adapter folder; refused")
    # the weights file given directly: its folder is checked the same way
    assert_one_line_error(cli(_weights(a), "--out", tmp_path / "o"), "outside the adapter folder; refused")


def test_symlinks_inside_the_folder_and_hub_snapshots_are_accepted(tmp_path):
    a = write_adapter(tmp_path / "a", layers=1)
    (a / "weights").mkdir()
    os.replace(_weights(a), a / "weights" / "v2.safetensors")
    _weights(a).symlink_to(a / "weights" / "v2.safetensors")
    (a / "up").symlink_to("../a")  # the folder itself
    preflight_adapter(a)
    (a / "loop").symlink_to(a / "loop")
    with pytest.raises(AuditInputError, match="loop: is a symbolic link that loops; refused"):
        preflight_adapter(a)
    (a / "loop").unlink()
    # the hub cache's layout: snapshot files link to ../../blobs/<sha256>
    repo = tmp_path / "hub" / "models--o--n"
    snap, blobs = repo / "snapshots" / "0123abc", repo / "blobs"
    snap.mkdir(parents=True), blobs.mkdir()
    for f in ("adapter_config.json", "adapter_model.safetensors"):
        os.replace((a / f).resolve(), blobs / f"sha-{f}")
        (snap / f).symlink_to(f"../../blobs/sha-{f}")
    preflight_adapter(snap)


def test_folder_without_adapter_files(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("training log")
    assert_one_line_error(cli(empty, "--out", tmp_path / "o"), str(empty),
                          "no adapter files in this folder (neither adapter_model.safetensors nor "
                          "adapter_config.json)")
    # a folder of adapters that are not a training run's checkpoint-N folders (those are audited as a run:
    # tests/reports/test_training_run.py) is refused with the subfolders named
    write_adapter(tmp_path / "runs" / "final", layers=1)
    assert_one_line_error(cli(tmp_path / "runs", "--out", tmp_path / "o"),
                          "no adapter files in this folder", "its subfolders final hold adapters: give one of them")


def test_adapter_over_the_size_limit(cli, tmp_path, monkeypatch):
    a = write_adapter(tmp_path / "a", layers=1)
    size = _weights(a).stat().st_size
    assert_one_line_error(cli(a, "--max-adapter-size", "1KB", "--out", tmp_path / "o"), "adapter_model.safetensors",
                          f"{size:,} bytes, over the adapter size limit of 1,000 bytes (raise it with "
                          "--max-adapter-size or $AUDITOR_MAX_ADAPTER_SIZE)")
    monkeypatch.setenv("AUDITOR_MAX_ADAPTER_SIZE", "2KiB")
    with pytest.raises(AuditInputError, match="over the adapter size limit of 2,048 bytes"):
        preflight_adapter(a)
    preflight_adapter(a, max_bytes=size)  # the option wins over the variable
    monkeypatch.setenv("AUDITOR_MAX_ADAPTER_SIZE", "lots")
    with pytest.raises(AuditInputError, match="AUDITOR_MAX_ADAPTER_SIZE: 'lots' is not a size"):
        preflight_adapter(a)
    monkeypatch.delenv("AUDITOR_MAX_ADAPTER_SIZE")
    assert_one_line_error(cli(a, "--max-adapter-size", "0", "--out", tmp_path / "o"),
                          "--max-adapter-size: '0' is not a size")


def test_default_size_limit_refuses_before_reading(tmp_path):
    a = write_adapter(tmp_path / "a", layers=1)
    with open(_weights(a), "r+b") as f:  # sparse: nothing is written or read past the header
        f.truncate(DEFAULT_MAX_ADAPTER_BYTES + 1)
    t0 = time.perf_counter()
    with pytest.raises(AuditInputError, match="4,294,967,297 bytes, over the adapter size limit of 4,294,967,296"):
        preflight_adapter(a)
    assert time.perf_counter() - t0 < 1


# ---- 14. policy files: exit 2 naming the key path and line -------------------------------------------------------

LAUGHS = "version: 1\na: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))


@pytest.mark.parametrize("text,needle", [
    (LAUGHS, "line 3: YAML aliases (*name) are not allowed in a policy"),
    ("version: 1\nmetrics:\n  math.numeric_match:\n    max_dorp_pts: 3\n",
     "metrics.math.numeric_match.max_dorp_pts (line 4): unknown key 'max_dorp_pts'"),
    ("version: 1\non_no_efect: warn\n", "on_no_efect (line 2): unknown key 'on_no_efect'"),
    ("version: 1\nmetrics:\n  math.numeric_match:\n    max_drop_pts: [3]\n",
     "metrics.math.numeric_match.max_drop_pts (line 4): [3] is not of type 'number'"),
    ("version: 1\nstatistics:\n  min_items: ten\n", "statistics.min_items (line 3): 'ten' is not of type 'integer'"),
    ("version: 1\nmetrics:\n  math.numeric_match:\n    max_drop_pts: 150\n",
     "metrics.math.numeric_match.max_drop_pts (line 4): 150 is greater than the maximum of 100"),
    ("version: 1\nstatistics:\n  confidence: 1.5\n",
     "statistics.confidence (line 3): 1.5 is greater than or equal to the maximum of 1"),
    ("version: 1\nmetrics:\n  math.numeric_match:\n    max_drop_pts: .nan\n",
     "metrics.math.numeric_match.max_drop_pts (line 4): limits must be finite numbers"),
    ("version: 1\nlabels:\n  math:\n    off_target: [ifeval.prompt_level_strict_acc]\n",
     "labels.math (line 3): 'target' is a required property"),
    ("version: 1\nlabels:\n  math:\n    target: math.accuracy\n",
     "labels.math.target (line 4): unknown metric 'math.accuracy'; known metrics:"),
])
def test_invalid_policy_is_one_line_with_key_path_and_line(cli, tmp_path, text, needle):
    a = write_adapter(tmp_path / "a", layers=1)
    p = tmp_path / "policy.yaml"
    p.write_text(text)
    t0 = time.perf_counter()
    assert_one_line_error(cli(a, "--policy", p, "--out", tmp_path / "o"), f"{p}: {needle}")
    assert time.perf_counter() - t0 < 10 and not (tmp_path / "o").exists()


# ---- 1. pickle .bin adapters: refused unless --allow-bin, then loaded with weights_only=True --------------------


def _bin_adapter(folder, payload=None):
    """A PEFT adapter saved the pre-safetensors way: adapter_model.bin written by torch.save."""
    a = write_adapter(folder, layers=2)
    state = load_file(str(_weights(a))) if payload is None else payload
    _weights(a).unlink()
    torch.save(state, a / "adapter_model.bin")
    return a


def test_bin_adapter_is_refused_without_the_opt_in(cli, tmp_path):
    a = _bin_adapter(tmp_path / "a")
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.bin: pickle .bin adapter refused; "
                          "convert it to safetensors, or pass --allow-bin to load it with "
                          "torch.load(weights_only=True) and convert it")
    assert_one_line_error(cli(a / "adapter_model.bin", "--out", tmp_path / "o"), "pass --allow-bin")


def test_bin_adapter_with_the_opt_in_is_converted_and_inspected(tmp_path, base_model):
    a = _bin_adapter(tmp_path / "a")
    before = {f.name: f.read_bytes() for f in a.iterdir()}
    folder = convert_bin_adapter(a, tmp_path / "cache")
    assert folder.is_relative_to(tmp_path / "cache" / "converted-adapters")
    assert {f.name: f.read_bytes() for f in a.iterdir()} == before  # the user's folder is not written
    info = inspect_adapter(folder, base_model.path, base_model.name)
    assert info.matched_modules == 4 and info.max_rank == 4 and not info.warnings
    want = torch.load(a / "adapter_model.bin", weights_only=True)
    got = load_file(str(_weights(folder)))
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
    assert convert_bin_adapter(a / "adapter_model.bin", tmp_path / "cache") == folder  # converted once


def test_bin_adapter_with_the_opt_in_reaches_the_backend(cli, tmp_path, monkeypatch):
    """Through the CLI: converted, every pre-load check passed, inspected, then stopped where the model would load."""
    from auditor.backends import BACKENDS, HFBackend

    class Stop(HFBackend):
        @classmethod
        def create(cls, *args, **kwargs):
            raise AuditInputError("test", "stopped where the model would be loaded")

    a = _bin_adapter(tmp_path / "a")
    with BACKENDS.override("hf", Stop):
        proc = cli(a, "--allow-bin", "--backend", "hf", "--capability", "math", "--limit", "1", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error: test: stopped where the model would be loaded" in proc.stderr
    flat = " ".join(proc.stderr.split())
    assert "(LoRA rank 4, 4 modules)" in flat and "converted-adapters" in flat
    assert f"pickle adapter {a / 'adapter_model.bin'} loaded with torch.load(weights_only=True) (--allow-bin)" in flat
    assert sorted(f.name for f in a.iterdir()) == ["adapter_config.json", "adapter_model.bin"]


class _Evil:
    """Unpickling this runs ``touch <path>``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.system, (f"touch {self.path}",)


@pytest.mark.parametrize("fmt", ["torch.save", "legacy pickle"])
def test_malicious_bin_is_refused_even_with_the_opt_in(cli, tmp_path, fmt):
    pwned = tmp_path / "pwned"
    a = _bin_adapter(tmp_path / "a", {Q.format(0) + ".lora_A.weight": torch.zeros(4, HIDDEN), "x": _Evil(pwned)})
    if fmt == "legacy pickle":
        (a / "adapter_model.bin").write_bytes(pickle.dumps({"x": _Evil(pwned)}, protocol=2))
    assert_one_line_error(cli(a, "--allow-bin", "--out", tmp_path / "o"),
                          "adapter_model.bin: refused by torch.load(weights_only=True), which loads tensors only and "
                          "runs no code: Trying to load unsupported GLOBAL posix.system whose module posix is blocked")
    assert not pwned.exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("payload,needle", [
    ([torch.zeros(2)], "not a flat mapping of tensor names to tensors"),
    ({"a": {"b": torch.zeros(2)}}, "not a flat mapping of tensor names to tensors"),
    (b"not a pickle at all", "refused by torch.load(weights_only=True)"),
    ({"w": torch.zeros(2, 2).to_sparse()}, "its tensors cannot be written as safetensors"),
])
def test_bin_that_is_no_state_dict_is_refused(cli, tmp_path, payload, needle):
    a = _bin_adapter(tmp_path / "a", payload if not isinstance(payload, bytes) else {})
    if isinstance(payload, bytes):
        (a / "adapter_model.bin").write_bytes(payload)
    assert_one_line_error(cli(a, "--allow-bin", "--out", tmp_path / "o"), "adapter_model.bin", needle)
