"""Product text speaks of the product: the README, the docs, the benchmark results, the package (code, docstrings,
help texts, shipped schemas and suites), the policies, the GitHub Action, the examples and the scripts never say
how the project was made: no issue numbers, no ``seed 00N`` / ``seeds/`` references, no ``DESIGN.md`` (the design
page is ``docs/concepts/design.md``) and no work session ("the fourth session", "this session"). CHANGELOG.md is
history and exempt. Technical words stay: a process or HTTP session, a random seed, a helper function."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

#: the product text, relative to the repository root: files, or folders (every file below them)
PRODUCT = ("README.md", "docs", "benchmarks/RESULTS.md", "auditor", "policies", "action.yml", "examples", "scripts")
ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|previous|next|last|\d+(?:st|nd|rd|th))"
#: what each forbidden pattern stands for → the pattern
FORBIDDEN = {
    "an issue number": re.compile(r"\bissues? #?\d+\b", re.IGNORECASE),
    "a seed reference": re.compile(r"\bseeds? 0\d\d\b|\bseeds/", re.IGNORECASE),
    "DESIGN.md": re.compile(r"\bDESIGN\.md\b"),
    "a work session": re.compile(rf"\b(?:the {ORDINAL} session|this session|an earlier session)\b", re.IGNORECASE),
}


def product_files(root: Path = ROOT) -> list[Path]:
    """The tracked files of :data:`PRODUCT` (every file below them when ``root`` is no git checkout)."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *PRODUCT],
                             capture_output=True, check=True).stdout
        files = [root / p for p in out.decode("utf-8").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = [p for name in PRODUCT for p in ([root / name] if (root / name).is_file()
                                                 else sorted((root / name).rglob("*")))]
    return [p for p in files if p.is_file()]


def findings(text: str) -> list[str]:
    """``"<line>: <what>: <the words>"`` for each forbidden pattern in ``text``."""
    return [f"{n}: {what}: {m.group(0)!r}" for n, line in enumerate(text.splitlines(), 1)
            for what, pattern in FORBIDDEN.items() for m in pattern.finditer(line)]


@pytest.mark.parametrize(("text", "found"), [
    ("# the converter's version is in the name (issue 22: its tokenizer depended on HF_HUB_OFFLINE)",
     "an issue number"),
    ("fixed in issues 17 and 28", "an issue number"),
    ('"""The nominal-label check of ``seeds/003``."""', "a seed reference"),
    ("# Seed 002: behaviour one fine-tune installed can wash out", "a seed reference"),
    ("#: exit codes of the ``audit`` command (DESIGN.md §2)", "DESIGN.md"),
    ("as the fourth session found", "a work session"),
    ("measured in this session", "a work session"),
])
def test_each_forbidden_pattern_is_found(text, found):
    assert [f.split(": ")[1] for f in findings(text)] == [found]


@pytest.mark.parametrize("text", [
    "SHUFFLE_SEED = 20261205  # the shuffles' own seed",
    "source: {benchmark: gsm8k, split: test, sample: 100, seed: 0}",
    "End ``proc`` and the processes it started (its session)",
    "Update the comment on issue/PR ``number``; a Markdown checklist to paste into a release issue",
    "the small helpers the generators share; requests.Session()",
    "the design page (docs/concepts/design.md, the data flow)",
])
def test_technical_words_stay(text):
    assert findings(text) == []


def test_product_text_says_nothing_of_how_the_project_was_made():
    files = product_files()
    assert any(p.name == "README.md" and p.parent == ROOT for p in files)
    assert any(p.suffix == ".py" and "auditor" in p.parts for p in files)
    bad = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary file (weights, images) holds no prose
            continue
        bad += [f"{path.relative_to(ROOT)}:{f}" for f in findings(text)]
    assert not bad, "product text names how the project was made (say what the product does instead):\n" + \
        "\n".join(bad)
