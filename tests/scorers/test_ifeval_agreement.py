"""Our IFEval accuracies equal lm-evaluation-harness's on the same 541 prompts and responses.

The harness side is its own `ifeval` task (tasks/ifeval/ifeval.yaml: its
process_results and its aggregation functions), pointed at the local copy of
google-research's input_data.jsonl instead of the hub, so nothing is
downloaded. Our side is the auditor's pipeline: suite loading, scoring and
the weighted aggregation in compare.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from conftest import SHARED, needs_shared

pytestmark = needs_shared

IFEVAL_FILE = SHARED / "data" / "ifeval_input_data.jsonl"


def _responses(prompt: str) -> dict[str, str]:
    """Fixed, reproducible responses with a mix of followed and broken instructions."""
    return {
        "base": prompt,  # the prompt echoed
        "adapter": prompt.lower().replace(",", "") + "\n\nP.S. that is all. " + '"*done*"',
    }


@pytest.fixture(scope="module")
def harness_task(tmp_path_factory):
    from auditor.scorers.ifeval_checkers import ensure_punkt

    ensure_punkt()  # before lm-eval's ifeval module is imported: no NLTK download
    import lm_eval
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.tasks._yaml_loader import load_yaml

    os.environ["HF_DATASETS_CACHE"] = str(tmp_path_factory.mktemp("hf_datasets"))
    cfg = load_yaml(Path(lm_eval.__file__).parent / "tasks" / "ifeval" / "ifeval.yaml")
    cfg["dataset_path"] = "json"
    cfg["dataset_kwargs"] = {"data_files": {"train": str(IFEVAL_FILE)}}
    return ConfigurableTask(config=cfg)


def test_ifeval_prompt_and_instruction_level_equal_lm_eval(tmp_path, harness_task):
    from auditor.analysis.compare import compare_metrics
    from auditor.records import Generation
    from auditor.scorers import SCORERS, score_all
    from auditor.suite.manifest import load_suite

    manifest = tmp_path / "ifeval_full.yaml"
    manifest.write_text(
        "name: ifeval-full\nversion: 1\ncapabilities:\n"
        f"  - {{name: ifeval, group: HOW, source: '{IFEVAL_FILE}', scorer: ifeval, max_new_tokens: 1280}}\n")
    suite = load_suite(str(manifest), scorers=SCORERS)
    assert len(suite.items) == 541

    gens = [Generation(item_id=it.id, variant=v, text=text, n_tokens=1) for it in suite.items for v, text in _responses(it.prompt).items()]
    scores = score_all({i.id: i for i in suite.items}, gens, {"ifeval": "ifeval"})
    ours = {c.metric.split(".", 1)[1]: (c.base, c.adapter) for c in compare_metrics(suite, scores)}

    docs = list(harness_task.test_docs())
    assert len(docs) == 541
    agg = harness_task.aggregation()
    theirs: dict[str, dict[str, list]] = {"base": {}, "adapter": {}}
    for doc in docs:
        for variant, text in _responses(doc["prompt"]).items():
            # the reference checkers draw a random letter for keywords:letter_frequency with a non-letter
            # argument (keys 1122, 1129); both sides seed `random` identically for such draws
            random.seed(0)
            for metric, value in harness_task.process_results(doc, [text]).items():
                theirs[variant].setdefault(metric, []).append(value)
    assert set(ours) == set(agg) == {"prompt_level_strict_acc", "inst_level_strict_acc",
                                     "prompt_level_loose_acc", "inst_level_loose_acc"}
    for metric in agg:
        for k, variant in enumerate(("base", "adapter")):
            assert ours[metric][k] == pytest.approx(agg[metric](theirs[variant][metric]), abs=1e-9), (metric, variant)
    # the responses are not degenerate: some instructions are followed, some broken, and the variants differ
    assert 0 < ours["inst_level_loose_acc"][0] < 1 and ours["prompt_level_strict_acc"] != ours["inst_level_strict_acc"]
    assert ours["inst_level_strict_acc"][0] != ours["inst_level_strict_acc"][1]


def test_random_drawing_checkers_score_the_same_every_time():
    """IFEval key 1122 asks for the letter '#': the reference checker then picks a random letter.
    Our scorer seeds it, so 20 runs of the same text give one score."""
    import json

    from auditor.scorers.ifeval_checkers import ensure_punkt, ifeval_results

    ensure_punkt()
    row = next(r for r in map(json.loads, IFEVAL_FILE.read_text().splitlines()) if r["key"] == 1122)
    text = "# a # b # c # d " * 3 + "some ordinary words with many letters abcdefghijklmnopqrstuvwxyz"
    results = {json.dumps(ifeval_results(row, row["prompt"], text)) for _ in range(20)}
    assert len(results) == 1
