"""A suite manifest's capability entries as typed records (after the manifest's schema check), and what
the suite stage needs of the scorers (:class:`SuiteScorer`, handed in as a :data:`ScorerCatalogue`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import AuditInputError
from ..records import MetricSpec

#: ``build_target(row) -> target``: one item row → ``Item.target``; raises ValueError naming the fault
TargetFn = Callable[[dict], dict]


def fill_template(template: str, fields: Mapping[str, Any], where: str | Path, at: str) -> str:
    """``template`` filled with ``fields`` (``str.format``; :func:`check_prompt_template` admits plain names only).

    Raises:
        AuditInputError: one line naming ``where`` (the file) and ``at`` (the line or key path): a field the
            template needs is missing, or the template cannot be filled.
    """
    try:
        return template.format(**fields)
    except KeyError as e:
        raise AuditInputError(where, f"{at}: field {e} needed by the prompt template is missing") from None
    except (IndexError, ValueError, AttributeError) as e:
        raise AuditInputError(where, f"{at}: prompt template {template!r} cannot be filled ({e})") from None


class SuiteScorer(Protocol):
    """What the suite stage reads of a scorer (:class:`auditor.scorers.Scorer` is one): the name a
    manifest's ``scorer:`` gives, the metrics it reports, and the check of an item row's gold data."""

    @property
    def name(self) -> str: ...

    @property
    def metrics(self) -> tuple[MetricSpec, ...]: ...

    @property
    def build_target(self) -> TargetFn | None: ...

    @property
    def output_type(self) -> str: ...


#: scorer name → scorer: what the suite stage is given to check ``scorer:`` names, read the metrics and build
#: item targets (the pipeline passes :data:`auditor.scorers.SCORERS`; the suite never imports the scorers)
ScorerCatalogue = Mapping[str, SuiteScorer]


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
    def from_manifest(cls, spec: str | dict[str, Any]) -> SourceSpec:
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
    #: put between a multiple-choice item's context and each choice (lm-evaluation-harness's ``target_delimiter``)
    target_delimiter: str = " "
    #: what a multiple-choice item's choices continue with: each option's ``text``, or its ``letter`` (the options
    #: listed in the prompt, as lm-evaluation-harness's MMLU task does)
    choices_as: str = "text"
    #: worked examples (user and assistant turns) put before each item where they apply (``fewshot:``)
    fewshot: tuple[Mapping[str, str], ...] = ()
    #: ``fewshot.when``: ``plain_prompts`` (a base prompted without a chat template) or ``always``
    fewshot_when: str = "plain_prompts"
    #: ``fewshot.until``: where the samples are shown, the answer ends at the first of these strings
    fewshot_until: tuple[str, ...] = ()

    @classmethod
    def from_manifest(cls, k: int, cap: dict[str, Any], manifest: Path | str = "suite manifest") -> CapabilitySpec:
        """The entry ``cap`` at position ``k`` of a manifest its schema has validated.

        Raises:
            AuditInputError: a ``fewshot`` sample the prompt template cannot be filled with (naming its key path).
        """
        pool = cap.get("pool") or []
        template = cap.get("prompt_template", "{prompt}")
        fewshot = cap.get("fewshot") or {}
        turns: list[Mapping[str, str]] = []
        for j, sample in enumerate(fewshot.get("samples", [])):
            if not all(isinstance(key, str) for key in sample):
                raise AuditInputError(manifest, f"capabilities.{k}.fewshot.samples.{j}: its keys must be text (the "
                                                "prompt template's field names and response)")
            question = fill_template(template, sample, manifest, f"capabilities.{k}.fewshot.samples.{j}")
            turns += [{"role": "user", "content": question}, {"role": "assistant", "content": sample["response"]}]
        return cls(k, cap["name"], cap["group"], cap["scorer"], SourceSpec.from_manifest(cap["source"]),
                   int(cap.get("max_new_tokens", 0)), template,
                   tuple(SourceSpec.from_manifest(x) for x in (pool if isinstance(pool, list) else [pool])),
                   cap.get("target_delimiter", " "), cap.get("choices_as", "text"), tuple(turns),
                   fewshot.get("when", "plain_prompts"), tuple(fewshot.get("until", ())))
