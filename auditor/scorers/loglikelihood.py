"""Multiple choice by log-likelihood (CAN): which choice does the model find most likely after the
context? No decoding: the backend reads each choice's continuation log-probabilities in one forward
pass (``Item.output_type == "multiple_choice"``), as lm-evaluation-harness's ``output_type:
multiple_choice`` tasks do (Gao et al., "The Language Model Evaluation Harness", Zenodo
10.5281/zenodo.5371628).

Two metrics, defined as lm-evaluation-harness 0.4 defines them:

- ``acc``: 1.0 when the gold choice has the highest summed log-likelihood;
- ``acc_norm``: the same with each log-likelihood divided by the choice's length in characters
  (``len()`` of the choice text without the target delimiter; for per-choice contexts, as in
  WinoGrande's partial scoring, the length of the context that holds the option: what the harness's
  ``doc_to_choice`` returns there).

Ties go to the first choice (``numpy.argmax``). The robustness probe's ``agreement`` compares the
chosen option's text with its unperturbed original's (:func:`auditor.scorers.multiple_choice.finalize_agreement`).
"""

from __future__ import annotations

import math
from typing import Any

from ..records import LETTERS, Generation, Item, MetricSpec, Score
from .multiple_choice import check_perturbation_meta, finalize_agreement
from .scorer import Scorer, register


def argmax(values: list[float]) -> int:
    """Index of the largest value, the first one on a tie (``numpy.argmax``); NaN counts as lowest."""
    best = 0
    for k, v in enumerate(values):
        if not math.isnan(v) and (math.isnan(values[best]) or v > values[best]):
            best = k
    return best


def score_loglikelihood(item: Item, gen: Generation) -> Score:
    """``acc`` and ``acc_norm`` of one item from its choices' log-likelihoods (``gen.loglikelihoods``).

    Detail: ``loglikelihoods`` (per choice, nats, rounded to 4 decimals), ``chosen`` and ``chosen_norm``
    (letters picked by ``acc`` and ``acc_norm``), ``gold``, ``chosen_text`` (the option text ``acc``
    picked: robustness compares it across perturbations) and ``margin`` (nats between the best and the
    second-best choice: how close the pick was).
    """
    t = item.target
    lls = list(gen.loglikelihoods or ())
    if len(lls) != len(t["choices"]):
        raise ValueError(f"{gen.item_id}: {len(lls)} log-likelihoods for {len(t['choices'])} choices")
    pick = argmax(lls)
    pick_norm = argmax([ll / max(1, n) for ll, n in zip(lls, t["lengths"])])
    gold = LETTERS.index(t["answer"])
    ranked = sorted(lls, reverse=True)
    detail: dict[str, Any] = {
        "loglikelihoods": [round(x, 4) for x in lls], "chosen": LETTERS[pick], "chosen_norm": LETTERS[pick_norm],
        "gold": t["answer"], "chosen_text": t["choices"][pick],
        "margin": round(ranked[0] - ranked[1], 4) if len(ranked) > 1 else None}
    for key in ("language", "perturbation"):
        if key in item.meta:
            detail[key] = item.meta[key]
    return Score(item_id=gen.item_id, variant=gen.variant,
                 values={"acc": float(pick == gold), "acc_norm": float(pick_norm == gold)}, detail=detail)


def score_loglikelihood_perturbed(item: Item, gen: Generation) -> Score:
    """Robustness item: ``acc`` and ``acc_norm`` as :func:`score_loglikelihood` on perturbed items;
    ``agreement`` is filled in by :func:`~auditor.scorers.multiple_choice.finalize_agreement`.
    Unperturbed originals (``meta.perturbation == "none"``) get None for all three (their choice is the
    reference)."""
    s = score_loglikelihood(item, gen)
    original = item.meta.get("perturbation") == "none"
    values = {k: None if original else v for k, v in s.values.items()}
    return Score(item_id=s.item_id, variant=s.variant, values={**values, "agreement": None},
                 detail={**s.detail, "correct": bool(s.values["acc"])})


def explain(detail: dict) -> str:
    """One line for the report's item browser: the pick, the gold and the margin."""
    margin = detail.get("margin")
    return (f"picked {detail.get('chosen')} (length-normalised: {detail.get('chosen_norm')}), gold "
            f"{detail.get('gold')}" + (f", margin {margin:.2f} nats" if isinstance(margin, (int, float)) else ""))


def build_target(row: dict) -> dict:
    """An item row's gold data and what the backend scores.

    Row fields: ``choices`` (each choice's continuation, without the target delimiter), ``answer`` (0-based
    index or letter), optional ``labels`` (the options' display texts; default the choices), and what
    :func:`auditor.suite.rows.item_from_row` adds from the manifest: ``contexts`` (one per choice, the
    prompt template filled) and ``target_delimiter`` (put between context and continuation, lm-evaluation-harness's
    default ``" "``).

    Returns:
        ``answer`` (letter), ``choices`` (display texts: what chance and robustness's agreement read),
        ``contexts``, ``continuations`` (delimiter included) and ``lengths`` (characters, for ``acc_norm``).

    Raises:
        ValueError: naming the field at fault.
    """
    choices, ans = row.get("choices"), row.get("answer")
    if not isinstance(choices, list) or not 2 <= len(choices) <= len(LETTERS) \
            or not all(isinstance(c, str) and c.strip() for c in choices):
        raise ValueError(f"multiple-choice items need 'choices': a list of 2 to {len(LETTERS)} non-empty texts")
    labels = row.get("labels", choices)
    if not isinstance(labels, list) or len(labels) != len(choices) or not all(isinstance(c, str) for c in labels):
        raise ValueError("'labels' must be a list of texts, one per choice")
    letters = LETTERS[:len(choices)]
    if isinstance(ans, int) and not isinstance(ans, bool) and 0 <= ans < len(choices):
        ans = letters[ans]
    if not isinstance(ans, str) or ans not in letters:
        raise ValueError(f"multiple-choice items need 'answer': a choice index 0-{len(choices) - 1} or a letter "
                         f"{list(letters)}")
    contexts = row.get("contexts")
    if not isinstance(contexts, list) or len(contexts) != len(choices) or not all(isinstance(c, str) for c in contexts):
        raise ValueError("multiple-choice items need one context per choice")
    if len({(x, c) for x, c in zip(contexts, choices)}) != len(choices):
        raise ValueError("two choices have the same context and continuation")
    delim = row.get("target_delimiter", " ")
    shared = len(set(contexts)) == 1
    return {"answer": ans, "choices": list(labels), "contexts": list(contexts),
            "continuations": [delim + c for c in choices],
            "lengths": [len(c) for c in (choices if shared else contexts)]}


def _target_perturbed(row: dict) -> dict:
    check_perturbation_meta(row)
    return build_target(row)


_METRICS = (MetricSpec(name="acc", chance_floor=True), MetricSpec(name="acc_norm", chance_floor=True))
register(Scorer("loglikelihood", _METRICS, score_loglikelihood, build_target, explain=explain,
                output_type="multiple_choice"))
register(Scorer("loglikelihood_perturbed", (*_METRICS, MetricSpec(name="agreement")), score_loglikelihood_perturbed,
                _target_perturbed, finalize_agreement, explain=explain, output_type="multiple_choice"))
