"""The records between stages are made once and never edited.

How it is checked: every dataclass of ``auditor.records`` and ``auditor.results`` (and the judge's and
the pipeline's own hand-over records) is ``frozen`` (assigning a field raises) and ``kw_only`` (made by
keyword), and no field is declared a mutable container (``list``, ``dict``, ``set``): sequences are
tuples and mappings are typed ``Mapping``, so mypy (run by ``scripts/test.sh``) refuses an in-place
edit such as ``info.warnings.append(...)`` or ``outcome.reason += ...`` anywhere in the code base. The
last test shows a record refusing an edit at run time.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import inspect
import pkgutil
import typing

import pytest

import auditor.records

MODULES = [f"auditor.records.{m.name}" for m in pkgutil.iter_modules(auditor.records.__path__)] + [
    "auditor.results", "auditor.pipeline.assembly", "auditor.policy.decisions", "auditor.policy.loading"]
MUTABLE = (list, dict, set)


def _records() -> list[type]:
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        out += [obj for _, obj in inspect.getmembers(mod, inspect.isclass)
                if dataclasses.is_dataclass(obj) and obj.__module__ == name]
    return out


def _mutable_parts(tp: object) -> list[object]:
    """The mutable container types anywhere in a field's annotation (``list[...]``, ``dict | None``, ...)."""
    found: list[object] = []
    if typing.get_origin(tp) is collections.abc.Callable:  # a function's own argument types are not the record's
        return found
    if tp in MUTABLE or typing.get_origin(tp) in MUTABLE:
        found.append(tp)
    for arg in typing.get_args(tp):
        found += _mutable_parts(arg)
    return found


def test_there_are_records_to_check():
    names = {c.__name__ for c in _records()}
    assert {"AdapterRecord", "RuleOutcome", "Verdict", "MetricComparison", "AuditResult", "RunRecord", "Round",
            "Budget", "Variant", "Run", "Evidence", "BaselineRun", "Case", "Policy"} <= names


@pytest.mark.parametrize("cls", _records(), ids=lambda c: c.__name__)
def test_every_record_is_frozen_and_made_by_keyword(cls):
    params = cls.__dataclass_params__
    assert params.frozen, f"{cls.__name__} is not frozen"
    assert all(f.kw_only for f in dataclasses.fields(cls)), f"{cls.__name__} takes positional fields"


@pytest.mark.parametrize("cls", _records(), ids=lambda c: c.__name__)
def test_no_record_field_is_a_mutable_container(cls):
    hints = typing.get_type_hints(cls)
    bad = {f.name: hints[f.name] for f in dataclasses.fields(cls) if _mutable_parts(hints[f.name])}
    assert bad == {}, f"{cls.__name__}: declare these as tuple / Mapping"


def test_a_record_refuses_an_edit_at_run_time():
    from auditor.records import RuleOutcome

    r = RuleOutcome(rule="math.numeric_match: max drop", rule_id="math.numeric_match/max-drop", outcome="pass",
                    reason="fine")
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.reason += "; and more"  # type: ignore[misc]
    with pytest.raises(TypeError):
        RuleOutcome("math.numeric_match: max drop", "pass", "fine")  # type: ignore[misc]
    assert not hasattr(r.capabilities, "append")
