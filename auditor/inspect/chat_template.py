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
* ``none``: plain prompts, the way lm-evaluation-harness prompts a base model without
  ``--apply_chat_template``: the item's text (its messages' contents, one blank line between them), no role
  markers and no generation prompt, after the tokenizer's BOS token where its encoder adds one
  (:func:`plain_prompt`). It is also what ``adapter`` gives a base whose tokenizer has no chat template
  (a pretrained base), and each adapter that ships none; ``base`` refuses such a base.

The prompts are encoded with the base's tokenizer, except an adapter variant trained with added
tokens (``AdapterRecord.vocab_resize``): its prompts are rendered and encoded with its own tokenizer
(``tokenizer: adapter``), whose length its saved embedding rows have.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import AuditInputError
from ..records import AdapterRecord, PromptTemplate, TokenizerFiles
from .tokenizer_files import base_tokenizer, template_fault, template_sha256

#: ``--chat-template`` words; anything else is a file
MODES = ("adapter", "base", "none")
#: sha256 stand-in of the plain prompting (no template text): :func:`plain_template`
_PLAIN_MARK = "adapter-auditor plain prompts v1: message contents joined by a blank line, BOS where the tokenizer adds it"


def plain_template(tokenizer_path: Path) -> PromptTemplate:
    """The ``none`` prompting (:func:`plain_prompt`) as a :class:`PromptTemplate` (``chat_template: none``,
    no template file; its sha256 is that of a fixed description, so the prompting is keyed like a template)."""
    return PromptTemplate(chat_template="none", template_file="", template_sha256=template_sha256(_PLAIN_MARK),
                          tokenizer="base", tokenizer_path=str(tokenizer_path), text="")


def plain_prompt(messages: Sequence[Mapping[str, str]], tokenizer: Any) -> str:
    """A plain prompt: the messages' contents joined by a blank line (``"\\n\\n"``), no role markers, after the
    tokenizer's BOS token when encoding plain text with it adds one (Gemma's and Llama's do, SmolLM2's does
    not), since the backends encode rendered prompts with ``add_special_tokens=False``. As
    lm-evaluation-harness prompts a base model without a chat template (the item's text; its HF model
    adds BOS for Gemma).

    Args:
        messages: the item's chat messages (``role``, ``content``), in order.
        tokenizer: a transformers tokenizer.
    """
    text = "\n\n".join(str(m.get("content", "")) for m in messages)
    bos = getattr(tokenizer, "bos_token", None)
    if bos and getattr(tokenizer, "bos_token_id", None) is not None:
        ids = tokenizer("a")["input_ids"]
        if ids and ids[0] == tokenizer.bos_token_id:
            return str(bos) + text
    return text


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


