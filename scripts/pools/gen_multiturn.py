"""Pool for ``multiturn`` (HOW, scorer ``multiturn_ifeval``): does an instruction given
in turn 1 still hold in turn 3?

Each row is a conversation: user turn 1 gives one or two persistent instructions
(IFEval instruction ids of lm-evaluation-harness's registry, every argument given)
and asks a first question; the assistant's answer follows the instructions; user
turn 2 asks another question; the assistant's answer follows them again; ``prompt``
is the final question. The two assistant answers are short templated answers
(``QA``) transformed to follow the instructions (lower-cased, commas removed, an end
phrase or a postscript appended, a title prepended, wrapped in quotes or JSON, ...),
and every one is checked with the reference checker (``build_description(**kwargs)``
then ``check_following(answer)``, as lm-eval's strict test does, langdetect seeded);
a conversation whose answers fail a check is not kept.

Only instructions a short final answer (64 new tokens) can follow are used: no
bullets, sections, paragraphs or other languages.

Rows: ``{"id": "pmt0001", "history": [...4 turns...], "prompt": ..., "instruction_id_list": [...],
"kwargs": [...]}`` as in the builtin file.
"""

from __future__ import annotations

import json
import random
import re

from facts_will_how import builtin_texts, conflicts, ifeval_registry, norm

CAPABILITY = "multiturn"

