"""The ``audit`` command group (``audit ADAPTER ...`` short for ``audit run ADAPTER ...``) and its entry point,
which maps every error to one line and an exit code."""

from __future__ import annotations

import os
import sys

import click

from ..errors import EXIT_INPUT_ERROR, EXIT_INTERNAL_ERROR, AuditInputError
from ..reports.terminal import t as _t
from .cache_command import cache_group
from .console import console
from .merge_command import merge_cmd
from .report_command import report_cmd
from .run_command import run_cmd


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


for _command in (run_cmd, report_cmd, merge_cmd, cache_group):
    cli.add_command(_command)


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
        names: list[str] = []  # the commands from the group down: `audit cache info`, not `audit info`
        while ctx is not None and ctx.parent is not None:
            names.insert(0, ctx.command.name)
            ctx = ctx.parent
        where = " ".join(["audit", *names])
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

