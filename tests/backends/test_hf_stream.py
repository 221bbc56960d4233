"""The continuous-batching stream's generation loop runs in the calling thread
(auditor.backends.hf_stream): where it runs, what it returns, progress, failures, and the library's own
thread as the fallback giving the same answers."""

from __future__ import annotations

import threading

import pytest


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


def test_the_loop_runs_in_the_calling_thread_and_gives_the_library_threads_answers(model, monkeypatch):
    from auditor.backends import hf_stream

    m, tok = model
    prompts, budgets = _prompts(tok), [3, 9, 5, 12, 7]
    threads: set[int] = set()
    hook = m.register_forward_pre_hook(lambda *_: threads.add(threading.get_ident()))
    done: list[int] = []
    try:
        here = hf_stream.stream_generate(m, prompts, budgets, slots=2, generation_config=_config(m, tok, 12),
                                         on_done=done.append)
        assert threads == {threading.get_ident()}  # every forward of the stream in this thread
        monkeypatch.setattr(hf_stream, "loop_runs_here", lambda manager: False)
        threads.clear()
        library = hf_stream.stream_generate(m, prompts, budgets, slots=2, generation_config=_config(m, tok, 12))
        assert threads and threading.get_ident() not in threads  # the library's own thread
    finally:
        hook.remove()
    assert here == library
    assert len(done) == len(prompts)  # one progress tick per request
    assert all(0 < len(a) <= b for a, b in zip(here, budgets))
    assert m.config._attn_implementation == "sdpa"


def test_the_transformers_version_in_use_lets_the_loop_run_here(model):
    """The pinned transformers range keeps the loop and its stop status where the function looks: if an
    upgrade moves them, this fails rather than the audit quietly falling back to the slower thread."""
    from auditor.backends.hf_stream import loop_runs_here, stream_config

    m, tok = model
    manager = m.init_continuous_batching(generation_config=_config(m, tok, 4),
                                         continuous_batching_config=stream_config(2, 64))
    try:
        assert loop_runs_here(manager)
    finally:
        manager.destroy()


def test_a_failing_forward_is_a_stream_error_and_leaves_the_model_as_it_was(model):
    """The library's own failure message, as one error; its logger's traceback is not shown."""
    from auditor.backends.hf_stream import StreamError, stream_generate

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


def test_a_progress_callback_that_raises_reaches_the_caller(model):
    from auditor.backends.hf_stream import stream_generate

    m, tok = model

    def broken(_n):
        raise ValueError("the progress bar broke")

    with pytest.raises(ValueError, match="progress bar broke"):
        stream_generate(m, _prompts(tok, 2), [3, 3], slots=2, generation_config=_config(m, tok, 3), on_done=broken)
    assert m.config._attn_implementation == "sdpa"
