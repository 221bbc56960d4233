"""The tokenizer files an adapter folder ships: compared with the base's tokenizer, and
which chat template renders each variant's prompts (``--chat-template base|adapter|FILE``)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest
from conftest import MEDICAL, assert_one_line_error, needs_shared, write_adapter
from test_cli import audit

from auditor.errors import AuditInputError
from auditor.inspect import inspect_adapter
from auditor.inspect.chat_template import choose_templates
from auditor.inspect.tokenizer_files import (
    base_tokenizer,
    inspect_tokenizer_files,
    template_sha256,
)
from auditor.records import Item, Request, Variant

#: SmolLM2's template adds this system turn when a conversation has none; SmolLM v1's does not
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CHATML_NO_SYSTEM = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
                    "{% endif %}")


def _adapter(tmp_path, name="a", **files):
    folder = write_adapter(tmp_path / name, layers=2)
    for fname, content in files.items():
        fname = fname.replace("__", ".")
        (folder / fname).write_text(content if isinstance(content, str) else json.dumps(content))
    return folder


@needs_shared
def test_the_third_party_adapters_tokenizer_files_against_the_base(base_model):
    t = inspect_tokenizer_files(MEDICAL, base_model.path)
    assert t.files == ("special_tokens_map.json", "tokenizer_config.json")
    # its ChatML template (SmolLM v1's, from tokenizer_config.json) is not the base's: no default system turn
    assert t.chat_template == "differs" and t.template_file == "tokenizer_config.json"
    cfg = json.loads((MEDICAL / "tokenizer_config.json").read_text())
    assert t.template_text == cfg["chat_template"] and t.template_sha256 == template_sha256(cfg["chat_template"])
    assert t.base_template_sha256 == template_sha256(base_tokenizer(str(base_model.path)).chat_template)
    assert t.base_template_sha256 != t.template_sha256
    # no vocabulary file; its 17 added tokens sit at the base's ids and its declared size is the base's
    assert t.vocabulary == "identical" and t.vocab_size == t.base_vocab_size == 49152
    assert t.added_tokens == 17 and t.new_tokens == () and t.special_tokens == {}


@needs_shared
def test_by_default_the_third_party_adapter_is_prompted_with_its_own_template(base_model):
    from auditor.backends.hf.backend import HFBackend

    info = inspect_adapter(MEDICAL, base_model.path, base_model.name)
    templates, warnings = choose_templates("adapter", base_model.path, {"adapter": info})
    assert templates["base"].chat_template == "base" and templates["adapter"].chat_template == "adapter"
    assert templates["adapter"].template_file == str(MEDICAL / "tokenizer_config.json")
    assert any("ships its own chat template (tokenizer_config.json), which differs" in w for w in warnings["adapter"])
    backend = HFBackend(base_model.path, [Variant.of_folder("adapter", MEDICAL, "d" * 64)])
    backend.set_templates(templates)
    item = Item(id="math/x", capability="math", group="CAN", messages=({"role": "user", "content": "What is 2 + 2?"},), max_new_tokens=8, target={})
    base, mine = backend.render(item, "base"), backend.render(item, "adapter")
    assert SMOLLM2_SYSTEM in base and SMOLLM2_SYSTEM not in mine
    assert mine == "<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n<|im_start|>assistant\n"
    # the two variants' prompts key the cache apart (the rendered prompt is in the key)
    p = backend._lookup([Request(item=item, variant="base"), Request(item=item, variant="adapter")], use_cache=False)
    assert p.rendered == {("math/x", "base"): base, ("math/x", "adapter"): mine}
    assert p.keys[("math/x", "base")] != p.keys[("math/x", "adapter")]

    info = inspect_adapter(MEDICAL, base_model.path, base_model.name)
    templates, warnings = choose_templates("base", base_model.path, {"adapter": info})
    assert templates["adapter"] == templates["base"] and templates["adapter"].chat_template == "base"
    assert any("own chat template (tokenizer_config.json) was not used (it differs from the base's)" in w
               for w in warnings["adapter"])


def test_an_identical_template_is_said_so_and_changes_nothing(base_model, tmp_path):
    folder = _adapter(tmp_path, chat_template__jinja=(base_model.path / "chat_template.jinja").read_text() + "\n",
                      tokenizer_config__json={"chat_template": CHATML_NO_SYSTEM, "eos_token": "<|im_end|>"})
    info = inspect_adapter(folder, base_model.path, base_model.name)
    t = info.tokenizer_files
    # chat_template.jinja wins over tokenizer_config.json's chat_template, as in transformers
    assert t.chat_template == "identical" and t.template_file == "chat_template.jinja"
    templates, warnings = choose_templates("adapter", base_model.path, {"adapter": info})
    assert templates["adapter"] == templates["base"]
    assert not [w for w in info.warnings + warnings["adapter"] if "chat template" in w]
    assert t.vocabulary == "none" and t.special_tokens == {}


def test_added_tokens_and_another_eos_are_warned_about(base_model, tmp_path):
    folder = _adapter(tmp_path, tokenizer_config__json={
        "added_tokens_decoder": {"2": {"content": "<|im_end|>"}, "49152": {"content": "<|tool_call|>"}},
        "eos_token": "<|endoftext|>", "vocab_size": 49153})
    info = inspect_adapter(folder, base_model.path, base_model.name)
    t = info.tokenizer_files
    assert t.vocabulary == "differs" and t.vocab_size == 49153 and t.new_tokens == ("<|tool_call|>",)
    assert t.special_tokens == {"eos_token": ("<|endoftext|>", "<|im_end|>")}
    assert any("another vocabulary than the base's (49153 tokens against the base's 49152; not in the base's "
               "vocabulary at that id: <|tool_call|>)" in w for w in info.warnings)
    assert any("set eos_token to '<|endoftext|>', the base's is '<|im_end|>'" in w for w in info.warnings)


def test_a_template_file_renders_every_variant(base_model, tmp_path):
    folder = _adapter(tmp_path, tokenizer_config__json={"chat_template": CHATML_NO_SYSTEM})
    tpl = tmp_path / "mine.jinja"
    tpl.write_text(CHATML_NO_SYSTEM.replace("<|im_start|>assistant", "<|im_start|>assistant\nAnswer:"))
    info = inspect_adapter(folder, base_model.path, base_model.name)
    templates, warnings = choose_templates(str(tpl), base_model.path, {"adapter": info})
    assert templates["base"] == templates["adapter"]
    assert templates["base"].chat_template == f"file:{tpl}" and templates["base"].template_sha256 == \
        template_sha256(tpl.read_text())
    assert any(f"was not used (it differs from the base's): its answers were prompted with the one in {tpl}" in w
               for w in warnings["adapter"])


@pytest.mark.parametrize("content,needle", [
    ("{% for m in messages %}{{ m['content'] }", "not valid Jinja: line 1:"),
    ("{% for m in messages %}{{ m.content | nosuchfilter }}{% endfor %}", "not valid Jinja: line 1: No filter named"),
    ("{{ raise_exception('no') }}", "fails to render a user/assistant/user conversation: TemplateError: no"),
    ("hello", "renders a conversation without its messages"),
    ("", "the file is empty"),
])
def test_a_bad_template_file_is_one_line_and_exit_2(base_model, tmp_path, content, needle, cli):
    folder = _adapter(tmp_path)
    tpl = tmp_path / "bad.jinja"
    tpl.write_text(content)
    with pytest.raises(AuditInputError, match="--chat-template: "):
        choose_templates(str(tpl), base_model.path, {})
    out = tmp_path / "o"  # in this worker (a new process: the test below)
    assert_one_line_error(cli(folder, "--chat-template", tpl, "--out", out), f"error: {tpl}: --chat-template: ",
                          needle)
    assert not out.exists()


def test_a_bad_template_file_is_one_line_in_a_new_process_too(tmp_path):
    """The refusal above in a new ``audit`` process: what reaches the real stderr (library log lines, warnings,
    writes below Python) is one line, as the in-worker runs cannot see."""
    tpl = tmp_path / "bad.jinja"
    tpl.write_text("{% for m in messages %}{{ m['content'] }")
    proc = audit(_adapter(tmp_path), "--chat-template", tpl, "--out", tmp_path / "o")
    assert_one_line_error(proc, f"error: {tpl}: --chat-template: ", "not valid Jinja: line 1:")
    assert not (tmp_path / "o").exists()


def test_a_missing_template_file_and_an_invalid_own_template(base_model, tmp_path, cli, monkeypatch):
    out = tmp_path / "o"
    folder = _adapter(tmp_path)
    # an answer cache of its own (pre-screens are kept there): the session's is shared with the other workers
    monkeypatch.setenv("AUDITOR_GENERATION_CACHE", str(tmp_path / "answers"))
    assert_one_line_error(cli(folder, "--chat-template", tmp_path / "nope.jinja", "--out", out),
                          f"error: {tmp_path / 'nope.jinja'}: --chat-template: no such file")
    # refused before the adapter's weight-space pre-screen (SVDs of the base's weights) was computed
    assert not (tmp_path / "answers" / "weight_space").exists()
    broken = _adapter(tmp_path, "broken", tokenizer_config__json={"chat_template": "{% if %}"})
    assert_one_line_error(cli(broken, "--out", out), f"error: {broken / 'tokenizer_config.json'}: the adapter's "
                          "chat_template is not valid Jinja: line 1:", "--chat-template base")
    assert not out.exists()
    # --chat-template base does not use it: a warning, no error
    info = inspect_adapter(broken, base_model.path, base_model.name)
    warnings = choose_templates("base", base_model.path, {"adapter": info}).warnings
    assert any("was not used (it is not valid Jinja" in w for w in warnings["adapter"])


@needs_shared
@pytest.mark.slow
def test_audit_records_which_template_rendered_each_variant(tmp_path, cli):
    """The third-party adapter, audited on two math items by default (its own template) and with
    --chat-template base: results.json, the report and the terminal say which template was used."""
    medical = tmp_path / "medical"
    shutil.copytree(MEDICAL, medical)
    out = tmp_path / "own"
    proc = cli(medical, "--capability", "math", "--limit", "2", "--budget", "0", "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "ships its own chat template (tokenizer_config.json), which differs" in " ".join(proc.stderr.split())
    r = json.loads((out / "results.json").read_text())
    assert r["verdict"]["verdict"] == "pass"
    p = r["run"]["prompts"]
    assert p["base"]["chat_template"] == "base" and p["adapter"]["chat_template"] == "adapter"
    assert p["adapter"]["template_file"] == str(medical / "tokenizer_config.json") and p["adapter"]["tokenizer"] == "base"
    assert r["adapter"]["tokenizer_files"]["chat_template"] == "differs"
    for it in r["items"]:
        assert SMOLLM2_SYSTEM in it["rendered_prompt"] and SMOLLM2_SYSTEM not in it["rendered_prompts"]["adapter"]
    html = (out / "report.html").read_text()
    assert "chat template (tokenizer_config.json): differs from the base&#39;s" in html
    assert "adapter: chat template adapter (" in html
    # the PR comment says the variants were prompted differently; the release checklist records both
    assert "Prompts rendered with: " in (out / "summary.md").read_text()
    checklist = (out / "checklist.md").read_text()
    assert "- prompts of base: chat template base (" in checklist and "- prompts of adapter: chat template adapter (" in checklist

    out = tmp_path / "base"
    proc = cli(medical, "--capability", "math", "--limit", "2", "--budget", "0", "--chat-template", "base",
                 "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "own chat template (tokenizer_config.json) was not used" in " ".join(proc.stderr.split())
    r = json.loads((out / "results.json").read_text())
    assert r["verdict"]["verdict"] == "pass"
    assert r["run"]["prompts"]["adapter"]["chat_template"] == "base"
    assert all("rendered_prompts" not in it for it in r["items"])
    assert "Prompts rendered with" not in (out / "summary.md").read_text()  # one template for both variants


def _pretrained_base(base_model, tmp_path):
    """The embedded base's folder with its chat template taken out: a base as a pretrained checkpoint ships."""
    folder = tmp_path / "pretrained-base"
    shutil.copytree(base_model.path, folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    cfg_file = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg.pop("chat_template", None)
    cfg_file.write_text(json.dumps(cfg))
    assert base_tokenizer(str(folder)).chat_template is None
    return folder


def test_a_base_without_a_chat_template_is_prompted_plainly(base_model, tmp_path):
    from auditor.backends.hf.backend import HFBackend
    from auditor.inspect.chat_template import plain_prompt

    base = _pretrained_base(base_model, tmp_path)
    adapter = _adapter(tmp_path)
    info = inspect_adapter(adapter, base, base_model.name)
    templates, warnings = choose_templates("adapter", base, {"adapter": info})
    assert templates["base"].chat_template == templates["adapter"].chat_template == "none"
    with pytest.raises(AuditInputError, match="has no chat template.*--chat-template none"):
        choose_templates("base", base, {"adapter": info})
    backend = HFBackend(base, [Variant.of_folder("adapter", adapter, "d" * 64)])
    backend.set_templates(templates)
    item = Item(id="x/1", capability="multiturn", group="WILL", max_new_tokens=8, target={},
                messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."},
                          {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "2 + 2?"}))
    # the item's text, no role markers; SmolLM2's tokenizer adds no BOS to plain text
    assert backend.render(item, "base") == backend.render(item, "adapter") == "Be brief.\n\nHi.\n\nHello.\n\n2 + 2?"
    assert "<|im_start|>" not in backend.render(item, "base")

    class AddsBos:  # a Gemma/Llama-like encoder that puts BOS before plain text (its real tokenizers are not here)
        bos_token, bos_token_id = "<bos>", 2

        def __call__(self, text):
            return {"input_ids": [2, 99]}
    assert plain_prompt(list(item.messages[-1:]), AddsBos()) == "<bos>2 + 2?"
    # worked examples (the manifest's fewshot) come first in a plain prompt, after the system message
    shots = ({"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": "#### 2"})
    asked = dataclasses.replace(item, fewshot=shots)
    assert backend.render(asked, "base") == "Be brief.\n\n1 + 1?\n\n#### 2\n\nHi.\n\nHello.\n\n2 + 2?"


