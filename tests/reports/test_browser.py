"""report.html in real headless Chromium (Debian's ``chromium``, driven by Playwright).

The page must load with no console error and no network request, show the
verdict and the failing rules without scrolling, list regressions first in the
item browser, and render hostile model output as text.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import AUDIT, ROOT
from playwright.sync_api import sync_playwright
from report_data import _results

from auditor.reports import write_reports
from auditor.reports.view import item_rows
from auditor.results import AuditResult

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# flags from Debian's headless setup: no sandbox (root in CI), no GPU, no background connections
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1280, "height": 900}
#: screenshots a person looks at (git-ignored)
SHOTS = ROOT / "reports" / "screenshots"
HOSTILE = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> **not bold**'


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: scripts/test.sh installs Debian's chromium package")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def _open(browser, html: Path):
    """Open ``html`` in a fresh page; return (page, console errors, requested URLs)."""
    page = browser.new_page(viewport=VIEWPORT)
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(html.resolve().as_uri())
    page.wait_for_selector("#items-body tr")
    return page, errors, requests


def _in_first_screen(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= VIEWPORT["height"]


@pytest.mark.slow
def test_failing_demo_report_in_chromium(tmp_path, browser, demo_pair):
    # a real failing audit: the README's demo, whose mislabelled adapter fails (conftest; test_verdicts checks it)
    proc, out = demo_pair
    assert proc.returncode == 1, proc.stderr
    results = json.loads((out / "terse-instruct-r8" / "results.json").read_text())
    # plant hostile text in one adapter output, as a model could emit it, and re-render through the CLI
    regressions = [r for r in item_rows(AuditResult.from_dict(results)) if r["outcome"] == "regression"]
    assert regressions, "the mislabelled demo adapter is expected to make some items worse"
    victim = regressions[0]["id"]
    for it in results["items"]:
        if it["id"] == victim:
            it["adapter"]["text"] = HOSTILE
    (tmp_path / "hostile.json").write_text(json.dumps(results))
    proc = subprocess.run([*AUDIT, "report", str(tmp_path / "hostile.json"), "--out", str(tmp_path / "r"), "--quiet"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr

    page, errors, requests = _open(browser, tmp_path / "r" / "report.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "failing-demo-first-screen.png"))
    page.screenshot(path=str(SHOTS / "failing-demo-full.png"), full_page=True)
    assert errors == []
    assert requests == [(tmp_path / "r" / "report.html").resolve().as_uri()]  # no network, nothing else loaded

    # without scrolling: the verdict and every failing rule's reason
    assert page.locator("h1").inner_text().startswith("Verdict: FAIL")
    assert _in_first_screen(page, "h1")
    failing = [r for r in results["verdict"]["rules"] if r["outcome"] == "fail"]
    assert failing and page.locator("ul.reasons li").count() == len(failing)
    assert _in_first_screen(page, "ul.reasons li >> nth=-1")

    # the item browser: regressions first, and the regression filter shows exactly them
    badges = page.locator("#items-body .badge").all_inner_texts()  # the first page: 50 rows
    first_page = min(len(regressions), 50)
    assert badges[:first_page] == ["regression"] * first_page
    page.select_option("#f-outcome", "regression")
    assert page.locator("#items-body tr").count() == min(len(regressions), 50)
    assert page.locator("#items-body .item-id").first.inner_text() == victim

    # the hostile output is shown as text: no script ran, no image element was created
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0
    shown = page.locator("#items-body tr").first.locator("pre").nth(2).inner_text()
    assert shown == HOSTILE


def test_report_with_2000_items_pages_and_filters(tmp_path, browser):
    r = _results()
    template = r["items"]
    items = []
    for k in range(2000):
        it = copy.deepcopy(template[k % 3])
        it["id"] = f"{'math' if k % 2 else 'ifeval'}/x{k:04d}"
        it["capability"] = "math" if k % 2 else "ifeval"
        it["adapter"]["text"] = f"answer {k} " + "lorem ipsum " * 80  # about 1 KB of output per variant
        it["base"]["text"] = f"base answer {k} " + "dolor sit " * 80
        items.append(it)
    r["items"] = items
    r["suite"]["item_ids"] = [i["id"] for i in items]
    r["comparisons"].append(dict(r["comparisons"][0], metric="ifeval.prompt_level_strict_acc", capability="ifeval",
                                 group="HOW"))
    for it in items:
        if it["capability"] == "ifeval":
            for v in ("base", "adapter"):
                it[v]["scores"] = {"prompt_level_strict_acc": it[v]["scores"]["numeric_match"]}
    paths = write_reports(AuditResult.from_dict(r), tmp_path / "big")
    size = paths["report.html"].stat().st_size
    assert size < 8 * 2**20, f"report.html is {size / 2**20:.1f} MiB with 2,000 items"

    page, errors, requests = _open(browser, paths["report.html"])
    assert errors == [] and len(requests) == 1
    # one page of rows is built, not 2,000: the report stays responsive
    assert page.locator("#items-body tr").count() == 50
    assert "of 2000 matching items" in page.locator("#items-count").inner_text()
    page.click("#items-more")
    assert page.locator("#items-body tr").count() == 100
    page.select_option("#f-cap", "math")
    assert "of 1000 matching items" in page.locator("#items-count").inner_text()
    page.fill("#f-search", "answer 1999 ")
    assert page.locator("#items-body tr").count() == 1
    assert page.locator("#items-body .item-id").inner_text() == "math/x1999"
