"""The progress lines an audit logs, with rich markup around the untrusted names it escapes: the base and each
adapter as inspection found them, the backend, the answer cache's hits, a round bought, a run stopped early.
The caller's log prints them (the command) or renders them to plain text (the Python API)."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape

from ..cache import CacheStats
from ..records import BaseModel, RuleOutcome, Variant
from ..util.files import cache_dir


def warning(text: str) -> str:
    return f"[yellow]warning:[/] {escape(text)}"


def setup_lines(base: BaseModel, variants: list[Variant]) -> list[str]:
    """The base, then each adapter (its kind, rank and modules) with its warnings: inspection's, then the run's."""
    lines = [f"base: {escape(base.name)} ({escape(base.source)}; {escape(base.reason)})"]
    for v in variants:
        info = v.info
        lines.append(f"adapter: {escape(info.path)} ({'DoRA' if info.dora else 'LoRA'} "
                     f"rank {info.max_rank}{f' (config r={info.r})' if info.max_rank != info.r else ''}, "
                     f"{info.matched_modules} modules)")
        lines += [warning(w) for w in (*info.warnings, *v.warnings)]
    return lines


def cache_lines(cs: CacheStats) -> list[str]:
    """The answer cache's hits per variant and the answers generated (where the cache is, when it is not the
    local one), and the answers it could not keep; nothing when the cache is off."""
    if not cs.enabled:
        return []
    shared = "" if cs.location is None or cs.location["protocol"] == "file" and Path(cs.location["path"]).parent \
        == cache_dir() else f" ({escape(cs.location['protocol'])}: {escape(cs.location['path'])})"
    lines = [f"generation cache{shared}: {sum(cs.hits.values())} hits ("
             + ", ".join(f"{v} {n}" for v, n in sorted(cs.hits.items())) + f"), {sum(cs.misses.values())} generated"]
    if cs.failed_writes:
        lines.append(f"[yellow]warning:[/] {cs.failed_writes} answers could not be written to the cache "
                     f"({escape(cs.write_error)}); this audit has them, the next one generates them again")
    return lines


def round_line(look: int, undecided: list[RuleOutcome], new_capabilities: set[str], n_new: int) -> str:
    """A round bought: the rules it is for (the first four) and the items drawn."""
    return (f"round {look - 1}: {len(undecided)} rule{'s' if len(undecided) != 1 else ''} undecided "
            f"({', '.join(escape(r.rule) for r in undecided[:4])}{', ...' if len(undecided) > 4 else ''}); "
            f"{n_new} more items for {', '.join(sorted(new_capabilities))}")


def stopped_line(adapter: Variant, not_audited: int) -> str:
    return f"stopped after {escape(adapter.info.path)}: {not_audited} not audited"