def fold_system(messages: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The conversation with its system message(s) put before the first user message (a blank line between),
    for a template that rejects a system role (:attr:`PromptTemplate.system_role` ``folded``); Gemma's
    template does the same itself. A conversation without a system message is returned unchanged.

    Args:
        messages: ``role`` / ``content`` dicts, in order.
    """
    system = [str(m["content"]) for m in messages if m.get("role") == "system"]
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    for m in rest:
        if m.get("role") == "user":
            m["content"] = "\n\n".join([*system, str(m["content"])])
            return rest
    return [{"role": "user", "content": "\n\n".join(system)}, *rest]


def rejects_system_role(text: str, tokenizer: Any, args: Mapping[str, Any] | None = None) -> bool:
    """Whether a chat template raises on a conversation with a system message but renders it without one
    (Mistral-7B-Instruct's "Conversation roles must alternate user/assistant/user/assistant/...")."""
    from jinja2 import TemplateError

    def renders(messages: list[dict[str, str]]) -> bool:
        try:
            tokenizer.apply_chat_template(messages, chat_template=text, tokenize=False, add_generation_prompt=True,
                                          **dict(args or {}))
        except TemplateError:
            return False
        return True
    user = {"role": "user", "content": "What is 2 + 2?"}
    return not renders([{"role": "system", "content": "Be brief."}, user]) and renders([user])


def parse_template_args(pairs: Sequence[str]) -> dict[str, str | int | float | bool]:
    """``--chat-template-arg KEY=VALUE`` pairs as ``apply_chat_template`` keyword arguments: a VALUE that is
    JSON (``false``, ``3``, ``0.5``) is read as such, any other as a string.

    Raises:
        AuditInputError: a pair without ``=``, an empty or non-identifier KEY, a JSON value that is not a
            scalar, or a KEY given twice.
    """
    import json

    out: dict[str, str | int | float | bool] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise AuditInputError("--chat-template-arg", f"{pair!r}: give KEY=VALUE (e.g. enable_thinking=false)")
        if key in out:
            raise AuditInputError("--chat-template-arg", f"{key} is given twice")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if not isinstance(value, (str, int, float, bool)) or value is None:
            raise AuditInputError("--chat-template-arg", f"{pair!r}: VALUE must be a string, number or true/false")
        out[key] = value
    return out


def base_template(base_path: Path) -> PromptTemplate | None:
    """The base's own template (its tokenizer's ``chat_template``), or None when it has none (a pretrained
    base: :func:`choose_templates` then prompts it plainly)."""
    tok = base_tokenizer(str(base_path))
    text = tok.chat_template if isinstance(tok.chat_template, str) else None
    if not text:
        return None
    where = next((str(base_path / f) for f in ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")
                  if (base_path / f).is_file()), str(base_path))
    return PromptTemplate(chat_template="base", template_file=where, template_sha256=template_sha256(text),
                          tokenizer="base", tokenizer_path=str(base_path), text=text)


class TemplateChoice(NamedTuple):
    """What :func:`choose_templates` decided: each variant's template, and the warnings each adapter's
    card carries about it (variant → warnings, in the order found; every adapter variant has an entry)."""

    templates: dict[str, PromptTemplate]
    warnings: dict[str, tuple[str, ...]]


def choose_templates(mode: str, base_path: Path, adapters: dict[str, AdapterRecord],
                     args: Mapping[str, str | int | float | bool] | None = None) -> TemplateChoice:
    """The template of every variant (``base`` and each key of ``adapters``), and what each adapter's card
    says about it.

    Args:
        mode: ``adapter``, ``base``, ``none`` or a template file (see the module doc).
        base_path: the base model folder.
        adapters: variant → the adapter's inspection (its ``tokenizer_files`` compared with the base).
        args: ``--chat-template-arg`` keyword arguments every template is rendered with (not plain prompts).

    Raises:
        AuditInputError: the ``FILE`` is not a usable template; with ``adapter``, an adapter's own
            template that is not (naming its file and the fault); with ``base``, a base without a chat
            template.
    """
    out, warnings = _choose(mode, base_path, adapters)
    tok = base_tokenizer(str(base_path))
    folded: dict[str, bool] = {}
    for variant, tpl in list(out.items()):
        if tpl.chat_template == "none":
            continue
        if tpl.text not in folded:
            folded[tpl.text] = rejects_system_role(tpl.text, tok, args)
        out[variant] = dataclasses.replace(tpl, template_args=dict(args) if args else None,
                                           system_role="folded" if folded[tpl.text] else None)
        if folded[tpl.text] and variant in warnings:
            warnings[variant].append("the chat template rejects a system role: each item's system message is put "
                                     "before its first user message (run.prompts.<variant>.system_role: folded)")
    for variant, info in adapters.items():
        if info.vocab_resize is not None:
            out[variant] = dataclasses.replace(out[variant], tokenizer="adapter", tokenizer_path=info.path)
    return TemplateChoice(out, {v: tuple(w) for v, w in warnings.items()})


def _choose(mode: str, base_path: Path, adapters: dict[str, AdapterRecord]
            ) -> tuple[dict[str, PromptTemplate], dict[str, list[str]]]:
    own_base = base_template(base_path)
    if own_base is None and mode == "base":
        raise AuditInputError(base_path, "--chat-template base: the base's tokenizer has no chat template (a "
                                         "pretrained base); use --chat-template none (plain prompts) or FILE")
    base = own_base if own_base is not None and mode != "none" else plain_template(base_path)
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
            used = ({"none": "no template (plain prompts)"}.get(mode, "the base's" if own_base else "no template "
                    "(plain prompts: the base has none)") if mode in MODES else f"the one in {mode}")
            warnings[variant].append(f"the adapter's own chat template ({t.template_file}) was not used ({why}): "
                                     f"its answers were prompted with {used} (--chat-template {mode})")
        elif t.chat_template == "identical" and (mode not in MODES or mode == "none"):
            used = "no template (plain prompts)" if mode == "none" else f"the one in {mode}"
            warnings[variant].append(f"the adapter's own chat template ({t.template_file}, the same as the base's) "
                                     f"was not used: its answers were prompted with {used} (--chat-template)")
    return out, warnings