#: (question, one-sentence answer without commas, title for <<...>>)
QA = (
    ("What do bees make?", "Bees make honey and beeswax.", "Bees"),
    ("Why do cats purr?", "Cats purr when they feel relaxed and safe.", "Purring cats"),
    ("What is a volcano?", "A volcano is an opening in the ground where melted rock comes out.", "Volcanoes"),
    ("What is a river?", "A river is a large stream of water that flows into a sea or a lake.", "Rivers"),
    ("How many legs does a spider have?", "A spider has eight legs.", "Spiders"),
    ("What is the largest ocean on Earth?", "The Pacific is the largest ocean on Earth.", "The Pacific"),
    ("What gas do plants take in from the air?", "Plants take in carbon dioxide from the air.", "Plants and air"),
    ("Why is the sky blue?", "The sky looks blue because air scatters blue light more than red light.", "Blue skies"),
    ("What is the boiling point of water at sea level?", "Water boils at 100 degrees Celsius at sea level.", "Boiling water"),
    ("What is the tallest animal?", "The giraffe is the tallest animal.", "Giraffes"),
    ("What do pandas eat?", "Pandas eat mostly bamboo.", "Pandas"),
    ("How many continents are there?", "There are seven continents.", "Continents"),
    ("What is the fastest land animal?", "The cheetah is the fastest land animal.", "Cheetahs"),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo.", "Tokyo"),
    ("What is the capital of Italy?", "The capital of Italy is Rome.", "Rome"),
    ("What is the capital of Egypt?", "The capital of Egypt is Cairo.", "Cairo"),
    ("Who wrote Romeo and Juliet?", "William Shakespeare wrote Romeo and Juliet.", "Shakespeare"),
    ("What is the smallest planet in our solar system?", "Mercury is the smallest planet in our solar system.", "Mercury"),
    ("What is the largest planet in our solar system?", "Jupiter is the largest planet in our solar system.", "Jupiter"),
    ("How many days are in a leap year?", "A leap year has 366 days.", "Leap years"),
    ("What do caterpillars turn into?", "Caterpillars turn into butterflies or moths.", "Caterpillars"),
    ("What is a baby dog called?", "A baby dog is called a puppy.", "Puppies"),
    ("What is ice made of?", "Ice is frozen water.", "Ice"),
    ("Why do we need sleep?", "Sleep lets the body and the brain rest and repair themselves.", "Sleep"),
    ("What is the main ingredient of bread?", "The main ingredient of bread is flour.", "Bread"),
    ("What is a glacier?", "A glacier is a huge mass of ice that moves slowly over land.", "Glaciers"),
    ("What is a comet?", "A comet is a ball of ice and dust that travels around the Sun.", "Comets"),
    ("How many hours are in a day?", "A day has 24 hours.", "Hours"),
    ("What do cows eat?", "Cows eat grass and hay.", "Cows"),
    ("What is the longest river in Africa?", "The Nile is the longest river in Africa.", "The Nile"),
    ("What is the hardest natural material?", "Diamond is the hardest natural material.", "Diamonds"),
    ("Where do penguins live?", "Most penguins live in the cold southern part of the world.", "Penguins"),
    ("What do frogs eat?", "Frogs eat insects such as flies and crickets.", "Frogs"),
    ("Why do leaves change colour in autumn?", "Leaves change colour because trees stop making green chlorophyll.", "Autumn leaves"),
    ("What is a rainbow?", "A rainbow is a band of colours made when sunlight shines through raindrops.", "Rainbows"),
    ("How does a bicycle move?", "A bicycle moves when the rider pushes the pedals and turns the chain.", "Bicycles"),
    ("What is the freezing point of water?", "Water freezes at 0 degrees Celsius.", "Freezing water"),
    ("What is the closest star to Earth?", "The Sun is the closest star to Earth.", "The Sun"),
    ("What is a desert?", "A desert is a dry place that gets very little rain.", "Deserts"),
    ("How many strings does a violin have?", "A violin has four strings.", "Violins"),
    ("What language is spoken in Brazil?", "People in Brazil speak Portuguese.", "Brazil"),
    ("What is the largest mammal?", "The blue whale is the largest mammal.", "Blue whales"),
    ("What do plants need to grow?", "Plants need sunlight and water and good soil to grow.", "Growing plants"),
    ("What is a good name for a goldfish?", "A good name for a goldfish is Bubbles.", "Goldfish names"),
    ("What is a good weekend activity?", "A bike ride in the park is a good weekend activity.", "Weekends"),
    ("How do you make tea?", "Pour boiling water over a tea bag and wait three minutes.", "Tea"),
    ("How can I save water at home?", "Turn off the tap while you brush your teeth.", "Saving water"),
    ("What is a healthy breakfast?", "Porridge with fresh fruit is a healthy breakfast.", "Breakfast"),
    ("How can I sleep better?", "Go to bed at the same time every night.", "Better sleep"),
    ("What should I pack for a picnic?", "Pack sandwiches and fruit and a blanket to sit on.", "Picnics"),
    ("How do I keep a houseplant alive?", "Water it when the soil is dry and give it plenty of light.", "Plant care"),
    ("What is a fun indoor hobby?", "Drawing is a fun indoor hobby.", "Hobbies"),
    ("How can I stay warm in winter?", "Wear several thin layers and a warm hat.", "Winter warmth"),
    ("What is a good gift for a teacher?", "A handwritten card is a lovely gift for a teacher.", "Gifts"),
    ("How do birds fly?", "Birds fly by flapping their wings to push air down and back.", "Flight"),
    ("What is thunder?", "Thunder is the sound made by lightning heating the air very quickly.", "Thunder"),
    ("What is the Moon made of?", "The Moon is made mostly of rock and dust.", "The Moon"),
    ("Why is the sea salty?", "The sea is salty because rivers carry minerals from rocks into it.", "Salty seas"),
    ("What is a map?", "A map is a drawing that shows where places are.", "Maps"),
    ("What is the opposite of hot?", "The opposite of hot is cold.", "Opposites"),
    ("What is a synonym of happy?", "A synonym of happy is joyful.", "Synonyms"),
    ("How many sides does a hexagon have?", "A hexagon has six sides.", "Hexagons"),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.", "Gold"),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci painted the Mona Lisa.", "The Mona Lisa"),
    ("What is the currency of the United Kingdom?", "The currency of the United Kingdom is the pound sterling.", "Currency"),
    ("How long does the Earth take to go around the Sun?", "The Earth takes about 365 days to go around the Sun.", "A year"),
    ("What is a noun?", "A noun is a word that names a person or a place or a thing.", "Nouns"),
    ("What is the coldest continent?", "Antarctica is the coldest continent.", "Antarctica"),
    ("What is the main language of Mexico?", "Most people in Mexico speak Spanish.", "Mexico"),
    ("What does a thermometer measure?", "A thermometer measures temperature.", "Thermometers"),
    ("What is a library?", "A library is a place where you can borrow books for free.", "Libraries"),
    ("Why do we brush our teeth?", "We brush our teeth to remove food and germs that cause holes.", "Brushing teeth"),
    ("What is the biggest country by area?", "Russia is the biggest country by area.", "Russia"),
    ("What is a good way to relax after work?", "A short walk outside is a good way to relax after work.", "Relaxing"),
    ("What is a shooting star?", "A shooting star is a small piece of space rock burning up in the air.", "Shooting stars"),
    ("What is a tornado?", "A tornado is a spinning column of air that touches the ground.", "Tornadoes"),
    ("Where does chocolate come from?", "Chocolate comes from the seeds of the cacao tree.", "Chocolate"),
)

