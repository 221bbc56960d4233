"""Pool generator: ``robustness`` (multiple choice under perturbations).

Clusters of five rows as in ``auditor/data/suites/builtin/robustness.jsonl``: one
knowledge-pool question (the cluster is named by its knowledge-pool id, as the builtin
clusters are named by builtin knowledge ids) and its perturbations:

* ``none``: the question as in the knowledge pool;
* ``shuffle``: the options permuted so that the correct one moves to another letter
  (drawn from a balanced schedule), the gold letter recomputed;
* ``paraphrase``: the family's templated paraphrase of the question;
* ``typos``: two or three words of at least four letters with two adjacent letters
  swapped (the first letter stays), drawn from a seeded generator;
* ``format``: the options written inline in the row's ``options`` field, in the four
  layouts of the builtin file taken in turn (``inline`` and ``lowercase_letters`` with
  the question upper-cased, ``parenthesised`` and ``key_value`` with a ``Question:``
  prefix), ``meta.format`` naming the layout.

Clusters are chosen from the knowledge pool with at least two words a typo can go in,
spread over the question families, and with each letter gold in a quarter of them.
"""

from __future__ import annotations

import random
import re

from gen_knowledge import LETTERS, builtin_rows, pool_items

CAPABILITY = "robustness"
SEED = 20240612
N_CLUSTERS = 48
FORMATS = ("inline", "parenthesised", "lowercase_letters", "key_value")

_WORD = re.compile(r"[A-Za-z]+")


def typo_words(q: str) -> list[re.Match]:
    return [m for m in _WORD.finditer(q) if len(m.group()) >= 4]


#: English words an adjacent swap can make from a question word ("there" -> "three"):
#: a typo must stay a non-word, or it changes the question instead of misspelling it
REAL_WORDS = {"three", "dose", "cola", "pats", "form", "from", "quiet", "quite", "diary", "dairy", "angel",
              "angle", "trail", "trial", "tired", "tried", "united", "untied", "casual", "causal", "clam", "calm",
              "slat", "salt", "sued", "used", "bear", "bare", "fro", "tow", "two", "lion", "loin", "wolf", "flow",
              "meat", "mate", "team", "tame", "bowl", "blow", "horse", "shore", "read", "dear", "dare", "lose",
              "sole", "silver", "sliver", "spot", "stop", "tops", "post", "pots", "ante", "lamb", "balm",
              # American spellings of the British words the questions use are not typos
              "meter", "meters", "kilometer", "kilometers", "centimeter", "centimeters", "millimeter",
              "millimeters", "liter", "liters", "milliliter", "milliliters", "center", "theater"}


def _vocabulary() -> set[str]:
    """Every word of the knowledge pool's questions, paraphrases and options."""
    words: set[str] = set()
    for it in pool_items():
        for text in (it["q"], it["p"], *it["choices"]):
            words.update(w.lower() for w in _WORD.findall(text))
    return words


def add_typos(q: str, rng: random.Random, real_words: set[str]) -> str:
    """Swap two adjacent, different letters (not the first) in 2 or 3 words of ``q``,
    never making a real word."""
    def swaps(w: str) -> list[str]:
        out = []
        for i in range(1, len(w) - 1):
            t = w[:i] + w[i + 1] + w[i] + w[i + 2:]
            if w[i] != w[i + 1] and t.lower() not in real_words:
                out.append(t)
        return out

    words = [m for m in typo_words(q) if swaps(m.group())]
    k = min(len(words), rng.choice((2, 3)))
    chosen = sorted(rng.sample(words, k), key=lambda m: m.start())
    out, last = [], 0
    for m in chosen:
        out += [q[last:m.start()], rng.choice(swaps(m.group()))]
        last = m.end()
    out.append(q[last:])
    return "".join(out)


