"""Pool generator: ``verbosity`` (short factual questions; the scorer measures answer length).

Rows as in ``auditor/data/suites/builtin/verbosity.jsonl``: ``{"id", "question"}``. The
questions are the open-question forms of the knowledge families (capitals, continents,
planets, elements, animals, colours, opposites, units, calendar, grammar, arithmetic,
typed facts marked as standing alone): every one has a short, one-phrase answer, so a
longer reply is the adapter's verbosity, not the question's. Questions that only make
sense with options ("Which of these animals ...") are left out.
"""

from __future__ import annotations

import random

import facts as F
from gen_knowledge import builtin_rows, families

CAPABILITY = "verbosity"
SEED = 20240616
#: questions per family, at most
QUOTAS = {
    "capital": 34, "continent": 18, "planet": 6, "element": 16, "legs": 10, "baby": 12, "sound": 10,
    "colour": 10, "colour_mix": 6, "opposite": 26, "unit": 14, "shape": 4, "calendar": 16, "arithmetic": 20,
    "past_tense": 14, "plural": 6, "fact": 30,
}
STANDALONE_FACTS = {f["q"] for f in F.SCIENCE_FACTS if f["short"]}


def _open_form(fam: str, q: str) -> str:
    """The builtin file's wording where it differs from the knowledge pool's."""
    if fam == "element":
        return q.replace("chemical symbol of", "chemical symbol for")
    return q.replace(" are there in ", " are in ")


def rows() -> list[dict]:
    rng = random.Random(SEED)
    seen = {r["question"] for r in builtin_rows("verbosity")}
    chosen: list[str] = []
    for fam, items in families(SEED).items():
        if fam not in QUOTAS:
            continue
        qs = [_open_form(fam, it["q"]) for it in items if fam != "fact" or it["q"] in STANDALONE_FACTS]
        qs = [q for q in dict.fromkeys(qs) if q not in seen]
        rng.shuffle(qs)
        for q in qs[:QUOTAS[fam]]:
            seen.add(q)
            chosen.append(q)
    rng.shuffle(chosen)
    return [{"id": f"pv{k:04d}", "question": q} for k, q in enumerate(chosen, start=1)]
