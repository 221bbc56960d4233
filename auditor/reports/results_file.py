"""results.json: written by every audit, read back by ``audit report``.

Read back, it must be valid JSON (finite numbers), of this tool's schema version, valid against
the shipped JSON Schema (``auditor/data/schemas/results.schema.json``) and internally consistent (item
ids unique, intervals ordered, a verdict that agrees with its rules); then it becomes the typed
:class:`~auditor.results.AuditResult` the reports render. A key the schema does not know is
dropped on the way, and re-rendered results.json files name every field of the current records.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema

from ..errors import AuditInputError
from ..results import RESULTS_SCHEMA_VERSION, AuditResult
from ..util.jsonio import read_json_finite
from ..util.text import strip_controls

#: JSON Schema (draft 2020-12) of results.json, shipped in the package
RESULTS_SCHEMA_PATH = Path(__file__).resolve().parent.parent / "data" / "schemas" / "results.schema.json"
#: JSON Schema of run.json (a training run's checkpoints, :mod:`auditor.reports.run_json`)
RUN_SCHEMA_PATH = RESULTS_SCHEMA_PATH.with_name("run.schema.json")


def results_json(result: AuditResult) -> str:
    """results.json's text for one audit.

    Raises:
        AuditInputError: the results hold something JSON cannot (named ``results``).
    """
    try:
        return json.dumps(result.to_dict(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    except (TypeError, ValueError) as e:
        raise AuditInputError("results", f"cannot be written as JSON ({type(e).__name__}: {e})") from None


@functools.cache
def _validator(path: Path) -> jsonschema.protocols.Validator:
    schema = json.loads(path.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def first_schema_error(schema_path: Path, data: Any) -> str | None:
    """The first violation of the JSON Schema at ``schema_path`` (a shipped one) as ``<key path>: <message>``,
    or None when ``data`` is valid."""
    errors = sorted(_validator(schema_path).iter_errors(data),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    e = errors[0]
    return f"{'.'.join(map(str, e.absolute_path)) or 'top level'}: {strip_controls(e.message)[:160]}"


def schema_error(data: Any) -> str | None:
    """The first violation of the results.json schema (``auditor/data/schemas/results.schema.json``)
    as one line naming its key path, or None when ``data`` is valid."""
    error = first_schema_error(RESULTS_SCHEMA_PATH, data)
    return None if error is None else f"does not match the results schema v{RESULTS_SCHEMA_VERSION} at {error}"


def check_results(path: Path | str, data: Any) -> AuditResult:
    """The typed record of results.json's content ``data`` (read from ``path``).

    Raises:
        AuditInputError: not a results file of this schema version, a schema violation, or
            content that contradicts itself (naming ``path`` and the fault).
    """
    version = data.get("schema_version") if isinstance(data, dict) else None
    if isinstance(data, dict) and "checkpoints" in data and "run_dir" in data:
        raise AuditInputError(path, "is a training run's run.json, not an audit's results.json: give one checkpoint's "
                                    "results.json (its report folder, named in run.json's checkpoints[].report)")
    if type(version) is int and version > RESULTS_SCHEMA_VERSION:
        raise AuditInputError(path, f"written by a newer adapter-auditor (schema_version {version}, this one reads "
                                    f"{RESULTS_SCHEMA_VERSION}): upgrade adapter-auditor to re-render it")
    if type(version) is int and 1 <= version < RESULTS_SCHEMA_VERSION:
        raise AuditInputError(path, f"written by an older adapter-auditor (schema_version {version}, this one reads "
                                    f"{RESULTS_SCHEMA_VERSION}): run the audit again to re-render it")
    if type(version) is not int or version != RESULTS_SCHEMA_VERSION:
        raise AuditInputError(path, f"not an adapter-auditor results.json (schema_version {RESULTS_SCHEMA_VERSION})")
    error = schema_error(data)
    if error:
        raise AuditInputError(path, error)
    v = data["verdict"]
    rules = v["rules"]
    if not rules:
        raise AuditInputError(path, "verdict.rules is empty: an audit always judges at least one rule")
    seen: set[str] = set()
    for it in data["items"]:
        if it["id"] in seen:
            raise AuditInputError(path, f"item id {strip_controls(it['id'])[:80]!r} appears twice in items")
        seen.add(it["id"])
    for c in data["comparisons"]:
        lo, hi = c["ci_low"], c["ci_high"]
        if lo is not None and hi is not None and lo > hi:
            raise AuditInputError(path, f"comparisons: {strip_controls(c['metric'])[:80]} has ci_low {lo} above "
                                        f"ci_high {hi}")
    for r in rules:
        if r.get("within_noise") is not None and (data["noise_floor"] is None or r.get("noise") is None
                                                  or (r["within_noise"] and not r["noise"])):
            raise AuditInputError(path, f"verdict.rules: {strip_controls(r['rule'])[:80]} says within_noise "
                                        f"{str(r['within_noise']).lower()} without a noise floor's noise to be within")
    if (v["verdict"] == "fail") != any(r["outcome"] == "fail" for r in rules):
        raise AuditInputError(path, f"verdict {v['verdict']!r} contradicts its rules (a verdict fails exactly when a rule fails)")
    return AuditResult.from_dict(data)


def load_results(path: Path) -> AuditResult:
    """Read a results.json written by this tool.

    Raises:
        AuditInputError: not readable JSON, or not a results file of a known schema version
            (see :func:`check_results`).
    """
    return check_results(path, read_json_finite(path))
