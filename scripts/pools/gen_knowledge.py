"""Pool generator: ``knowledge`` (multiple choice, 4 options, one correct).

Rows as in ``auditor/data/suites/builtin/knowledge.jsonl``:
``{"id", "question", "choices", "answer", "meta": {"topic"}}``. Every question is built
from a template and a fact table in :mod:`facts` (capitals, continents, planets,
elements, animals, colours, opposites, units, calendar, grammar, a few typed general
facts) or from computed arithmetic; the correct option is placed by the code at a
position drawn from a balanced schedule (each letter A-D gold for a quarter of the
rows) and its letter is computed.

This module also holds the helpers the other multiple-choice pools use
(``gen_robustness``, ``gen_multilingual``, ``gen_verbosity``): the question families
(:func:`families`), option placement (:func:`place`, :func:`balanced_positions`) and
numeric distractors (:func:`near_numbers`, :func:`unit_numbers`).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import facts as F

CAPABILITY = "knowledge"
SEED = 20240611
LETTERS = "ABCD"
BUILTIN = Path(__file__).resolve().parent.parent.parent / "auditor" / "data" / "suites" / "builtin"

#: how many questions each family contributes (at most; fewer where the table is smaller)
QUOTAS = {
    "capital": 30, "continent": 18, "planet": 8, "element": 12, "legs": 10, "baby": 12,
    "sound": 10, "animal_class": 16, "colour": 10, "colour_mix": 8, "opposite": 22,
    "unit": 12, "shape": 5, "calendar": 16, "arithmetic": 16, "past_tense": 10, "plural": 6,
    "fact": 34,
}


# --------------------------------------------------------------------------- helpers
def builtin_rows(capability: str) -> list[dict]:
    """The rows of ``auditor/data/suites/builtin/<capability>.jsonl``."""
    path = BUILTIN / f"{capability}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def cap(s: str) -> str:
    """First letter upper-cased, the rest kept ("the United Kingdom" -> "The United Kingdom")."""
    return s[:1].upper() + s[1:]


def balanced_positions(n: int, rng: random.Random, k: int = 4) -> list[int]:
    """``n`` option positions in 0..k-1, each used n//k or n//k+1 times, in random order."""
    pos = [i % k for i in range(n)]
    rng.shuffle(pos)
    return pos


def place(correct, distractors: list, pos: int, rng: random.Random) -> list:
    """The options: ``correct`` at index ``pos``, the distractors in random order around it."""
    ds = list(distractors)
    rng.shuffle(ds)
    return ds[:pos] + [correct] + ds[pos:]


def near_numbers(ans: int, rng: random.Random, k: int = 3) -> list[int]:
    """Wrong answers close to ``ans`` (off by 1, 2 or 10), all non-negative."""
    cands = [ans + d for d in (-10, -2, -1, 1, 2, 10) if ans + d >= 0]
    return rng.sample(cands, k)


