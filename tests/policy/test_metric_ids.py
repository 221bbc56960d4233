"""The README's list of metric ids is the code's (the scorer registry through the suite presets)."""

from __future__ import annotations

from conftest import ROOT

from auditor.policy.metric_ids import BEGIN, END, main, metric_ids_markdown, readme_block
from auditor.scorers import SCORERS
from auditor.suite import preset_metric_units


def test_readme_lists_the_registry_metric_ids():
    block = readme_block((ROOT / "README.md").read_text(encoding="utf-8"))
    assert block == metric_ids_markdown(), "run python -m auditor.policy.metric_ids --write"
    ids = [line.split("`")[1] for line in metric_ids_markdown().splitlines()[2:]]
    assert ids == list(preset_metric_units(SCORERS))  # every id, in the registry's order


def test_write_replaces_only_the_block(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text(f"# t\nbefore\n{BEGIN}\n| stale |\n{END}\nafter\n")
    monkeypatch.setattr("auditor.policy.metric_ids.README", readme)
    assert main(["--write"]) == 0
    text = readme.read_text()
    assert text.startswith("# t\nbefore\n") and text.endswith(f"{END}\nafter\n") and "stale" not in text
    assert readme_block(text) == metric_ids_markdown()