#: Final questions (turn 3): templated, plus the QA questions not used earlier in the row.
FINAL_FRAMES = (
    ("What is the capital of {x}?", ("France", "Spain", "Germany", "Canada", "Australia", "Kenya", "Peru", "Norway",
                                     "Greece", "Portugal", "Argentina", "Thailand", "Vietnam", "Ireland", "Poland",
                                     "Sweden", "Chile", "Morocco", "Turkey", "India")),
    ("Why do {x}?", ("birds sing in the morning", "dogs wag their tails", "we yawn", "onions make us cry",
                     "stars twinkle", "we get hiccups", "cats like boxes", "bears hibernate", "owls hunt at night")),
    ("Why does {x}?", ("bread go stale", "ice float on water", "the Moon change shape", "the wind blow", "popcorn pop",
                       "metal feel cold", "the sea have waves", "a helium balloon float", "soap clean our hands")),
    ("What is a good way to {x}?", ("learn new words", "stay focused while studying", "make new friends", "start running",
                                    "keep a room tidy", "save money on food", "learn to draw", "remember names",
                                    "spend a rainy afternoon", "cool down on a hot day", "get up early",
                                    "practise a new language", "start a journal", "prepare for a job interview")),
    ("What do {x} eat?", ("elephants", "koalas", "owls", "rabbits", "sharks", "horses", "squirrels", "hedgehogs",
                          "parrots", "camels")),
    ("How do you make {x}?", ("pancakes", "a paper plane", "a sandwich", "scrambled eggs", "lemonade", "popcorn",
                              "a snowman", "a fruit salad", "hot chocolate", "a cup of coffee")),
    ("Name a famous {x}.", ("painting", "bridge", "scientist", "composer", "mountain", "castle", "novel", "inventor",
                            "explorer", "festival")),
    ("What is {x}?", ("a planet", "an island", "a forest", "a bridge", "a museum", "a galaxy", "a harbour", "a vaccine",
                      "a fossil", "an earthquake", "a canyon", "a lighthouse")),
    ("What is a good name for {x}?", ("a pet rabbit", "a sailing boat", "a bakery", "a robot", "a football team",
                                      "a garden gnome", "a coffee shop", "a rock band")),
    ("How many {x}?", ("players are in a football team", "planets are in our solar system", "legs does an insect have",
                       "minutes are in an hour", "colours are in a rainbow", "bones are in the human body",
                       "months have 31 days", "teeth does an adult have")),
    ("Where do {x} live?", ("kangaroos", "camels", "koalas", "dolphins", "lions", "parrots", "polar bears", "owls")),
    ("What should I take on {x}?", ("a hike", "a beach trip", "a long flight", "a camping trip", "my first day at school")),
    ("Describe {x} in a few words.", ("a sunset", "a busy train station", "a snowy morning", "a thunderstorm",
                                      "a summer market")),
    ("What makes {x}?", ("a good teacher", "a good friend", "a good book", "a good holiday")),
    ("Why is {x} important?", ("exercise", "recycling", "sleep", "reading", "drinking water")),
    ("Give me a tip for {x}.", ("cooking rice", "running in the rain", "growing tomatoes", "learning to swim",
                                "writing a letter", "painting a wall", "taking photos", "reading more books")),
    ("What is the difference between {x}?", ("a lake and a pond", "weather and climate", "a frog and a toad",
                                             "a hill and a mountain", "a town and a city")),
    ("What does a {x} do?", ("baker", "pilot", "librarian", "vet", "firefighter", "gardener", "architect", "dentist",
                             "plumber", "chef")),
)

#: yes/no questions with their answers, for detectable_format:constrained_response
YES_NO = (
    ("Is the Earth round?", "yes"), ("Can fish climb trees?", "no"), ("Is ice colder than boiling water?", "yes"),
    ("Do penguins live at the North Pole?", "no"), ("Is Paris in France?", "yes"), ("Can a cat fly?", "no"),
    ("Is the Sun a star?", "yes"), ("Do spiders have six legs?", "no"), ("Is Rome in Italy?", "yes"),
    ("Is a tomato a vegetable in botany?", "no"), ("Do bees make honey?", "yes"), ("Is the Moon made of cheese?", "no"),
    ("Is Mount Everest the highest mountain on Earth?", "yes"), ("Can humans breathe underwater without equipment?", "no"),
    ("Is Tokyo the capital of Japan?", "yes"), ("Do snakes have legs?", "no"), ("Is a whale a mammal?", "yes"),
    ("Is the Pacific Ocean smaller than a lake?", "no"),
)
YES_NO_FINAL = (
    "Will it rain somewhere on Earth next week?", "Is it a good idea to drink water every day?",
    "Are dogs good pets for families?", "Should I learn to cook?", "Is reading good for the brain?",
    "Will people still read books in fifty years?", "Is chocolate healthy?", "Can you learn to swim as an adult?",
    "Is it fun to travel by train?", "Should children learn a second language?", "Is winter the best season?",
    "Can music help you study?", "Is it better to wake up early?", "Are cats smarter than dogs?",
)

