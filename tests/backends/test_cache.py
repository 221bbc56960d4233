"""The generation cache: changing the adapter, a template, a setting or the base
invalidates the right entries and nothing else (real model, real adapters)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import AUDIT, DEMO_ADAPTERS, ROOT

from auditor.backends.hf.backend import HFBackend
from auditor.cache.generations import GenerationCache, cache_info, clear_cache, generation_key
from auditor.inspect.adapter import inspect_adapter
from auditor.records import Item, Request, Variant
from auditor.util.hashing import adapter_digest, folder_digest

TERSE, MATH = DEMO_ADAPTERS / "terse-instruct-r8", DEMO_ADAPTERS / "math-arith-r8"

KEY_ARGS = dict(base="b" * 64, adapter=None, messages=[{"role": "user", "content": "2+2?"}], max_new_tokens=8,
                rendered="<|user|>2+2?<|assistant|>", settings={"backend": "hf", "dtype": "float32", "batch_size": 4})


@pytest.mark.parametrize("field,value", [
    ("base", "c" * 64), ("adapter", "a" * 64), ("messages", [{"role": "user", "content": "2+3?"}]),
    ("max_new_tokens", 9), ("rendered", "<|user|> 2+2?<|assistant|>"),
    ("settings", {"backend": "hf", "dtype": "bfloat16", "batch_size": 4}),
    ("settings", {"backend": "hf", "dtype": "float32", "batch_size": 8}),
])
def test_every_part_of_the_key_changes_it(field, value):
    assert generation_key(**KEY_ARGS) == generation_key(**dict(KEY_ARGS))
    assert generation_key(**{**KEY_ARGS, field: value}) != generation_key(**KEY_ARGS)


def test_adapter_digest_covers_weights_and_config(tmp_path):
    cfg = tmp_path / "adapter_config.json"
    cfg.write_text('{"r": 8, "lora_alpha": 16}')
    d1 = adapter_digest("0" * 64, cfg)
    assert adapter_digest("1" * 64, cfg) != d1
    cfg.write_text('{"r": 8, "lora_alpha": 32}')
    assert adapter_digest("0" * 64, cfg) != d1


def test_folder_digest_is_content_not_metadata(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text("{}")
    (tmp_path / "a" / "w.safetensors").write_bytes(b"x" * 100)
    d = folder_digest(tmp_path / "a", root=tmp_path / "c")
    (tmp_path / "a" / "w.safetensors").write_bytes(b"y" * 100)  # same size, new content
    assert folder_digest(tmp_path / "a", root=tmp_path / "c") != d
    (tmp_path / "a" / "w.safetensors").write_bytes(b"x" * 100)
    assert folder_digest(tmp_path / "a", root=tmp_path / "c") == d


def _items(n: int = 2, budget: int = 6) -> list[Item]:
    qs = ["What is 12 + 30?", "Name a colour of the sky.", "What is 7 times 6?"]
    return [Item(id=f"t/{k}", capability="math", group="CAN", messages=({"role": "user", "content": qs[k % len(qs)]},), max_new_tokens=budget, target={}) for k in range(n)]


def _backend(base, adapter_dir: Path, cache: GenerationCache, batch_size: int | str = 4, base_path: Path | None = None,
             batching: str = "auto", mix_variants: bool | str = "auto", more: dict[str, Path] | None = None):
    path = base_path or base.path
    variants = []
    for name, folder in {"adapter": adapter_dir, **(more or {})}.items():
        info = inspect_adapter(str(folder), base.path, base.name)
        variants.append(Variant.of_folder(name, folder, adapter_digest(info.sha256, folder / "adapter_config.json")))
    return HFBackend(path, variants, batch_size=batch_size, cache=cache, base_digest=folder_digest(path),
                     batching=batching, mix_variants=mix_variants)


def _run(backend: HFBackend, items: list[Item]) -> dict[tuple[str, str], str]:
    gens = backend.generate([Request(item=i, variant=v) for i in items for v in ("base", "adapter")])
    return {(g.item_id, g.variant): g.text for g in gens}


def test_cache_reuses_the_base_pass_and_invalidates_only_what_changed(base_model, tmp_path):
    root = tmp_path / "generations"
    items = _items()

    first = _backend(base_model, TERSE, c := GenerationCache(root))
    texts = _run(first, items)
    assert c.stats.misses == {"adapter": 2, "base": 2} and c.stats.hits == {} and c.stats.writes == 4

    # another adapter: the base pass is reused, only the adapter variant is generated
    other = _backend(base_model, MATH, c := GenerationCache(root))
    texts_math = _run(other, items)
    assert c.stats.hits == {"base": 2} and c.stats.misses == {"adapter": 2}
    assert {k: v for k, v in texts_math.items() if k[1] == "base"} == {k: v for k, v in texts.items() if k[1] == "base"}

    # the same adapter again: everything from the cache, and the model is never loaded
    again = _backend(base_model, TERSE, c := GenerationCache(root))
    assert _run(again, items) == texts
    assert c.stats.hits == {"adapter": 2, "base": 2} and c.stats.misses == {} and not again.model_loaded

    # a generation setting (batch size) changed: nothing is reused
    c = GenerationCache(root)
    _run(_backend(base_model, TERSE, c, batch_size=3), items)
    assert c.stats.hits == {} and c.stats.misses == {"adapter": 2, "base": 2}

    # one item's budget changed: that item only, both variants
    changed = [items[0], Item(id=items[1].id, capability="math", group="CAN", messages=items[1].messages, max_new_tokens=7, target={})]
    c = GenerationCache(root)
    _run(_backend(base_model, TERSE, c), changed)
    assert c.stats.hits == {"adapter": 1, "base": 1} and c.stats.misses == {"adapter": 1, "base": 1}


def test_changed_chat_template_or_base_never_returns_a_stale_answer(base_model, tmp_path):
    root = tmp_path / "generations"
    items = _items(1)
    _run(_backend(base_model, TERSE, GenerationCache(root)), items)
    # a copy of the base whose chat template differs by one system line (weights linked, not copied)
    edited = tmp_path / "base-edited"
    edited.mkdir()
    for f in base_model.path.iterdir():
        if f.name.endswith(".safetensors"):
            (edited / f.name).symlink_to(f)
        else:
            shutil.copy(f, edited / f.name)
    tpl = edited / "chat_template.jinja"
    tpl.write_text(tpl.read_text().replace("You are a helpful AI assistant", "You are a careful AI assistant"))
    backend = _backend(base_model, TERSE, c := GenerationCache(root), base_path=edited)
    assert "careful AI assistant" in backend.render(items[0])
    _run(backend, items)
    assert c.stats.hits == {} and c.stats.misses == {"adapter": 1, "base": 1}


def test_a_torn_entry_is_a_miss_and_is_rewritten(base_model, tmp_path):
    root = tmp_path / "generations"
    items = _items(1)
    texts = _run(_backend(base_model, TERSE, GenerationCache(root)), items)
    entries = sorted(root.glob("*/*.json"))
    assert len(entries) == 2 and not list(root.glob("*/.*.tmp"))
    entries[0].write_bytes(entries[0].read_bytes()[:20])  # what a non-atomic writer would leave after a kill
    c = GenerationCache(root)
    assert _run(_backend(base_model, TERSE, c), items) == texts
    assert c.stats.unreadable == 1 and sum(c.stats.misses.values()) == 1 and sum(c.stats.hits.values()) == 1
    assert all(json.loads(p.read_text())["format"] == 1 for p in entries)


def test_no_cache_neither_reads_nor_writes(base_model, tmp_path):
    c = GenerationCache(None)
    _run(_backend(base_model, TERSE, c), _items(1))
    assert c.stats.as_dict() == {"enabled": False, "hits": {}, "misses": {"adapter": 1, "base": 1}, "writes": 0,
                                 "unreadable": 0}


def _cli(*args, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "AUDITOR_CACHE_DIR": str(cache)}
    return subprocess.run([*AUDIT, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def test_cache_info_and_clear_commands(tmp_path):
    cache = tmp_path / "cache"
    gc = GenerationCache(cache / "generations")
    gc.put("ab" + "0" * 62, "hello", 2, {"base": "b" * 64, "adapter": None})
    gc.put("cd" + "0" * 62, "hi", 1, {"base": "b" * 64, "adapter": "a" * 64})
    (cache / "models" / "M").mkdir(parents=True)
    (cache / "models" / "M" / "config.json").write_text("{}")
    proc = _cli("cache", "info", "--json", cache=cache)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["generations"]["entries"] == 2 and info["generations"]["by_variant"] == {"base": 1, "adapter": 1}
    assert [m["name"] for m in info["models"]] == ["M"]
    assert "2 entries" in _cli("cache", "info", cache=cache).stdout

    proc = _cli("cache", "clear", cache=cache)
    assert proc.returncode == 0 and "removed 2 files" in proc.stdout, proc.stderr
    assert cache_info(cache)["generations"]["entries"] == 0 and (cache / "models" / "M").is_dir()
    assert _cli("cache", "clear", "--all", cache=cache).returncode == 0
    assert not (cache / "models").exists()


def test_cache_info_lists_every_folder_with_its_size_as_du_counts_it(tmp_path):
    cache = tmp_path / "cache"
    gc = GenerationCache(cache / "generations")
    for k in range(40):  # many small files: on disk, a block each
        gc.put(f"{k:02x}" + "0" * 62, "hello", 2, {"base": "b" * 64, "adapter": None})
    for folder, name, size in (("gguf", "base.gguf", 50_000), ("nltk_data", "punkt.zip", 3_000),
                               ("weight_space", "f" * 64 + ".json", 700), ("throughput", "cpu.json", 90)):
        (cache / folder).mkdir(parents=True)
        (cache / folder / name).write_bytes(b"x" * size)
    (tmp_path / "shared-models").mkdir()
    (tmp_path / "shared-models" / "weights").write_bytes(b"x" * 100_000)
    (cache / "models").symlink_to(tmp_path / "shared-models", target_is_directory=True)
    info = cache_info(cache)
    folders = {f["name"]: f for f in info["folders"]}
    assert set(folders) == {"generations", "gguf", "nltk_data", "weight_space", "throughput", "models"}
    if shutil.which("du"):
        for name, f in folders.items():  # du -s: allocated blocks, links not followed
            du = subprocess.run(["du", "-s", "--block-size=1", str(cache / name)], capture_output=True, text=True)
            assert f["bytes"] == int(du.stdout.split()[0]), (name, f, du.stdout)
        du = subprocess.run(["du", "-s", "--block-size=1", str(cache)], capture_output=True, text=True)
        assert info["total_bytes"] == int(du.stdout.split()[0])
    g = folders["generations"]
    assert g["files"] == 40 and g["file_bytes"] == info["generations"]["bytes"] and g["bytes"] > g["file_bytes"]
    assert folders["gguf"]["file_bytes"] == 50_000 and folders["models"]["link_to"] == str(tmp_path / "shared-models")
    out = _cli("cache", "info", cache=cache).stdout
    assert "on disk, as du counts it" in out
    for name in ("gguf", "nltk_data", "weight_space", "throughput"):
        assert f"  {name}: " in out, out
    assert re.search(r"  models: [0-9.]+ K?i?B on disk, 0 files .*not followed", out), out  # the link, not its target


def test_clear_all_unlinks_a_symlinked_folder_without_following_it(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "keep.txt").write_text("x")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(real, target_is_directory=True)
    clear_cache(cache, everything=True)
    assert not (cache / "models").exists() and (real / "keep.txt").is_file()


def test_second_audit_comes_from_the_cache_and_gives_the_same_results(tmp_path, cli):
    """A warm re-audit loads no model and its results.json equals the cold one
    apart from timings, timestamps and the cache's own counters."""
    runs = []
    for k in range(2):
        out = tmp_path / f"run{k}"
        proc = cli(TERSE, "--capability", "math", "--limit", "2", "--out", out)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads((out / "results.json").read_text()))
        assert runs[-1]["verdict"]["verdict"] == "pass"
        # the pre-screen (computed, then read from the cache) is announced before any model output and timed
        log = proc.stderr
        assert "weight-space pre-screen: 1 adapter, 60 adapted modules" in log, log
        assert log.index("weight-space pre-screen: ") < log.index("backend: "), log
        assert runs[-1]["run"]["timings"]["weight_space_s"] >= 0
    cold, warm = (r["run"] for r in runs)
    assert warm["cache"]["hits"] == {"adapter": 2, "base": 2} and warm["cache"]["misses"] == {}
    assert warm["model_loaded"] is False and warm["generated"] == {}
    assert cold["generated"] == {"adapter": 2, "base": 2} or cold["cache"]["hits"]  # base may come from an earlier test
    for r in runs:
        # what this run generated, and the engine's record of it (its continuous-batching streams)
        for k in ("created_at", "timings", "cache", "model_loaded", "generated", "new_tokens", "hf"):
            r["run"].pop(k)
    assert runs[0] == runs[1]


