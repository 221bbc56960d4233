"""Compare two audits' report folders: results.json field by field and every report file byte by byte.

    python scripts/compare_results.py OLD_DIR NEW_DIR [--ignore run.timings --ignore ...]

What differs between two runs of the same inputs by design is left out of the results.json comparison:
``run.timings``, ``run.versions``, ``run.auditor_version``, ``run.created_at`` and the schema version
(``--ignore KEY.PATH`` adds more, ``--new-keys`` names keys the newer file may add). Report files are
compared after the same values are blanked where they are printed (the results.json lines, and the
created-at / timing lines of the others), so a difference left is a difference in what the audit
decided or showed. Exit code 0: no difference; 1: differences, listed.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

IGNORED = ("schema_version", "run.timings", "run.versions", "run.auditor_version", "run.created_at")


def _diff(a: Any, b: Any, path: str, ignore: set[str], new_keys: set[str], out: list[str]) -> None:
    if path in ignore:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            leaf = re.sub(r"\[\d+\]", "[]", sub)
            if k not in a and (leaf in new_keys or k in new_keys):
                continue
            if k not in a or k not in b:
                if sub not in ignore:
                    out.append(f"{sub}: only in {'new' if k not in a else 'old'}")
                continue
            _diff(a[k], b[k], sub, ignore, new_keys, out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} entries, now {len(b)}")
        for k, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{k}]", ignore, new_keys, out)
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:120]} → {json.dumps(b)[:120]}")


def _blank(text: str) -> str:
    """Report text with the values that differ by design (dates, seconds, versions) blanked."""
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-]\d\d:\d\d", "<date>", text)
    text = re.sub(r"\d+(\.\d+)? ?s\b", "<s>", text)
    text = re.sub(r'time="[\d.]+"', 'time="<s>"', text)
    return re.sub(r'"(load_s|generate_s|rounds_s|total_s)": [\d.]+', r'"\1": <s>', text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path)
    ap.add_argument("--ignore", action="append", default=[], help="a key path to leave out (run.cache)")
    ap.add_argument("--new-keys", action="append", default=[], help="a key (or path, [] for any index) the new file may add")
    ap.add_argument("--replace", action="append", default=[], metavar="OLD=NEW",
                    help="read OLD as NEW in the old folder's files (another checkout or --out folder)")
    args = ap.parse_args()
    subs = [tuple(r.split("=", 1)) for r in args.replace]

    def read(p: Path, old: bool) -> str:
        text = p.read_text(encoding="utf-8")
        for a, b in subs if old else ():
            text = text.replace(a, b)
        return text

    out: list[str] = []
    old = json.loads(read(args.old / "results.json", True))
    new = json.loads(read(args.new / "results.json", False))
    _diff(old, new, "", set(IGNORED) | set(args.ignore), set(args.new_keys), out)
    print(f"results.json: {len(out)} difference(s)")
    for line in out[:60]:
        print("  " + line)
    same = not out
    for f in sorted(p.name for p in args.old.iterdir() if p.is_file() and p.name != "results.json"):
        a, b = (args.old / f), (args.new / f)
        if not b.is_file():
            print(f"{f}: missing in {args.new}")
            same = False
            continue
        ra, rb = read(a, True), read(b, False)
        ta, tb = _blank(ra), _blank(rb)
        ok = ta == tb
        same &= ok
        print(f"{f}: {'identical' if ra == rb else 'identical apart from dates and seconds' if ok else 'DIFFERS'}")
        if not ok:
            la, lb = ta.splitlines(), tb.splitlines()
            shown = [f"    - {x[:150]}\n    + {y[:150]}" for x, y in zip(la, lb) if x != y][:5]
            print("\n".join(shown) or f"    ({len(la)} lines, now {len(lb)})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
