"""Multiple choice (CAN): which option letter did the answer choose? Accuracy, and for the
robustness probe the agreement of a perturbed item's answer with its unperturbed original's."""

from __future__ import annotations

import re

from ..records import LETTERS, Generation, Item, MetricSpec, Score
from .scorer import Scorer, register

# --------------------------------------------------------------------------- multiple choice
#: words that introduce the chosen letter ("The answer is B", "Answer: B", "option C"),
#: in English and in the languages of the multilingual items
_MC_MARKER = (r"(?i:\b(?:answer|option|choice|réponse|respuesta|antwort|resposta|risposta|opción|opzione)"
              r"(?:\s+(?:is|est|es|ist|é|è|would\s+be|will\s+be))?)\s*[:=\-]?\s*")


#: after a capital "A": a lower-case word that makes it the article ("A city in France"),
#: unless the word is one that follows a letter answer ("A or B", "A is correct")
_ARTICLE_GUARD = r"(?<!A(?=\s+(?!(?:or|and|is|was|seems|because|since|as|would|should|could|might)\b)[a-z]))"


def _letter_pattern(n: int) -> str:
    return "[" + LETTERS[:n] + "]"


_DASHES = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2019": "'"})


def _norm_text(s: str) -> str:
    """Case-folded, white space collapsed, dashes/minus signs unified, outer quotes and stops stripped."""
    return " ".join(s.translate(_DASHES).casefold().split()).strip(" .,;:!?'\"")


def _contains(haystack: str, needle: str) -> bool:
    """``needle`` occurs in ``haystack`` as a whole (no word character right before or after it)."""
    return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", haystack) is not None


def extract_choice(text: str, choices: list[str]) -> tuple[str | None, str]:
    """Extract the option letter a multiple-choice answer chose.

    Rules, first match wins (markdown ``*``, ``_`` and backticks are removed first):

    1. ``marker``: a letter after an answer marker — "The answer is B.",
       "Answer: (C)", "option D", "La réponse est B" (first marker in the text).
    2. ``echoed_options`` (no answer): two or more lines open with different
       option letters ("A. 5\nB. 6\nC. 8"): the model repeated the option list.
    3. ``leading``: the answer opens with a letter — "B", "B.", "(B)", "b)",
       "[B]", "B: Paris" (lower case only with ``)`` / ``.`` / ``:`` or alone).
    4. ``letter_in_text``: the text names exactly one distinct option letter
       as a standalone capital ("I think B is right", "... is (C)"); an
       "A" followed by a lower-case word is the article, not a letter. Two or
       more distinct letters → no answer, rule ``ambiguous_letters``: a hedge
       between options ("B or C") earns nothing.
    5. ``option_text``: the text repeats one option's text instead of its
       letter (case, spacing, minus-sign style and surrounding quotes or
       full stops ignored; whole words only); if several options match, one
       whose text contains the others wins ("-9" over "9"), otherwise no
       answer (``ambiguous_text``).

    A letter beats option text: "A) Paris" with Paris as option B is
    answer A (as in lm-evaluation-harness's letter filters). Letters beyond
    the number of options are ignored. Returns
    ``(letter or None, rule)``; rule ``none`` when nothing was found.
    """
    n = len(choices)
    letters = _letter_pattern(n)
    t = re.sub(r"[*_`]", "", text).strip()
    m = re.search(_MC_MARKER + r"[\(\[]?(" + letters + r")(?![\w'’])" + _ARTICLE_GUARD, t)
    if m is None:  # lower-case letter after a marker only when it is clearly a letter: "answer: b)"
        m = re.search(_MC_MARKER + r"[\(\[]?(" + letters.lower() + r")(?:[\)\]\.:]|\s*$)", t)
    if m:
        return m.group(1).upper(), "marker"
    listed = set(re.findall(r"(?m)^\s*[\(\[]?(" + letters + r")[\)\]\.:]", t))
    if len(listed) > 1:
        return None, "echoed_options"
    m = re.match(r"[\(\[]?(" + letters + r")(?:[\)\]\.:,]|\s*$|\s*\n|\s+-\s)", t)
    if m is None:
        m = re.match(r"[\(\[]?(" + letters.lower() + r")(?:[\)\]\.:]|\s*$)", t)
    if m:
        return m.group(1).upper(), "leading"
    found = {x.group(1) for x in re.finditer(r"(?<![\w'’])\(?(" + letters + r")\)?(?![\w'’])" + _ARTICLE_GUARD, t)}
    if len(found) == 1:
        return found.pop(), "letter_in_text"
    if len(found) > 1:
        return None, "ambiguous_letters"
    norm = _norm_text(text)
    opts = [_norm_text(c) for c in choices]
    hits = [k for k, c in enumerate(opts) if c and _contains(norm, c)]
    if len(hits) > 1:  # "9" and "-9", "Paris" and "Paris, Texas": keep the option whose text contains the others
        hits = [k for k in hits if not any(j != k and _contains(opts[j], opts[k]) for j in hits)]
    if len(hits) == 1:
        return LETTERS[hits[0]], "option_text"
    return None, "ambiguous_text" if hits else "none"


