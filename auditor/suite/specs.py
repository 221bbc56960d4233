"""A suite manifest's capability entries as typed records (after the manifest's schema check)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceSpec:
    """A capability's ``source:`` (see :data:`SOURCE_SCHEMA`); ``given`` names the keys the manifest set."""

    given: frozenset[str]
    path: str | None = None
    benchmark: str | None = None
    split: str | None = None
    hub: str | None = None
    sample: int | str = "all"
    stratify: str | None = None
    seed: int = 0
    first: int | None = None
    unit: str = "item"

    @classmethod
    def from_manifest(cls, spec: str | dict[str, Any]) -> "SourceSpec":
        spec = {"path": spec} if isinstance(spec, str) else spec
        sample = spec.get("sample", "all")
        return cls(frozenset(spec), path=spec.get("path"), benchmark=spec.get("benchmark"), split=spec.get("split"),
                   hub=spec.get("hub"), sample=sample if sample == "all" else int(sample),
                   stratify=spec.get("stratify"), seed=int(spec.get("seed", 0)),
                   # JSON Schema's integer admits 2.0
                   first=None if spec.get("first") is None else int(spec["first"]), unit=spec.get("unit", "item"))


@dataclass(frozen=True)
class CapabilitySpec:
    """One capability entry of a manifest, validated (``k``: its position, for error messages)."""

    k: int
    name: str
    group: str
    scorer: str
    source: SourceSpec
    max_new_tokens: int
    prompt_template: str = "{prompt}"
    #: where an undecided rule draws more items (``pool:``; :mod:`auditor.suite.pools`)
    pool: tuple[SourceSpec, ...] = ()

    @classmethod
    def from_manifest(cls, k: int, cap: dict[str, Any]) -> "CapabilitySpec":
        pool = cap.get("pool") or []
        return cls(k, cap["name"], cap["group"], cap["scorer"], SourceSpec.from_manifest(cap["source"]),
                   int(cap["max_new_tokens"]), cap.get("prompt_template", "{prompt}"),
                   tuple(SourceSpec.from_manifest(x) for x in (pool if isinstance(pool, list) else [pool])))
