"""The tokenizer files an adapter folder ships, against the base's tokenizer.

Adapters saved by a trainer (TRL's ``SFTTrainer``, ``Trainer.save_model``) usually carry the
tokenizer they were trained with: ``tokenizer_config.json`` (often with a ``chat_template``),
``special_tokens_map.json``, sometimes ``tokenizer.json``, ``chat_template.jinja`` or
``added_tokens.json``. :func:`inspect_tokenizer_files` reads them as files (nothing is loaded
from the adapter folder with ``from_pretrained``, nothing executed) and compares them with the
base's tokenizer: the chat template (text), the vocabulary (every token the adapter's files name
must have the base's id), the special tokens. Which template then renders each variant's prompts
is decided by :mod:`auditor.inspect.chat_template`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import AuditInputError
from ..records import TokenizerFiles, VocabResize
from ..util.jsonio import read_json_strict

#: the tokenizer files looked for in an adapter folder (as transformers' ``from_pretrained`` names them)
TOKENIZER_FILES = ("added_tokens.json", "chat_template.jinja", "chat_template.json", "merges.txt",
                   "special_tokens_map.json", "tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                   "vocab.json")
SPECIAL = ("bos_token", "eos_token", "pad_token", "unk_token")
#: a short conversation every chat template must render (a user turn, an answer, a second user turn)
PROBE = [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"},
         {"role": "user", "content": "And 3 + 3?"}]
_MAX_NEW_TOKENS_LISTED = 20


def template_sha256(text: str) -> str:
    """sha256 (hex) of a chat template's text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=4)
