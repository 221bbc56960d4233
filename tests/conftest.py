"""Shared fixtures. Real parts only: the embedded SmolLM2 base (converted once
into the user cache), the third-party adapter and data in ../shared, and
adapters the tests build from real tensors.

Tests that read ../shared (real benchmark files, the third-party adapter) are marked
:data:`needs_shared`: without the folder they are skipped with that reason, except in CI
(``CI=true``), where its absence fails the run before any test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# test data (real benchmark files, third-party adapters) lives in shared/ beside the clone
SHARED = Path(os.environ.get("AUDITOR_SHARED_DIR", ROOT.parent / "shared"))
SHARED_PRESENT = (SHARED / "adapters").is_dir() and (SHARED / "data").is_dir()
_NO_SHARED = f"test data folder {SHARED} not found: put shared/ beside the clone or set AUDITOR_SHARED_DIR"
#: for tests that read ../shared: skipped without it (CI fails instead, see pytest_sessionstart)
needs_shared = pytest.mark.skipif(not SHARED_PRESENT, reason=_NO_SHARED)
MEDICAL = SHARED / "adapters" / "smollm-medical-flashcards-ckpt500"
DEMO_ADAPTERS = ROOT / "examples" / "adapters"
AUDIT = [sys.executable, "-m", "auditor.cli"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str, code: int = 2) -> str:
    """A refused run: exit ``code`` (2: bad input), stderr exactly one ``error: …`` line (no traceback,
    no library log line) containing every needle; returns that line."""
    assert proc.returncode == code, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


#: the session cache's folder, for the xdist workers the controller starts (they inherit its environment)
_SESSION_CACHE_ENV = "AUDITOR_TEST_SESSION_CACHE"


def _session_cache() -> None:
    """A fresh generation cache per test session (answers are never carried over
    from an earlier session), sharing the user's converted base model and NLTK
    data through symlinks so the one-minute conversion is not redone; the machine's measured
    continuous-batching throughput (``throughput/``, a property of the machine, not of any answer) too."""
    import atexit
    import shutil
    import tempfile

    from auditor.util.files import cache_dir

    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(_SESSION_CACHE_ENV):
        # an xdist worker (scripts/test.sh runs the suite on every core): the controller's session cache, so an
        # answer one worker generated serves the others as it would in one process; it is safe for several
        # writers (tests/backends/test_cache_shared.py), and the controller removes it at its exit
        os.environ["AUDITOR_CACHE_DIR"] = os.environ[_SESSION_CACHE_ENV]
        return
    user = cache_dir()
    session = Path(tempfile.mkdtemp(prefix="auditor-test-cache-"))
    for shared in ("models", "nltk_data", "throughput"):
        (user / shared).mkdir(exist_ok=True)
        (session / shared).symlink_to(user / shared, target_is_directory=True)
    os.environ["AUDITOR_USER_CACHE_DIR"] = str(user)
    os.environ["AUDITOR_CACHE_DIR"] = os.environ[_SESSION_CACHE_ENV] = str(session)
    atexit.register(shutil.rmtree, session, True)  # removes the symlinks, not what they point to


_session_cache()


def pytest_sessionstart(session: pytest.Session) -> None:
    if not SHARED_PRESENT and os.environ.get("CI", "").lower() == "true":
        raise pytest.UsageError(f"{_NO_SHARED} (CI=true: the tests that need it must run)")


#: the test files that take longest, longest first (seconds of one worker, measured 2026-12-05 on 2 cores under
#: ``scripts/test.sh``): handed out first, so that the run does not end with one of them alone on one worker
LONGEST_FILES = ("test_verdicts.py",  # the demo audit (two adapters, every default): about 5 min on one thread
                 "test_cli.py", "backends/test_ray.py", "callback/test_audit_callback.py",  # 460, 195, 190 s
                 "test_crash.py", "backends/test_cache.py", "backends/test_cache_shared.py",  # 140, 135, 115 s
                 "backends/test_vllm.py", "inspect/test_tokenizer_files.py", "test_model_families.py",  # 110, 100, 95 s
                 "backends/test_openai.py", "backends/test_vllm_setup.py", "inspect/test_base_model.py")  # 80, 80, 60 s
#: the test files that wait for a session fixture another file starts (:func:`demo_pair`): handed out last
LAST_FILES = ("reports/test_browser.py",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest test files first (:data:`LONGEST_FILES`), then the other files that hold slow (real-model,
    end-to-end) tests, then the rest, then :data:`LAST_FILES`; each file's tests in their order. Under xdist (``scripts/test.sh``:
    ``--dist loadfile``, each file whole on one worker) a long file handed out last would run alone at the end
    while the other workers idle (``--no-loadscope-reorder`` keeps xdist from re-sorting the files by their
    number of tests). The order changes no result: every test sets up what it needs."""
    tests = Path(__file__).resolve().parent
    rank = {tests / name: k for k, name in enumerate(LONGEST_FILES)}
    last = {tests / name for name in LAST_FILES}
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    # a stable sort: the order is kept otherwise
    items.sort(key=lambda item: rank.get(item.path, len(rank) + (item.path not in slow) + 2 * (item.path in last)))


