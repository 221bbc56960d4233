"""Pool generator: ``multilingual`` (the same multiple-choice question in French,
Spanish and German).

Clusters of three rows (``fr``, ``es``, ``de``) as in
``auditor/data/suites/builtin/multilingual.jsonl``: ``{"id", "question", "choices",
"answer", "instruction", "meta": {"cluster", "language"}}``. The three rows of a
cluster ask the same question with the same options (translated where they are
words) in the same order, so the gold letter is the cluster's; gold letters are drawn
from a balanced schedule over the clusters. Questions come from templates and the
translated tables of :mod:`facts` (capitals, continents, opposites, counts, colours,
planets, weekdays, seasons, a few typed facts) and from computed arithmetic; the
instructions are the builtin file's.
"""

from __future__ import annotations

import random

import facts as F
from gen_knowledge import (
    BUILTIN_ARITHMETIC,
    LETTERS,
    arithmetic_key,
    balanced_positions,
    builtin_rows,
    near_numbers,
    place,
    unit_numbers,
)

CAPABILITY = "multilingual"
SEED = 20240613
LANGS = ("fr", "es", "de")
INSTRUCTION = {
    "fr": "Répondez avec la lettre de la bonne réponse (A, B, C ou D).",
    "es": "Responde con la letra de la opción correcta (A, B, C o D).",
    "de": "Antworte mit dem Buchstaben der richtigen Antwort (A, B, C oder D).",
}
#: clusters per family, at most
QUOTAS = {"capital": 22, "continent": 10, "opposite": 10, "count": 12, "colour": 5, "colour_mix": 3,
          "planet": 4, "arithmetic": 6, "day": 3, "season": 1, "fact": 4}


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def fr_de(noun: str) -> str:
    """French "de" + a noun with its article: "la France" -> "de la France", "le Japon" -> "du Japon"."""
    if noun.startswith("le "):
        return "du " + noun[3:]
    if noun.startswith("les "):
        return "des " + noun[4:]
    return "de " + noun


def es_de(noun: str) -> str:
    """Spanish "de" + a noun: "el Reino Unido" -> "del Reino Unido"."""
    return "del " + noun[3:] if noun.startswith("el ") else "de " + noun


def cluster(q: tuple, a: tuple, d: list[tuple], family: str) -> dict:
    """q, a: (fr, es, de); d: three wrong options, each (fr, es, de)."""
    assert len(d) == 3
    for i in range(3):
        opts = [a[i]] + [x[i] for x in d]
        assert len({o.casefold() for o in opts}) == 4, (q, opts)
    return {"q": q, "a": a, "d": d, "family": family}


def same(x) -> tuple:
    return (str(x),) * 3


# --------------------------------------------------------------------------- families
def _capital(rng: random.Random) -> list[dict]:
    out = []
    ml = [c for c in F.COUNTRIES if c["ml"]]
    for c in ml:
        m = c["ml"]
        q = (f"Quelle est la capitale {fr_de(m['fr'])} ?", f"¿Cuál es la capital {es_de(m['es'])}?",
             f"Was ist die Hauptstadt {m.get('de_gen') or 'von ' + m['de']}?")
        others = [o["ml"] for o in ml if o is not c]
        d = [(o["cap_fr"], o["cap_es"], o["cap_de"]) for o in rng.sample(others, 3)]
        out.append(cluster(q, (m["cap_fr"], m["cap_es"], m["cap_de"]), d, "capital"))
    return out


def _continent(rng: random.Random) -> list[dict]:
    out = []
    for c in F.COUNTRIES:
        m = c["ml"]
        if not m or c["continent"] is None or m.get("plural"):
            continue
        q = (f"Sur quel continent se trouve {m['fr']} ?", f"¿En qué continente está {m['es']}?",
             f"Auf welchem Kontinent liegt {m['de']}?")
        others = [v[1:] for k, v in F.CONTINENTS.items() if k != c["continent"]]
        out.append(cluster(q, F.CONTINENTS[c["continent"]][1:], rng.sample(others, 3), "continent"))
    return out