def test_worked_examples_reach_a_chat_model_only_when_the_manifest_says_always(base_model):
    from auditor.backends.hf.backend import HFBackend

    backend = HFBackend(base_model.path)  # SmolLM2-Instruct: its own chat template
    shots = ({"role": "user", "content": "1 + 1?"}, {"role": "assistant", "content": "#### 2"})
    item = Item(id="m/1", capability="math", group="CAN", max_new_tokens=8, target={},
                messages=({"role": "user", "content": "2 + 2?"},), fewshot=shots)
    plain = Item(id="m/1", capability="math", group="CAN", max_new_tokens=8, target={},
                 messages=({"role": "user", "content": "2 + 2?"},))
    assert backend.render(item) == backend.render(plain) and "1 + 1?" not in backend.render(item)
    always = backend.render(dataclasses.replace(item, fewshot_always=True))
    assert always.index("1 + 1?") < always.index("#### 2") < always.index("2 + 2?")
    assert always.count("<|im_start|>assistant") == 2  # the example's answer is an assistant turn


def test_none_prompts_every_variant_plainly_and_says_the_adapters_template_was_not_used(base_model, tmp_path):
    adapter = _adapter(tmp_path, tokenizer_config__json={"chat_template": CHATML_NO_SYSTEM})
    info = inspect_adapter(adapter, base_model.path, base_model.name)
    templates, warnings = choose_templates("none", base_model.path, {"adapter": info})
    assert {t.chat_template for t in templates.values()} == {"none"}
    assert templates["base"].template_sha256 == templates["adapter"].template_sha256
    assert any("was not used" in w and "plain prompts" in w for w in warnings["adapter"])


@pytest.mark.slow
def test_a_pretrained_base_is_audited_with_plain_prompts_end_to_end(base_model, tmp_path):
    base = _pretrained_base(base_model, tmp_path)
    adapter = _adapter(tmp_path)
    out = tmp_path / "out"
    r = audit(adapter, "--base", base, "--capability", "math,format", "--limit", "2", "--budget", "0", "--out", out)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    assert {p["chat_template"] for p in res["run"]["prompts"].values()} == {"none"}
    prompts = [it["rendered_prompt"] for it in res["items"]]
    assert prompts and not any("<|im_start|>" in p for p in prompts)
    # the smoke suite's format items are asked of a pretrained base after their two worked examples (math alone)
    shown = {it["capability"]: it["rendered_prompt"] for it in res["items"]}
    assert shown["format"].startswith("Describe a made-up pet.") and '"Biscuit"' in shown["format"], shown["format"]
    assert not shown["math"].startswith("Sara") and "Biscuit" not in shown["math"]
    assert "plain prompts" in (out / "report.html").read_text()
