"""The model families people fine-tune, audited end to end on the hf backend (issue 30, part 4).

Each family is a tiny random-weight checkpoint built here from its transformers config (2 layers,
hidden 64, the embedded base's tokenizer and vocabulary) with a random rank-4 LoRA on its attention
and MLP projections under the family's own module names (Phi-3's and GPT-NeoX's fused ``qkv_proj`` /
``query_key_value``). Real chat-template behaviours are exercised: a template that rejects a system
role (Mistral's older ones raise "Conversation roles must alternate"), a template with a thinking
switch (Qwen3's ``enable_thinking``), and a family without a template (GPT-NeoX: plain prompts).
The weights are random, so the answers are noise: what is checked is that each family loads, takes
its LoRA, renders its prompts as its template says and comes out with a verdict and the weight-space
pre-screen, not what it scores.
"""

from __future__ import annotations

import json
import shutil

import pytest

#: family → (config class, extra config, LoRA target modules, chat template: "base" (SmolLM2's own),
#: "no_system" (rejects a system role), "thinking" (Qwen3-style switch) or None (no template))
FAMILIES = {
    "llama": ("LlamaConfig", {}, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"), "base"),
    "qwen2": ("Qwen2Config", {}, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"), "base"),
    "qwen3": ("Qwen3Config", {"head_dim": 16}, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                "down_proj"), "thinking"),
    "mistral": ("MistralConfig", {"sliding_window": None}, ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                             "up_proj", "down_proj"), "no_system"),
    "gemma3_text": ("Gemma3TextConfig", {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 64,
                                         "layer_types": ["sliding_attention", "full_attention"]},
                    ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"), "base"),
    "phi3": ("Phi3Config", {"pad_token_id": 0}, ("qkv_proj", "o_proj", "gate_up_proj", "down_proj"), "base"),
    "gpt_neox": ("GPTNeoXConfig", {}, ("query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"), None),
}

#: Mistral-7B-Instruct-v0.1's rule, shortened: roles must alternate user/assistant, no system turn
NO_SYSTEM = ("{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
             "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
             "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}"
             "{{ message['content'] + eos_token }}{% endif %}{% endfor %}")
#: Qwen3's generation prompt, shortened: thinking on unless ``enable_thinking`` is false
THINKING = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + "
            "'<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}"
            "{% if enable_thinking is defined and enable_thinking is false %}{{ '<think>\n\n</think>\n\n' }}"
            "{% endif %}{% endif %}")


