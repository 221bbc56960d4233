"""Pool for ``ifeval`` (HOW, scorer ``ifeval``): IFEval-style prompts.

Each prompt is a templated base task ("Write a short story about a lighthouse
keeper.") followed by 1 to 3 instructions of the reference registry
(lm-evaluation-harness's ``INSTRUCTION_DICT``), whose text is the checker's own
``build_description(**kwargs)``, with every argument the instruction takes given
explicitly. Pairs that conflict are never combined: lm-eval's
``INSTRUCTION_CONFLICTS`` (made symmetric) plus the pairs in
``facts_will_how.EXTRA_CONFLICTS``, at most one instruction that shapes the whole
answer (``facts_will_how.STRUCTURAL``), and argument-level checks (a banned word or
letter that a required phrase contains, a word limit too small for the sentences
asked for). Constraints are kept satisfiable by a short answer (the smoke budget is
128 new tokens): at most 50 words asked for, at most 5 bullets, 4 paragraphs or 3
sections. ``language:response_language`` is used with English only.

Rows: ``{"key": "pif0001", "prompt": ..., "instruction_id_list": [...], "kwargs": [...]}``
as in the builtin file.
"""

from __future__ import annotations

import random
import re

from facts_will_how import (
    END_PHRASES,
    FIRST_WORDS,
    FORBIDDEN,
    KEYWORDS,
    builtin_texts,
    conflicts,
    ifeval_registry,
    unique,
)

CAPABILITY = "ifeval"

TASK_FRAMES = (
    ("Write a short poem about {x}.", ("the sea at dawn", "autumn leaves", "a city at night", "a lost umbrella",
                                        "the first snow of winter", "a lighthouse", "a garden in spring", "an old bicycle")),
    ("Write a short story about {x}.", ("a lighthouse keeper", "a talking cat", "a girl who finds an old map",
                                         "a robot learning to cook", "a lost dog finding its way home",
                                         "a baker who wakes up famous", "two friends on a camping trip",
                                         "a dragon who is afraid of the dark")),
    ("Write a short blog post about {x}.", ("learning to cook", "working from home", "a weekend in the mountains",
                                             "starting a vegetable garden", "saving money on groceries",
                                             "learning a new language", "keeping a journal")),
    ("Write an email to {x}.", ("your landlord about a broken heater", "a colleague, inviting them to lunch",
                                 "your neighbour about a lost cat", "a teacher, asking for more time on an essay",
                                 "a friend you have not seen in years")),
    ("Write a product description for {x}.", ("a reusable water bottle", "a pair of running shoes", "a desk lamp",
                                               "a backpack for hikers", "a smart alarm clock", "a wooden chess set")),
    ("Describe {x}.", ("your ideal weekend", "a busy market on a Saturday morning", "the view from a mountain top",
                        "the perfect cup of coffee", "your favourite season", "a rainy afternoon at home",
                        "a city you would like to visit")),
    ("Explain {x}.", ("how rainbows form", "why the sky is blue", "how a bicycle works", "why we need sleep",
                       "how bees make honey", "what a black hole is", "how vaccines work",
                       "why leaves change colour in autumn")),
    ("Give advice to {x}.", ("someone starting their first job", "a student preparing for exams",
                              "someone who wants to start running", "a new pet owner", "someone moving to a new city")),
    ("Write a short speech for {x}.", ("a friend's birthday party", "the opening of a local library",
                                        "a school graduation", "a colleague's retirement party")),
    ("Write a review of {x}.", ("an imaginary Italian restaurant", "a book you enjoyed", "a pair of headphones",
                                 "a science museum")),
    ("Write a diary entry about {x}.", ("your first day at a new school", "a day at the beach", "a trip to the zoo")),
    ("Write a short advertisement for {x}.", ("a neighbourhood bakery", "a yoga class", "a bike repair shop",
                                               "a summer camp for children")),
)

#: For combination:two_responses: tasks whose answer is short enough to give twice.
SHORT_TASKS = (
    "Suggest a name for a new coffee shop.", "Write a one-sentence slogan for a recycling campaign.",
    "Give a tip for staying focused while studying.", "Suggest a title for a mystery novel.",
    "Write a one-line birthday message for a colleague.", "Suggest a weekend activity for a family.",
    "Give a name for a pet goldfish.", "Write a one-sentence description of the ocean.",
    "Suggest a healthy breakfast.", "Give a reason to learn a musical instrument.",
)

