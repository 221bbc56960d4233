"""junit.xml: one test case per policy rule, in the Jenkins/Surefire dialect CI dashboards read
(valid against ``junit-10.xsd``). XML is written by ElementTree, which escapes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..results import AuditResult
from ..util.text import strip_controls


def render_junit(result: AuditResult) -> str:
    """JUnit XML: a failing rule is a ``<failure>`` whose message is the reason, a rule not run is
    ``<skipped>``, a warning is noted in ``<system-out>``."""
    rules = result.verdict.rules
    total_s = (result.run.timings or {}).get("total_s")
    suite = ET.Element("testsuite", name="adapter-auditor", tests=str(len(rules)),
                       failures=str(sum(r.outcome == "fail" for r in rules)), errors="0",
                       skipped=str(sum(r.outcome == "not_run" for r in rules)))
    if isinstance(total_s, (int, float)) and total_s >= 0:
        suite.set("time", f"{total_s:.3f}")
    for r in rules:
        name, reason = strip_controls(str(r.rule)), strip_controls(str(r.reason))
        case = ET.SubElement(suite, "testcase", classname="policy", name=name)
        if r.outcome == "fail":
            ET.SubElement(case, "failure", message=reason).text = reason
        elif r.outcome == "not_run":
            ET.SubElement(case, "skipped", message=reason)
        elif r.outcome == "warn":
            ET.SubElement(case, "system-out").text = "warning: " + reason
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
