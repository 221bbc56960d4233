"""``--ray``: the run's generation on a real local Ray cluster (a head node and one more
worker node, both processes of this machine, started by ``ray.cluster_utils.Cluster`` and shut down by the
fixture), compared with the same run in one process; the one-line errors.

The fast test uses a tiny random-weight llama (the embedded base's tokenizer, ``_tiny_family``) and three
random LoRAs on it, float32; the slow one the embedded base and three zoo adapters (not run while other
heavy jobs share the machine)."""

from __future__ import annotations

import copy
import faulthandler
import json
import socket
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error
from test_model_families import _tiny_family

#: what may differ between a --ray run's results.json and the single-process run's: when (timings, the
#: creation time), where (the placement), and the hf engine's streams (each worker batches its own rows); and
#: where this test put each run's answer cache (each its own, so that neither reads the other's answers)
VOLATILE = (("run", "timings"), ("run", "created_at"), ("run", "ray"), ("run", "hf", "streams"),
            ("run", "cache", "location"))
#: the whole test module's wall-clock bound (a hang dumps every thread's stack and ends the process)
BOUND_S = 900


def normalised(results: dict) -> dict:
    """``results`` without the :data:`VOLATILE` keys (and nothing else)."""
    out = copy.deepcopy(results)
    for path in VOLATILE:
        node = out
        for key in path[:-1]:
            node = node.get(key) or {}
        node.pop(path[-1], None)
    return out


@pytest.fixture(scope="module")
def cluster():
    """A real Ray cluster on this machine: a head node and a second node, one CPU each, no dashboard."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    faulthandler.dump_traceback_later(BOUND_S, exit=True)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1)
        c.wait_for_nodes(timeout=120)
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
        faulthandler.cancel_dump_traceback_later()


def _loras(base: Path, root: Path, n: int) -> list[Path]:
    """``n`` random LoRAs (seeds 1..n) on the tiny base, saved as PEFT folders."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    out = []
    for k in range(1, n + 1):
        torch.manual_seed(k)
        model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                               LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                          init_lora_weights=False))
        folder = root / f"lora-{k}"
        model.save_pretrained(folder)
        cfg = json.loads((folder / "adapter_config.json").read_text())
        (folder / "adapter_config.json").write_text(json.dumps(cfg | {"base_model_name_or_path": str(base)}))
        out.append(folder)
    return out