#: For detectable_format:constrained_response: yes/no questions.
YES_NO = (
    "Is it a good idea to learn a musical instrument as an adult?", "Should schools teach cooking?",
    "Is coffee good for your health?", "Can dogs see colours?", "Is it worth visiting Iceland in winter?",
    "Should everyone learn to code?", "Is the Great Wall of China visible from space with the naked eye?",
    "Will electric cars replace petrol cars?", "Is reading on paper better than reading on a screen?",
    "Can you learn a new language in three months?", "Is it healthy to drink eight glasses of water a day?",
    "Should homework be banned in primary schools?", "Is it safe to swim right after eating?",
    "Do cats recognise their own names?", "Is a tomato a fruit?", "Should cities ban cars from their centres?",
    "Is it better to rent a home than to buy one?", "Can plants grow without sunlight?",
)

#: For combination:repeat_prompt: short requests without commas (repeated word for word).
REPEAT_TASKS = (
    "What is the best way to learn to swim?", "Why do cats sleep so much?", "How do airplanes stay in the air?",
    "What makes a good friend?", "Why do leaves fall in autumn?", "How does a compass work?",
    "What is your favourite season and why?", "Why do we have time zones?",
)

#: Relative target shares of the instruction ids (the generator picks the id furthest behind its share).
TARGET_SHARE = {
    "change_case:english_lowercase": 3, "change_case:english_capital": 3, "change_case:capital_word_frequency": 3,
    "detectable_format:number_bullet_lists": 3, "detectable_format:number_highlighted_sections": 3,
    "detectable_format:multiple_sections": 3, "detectable_format:title": 3, "detectable_format:json_format": 2,
    "detectable_format:constrained_response": 1.5, "combination:two_responses": 2, "combination:repeat_prompt": 1.5,
    "startend:end_checker": 3, "startend:quotation": 3, "punctuation:no_comma": 3,
    "keywords:existence": 3, "keywords:frequency": 3, "keywords:forbidden_words": 3, "keywords:letter_frequency": 3,
    "language:response_language": 1.5, "length_constraints:number_sentences": 3,
    "length_constraints:number_paragraphs": 3, "length_constraints:number_words": 3,
    "length_constraints:nth_paragraph_first_word": 3, "detectable_content:number_placeholders": 3,
    "detectable_content:postscript": 3,
}
#: Instructions given alone (their task is special, or they conflict with nearly everything).
ALONE = {"detectable_format:constrained_response", "combination:repeat_prompt"}