def test_several_adapters_share_one_base_pass(tmp_path, cli):
    out = tmp_path / "multi"
    proc = cli(TERSE, MATH / "adapter_model.safetensors", "--capability", "math", "--limit", "2", "--no-cache",
               "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "math-arith-r8", "terse-instruct-r8"]
    terse, math = (json.loads((out / n / "results.json").read_text()) for n in ("terse-instruct-r8", "math-arith-r8"))
    assert terse["verdict"]["verdict"] == math["verdict"]["verdict"] == "pass"
    # the base variant was generated once and both reports compare against the same answers
    assert terse["run"]["generated"] == {"base": 2, "adapter": 2} == math["run"]["generated"]
    assert terse["run"]["adapters_in_run"] == 2
    assert "weight-space pre-screen: 2 adapters" in proc.stderr
    assert terse["run"]["timings"]["weight_space_s"] >= 0 and math["run"]["timings"]["weight_space_s"] >= 0
    assert [i["base"]["text"] for i in terse["items"]] == [i["base"]["text"] for i in math["items"]]
    assert terse["adapter"]["sha256"] != math["adapter"]["sha256"]
    assert [i["adapter"]["text"] for i in terse["items"]] != [i["adapter"]["text"] for i in math["items"]]
    index = (out / "index.html").read_text()
    assert 'href="terse-instruct-r8/report.html"' in index and 'href="math-arith-r8/report.html"' in index
    failed = terse["verdict"]["verdict"] == "fail" or math["verdict"]["verdict"] == "fail"
    assert proc.returncode == (1 if failed else 0)


def test_the_same_adapter_twice_is_refused(tmp_path):
    proc = subprocess.run([*AUDIT, str(TERSE), str(TERSE / "adapter_model.safetensors"), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "same adapter" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_mixed_variant_batches_give_the_same_answers_as_variant_by_variant(base_model):
    """Base and adapter rows in one generate call (peft adapter_names) == base with the
    adapter disabled and adapter alone, batch by batch."""
    items = _items(3, budget=8)
    mixed = _backend(base_model, TERSE, GenerationCache(None))
    assert mixed.mix_variants
    texts = _run(mixed, items)
    separate = _backend(base_model, TERSE, GenerationCache(None))
    separate.mix_variants = False
    separate._generate_batch(["Hi"], 2)  # the model is loaded lazily here; switching adapters must still work
    assert _run(separate, items) == texts
    assert mixed.mix_variants  # peft accepted the mixed batch (no silent fallback)


def test_mix_variants_auto_mixes_on_the_cpu_only_decision_without_gpu(base_model):
    """``mix_variants="auto"`` decides from the device name (no model is loaded, so a
    ``cuda`` name can be given on this GPU-less machine): mixed batches on the CPU,
    one variant per call on a GPU (benchmarks/RESULTS.md, gpu_bench), and the choice
    is part of the cache key's settings."""
    adapters = [Variant.of_folder("adapter", TERSE, "digest-of-terse")]
    cpu = HFBackend(base_model.path, adapters, device="cpu", batching="static")
    gpu = HFBackend(base_model.path, adapters, device="cuda:0", batching="static")
    assert cpu.mix_variants and not gpu.mix_variants
    assert cpu.settings()["mixed_variants"] is True and gpu.settings()["mixed_variants"] is False
    assert HFBackend(base_model.path, adapters, device="cuda", mix_variants=True).mix_variants
    assert not HFBackend(base_model.path, adapters, device="cpu", mix_variants=False).mix_variants


def test_auto_batch_size_fits_the_kv_cache_in_half_the_free_memory():
    from types import SimpleNamespace

    from auditor.backends.hf.batching import auto_batch_size

    smol = SimpleNamespace(num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, hidden_size=576,
                           vocab_size=49152)
    # per row at 1000 tokens, fp32: (2*30*3 + 2*9) * 64 * 4 * 1000 + 4 * 49152 bytes
    per_row = 198 * 64 * 4 * 1000 + 4 * 49152
    assert auto_batch_size(smol, 1000, 2, 2**30, 4, cap=64) == (2**29) // (per_row * 2) == 5
    assert auto_batch_size(smol, 1000, 1, 2**30, 4, cap=64) == 10  # one variant left: twice the items
    assert auto_batch_size(smol, 1000, 2, 2**40, 4, cap=64) == 64  # capped
    assert auto_batch_size(smol, 1000, 2, 10**6, 4, cap=64) == 1  # never below one


def test_auto_batch_size_runs_on_the_real_model(base_model):
    items = _items(2)
    backend = _backend(base_model, TERSE, GenerationCache(None), batch_size="auto", batching="static")
    _run(backend, items)
    assert list(backend.stats.batch_sizes_used) == [6] and backend.stats.batch_sizes_used[6] >= 2
    assert backend.stats.generated == {"base": 2, "adapter": 2}


def test_continuous_batching_gives_static_generate_s_answers_in_fp32(base_model):
    """transformers' continuous batching (one stream per variant) against static generate: the same
    greedy fp32 answers, and results.json's engine record says how they were made."""
    items = _items(6)
    static = _backend(base_model, TERSE, GenerationCache(None), batching="static")
    streams = _backend(base_model, TERSE, GenerationCache(None), batch_size=4, batching="continuous", mix_variants=False)
    assert static.dtype == streams.dtype == "float32"
    assert _run(streams, items) == _run(static, items)
    info = streams.run_info("adapter")
    assert info["batching"] == "continuous" and [s["variant"] for s in info["streams"]] == ["base", "adapter"]
    assert all(s["requests"] == 6 and s["slots"] == 4 for s in info["streams"])
    # the engine path keys the answers: a stream's are never served to the static path, or back
    assert streams.settings()["batching"] == "continuous" and "batching" not in static.settings()


def test_an_answer_shown_worked_examples_stops_where_it_ends_on_both_engine_paths(base_model, tmp_path):
    """An item with worked examples and stop strings (lm-eval's ``until``) is decoded only until its answer ended:
    the text the scorer reads is the whole budget's answer cut at the first stop string, on the continuous path
    (decoded, and drafted from the base's answer) and the static path alike, with fewer tokens generated, and such
    answers are cached apart from whole-budget ones."""
    import dataclasses

    shots = ({"role": "user", "content": "What is 1 + 1?"}, {"role": "assistant", "content": "1 + 1 = 2. Done."})
    whole = [dataclasses.replace(it, max_new_tokens=16, fewshot=shots, fewshot_always=True) for it in _items(2)]
    stopped = [dataclasses.replace(it, until=(".",)) for it in whole]
    by_id = {it.id: it for it in stopped}

    def run(backend, items, variants=("base", "adapter")):
        return {(g.item_id, g.variant): g for g in backend.generate([Request(item=i, variant=v) for i in items
                                                                      for v in variants])}

    streams = _backend(base_model, TERSE, GenerationCache(None), batching="continuous", mix_variants=False)
    want = run(streams, whole)
    cut = {k: by_id[k[0]].answer(g.text, plain=False) for k, g in want.items()}
    assert any(c != want[k].text for k, c in cut.items())  # the stop strings end some answers before the budget
    static = _backend(base_model, TERSE, GenerationCache(tmp_path), batching="static", mix_variants=False)
    for path, backend in (("continuous", streams), ("static", static), ("drafted", streams)):
        backend.draft = "base" if path == "drafted" else backend.draft
        got = run(backend, stopped)
        assert {k: g.text for k, g in got.items()} == cut, path
        assert all(got[k].n_tokens <= want[k].n_tokens for k in got)
        assert sum(g.n_tokens for g in got.values()) < sum(g.n_tokens for g in want.values()), path
    assert streams.drafts[0]["drafted"] == len(stopped)
    # the same items without stop strings are not served the stopped answers
    run(static, whole, ("base",))
    assert static.cache.stats.misses.get("base") == len(whole) + len(stopped)


def test_the_slot_sweep_measures_decoding_and_chooses_the_fewest_near_the_best(base_model):
    from collections import Counter

    from auditor.backends.hf.throughput import STEPS_PER_LEVEL, UNMEASURED_SLOTS, choose, staircase, sweep

    assert choose({8: 50.0, 16: 80.0, 32: 82.0, 64: 81.0}) == 16  # 80 is within 5% of 82
    assert choose({8: 50.0, 16: 60.0, 32: 90.0}) == 32
    assert choose({}) == UNMEASURED_SLOTS  # a sweep that timed nothing: a middle count, not a failed audit
    backend = _backend(base_model, TERSE, GenerationCache(None), batching="continuous")
    # one stream: 16 requests decode together for STEPS_PER_LEVEL steps, then 8 of them for as many (the last step
    # untimed); the prefill and any step where a request still prefills are not among the timed steps
    steps = staircase(backend.model, 49152, [8, 16])
    assert Counter(n for n, _ in steps) == {16: STEPS_PER_LEVEL, 8: STEPS_PER_LEVEL - 1}
    assert all(s > 0 for _, s in steps)
    rates = sweep(backend.model, 49152, limit=16)
    assert set(rates) == {8, 16} and all(v > 0 for v in rates.values())
    # the hook that stamps the steps is gone afterwards
    assert not backend.model.get_base_model()._forward_pre_hooks


def test_a_slot_sweep_below_the_smallest_count_is_refused_before_any_model_runs():
    from auditor.backends.hf.throughput import sweep

    with pytest.raises(ValueError, match="the smallest count is 8"):
        sweep(None, 49152, limit=4)


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_bad_batch_size_is_a_usage_error(tmp_path, value):
    proc = subprocess.run([*AUDIT, str(TERSE), "--batch-size", value, "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--batch-size" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
