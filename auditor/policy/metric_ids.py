"""The metric ids a policy may name, as the README lists them (generated from the scorer registry).

Every capability of the built-in suite presets reports the metrics its scorer registers
(:data:`auditor.scorers.SCORERS`, :func:`auditor.suite.preset_metric_specs`); a policy's
``metrics:``, ``baseline.metrics:`` and ``labels:`` name them as ``<capability>.<metric>``. The README's
list between the markers below is this module's output, and ``tests/policy/test_policy_files.py``
fails when it is stale::

    python -m auditor.policy.metric_ids            # print the list (Markdown)
    python -m auditor.policy.metric_ids --write    # write it into README.md between the markers
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..scorers import SCORERS
from ..suite import preset_metric_specs

#: the README's markers around the generated list
BEGIN, END = "<!-- metric-ids:begin -->", "<!-- metric-ids:end -->"
#: the repository's README (a source checkout; the wheel ships none)
README = Path(__file__).resolve().parents[2] / "README.md"


def metric_ids_markdown() -> str:
    """The Markdown table of every metric id a policy may name: unit (``fraction``: a rate, limits and
    DriftScore in points; another unit: limits in % of the base only), which direction is better, and
    whether it is its capability's first metric (what a label mapped to the capability promises)."""
    lines = ["| metric id | unit | better | a label naming its capability promises it |", "|---|---|---|---|"]
    seen: set[str] = set()
    for mid, m in preset_metric_specs(SCORERS).items():
        cap = mid.split(".", 1)[0]
        first = cap not in seen
        seen.add(cap)
        unit = "fraction (points)" if m.unit == "fraction" else f"{m.unit} (% of the base)"
        promised = "yes" if first and m.unit == "fraction" else ""
        lines.append(f"| `{mid}` | {unit} | {'higher' if m.higher_is_better else 'lower'} | {promised} |")
    return "\n".join(lines) + "\n"


def readme_block(text: str) -> str | None:
    """What stands between the markers in ``text`` (None when they are missing)."""
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the list, or write it into the README (``--write``; 1 when the markers are missing).

    Raises:
        OSError: ``--write`` cannot read or write the README.
    """
    ap = argparse.ArgumentParser(prog="python -m auditor.policy.metric_ids", description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help=f"write the list into {README}")
    args = ap.parse_args(argv)
    table = metric_ids_markdown()
    if not args.write:
        print(table, end="")
        return 0
    text = README.read_text(encoding="utf-8")
    if readme_block(text) is None:
        print(f"{README}: the markers {BEGIN} / {END} are missing")
        return 1
    head, rest = text.split(BEGIN, 1)
    README.write_text(f"{head}{BEGIN}\n{table}{END}{rest.split(END, 1)[1]}", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
