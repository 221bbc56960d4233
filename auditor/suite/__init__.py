"""Stage 2 — the suite and the plan: manifests → capabilities and items → requests per variant.

* :mod:`.manifest`: the YAML manifest, validated, → :class:`~auditor.records.Suite`;
* :mod:`.specs`: its capability entries as records, and :class:`~.specs.SuiteScorer`, what the suite needs of a
  scorer: the scorer catalogue is handed in (``load_suite(..., scorers=SCORERS)``), never imported;
* :mod:`.rows`: item rows → items (prompt template, history, meta, the scorer's gold data);
* :mod:`.sampling`: seeded, stratified sampling and fixed first-N subsets;
* :mod:`.pools`: the items an undecided rule's capability escalates into;
* :mod:`.benchmarks`: one loader per standard benchmark behind one registry;
* :mod:`.plan`: items × variants → generation requests.
"""

from .manifest import SUITES_DIR, load_suite, preset_metric_specs, preset_metric_units
from .plan import VARIANTS, plan_requests

__all__ = ["SUITES_DIR", "load_suite", "preset_metric_specs", "preset_metric_units", "VARIANTS", "plan_requests"]