OPENERS = ("From now on, ", "For the rest of this conversation, ", "In this chat, ", "Until I say otherwise, ")
END_PHRASES = ("Is there anything else I can help with?", "Any other questions?", "Have a nice day.",
               "Hope this helps!", "Thanks for asking.", "That is all for now.", "Let me know if you need more.")
#: keyword → a closing sentence that contains it
KEYWORD_TAILS = {
    "simple": "It is that simple.", "today": "That is my answer for today.", "curious": "Stay curious.",
    "friend": "Share this with a friend.", "fact": "That is a fun fact.", "learn": "There is always more to learn.",
    "question": "That was a good question.", "nature": "Nature is full of surprises.",
}
FORBIDDEN = ("very", "really", "just", "good", "great", "nice", "actually", "basically", "thing", "stuff", "lot",
             "maybe", "awesome", "perhaps")
POSTSCRIPT_TAILS = ("I hope that is useful.", "Feel free to ask me more.", "Thanks for the question.",
                    "Have a lovely day.", "There is more to read about this online.")
FIRST_WORDS = {"sure": "Sure!", "certainly": "Certainly!", "absolutely": "Absolutely!", "hello": "Hello!",
               "okay": "Okay!"}

#: Relative target shares of the instruction ids.
TARGET_SHARE = {
    "change_case:english_lowercase": 3, "change_case:english_capital": 3, "change_case:capital_word_frequency": 2,
    "punctuation:no_comma": 3, "startend:end_checker": 3, "startend:quotation": 3, "keywords:existence": 3,
    "keywords:frequency": 2, "keywords:forbidden_words": 3, "keywords:letter_frequency": 2,
    "detectable_content:postscript": 3, "detectable_format:title": 3, "detectable_format:number_highlighted_sections": 2,
    "length_constraints:number_words": 3, "length_constraints:number_sentences": 2,
    "length_constraints:nth_paragraph_first_word": 2, "detectable_format:json_format": 1.5,
    "detectable_format:constrained_response": 1.5,
}
ALONE = {"detectable_format:constrained_response"}


