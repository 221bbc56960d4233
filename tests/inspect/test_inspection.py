"""Stage 1 (inspect): real adapters pass, broken ones fail with one clear line."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import MEDICAL, needs_shared, write_adapter

from auditor.errors import AuditInputError
from auditor.inspect.adapter import inspect_adapter, preflight_adapter
from auditor.inspect.card_label import model_card_label


@needs_shared
def test_third_party_adapter_inspects_with_base_mismatch_warning(base_model):
    info = inspect_adapter(MEDICAL, base_model.path, base_model.name)
    assert info.r == 16 and info.lora_alpha == 32
    assert info.n_tensors == 120 and info.matched_modules == 60
    assert set(info.ranks.values()) == {16}
    assert sorted(info.target_modules) == ["q_proj", "v_proj"]
    assert info.declared_base == "HuggingFaceTB/SmolLM-135M-Instruct"
    assert any("declares base" in w for w in info.warnings)
    assert len(info.sha256) == 64


@needs_shared
def test_weights_file_argument_is_accepted(base_model):
    info = inspect_adapter(MEDICAL / "adapter_model.safetensors", base_model.path, base_model.name)
    assert info.matched_modules == 60


def test_built_adapter_matches_base_without_warning(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", r=4)
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.warnings == () and info.max_rank == 4 and info.matched_modules == 60


def _fault(tmp_path, base_model, **kw) -> str:
    a = write_adapter(tmp_path / "bad", **kw)
    with pytest.raises(AuditInputError) as e:
        inspect_adapter(a, base_model.path, base_model.name)
    return e.value.one_line()


def test_missing_config(tmp_path, base_model):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").unlink()
    with pytest.raises(AuditInputError, match="adapter_config.json: missing"):
        preflight_adapter(a)


def test_invalid_config_json_names_line(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text('{"peft_type": "LORA",\n "r": }')
    with pytest.raises(AuditInputError, match=r"invalid JSON.*line 2"):
        preflight_adapter(a)


def test_not_lora(tmp_path, base_model):
    msg = _fault(tmp_path, base_model, config={"peft_type": "PREFIX_TUNING"})
    assert "only LORA" in msg


def test_not_a_peft_config(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text(json.dumps({"lora_parameters": {"rank": 8}, "num_layers": 16}))
    with pytest.raises(AuditInputError, match="not a PEFT config"):
        preflight_adapter(a)


def test_target_module_the_base_lacks(tmp_path, base_model):
    msg = _fault(tmp_path, base_model, config={"target_modules": ["c_attn", "q_proj"]})
    assert "['c_attn']" in msg and "do not exist in the base" in msg


def test_shapes_that_do_not_fit(tmp_path, base_model):
    t = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(4, 768),
         "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(768, 4)}
    msg = _fault(tmp_path, base_model, tensors=t)
    assert "do not fit the base" in msg and "in=576" in msg


def test_tensor_names_missing_inner_model_prefix(tmp_path, base_model):
    msg = _fault(tmp_path, base_model, prefix="base_model.model.layers")
    assert "0 of 120 tensors match a module of the base" in msg
    assert "rename the prefix 'base_model.model.layers.' to 'base_model.model.model.layers.'" in msg
    assert "(then 120 of 120 match)" in msg


def test_pickle_renamed_to_safetensors(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_model.safetensors").write_bytes(b"PK\x03\x04" + b"\0" * 100)
    with pytest.raises(AuditInputError, match="never unpickled"):
        preflight_adapter(a)


def test_lfs_pointer(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_model.safetensors").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n")
    with pytest.raises(AuditInputError, match="LFS pointer, weights not downloaded"):
        preflight_adapter(a)


def test_truncated_safetensors(tmp_path):
    a = write_adapter(tmp_path / "a")
    w = a / "adapter_model.safetensors"
    w.write_bytes(w.read_bytes()[:1000])
    with pytest.raises(AuditInputError, match="corrupt safetensors file"):
        preflight_adapter(a)


def test_nan_values(tmp_path, base_model):
    a = write_adapter(tmp_path / "a")
    from safetensors.torch import load_file, save_file

    t = load_file(str(a / "adapter_model.safetensors"))
    k = sorted(t)[3]
    t[k][0, 0] = float("nan")
    save_file(t, str(a / "adapter_model.safetensors"))
    with pytest.raises(AuditInputError, match="NaN or Inf"):
        inspect_adapter(a, base_model.path, base_model.name)


def test_bin_only_folder_refused(tmp_path):
    (tmp_path / "adapter_model.bin").write_bytes(b"PK\x03\x04")
    with pytest.raises(AuditInputError, match="pickle .bin adapter refused"):
        preflight_adapter(tmp_path)


def test_nominal_label_from_model_card(tmp_path):
    a = write_adapter(tmp_path / "a", card="---\nbase_model: x\nnominal_label: math\n---\n# card\n")
    assert model_card_label(a)[0] == "math"
    (a / "README.md").write_text("no front matter")
    assert model_card_label(a)[0] is None


@pytest.mark.parametrize("patch,needle", [
    ({"r": "eight"}, "invalid LoRA config: r: 'eight' is not of type 'integer'"),
    ({"r": 0}, "invalid LoRA config: r"),
    ({"lora_alpha": [16]}, "invalid LoRA config: lora_alpha"),
    ({"target_modules": "(q_proj"}, "not a valid regex"),
    ({"peft_type": "lora"}, "only LORA"),
    ({"task_type": "SEQ_CLS"}, "task_type is 'SEQ_CLS' (sequence classification, with a classifier head)"),
])
def test_config_values_peft_would_reject(tmp_path, patch, needle):
    a = write_adapter(tmp_path / "a", config=patch)
    with pytest.raises(AuditInputError) as e:
        preflight_adapter(a)
    assert needle in e.value.one_line()


def test_nan_literal_in_config(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text('{"peft_type": "LORA", "r": NaN, "target_modules": ["q_proj"]}')
    with pytest.raises(AuditInputError, match="non-standard JSON constant NaN"):
        preflight_adapter(a)


def test_names_without_peft_prefix(tmp_path, base_model):
    msg = _fault(tmp_path, base_model, prefix="model.layers")
    assert "0 of 120 tensors match" in msg and "rename the prefix 'model.layers.' to 'base_model.model.model.layers.'" in msg


def test_untargeted_module_tensors(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", modules=("q_proj", "k_proj"), config={"target_modules": ["q_proj"]})
    with pytest.raises(AuditInputError, match="which target_modules does not name"):
        inspect_adapter(a, base_model.path, base_model.name)


def test_rank_must_match_r_or_rank_pattern(tmp_path, base_model):
    t = {"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(16, 576),
         "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(576, 16)}
    assert "has rank 16 but the config says 4" in _fault(tmp_path, base_model, tensors=t, modules=("q_proj",))
    ok = write_adapter(tmp_path / "ok", tensors=t, modules=("q_proj",), config={"rank_pattern": {"q_proj": 16}})
    assert inspect_adapter(ok, base_model.path, base_model.name).max_rank == 16


@needs_shared
def test_all_zero_lora_b_is_flagged(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", r=2, modules=("q_proj",), layers=1,
                      tensors={"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.ones(2, 576),
                               "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": torch.zeros(576, 2)},
                      config={"r": 2, "target_modules": ["q_proj"]})
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.no_effect and any("no effect" in w for w in info.warnings)
    assert not inspect_adapter(MEDICAL, base_model.path, base_model.name).no_effect


@pytest.mark.parametrize("card,needle", [
    ("---\nnominal_label: [math\n---\n", "not valid YAML at line"),
    ("---\nnominal_label: math\n", "no closing '---'"),
    ("---\nnominal_label: 3\n---\n", "nominal_label is int, not a string"),
])
def test_broken_model_card_front_matter_is_a_warning_not_silence(tmp_path, base_model, card, needle):
    a = write_adapter(tmp_path / "a", layers=1, card=card)
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.nominal_label is None
    problems = [w for w in info.warnings if w.startswith("model card README.md: front matter ignored")]
    assert len(problems) == 1 and needle in problems[0], info.warnings


def test_readable_card_without_a_label_gives_no_warning(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", layers=1, card="---\nlicense: mit\n---\n# card\n")
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.nominal_label is None and not any("model card" in w for w in info.warnings)


def test_a_base_folder_without_a_recorded_name_is_not_a_base_mismatch(tmp_path, base_model):
    """A copy of a base folder whose config.json lacks _name_or_path: compared by folder name, and
    where that differs, reported as unknown (not as another model, which the policy may fail)."""
    from auditor.inspect.declared_base import declared_base_status

    def _declared_base_warnings(declared: str, base_name: str) -> list[str]:
        return declared_base_status(declared, base_name)[1]
    from auditor.inspect.base_model import resolve_base

    declared = "HuggingFaceTB/SmolLM2-135M-Instruct"
    for folder_name, mismatch in (("SmolLM2-135M-Instruct", None), ("my-copy", "records no model name")):
        copy = tmp_path / folder_name
        copy.mkdir()
        for f in base_model.path.iterdir():
            if f.name != "config.json":
                (copy / f.name).symlink_to(f)
        cfg = json.loads((base_model.path / "config.json").read_text())
        cfg.pop("_name_or_path", None)
        (copy / "config.json").write_text(json.dumps(cfg))
        base = resolve_base(str(copy))
        assert base.name == str(copy.resolve())
        warnings = _declared_base_warnings(declared, base.name)
        assert not any("declares base" in w for w in warnings), warnings
        assert declared_base_status(declared, base.name)[0] == ("match" if mismatch is None else "unknown")
        if mismatch is None:
            assert warnings == []
        else:
            assert len(warnings) == 1 and mismatch in warnings[0]
    assert any("declares base" in w for w in _declared_base_warnings("meta-llama/Llama-3.2-1B", declared))
    assert declared_base_status("meta-llama/Llama-3.2-1B", declared)[0] == "mismatch"
