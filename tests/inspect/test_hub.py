"""Hub ids for --base and adapters, resolved from a local hub-cache layout with HF_HUB_OFFLINE=1
(tests cannot reach the hub): the snapshot is used and its commit is recorded in results.json."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import AUDIT, DEMO_ADAPTERS, ROOT

from auditor.errors import AuditInputError
from auditor.reports.results_file import schema_error

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _fake_hub_repo(hub: os.PathLike, repo_id: str, files: dict, commit: str = COMMIT, ref: str = "main"):
    """Lay out ``files`` (name → source path) as huggingface_hub's cache does:
    models--owner--name/{refs/<ref>, snapshots/<commit>/...}."""
    root = hub / ("models--" + repo_id.replace("/", "--"))
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / ref).write_text(commit)
    for name, src in files.items():
        shutil.copy(src, snap / name)
    return snap


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))  # for the CLI subprocesses
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))  # read once at import otherwise
    return hub


def _adapter_files(name="terse-instruct-r8"):
    src = DEMO_ADAPTERS / name
    return {f: src / f for f in ("adapter_config.json", "adapter_model.safetensors", "README.md")}


def test_adapter_hub_id_resolves_to_the_cached_snapshot(hub_cache):
    from auditor.inspect import hub

    snap = _fake_hub_repo(hub_cache, "acme/terse-adapter", _adapter_files())
    assert hub.looks_like_hub_id("acme/terse-adapter") and not hub.looks_like_hub_id(str(DEMO_ADAPTERS))
    ref = hub.resolve("acme/terse-adapter", "adapter")
    assert ref.path == snap and ref.revision == COMMIT and ref.requested == "main"
    ref = hub.resolve(f"acme/terse-adapter@{COMMIT}", "adapter")
    assert ref.path == snap and ref.requested == COMMIT


def test_base_hub_id_resolves_and_records_the_revision(hub_cache, base_model):
    from auditor.inspect.base_model import resolve_base

    files = {p.name: p for p in base_model.path.iterdir() if p.is_file()}
    snap = _fake_hub_repo(hub_cache, "HuggingFaceTB/SmolLM2-135M-Instruct", files)
    b = resolve_base("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert b.path == snap.resolve() and b.name == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert b.hub == {"repo_id": "HuggingFaceTB/SmolLM2-135M-Instruct", "requested": "main", "revision": COMMIT}
    assert b.source == f"hub:HuggingFaceTB/SmolLM2-135M-Instruct@{COMMIT}"


@pytest.mark.parametrize("arg,needle", [
    ("acme/not-cached", "as a hub id it is not in the local Hugging Face cache"),
    ("acme/terse-adapter@v9", "not in the local Hugging Face cache at revision 'v9'"),
])
def test_unresolvable_hub_ids_are_one_line_errors(hub_cache, arg, needle):
    from auditor.inspect import hub

    _fake_hub_repo(hub_cache, "acme/terse-adapter", _adapter_files())
    with pytest.raises(AuditInputError, match=needle):
        hub.resolve(arg, "adapter")
    proc = subprocess.run([*AUDIT, arg, "--out", str(hub_cache.parent / "o")], capture_output=True, text=True,
                          cwd=ROOT, env=os.environ)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and arg in proc.stderr and needle in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_audit_of_a_hub_adapter_records_its_commit(hub_cache, tmp_path):
    _fake_hub_repo(hub_cache, "acme/terse-adapter", _adapter_files())
    out = tmp_path / "o"
    proc = subprocess.run([*AUDIT, "acme/terse-adapter", "--capability", "math", "--limit", "1", "--out", str(out),
                           "--quiet"], capture_output=True, text=True, cwd=ROOT, env=os.environ, timeout=1800)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "results.json").read_text())
    assert r["adapter"]["hub"] == {"repo_id": "acme/terse-adapter", "requested": "main", "revision": COMMIT}
    assert r["adapter"]["path"].endswith(f"snapshots/{COMMIT}") and schema_error(r) is None
    assert "acme/terse-adapter@main → commit " + COMMIT in (out / "report.html").read_text()


def _two_checkpoints(hub_cache):
    """One repository holding two adapters in subfolders, as training runs push them
    (``<run>/checkpoint-N/``): terse-instruct-r8 at checkpoint-500, math-arith-r8 at checkpoint-1000."""
    files = {f"run-5epochs/checkpoint-500/{n}": p for n, p in _adapter_files().items()}
    files |= {f"run-5epochs/checkpoint-1000/{n}": p for n, p in _adapter_files("math-arith-r8").items()}
    snap = _fake_hub_repo(hub_cache, "acme/medai", {})
    for name, src in files.items():
        (snap / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, snap / name)
    return snap


def test_a_subfolder_of_a_hub_repository_names_one_adapter(hub_cache):
    from auditor.inspect import hub

    snap = _two_checkpoints(hub_cache)
    assert hub.looks_like_hub_id("acme/medai:run-5epochs/checkpoint-500")
    a = hub.resolve("acme/medai:run-5epochs/checkpoint-500", "adapter")
    b = hub.resolve(f"acme/medai@{COMMIT}:run-5epochs/checkpoint-1000/", "adapter")
    assert a.path == snap / "run-5epochs" / "checkpoint-500" and b.path == snap / "run-5epochs" / "checkpoint-1000"
    assert (a.path / "adapter_config.json").read_bytes() == (DEMO_ADAPTERS / "terse-instruct-r8" /
                                                             "adapter_config.json").read_bytes()
    assert a.as_dict() == {"repo_id": "acme/medai", "requested": "main", "revision": COMMIT,
                           "subfolder": "run-5epochs/checkpoint-500"}
    assert b.as_dict()["subfolder"] == "run-5epochs/checkpoint-1000" and b.requested == COMMIT
    # the repository's root holds no adapter: without a subfolder there is nothing to audit there
    assert hub.resolve("acme/medai", "adapter").subfolder == "" and "subfolder" not in hub.resolve(
        "acme/medai", "adapter").as_dict()


@pytest.mark.parametrize("arg,needle", [
    ("acme/medai:run-5epochs/checkpoint-9", ("no folder 'run-5epochs/checkpoint-9' in the local Hugging Face "
                                             f"cache's snapshot of acme/medai at commit {COMMIT} (HF_HUB_OFFLINE=1)")),
    ("acme/medai:run-5epochs/../../x", "subfolder 'run-5epochs/../../x' must be a plain path inside the repository"),
    ("acme/medai:a//b", "subfolder 'a//b' must be a plain path"),
])
def test_a_bad_subfolder_is_a_one_line_error(hub_cache, arg, needle):
    from auditor.inspect import hub

    _two_checkpoints(hub_cache)
    with pytest.raises(AuditInputError, match=re.escape(needle)):
        hub.resolve(arg, "adapter")
    for argv in ([arg], [str(DEMO_ADAPTERS / "terse-instruct-r8"), "--baseline", arg]):
        proc = subprocess.run([*AUDIT, *argv, "--out", str(hub_cache.parent / "o")], capture_output=True, text=True,
                              cwd=ROOT, env=os.environ, check=False)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"error: {arg}: ") and needle in proc.stderr
        assert not (hub_cache.parent / "o").exists()


@pytest.mark.slow
def test_audit_of_two_hub_subfolders_records_commit_and_subfolder(hub_cache, tmp_path):
    """One checkpoint audited against the other as --baseline, both named by subfolder, offline."""
    _two_checkpoints(hub_cache)
    out = tmp_path / "o"
    proc = subprocess.run([*AUDIT, "acme/medai:run-5epochs/checkpoint-1000", "--baseline",
                           "acme/medai@main:run-5epochs/checkpoint-500", "--capability", "math", "--limit", "1",
                           "--out", str(out), "--quiet"], capture_output=True, text=True, cwd=ROOT, env=os.environ,
                          timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr
    r = json.loads((out / "results.json").read_text())
    assert schema_error(r) is None
    assert r["adapter"]["hub"] == {"repo_id": "acme/medai", "requested": "main", "revision": COMMIT,
                                   "subfolder": "run-5epochs/checkpoint-1000"}
    assert r["adapter"]["path"].endswith(f"snapshots/{COMMIT}/run-5epochs/checkpoint-1000")
    assert r["baseline"]["adapter"]["hub"]["subfolder"] == "run-5epochs/checkpoint-500"
    assert r["adapter"]["sha256"] != r["baseline"]["adapter"]["sha256"]
    assert f"acme/medai@main:run-5epochs/checkpoint-1000 → commit {COMMIT}" in (out / "report.html").read_text()
