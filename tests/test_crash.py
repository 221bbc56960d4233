"""Crash safety: an audit killed with SIGKILL during base-model conversion,
generation or report writing leaves nothing that a later run takes as valid, and
the next run gives the same results as an uninterrupted one; audits started at
once on one cache directory do not corrupt each other.

Every run here is a real ``audit`` process on the embedded base with a tiny
workload (3 multiple-choice items of 12 tokens, one per batch). Results are compared without what
legitimately differs between runs: timestamps, timings, cache counters, the engine's
record of what this process decoded (``run.hf``) and the cache's own path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import AUDIT, HIDDEN, KV, ROOT, write_adapter

pytestmark = pytest.mark.slow
ARGS = ["--capability", "knowledge", "--limit", "3", "--batch-size", "1"]
REPORTS = ("junit.xml", "report.html", "results.json", "summary.md")


def _cache(folder: Path, models: bool = True) -> Path:
    """A fresh cache directory; with ``models`` it shares the converted base (as conftest does)."""
    folder.mkdir(parents=True)
    if models:
        user = Path(os.environ["AUDITOR_USER_CACHE_DIR"])
        (folder / "models").symlink_to(user / "models", target_is_directory=True)
    return folder


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "AUDITOR_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}


def _start(adapter: Path, out: Path, cache: Path, cmd: list[str] | None = None,
           extra: tuple[str, ...] = ()) -> subprocess.Popen:
    log = open(out.parent / f"{out.name}.log", "w")
    return subprocess.Popen([*(cmd or AUDIT), str(adapter), *ARGS, *extra, "--out", str(out)], cwd=ROOT,
                            env=_env(cache),
                            stdout=log, stderr=subprocess.STDOUT)


def _finish(proc: subprocess.Popen, out: Path, timeout: int = 600) -> dict:
    rc = proc.wait(timeout=timeout)
    log = (out.parent / f"{out.name}.log").read_text()
    assert rc == 0, log  # the near-null adapter passes 3 knowledge items
    res = json.loads((out / "results.json").read_text())
    assert res["verdict"]["verdict"] == "pass"
    return res


def _kill_when(proc: subprocess.Popen, ready, what: str, timeout: float = 300) -> None:
    """SIGKILL ``proc`` as soon as ``ready()`` is true; fail if it ends first."""
    t0 = time.monotonic()
    while not ready():
        assert proc.poll() is None, f"the audit ended before {what}"
        assert time.monotonic() - t0 < timeout, f"no {what} after {timeout} s"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL


def _comparable(r: dict) -> dict:
    """results.json without what differs between equal runs (times, cache counters, what was decoded, cache path)."""
    r = json.loads(json.dumps(r))
    for k in ("created_at", "timings", "cache", "generated", "new_tokens", "model_loaded", "hf"):
        r["run"].pop(k)
    r["base"].pop("path")
    for p in r["run"].get("prompts", {}).values():  # the base folder's path again (it is under each cache)
        for k in ("template_file", "tokenizer_path"):
            p.pop(k, None)
    return r


@pytest.fixture(scope="module")
def adapter(tmp_path_factory) -> Path:
    """rank_pattern gives v_proj rank 8 > r = 4 (fault kind 9); the declared base and the card's
    label carry terminal escapes (untrusted text)."""
    g = torch.Generator().manual_seed(3)
    t = {}
    for i in range(30):
        for m, out_f, r in (("q_proj", HIDDEN, 4), ("v_proj", KV, 8)):
            t[f"base_model.model.model.layers.{i}.self_attn.{m}.lora_A.weight"] = torch.randn(r, HIDDEN, generator=g) * .05
            t[f"base_model.model.model.layers.{i}.self_attn.{m}.lora_B.weight"] = torch.randn(out_f, r, generator=g) * .05
    return write_adapter(tmp_path_factory.mktemp("crash") / "a", tensors=t,
                         config={"rank_pattern": {"v_proj": 8},
                                 "base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M\x1b]0;pwned\x07"},
                         card='---\nnominal_label: "math\\e[2J\\e]0;pwned\\a"\n---\n# card\n')


@pytest.fixture(scope="module")
def reference_run(adapter, tmp_path_factory) -> tuple[dict, Path, Path]:
    """The uninterrupted run every interrupted one is compared with: (results, its --out, its cache)."""
    root = tmp_path_factory.mktemp("ref")
    out, cache = root / "out", _cache(root / "cache")
    proc = _start(adapter, out, cache)
    r = _finish(proc, out)
    log = (root / "out.log").read_text()
    assert not {"\x1b", "\x07"} & set(log), "terminal escapes from the adapter reached the terminal"
    assert "LoRA rank 8 (config r=4)" in " ".join(log.split())
    assert r["adapter"]["max_rank"] == 8 and set(r["adapter"]["ranks"].values()) == {4, 8}
    assert r["adapter"]["r"] == 4
    return r, out, cache


@pytest.fixture(scope="module")
def reference(reference_run) -> dict:
    return reference_run[0]


def test_kill_during_generation_then_resume(adapter, reference, tmp_path):
    cache = _cache(tmp_path / "cache")
    out = tmp_path / "killed"
    proc = _start(adapter, out, cache)
    _kill_when(proc, lambda: any((cache / "generations").glob("*/*.json")), "a finished batch")
    assert not out.exists() or not any(out.iterdir())  # no report from a killed audit
    again = _finish(_start(adapter, tmp_path / "resumed", cache), tmp_path / "resumed")
    assert sum(again["run"]["cache"]["hits"].values()) >= 1  # the finished batch was kept
    assert _comparable(again) == _comparable(reference)


# The audit in a wrapper that SIGKILLs itself at the n-th rename into --out: the temporary file is
# written, the rename that would publish it never happens (a kill in the middle of report writing).
_KILL_AT_RENAME = """
import os, signal, sys
out, n = os.path.abspath(sys.argv[1]), int(sys.argv[2])
real, seen = os.replace, []
def replace(src, dst, *a, **k):
    if os.path.abspath(str(dst)).startswith(out + os.sep):
        seen.append(dst)
        if len(seen) == n:
            os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *a, **k)
