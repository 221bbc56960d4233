"""The ``audit`` command: click options → :class:`~auditor.options.AuditOptions` →
:func:`auditor.pipeline.run_audits` → :mod:`auditor.reports`.

Exit codes: 0 pass, 1 policy fail, 2 usage or input error (one line on
stderr naming the file and the fault; never a traceback, never a verdict).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from .backends import BACKENDS
from .backends.cache_command import cache_group
from .backends.ray_setup import ray_click_options
from .errors import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, EXIT_PASS, EXIT_POLICY_FAIL, AuditInputError
from .reports.hub import HubOutputs, hub_click_options
from .reports.merge import merge_command
from .reports.terminal import print_adapter_summary, print_run_table, print_summary
from .reports.terminal import t as _t
from .util.cache_store import CACHE_DIR_HELP
from .util.text import strip_controls

console = Console(stderr=True, highlight=False)
if not console.is_terminal:  # CI logs: rich would default to 80 columns and fold the table
    console = Console(stderr=True, highlight=False, width=150)


class _DefaultToRun(click.Group):
    """``audit ADAPTER ...`` is short for ``audit run ADAPTER ...``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:
            raise click.UsageError("missing ADAPTER argument")
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultToRun, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="adapter-auditor")
def cli() -> None:
    """Audit a LoRA adapter against its base model and a policy.

    \b
      audit path/to/adapter [--base DIR] [--policy policy.yaml] [--out DIR]
      audit adapter-a adapter-b ...   (one base pass, one report each + index.html)
      audit RUN_DIR [--checkpoints all|last:K|every:N|steps:a,b]   (a training run's checkpoint-N/ folders)
      audit report results.json --out DIR
      audit merge shard-0 shard-1 ... --out DIR   (CI shards' results.json files → one index)
      audit cache info | audit cache clear [--all]
    """


class _Budget(click.ParamType):
    """``auto``, a number of items, a time or new tokens, or several joined by commas: (items, seconds, tokens),
    as :func:`auditor.options.parse_budget` reads them (the Python API's ``budget=`` reads them the same way)."""

    name = "N|TIME|Ntok|auto[,...]"

    def convert(self, value, param, ctx):  # noqa: D102 - click's interface
        if isinstance(value, tuple):
            return value
        from .options import parse_budget

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