def _tiny_family(family: str, base_model, root):
    """A random-weight ``family`` checkpoint (with the embedded base's tokenizer) and a random LoRA on it."""
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cls, extra, modules, template = FAMILIES[family]
    tok = AutoTokenizer.from_pretrained(base_model.path)
    gqa = {} if family == "gpt_neox" else {"num_key_value_heads": 2}  # GPT-NeoX has no grouped-query attention
    config = getattr(transformers, cls)(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                                        num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=2048,
                                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **gqa, **extra)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    base = root / f"{family}-base"
    model.save_pretrained(base)
    tok.save_pretrained(base)
    (base / "chat_template.jinja").unlink(missing_ok=True)
    cfg_file = base / "tokenizer_config.json"
    cfg = json.loads(cfg_file.read_text())
    cfg.pop("chat_template", None)
    if template == "base":
        shutil.copy(base_model.path / "chat_template.jinja", base / "chat_template.jinja")
    elif template:
        (base / "chat_template.jinja").write_text(NO_SYSTEM if template == "no_system" else THINKING)
    cfg_file.write_text(json.dumps(cfg))
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=list(modules),
                                                  init_lora_weights=False))
    adapter = root / f"{family}-lora"
    peft_model.save_pretrained(adapter)
    acfg = json.loads((adapter / "adapter_config.json").read_text())
    acfg["base_model_name_or_path"] = str(base)
    (adapter / "adapter_config.json").write_text(json.dumps(acfg))
    return base, adapter


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_audits_end_to_end_on_hf(family, base_model, tmp_path, cli):
    base, adapter = _tiny_family(family, base_model, tmp_path)
    out = tmp_path / "out"
    extra = ["--chat-template-arg", "enable_thinking=false"] if FAMILIES[family][3] == "thinking" else []
    r = cli(adapter, "--base", base, "--capability", "math", "--capability", "ifeval", "--limit", "2",
            "--budget", "0", "--backend", "hf", "--out", out, "--quiet", *extra)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["verdict"]["verdict"] in ("pass", "fail", "inconclusive")
    model_type = json.loads((base / "config.json").read_text())["model_type"]
    assert model_type == family
    # every target module of the family took the LoRA, and the weight-space pre-screen measured it
    assert set(res["adapter"]["target_modules"]) == set(FAMILIES[family][2])
    assert res["adapter"]["matched_modules"] == 2 * len(FAMILIES[family][2])
    assert len(res["adapter"]["weight_space"]["modules"]) == res["adapter"]["matched_modules"]
    prompts = [it["rendered_prompt"] for it in res["items"]]
    assert len(prompts) == 4
    template = FAMILIES[family][3]
    kinds = {p["chat_template"] for p in res["run"]["prompts"].values()}
    if template is None:
        assert kinds == {"none"} and not any("<|im_start|>" in p for p in prompts)
    else:
        assert kinds == {"base"}
    if template == "thinking":
        assert all(p.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n") for p in prompts)
        assert res["run"]["prompts"]["base"]["template_args"] == {"enable_thinking": False}
    if template == "no_system":
        # the suite's items carry no system turn; a template that rejects one is said so all the same
        assert all(p.startswith("<|im_start|>[INST] ") and p.endswith(" [/INST]") for p in prompts)  # SmolLM2's BOS
        assert res["run"]["prompts"]["base"]["system_role"] == "folded"


def test_a_thinking_template_is_left_at_its_default_unless_asked(base_model, tmp_path, cli):
    base, adapter = _tiny_family("qwen3", base_model, tmp_path)
    out = tmp_path / "out"
    r = cli(adapter, "--base", base, "--capability", "math", "--limit", "1", "--budget", "0", "--out", out, "--quiet")
    assert r.returncode in (0, 1), r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert all(it["rendered_prompt"].endswith("<|im_start|>assistant\n") for it in res["items"])
    assert "template_args" not in res["run"]["prompts"]["base"]
    bad = cli(adapter, "--base", base, "--chat-template-arg", "enable_thinking", "--out", tmp_path / "o2")
    assert bad.returncode == 2 and "--chat-template-arg" in bad.stderr and "KEY=VALUE" in bad.stderr


def test_a_system_message_is_folded_into_the_first_user_turn_where_the_template_rejects_it(base_model, tmp_path):
    from auditor.backends.hf import HFBackend
    from auditor.inspect import inspect_adapter
    from auditor.inspect.chat_template import choose_templates
    from auditor.records import Item

    base, adapter = _tiny_family("mistral", base_model, tmp_path)
    info = inspect_adapter(adapter, base, str(base))
    templates, warnings = choose_templates("adapter", base, {"adapter": info})
    assert templates["base"].system_role == templates["adapter"].system_role == "folded"
    assert any("rejects a system role" in w for w in warnings["adapter"])
    backend = HFBackend(base, {"adapter": (adapter, "d" * 64)})
    backend.set_templates(templates)
    item = Item(id="x/1", capability="multiturn", group="WILL", max_new_tokens=8, target={},
                messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."},
                          {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "2 + 2?"}))
    assert backend.render(item, "base") == ("<|im_start|>[INST] Be brief.\n\nHi. [/INST]Hello.<|im_end|>"
                                            "[INST] 2 + 2? [/INST]")
    # a template that takes a system role keeps it
    templates, _ = choose_templates("adapter", base_model.path, {})
    assert templates["base"].system_role is None