def _opposite(rng: random.Random) -> list[dict]:
    out = []
    for group, fr, es, de in F.OPPOSITES_ML:
        # one direction per pair (both would ask the same thing twice); "old" has two
        # opposites (young, new), so the age pair is only asked from "young"
        for side in [0 if group == "age" else rng.choice((0, 1))]:
            cue = (fr[side], es[side], de[side])
            ans = (fr[1 - side], es[1 - side], de[1 - side])
            q = (f"Quel est le contraire de « {cue[0]} » ?", f"¿Cuál es el contrario de «{cue[1]}»?",
                 f"Was ist das Gegenteil von „{cue[2]}“?")
            # distractors: either word of a pair of another group (never a near-synonym of the answer)
            pool = [((fr2, es2, de2), s) for g, fr2, es2, de2 in F.OPPOSITES_ML if g != group for s in (0, 1)]
            d = [tuple(cap(pair[i][s]) for i in range(3)) for pair, s in rng.sample(pool, 3)]
            out.append(cluster(q, tuple(cap(x) for x in ans), d, "opposite"))
    return out


def _count(rng: random.Random) -> list[dict]:
    out = []
    for fr, es, de, n in F.COUNTS_ML:
        # legs, sides, wheels: other small numbers; units: other round numbers
        wrong = rng.sample([x for x in range(2, 11) if x != n], 3) if n <= 8 else unit_numbers(n, rng)
        out.append(cluster((fr, es, de), same(n), [same(w) for w in wrong], "count"))
    return out


def _colour_names(key: str) -> tuple:
    return next(c[1:] for c in F.COLOURS_ML if c[0] == key)


def _colour(rng: random.Random) -> list[dict]:
    out = []
    keys = [c[0] for c in F.COLOURS_ML]
    for fr, es, de, colour, exclude in F.COLOUR_OF_ML:
        pool = [k for k in keys if k != colour and k not in exclude]
        out.append(cluster((fr, es, de), _colour_names(colour), [_colour_names(k) for k in rng.sample(pool, 3)],
                           "colour"))
    return out


_MIX_INPUTS = {"Orange": ("Red", "Yellow"), "Purple": ("Red", "Blue"), "Pink": ("Red", "White"),
               "Grey": ("Black", "White")}


def _colour_mix(rng: random.Random) -> list[dict]:
    out = []
    keys = [c[0] for c in F.COLOURS_ML]
    for fr, es, de, res in F.COLOUR_MIX_ML:
        q = (f"Quelle couleur obtient-on en mélangeant {fr} ?", f"¿Qué color se obtiene al mezclar {es}?",
             f"Welche Farbe entsteht, wenn man {de} mischt?")
        pool = [k for k in keys if k != res and k not in _MIX_INPUTS[res]]
        out.append(cluster(q, _colour_names(res), [_colour_names(k) for k in rng.sample(pool, 3)], "colour_mix"))
    return out


#: (fr, es, de question, index of the planet in facts.PLANETS, planets never offered)
_PLANET_Q = [
    ("Quelle planète est la plus proche du Soleil ?", "¿Qué planeta está más cerca del Sol?",
     "Welcher Planet ist der Sonne am nächsten?", 0, ()),
    ("Quelle planète est la plus éloignée du Soleil ?", "¿Qué planeta está más lejos del Sol?",
     "Welcher Planet ist am weitesten von der Sonne entfernt?", 7, ()),
    ("Sur quelle planète vivons-nous ?", "¿En qué planeta vivimos?", "Auf welchem Planeten leben wir?", 2, ()),
    ("Quelle est la plus grande planète du système solaire ?", "¿Cuál es el planeta más grande del sistema solar?",
     "Welcher ist der größte Planet des Sonnensystems?", 4, ()),
    ("Quelle planète est célèbre pour ses grands anneaux ?", "¿Qué planeta es famoso por sus grandes anillos?",
     "Welcher Planet ist für seine großen Ringe bekannt?", 5, (4, 6, 7)),  # Jupiter, Uranus, Neptune have rings
]


def _planet(rng: random.Random) -> list[dict]:
    out = []
    for fr, es, de, idx, never in _PLANET_Q:
        pool = [p[1:] for i, p in enumerate(F.PLANETS) if i != idx and i not in never]
        out.append(cluster((fr, es, de), F.PLANETS[idx][1:], rng.sample(pool, 3), "planet"))
    return out