def base_tokenizer(base_path: str) -> Any:
    """The base's tokenizer (``AutoTokenizer.from_pretrained``), loaded once per base folder."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(base_path)


def template_fault(text: str, tokenizer: Any) -> str | None:
    """Why ``text`` is not a usable chat template (None: it is): it must compile with transformers'
    own Jinja environment and render :data:`PROBE` with a generation prompt to a string holding
    each message's content."""
    import jinja2

    try:
        out = tokenizer.apply_chat_template(PROBE, chat_template=text, tokenize=False, add_generation_prompt=True)
    except jinja2.TemplateSyntaxError as e:
        return f"not valid Jinja: line {e.lineno}: {e.message}"
    except (jinja2.TemplateError, TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        return f"fails to render a user/assistant/user conversation: {type(e).__name__}: {' '.join(str(e).split())[:120]}"
    if not isinstance(out, str) or not all(m["content"] in out for m in PROBE):
        return "renders a conversation without its messages"
    return None


def adapter_template(folder: Path) -> tuple[str | None, str | None]:
    """The chat template an adapter folder ships and the file holding it, looked up as transformers does:
    ``chat_template.jinja``, else ``chat_template.json`` (``{"chat_template": ...}``), else
    ``tokenizer_config.json``'s ``chat_template`` (a string, or a list of named templates: ``default``).

    Raises:
        AuditInputError: the file cannot be read, or its ``chat_template`` is neither a string nor named templates.
    """
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8"), jinja.name
        except (OSError, UnicodeDecodeError) as e:
            raise AuditInputError(jinja, f"cannot be read as UTF-8 text: {e}") from None
    for name in ("chat_template.json", "tokenizer_config.json"):
        if not (folder / name).is_file():
            continue
        data = read_json_strict(folder / name)
        tpl = data.get("chat_template") if isinstance(data, dict) else None
        if tpl is None:
            continue
        if isinstance(tpl, list):
            named = {t.get("name"): t.get("template") for t in tpl if isinstance(t, dict)}
            tpl = named.get("default", next(iter(named.values()), None))
        if not isinstance(tpl, str):
            raise AuditInputError(folder / name, "chat_template must be a string or a list of {name, template}")
        return tpl, name
    return None, None


def _token_text(value: Any) -> str | None:
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _adapter_vocabulary(folder: Path, files: Sequence[str]) -> tuple[dict[str, int], dict[str, int], int | None]:
    """(full vocabulary, added tokens, declared vocab size) named by the adapter's files (content → id)."""
    vocab: dict[str, int] = {}
    added: dict[str, int] = {}
    declared = None
    if "tokenizer.json" in files:
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as e:  # noqa: BLE001 - tokenizers raises a bare Exception for a malformed file
            raise AuditInputError(folder / "tokenizer.json", f"not a tokenizers file: {' '.join(str(e).split())[:120]}") \
                from None
        vocab = tok.get_vocab(with_added_tokens=True)
        added |= {t.content: i for i, t in tok.get_added_tokens_decoder().items()}
    elif "vocab.json" in files:
        data = read_json_strict(folder / "vocab.json")
        vocab = {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
    if "tokenizer_config.json" in files:
        cfg = read_json_strict(folder / "tokenizer_config.json")
        cfg = cfg if isinstance(cfg, dict) else {}
        for i, tok in (cfg.get("added_tokens_decoder") or {}).items():
            text = _token_text(tok)
            if text is not None and str(i).isdigit():
                added[text] = int(i)
        declared = cfg.get("vocab_size") if isinstance(cfg.get("vocab_size"), int) else None
    if "added_tokens.json" in files:
        data = read_json_strict(folder / "added_tokens.json")
        added |= {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
    return vocab, added, declared


def named_tokens(folder: Path, files: Sequence[str]) -> dict[str, int]:
    """Every token the adapter's tokenizer files name (its vocabulary and added tokens), content → id.

    Raises:
        AuditInputError: a tokenizer file that cannot be read.
    """
    vocab, added, _ = _adapter_vocabulary(folder, files)
    return vocab | added


def _special_tokens(folder: Path, files: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):  # the map wins, as in transformers
        if name in files:
            data = read_json_strict(folder / name)
            if isinstance(data, dict):
                out |= {k: t for k in SPECIAL if (t := _token_text(data.get(k))) is not None}
    return out


def inspect_tokenizer_files(folder: Path, base_path: Path) -> TokenizerFiles:
    """What tokenizer files ``folder`` ships, compared with the tokenizer of the base in ``base_path``
    (loaded only when the folder ships any).

    Raises:
        AuditInputError: a tokenizer file that cannot be read (naming it and the fault).
    """
    files = sorted(f for f in TOKENIZER_FILES if (folder / f).is_file())
    if not files:
        return TokenizerFiles()
    base = base_tokenizer(str(base_path))
    base_tpl = base.chat_template if isinstance(base.chat_template, str) else None
    base_vocab = base.get_vocab()
    fields: dict[str, Any] = {}  # what the folder's files say, made into one record at the end
    text, where = adapter_template(folder)
    if text is not None:
        fault = template_fault(text, base)
        fields.update(template_text=text, template_file=where, template_sha256=template_sha256(text),
                      chat_template="invalid" if fault else
                      "identical" if base_tpl is not None and text.strip() == base_tpl.strip() else "differs",
                      template_error=fault or "")
    vocab, added, declared = _adapter_vocabulary(folder, files)
    if vocab or added:
        named = vocab | added
        new = [t if t not in base_vocab else f"{t}@{i}" for t, i in sorted(named.items(), key=lambda x: x[1])
               if base_vocab.get(t) != i]
        vocab_size = len(vocab) if vocab else declared
        same_size = vocab_size is None or vocab_size == len(base_vocab)
        fields.update(vocab_size=vocab_size, new_tokens=tuple(new[:_MAX_NEW_TOKENS_LISTED]),
                      vocabulary="identical" if not new and same_size else "differs")
    elif declared is not None:
        fields.update(vocab_size=declared, vocabulary="identical" if declared == len(base_vocab) else "differs")
    base_special = {k: _token_text(getattr(base, k, None)) for k in SPECIAL}
    return TokenizerFiles(files=tuple(files), base_vocab_size=len(base_vocab),
                          base_template_sha256=template_sha256(base_tpl) if base_tpl else None,
                          added_tokens=len(added),
                          special_tokens={k: (v, base_special[k]) for k, v in _special_tokens(folder, files).items()
                                          if v != base_special[k]}, **fields)


def tokenizer_warnings(t: TokenizerFiles, base_path: Path, resized: VocabResize | None = None) -> list[str]:
    """The adapter card's warnings about its tokenizer files (vocabulary and special tokens; the
    template's are :func:`auditor.inspect.chat_template.choose_templates`'s); ``resized``: the
    adapter saves embeddings of its own vocabulary, which its variant is then run with."""
    out = []
    if resized is not None:
        listed = f": {', '.join(resized.added[:5])}" + (", ..." if resized.n_added > 5 else "") if resized.added else ""
        out.append(f"the adapter was trained with {resized.n_added} added tokens{listed} ({resized.how}, "
                   f"{resized.base_size} → {resized.size} tokens): its answers are generated with the embeddings "
                   "resized to its tokenizer and its saved rows (hf backend), its prompts encoded with its own "
                   f"tokenizer ({resized.tokenizer_file}); the base's with the base's")
    elif t.vocabulary == "differs":
        size = f"{t.vocab_size} tokens against the base's {t.base_vocab_size}" if t.vocab_size is not None else ""
        listed = f"; not in the base's vocabulary at that id: {', '.join(t.new_tokens[:5])}" if t.new_tokens else ""
        out.append(f"the adapter's tokenizer files name another vocabulary than the base's ({size or 'see new_tokens'}"
                   f"{listed}); prompts are encoded with the base's tokenizer ({base_path}), whose vocabulary the "
                   "model's embeddings have")
    for name, (mine, base) in sorted(t.special_tokens.items()):
        out.append(f"the adapter's tokenizer files set {name} to {mine!r}, the base's is {base!r}; generation stops "
                   "at the base's eos token")
    return out