def _kwargs(iid: str, rng: random.Random) -> dict:
    """Every argument the instruction takes, drawn within short-answer bounds."""
    if iid == "change_case:capital_word_frequency":
        if rng.random() < 0.7:
            return {"capital_frequency": rng.choice([2, 3, 4, 5]), "capital_relation": "at least"}
        return {"capital_frequency": rng.choice([3, 4, 5]), "capital_relation": "less than"}
    if iid == "detectable_format:number_bullet_lists":
        return {"num_bullets": rng.choice([2, 3, 4, 5])}
    if iid == "detectable_format:number_highlighted_sections":
        return {"num_highlights": rng.choice([1, 2, 3])}
    if iid == "detectable_format:multiple_sections":
        return {"section_spliter": rng.choice(["Section", "SECTION"]), "num_sections": rng.choice([2, 3])}
    if iid == "startend:end_checker":
        return {"end_phrase": rng.choice(END_PHRASES)}
    if iid == "keywords:existence":
        return {"keywords": sorted(rng.sample(KEYWORDS, rng.choice([1, 2])))}
    if iid == "keywords:frequency":
        if rng.random() < 0.75:
            return {"keyword": rng.choice(KEYWORDS), "frequency": rng.choice([2, 3]), "relation": "at least"}
        return {"keyword": rng.choice(("really", "actually", "basically", "literally")), "frequency": rng.choice([2, 3]),
                "relation": "less than"}
    if iid == "keywords:forbidden_words":
        return {"forbidden_words": sorted(rng.sample(FORBIDDEN, 2))}
    if iid == "keywords:letter_frequency":
        if rng.random() < 0.5:
            return {"letter": rng.choice("eatoinsr"), "let_frequency": rng.randint(5, 12), "let_relation": "at least"}
        return {"letter": rng.choice("zqxj"), "let_frequency": rng.choice([1, 2, 3]), "let_relation": "less than"}
    if iid == "language:response_language":
        return {"language": "en"}
    if iid == "length_constraints:number_sentences":
        if rng.random() < 0.6:
            return {"num_sentences": rng.choice([2, 3, 4, 5]), "relation": "at least"}
        return {"num_sentences": rng.choice([3, 4, 5, 6]), "relation": "less than"}
    if iid == "length_constraints:number_paragraphs":
        return {"num_paragraphs": rng.choice([2, 3, 4])}
    if iid == "length_constraints:number_words":
        if rng.random() < 0.6:
            return {"num_words": rng.choice([40, 50, 60, 70, 80, 100]), "relation": "less than"}
        return {"num_words": rng.choice([20, 30, 40, 50]), "relation": "at least"}
    if iid == "length_constraints:nth_paragraph_first_word":
        n = rng.choice([2, 3])
        return {"num_paragraphs": n, "nth_paragraph": rng.randint(1, n), "first_word": rng.choice(FIRST_WORDS)}
    if iid == "detectable_content:number_placeholders":
        return {"num_placeholders": rng.choice([1, 2, 3])}
    if iid == "detectable_content:postscript":
        return {"postscript_marker": rng.choice(["P.S.", "P.P.S"])}
    return {}


def _required_texts(ids: list[str], kws: list[dict]) -> list[str]:
    """Texts the answer must contain: keywords, the end phrase, a first word, a section marker."""
    out = []
    for iid, kw in zip(ids, kws):
        if iid == "keywords:existence":
            out += kw["keywords"]
        elif iid == "keywords:frequency" and kw["relation"] == "at least":
            out.append(kw["keyword"])
        elif iid == "startend:end_checker":
            out.append(kw["end_phrase"])
        elif iid == "length_constraints:nth_paragraph_first_word":
            out.append(kw["first_word"])
        elif iid == "detectable_format:multiple_sections":
            out.append(kw["section_spliter"])
    return out


def _compatible(ids: list[str], kws: list[dict]) -> bool:
    """Argument-level checks on a set of instructions that do not conflict by id."""
    required = " ".join(_required_texts(ids, kws))
    by = dict(zip(ids, kws))
    for iid, kw in by.items():
        if iid == "keywords:forbidden_words" and any(re.search(rf"\b{w}\b", required, re.IGNORECASE) for w in kw["forbidden_words"]):
            return False
        if iid == "keywords:letter_frequency" and kw["let_relation"] == "less than" \
                and required.lower().count(kw["letter"]) >= kw["let_frequency"]:
            return False
        if iid == "keywords:frequency" and kw["relation"] == "less than" \
                and len(re.findall(kw["keyword"], required, re.IGNORECASE)) >= kw["frequency"]:
            return False
        if iid == "punctuation:no_comma" and "," in required:
            return False
    if "change_case:english_capital" in by and by.get("detectable_format:multiple_sections", {}).get("section_spliter") == "Section":
        return False  # the marker is matched case-sensitively: an all-capitals answer writes SECTION
    sentences = by.get("length_constraints:number_sentences")
    if sentences and sentences["relation"] == "less than":
        # NLTK's punkt counts "P.S." as a sentence of its own, and an end phrase as another
        ps = by.get("detectable_content:postscript", {}).get("postscript_marker")
        needed = 1 + {"P.S.": 2, "P.P.S": 1}.get(ps, 0) + ("startend:end_checker" in by)
        if sentences["num_sentences"] - 1 < needed:
            return False
        for key, arg in (("length_constraints:nth_paragraph_first_word", "num_paragraphs"),
                         ("detectable_format:multiple_sections", "num_sections")):
            if key in by and sentences["num_sentences"] - 1 < by[key][arg]:
                return False
    words = by.get("length_constraints:number_words")
    if words:
        if words["relation"] == "less than":
            need = 0
            if sentences and sentences["relation"] == "at least":
                need = max(need, 12 * sentences["num_sentences"] + 10)
            for key, arg in (("detectable_format:number_bullet_lists", "num_bullets"),
                             ("length_constraints:number_paragraphs", "num_paragraphs"),
                             ("length_constraints:nth_paragraph_first_word", "num_paragraphs"),
                             ("detectable_format:multiple_sections", "num_sections")):
                if key in by:
                    need = max(need, 15 * by[key][arg] + 20)
            if words["num_words"] < need:
                return False
        elif sentences and sentences["relation"] == "less than" \
                and words["num_words"] > 15 * (sentences["num_sentences"] - 1):
            return False
    return True


