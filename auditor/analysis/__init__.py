"""Stage 5 — analysis: how the adapter moved each capability, with its uncertainty.

* :mod:`.stats`: paired statistics (bootstrap intervals, exact McNemar, Wilcoxon, permutation,
  Benjamini–Hochberg); pure numpy/scipy;
* :mod:`.compare`: base vs adapter per metric (:class:`~auditor.records.MetricComparison`);
* :mod:`.drift`: TargetGain, OffTargetGain and DriftScore of the nominal label;
* :mod:`.noise_floor`: the base replayed with another batch composition.
"""

from .compare import StatsSettings, compare_metrics
from .drift import drift_score

__all__ = ["StatsSettings", "compare_metrics", "drift_score"]
