#!/usr/bin/env bash
# Build the documentation site (MkDocs, strict: a broken link, a missing anchor or a page out of the nav fails).
#   bash scripts/docs.sh            build into site/ (git-ignored)
#   bash scripts/docs.sh DIR        build into DIR
# Installs the docs extra into .venv when mkdocs is missing (scripts/setup.sh creates .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-site}"
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if ! .venv/bin/python -c "import mkdocs, material, mkdocs_click" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[docs]"
fi
# the CLI reference imports the click commands from this checkout
NO_MKDOCS_2_WARNING=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" .venv/bin/python -m mkdocs build --strict --clean -d "$OUT"
echo "docs: ok ($OUT/index.html)"
