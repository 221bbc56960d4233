"""Adapters trained with added tokens: a real PEFT save after ``resize_token_embeddings``,
built by examples/build_added_tokens_adapter.py on the embedded base, inspected, audited end to end on hf,
refused in one line on vLLM; a tokenizer shorter than the saved rows is one line, exit 2."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error

from auditor.backends.vllm.compat import vllm_importable
from auditor.inspect.adapter import inspect_adapter

ADDED = ["<|tool|>", "<|endtool|>"]


def _builder():
    spec = importlib.util.spec_from_file_location("build_added_tokens_adapter",
                                                  ROOT / "examples" / "build_added_tokens_adapter.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def added_tokens_adapter(tmp_path_factory, base_model) -> Path:
    """modules_to_save copies of embed_tokens and lm_head, 4 training steps (about 30 s on 2 cores)."""
    return _builder().build(base_model.path, tmp_path_factory.mktemp("added") / "tool-tokens", steps=4)


def _copy(src: Path, dst: Path) -> Path:
    """The adapter folder again, its 680 MB weights hard-linked (not copied)."""
    dst.mkdir(parents=True)
    for f in src.iterdir():
        (os.link if f.name == "adapter_model.safetensors" else shutil.copy)(f, dst / f.name)
    return dst


def test_inspection_records_the_resized_vocabulary(added_tokens_adapter, base_model):
    info = inspect_adapter(added_tokens_adapter, base_model.path, base_model.name)
    r = info.vocab_resize
    assert (r.base_size, r.size, r.n_added, r.added) == (49_152, 49_154, 2, tuple(ADDED))
    assert r.how == "modules_to_save" and r.modules == ("lm_head", "model.embed_tokens")
    assert r.tokenizer_file == "tokenizer.json" and not info.no_effect
    assert any("trained with 2 added tokens: <|tool|>, <|endtool|> (modules_to_save, 49152 → 49154 tokens)" in w
               for w in info.warnings)
    assert not any("prompts are encoded with the base's tokenizer" in w for w in info.warnings)


def test_trainable_token_indices_are_inspected(tmp_path, base_model):
    folder = _builder().build(base_model.path, tmp_path / "tti", how="trainable_token_indices", steps=1)
    r = inspect_adapter(folder, base_model.path, base_model.name).vocab_resize
    assert (r.base_size, r.size, r.added, r.how) == (49_152, 49_154, tuple(ADDED), "trainable_token_indices")


def test_a_tokenizer_shorter_than_the_saved_rows_is_one_line(added_tokens_adapter, tmp_path, cli, base_model):
    from transformers import AutoTokenizer

    bad = _copy(added_tokens_adapter, tmp_path / "bad")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"):
        (bad / f).unlink(missing_ok=True)
    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    tok.add_special_tokens({"additional_special_tokens": ADDED[:1]})
    tok.save_pretrained(str(bad))
    r = cli(bad, "--capability", "math", "--limit", "2", "--budget", "0", "--out", tmp_path / "o")
    assert_one_line_error(r, "tokenizer.json", "the adapter's tokenizer has 49,153 tokens, shorter than the 49,154 "
                                               "embedding rows saved in adapter_model.safetensors")
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not vllm_importable(), reason="vllm not installed (AUDITOR_NO_VLLM=1)")
def test_vllm_refuses_it_before_loading_in_one_line(added_tokens_adapter, tmp_path, cli):
    r = cli(added_tokens_adapter, "--backend", "vllm", "--out", tmp_path / "o")
    assert_one_line_error(r, "adapter_model.safetensors", "vLLM cannot serve an adapter with modules_to_save copies "
                                                          "of embed_tokens, lm_head")
    assert "--backend hf" in r.stderr and not (tmp_path / "o").exists()


def test_audited_end_to_end_on_hf(added_tokens_adapter, tmp_path, cli, base_model):
    from auditor.backends.hf.backend import HFBackend
    from auditor.records import Request
    from auditor.scorers import SCORERS
    from auditor.suite import load_suite

    # fp32: the plain backend below is compared answer for answer (its default dtype)
    r = cli(added_tokens_adapter, "--backend", "hf", "--capability", "math", "--limit", "2", "--budget", "0",
            "--dtype", "float32", "--no-cache", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    assert res["verdict"]["verdict"] == "pass"
    assert res["adapter"]["vocab_resize"] == {
        "base_size": 49152, "size": 49154, "added": ADDED, "n_added": 2, "how": "modules_to_save",
        "modules": ["lm_head", "model.embed_tokens"], "tokenizer_file": "tokenizer.json"}
    prompts = res["run"]["prompts"]
    assert prompts["adapter"]["tokenizer"] == "adapter" and prompts["base"]["tokenizer"] == "base"
    assert prompts["adapter"]["tokenizer_path"] == str(added_tokens_adapter)
    html = (tmp_path / "o" / "report.html").read_text()
    assert "resized from 49,152 to 49,154 tokens for the adapter&#39;s answers (2 added: &lt;|tool|&gt;" in html
    # the base variant keeps the base's answers: the same as a model that was never resized
    suite = load_suite("smoke", limit=2, only=("math",), scorers=SCORERS)
    plain = HFBackend(base_model.path, (), batch_size=2).generate([Request(item=it, variant="base") for it in suite.items])
    by_id = {it["id"]: it for it in res["items"]}
    assert [by_id[g.item_id]["base"]["text"] for g in plain] == [g.text for g in plain]
    assert any(by_id[g.item_id]["adapter"]["text"] != g.text for g in plain)  # 4 training steps moved the adapter