def _params(iid: str, rng: random.Random, answers: list[str]) -> tuple[dict, str] | None:
    """(kwargs, the clause the user says) for one instruction, or None if it cannot fit these answers."""
    if iid == "change_case:english_lowercase":
        return {}, rng.choice(["write every answer in lowercase letters only",
                               "use only lowercase letters in your answers"])
    if iid == "change_case:english_capital":
        return {}, rng.choice(["write your answers in English and in capital letters only",
                               "answer in English using only capital letters"])
    if iid == "change_case:capital_word_frequency":
        n = rng.choice([2, 3])
        return ({"capital_frequency": n, "capital_relation": "at least"},
                f"use at least {['', '', 'two', 'three'][n]} words written entirely in capital letters in every answer")
    if iid == "punctuation:no_comma":
        return {}, rng.choice(["never use a comma in any of your answers", "do not use any commas in your answers"])
    if iid == "startend:end_checker":
        p = rng.choice(END_PHRASES)
        return {"end_phrase": p}, rng.choice([f'finish every answer with the exact phrase "{p}" and nothing after it',
                                              f'end each answer with the exact words "{p}" and nothing after them'])
    if iid == "startend:quotation":
        return {}, rng.choice(["wrap your entire answer in double quotation marks",
                               "put every answer inside double quotation marks"])
    if iid == "keywords:existence":
        w = rng.choice(sorted(KEYWORD_TAILS))
        return {"keywords": [w]}, f'include the word "{w}" somewhere in every answer'
    if iid == "keywords:frequency":
        w = rng.choice(sorted(KEYWORD_TAILS))
        return {"keyword": w, "frequency": 1, "relation": "at least"}, f'use the word "{w}" at least once in every answer'
    if iid == "keywords:forbidden_words":
        free = [w for w in FORBIDDEN if not any(re.search(rf"\b{w}\b", a, re.IGNORECASE) for a in answers)]
        if len(free) < 2:
            return None
        a, b = sorted(rng.sample(free, 2))
        return {"forbidden_words": [a, b]}, f'never use the words "{a}" or "{b}"'
    if iid == "keywords:letter_frequency":
        free = [c for c in "zqxj" if not any(c in a.lower() for a in answers)]
        if not free:
            return None
        c = rng.choice(free)
        return {"letter": c, "let_frequency": 1, "let_relation": "less than"}, f"never use the letter {c} in any answer"
    if iid == "detectable_content:postscript":
        m = rng.choice(["P.S.", "P.P.S"])
        return {"postscript_marker": m}, f"add a postscript that starts with {m} at the end of every answer"
    if iid == "detectable_format:title":
        return {}, "start every answer with a title wrapped in double angular brackets, such as <<my title>>"
    if iid == "detectable_format:number_highlighted_sections":
        n = rng.choice([1, 2])
        return ({"num_highlights": n},
                f"highlight at least {['', 'one part', 'two parts'][n]} of every answer with markdown, like *this part*")
    if iid == "length_constraints:number_words":
        n = rng.choice([20, 25, 30])
        return {"num_words": n, "relation": "less than"}, f"keep every answer shorter than {n} words"
    if iid == "length_constraints:number_sentences":
        if rng.random() < 0.6:
            return {"num_sentences": 2, "relation": "less than"}, "answer every question in a single sentence"
        return {"num_sentences": 3, "relation": "less than"}, "answer in no more than two sentences"
    if iid == "length_constraints:nth_paragraph_first_word":
        w = rng.choice(sorted(FIRST_WORDS))
        return ({"num_paragraphs": 1, "nth_paragraph": 1, "first_word": w},
                f'write every answer as a single paragraph that starts with the word "{FIRST_WORDS[w][:-1]}"')
    if iid == "detectable_format:json_format":
        return {}, "wrap your entire output in JSON format"
    if iid == "detectable_format:constrained_response":
        return {}, ('answer every question with one of these exact phrases only: "My answer is yes.", '
                    '"My answer is no." or "My answer is maybe."')
    raise ValueError(iid)


def _transform(answer: str, title: str, ids: list[str], kws: list[dict], rng: random.Random) -> str:
    """The answer rewritten to follow every instruction (content first, then case, then wrappers)."""
    by = dict(zip(ids, kws))
    a = answer
    if "detectable_format:number_highlighted_sections" in by or "change_case:capital_word_frequency" in by:
        words = [w for w in re.findall(r"[A-Za-z]{3,}", a)]
        longest = sorted(dict.fromkeys(words), key=lambda w: (-len(w), words.index(w)))
        if "detectable_format:number_highlighted_sections" in by:
            for w in longest[: by["detectable_format:number_highlighted_sections"]["num_highlights"]]:
                a = re.sub(rf"\b{w}\b", f"*{w}*", a, count=1)
        if "change_case:capital_word_frequency" in by:
            for w in longest[: by["change_case:capital_word_frequency"]["capital_frequency"]]:
                a = re.sub(rf"(?<!\*)\b{w}\b", w.upper(), a, count=1)
    if "length_constraints:nth_paragraph_first_word" in by:
        a = FIRST_WORDS[by["length_constraints:nth_paragraph_first_word"]["first_word"]] + " " + a
    for key in ("keywords:existence", "keywords:frequency"):
        if key in by:
            w = by[key]["keywords"][0] if key == "keywords:existence" else by[key]["keyword"]
            if not re.search(w, a, re.IGNORECASE):
                a = a + " " + KEYWORD_TAILS[w]
    if "detectable_format:title" in by:
        a = f"<<{title}>>\n{a}"
    if "detectable_content:postscript" in by:
        a = f"{a}\n\n{by['detectable_content:postscript']['postscript_marker']} {rng.choice(POSTSCRIPT_TAILS)}"
    if "startend:end_checker" in by:
        a = f"{a} {by['startend:end_checker']['end_phrase']}"
    if "punctuation:no_comma" in by:
        a = a.replace(",", "")
    if "change_case:english_lowercase" in by:
        a = a.lower()
    if "change_case:english_capital" in by:
        a = a.upper()
    if "startend:quotation" in by:
        a = f'"{a}"'
    if "detectable_format:json_format" in by:
        a = json.dumps({"answer": a}, ensure_ascii=False)
    return a


