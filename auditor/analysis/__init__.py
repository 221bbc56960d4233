"""Stage 5 — analysis: how the adapter moved each capability, with its uncertainty.

* :mod:`.stats`: paired statistics (bootstrap intervals, exact McNemar, Wilcoxon, permutation,
  Benjamini–Hochberg); pure numpy/scipy;
* :mod:`.compare`: base vs adapter per metric (:class:`~auditor.records.MetricComparison`);
* :mod:`.drift`: TargetGain, OffTargetGain and DriftScore of the nominal label;
* :mod:`.agreement`: how many generated answers the adapter left as the base's, and where the others differ;
* :mod:`.noise_floor`: the base replayed on another numeric path (the other dtype, or another batch composition).
"""

from .agreement import agreement_with_base
from .compare import StatsSettings, compare_metrics
from .drift import drift_score

__all__ = ["StatsSettings", "agreement_with_base", "compare_metrics", "drift_score"]