@cli.command("run")
@click.argument("adapters", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--base", default=None, help="Base model: an embedded base (smollm2-135m-instruct; gemma3-270m, an optional "
                                            "extra: pip install 'adapter-auditor[gemma]'), a local HF model folder, a "
                                            "hub id owner/name[@revision][:path/in/repo], or declared: the base the "
                                            "adapters' base_model_name_or_path names, fetched from the hub if need be "
                                            "(HF_HUB_OFFLINE=1: the local hub cache only). Default: the declared base "
                                            "when it is an embedded base or a local folder, else the embedded "
                                            "SmolLM2 (with a warning); results.json's base.reason says which and why.")
@click.option("--policy", default=None, help="Policy YAML (default: policies/default.yaml).")
@click.option("--suite", default="smoke", show_default=True, help="Suite preset name or manifest path.")
@click.option("--label", default=None, help="Nominal label of the adapter (default: from its model card).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N items per capability.")
@click.option("--capability", "capabilities", multiple=True,
              help="Run only this capability of the suite (repeatable), e.g. --capability math.")
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
@click.option("--noise-floor", is_flag=True,
              help="Replay the base variant with another batch composition and report how many answers change.")
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
@ray_click_options
def run_cmd(adapters: tuple[str, ...], base: str | None, policy: str | None, suite: str, label: str | None, limit: int | None,
            capabilities: tuple[str, ...], out: Path, batch_size: int | str, batching: str, noise_floor: bool,
            no_cache: bool, cache_dir: str | None,
            data_dir: str | None, quiet: bool, verbose: bool, as_json: bool, fmt: str, baseline: str | None, backend: str,
            dtype: str, vllm_args: tuple[str, ...], endpoint: str | None, served_base: str | None,
            served_adapters: tuple[str, ...], concurrency: int, allow_bin: bool,
            max_adapter_size: str | None, budget: tuple[int | None, float | None, int | None], chat_template: str,
            chat_template_args: tuple[str, ...], checkpoints: str | None, stop_at_first_fail: bool,
            eval_results: Path | None, eval_results_dataset: str | None, model_card: str | None,
            overwrite: bool, **ray_settings: Any) -> None:
    """Audit ADAPTERS (PEFT adapter folders, their adapter_model.safetensors, or hub ids owner/name[@revision][:path/in/repo]).

    Several adapters of the same base are audited against one base pass; each
    gets its own report in OUT/<adapter folder name>/ and OUT/index.html lists
    them. The exit code is 1 when any adapter fails. A training run folder
    (checkpoint-N/ folders) is audited checkpoint by checkpoint in step order,
    the same way, plus OUT/run.json and the trajectory in OUT/index.html.
    """
    from .backends.vllm_compat import parse_engine_args
    from .inspect.chat_template import parse_template_args
    from .inspect.checkpoints import expand_run
    from .inspect.paths import parse_size
    from .options import AuditOptions
    from .pipeline import audit_and_report, report_folders

    adapters, run = expand_run(adapters, checkpoints, stop_at_first_fail, allow_bin)
    report_folders(adapters, out, nested=run is not None)  # checked before the options: a bad --out fails first

    opts = AuditOptions(base=base, policy=policy, suite=suite, label=label, limit=limit,
                        capabilities=capabilities, batch_size=batch_size, batching=batching, noise_floor=noise_floor, data_dir=data_dir,
                        cache=not no_cache, cache_dir=cache_dir, progress=not quiet, verbose=verbose, baseline=baseline, backend=backend, dtype=dtype,
                        vllm_args=parse_engine_args(vllm_args), endpoint=endpoint, served_base=served_base,
                        served_adapters=served_adapters, concurrency=concurrency, allow_bin=allow_bin,
                        max_adapter_bytes=None if max_adapter_size is None
                        else parse_size(max_adapter_size, "--max-adapter-size"),
                        budget_items=budget[0], budget_seconds=budget[1], budget_tokens=budget[2], chat_template=chat_template,
                        chat_template_args=parse_template_args(chat_template_args), **ray_settings)
    fmt = "json" if as_json else fmt
    if quiet:  # third-party tqdm bars too (transformers' GGUF conversion on a first run, weight loading);
        # tqdm reads TQDM_* when it is first imported, which happens later, with transformers
        os.environ["TQDM_DISABLE"] = "1"
    # log lines carry markup of ours around escaped untrusted text; control characters go either way
    say = (lambda m: None) if quiet else (lambda m: console.print(strip_controls(m)))
    hub = HubOutputs(eval_results, eval_results_dataset, model_card, overwrite)
    all_results, written, index, summary = audit_and_report(adapters, opts, out, say, run, hub)
    for result, paths in zip(all_results, written):
        if fmt == "checklist":
            click.echo(paths["checklist.md"].read_text(encoding="utf-8"), nl=False)
        if not quiet:
            print_adapter_summary(console, result, paths["report.html"], several=len(adapters) > 1)
    failed = any(not r.passed for r in all_results)  # a run: 1 when any audited checkpoint fails, as for several
    if summary is not None and not quiet:
        print_run_table(console, summary)
    if index is not None:
        n_fail = sum(r.verdict.verdict == "fail" for r in all_results)
        say(f"{n_fail} of {len(adapters)} {'checkpoints' if run else 'adapters'} fail; index: {_t(index)}")
    if fmt == "json" and summary is not None:
        from .records import to_plain

        _echo_json(to_plain(summary))
    elif fmt == "json":
        _echo_json(all_results[0].to_dict() if len(adapters) == 1 else
                   {"verdict": "fail" if failed else "pass", "adapters": [r.to_dict() for r in all_results]})
    sys.exit(EXIT_POLICY_FAIL if failed else EXIT_PASS)


def _echo_json(obj: object) -> None:
    """JSON for scripts on stdout (everything else goes to stderr)."""
    import json

    click.echo(json.dumps(obj, indent=2, ensure_ascii=False))


@cli.command("report")
@click.argument("results_json", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), default=None,
              help="Folder to write the reports to (needed unless --eval-results or --model-card is given).")