def _arithmetic(rng: random.Random, n: int = 24) -> list[dict]:
    out = []
    seen = set(BUILTIN_ARITHMETIC)
    while len(out) < n:
        op = "+-x"[len(out) % 3]
        if op == "+":
            a, b = rng.randint(2, 40), rng.randint(2, 40)
            e, ans = f"{a} + {b}", a + b
        elif op == "-":
            a = rng.randint(12, 60)
            b = rng.randint(2, a - 2)
            e, ans = f"{a} - {b}", a - b
        else:
            a, b = rng.randint(2, 10), rng.randint(2, 10)
            e, ans = f"{a} × {b}", a * b
        if arithmetic_key(op, a, b) in seen:
            continue
        seen.add(arithmetic_key(op, a, b))
        q = (f"Combien font {e} ?", f"¿Cuánto es {e}?", f"Wie viel ist {e}?")
        out.append(cluster(q, same(ans), [same(w) for w in near_numbers(ans, rng)], "arithmetic"))
    return out


def _day(rng: random.Random) -> list[dict]:
    out = []
    for i in range(7):
        j = (i + 1) % 7
        q = (f"Quel jour vient après {F.DAYS_FR[i]} ?", f"¿Qué día viene después {es_de('el ' + F.DAYS_ES[i])}?",
             f"Welcher Tag kommt nach {F.DAYS_DE[i]}?")
        wrong = rng.sample([k for k in range(7) if k not in (i, j)], 3)
        d = [(cap(F.DAYS_FR[k]), cap(F.DAYS_ES[k]), F.DAYS_DE[k]) for k in wrong]
        out.append(cluster(q, (cap(F.DAYS_FR[j]), cap(F.DAYS_ES[j]), F.DAYS_DE[j]), d, "day"))
    return out


def _season(rng: random.Random) -> list[dict]:
    out = []
    s = F.SEASONS_ML
    for i in range(4):
        j = (i + 1) % 4
        fr, es, de = s[i]
        q = (f"Quelle saison vient après {fr} ?", f"¿Qué estación viene después {es_de(es)}?",
             f"Welche Jahreszeit kommt nach {de.replace('der ', 'dem ', 1)}?")
        d = [tuple(cap(x) for x in s[k]) for k in range(4) if k != j]
        out.append(cluster(q, tuple(cap(x) for x in s[j]), d, "season"))
    return out


def _fact(rng: random.Random) -> list[dict]:
    return [cluster(f["q"], f["a"], f["d"], "fact") for f in F.ML_FACTS]


FAMILIES = {"capital": _capital, "continent": _continent, "opposite": _opposite, "count": _count,
            "colour": _colour, "colour_mix": _colour_mix, "planet": _planet, "arithmetic": _arithmetic,
            "day": _day, "season": _season, "fact": _fact}


def rows() -> list[dict]:
    rng = random.Random(SEED)
    builtin = builtin_rows("multilingual")
    assert all(r["instruction"] == INSTRUCTION[r["meta"]["language"]] for r in builtin)
    taken = {r["question"] for r in builtin}
    chosen: list[dict] = []
    for name, fn in FAMILIES.items():
        items = [c for c in fn(random.Random(f"{SEED}:{name}")) if not taken & set(c["q"])]
        rng.shuffle(items)
        for c in items[:QUOTAS[name]]:
            taken |= set(c["q"])
            chosen.append(c)
    rng.shuffle(chosen)
    out: list[dict] = []
    for k, (c, pos) in enumerate(zip(chosen, balanced_positions(len(chosen), rng)), start=1):
        cid = f"pl{k:04d}"
        order = place(0, [1, 2, 3], pos, rng)  # 0 = the correct option, 1-3 the distractors
        for i, lang in enumerate(LANGS):
            texts = [c["a"][i]] + [x[i] for x in c["d"]]
            out.append({"id": f"{cid}-{lang}", "question": c["q"][i], "choices": [texts[j] for j in order],
                        "answer": LETTERS[pos], "instruction": INSTRUCTION[lang],
                        "meta": {"cluster": cid, "language": lang}})
    return out
