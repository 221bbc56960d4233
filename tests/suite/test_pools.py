"""Item pools: every smoke capability has at least 200 items to escalate into, drawn in
one seeded order, disjoint from the suite's own items, loading through the scorers' checks; the
committed pool files are what their generators write."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import ROOT

from auditor.scorers import SCORERS
from auditor.suite import load_suite
from auditor.suite.pools import load_pool


@pytest.fixture(scope="module")
def smoke():
    return load_suite("smoke", scorers=SCORERS)


def test_every_capability_has_a_pool_of_at_least_200_items(smoke):
    for cap in smoke.capabilities:
        pool = load_pool(smoke, cap.name)
        assert pool.n_items >= 200, (cap.name, pool.n_items)
        in_suite = {i.id for i in smoke.items if i.capability == cap.name}
        ids = [i.id for u in pool.units for i in u]
        assert len(ids) == len(set(ids)) and not set(ids) & in_suite, cap.name
        assert all(i.capability == cap.name and i.max_new_tokens == next(
            x.max_new_tokens for x in smoke.items if x.capability == cap.name) for u in pool.units for i in u)


def test_draws_are_deterministic_and_keep_clusters_whole(smoke):
    a, b = load_pool(smoke, "trigger"), load_pool(smoke, "trigger")
    first = a.draw(10)
    assert [i.id for i in first] == [i.id for i in b.draw(10)]
    assert len(first) == 12 and len({i.meta["cluster"] for i in first}) == 2  # two whole 6-context questions
    assert [i.id for i in a.draw(6)] != [i.id for i in first[:6]] and a.remaining == a.n_items - 18
    assert load_pool(smoke, "trigger", seed=1).draw(6)[0].id != first[0].id  # the seed orders the pool


def test_a_capability_without_a_pool_draws_nothing(tmp_path, smoke):
    manifest = tmp_path / "m.yaml"
    manifest.write_text("name: m\nversion: 1\ncapabilities:\n  - {name: math, group: CAN, scorer: numeric_match, "
                        f"max_new_tokens: 8, source: '{ROOT}/auditor/data/suites/builtin/math.jsonl', "
                        "prompt_template: '{question}'}\n")
    s = load_suite(str(manifest), scorers=SCORERS)
    assert load_pool(s, "math").draw(5) == []


def test_committed_pools_equal_their_generators():
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "pools" / "build.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
