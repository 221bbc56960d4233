"""The continuous-batching stream (auditor.backends.hf.stream) on the library's documented manager: where
it runs, what it returns, progress, failures."""

from __future__ import annotations

import threading

import pytest

pytestmark = pytest.mark.window  # (also run at both ends of the transformers/peft window)


@pytest.fixture(scope="module")
def model(base_model):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_model.path))
    m = AutoModelForCausalLM.from_pretrained(str(base_model.path), dtype=torch.float32).eval()
    return m, tok


def _prompts(tok, n=5):
    questions = ["What is 2 + 2?", "Name a fruit.", "Say hi.", "Count to three.", "What colour is grass?"][:n]
    return [list(tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True,
                                         return_dict=True)["input_ids"]) for q in questions]


def _config(m, tok, budget):
    from transformers import GenerationConfig

    return GenerationConfig(do_sample=False, eos_token_id=m.generation_config.eos_token_id,
                            pad_token_id=tok.pad_token_id, max_new_tokens=budget)


def test_the_stream_decodes_in_the_librarys_thread_and_gives_generates_fp32_answers(model):
    """The library's own thread runs every forward of the stream (``ContinuousBatchingManager.start``); its
    greedy fp32 answers are ``model.generate``'s, one progress tick per request, the attention restored."""
    import torch

    from auditor.backends.hf import stream as hf_stream

    m, tok = model
    prompts, budgets = _prompts(tok), [3, 9, 5, 12, 7]
    threads: set[int] = set()
    hook = m.register_forward_pre_hook(lambda *_: threads.add(threading.get_ident()))
    done: list[int] = []
    try:
        ours = hf_stream.stream_generate(m, prompts, budgets, slots=2, generation_config=_config(m, tok, 12),
                                         on_done=done.append)
    finally:
        hook.remove()
    assert threads and threading.get_ident() not in threads
    with torch.inference_mode():
        plain = [m.generate(torch.tensor([p]), generation_config=_config(m, tok, b))[0, len(p):].tolist()
                 for p, b in zip(prompts, budgets)]
    assert ours == plain
    assert len(done) == len(prompts)  # one progress tick per request
    assert all(0 < len(a) <= b for a, b in zip(ours, budgets))
    assert m.config._attn_implementation == "sdpa"


def test_the_calling_threads_openmp_workers_are_released_through_the_openmp_api():
    """``omp_pause_resource_all`` is found in the runtime torch loaded and accepts the release; torch runs
    in this thread again afterwards (a new team)."""
    import torch

    from auditor.backends.hf.openmp import release_thread_pool

    a = torch.ones(256, 256)
    before = a @ a
    assert release_thread_pool() is True
    assert torch.equal(a @ a, before)


def test_a_failing_forward_is_a_stream_error_and_leaves_the_model_as_it_was(model):
    """The library's own failure message, as one error; its logger's traceback is not shown."""
    from auditor.backends.hf.stream import StreamError, stream_generate

    m, tok = model
    calls = []

    def fail_on_the_third_forward(*_):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("a kernel failed")

    import logging

    shown: list[logging.LogRecord] = []
    seen = logging.Handler()
    seen.emit = shown.append  # type: ignore[method-assign]
    library_log = logging.getLogger("ContinuousBatchingLogger")  # (its own stderr handler, no propagation)
    library_log.addHandler(seen)
    hook = m.register_forward_pre_hook(fail_on_the_third_forward)
    try:
        with pytest.raises(StreamError, match="continuous batching failed a request: a kernel failed"):
            stream_generate(m, _prompts(tok), [8] * 5, slots=2, generation_config=_config(m, tok, 8))
    finally:
        hook.remove()
        library_log.removeHandler(seen)
    assert not shown  # no traceback logged beside the error
    assert m.config._attn_implementation == "sdpa"
    again = stream_generate(m, _prompts(tok, 2), [4, 4], slots=2, generation_config=_config(m, tok, 4))
    assert all(0 < len(a) <= 4 for a in again)  # the model streams again


def test_a_stream_that_stops_making_progress_is_given_up(model):
    """A forward that does not return (here: one that takes 3 s, beside a stall limit of 1 s, once the first
    answer is in) leaves the stream without a forward and without a result: a StreamError, not a wait without
    end; the model streams again."""
    import time

    from auditor.backends.hf.stream import StreamError, stream_generate

    m, tok = model
    state = {"answered": False, "hung": False}

    def hang_once_after_an_answer(*_):
        if state["answered"] and not state["hung"]:
            state["hung"] = True
            time.sleep(3)

    hook = m.register_forward_pre_hook(hang_once_after_an_answer)
    try:
        with pytest.raises(StreamError, match=r"made no progress for \d+ s \(no forward pass, no result\) with "
                                              r"[1-4] requests unanswered"):
            stream_generate(m, _prompts(tok), [8] * 5, slots=2, generation_config=_config(m, tok, 8),
                            on_done=lambda _n: state.update(answered=True), timeout_s=0.1, stall_s=1.0)
    finally:
        hook.remove()
    assert state["hung"]
    again = stream_generate(m, _prompts(tok, 2), [4, 4], slots=2, generation_config=_config(m, tok, 4))
    assert all(0 < len(a) <= 4 for a in again)


def test_a_progress_callback_that_raises_reaches_the_caller(model):
    from auditor.backends.hf.stream import stream_generate

    m, tok = model

    def broken(_n):
        raise ValueError("the progress bar broke")

    with pytest.raises(ValueError, match="progress bar broke"):
        stream_generate(m, _prompts(tok, 2), [3, 3], slots=2, generation_config=_config(m, tok, 3), on_done=broken)
    assert m.config._attn_implementation == "sdpa"
