"""How report.html scales with the number of items: file size and load time in
real headless Chromium, side by side for several sizes in one run.

    python benchmarks/bench_report.py path/to/results.json [--sizes 100 500 2000]

The items of the given results.json (a real audit) are repeated, with new ids,
up to each size; the report is rendered by ``write_reports`` and opened in
Debian's Chromium through Playwright. "load" is the time from navigation to
the first page of the item browser being built (median of --repeat loads);
"filter" the time the outcome filter takes to rebuild the list.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from auditor.reports import write_reports

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def grow(results: dict, n: int) -> dict:
    """``results`` with its items repeated (ids made unique) to exactly ``n`` items."""
    r = copy.deepcopy(results)
    src = results["items"]
    r["items"] = []
    for k in range(n):
        it = copy.deepcopy(src[k % len(src)])
        it["id"] = f"{it['id']}#{k}"
        r["items"].append(it)
    r["suite"]["item_ids"] = [i["id"] for i in r["items"]]
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", type=Path)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 2000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    a = ap.parse_args()
    results = json.loads(a.results.read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=a.chromium, args=ARGS)
        for n in a.sizes:
            paths = write_reports(grow(results, n), Path(tmp) / str(n))
            html = paths["report.html"]
            loads, filters = [], []
            for _ in range(a.repeat):
                page = browser.new_page()
                t0 = time.perf_counter()
                page.goto(html.as_uri())
                page.wait_for_selector("#items-body tr")
                loads.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                page.select_option("#f-outcome", "same")
                page.wait_for_function("document.getElementById('items-count').textContent.includes('matching')")
                filters.append(time.perf_counter() - t0)
                page.close()
            rows.append((n, html.stat().st_size / 2**20, statistics.median(loads), statistics.median(filters)))
        browser.close()
    print("| items | report.html (MiB) | load to first rows (s) | filter (s) |")
    print("|---:|---:|---:|---:|")
    for n, mib, load, filt in rows:
        print(f"| {n} | {mib:.2f} | {load:.2f} | {filt:.3f} |")
    base = rows[0]
    for n, mib, load, _ in rows[1:]:
        print(f"{n} vs {base[0]} items: size ×{mib / base[1]:.1f}, load ×{load / base[2]:.2f}")


if __name__ == "__main__":
    main()
