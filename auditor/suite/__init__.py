"""Stage 2 — the suite and the plan: manifests → capabilities and items → requests per variant.

* :mod:`.manifest`: the YAML manifest, validated, → :class:`~auditor.records.Suite`;
* :mod:`.items`: item rows → items (prompt template, history, meta, the scorer's gold data);
* :mod:`.sampling`: seeded, stratified sampling and fixed first-N subsets;
* :mod:`.benchmarks`: one loader per standard benchmark behind one registry;
* :mod:`.plan`: items × variants → generation requests.
"""

from .manifest import SUITES_DIR, load_suite, preset_metric_units
from .plan import VARIANTS, plan_requests

__all__ = ["SUITES_DIR", "load_suite", "preset_metric_units", "VARIANTS", "plan_requests"]
