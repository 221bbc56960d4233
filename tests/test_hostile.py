"""Hostile and broken inputs: every fault kind is built here, by the test,
and must end in one line naming the file and the fault, exit code 2, no traceback,
before any model is loaded; bounded fuzzing of the safetensors reader and the
policy loader; untrusted text in every output.

A one-line stderr also proves nothing was loaded: the audit prints a ``base: ...``
line (and a progress bar) before the model is loaded for generation.
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import tracemalloc
from pathlib import Path

import pytest
import torch
from conftest import HIDDEN, KV, assert_one_line_error, write_adapter
from safetensors.torch import load_file, save_file
from test_cli import audit

from auditor.errors import AuditInputError
from auditor.inspect.adapter import inspect_adapter, preflight_adapter

VOCAB = 49_152  # SmolLM2's vocabulary
Q = "base_model.model.model.layers.{}.self_attn.q_proj"
V = "base_model.model.model.layers.{}.self_attn.v_proj"


def _weights(a: Path) -> Path:
    return a / "adapter_model.safetensors"


def _raw_safetensors(path: Path, header: dict | bytes, data: bytes = b"", length: int | None = None) -> Path:
    """A safetensors file written byte by byte: 8-byte little-endian header length, header, data."""
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h) if length is None else length) + h + data)
    return path


def _edit_tensors(a: Path, edit) -> Path:
    t = load_file(str(_weights(a)))
    edit(t)
    save_file(t, str(_weights(a)))
    return a


# ---- 1. pickle checkpoints renamed to .safetensors: never unpickled ------------------------------------------


@pytest.mark.parametrize("head,needle", [
    (b"PK\x03\x04", "zip/pickle PyTorch checkpoint renamed to .safetensors; refused (never unpickled)"),
    (b"\x80\x04\x95", "is a pickle file (a legacy torch.save checkpoint?) renamed to .safetensors"),
    (b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.", "is a pickle file"),  # torch.save's legacy format
])
def test_pickle_renamed_to_safetensors_is_never_unpickled(cli, tmp_path, head, needle):
    a = write_adapter(tmp_path / "a")
    # a payload that would run code if anything unpickled it
    _weights(a).write_bytes(head + b"cos\nsystem\n(S'touch " + str(tmp_path / "pwned").encode() + b"'\ntR." + b"\0" * 64)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors", needle)
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "o").exists()


def test_bin_weights_file_argument_is_refused(cli, tmp_path):
    f = tmp_path / "adapter_model.bin"
    torch.save({"x": torch.zeros(1)}, f)
    assert_one_line_error(cli(f, "--out", tmp_path / "o"), "adapter_model.bin", "pickle checkpoints are refused")


@pytest.mark.parametrize("allow_bin", [(), ("--allow-bin",)])
def test_a_file_that_is_no_checkpoint_is_told_what_an_adapter_is(cli, tmp_path, allow_bin):
    f = tmp_path / "README.md"
    f.write_text("# my adapter\n")
    line = assert_one_line_error(cli(f, "--out", tmp_path / "o", *allow_bin), "README.md", "is not an adapter",
                                 "PEFT adapter folder", "adapter_model.safetensors")
    assert "--allow-bin" not in line and "pickle" not in line


# ---- 2. Git LFS pointer ----------------------------------------------------------------------------------------


def test_lfs_pointer_says_weights_not_downloaded(cli, tmp_path):
    a = write_adapter(tmp_path / "a")
    _weights(a).write_text("version https://git-lfs.github.com/spec/v1\n"
                           "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 1886208\n")
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          "LFS pointer, weights not downloaded")


# ---- 3. broken safetensors --------------------------------------------------------------------------------------

F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("case,needle", [
    ("truncated", "the header declares"),
    ("header_longer_than_file", "the header declares 4,096 bytes but the file has"),
    ("not_json", "corrupt safetensors file: Error while deserializing header: invalid JSON"),
    ("overlap", "invalid offset for tensor"),
    ("past_end", "file not fully covered"),
    ("unknown_dtype", "unknown variant `F99`"),
    ("int_dtype", "has dtype I64; adapter weights must be F16, BF16, F32, F64"),
    ("fp4_dtype", "has dtype F4"),
    ("shape_overflow", "overflow computing buffer size"),
    ("empty_tensor", "is empty (shape [0])"),
    ("no_tensors", "contains no tensors"),
    ("seven_bytes", "too short to be a safetensors file"),
])
def test_broken_safetensors(tmp_path, case, needle):
    a = write_adapter(tmp_path / "a")
    w = _weights(a)
    if case == "truncated":
        w.write_bytes(w.read_bytes()[:1000])
    elif case == "header_longer_than_file":
        _raw_safetensors(w, b"{}", length=4096)
    elif case == "not_json":
        _raw_safetensors(w, b"<html>404 Not Found</html>")
    elif case == "overlap":
        _raw_safetensors(w, {"a": F32x2, "b": {**F32x2, "data_offsets": [4, 12]}}, b"\0" * 12)
    elif case == "past_end":
        _raw_safetensors(w, {"a": {**F32x2, "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8)
    elif case == "unknown_dtype":
        _raw_safetensors(w, {"a": {**F32x2, "dtype": "F99"}}, b"\0" * 8)
    elif case == "int_dtype":
        _raw_safetensors(w, {"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8)
    elif case == "fp4_dtype":
        _raw_safetensors(w, {"a": {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}}, b"\0")
    elif case == "shape_overflow":
        _raw_safetensors(w, {"a": {**F32x2, "shape": [2 ** 40, 2 ** 40]}}, b"\0" * 8)
    elif case == "empty_tensor":
        _raw_safetensors(w, {"a": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}})
    elif case == "no_tensors":
        _raw_safetensors(w, {"__metadata__": {"format": "pt"}})
    elif case == "seven_bytes":
        w.write_bytes(b"\x02\0\0\0\0\0\0")
    with pytest.raises(AuditInputError) as e:
        preflight_adapter(a)
    msg = e.value.one_line()
    assert msg.startswith(str(w)) and needle in msg and "\n" not in msg


def test_multi_gigabyte_header_is_refused_without_allocating_it(tmp_path):
    a = write_adapter(tmp_path / "a")
    w = _raw_safetensors(_weights(a), b'{"a": ', length=6 * 2 ** 30)  # declares a 6 GiB header
    tracemalloc.start()
    with pytest.raises(AuditInputError, match="the header declares 6,442,450,944 bytes but the file has 14"):
        preflight_adapter(a)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20  # read 8 bytes, compared, stopped
    assert_one_line_error(audit(a, "--out", tmp_path / "o"), str(w), "header declares 6,442,450,944 bytes")


def test_header_within_the_file_but_over_the_library_limit(tmp_path):
    a = write_adapter(tmp_path / "a")
    with open(_weights(a), "wb") as f:  # sparse: 120 MB of header that is never read
        f.write(struct.pack("<Q", 120_000_000) + b"{")
        f.truncate(8 + 120_000_000)
    with pytest.raises(AuditInputError, match="the header declares 120,000,000 bytes \\(at most 100,000,000"):
        preflight_adapter(a)


# ---- 4. NaN / Inf ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype,value", [(torch.bfloat16, float("inf")), (torch.float16, float("-inf")),
                                         (torch.float32, float("nan"))])
def test_nan_or_inf_in_any_lora_tensor(cli, tmp_path, dtype, value):
    def poison(t):
        for k in t:
            t[k] = t[k].to(dtype)
        t[V.format(29) + ".lora_B.weight"][3, 1] = value  # the very last module

    a = _edit_tensors(write_adapter(tmp_path / "a"), poison)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          f"tensor {V.format(29)}.lora_B.weight contains NaN or Inf values")


# ---- 5. an adapter with no effect: a policy verdict, not an input error --------------------------------------


def _zero(kind: str):
    def edit(t):
        for k in t:
            if f".{kind}." in k:
                t[k] = torch.zeros_like(t[k])
    return edit


@pytest.mark.parametrize("kind", ["lora_B", "lora_A"])
def test_all_zero_factor_means_no_effect(tmp_path, base_model, kind):
    a = _edit_tensors(write_adapter(tmp_path / "a"), _zero(kind))
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.no_effect and any(w.startswith("adapter has no effect") for w in info.warnings)


def test_one_trained_module_is_an_effect(tmp_path, base_model):
    def edit(t):
        _zero("lora_B")(t)
        t[Q.format(7) + ".lora_B.weight"][0, 0] = 0.5

    info = inspect_adapter(_edit_tensors(write_adapter(tmp_path / "a"), edit), base_model.path, base_model.name)
    assert not info.no_effect


@pytest.mark.slow
def test_no_effect_adapter_fails_by_policy_in_the_report(tmp_path, cli):
    """Default policy: on_no_effect: fail. Exit 1 with a failed rule in every report, not an input error."""
    a = _edit_tensors(write_adapter(tmp_path / "a", layers=2), _zero("lora_B"))
    out = tmp_path / "o"
    proc = cli(a, "--capability", "knowledge", "--limit", "1", "--out", out)
    assert proc.returncode == 1, proc.stderr
    r = json.loads((out / "results.json").read_text())
    (rule,) = [x for x in r["verdict"]["rules"] if x["rule"] == "adapter has an effect"]
    assert rule["outcome"] == "fail" and "cannot change the base model" in rule["reason"]
    assert r["adapter"]["no_effect"] is True
    assert "adapter has an effect" in (out / "junit.xml").read_text()
    assert "adapter has an effect" in (out / "summary.md").read_text()
    # the same adapter under a policy that only warns
    p = tmp_path / "warn.yaml"
    p.write_text("version: 1\non_no_effect: warn\n")
    proc = cli(a, "--capability", "knowledge", "--limit", "1", "--policy", p, "--out", tmp_path / "w")
    r = json.loads((tmp_path / "w" / "results.json").read_text())
    assert [x["outcome"] for x in r["verdict"]["rules"] if x["rule"] == "adapter has an effect"] == ["warn"]


# ---- 6. tensor names that match no module of the base ----------------------------------------------------------


@pytest.mark.parametrize("prefix,old,new", [
    ("base_model.model.layers", "base_model.model.layers.", "base_model.model.model.layers."),  # inner model. lost
    ("model.layers", "model.layers.", "base_model.model.model.layers."),  # saved without PEFT's prefix
    ("base_model.model.model.model.layers", "base_model.model.model.model.", "base_model.model.model."),
])
def test_prefix_mismatch_reports_counts_and_the_fix(cli, tmp_path, prefix, old, new):
    a = write_adapter(tmp_path / "a", prefix=prefix)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          "0 of 120 tensors match a module of the base (HuggingFaceTB/SmolLM2-135M-Instruct)",
                          f"rename the prefix {old!r} to {new!r} in the tensor names (then 120 of 120 match)")


def test_some_tensors_unmatched_is_refused_too(tmp_path, base_model):
    def edit(t):
        for suffix in ("lora_A.weight", "lora_B.weight"):
            t["base_model.model.layers.29.self_attn.q_proj." + suffix] = t.pop(f"{Q.format(29)}.{suffix}")

    a = _edit_tensors(write_adapter(tmp_path / "a"), edit)
    with pytest.raises(AuditInputError, match="118 of 120 tensors match.*then 120 of 120 match"):
        inspect_adapter(a, base_model.path, base_model.name)


# ---- 7. DoRA: the tensors decide ---------------------------------------------------------------------------------


def _dora(folder: Path, use_dora: bool | None, layers: int = 2, partial: bool = False) -> Path:
    config = {} if use_dora is None else {"use_dora": use_dora}
    a = write_adapter(folder, layers=layers, config=config)

    def edit(t):
        for i in range(layers - (1 if partial else 0)):
            t[Q.format(i) + ".lora_magnitude_vector"] = torch.rand(HIDDEN) + 0.5
            t[V.format(i) + ".lora_magnitude_vector"] = torch.rand(KV) + 0.5
    return _edit_tensors(a, edit)


@pytest.mark.parametrize("use_dora", [True, False, None])
def test_dora_tensors_decide_whatever_the_config_says(tmp_path, base_model, use_dora):
    info = inspect_adapter(_dora(tmp_path / "a", use_dora), base_model.path, base_model.name)
    assert info.dora and not info.no_effect
    assert "DoRA adapter (lora_magnitude_vector tensors): runs on the hf backend (transformers + peft); " \
           "vLLM cannot serve DoRA adapters" in info.warnings
    said = [w for w in info.warnings if "the tensors decide" in w]
    assert said == ([] if use_dora else ["adapter_config.json says use_dora: false but the weights hold "
                                         "lora_magnitude_vector tensors; audited as DoRA (the tensors decide)"])


def test_use_dora_without_magnitudes_is_plain_lora(tmp_path, base_model):
    info = inspect_adapter(write_adapter(tmp_path / "a", config={"use_dora": True}), base_model.path, base_model.name)
    assert not info.dora and any("hold no lora_magnitude_vector tensors; audited as plain LoRA" in w
                                 for w in info.warnings)


def test_partial_or_misshapen_dora_is_refused(cli, tmp_path):
    a = _dora(tmp_path / "a", True, partial=True)
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "DoRA magnitudes for 2 of 4 LoRA modules",
                          "PEFT cannot load a partial DoRA adapter")
    b = _edit_tensors(_dora(tmp_path / "b", True), lambda t: t.update({Q.format(0) + ".lora_magnitude_vector":
                                                                        torch.ones(KV)}))
    assert_one_line_error(cli(b, "--out", tmp_path / "o"), "has shape [192]; a DoRA magnitude of this module has 576")


@pytest.mark.slow
def test_dora_runs_on_the_hf_backend_even_when_the_config_denies_it(tmp_path, base_model):
    from auditor.backends.hf.backend import HFBackend
    from auditor.records import Item, Request, Variant

    a = _dora(tmp_path / "a", use_dora=False)
    # static batching: the path that can mix variants in one batch (continuous streams never do)
    backend = HFBackend(base_model.path, [Variant.of_folder("adapter", a, "dora-test")], batch_size=2, batching="static")
    item = Item(id="t/0", capability="math", group="CAN", messages=({"role": "user", "content": "What is 2+3?"},), max_new_tokens=4, target={})
    gens = backend.generate([Request(item=item, variant="base"), Request(item=item, variant="adapter")])
    assert [g.variant for g in gens] == ["base", "adapter"] and all(g.n_tokens > 0 for g in gens)
    q_proj = backend.model.base_model.model.model.layers[0].self_attn.q_proj
    assert "adapter" in q_proj.lora_magnitude_vector  # loaded as DoRA, with the adapter's magnitudes
    assert torch.equal(q_proj.lora_magnitude_vector["adapter"].weight.detach().cpu(),
                       load_file(str(_weights(a)))[Q.format(0) + ".lora_magnitude_vector"])
    assert json.loads((a / "adapter_config.json").read_text())["use_dora"] is False  # the user's folder untouched
    # peft refuses DoRA in a mixed base/adapter batch: forced, the refusal falls back to variant by variant
    assert not backend.mix_variants
    backend.mix_variants = True
    again = backend.generate([Request(item=item, variant="base"), Request(item=item, variant="adapter")], use_cache=False)
    assert [g.text for g in again] == [g.text for g in gens] and not backend.mix_variants


# ---- 8. modules_to_save with another vocabulary -----------------------------------------------------------------
# (a real adapter trained with added tokens: tests/inspect/test_added_tokens.py)


@pytest.mark.parametrize("module", ["lm_head", "model.embed_tokens"])
def test_resized_rows_without_a_tokenizer_are_refused(cli, tmp_path, module):
    name = f"base_model.model.{module}.weight"
    a = write_adapter(tmp_path / "a", layers=1, config={"modules_to_save": [module.rsplit(".", 1)[-1]]})
    _edit_tensors(a, lambda t: t.update({name: torch.zeros(49_216, HIDDEN, dtype=torch.float16)}))
    assert_one_line_error(
        cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
        f"the adapter saves 49,216 embedding rows (the base has {VOCAB:,}: it was trained with added tokens) but its "
        "folder ships no tokenizer that says which tokens they are")


def test_vocab_rows_of_another_hidden_size_are_refused(cli, tmp_path):
    a = write_adapter(tmp_path / "a", layers=1, config={"modules_to_save": ["lm_head"]})
    _edit_tensors(a, lambda t: t.update({"base_model.model.lm_head.weight": torch.zeros(VOCAB, 8)}))
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_model.safetensors",
                          f"base_model.model.lm_head.weight has shape [{VOCAB}, 8] but the base's lm_head.weight has "
                          f"[{VOCAB}, {HIDDEN}]")


def test_modules_to_save_of_other_modules_is_named_as_unsupported(tmp_path, base_model):
    a = write_adapter(tmp_path / "a", layers=1, config={"modules_to_save": ["norm"]})
    _edit_tensors(a, lambda t: t.update({"base_model.model.model.norm.weight": torch.ones(HIDDEN)}))
    with pytest.raises(AuditInputError, match=r"full copies of base modules \(modules_to_save: model.norm\) are not "
                                              "supported yet"):
        inspect_adapter(a, base_model.path, base_model.name)


# ---- 9. rank_pattern / alpha_pattern: real ranks ----------------------------------------------------------------


def test_rank_pattern_real_ranks_above_r_are_used(tmp_path, base_model):
    g = torch.Generator().manual_seed(1)
    t = {}
    for i in range(30):
        rq = 16 if i < 4 else 4  # rank_pattern raises the first four layers' q_proj to 16 > r
        t[Q.format(i) + ".lora_A.weight"] = torch.randn(rq, HIDDEN, generator=g) * 0.01
        t[Q.format(i) + ".lora_B.weight"] = torch.randn(HIDDEN, rq, generator=g) * 0.01
    a = write_adapter(tmp_path / "a", tensors=t, modules=("q_proj",),
                      config={"rank_pattern": {r"model\.layers\.[0-3]\.self_attn\.q_proj": 16},
                              "alpha_pattern": {r"model\.layers\.[0-3]\.self_attn\.q_proj": 32}})
    info = inspect_adapter(a, base_model.path, base_model.name)
    assert info.r == 4 and info.max_rank == 16
    assert sorted(set(info.ranks.values())) == [4, 16] and info.ranks["model.layers.3.self_attn.q_proj"] == 16
    assert sum(r == 16 for r in info.ranks.values()) == 4


def test_real_rank_above_r_without_rank_pattern_is_refused(cli, tmp_path):
    t = {Q.format(0) + ".lora_A.weight": torch.zeros(8, HIDDEN), Q.format(0) + ".lora_B.weight": torch.zeros(HIDDEN, 8)}
    a = write_adapter(tmp_path / "a", tensors=t, modules=("q_proj",), config={"rank_pattern": {"v_proj": 8}})
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "model.layers.0.self_attn.q_proj has rank 8 but the "
                                                             "config says 4 (r / rank_pattern)")


@pytest.mark.parametrize("key", ["rank_pattern", "alpha_pattern"])
def test_pattern_key_that_is_not_a_regex(cli, tmp_path, key):
    a = write_adapter(tmp_path / "a", config={key: {"q_proj(": 8}})
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_config.json",
                          f"{key} key 'q_proj(' is not a valid regex")


# ---- 10. configs that are not PEFT configs -----------------------------------------------------------------------

MLX_CONFIG = {"model": "mlx-community/SmolLM2-135M-Instruct", "fine_tune_type": "lora", "num_layers": 16,
              "lora_parameters": {"rank": 8, "alpha": 16, "dropout": 0.0, "scale": 10.0}, "iters": 600}


def test_mlx_lm_config_is_named(cli, tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text(json.dumps(MLX_CONFIG))
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), "adapter_config.json",
                          "not a PEFT config (no peft_type key); it looks like an MLX-LM training config "
                          "(lora_parameters)")


def test_mlx_lm_adapter_folder_is_named(cli, tmp_path):
    a = tmp_path / "mlx"
    a.mkdir()
    (a / "adapter_config.json").write_text(json.dumps(MLX_CONFIG))
    save_file({"model.layers.0.self_attn.q_proj.lora_a": torch.zeros(HIDDEN, 8)}, str(a / "adapters.safetensors"))
    assert_one_line_error(cli(a, "--out", tmp_path / "o"), str(a),
                          "no adapter_model.safetensors, but adapters.safetensors: this looks like an MLX-LM "
                          "adapter folder")


def test_model_config_in_place_of_the_adapter_config(tmp_path):
    a = write_adapter(tmp_path / "a")
    (a / "adapter_config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    with pytest.raises(AuditInputError, match="looks like a model's config.json"):
        preflight_adapter(a)


# ---- untrusted text: no ANSI/OSC escape reaches the terminal -----------------------------------------------------

EVIL = "evil\x1b[2J\x1b]0;pwned\x07\x9b31m<script>alert(1)</script>[red]markup[/red]"


def test_error_lines_cannot_inject_terminal_escapes(tmp_path):
    a = write_adapter(tmp_path / "a", layers=1)
    _edit_tensors(a, lambda t: t.update({EVIL + ".lora_A.weight": torch.zeros(4, HIDDEN),
                                         EVIL + ".lora_B.weight": torch.zeros(HIDDEN, 4)}))
    proc = audit(a, "--out", tmp_path / "o")
    assert_one_line_error(proc, "evil[2J]0;pwned31m<script>alert(1)</script>[red]markup[/red]")
    for ch in ("\x1b", "\x07", "\x9b"):
        assert ch not in proc.stderr


def test_report_outputs_escape_untrusted_text(tmp_path):
    """Model outputs and adapter card/config text, through `audit report` (HTML, Markdown, JUnit, terminal)."""
    import xml.etree.ElementTree as ET

    outs, proc = _report_with_hostile_text(tmp_path, audit)
    for name in ("report.html", "summary.md", "junit.xml"):
        assert "<script>alert" not in outs[name] and "<img src=x" not in outs[name], name
    for name in ("summary.md", "junit.xml"):
        assert not {"\x1b", "\x07", "\x9b"} & set(outs[name]), name
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outs["report.html"]
    ET.parse(io.StringIO(outs["junit.xml"]))
    assert not {"\x1b", "\x07", "\x9b"} & set(proc.stderr)
    assert "[red]markup[/red]" in proc.stderr  # shown as text, not taken as markup


def test_report_html_drops_control_characters(cli, tmp_path):
    outs, _ = _report_with_hostile_text(tmp_path, cli)
    assert not {"\x1b", "\x07", "\x9b"} & set(outs["report.html"])


def _report_with_hostile_text(tmp_path: Path, run) -> tuple[dict[str, str], subprocess.CompletedProcess]:
    """`audit report` on a results.json whose model outputs and adapter card/config text are hostile."""
    from report_data import _results

    r = _results()
    for it in r["items"]:
        it["adapter"]["text"] = it["base"]["text"] = EVIL + " <img src=x onerror=alert(2)> | `code` |"
    # nominal_label comes from the adapter's model card; with a DriftScore every output shows it
    r["drift"].update(label=EVIL, label_source="model card", target_metric="math.numeric_match",
                      target_gain_pts=0.0, off_target_gain_pts=1.0, drift_score_pts=1.0)
    r["adapter"].update(declared_base=EVIL, nominal_label=EVIL, path=str(tmp_path / "adapter"), warnings=[EVIL])
    r["verdict"]["warnings"] = [EVIL]
    r["verdict"]["rules"][0]["reason"] = EVIL
    r["verdict"]["rules"][0]["rule"] = EVIL
    src = tmp_path / "results.json"
    src.write_text(json.dumps(r))
    proc = run("report", src, "--out", tmp_path / "out")
    assert proc.returncode == 1, proc.stderr  # the results.json's verdict: fail
    return {p.name: p.read_text() for p in (tmp_path / "out").iterdir()}, proc


# ---- fuzzing (bounded; fuzz/fuzz_inputs.py is the long run) -----------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
_entry = st.fixed_dictionaries({}, optional={
    "dtype": st.sampled_from(["F32", "F16", "BF16", "I64", "BOOL", "F8_E4M3", "F4", "X", ""]) | st.integers(),
    "shape": st.lists(st.integers(-2, 2 ** 65), max_size=4) | st.none() | st.text(max_size=3),
    "data_offsets": st.lists(st.integers(-4, 2 ** 64), max_size=3) | st.none(),
})
_header = st.dictionaries(st.text(max_size=40) | st.sampled_from([Q.format(0) + ".lora_A.weight", "__metadata__"]),
                          _entry, max_size=4)


def _only_clean_errors(fn) -> None:
    try:
        fn()
    except AuditInputError as e:
        assert "\n" not in e.one_line() and e.path


@FUZZ
@given(header=_header, data=st.binary(max_size=64), length=st.none() | st.integers(0, 2 ** 64 - 1),
       raw=st.none() | st.binary(max_size=80))
def test_fuzz_safetensors_reader_reaches_only_the_clean_error(tmp_path_factory, header, data, length, raw):
    a = tmp_path_factory.mktemp("fz")
    (a / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 2, "target_modules": ["q_proj"]}))
    if raw is not None:
        _weights(a).write_bytes(raw)
    else:
        _raw_safetensors(_weights(a), header, data, length)
    _only_clean_errors(lambda: preflight_adapter(a))


_policy_keys = st.sampled_from(["version", "metrics", "statistics", "labels", "drift", "on_no_effect", "mode",
                                "action", "max_drop_pts", "max_dorp_pts", "confidence", "min_items", "target",
                                "off_target", "math.numeric_match", "verbosity.words", "math", "x"])
_yaml_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats() | st.text(max_size=12)
    | st.sampled_from(["fail", "warn", "point", "confident", "bh"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_policy_keys, inner, max_size=4),
    max_leaves=12)


@FUZZ
@given(doc=st.dictionaries(_policy_keys, _yaml_value, max_size=5), version=st.sampled_from([1, 1, 2, "1", None]),
       junk=st.none() | st.text(max_size=60))
def test_fuzz_policy_loader_reaches_only_the_clean_error(tmp_path_factory, doc, version, junk):
    import yaml

    from auditor.policy.loading import load_policy
    from auditor.scorers import SCORERS
    from auditor.suite.manifest import preset_metric_units

    units = preset_metric_units(SCORERS)
    p = tmp_path_factory.mktemp("fz") / "policy.yaml"
    text = yaml.safe_dump({"version": version, **doc}, allow_unicode=True) if junk is None else junk
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    _only_clean_errors(lambda: load_policy(p, sorted(units), units))


@pytest.mark.parametrize("text,needle", [
    ("version: 1\nx: " + "[" * 40_000 + "\n", "line 2: YAML nested too deeply (more than 32 brackets)"),
    ("a: &a [x, x]\nb: &b [*a, *a]\nversion: 1\n", "line 2: YAML aliases (*name) are not allowed in a policy"),
    ("version: 1\n" + "# padding\n" * 120_000, "bytes; a policy is at most 1,048,576 bytes"),
])
def test_policy_that_would_stall_the_parser_is_refused_quickly(tmp_path, text, needle):
    import time

    from auditor.policy.loading import load_policy

    p = tmp_path / "p.yaml"
    p.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(AuditInputError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        load_policy(p, ["math.numeric_match"])
    assert time.perf_counter() - t0 < 2


def test_model_card_front_matter_that_would_stall_the_parser_gives_no_label(tmp_path):
    from auditor.inspect.card_label import model_card_label

    a = write_adapter(tmp_path / "a", card="---\nnominal_label: " + "[" * 40_000 + "\n---\n")
    assert model_card_label(a)[0] is None
    (a / "README.md").write_text("---\nx: &a [1]\nnominal_label: *a\n---\n")
    assert model_card_label(a)[0] is None
