"""Records of the probe suite and its answers: items, requests, generations, scores, metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .vocab import Aggregate, OutputType


@dataclass(frozen=True, kw_only=True)
class Item:
    """One probe item.

    Attributes:
        id: stable id, unique within the suite (``<capability>/<local id>``).
        capability: e.g. ``math``, ``over_refusal``, ``ifeval``.
        group: ``CAN``, ``WILL``, ``HOW`` or ``COND`` (conditional behaviour: a trigger in the input
            selects it).
        messages: chat messages (``[{"role": "user", "content": ...}]``).
        max_new_tokens: generation budget for this item.
        target: scorer-specific gold data (gold number, IFEval instruction ids
            and kwargs, ...).
        meta: item facts that are not gold data: ``cluster`` (items sharing it
            are resampled together by the bootstrap, e.g. one question under
            several contexts), ``context`` (conditional-trigger probe),
            ``perturbation`` (robustness probe), ``source`` (benchmark file).
        output_type: how the model answers, in lm-evaluation-harness's terms: ``generate_until`` (greedy
            decoding, up to ``max_new_tokens``) or ``multiple_choice`` (no decoding: the log-likelihood of
            each choice's continuation after the context, ``target["contexts"]`` and
            ``target["continuations"]``; ``max_new_tokens`` is 0).
        fewshot: worked examples (user and assistant turns, in order) put before ``messages`` (after a leading
            system message) where ``fewshot_always`` is set or the audit's base is prompted plainly (a base
            without a chat template: a pretrained model answers a bare question with more questions, and is
            asked with examples, in the manner of lm-evaluation-harness's few-shot prompts); then every variant
            is shown them. Empty for most items (the manifest's ``fewshot``).
        fewshot_always: put ``fewshot`` before the messages under a chat template too.
        until: where ``fewshot`` applies, the answer ends at the first of these strings (lm-evaluation-harness's
            ``until``; leading whitespace skipped): a base shown worked examples goes on with examples of its own.
    """

    id: str
    capability: str
    group: str
    messages: tuple[Mapping[str, str], ...]
    max_new_tokens: int
    target: Mapping[str, Any]
    meta: Mapping[str, Any] = field(default_factory=dict)
    output_type: OutputType = "generate_until"
    fewshot: tuple[Mapping[str, str], ...] = ()
    fewshot_always: bool = False
    until: tuple[str, ...] = ()

    @property
    def prompt(self) -> str:
        return self.messages[-1]["content"]

    def turns(self, plain: bool) -> list[Mapping[str, str]]:
        """The chat messages a prompt renders: :attr:`fewshot` first where it applies (``plain``: the audit's base
        is prompted plainly, without a chat template; or :attr:`fewshot_always`), after a leading system message,
        then :attr:`messages`."""
        shots = self.fewshot if (plain or self.fewshot_always) else ()
        lead = [m for m in self.messages[:1] if m.get("role") == "system"]  # a system message stays first
        return [*lead, *shots, *self.messages[len(lead):]]

    def stop_strings(self, plain: bool) -> tuple[str, ...]:
        """The strings at which an answer ends (:attr:`until`) where :attr:`fewshot` applies (as :meth:`turns`:
        ``plain``, or :attr:`fewshot_always`); empty otherwise, and the answer runs to its EOS or its budget."""
        return self.until if self.until and self.fewshot and (plain or self.fewshot_always) else ()

    def answer(self, text: str, plain: bool) -> str:
        """The answer the scorer reads of a generated ``text``: ``text`` itself, or, where :meth:`stop_strings`
        are given, its text from the first non-blank character up to the first of them."""
        stops = self.stop_strings(plain)
        if not stops:
            return text
        text = text.lstrip()
        ends = [k for k in (text.find(s) for s in stops) if k >= 0]
        return text[:min(ends)] if ends else text


@dataclass(frozen=True, kw_only=True)
class Request:
    """One generation to run: an item under one variant (``base``, or an adapter variant's name:
    ``adapter``, ``adapter0``, ``adapter1``, ... in a run of several, ``baseline`` for ``--baseline``)."""

    item: Item
    variant: str


@dataclass(frozen=True, kw_only=True)
class Generation:
    """The model's answer to one request (untrusted text).

    Attributes:
        item_id, variant: the request answered.
        text: the answer (untrusted).
        n_tokens: new tokens generated.
        prompt: the exact prompt string the model saw (the variant's chat template applied), as the
            backend rendered it for the request and its cache key.
        loglikelihoods: for a ``multiple_choice`` item, each choice's log-likelihood (natural log, summed over
            its continuation's tokens, given its context), in ``target["continuations"]`` order; ``text`` is
            then the continuation with the highest one and ``n_tokens`` 0. None for a generated answer.
        scored_tokens: tokens whose log-probabilities were read for a ``multiple_choice`` item (contexts and
            continuations as encoded); 0 for a generated answer.
    """

    item_id: str
    variant: str
    text: str
    n_tokens: int
    prompt: str = field(default="", compare=False, repr=False)
    loglikelihoods: tuple[float, ...] | None = None
    scored_tokens: int = 0


@dataclass(frozen=True, kw_only=True)
class Score:
    """Scorer output for one generation.

    Attributes:
        values: metric name → value: a fraction in [0, 1] for ``unit="fraction"``
            metrics (a pass/fail item is 0.0 or 1.0; IFEval's instruction-level
            metrics are the fraction followed), a count for count metrics
            (words, tokens), or None where the metric does not apply to this item.
        detail: what the scorer saw (extracted number, which instructions failed, ...).
    """

    item_id: str
    variant: str
    values: Mapping[str, float | None]
    detail: Mapping[str, Any]


@dataclass(frozen=True, kw_only=True)
class MetricSpec:
    """A metric a scorer reports, and how ``analysis`` aggregates it over items.

    Attributes:
        name: metric name within the capability (e.g. ``numeric_match``).
        higher_is_better: direction of improvement.
        weight_key: if set, the per-item value is weighted by ``detail[weight_key]``
            when aggregated (IFEval instruction-level accuracy is a mean over
            all instructions, not over prompts).
        unit: ``"fraction"`` (a rate in [0, 1]; deltas are reported in points)
            or a count unit such as ``"words"`` / ``"tokens"`` (deltas are
            reported in that unit and in % of the base).
        aggregate: ``"mean"`` (mean over the items whose value is not None) or
            ``"max_gap"``: items are split by ``item.meta[group_key]`` and the
            metric is the largest difference between the group means
            (max − min), e.g. the accuracy gap between contexts of the
            conditional-trigger probe; or ``"excess_gap"``: that gap
            minus its mean when the group labels are shuffled within each
            cluster (:func:`auditor.analysis.stats.statistic`), 0 on average
            for outcomes that ignore the group, whatever their accuracy.
        group_key: the ``item.meta`` key that names the group, for the gap aggregates.
        chance_floor: a multiple-choice accuracy, whose floor is chance (the mean of 1/k over the
            items' k options, from ``item.target["choices"]``), not 0.
    """

    name: str
    higher_is_better: bool = True
    weight_key: str | None = None
    unit: str = "fraction"
    aggregate: Aggregate = "mean"
    group_key: str | None = None
    chance_floor: bool = False


@dataclass(frozen=True, kw_only=True)
class Capability:
    """One capability of a suite and the metrics its scorer reports.

    Attributes:
        build_target: the scorer's check of an item row's gold data (``build_target(row) -> target``),
            kept for the rows its pool adds later (:func:`auditor.suite.pools.load_pool`); not written
            to results, not compared.
        output_type: how its items are answered (:attr:`Item.output_type`).
    """

    name: str
    group: str
    scorer: str
    metrics: tuple[MetricSpec, ...]
    build_target: Callable[[dict], dict] | None = field(default=None, compare=False, repr=False,
                                                        metadata={"plain": False})
    output_type: OutputType = "generate_until"


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A loaded suite: capabilities and their items (in file order).

    Attributes:
        name, version, path: of the manifest.
        capabilities: the capabilities run, in manifest order.
        items: their items, capability by capability.
        all_metrics: metrics of every capability in the manifest, including ones left out by ``only``.
        sources: per capability run: where its items came from and how they were sampled
            (benchmark or path, split, origin, n_records, excluded, sample, stratify, seed,
            unit, first, n_selected), for results.json.
        metric_units: unit of every metric in ``all_metrics`` (``fraction``, ``words``, ``tokens``).
    """

    name: str
    version: int
    path: str
    capabilities: tuple[Capability, ...]
    items: tuple[Item, ...]
    all_metrics: tuple[str, ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()
    metric_units: Mapping[str, str] = field(default_factory=dict)

    def metric_names(self) -> list[str]:
        """Fully qualified metric names, ``<capability>.<metric>``."""
        return [f"{c.name}.{m.name}" for c in self.capabilities for m in c.metrics]