def score_multiple_choice(item: Item, gen: Generation) -> Score:
    """Multiple-choice accuracy: 1.0 if the extracted letter (:func:`extract_choice`) is the gold letter.

    Detail: ``extracted`` (letter or None), ``rule``, ``gold``, and
    ``chosen_text`` (the chosen option's text, used to compare answers across
    shuffled option orders).
    """
    choices = item.target["choices"]
    letter, rule = extract_choice(gen.text, choices)
    chosen = choices[LETTERS.index(letter)] if letter else None
    detail = {"extracted": letter, "rule": rule, "gold": item.target["answer"], "chosen_text": chosen}
    for key in ("language", "perturbation"):
        if key in item.meta:
            detail[key] = item.meta[key]
    return Score(item_id=gen.item_id, variant=gen.variant, values={"accuracy": float(letter == item.target["answer"])}, detail=detail)


def score_multiple_choice_perturbed(item: Item, gen: Generation) -> Score:
    """Robustness item: accuracy as :func:`score_multiple_choice` on perturbed items;
    ``agreement`` is filled in by :func:`finalize_agreement`. Unperturbed
    originals (``meta.perturbation == "none"``) get None for both (their
    answer is the reference, recorded in the detail)."""
    s = score_multiple_choice(item, gen)
    original = item.meta.get("perturbation") == "none"
    return Score(item_id=s.item_id, variant=s.variant, values={"accuracy": None if original else s.values["accuracy"], "agreement": None},
                 detail={**s.detail, "correct": bool(s.values["accuracy"])})


def finalize_agreement(items: dict[str, Item], scores: list[Score]) -> list[Score]:
    """Agreement of each perturbed item's answer with its unperturbed original's answer.

    Items of a question share ``meta.cluster``; the original has
    ``meta.perturbation == "none"``. Answers are compared by the chosen
    option's *text* (shuffling moves letters); "no answer" on both sides
    counts as agreement (the behaviour did not change). A perturbed item
    whose original is not in the run gets None. One variant at a time.
    """
    reference: dict[str, str | None] = {}
    for s in scores:
        it = items[s.item_id]
        if it.meta.get("perturbation") == "none":
            reference[it.meta["cluster"]] = s.detail["chosen_text"]
    out = []
    for s in scores:
        it = items[s.item_id]
        if it.meta.get("perturbation") == "none":
            out.append(s)
            continue
        cluster = it.meta["cluster"]
        agree = None if cluster not in reference else float(s.detail["chosen_text"] == reference[cluster])
        out.append(Score(item_id=s.item_id, variant=s.variant, values={**s.values, "agreement": agree},
                         detail={**s.detail, "original_text": reference.get(cluster)}))
    return out


def _target_multiple_choice(row: dict) -> dict:
    choices, ans = row.get("choices"), row.get("answer")
    if not isinstance(choices, list) or not 2 <= len(choices) <= 10 \
            or not all(isinstance(c, str) and c.strip() for c in choices):
        raise ValueError("multiple_choice items need 'choices': a list of 2 to 10 option texts")
    if len({_norm_text(c) for c in choices}) != len(choices):
        raise ValueError("multiple_choice items need distinct option texts")
    letters = LETTERS[:len(choices)]
    if isinstance(ans, int) and not isinstance(ans, bool) and 0 <= ans < len(choices):
        ans = letters[ans]
    if not isinstance(ans, str) or ans not in letters:
        raise ValueError(f"multiple_choice items need 'answer': one of the letters {list(letters)}")
    return {"answer": ans, "choices": list(choices)}


def check_perturbation_meta(row: dict) -> None:
    """A robustness item row names its question (``meta.cluster``) and its perturbation (``meta.perturbation``).

    Raises:
        ValueError: either is missing or not a string.
    """
    meta = row.get("meta")
    if not isinstance(meta, dict) or not isinstance(meta.get("cluster"), str) \
            or not isinstance(meta.get("perturbation"), str):
        raise ValueError("robustness items need meta.cluster (the original question id) and "
                         "meta.perturbation ('none' for the original)")


def _target_multiple_choice_perturbed(row: dict) -> dict:
    check_perturbation_meta(row)
    return _target_multiple_choice(row)


register(Scorer("multiple_choice", (MetricSpec(name="accuracy", chance_floor=True),), score_multiple_choice,
                _target_multiple_choice))
register(Scorer("multiple_choice_perturbed", (MetricSpec(name="accuracy", chance_floor=True), MetricSpec(name="agreement")),
                score_multiple_choice_perturbed, _target_multiple_choice_perturbed, finalize_agreement))
