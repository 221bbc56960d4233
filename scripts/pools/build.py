"""Build the item pools in ``auditor/data/suites/pools/`` (one JSONL file per capability).

The pools are what an audit escalates into when a rule is undecided, and what the
zoo's ground truth is measured on: at least 200 items per capability, authored by
templated generators whose answers are computed, never typed in. Every generator is
a module ``gen_<capability>.py`` beside this file with

* ``CAPABILITY``: the capability name (as in the suite manifests);
* ``rows() -> list[dict]``: the pool's rows, deterministic (seeded ``random.Random``),
  in the same row format as ``auditor/data/suites/builtin/<capability>.jsonl``, with ids
  (and cluster ids) that never clash with the builtin file's.

Run from the repository root; ``--check`` rebuilds in memory and fails when a
committed pool file differs (a test runs it)::

    python scripts/pools/build.py            # write every pool file
    python scripts/pools/build.py --check    # committed files == generator output
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
POOLS = HERE.parent.parent / "auditor" / "data" / "suites" / "pools"


def generators() -> list[object]:
    sys.path.insert(0, str(HERE))
    return [importlib.import_module(p.stem) for p in sorted(HERE.glob("gen_*.py"))]


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    ap.add_argument("--only", action="append", default=[], help="capability to build (repeatable)")
    args = ap.parse_args(argv)
    bad = 0
    for gen in generators():
        cap = gen.CAPABILITY
        if args.only and cap not in args.only:
            continue
        text = render(gen.rows())
        path = POOLS / f"{cap}.jsonl"
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(f"{path}: differs from scripts/pools/gen_{cap}.py's output", file=sys.stderr)
                bad += 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {text.count(chr(10))} rows")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