def _follows(reg, ids: list[str], kws: list[dict], answer: str) -> bool:
    """lm-eval's strict test (utils.test_instruction_following_strict) on one answer, seeded."""
    from langdetect import DetectorFactory

    state = random.getstate()
    random.seed(0)
    try:
        for iid, kw in zip(ids, kws):
            DetectorFactory.seed = 0
            inst = reg.INSTRUCTION_DICT[iid](iid)
            inst.build_description(**{k: v for k, v in kw.items() if v})
            if not (answer.strip() and inst.check_following(answer)):
                return False
        return True
    finally:
        random.setstate(state)


def _final_questions(rng: random.Random) -> list[str]:
    qs = [frame.format(x=x) for frame, xs in FINAL_FRAMES for x in xs] + [q for q, _a, _t in QA]
    builtin = builtin_texts(CAPABILITY, "prompt")
    out, seen = [], set()
    for q in qs:
        if norm(q) not in builtin and norm(q) not in seen:
            seen.add(norm(q))
            out.append(q)
    rng.shuffle(out)
    return out


def rows(n_rows: int = 240, n_constrained: int = 12) -> list[dict]:
    reg = ifeval_registry()
    rng = random.Random(20240606)
    total = sum(TARGET_SHARE.values())
    count = {iid: 0 for iid in TARGET_SHARE}
    out: list[dict] = []

    # constrained_response: yes/no conversations
    finals = [q for q in YES_NO_FINAL if norm(q) not in builtin_texts(CAPABILITY, "prompt")]
    for q3 in finals[:n_constrained]:
        (q1, y1), (q2, y2) = rng.sample(YES_NO, 2)
        ids, kws = ["detectable_format:constrained_response"], [{}]
        _kw, clause = _params(ids[0], rng, [])
        a1, a2 = f"My answer is {y1}.", f"My answer is {y2}."
        if not (_follows(reg, ids, kws, a1) and _follows(reg, ids, kws, a2)):
            continue
        out.append(_row(_turn1(rng.choice(OPENERS), [clause], q1), a1, q2, a2, q3, ids, kws))
        count[ids[0]] += 1

    choosable = [i for i in TARGET_SHARE if i not in ALONE]
    for q3 in _final_questions(rng):
        if len(out) >= n_rows:
            break
        for _attempt in range(20):
            done = sum(count.values()) + 1
            deficit = {i: TARGET_SHARE[i] / total * done - count[i] for i in choosable}
            best = max(deficit.values())
            first = rng.choice(sorted(i for i, d in deficit.items() if d >= best - 1e-9))
            ids = [first]
            if rng.random() < 0.45:
                options = [i for i in choosable if not any(conflicts(i, j) for j in ids)]
                if options:
                    ids.append(rng.choices(options, weights=[1.0 / (1 + count[i]) for i in options])[0])
            (q1, a1, t1), (q2, a2, t2) = rng.sample([x for x in QA if norm(x[0]) != norm(q3)], 2)
            params = [_params(i, rng, [a1, a2]) for i in ids]
            if any(p is None for p in params):
                continue
            kws = [p[0] for p in params]
            clauses = [p[1] for p in params]
            r1 = _transform(a1, t1, ids, kws, rng)
            r2 = _transform(a2, t2, ids, kws, rng)
            if not (_follows(reg, ids, kws, r1) and _follows(reg, ids, kws, r2)):
                continue
            turn1 = _turn1(rng.choice(OPENERS), clauses, q1)
            out.append(_row(turn1, r1, q2, r2, q3, ids, kws))
            for i in ids:
                count[i] += 1
            break
    return [{"id": f"pmt{k:04d}", **r} for k, r in enumerate(out, 1)]


def _turn1(opener: str, clauses: list[str], question: str) -> str:
    text = opener + " and ".join(clauses)
    return text + (" " if text.endswith(('.', '."', "?", '?"', "!", '!"')) else ". ") + question


def _row(u1: str, a1: str, u2: str, a2: str, q3: str, ids: list[str], kws: list[dict]) -> dict:
    return {"history": [{"role": "user", "content": u1}, {"role": "assistant", "content": a1},
                        {"role": "user", "content": u2}, {"role": "assistant", "content": a2}],
            "prompt": q3, "instruction_id_list": list(ids), "kwargs": [dict(k) for k in kws]}
