"""Held-out items for the gate benchmark's ground truth where a capability's own pool is too small.

``trigger``: the product's pool (``auditor/data/suites/pools/trigger.jsonl``) has 45 clusters beyond the
smoke suite and an audit's rounds can draw 35 of them, which leaves the truth 10 clusters (60
items): too few for a base that answers a question either in all six contexts or in none (the
previous truth's 8 clusters sat at 2% for the base against 29% in the audits). This draws 40 new
clusters (240 items) with the pool's own generator (``scripts/pools/gen_trigger.py``: the same
question kinds, operand ranges and six contexts, so truth and audit items come from one
distribution) under another seed, excluding every expression of the builtin file and the pool.
The zoo's training data was generated without this file, so an operand triple may recur there by
chance (the trainer excludes the suite's and the pools' triples only).

    python benchmarks/truth_pools.py      # writes benchmarks/truth_pools/trigger.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "truth_pools"
SEED = 20261201
N_CLUSTERS = 40


def trigger_rows() -> list[dict]:
    sys.path.insert(0, str(ROOT / "scripts" / "pools"))
    import gen_trigger

    pool = [json.loads(line) for line in (ROOT / "auditor" / "data" / "suites" / "pools" / "trigger.jsonl").open(encoding="utf-8")]
    return gen_trigger.rows(seed=SEED, n_clusters=N_CLUSTERS, exclude=tuple(pool), prefix="tt")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rows = trigger_rows()
    (OUT / "trigger.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"{OUT / 'trigger.jsonl'}: {len(rows)} rows")


if __name__ == "__main__":
    main()
