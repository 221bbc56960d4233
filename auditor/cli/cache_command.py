"""``audit cache info`` and ``audit cache clear``: where the cache is, what it holds, and clearing it
(:mod:`auditor.cache.generations`)."""

from __future__ import annotations

import click
from rich.console import Console

from ..cache.store import CACHE_DIR_HELP
from ..util.text import terminal_text

_t = terminal_text


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


@click.group("cache")
def cache_group() -> None:
    """Inspect or clear the auditor's cache (generations, converted base models).

    The cache lives in $AUDITOR_CACHE_DIR, else $XDG_CACHE_HOME/adapter-auditor, else ~/.cache/adapter-auditor;
    the answer cache (generations, pre-screens) in $AUDITOR_GENERATION_CACHE when set (see --cache-dir)."""


@cache_group.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--cache-dir", "cache_dir", default=None, metavar="DIR|URL", help=CACHE_DIR_HELP)
def cache_info_cmd(as_json: bool, cache_dir: str | None) -> None:
    """Where the cache is and what it holds."""
    import json

    from ..cache.generations import cache_info
    from ..cache.store import using_cache_dir

    with using_cache_dir(cache_dir, write=False) as answers:
        info = cache_info(None, answers)
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    g = info["generations"]
    out = Console(highlight=False, soft_wrap=True)  # a line each, however narrow the terminal or log
    out.print(f"cache: {_t(info['root'])} ({_size(info['total_bytes'])} on disk, as du counts it)"
              + ("" if answers.shown == info["root"] else f"; answer cache: {_t(answers.shown)}"))
    for f in info["folders"]:  # every folder of the cache, as `du -sh` lists them
        link = f" (link to {_t(f['link_to'])}, not followed)" if "link_to" in f else ""
        out.print(f"  {_t(f['name'])}: {_size(f['bytes'])} on disk, {f['files']} files "
                  f"({_size(f['file_bytes'])} of file content){link}")
    out.print(f"generations: {g['entries']} entries, {_size(g['bytes'])} of file content "
              f"(base variant {g['by_variant']['base']}, adapter variant {g['by_variant']['adapter']}; "
              f"{len(g['by_base'])} base model(s), {len(g['by_adapter'])} adapter(s))"
              + (f", {g['unreadable']} unreadable" if g["unreadable"] else ""))
    for m in info["models"]:
        out.print(f"converted base model: {_t(m['name'])} ({_size(m['bytes'])} of file content)")


@cache_group.command("clear")
@click.option("--all", "everything", is_flag=True,
              help="Also remove converted base models and NLTK data (rebuilt on the next audit).")
@click.option("--cache-dir", "cache_dir", default=None, metavar="DIR|URL", help=CACHE_DIR_HELP)
def cache_clear_cmd(everything: bool, cache_dir: str | None) -> None:
    """Delete cached generations and pre-screens (with --all: the local cache's converted models, NLTK data and
    throughput folders too); of the answer cache only files named as the cache names its entries, never anything
    else in the folder or prefix."""
    from ..cache.generations import clear_cache
    from ..cache.store import using_cache_dir
    from ..util.files import cache_dir as local

    with using_cache_dir(cache_dir) as answers:
        removed = clear_cache(None, everything, answers)
        where = _t(str(local())) + ("" if answers.shown == str(local()) else f" and {_t(answers.shown)}")
    Console(highlight=False).print(f"removed {removed['files']} files ({_size(removed['bytes'])}) from {where}")