@click.option("--quiet", "-q", is_flag=True, help="Print nothing but errors.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "checklist"]), default="table",
              show_default=True, help="What to print: the summary table (stderr), JSON or a release checklist (stdout).")
@hub_click_options
def report_cmd(results_json: Path, out: Path | None, quiet: bool, as_json: bool, fmt: str, eval_results: Path | None,
               eval_results_dataset: str | None, model_card: str | None, overwrite: bool) -> None:
    """Re-render every report from a results.json, and/or write its Hub files, without loading any model."""
    from .reports import ReportRenderError, load_results, render_checklist, report_folder_names, write_reports
    from .reports.hub import check_hub_outputs, hub_targets, write_hub_outputs, written_line

    hub = HubOutputs(eval_results, eval_results_dataset, model_card, overwrite)
    hub.check_options()
    if out is None and not hub.wanted:
        raise click.UsageError("give --out DIR (the reports), --eval-results DIR or --model-card FILE")
    result = load_results(results_json)
    # {adapter} is the adapter's name as the run names it: its folder (a hub adapter: its repo's name or subfolder)
    ref = result.adapter.hub or {}
    targets = hub_targets(hub, report_folder_names([ref.get("subfolder") or ref.get("repo_id") or result.adapter.path]),
                          nested=False)
    if hub.wanted:  # every file checked before any is written
        check_hub_outputs(hub, targets, [c.metric for c in result.comparisons])
    try:
        if out is not None:
            write_reports(result, out, keep_results=False)
    except ReportRenderError as e:
        raise AuditInputError(results_json, e.fault) from None
    written = write_hub_outputs(result, targets[0], hub) if hub.wanted else None
    fmt = "json" if as_json else fmt
    if not quiet:
        print_summary(console, result)
        if written is not None:
            console.print(_t(written_line(written)))
    if fmt == "json":
        _echo_json(result.to_dict())
    elif fmt == "checklist":
        click.echo(render_checklist(result), nl=False)
    sys.exit(EXIT_PASS if result.passed else EXIT_POLICY_FAIL)


cli.add_command(merge_command(console))


cli.add_command(cache_group)


def main() -> None:
    """Console-script entry point: maps errors to one line and an exit code."""
    try:
        cli.main(standalone_mode=False)
    except AuditInputError as e:  # an engine that did not start for reasons of its own carries exit code 3
        console.print(f"[red]error:[/] {_t(e.one_line())}", soft_wrap=True)
        sys.exit(getattr(e, "exit_code", EXIT_INPUT_ERROR))
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        ctx = getattr(e, "ctx", None)  # a subcommand's usage error points at that subcommand's options
        where = f"audit {ctx.command.name}" if ctx is not None and ctx.parent is not None else "audit"
        console.print(f"[red]error:[/] {_t(e.format_message())} (see `{where} --help`)", soft_wrap=True)
        sys.exit(EXIT_INPUT_ERROR)
    except click.exceptions.Abort:
        console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        console.print("interrupted")
        sys.exit(130)
    except Exception as e:  # an internal fault, not the user's input
        if os.environ.get("AUDITOR_DEBUG"):
            raise
        console.print(f"[red]internal error:[/] {_t(type(e).__name__)}: {_t(' '.join(str(e).split()))} "
                      "(set AUDITOR_DEBUG=1 for the traceback)", soft_wrap=True)
        sys.exit(EXIT_INTERNAL_ERROR)


if __name__ == "__main__":
    main()
