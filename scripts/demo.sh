#!/usr/bin/env bash
# Set up, then audit the deliberately mislabelled demo adapter on the embedded
# default base (SmolLM2-135M-Instruct) and write the report to reports/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
set +e
.venv/bin/audit examples/adapters/terse-instruct-r8 --out reports/demo "$@"
rc=$?
set -e
if [ "$rc" -eq 1 ]; then
  echo "demo: verdict FAIL, as expected: this adapter is labelled 'instruction' but its training did not teach instruction following (see reports/demo/report.html)"
  exit 0
fi
exit "$rc"
