"""Which chat template renders each variant's prompts (``--chat-template base|adapter|FILE``).

* ``adapter`` (the default): the base variant is prompted with the base's template; each adapter
  variant (``--baseline`` included) with the template its folder ships when it differs from the
  base's, since that is the template it was trained with and the one
  ``AutoTokenizer.from_pretrained(adapter_dir)`` deploys it with; an adapter that ships none, or the
  base's own, gets the base's. Paired prompts then differ by the template, which the adapter card,
  results.json and the terminal say.
* ``base``: every variant gets the base's template (paired prompts identical); an adapter whose own
  template differs is warned about.
* ``FILE``: every variant gets the Jinja template in ``FILE`` (checked before any model loads).

The prompts are encoded with the base's tokenizer, except an adapter variant trained with added
tokens (``AdapterInfo.vocab_resize``): its prompts are rendered and encoded with its own tokenizer
(``tokenizer: adapter``), whose length its saved embedding rows have.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple

from ..errors import AuditInputError
from ..records import AdapterInfo, PromptTemplate, TokenizerFiles
from .tokenizer_files import base_tokenizer, template_fault, template_sha256

#: ``--chat-template`` words; anything else is a file
MODES = ("adapter", "base")


def load_template_file(path: str | Path, base_path: Path) -> str:
    """The text of a ``--chat-template FILE``, checked with transformers' own Jinja environment.

    Raises:
        AuditInputError: the file is missing, unreadable, not UTF-8, empty, or not a chat template
            that compiles and renders a short conversation (naming the file and the fault).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise AuditInputError(p, f"--chat-template: no such file (give {' or '.join(MODES)}, or a Jinja template file)")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AuditInputError(p, f"--chat-template: cannot be read as UTF-8 text ({type(e).__name__})") from None
    if not text.strip():
        raise AuditInputError(p, "--chat-template: the file is empty")
    fault = template_fault(text, base_tokenizer(str(base_path)))
    if fault:
        raise AuditInputError(p, f"--chat-template: {fault}")
    return text


def base_template(base_path: Path) -> PromptTemplate:
    """The base's own template (its tokenizer's ``chat_template``).

    Raises:
        AuditInputError: the base's tokenizer has no chat template.
    """
    tok = base_tokenizer(str(base_path))
    text = tok.chat_template if isinstance(tok.chat_template, str) else None
    if not text:
        raise AuditInputError(base_path, "the base's tokenizer has no chat template; give one with --chat-template FILE")
    where = next((str(base_path / f) for f in ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")
                  if (base_path / f).is_file()), str(base_path))
    return PromptTemplate(chat_template="base", template_file=where, template_sha256=template_sha256(text),
                          tokenizer="base", tokenizer_path=str(base_path), text=text)


class TemplateChoice(NamedTuple):
    """What :func:`choose_templates` decided: each variant's template, and the warnings each adapter's
    card carries about it (variant → warnings, in the order found; every adapter variant has an entry)."""

    templates: dict[str, PromptTemplate]
    warnings: dict[str, tuple[str, ...]]


def choose_templates(mode: str, base_path: Path, adapters: dict[str, AdapterInfo]) -> TemplateChoice:
    """The template of every variant (``base`` and each key of ``adapters``), and what each adapter's card
    says about it.

    Args:
        mode: ``adapter``, ``base`` or a template file (see the module doc).
        base_path: the base model folder.
        adapters: variant → the adapter's inspection (its ``tokenizer_files`` compared with the base).

    Raises:
        AuditInputError: the ``FILE`` is not a usable template; with ``adapter``, an adapter's own
            template that is not (naming its file and the fault).
    """
    out, warnings = _choose(mode, base_path, adapters)
    for variant, info in adapters.items():
        if info.vocab_resize is not None:
            out[variant] = dataclasses.replace(out[variant], tokenizer="adapter", tokenizer_path=info.path)
    return TemplateChoice(out, {v: tuple(w) for v, w in warnings.items()})


def _choose(mode: str, base_path: Path, adapters: dict[str, AdapterInfo]
            ) -> tuple[dict[str, PromptTemplate], dict[str, list[str]]]:
    base = base_template(base_path)
    if mode not in MODES:
        path = Path(mode).expanduser().resolve()
        text = load_template_file(path, base_path)
        chosen = PromptTemplate(chat_template=f"file:{path}", template_file=str(path),
                                template_sha256=template_sha256(text), tokenizer="base",
                                tokenizer_path=str(base_path), text=text)
        out = {"base": chosen}
    else:
        out = {"base": base}
    warnings: dict[str, list[str]] = {v: [] for v in adapters}
    for variant, info in adapters.items():
        t = info.tokenizer_files or TokenizerFiles()
        own = Path(info.path) / t.template_file if t.template_file else None
        if t.chat_template == "invalid" and mode == "adapter":
            raise AuditInputError(own, f"the adapter's chat_template is {t.template_error} (audit it with "
                                       "--chat-template base, or fix the template)")
        if mode == "adapter" and t.chat_template == "differs":
            out[variant] = PromptTemplate(chat_template="adapter", template_file=str(own),
                                          template_sha256=t.template_sha256 or "", tokenizer="base",
                                          tokenizer_path=str(base_path), text=t.template_text or "")
            warnings[variant].append(
                f"the adapter ships its own chat template ({t.template_file}), which differs from the base's: its "
                "answers are prompted with it and the base's with the base's, so each item's two prompts differ by "
                "the template (--chat-template base prompts both with the base's)")
            continue
        out[variant] = out["base"]
        if t.chat_template in ("differs", "invalid"):
            why = "it is " + t.template_error if t.chat_template == "invalid" else "it differs from the base's"
            used = "the base's" if mode in MODES else f"the one in {mode}"
            warnings[variant].append(f"the adapter's own chat template ({t.template_file}) was not used ({why}): "
                                     f"its answers were prompted with {used} (--chat-template {mode})")
        elif t.chat_template == "identical" and mode not in MODES:
            warnings[variant].append(f"the adapter's own chat template ({t.template_file}, the same as the base's) "
                                     f"was not used: its answers were prompted with the one in {mode} (--chat-template)")
    return out, warnings