os.replace = replace
sys.argv = ["audit", *sys.argv[3:]]
from auditor.cli import main
main()
"""


def _whole(name: str, data: bytes) -> bool:
    """A complete report file (as far as its format shows)."""
    import xml.etree.ElementTree as ET

    if name == "results.json":
        return json.loads(data)["schema_version"] > 0
    if name == "junit.xml":
        return ET.fromstring(data) is not None
    if name == "report.html":
        return data.rstrip().endswith(b"</html>")
    return data.endswith(b"\n")


@pytest.mark.parametrize("n", [1, 3])
def test_kill_during_report_writing(adapter, reference_run, tmp_path, n):
    reference, warm, cache = reference_run  # the reference's cache answers: these runs load no model
    out = tmp_path / "out"
    out.mkdir()
    for name in REPORTS:  # an older complete report is in the folder
        (out / name).write_bytes((warm / name).read_bytes())
    before = {name: (out / name).read_bytes() for name in REPORTS}
    killer = [sys.executable, "-c", _KILL_AT_RENAME, str(out), str(n)]
    proc = _start(adapter, out, cache, cmd=[*killer, "run"])
    assert proc.wait(timeout=600) == -signal.SIGKILL
    # every report file is the old one or a whole new one; leftovers are hidden temporary files
    for name in REPORTS:
        data = (out / name).read_bytes()
        assert data == before[name] or _whole(name, data), name
    assert all(p.name in REPORTS or p.name.startswith(".") and p.name.endswith(".tmp") for p in out.iterdir())
    again = _finish(_start(adapter, out, cache), out)
    assert _comparable(again) == _comparable(reference) and not again["run"]["model_loaded"]
    proc = subprocess.run([*AUDIT, "report", str(out / "results.json"), "--out", str(tmp_path / "rerendered")],
                          cwd=ROOT, capture_output=True, text=True, env=_env(cache))
    assert proc.returncode == 0, proc.stderr


def test_kill_during_conversion_then_two_audits_at_once(adapter, reference, tmp_path):
    """A fresh cache: the base is converted from the embedded GGUF (about a minute here). The
    first audit is killed while converting; two audits then start together on the same cache:
    one converts (under the file lock), the other waits, both generate into the same entries;
    both are --quiet, and neither prints anything."""
    cache = _cache(tmp_path / "cache", models=False)
    models = cache / "models"

    def converting() -> bool:
        tmp = [d for d in models.glob(".SmolLM2-135M-Instruct-*") if d.is_dir()] if models.is_dir() else []
        return bool(tmp) and (any(tmp[0].iterdir()) or time.time() - tmp[0].stat().st_mtime > 20)

    proc = _start(adapter, tmp_path / "killed", cache)
    _kill_when(proc, converting, "conversion")
    assert not [d for d in models.iterdir() if d.is_dir() and not d.name.startswith(".")]  # nothing published
    outs = [tmp_path / "one", tmp_path / "two"]
    procs = [_start(adapter, o, cache, extra=("--quiet",)) for o in outs]
    results = [_finish(p, o, timeout=900) for p, o in zip(procs, outs)]
    for o in outs:  # --quiet prints nothing, whichever of the two converted (no tqdm bar of the GGUF loader)
        assert (o.parent / f"{o.name}.log").read_text() == ""
    for r in results:
        assert _comparable(r) == _comparable(reference)
    done = sorted(d.name for d in models.iterdir() if d.is_dir())
    assert len(done) == 1 and not done[0].startswith(".")  # one conversion, the killed one's leftovers removed
    for entry in (cache / "generations").glob("*/*"):  # every cache entry whole, no temporary file left
        assert entry.suffix == ".json" and json.loads(entry.read_bytes())["text"] is not None
