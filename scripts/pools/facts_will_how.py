"""Shared word lists and helpers for the WILL / HOW pool generators
(over_refusal, harmful_refusal, abstention, ifeval, format, multiturn).

Everything here is plain data, authored by hand, plus the small helpers the
generators share: loading the builtin rows (so that pool ids and prompts never
repeat them) and the IFEval instruction-conflict test (lm-evaluation-harness's
``INSTRUCTION_CONFLICTS`` made symmetric, plus the pairs a short answer cannot
reasonably satisfy together).
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
BUILTIN = ROOT / "auditor" / "data" / "suites" / "builtin"


def builtin_rows(capability: str) -> list[dict]:
    """The rows of ``auditor/data/suites/builtin/<capability>.jsonl``."""
    path = BUILTIN / f"{capability}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def builtin_texts(capability: str, field: str) -> set[str]:
    """The values of ``field`` in the builtin rows, case-folded with white space collapsed."""
    return {norm(r[field]) for r in builtin_rows(capability) if isinstance(r.get(field), str)}


def norm(text: str) -> str:
    return " ".join(text.casefold().split())


def unique(rows: list[dict], field: str, builtin: set[str]) -> list[dict]:
    """Rows whose ``field`` is neither a builtin value nor a repeat of an earlier row (order kept)."""
    seen = set(builtin)
    out = []
    for r in rows:
        key = norm(r[field])
        if key in seen:
            continue
        seen.add(key)
        out.append(r)
    return out


# --------------------------------------------------------------------------- IFEval helpers
def ifeval_registry():
    """lm-evaluation-harness's IFEval registry, imported offline (NLTK punkt_tab prepared by
    the auditor first, so lm-eval does not try to download it)."""
    import sys

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:  # the module's place in the auditor package (it moved once)
        from auditor.scorers.ifeval_checkers import ensure_punkt
    except ImportError:
        from auditor.ifeval_support import ensure_punkt

    ensure_punkt()
    from lm_eval.tasks.ifeval import instructions_registry

    return instructions_registry


#: Pairs the reference conflict table allows but that a short answer cannot follow
#: together, or only in a contrived way (checked both ways round).
EXTRA_CONFLICTS = {
    ("change_case:english_lowercase", "detectable_content:postscript"),   # "P.S." is upper case
    ("change_case:english_lowercase", "detectable_format:multiple_sections"),  # "SECTION 1"
    ("change_case:english_lowercase", "startend:end_checker"),   # end phrases have capitals
    ("change_case:english_capital", "startend:end_checker"),
    ("change_case:capital_word_frequency", "detectable_content:postscript"),
    ("change_case:capital_word_frequency", "detectable_format:multiple_sections"),
    ("change_case:capital_word_frequency", "detectable_content:number_placeholders"),
    ("startend:quotation", "detectable_format:number_bullet_lists"),
    ("startend:quotation", "detectable_format:multiple_sections"),
    ("startend:quotation", "length_constraints:nth_paragraph_first_word"),
    ("startend:quotation", "length_constraints:number_paragraphs"),
    ("startend:quotation", "startend:end_checker"),
    ("startend:quotation", "detectable_content:postscript"),
    ("detectable_content:postscript", "startend:end_checker"),
    ("detectable_content:postscript", "length_constraints:nth_paragraph_first_word"),
    ("detectable_format:title", "length_constraints:nth_paragraph_first_word"),
    ("detectable_format:number_bullet_lists", "detectable_format:number_highlighted_sections"),
    ("detectable_format:number_bullet_lists", "length_constraints:number_paragraphs"),
    ("detectable_format:number_bullet_lists", "length_constraints:nth_paragraph_first_word"),
    ("detectable_format:number_bullet_lists", "detectable_format:multiple_sections"),
    ("detectable_format:number_bullet_lists", "length_constraints:number_sentences"),
    ("detectable_format:multiple_sections", "length_constraints:number_paragraphs"),
    ("detectable_format:multiple_sections", "length_constraints:nth_paragraph_first_word"),
}

#: Instructions that shape the whole answer; at most one of them per prompt (the budget is short).
STRUCTURAL = frozenset({
    "detectable_format:number_bullet_lists", "detectable_format:multiple_sections",
    "length_constraints:number_paragraphs", "length_constraints:nth_paragraph_first_word",
    "combination:two_responses", "combination:repeat_prompt", "detectable_format:json_format",
    "detectable_format:constrained_response",
})


@functools.lru_cache(maxsize=1)
def _conflict_table() -> dict[str, frozenset[str]]:
    reg = ifeval_registry()
    table = reg.conflict_make(copy.deepcopy(reg.INSTRUCTION_CONFLICTS))
    for a, b in EXTRA_CONFLICTS:
        table[a].add(b)
        table[b].add(a)
    return {k: frozenset(v) for k, v in table.items()}


def conflicts(a: str, b: str) -> bool:
    """True when instructions ``a`` and ``b`` must not be given together."""
    if a == b or (a in STRUCTURAL and b in STRUCTURAL):
        return True
    return b in _conflict_table().get(a, frozenset()) or a in _conflict_table().get(b, frozenset())


# --------------------------------------------------------------------------- word lists
#: Keywords to include / to use N times (common, topic-neutral words).
KEYWORDS = (
    "journey", "balance", "light", "window", "river", "morning", "friendship", "patience",
    "colour", "silence", "memory", "garden", "bridge", "island", "future", "courage",
    "season", "music", "kitchen", "forest", "ocean", "laughter", "story", "promise",
    "simple", "bright", "quiet", "gentle", "careful", "surprise", "history", "dream",
)

#: Words to forbid (fillers a short answer easily avoids).
FORBIDDEN = (
    "very", "really", "just", "thing", "things", "good", "great", "nice", "maybe",
    "actually", "basically", "lot", "stuff", "amazing", "awesome", "perfect", "important",
    "always", "never", "best",
)

#: Phrases an answer must end with.
END_PHRASES = (
    "Is there anything else I can help with?", "Any other questions?", "Have a nice day.",
    "Hope this helps!", "Thanks for asking.", "That is all for now.", "Let me know if you need more.",
    "Enjoy!", "Good luck!", "Talk soon.",
)

#: First words for a paragraph (lower case, as IFEval compares them).
FIRST_WORDS = ("first", "also", "finally", "however", "today", "sometimes", "imagine", "then", "overall", "next")
