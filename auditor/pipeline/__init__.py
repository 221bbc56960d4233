"""What runs an audit: one adapter's path from its argument to its :class:`~auditor.results.AuditResult`,
and the reports written from it.

* :mod:`.outputs`: the report folders and Hub files checked first, the audit, the reports written;
* :mod:`.stages`: the stage order of a run of adapters against one base pass (inspect, suite, backend,
  generate, score), every cheap check before any model loads;
* :mod:`.rounds`: one adapter's looks (analysis, policy) and the rounds of items they buy;
* :mod:`.assembly`: the records of the run made into each adapter's :class:`~auditor.results.AuditResult`.
"""

from .outputs import audit_and_report, hub_outputs_for, report_folders
from .stages import run_audits

__all__ = ["audit_and_report", "hub_outputs_for", "report_folders", "run_audits"]