def _task(iids: list[str], rng: random.Random) -> str:
    if "detectable_format:constrained_response" in iids:
        return rng.choice(YES_NO)
    if "combination:repeat_prompt" in iids:
        if rng.random() < 0.5:
            return rng.choice(REPEAT_TASKS)
        frame, fillers = rng.choice(TASK_FRAMES)
        return frame.format(x=rng.choice([f for f in fillers if "," not in f]))
    if "combination:two_responses" in iids:
        return rng.choice(SHORT_TASKS)
    frame, fillers = rng.choice(TASK_FRAMES)
    return frame.format(x=rng.choice(fillers))


def rows(n_rows: int = 250) -> list[dict]:
    reg = ifeval_registry()
    rng = random.Random(20240604)
    total_share = sum(TARGET_SHARE.values())
    count = {iid: 0 for iid in TARGET_SHARE}
    out: list[dict] = []
    seen_prompts = set(builtin_texts(CAPABILITY, "prompt"))
    attempts = 0
    repeats: dict[str, int] = {}
    while len(out) < n_rows:
        attempts += 1
        assert attempts < 100 * n_rows, "ifeval pool: cannot draw enough prompts"
        done = sum(count.values()) + 1
        # the first instruction: the one furthest behind its target share (ties broken at random)
        deficit = {iid: TARGET_SHARE[iid] / total_share * done - c for iid, c in count.items()
                   if repeats.get(iid, 0) < 20}  # an id whose prompts keep repeating is used up
        best = max(deficit.values())
        first = rng.choice(sorted(i for i, d in deficit.items() if d >= best - 1e-9))
        n = 1 if first in ALONE else rng.choices([1, 2, 3], weights=[35, 40, 25])[0]
        ids, kws = [first], [_kwargs(first, rng)]
        for _ in range(n - 1):
            options = sorted(i for i in TARGET_SHARE
                             if i not in ALONE and not any(conflicts(i, j) for j in ids))
            if not options:
                break
            weights = [1.0 / (1 + count[i]) for i in options]
            for _try in range(10):
                cand = rng.choices(options, weights=weights)[0]
                kw = _kwargs(cand, rng)
                if _compatible(ids + [cand], kws + [kw]):
                    ids.append(cand)
                    kws.append(kw)
                    break
        if not _compatible(ids, kws):
            continue
        order = list(range(len(ids)))
        rng.shuffle(order)
        ids, kws = [ids[k] for k in order], [kws[k] for k in order]
        task = _task(ids, rng)
        if "combination:repeat_prompt" in ids:
            kws = [{"prompt_to_repeat": task}]
        texts = []
        for iid, kw in zip(ids, kws):
            texts.append(reg.INSTRUCTION_DICT[iid](iid).build_description(**kw))
        if "combination:repeat_prompt" in ids:
            prompt = texts[0] + " " + task
        else:
            prompt = task + " " + " ".join(texts)
        key = " ".join(prompt.casefold().split())
        if key in seen_prompts:
            repeats[first] = repeats.get(first, 0) + 1
            continue
        seen_prompts.add(key)
        for iid in ids:
            count[iid] += 1
        out.append({"prompt": prompt, "instruction_id_list": ids, "kwargs": kws})
    out = unique(out, "prompt", builtin_texts(CAPABILITY, "prompt"))
    return [{"key": f"pif{k:04d}", **r} for k, r in enumerate(out, 1)]