def format_options(choices: list[str], fmt: str) -> str:
    if fmt == "inline":
        return "   ".join(f"{L}) {c}" for L, c in zip(LETTERS, choices))
    if fmt == "parenthesised":
        return "\n".join(f"({L}) {c}" for L, c in zip(LETTERS, choices))
    if fmt == "lowercase_letters":
        return "\n".join(f"{L.lower()}) {c}" for L, c in zip(LETTERS, choices))
    return "Options: " + "; ".join(f"{L} = {c}" for L, c in zip(LETTERS, choices))


def format_question(q: str, fmt: str) -> str:
    return q.upper() if fmt in ("inline", "lowercase_letters") else f"Question: {q}"


def pick_clusters(items: list[dict], rng: random.Random) -> list[dict]:
    """N_CLUSTERS items, round-robin over the families (in random order), gold letter balanced."""
    taken = {r["question"] for r in builtin_rows("robustness")}
    by_family: dict[str, list[dict]] = {}
    for it in items:
        if len(typo_words(it["q"])) >= 2 and it["q"] not in taken:
            by_family.setdefault(it["family"], []).append(it)
    for members in by_family.values():
        rng.shuffle(members)
    order = sorted(by_family)
    rng.shuffle(order)
    per_letter = {L: N_CLUSTERS // 4 for L in LETTERS}
    chosen: list[dict] = []
    while len(chosen) < N_CLUSTERS and any(by_family.values()):
        for fam in order:
            members = by_family[fam]
            hit = next((it for it in members if per_letter[it["answer"]] > 0), None)
            if hit is None:
                members.clear()
                continue
            members.remove(hit)
            per_letter[hit["answer"]] -= 1
            chosen.append(hit)
            if len(chosen) == N_CLUSTERS:
                break
    assert len(chosen) == N_CLUSTERS
    return sorted(chosen, key=lambda it: it["id"])


def rows() -> list[dict]:
    rng = random.Random(SEED)
    clusters = pick_clusters(pool_items(), rng)
    real_words = _vocabulary() | REAL_WORDS
    # shuffle: the gold moves by 1, 2 or 3 places; within each original letter the
    # three shifts are used equally often, so the shuffled gold letters stay balanced
    shifts: dict[str, list[int]] = {}
    for L in LETTERS:
        n = sum(1 for it in clusters if it["answer"] == L)
        s = [1 + i % 3 for i in range(n)]
        rng.shuffle(s)
        shifts[L] = s
    out: list[dict] = []
    for k, it in enumerate(clusters):
        cid, q, choices, gold = it["id"], it["q"], it["choices"], it["answer"]
        correct = choices[LETTERS.index(gold)]
        new_pos = (LETTERS.index(gold) + shifts[gold].pop()) % 4
        others = [c for c in choices if c != correct]
        rng.shuffle(others)
        shuffled = others[:new_pos] + [correct] + others[new_pos:]
        typos = add_typos(q, rng, real_words)
        fmt = FORMATS[k % 4]
        assert typos != q and it["p"] != q and shuffled != choices
        assert sum(a != b for a, b in zip(_WORD.findall(q), _WORD.findall(typos))) >= 2, q
        out += [
            {"id": f"{cid}-none", "question": q, "choices": choices, "answer": gold,
             "meta": {"cluster": cid, "perturbation": "none"}},
            {"id": f"{cid}-shuffle", "question": q, "choices": shuffled, "answer": LETTERS[new_pos],
             "meta": {"cluster": cid, "perturbation": "shuffle"}},
            {"id": f"{cid}-paraphrase", "question": it["p"], "choices": choices, "answer": gold,
             "meta": {"cluster": cid, "perturbation": "paraphrase"}},
            {"id": f"{cid}-typos", "question": typos, "choices": choices, "answer": gold,
             "meta": {"cluster": cid, "perturbation": "typos"}},
            {"id": f"{cid}-format", "question": format_question(q, fmt), "choices": choices,
             "options": format_options(choices, fmt), "answer": gold,
             "meta": {"cluster": cid, "perturbation": "format", "format": fmt}},
        ]
    return out