def _audit_once(factory: pytest.TempPathFactory, name: str, args: list[str],
                timeout: int) -> tuple[subprocess.CompletedProcess, Path]:
    """``audit *args --out FOLDER --quiet`` run once per test run, whatever the number of workers: the first
    xdist worker to ask runs it under a file lock (the pattern pytest-xdist documents for a session fixture
    that must run once), the others wait and read what it wrote. Returns the process and FOLDER. A test that
    changes a report copies it first."""
    from filelock import FileLock

    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    folder, record = root / name, root / f"{name}.json"
    with FileLock(str(root / f"{name}.lock")):
        if not record.is_file():
            argv = [*AUDIT, *args, "--out", str(folder), "--quiet"]
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
            record.write_text(json.dumps({"args": argv, "returncode": proc.returncode, "stdout": proc.stdout,
                                          "stderr": proc.stderr}))
    r = json.loads(record.read_text())
    return subprocess.CompletedProcess(r["args"], r["returncode"], r["stdout"], r["stderr"]), folder


@pytest.fixture(scope="session")
def demo_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """The README's demo audit: the mislabelled ``terse-instruct-r8`` and the zoo's ``math-good`` in one run
    (one base pass), every default (smoke suite, default policy, ``--dtype auto``, rounds): the process, and
    the folder with one report folder per adapter."""
    return _audit_once(tmp_path_factory, "demo-pair", [str(DEMO_ADAPTERS / "terse-instruct-r8"),
                                                       str(ROOT / "examples" / "zoo" / "math-good")], 3000)


@pytest.fixture(scope="session")
def failing_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    """The mislabelled demo adapter (``examples/adapters/terse-instruct-r8``) on math and IFEval (16 items
    each, fp32, a 96-item budget, ``--quiet``): the audit process and its report folder."""
    return _audit_once(tmp_path_factory, "failing-demo", [
        str(DEMO_ADAPTERS / "terse-instruct-r8"), "--capability", "math", "--capability", "ifeval", "--limit", "16",
        "--budget", "96", "--dtype", "float32"], 1800)

# SmolLM2-135M: hidden 576, 9 query heads / 3 kv heads of 64, MLP 1536, 30 layers
HIDDEN, KV, MLP, LAYERS = 576, 192, 1536, 30


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(*args)``: the ``audit`` entry point run in this process (no interpreter start-up per
    case), returning what a subprocess would: exit code, stdout, stderr."""
    from auditor import cli as cli_module

    def run(*args) -> subprocess.CompletedProcess:
        monkeypatch.setattr(sys, "argv", ["audit", *map(str, args)])
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            cli_module.main()
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, e.value.code, out, err)
    return run


@pytest.fixture(scope="session")
def base_model():
    from auditor.inspect.base_model import resolve_base

    return resolve_base(None)


def write_adapter(folder: Path, config: dict | None = None, tensors: dict | None = None, r: int = 4,
                  modules: tuple[str, ...] = ("q_proj", "v_proj"), layers: int = LAYERS,
                  prefix: str = "base_model.model.model.layers", card: str | None = None) -> Path:
    """Write a PEFT LoRA adapter folder with real (random, small) tensors."""
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    cfg = {"peft_type": "LORA", "r": r, "lora_alpha": 2 * r, "target_modules": list(modules),
           "base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "task_type": "CAUSAL_LM",
           "bias": "none", "lora_dropout": 0.0}
    cfg.update(config or {})
    (folder / "adapter_config.json").write_text(json.dumps(cfg))
    if tensors is None:
        g = torch.Generator().manual_seed(0)
        shapes = {"q_proj": (HIDDEN, HIDDEN), "k_proj": (HIDDEN, KV), "v_proj": (HIDDEN, KV), "o_proj": (HIDDEN, HIDDEN)}
        tensors = {}
        for i in range(layers):
            for m in modules:
                in_f, out_f = shapes[m]
                base = f"{prefix}.{i}.self_attn.{m}"
                tensors[f"{base}.lora_A.weight"] = torch.randn(r, in_f, generator=g) * 0.01
                tensors[f"{base}.lora_B.weight"] = torch.randn(out_f, r, generator=g) * 0.01
    save_file(tensors, str(folder / "adapter_model.safetensors"))
    if card is not None:
        (folder / "README.md").write_text(card)
    return folder