def unit_numbers(ans: int, rng: random.Random, k: int = 3) -> list[int]:
    """Wrong answers for a counting fact: other round "unit" numbers and x10, /10, x2, /2."""
    cands = {10, 12, 24, 30, 60, 100, 1000, 7, 365, ans * 10, ans * 2}
    if ans % 10 == 0:
        cands.add(ans // 10)
    if ans % 2 == 0:
        cands.add(ans // 2)
    cands.discard(ans)
    cands = sorted(c for c in cands if c > 0)
    return rng.sample(cands, k)


def small_numbers(ans: int, rng: random.Random, lo: int, hi: int, k: int = 3) -> list[int]:
    """Wrong answers drawn from lo..hi."""
    return rng.sample([n for n in range(lo, hi + 1) if n != ans], k)


def item(q: str, p: str, a, d: list, topic: str, family: str) -> dict:
    """One question of a family: q, a paraphrase p, the correct option a, three wrong d."""
    a, d = str(a), [str(x) for x in d]
    assert len(d) == 3 and len({a.casefold(), *(x.casefold() for x in d)}) == 4, (q, a, d)
    assert p != q, q
    return {"q": q, "p": p, "a": a, "d": d, "topic": topic, "family": family}


# --------------------------------------------------------------------------- families
def _capital(rng: random.Random) -> list[dict]:
    out = []
    caps = [c["capital"] for c in F.COUNTRIES]
    for c in F.COUNTRIES:
        others = [x for x in caps if x != c["capital"]]
        p = rng.choice(["Which city is the capital of {n}?", "{N} has which city as its capital?"])
        out.append(item(f"What is the capital of {c['en']}?", p.format(n=c["en"], N=cap(c["en"])),
                        c["capital"], rng.sample(others, 3), "geography", "capital"))
    return out


def _continent(rng: random.Random) -> list[dict]:
    out = []
    for c in F.COUNTRIES:
        if c["continent"] is None:
            continue
        names = {k: v[0] for k, v in F.CONTINENTS.items()}
        others = [v for k, v in names.items() if k != c["continent"]]
        p = rng.choice(["{N} is a country on which continent?", "Which continent is {n} in?"])
        out.append(item(f"On which continent is {c['en']}?", p.format(n=c["en"], N=cap(c["en"])),
                        names[c["continent"]], rng.sample(others, 3), "geography", "continent"))
    return out


def _planet(rng: random.Random) -> list[dict]:
    out = []
    names = [pl[0] for pl in F.PLANETS]
    for i, name in enumerate(names):
        if i == 0:
            q, p = "Which planet is closest to the Sun?", "Which planet orbits nearest to the Sun?"
        elif i == len(names) - 1:
            q, p = "Which planet is farthest from the Sun?", "Which planet orbits farthest away from the Sun?"
        else:
            o = F.ORDINALS_EN[i]
            q, p = f"Which planet is {o} from the Sun?", f"Counting outwards from the Sun, which planet comes {o}?"
        others = [x for x in names if x != name]
        out.append(item(q, p, name, rng.sample(others, 3), "science", "planet"))
    return out


def _element(rng: random.Random) -> list[dict]:
    out = []
    syms = list(F.ELEMENTS.values())
    for el, sym in F.ELEMENTS.items():
        others = [s for s in syms if s != sym]
        out.append(item(f"What is the chemical symbol of {el}?", f"Which symbol stands for {el} in chemistry?",
                        sym, rng.sample(others, 3), "science", "element"))
    return out


def _legs(rng: random.Random) -> list[dict]:
    out = []
    for animal, n in F.LEGS.items():
        d = rng.sample([x for x in (0, 2, 4, 6, 8, 10) if x != n], 3)
        out.append(item(f"How many legs does {animal} have?", f"{cap(animal)} has how many legs?", n, d,
                        "nature", "legs"))
    return out


def _baby(rng: random.Random) -> list[dict]:
    out = []
    babies = sorted(set(F.BABY_ANIMALS.values()))
    for animal, baby in F.BABY_ANIMALS.items():
        d = rng.sample([f"A {b}" for b in babies if b != baby], 3)
        out.append(item(f"What is a baby {animal} called?", f"What do we call a baby {animal}?", f"A {baby}", d,
                        "nature", "baby"))
    return out


def _sound(rng: random.Random) -> list[dict]:
    out = []
    for s in F.ANIMAL_SOUNDS:
        pool = [a for a in F.SOUND_ANIMALS if a != s["animal"] and a not in s["exclude"]]
        d = [f"The {a}" for a in rng.sample(pool, 3)]
        out.append(item(f"Which animal {s['verb']}?", f"Which of these animals {s['verb']}?", f"The {s['animal']}", d,
                        "nature", "sound"))
    return out


def _animal_class(rng: random.Random) -> list[dict]:
    out = []
    for cls, members in F.ANIMAL_CLASSES.items():
        # distractors from three different other groups (the other classes and the rest)
        groups = [m for c, m in F.ANIMAL_CLASSES.items() if c != cls]
        groups.append([a for a in F.OTHER_ANIMALS if not (cls == "a fish" and a == "jellyfish")])
        for member in members:
            d = [f"The {rng.choice(g)}" for g in rng.sample(groups, 3)]
            out.append(item(f"Which of these animals is {cls}?", f"One of these animals is {cls}. Which one?",
                            f"The {member}", d, "nature", "animal_class"))
    return out


def _colour(rng: random.Random) -> list[dict]:
    out = []
    for c in F.COLOUR_OF:
        pool = [x for x in F.COLOURS_EN if x != c["colour"] and x not in c["exclude"]]
        out.append(item(f"What colour is {c['thing']}?", f"{cap(c['thing'])} is usually which colour?", c["colour"],
                        rng.sample(pool, 3), "everyday", "colour"))
    return out


def _colour_mix(rng: random.Random) -> list[dict]:
    out = []
    builtin = {r["question"] for r in builtin_rows("knowledge")}
    for a, b, res in F.COLOUR_MIX:
        pair = [(a, b), (b, a)]
        if any(f"Which colour do you get when you mix {x} and {y}?" in builtin for x, y in pair):
            continue  # the builtin file asks about this mixture already
        x, y = rng.choice(pair)  # one order only: the two orders are the same question
        pool = [c for c in F.COLOURS_EN if c not in (res, cap(x), cap(y))]
        out.append(item(f"Which colour do you get when you mix {x} and {y}?",
                        f"Mixing {x} paint with {y} paint gives which colour?", res, rng.sample(pool, 3),
                        "everyday", "colour_mix"))
    return out


def _pos_class(group: str) -> str:
    return group.split("_")[0] if "_" in group else "adj"


def _opposite(rng: random.Random) -> list[dict]:
    out = []
    for w, o, group, one_way in F.OPPOSITES:
        # one direction per pair (both would ask the same thing twice)
        for cue, ans in [(w, o) if one_way else rng.choice([(w, o), (o, w)])]:
            pool = sorted({x for w2, o2, g2, _ in F.OPPOSITES
                           if g2 != group and _pos_class(g2) == _pos_class(group) for x in (w2, o2)})
            d = [cap(x) for x in rng.sample(pool, 3)]
            out.append(item(f"What is the opposite of {cue}?", f"Which word means the opposite of {cue}?", cap(ans), d,
                            "language", "opposite"))
    return out


def _unit(rng: random.Random) -> list[dict]:
    out = []
    for big, small, n in F.UNITS:
        out.append(item(f"How many {small} are there in {big}?", f"How many {small} make up {big}?", n,
                        unit_numbers(n, rng), "everyday", "unit"))
        if big in F.UNIT_PLURAL:
            k = rng.randint(2, 5)
            ans = k * n
            out.append(item(f"How many {small} are there in {k} {F.UNIT_PLURAL[big]}?",
                            f"How many {small} make up {k} {F.UNIT_PLURAL[big]}?", ans,
                            rng.sample(sorted({ans + n, ans - n, ans * 10, n, ans + 10} - {ans}), 3), "math", "unit"))
    return out


def _shape(rng: random.Random) -> list[dict]:
    return [item(f"How many sides does {s} have?", f"{cap(s)} has how many sides?", n,
                 small_numbers(n, rng, 3, 10), "math", "shape") for s, n in F.SHAPE_SIDES.items()]


def _calendar(rng: random.Random) -> list[dict]:
    out = []
    days = F.DAYS_EN
    for i, d in enumerate(days):
        nxt, prv = days[(i + 1) % 7], days[(i - 1) % 7]
        out.append(item(f"Which day comes after {d}?", f"What is the day after {d}?", nxt,
                        rng.sample([x for x in days if x not in (d, nxt)], 3), "everyday", "calendar"))
        out.append(item(f"Which day comes before {d}?", f"What is the day before {d}?", prv,
                        rng.sample([x for x in days if x not in (d, prv)], 3), "everyday", "calendar"))
    months = [m for m, _ in F.MONTHS_EN]
    for i, m in enumerate(months):
        nxt = months[(i + 1) % 12]
        out.append(item(f"Which month comes after {m}?", f"What is the month after {m}?", nxt,
                        rng.sample([x for x in months if x not in (m, nxt)], 3), "everyday", "calendar"))
    for m, n in F.MONTHS_EN:
        if n is not None:
            out.append(item(f"How many days are there in {m}?", f"{m} has how many days?", n,
                            [x for x in (28, 29, 30, 31) if x != n], "everyday", "calendar"))
    seasons = F.SEASONS_EN
    for i, s in enumerate(seasons):
        nxt = seasons[(i + 1) % 4]
        out.append(item(f"Which season comes after {s}?", f"What is the season after {s}?", cap(nxt),
                        [cap(x) for x in seasons if x != nxt], "everyday", "calendar"))
    return out


def arithmetic_key(op: str, a: int, b: int) -> tuple:
    """The same sum or product whichever way round its operands are written."""
    return (op, a, b) if op == "-" else (op, min(a, b), max(a, b))


#: sums and products the builtin knowledge / multilingual files ask already ("5 + 7", "9 times 3")
BUILTIN_ARITHMETIC = {arithmetic_key("+", 5, 7), arithmetic_key("x", 9, 3)}


def _arithmetic(rng: random.Random, n: int = 40) -> list[dict]:
    out = []
    seen = set(BUILTIN_ARITHMETIC)
    while len(out) < n:
        op = "+-x"[len(out) % 3]
        if op == "+":
            a, b = rng.randint(2, 30), rng.randint(2, 30)
            q, p, ans = f"What is {a} + {b}?", f"If you add {b} to {a}, what do you get?", a + b
        elif op == "-":
            a = rng.randint(10, 50)
            b = rng.randint(2, a - 2)
            q, p, ans = f"What is {a} - {b}?", f"If you take {b} away from {a}, what is left?", a - b
        else:
            a, b = rng.randint(2, 10), rng.randint(2, 10)
            q, p, ans = f"What is {a} times {b}?", f"What do you get if you multiply {a} by {b}?", a * b
        if arithmetic_key(op, a, b) in seen:
            continue
        seen.add(arithmetic_key(op, a, b))
        out.append(item(q, p, ans, near_numbers(ans, rng), "math", "arithmetic"))
    return out


def _past_tense(rng: random.Random) -> list[dict]:
    return [item(f"What is the past tense of {base}?", f"Which word is the past tense of {base}?", cap(past),
                 [cap(F.WRONG_PAST[base]), cap(third), cap(ing)], "language", "past_tense")
            for base, past, third, ing in F.IRREGULAR_VERBS]


def _plural(rng: random.Random) -> list[dict]:
    return [item(f"What is the plural of {sg}?", f"What do you call more than one {sg}?", cap(pl),
                 [cap(x) for x in wrong], "language", "plural")
            for sg, pl, wrong in F.IRREGULAR_PLURALS]


def _fact(rng: random.Random) -> list[dict]:
    return [item(f["q"], f["p"], f["a"], f["d"], f["topic"], "fact") for f in F.SCIENCE_FACTS]


FAMILIES = {
    "capital": _capital, "continent": _continent, "planet": _planet, "element": _element, "legs": _legs,
    "baby": _baby, "sound": _sound, "animal_class": _animal_class, "colour": _colour, "colour_mix": _colour_mix,
    "opposite": _opposite, "unit": _unit, "shape": _shape, "calendar": _calendar, "arithmetic": _arithmetic,
    "past_tense": _past_tense, "plural": _plural, "fact": _fact,
}


def families(seed: int = SEED) -> dict[str, list[dict]]:
    """Every family's questions (each family drawn with its own seeded generator)."""
    return {name: fn(random.Random(f"{seed}:{name}")) for name, fn in FAMILIES.items()}


# --------------------------------------------------------------------------- the pool
def pool_items(seed: int = SEED) -> list[dict]:
    """The knowledge pool before rows are written: family items, builtin questions and
    repeats dropped, each family cut to its quota, shuffled, with ``id``, ``choices``
    and ``answer`` (balanced gold positions) added."""
    rng = random.Random(seed)
    taken = {r["question"] for r in builtin_rows("knowledge")}
    chosen: list[dict] = []
    for name, items in families(seed).items():
        rng.shuffle(items)
        n = 0
        for it in items:
            if n == QUOTAS[name]:
                break
            if it["q"] in taken:
                continue
            taken.add(it["q"])
            chosen.append(it)
            n += 1
    rng.shuffle(chosen)
    for k, (it, pos) in enumerate(zip(chosen, balanced_positions(len(chosen), rng)), start=1):
        it["id"] = f"pk{k:04d}"
        it["choices"] = place(it["a"], it["d"], pos, rng)
        it["answer"] = LETTERS[pos]
    return chosen


def rows() -> list[dict]:
    return [{"id": it["id"], "question": it["q"], "choices": it["choices"], "answer": it["answer"],
             "meta": {"topic": it["topic"]}} for it in pool_items()]
