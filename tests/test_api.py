"""The public Python API: ``from auditor import audit`` drives a real audit and returns the typed result."""

from __future__ import annotations

import json

import pytest
from conftest import DEMO_ADAPTERS


def test_audit_through_the_python_api_returns_the_typed_result(tmp_path):
    from auditor import AuditInputError, AuditResult, audit
    from auditor.reports.results_file import load_results, schema_error

    lines: list[str] = []
    result = audit(DEMO_ADAPTERS / "math-arith-r8", capabilities=("math", "knowledge"), limit=4,
                   out=tmp_path / "report", log=lines.append)
    assert isinstance(result, AuditResult)
    assert result.verdict.verdict in ("pass", "fail") and result.passed == (result.verdict.verdict == "pass")
    assert [c.metric for c in result.comparisons] == ["math.numeric_match", "knowledge.accuracy"]
    math = result.comparisons[0]
    assert math.n_items == 4 and 0 <= math.base <= 1 and math.delta == pytest.approx(100 * (math.adapter - math.base))
    assert result.drift.label == "math" and result.drift.label_source == "model card"
    assert len(result.items) == 8 and all(it.base.text is not None and it.adapter.text is not None
                                          for it in result.items)
    assert any(line.startswith("backend: hf") for line in lines)
    # results.json is the record's dict, valid against the shipped schema, and reads back as the same record
    data = result.to_dict()
    assert schema_error(data) is None
    assert json.loads((tmp_path / "report" / "results.json").read_text()) == json.loads(json.dumps(data))
    assert load_results(tmp_path / "report" / "results.json") == AuditResult.from_dict(json.loads(json.dumps(data)))
    assert (tmp_path / "report" / "report.html").is_file()
    with pytest.raises(AuditInputError) as e:
        audit(tmp_path / "no-such-adapter")
    assert e.value.one_line() == f"{tmp_path / 'no-such-adapter'}: no such file or folder"
    with pytest.raises(TypeError):
        audit(DEMO_ADAPTERS / "math-arith-r8", sweet="smoke")
