"""The ``audit`` command as a user runs it, with each continuous-batching stream timed (bench_audit.py part e).

``python benchmarks/timed_streams.py OUT.json <audit arguments>`` runs ``audit <audit arguments>`` in this
process with :func:`auditor.backends.hf.stream.stream_generate` wrapped: for every stream (the suite's items
of a look, then each round's) it records the requests, the prompt and new tokens, the wall seconds and when
half, 90% and all of its requests had ended (the tail: few requests left decoding while the slots idle), and
writes the list to OUT.json. results.json records no durations per stream (its runs repeat byte for byte),
hence this wrapper; it changes nothing the audit computes. Exits with the audit's exit code.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    import auditor.backends.hf.stream as hs
    from auditor import cli

    records: list[dict[str, Any]] = []
    stream_generate = hs.stream_generate

    def timed(model: Any, prompts: Any, budgets: Any, **kw: Any) -> list[list[int]]:
        t0, ends, user = time.perf_counter(), [], kw.get("on_done")

        def on_done(n: int) -> None:
            ends.append(time.perf_counter() - t0)
            if user is not None:
                user(n)

        out = stream_generate(model, prompts, budgets, **{**kw, "on_done": on_done})
        n = len(prompts)
        records.append({"requests": n, "slots": kw.get("slots"), "prompt_tokens": sum(len(p) for p in prompts),
                        "new_tokens": sum(len(o) for o in out), "wall_s": round(time.perf_counter() - t0, 2),
                        **{f"ended_{q}pct_s": round(ends[max(0, -(-q * n // 100) - 1)], 2) for q in (50, 90, 100)}})
        return out

    hs.stream_generate = timed
    sys.argv = ["audit", *argv[1:]]
    try:
        cli.main()
    except SystemExit as e:
        code = int(e.code or 0)
    else:
        code = 0
    Path(argv[0]).write_text(json.dumps(records, indent=1))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