@pytest.fixture(scope="module")
def tiny(base_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-tiny")
    base, _ = _tiny_family("llama", base_model, root)
    return base, _loras(base, root, 4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _results(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("*/results.json"))}


def test_three_adapters_on_a_local_ray_cluster_give_the_single_process_results(tiny, cluster, tmp_path, cli,
                                                                                monkeypatch):
    """Rounds (``--budget 6``), ``--noise-floor`` (a base-only replay on the other dtype, on worker 0) and ``--baseline`` (held by
    every worker, its first look on worker 0, its rounds with each adapter's) included."""
    base, (*adapters, previous) = tiny
    args = [*adapters, "--base", base, "--capability", "math", "--capability", "over_refusal", "--limit", "3",
            "--budget", "6", "--backend", "hf", "--dtype", "float32", "--batch-size", "4", "--noise-floor",
            "--baseline", previous, "--quiet"]
    times = {}
    for name, extra in (("single", []), ("ray", ["--ray", cluster.address])):
        monkeypatch.setenv("AUDITOR_CACHE_DIR", str(tmp_path / f"cache-{name}"))  # each run its own empty cache
        t0 = time.perf_counter()
        r = cli(*args, "--out", tmp_path / name, *extra)
        times[name] = time.perf_counter() - t0
        assert r.returncode == 0, r.stderr[-3000:]
    print(f"wall time, 3 tiny adapters: single {times['single']:.1f} s, --ray 2 workers {times['ray']:.1f} s")
    single, on_ray = _results(tmp_path / "single"), _results(tmp_path / "ray")
    assert len(single) == 3 and sorted(single) == sorted(on_ray)
    assert {n: r["verdict"]["verdict"] for n, r in single.items()} == dict.fromkeys(single, "pass")
    for name in single:
        assert normalised(on_ray[name]) == normalised(single[name]), name
    # the placement: two workers on two nodes, the base pass on worker 0, each adapter on one worker
    placement = [r["run"]["ray"] for r in on_ray.values()]
    workers = placement[0]["workers"]
    assert len(workers) == 2 and placement[0]["base_pass_worker"] == 0
    assert [len(w["adapters"]) for w in workers] == [1, 2] and all(w["threads"] == 1 for w in workers)
    served = {a: w["worker"] for w in workers for a in w["adapters"]}
    assert served == {str(a): k for a, k in zip(adapters, (0, 1, 1))}
    for name, r in on_ray.items():
        assert r["run"]["ray"]["worker"] == served[r["adapter"]["path"]]
        assert "ray" not in single[name]["run"]
    # rounds ran (the budget bought items), so the rounds' routing is compared too; and the replay, the baseline
    assert any(len(r["run"]["rounds"]) > 1 for r in single.values())
    assert all(r["noise_floor"] is not None and r["baseline"] is not None for r in on_ray.values())
    # the workers' engines do not depend on the batch (hf on a CPU): the replay is on the other dtype, on worker 0
    assert all(r["noise_floor"]["varied"] == "dtype" and r["noise_floor"]["dtypes"] == ["float32", "bfloat16"]
               for r in on_ray.values())


def test_a_worker_that_dies_ends_the_run_with_exit_code_3_and_no_verdict(tiny, cluster, tmp_path, monkeypatch):
    """A worker killed after the actors started (``ray.kill`` on the named actor, a real death): the run ends
    with :class:`RayWorkerError` (exit code 3), no result."""
    import ray

    from auditor import audit_many
    from auditor.backends.ray.cluster import RayWorkerError

    base, adapters = tiny[0], tiny[1][:3]
    monkeypatch.setenv("AUDITOR_CACHE_DIR", str(tmp_path / "cache"))

    def kill_a_worker(line: str) -> None:
        if line.startswith("ray: "):
            name = next(n for n in ray.util.list_named_actors() if n.endswith("-worker-1"))
            ray.kill(ray.get_actor(name))

    with pytest.raises(RayWorkerError) as e:
        audit_many([str(a) for a in adapters], base=str(base), capabilities=("math",), limit=2, budget=0,
                   backend="hf", dtype="float32", batch_size=4, ray=cluster.address, log=kill_a_worker)
    assert e.value.exit_code == 3 and "ray worker 1" in str(e.value) and "died" in str(e.value)
    assert not ray.is_initialized()  # the run's connection ended with it


def test_ray_not_installed_is_one_line(tiny, tmp_path, cli, monkeypatch):
    """``ray`` hidden from import (``sys.modules['ray'] = None``: what Python does for a missing package)."""
    base, adapters = tiny
    monkeypatch.setitem(sys.modules, "ray", None)
    r = cli(*adapters, "--base", base, "--ray", "--out", tmp_path / "o")
    assert_one_line_error(r, "error: --ray: needs the ray extra: pip install 'adapter-auditor[ray]'")


def test_an_unreachable_address_is_one_line_within_seconds(tiny, tmp_path, cli, monkeypatch):
    pytest.importorskip("ray")
    base, adapters = tiny
    t0 = time.perf_counter()
    port = _free_port()
    r = cli(*adapters, "--base", base, "--ray", f"127.0.0.1:{port}", "--out", tmp_path / "o")
    assert_one_line_error(r, "--ray", f"no Ray cluster answers at 127.0.0.1:{port}")
    assert time.perf_counter() - t0 < 30
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")  # --ray alone connects where RAY_ADDRESS says
    env = cli(*adapters, "--base", base, "--out", tmp_path / "o", "--ray")
    assert_one_line_error(env, "error: RAY_ADDRESS: no Ray cluster answers")
    monkeypatch.delenv("RAY_ADDRESS")
    with socket.socket() as http:  # a port that accepts connections, but is no Ray cluster (an HTTP/1 server)
        http.bind(("127.0.0.1", 0))
        http.listen(1)
        t0 = time.perf_counter()
        other = cli(*adapters, "--base", base, "--ray", f"127.0.0.1:{http.getsockname()[1]}", "--out", tmp_path / "o")
    assert_one_line_error(other, "--ray", "does not speak gRPC", "not a Ray cluster's address")
    assert time.perf_counter() - t0 < 30
    bad = cli(*adapters, "--base", base, "--ray", str(adapters[0]), "--out", tmp_path / "o")
    assert_one_line_error(bad, "--ray", "is not a Ray cluster address")
    alone = cli(*adapters, "--base", base, "--ray-workers", "2", "--out", tmp_path / "o")
    assert_one_line_error(alone, "--ray-workers: needs --ray")
    served = cli(*adapters, "--base", base, "--ray", "--backend", "openai", "--endpoint", "http://127.0.0.1:9/v1",
                 "--out", tmp_path / "o")
    assert_one_line_error(served, "--ray", "--backend openai")


def test_groups_split_the_adapters_with_the_base_pass_as_worker_0s_first_unit():
    from auditor.backends.ray.placement import plan_groups

    names = [f"adapter{k}" for k in range(7)]
    assert plan_groups(names[:3], 2) == [["adapter0"], ["adapter1", "adapter2"]]
    assert plan_groups(names, 3) == [["adapter0", "adapter1"], ["adapter2", "adapter3", "adapter4"],
                                     ["adapter5", "adapter6"]]
    assert plan_groups(names[:2], 5) == [["adapter0"], ["adapter1"]]  # never more workers than adapters
    assert plan_groups(names[:1], 1) == [["adapter0"]]


@pytest.mark.slow
def test_three_zoo_adapters_on_the_embedded_base_give_the_single_process_results(cluster, tmp_path, cli,
                                                                                  monkeypatch):
    """The embedded SmolLM2 base and three zoo adapters, as the fast test does with tiny models."""
    adapters = [ROOT / "examples" / "zoo" / n for n in ("math-good", "terse", "null-selfdistill-a")]
    # two items of two capabilities: the comparison is of whole results.json files, item by item, not of figures
    args = [*adapters, "--capability", "math", "--capability", "over_refusal", "--limit", "2", "--budget", "0",
            "--backend", "hf", "--dtype", "float32", "--batch-size", "8", "--quiet"]
    for name, extra in (("single", []), ("ray", ["--ray", cluster.address])):
        # each run its own empty answer cache (AUDITOR_GENERATION_CACHE, which the workers inherit); the session's
        # local cache, and so the converted base at one path, shared
        monkeypatch.setenv("AUDITOR_GENERATION_CACHE", str(tmp_path / f"answers-{name}"))
        r = cli(*args, "--out", tmp_path / name, *extra)
        assert r.returncode == 0, r.stderr[-3000:]
    single, on_ray = _results(tmp_path / "single"), _results(tmp_path / "ray")
    assert len(single) == 3 and sorted(single) == sorted(on_ray)
    assert {n: r["verdict"]["verdict"] for n, r in single.items()} == dict.fromkeys(single, "pass")
    for name in single:
        assert normalised(on_ray[name]) == normalised(single[name]), name


