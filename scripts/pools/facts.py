"""Fact tables and word lists shared by the CAN / COND / verbosity pool generators
(``gen_math``, ``gen_knowledge``, ``gen_robustness``, ``gen_multilingual``,
``gen_trigger``, ``gen_verbosity``). Plain data, no logic.

Only everyday facts that a reference book states without qualification are listed;
anything disputed or hedged (Russia's or Turkey's continent, Bern as "capital",
Jakarta's move, South Africa's three capitals, "how many legs" of an octopus or a
crab) is left out on purpose. Where a fact could be read two ways, the generators
keep the competing answer out of the options (the ``exclude`` fields).
"""

from __future__ import annotations

# --------------------------------------------------------------------------- countries
#: en: name as it follows "the capital of" / "is" in English (with "the" where English
#: uses it); capital: English name; continent: one of CONTINENTS' keys, or None where
#: the continent is disputed or not one of the five (the country is then not asked
#: about); ml: translations for the multilingual pool, or None (English only):
#:   fr: the country with its French article ("la France", "l'Égypte", "Cuba");
#:   es: the Spanish name as used after "de" ("Francia", "el Reino Unido");
#:   de: the German name as used as the subject ("Frankreich", "das Vereinigte Königreich");
#:   de_gen: "die Hauptstadt ..." complement where "von <name>" is wrong (an article);
#:   cap_fr / cap_es / cap_de: the capital's name in that language.
COUNTRIES: list[dict] = [
    {"en": "France", "capital": "Paris", "continent": "EU",
     "ml": {"fr": "la France", "es": "Francia", "de": "Frankreich",
            "cap_fr": "Paris", "cap_es": "París", "cap_de": "Paris"}},
    {"en": "Germany", "capital": "Berlin", "continent": "EU",
     "ml": {"fr": "l'Allemagne", "es": "Alemania", "de": "Deutschland",
            "cap_fr": "Berlin", "cap_es": "Berlín", "cap_de": "Berlin"}},
    {"en": "Italy", "capital": "Rome", "continent": "EU",
     "ml": {"fr": "l'Italie", "es": "Italia", "de": "Italien",
            "cap_fr": "Rome", "cap_es": "Roma", "cap_de": "Rom"}},
    {"en": "Spain", "capital": "Madrid", "continent": "EU",
     "ml": {"fr": "l'Espagne", "es": "España", "de": "Spanien",
            "cap_fr": "Madrid", "cap_es": "Madrid", "cap_de": "Madrid"}},
    {"en": "Portugal", "capital": "Lisbon", "continent": "EU",
     "ml": {"fr": "le Portugal", "es": "Portugal", "de": "Portugal",
            "cap_fr": "Lisbonne", "cap_es": "Lisboa", "cap_de": "Lissabon"}},
    {"en": "the United Kingdom", "capital": "London", "continent": "EU",
     "ml": {"fr": "le Royaume-Uni", "es": "el Reino Unido", "de": "das Vereinigte Königreich",
            "de_gen": "des Vereinigten Königreichs",
            "cap_fr": "Londres", "cap_es": "Londres", "cap_de": "London"}},
    {"en": "Ireland", "capital": "Dublin", "continent": "EU",
     "ml": {"fr": "l'Irlande", "es": "Irlanda", "de": "Irland",
            "cap_fr": "Dublin", "cap_es": "Dublín", "cap_de": "Dublin"}},
    {"en": "Greece", "capital": "Athens", "continent": "EU",
     "ml": {"fr": "la Grèce", "es": "Grecia", "de": "Griechenland",
            "cap_fr": "Athènes", "cap_es": "Atenas", "cap_de": "Athen"}},
    {"en": "Norway", "capital": "Oslo", "continent": "EU",
     "ml": {"fr": "la Norvège", "es": "Noruega", "de": "Norwegen",
            "cap_fr": "Oslo", "cap_es": "Oslo", "cap_de": "Oslo"}},
    {"en": "Sweden", "capital": "Stockholm", "continent": "EU",
     "ml": {"fr": "la Suède", "es": "Suecia", "de": "Schweden",
            "cap_fr": "Stockholm", "cap_es": "Estocolmo", "cap_de": "Stockholm"}},
    {"en": "Finland", "capital": "Helsinki", "continent": "EU",
     "ml": {"fr": "la Finlande", "es": "Finlandia", "de": "Finnland",
            "cap_fr": "Helsinki", "cap_es": "Helsinki", "cap_de": "Helsinki"}},
    {"en": "Denmark", "capital": "Copenhagen", "continent": "EU",
     "ml": {"fr": "le Danemark", "es": "Dinamarca", "de": "Dänemark",
            "cap_fr": "Copenhague", "cap_es": "Copenhague", "cap_de": "Kopenhagen"}},
    {"en": "Poland", "capital": "Warsaw", "continent": "EU",
     "ml": {"fr": "la Pologne", "es": "Polonia", "de": "Polen",
            "cap_fr": "Varsovie", "cap_es": "Varsovia", "cap_de": "Warschau"}},
    {"en": "Austria", "capital": "Vienna", "continent": "EU",
     "ml": {"fr": "l'Autriche", "es": "Austria", "de": "Österreich",
            "cap_fr": "Vienne", "cap_es": "Viena", "cap_de": "Wien"}},
    {"en": "Hungary", "capital": "Budapest", "continent": "EU",
     "ml": {"fr": "la Hongrie", "es": "Hungría", "de": "Ungarn",
            "cap_fr": "Budapest", "cap_es": "Budapest", "cap_de": "Budapest"}},
    {"en": "Belgium", "capital": "Brussels", "continent": "EU",
     "ml": {"fr": "la Belgique", "es": "Bélgica", "de": "Belgien",
            "cap_fr": "Bruxelles", "cap_es": "Bruselas", "cap_de": "Brüssel"}},
    {"en": "the Netherlands", "capital": "Amsterdam", "continent": "EU",
     "ml": {"fr": "les Pays-Bas", "es": "los Países Bajos", "de": "die Niederlande",
            "de_gen": "der Niederlande", "plural": True,
            "cap_fr": "Amsterdam", "cap_es": "Ámsterdam", "cap_de": "Amsterdam"}},
    {"en": "the Czech Republic", "capital": "Prague", "continent": "EU", "ml": None},
    {"en": "Iceland", "capital": "Reykjavik", "continent": "EU", "ml": None},
    {"en": "Russia", "capital": "Moscow", "continent": None,
     "ml": {"fr": "la Russie", "es": "Rusia", "de": "Russland",
            "cap_fr": "Moscou", "cap_es": "Moscú", "cap_de": "Moskau"}},
    {"en": "Turkey", "capital": "Ankara", "continent": None,
     "ml": {"fr": "la Turquie", "es": "Turquía", "de": "die Türkei", "de_gen": "der Türkei",
            "cap_fr": "Ankara", "cap_es": "Ankara", "cap_de": "Ankara"}},
    {"en": "Egypt", "capital": "Cairo", "continent": None,  # Sinai is in Asia
     "ml": {"fr": "l'Égypte", "es": "Egipto", "de": "Ägypten",
            "cap_fr": "Le Caire", "cap_es": "El Cairo", "cap_de": "Kairo"}},
    {"en": "Kenya", "capital": "Nairobi", "continent": "AF",
     "ml": {"fr": "le Kenya", "es": "Kenia", "de": "Kenia",
            "cap_fr": "Nairobi", "cap_es": "Nairobi", "cap_de": "Nairobi"}},
    {"en": "Nigeria", "capital": "Abuja", "continent": "AF",
     "ml": {"fr": "le Nigeria", "es": "Nigeria", "de": "Nigeria",
            "cap_fr": "Abuja", "cap_es": "Abuja", "cap_de": "Abuja"}},
    {"en": "Morocco", "capital": "Rabat", "continent": "AF",
     "ml": {"fr": "le Maroc", "es": "Marruecos", "de": "Marokko",
            "cap_fr": "Rabat", "cap_es": "Rabat", "cap_de": "Rabat"}},
    {"en": "Ghana", "capital": "Accra", "continent": "AF", "ml": None},
    {"en": "Ethiopia", "capital": "Addis Ababa", "continent": "AF", "ml": None},
    {"en": "China", "capital": "Beijing", "continent": "AS",
     "ml": {"fr": "la Chine", "es": "China", "de": "China",
            "cap_fr": "Pékin", "cap_es": "Pekín", "cap_de": "Peking"}},
    {"en": "Japan", "capital": "Tokyo", "continent": "AS",
     "ml": {"fr": "le Japon", "es": "Japón", "de": "Japan",
            "cap_fr": "Tokyo", "cap_es": "Tokio", "cap_de": "Tokio"}},
    {"en": "India", "capital": "New Delhi", "continent": "AS",
     "ml": {"fr": "l'Inde", "es": "la India", "de": "Indien",
            "cap_fr": "New Delhi", "cap_es": "Nueva Delhi", "cap_de": "Neu-Delhi"}},
    {"en": "South Korea", "capital": "Seoul", "continent": "AS",
     "ml": {"fr": "la Corée du Sud", "es": "Corea del Sur", "de": "Südkorea",
            "cap_fr": "Séoul", "cap_es": "Seúl", "cap_de": "Seoul"}},
    {"en": "Thailand", "capital": "Bangkok", "continent": "AS",
     "ml": {"fr": "la Thaïlande", "es": "Tailandia", "de": "Thailand",
            "cap_fr": "Bangkok", "cap_es": "Bangkok", "cap_de": "Bangkok"}},
    {"en": "Vietnam", "capital": "Hanoi", "continent": "AS",
     "ml": {"fr": "le Vietnam", "es": "Vietnam", "de": "Vietnam",
            "cap_fr": "Hanoï", "cap_es": "Hanói", "cap_de": "Hanoi"}},
    {"en": "the Philippines", "capital": "Manila", "continent": "AS",
     "ml": {"fr": "les Philippines", "es": "Filipinas", "de": "die Philippinen",
            "de_gen": "der Philippinen", "plural": True,
            "cap_fr": "Manille", "cap_es": "Manila", "cap_de": "Manila"}},
    {"en": "Saudi Arabia", "capital": "Riyadh", "continent": "AS", "ml": None},
    {"en": "Pakistan", "capital": "Islamabad", "continent": "AS", "ml": None},
    {"en": "Canada", "capital": "Ottawa", "continent": "NA",
     "ml": {"fr": "le Canada", "es": "Canadá", "de": "Kanada",
            "cap_fr": "Ottawa", "cap_es": "Ottawa", "cap_de": "Ottawa"}},
    {"en": "the United States", "capital": "Washington, D.C.", "continent": "NA", "ml": None},
    {"en": "Mexico", "capital": "Mexico City", "continent": "NA", "ml": None},
    {"en": "Cuba", "capital": "Havana", "continent": None,
     "ml": {"fr": "Cuba", "es": "Cuba", "de": "Kuba",
            "cap_fr": "La Havane", "cap_es": "La Habana", "cap_de": "Havanna"}},
    {"en": "Brazil", "capital": "Brasília", "continent": "SA",
     "ml": {"fr": "le Brésil", "es": "Brasil", "de": "Brasilien",
            "cap_fr": "Brasilia", "cap_es": "Brasilia", "cap_de": "Brasília"}},
    {"en": "Argentina", "capital": "Buenos Aires", "continent": "SA",
     "ml": {"fr": "l'Argentine", "es": "Argentina", "de": "Argentinien",
            "cap_fr": "Buenos Aires", "cap_es": "Buenos Aires", "cap_de": "Buenos Aires"}},
    {"en": "Peru", "capital": "Lima", "continent": "SA",
     "ml": {"fr": "le Pérou", "es": "Perú", "de": "Peru",
            "cap_fr": "Lima", "cap_es": "Lima", "cap_de": "Lima"}},
    {"en": "Chile", "capital": "Santiago", "continent": "SA",
     "ml": {"fr": "le Chili", "es": "Chile", "de": "Chile",
            "cap_fr": "Santiago", "cap_es": "Santiago de Chile", "cap_de": "Santiago de Chile"}},
    {"en": "Colombia", "capital": "Bogotá", "continent": "SA",
     "ml": {"fr": "la Colombie", "es": "Colombia", "de": "Kolumbien",
            "cap_fr": "Bogota", "cap_es": "Bogotá", "cap_de": "Bogotá"}},
    {"en": "Venezuela", "capital": "Caracas", "continent": "SA",
     "ml": {"fr": "le Venezuela", "es": "Venezuela", "de": "Venezuela",
            "cap_fr": "Caracas", "cap_es": "Caracas", "cap_de": "Caracas"}},
    {"en": "Australia", "capital": "Canberra", "continent": None,
     "ml": {"fr": "l'Australie", "es": "Australia", "de": "Australien",
            "cap_fr": "Canberra", "cap_es": "Canberra", "cap_de": "Canberra"}},
    {"en": "New Zealand", "capital": "Wellington", "continent": None, "ml": None},
]

#: the five continents asked about (Oceania/Australia and Antarctica are never options,
#: so no naming convention matters): key -> (English, French, Spanish, German)
CONTINENTS: dict[str, tuple[str, str, str, str]] = {
    "AF": ("Africa", "L'Afrique", "África", "Afrika"),
    "AS": ("Asia", "L'Asie", "Asia", "Asien"),
    "EU": ("Europe", "L'Europe", "Europa", "Europa"),
    "NA": ("North America", "L'Amérique du Nord", "América del Norte", "Nordamerika"),
    "SA": ("South America", "L'Amérique du Sud", "América del Sur", "Südamerika"),
}

# --------------------------------------------------------------------------- planets
#: in order from the Sun: (English, French, Spanish, German)
PLANETS: list[tuple[str, str, str, str]] = [
    ("Mercury", "Mercure", "Mercurio", "Merkur"),
    ("Venus", "Vénus", "Venus", "Venus"),
    ("Earth", "La Terre", "La Tierra", "Die Erde"),
    ("Mars", "Mars", "Marte", "Mars"),
    ("Jupiter", "Jupiter", "Júpiter", "Jupiter"),
    ("Saturn", "Saturne", "Saturno", "Saturn"),
    ("Uranus", "Uranus", "Urano", "Uranus"),
    ("Neptune", "Neptune", "Neptuno", "Neptun"),
]
ORDINALS_EN = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"]

# --------------------------------------------------------------------------- chemistry
#: element (English, lower case) -> symbol
ELEMENTS: dict[str, str] = {
    "hydrogen": "H", "helium": "He", "carbon": "C", "nitrogen": "N", "oxygen": "O",
    "sodium": "Na", "magnesium": "Mg", "aluminium": "Al", "silicon": "Si", "phosphorus": "P",
    "sulfur": "S", "chlorine": "Cl", "potassium": "K", "calcium": "Ca", "iron": "Fe",
    "copper": "Cu", "zinc": "Zn", "silver": "Ag", "tin": "Sn", "gold": "Au",
    "mercury": "Hg", "lead": "Pb", "neon": "Ne", "nickel": "Ni", "uranium": "U",
}

# --------------------------------------------------------------------------- animals
#: animal (with its English indefinite article) -> number of legs
LEGS: dict[str, int] = {
    "a dog": 4, "a cat": 4, "a horse": 4, "a cow": 4, "an elephant": 4, "a lion": 4,
    "a chicken": 2, "a duck": 2, "an ostrich": 2, "a penguin": 2,
    "an ant": 6, "a bee": 6, "a butterfly": 6, "a beetle": 6, "a grasshopper": 6,
    "a scorpion": 8, "a snake": 0,
}

#: animal -> its young
BABY_ANIMALS: dict[str, str] = {
    "cat": "kitten", "dog": "puppy", "cow": "calf", "horse": "foal", "sheep": "lamb",
    "frog": "tadpole", "duck": "duckling", "bear": "cub", "lion": "cub", "kangaroo": "joey",
    "goat": "kid", "chicken": "chick", "pig": "piglet", "deer": "fawn",
}

#: sound verb (3rd person) -> the animal that makes it; exclude: animals of the
#: distractor pool that also make the sound (kept out of that question's options)
ANIMAL_SOUNDS: list[dict] = [
    {"verb": "barks", "animal": "dog", "exclude": []},
    {"verb": "meows", "animal": "cat", "exclude": []},
    {"verb": "moos", "animal": "cow", "exclude": []},
    {"verb": "neighs", "animal": "horse", "exclude": []},
    {"verb": "quacks", "animal": "duck", "exclude": []},
    {"verb": "oinks", "animal": "pig", "exclude": []},
    {"verb": "hoots", "animal": "owl", "exclude": []},
    {"verb": "roars", "animal": "lion", "exclude": []},
    {"verb": "croaks", "animal": "frog", "exclude": []},
    {"verb": "buzzes", "animal": "bee", "exclude": []},
    {"verb": "hisses", "animal": "snake", "exclude": ["cat", "duck"]},
]
SOUND_ANIMALS = ["dog", "cat", "cow", "horse", "duck", "pig", "owl", "lion", "frog", "bee", "snake"]

#: animal classes: class -> members; OTHER_ANIMALS belong to none of the classes
ANIMAL_CLASSES: dict[str, list[str]] = {
    "a mammal": ["dog", "whale", "dolphin", "bat", "cow", "horse", "elephant", "mouse", "rabbit"],
    "a bird": ["eagle", "penguin", "owl", "parrot", "sparrow", "ostrich"],
    "a fish": ["shark", "salmon", "trout", "tuna", "goldfish"],  # jellyfish: never a distractor here
    "an insect": ["ant", "bee", "butterfly", "beetle", "grasshopper", "mosquito"],
    "a reptile": ["snake", "lizard", "crocodile", "tortoise"],
}
OTHER_ANIMALS = ["frog", "spider", "snail", "worm", "crab", "octopus", "jellyfish"]

# --------------------------------------------------------------------------- colours
COLOURS_EN = ["Red", "Blue", "Green", "Yellow", "White", "Black", "Orange", "Purple", "Brown", "Pink", "Grey"]

#: "What colour is <thing>?" -> colour; exclude: colours the thing can also be
COLOUR_OF: list[dict] = [
    {"thing": "snow", "colour": "White", "exclude": []},
    {"thing": "coal", "colour": "Black", "exclude": ["Grey"]},
    {"thing": "grass", "colour": "Green", "exclude": ["Yellow", "Brown"]},
    {"thing": "milk", "colour": "White", "exclude": []},
    {"thing": "a ripe tomato", "colour": "Red", "exclude": ["Orange", "Yellow"]},
    {"thing": "a ripe strawberry", "colour": "Red", "exclude": ["Pink"]},
    {"thing": "a carrot", "colour": "Orange", "exclude": ["Purple", "Yellow", "White"]},
    {"thing": "a lemon", "colour": "Yellow", "exclude": ["Green"]},
    {"thing": "blood", "colour": "Red", "exclude": ["Blue", "Brown"]},
    {"thing": "a crow", "colour": "Black", "exclude": ["Grey", "White"]},
    {"thing": "a flamingo", "colour": "Pink", "exclude": ["White", "Orange", "Red"]},
    {"thing": "a pumpkin", "colour": "Orange", "exclude": ["Yellow", "Green", "White"]},
]

#: paint mixing: (first, second) -> result
COLOUR_MIX: list[tuple[str, str, str]] = [
    ("red", "yellow", "Orange"), ("blue", "yellow", "Green"), ("red", "blue", "Purple"),
    ("red", "white", "Pink"), ("black", "white", "Grey"),
]

# --------------------------------------------------------------------------- opposites
#: (word, opposite, group): a question "the opposite of <word>" (and of <opposite>,
#: unless one_way); the group keeps near-synonyms of the answer out of the options
#: (only words of other groups are distractors).
OPPOSITES: list[tuple[str, str, str, bool]] = [
    # (word, opposite, group, one_way)
    ("hot", "cold", "temperature", False),
    ("big", "small", "size", False),
    ("long", "short", "size", True),
    ("thick", "thin", "size", True),
    ("heavy", "light", "size", True),
    ("fast", "slow", "speed", False),
    ("early", "late", "speed", False),
    ("happy", "sad", "mood", False),
    ("open", "closed", "open", False),
    ("young", "old", "age", True),
    ("full", "empty", "full", False),
    ("wet", "dry", "wet", False),
    ("rich", "poor", "money", False),
    ("cheap", "expensive", "money", False),
    ("strong", "weak", "strength", False),
    ("loud", "quiet", "sound", False),
    ("clean", "dirty", "clean", False),
    ("alive", "dead", "life", False),
    ("asleep", "awake", "life", False),
    ("safe", "dangerous", "safe", False),
    ("true", "false", "truth", False),
    ("day", "night", "noun_time", False),
    ("summer", "winter", "noun_season", False),
    ("question", "answer", "noun_qa", False),
    ("friend", "enemy", "noun_people", False),
    ("push", "pull", "verb_force", False),
    ("buy", "sell", "verb_trade", False),
    ("win", "lose", "verb_game", False),
    ("laugh", "cry", "verb_mood", False),
    ("remember", "forget", "verb_mind", False),
    ("up", "down", "dir_vertical", False),
    ("inside", "outside", "dir_in", False),
    ("before", "after", "dir_time", False),
    ("always", "never", "dir_freq", False),
    ("left", "right", "dir_side", True),
    ("north", "south", "dir_compass", False),
    ("east", "west", "dir_compass", False),
]

#: multilingual opposites (adjectives only): (group, (fr word, fr opposite),
#: (es word, es opposite), (de word, de opposite)); masculine singular forms
OPPOSITES_ML: list[tuple[str, tuple[str, str], tuple[str, str], tuple[str, str]]] = [
    ("temperature", ("chaud", "froid"), ("caliente", "frío"), ("heiß", "kalt")),
    ("size", ("grand", "petit"), ("grande", "pequeño"), ("groß", "klein")),
    ("speed", ("rapide", "lent"), ("rápido", "lento"), ("schnell", "langsam")),
    ("mood", ("heureux", "triste"), ("feliz", "triste"), ("glücklich", "traurig")),
    ("full", ("plein", "vide"), ("lleno", "vacío"), ("voll", "leer")),
    ("wet", ("mouillé", "sec"), ("mojado", "seco"), ("nass", "trocken")),
    ("open", ("ouvert", "fermé"), ("abierto", "cerrado"), ("offen", "geschlossen")),
    ("age", ("jeune", "vieux"), ("joven", "viejo"), ("jung", "alt")),
    ("money", ("riche", "pauvre"), ("rico", "pobre"), ("reich", "arm")),
    ("strength", ("fort", "faible"), ("fuerte", "débil"), ("stark", "schwach")),
    ("clean", ("propre", "sale"), ("limpio", "sucio"), ("sauber", "schmutzig")),
    ("truth", ("vrai", "faux"), ("verdadero", "falso"), ("wahr", "falsch")),
    ("life", ("vivant", "mort"), ("vivo", "muerto"), ("lebendig", "tot")),
    ("sound", ("bruyant", "silencieux"), ("ruidoso", "silencioso"), ("laut", "leise")),
    ("speed", ("tôt", "tard"), ("temprano", "tarde"), ("früh", "spät")),
    ("size", ("lourd", "léger"), ("pesado", "ligero"), ("schwer", "leicht")),
    ("money", ("cher", "bon marché"), ("caro", "barato"), ("teuer", "billig")),
]

# --------------------------------------------------------------------------- grammar
#: irregular verbs: (base, past tense, 3rd person singular, -ing form)
IRREGULAR_VERBS: list[tuple[str, str, str, str]] = [
    ("go", "went", "goes", "going"), ("eat", "ate", "eats", "eating"),
    ("see", "saw", "sees", "seeing"), ("run", "ran", "runs", "running"),
    ("swim", "swam", "swims", "swimming"), ("write", "wrote", "writes", "writing"),
    ("take", "took", "takes", "taking"), ("give", "gave", "gives", "giving"),
    ("drink", "drank", "drinks", "drinking"), ("come", "came", "comes", "coming"),
    ("buy", "bought", "buys", "buying"), ("think", "thought", "thinks", "thinking"),
    ("make", "made", "makes", "making"), ("sleep", "slept", "sleeps", "sleeping"),
    ("fly", "flew", "flies", "flying"), ("speak", "spoke", "speaks", "speaking"),
    ("drive", "drove", "drives", "driving"), ("break", "broke", "breaks", "breaking"),
    ("begin", "began", "begins", "beginning"), ("know", "knew", "knows", "knowing"),
    ("catch", "caught", "catches", "catching"), ("teach", "taught", "teaches", "teaching"),
    ("sit", "sat", "sits", "sitting"), ("forget", "forgot", "forgets", "forgetting"),
]
#: wrong "regular" past forms, for the options (base + -ed with the spelling rules)
WRONG_PAST: dict[str, str] = {
    "go": "goed", "eat": "eated", "see": "seed", "run": "runned", "swim": "swimmed",
    "write": "writed", "take": "taked", "give": "gived", "drink": "drinked", "come": "comed",
    "buy": "buyed", "think": "thinked", "make": "maked", "sleep": "sleeped", "fly": "flyed",
    "speak": "speaked", "drive": "drived", "break": "breaked", "begin": "beginned",
    "know": "knowed", "catch": "catched", "teach": "teached", "sit": "sitted", "forget": "forgetted",
}

#: irregular plurals: (singular, plural, [three wrong plurals])
IRREGULAR_PLURALS: list[tuple[str, str, list[str]]] = [
    ("mouse", "mice", ["mouses", "mices", "meese"]),
    ("child", "children", ["childs", "childrens", "childes"]),
    ("man", "men", ["mans", "mens", "manen"]),
    ("woman", "women", ["womans", "womens", "womanes"]),
    ("foot", "feet", ["foots", "feets", "footes"]),
    ("tooth", "teeth", ["tooths", "teeths", "toothes"]),
    ("goose", "geese", ["gooses", "geeses", "goosen"]),
]

# --------------------------------------------------------------------------- calendar, units, shapes
DAYS_EN = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
DAYS_FR = ["lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"]
DAYS_ES = ["lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"]
DAYS_DE = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"]

#: (month, days); February (28 or 29) is never asked about
MONTHS_EN: list[tuple[str, int | None]] = [
    ("January", 31), ("February", None), ("March", 31), ("April", 30), ("May", 31), ("June", 30),
    ("July", 31), ("August", 31), ("September", 30), ("October", 31), ("November", 30), ("December", 31),
]

SEASONS_EN = ["spring", "summer", "autumn", "winter"]  # each followed by the next
#: (French with article, Spanish with article, German with article)
SEASONS_ML = [("le printemps", "la primavera", "der Frühling"), ("l'été", "el verano", "der Sommer"),
              ("l'automne", "el otoño", "der Herbst"), ("l'hiver", "el invierno", "der Winter")]

#: (a bigger unit with its article, the smaller unit (plural), how many)
UNITS: list[tuple[str, str, int]] = [
    ("a metre", "centimetres", 100), ("a kilometre", "metres", 1000), ("a kilogram", "grams", 1000),
    ("a litre", "millilitres", 1000), ("a centimetre", "millimetres", 10), ("a minute", "seconds", 60),
    ("an hour", "minutes", 60), ("a day", "hours", 24), ("a week", "days", 7), ("a year", "months", 12),
    ("a decade", "years", 10), ("a century", "years", 100), ("a dozen", "eggs", 12),
]
#: unit -> its plural, for "in <n> <units>"
UNIT_PLURAL = {"a metre": "metres", "a kilometre": "kilometres", "a kilogram": "kilograms",
               "a litre": "litres", "a minute": "minutes", "an hour": "hours", "a day": "days",
               "a week": "weeks", "a year": "years", "a century": "centuries"}

#: shape (with article) -> number of sides
SHAPE_SIDES: dict[str, int] = {"a square": 4, "a rectangle": 4, "a pentagon": 5, "a hexagon": 6,
                               "an octagon": 8, "a triangle": 3}

# --------------------------------------------------------------------------- typed facts
#: General-knowledge questions with one correct option and three wrong ones
#: (the generator places the correct one and computes its letter).
#: q: question; p: a paraphrase of it; a: the correct option; d: three wrong options;
#: topic: meta.topic; short: True when q also stands alone as an open question
SCIENCE_FACTS: list[dict] = [
    {"q": "Which planet is famous for its large rings?", "p": "Which planet is well known for the big rings around it?",
     "a": "Saturn", "d": ["Mars", "Venus", "Mercury"], "topic": "science", "short": True},
    {"q": "What is the name of the Earth's natural satellite?", "p": "What do we call the natural satellite that orbits the Earth?",
     "a": "The Moon", "d": ["The Sun", "Mars", "Venus"], "topic": "science", "short": True},
    {"q": "What force pulls objects down towards the ground?", "p": "Which force makes things fall to the ground?",
     "a": "Gravity", "d": ["Friction", "Electricity", "Wind"], "topic": "science", "short": True},
    {"q": "Which organ do humans use to breathe?", "p": "People breathe with which organ?",
     "a": "The lungs", "d": ["The heart", "The liver", "The stomach"], "topic": "science", "short": True},
    {"q": "Which part of the body do we use to see?", "p": "We see with which part of the body?",
     "a": "The eyes", "d": ["The ears", "The nose", "The tongue"], "topic": "science", "short": True},
    {"q": "Which part of the body do we use to hear?", "p": "We hear with which part of the body?",
     "a": "The ears", "d": ["The eyes", "The nose", "The knees"], "topic": "science", "short": True},
    {"q": "Which part of the body do we use to smell?", "p": "We smell with which part of the body?",
     "a": "The nose", "d": ["The ears", "The elbows", "The feet"], "topic": "science", "short": True},
    {"q": "Which part of a plant grows under the ground and takes in water?",
     "p": "A plant takes in water through which part that grows underground?",
     "a": "The roots", "d": ["The leaves", "The flowers", "The fruit"], "topic": "science", "short": True},
    {"q": "What does a thermometer measure?", "p": "A thermometer is used to measure what?",
     "a": "Temperature", "d": ["Weight", "Length", "Time"], "topic": "science", "short": True},
    {"q": "What do we call an animal that eats only plants?", "p": "An animal that only eats plants is called what?",
     "a": "A herbivore", "d": ["A carnivore", "An omnivore", "A predator"], "topic": "nature", "short": True},
    {"q": "What do we call an animal that eats only meat?", "p": "An animal that only eats meat is called what?",
     "a": "A carnivore", "d": ["A herbivore", "An omnivore", "A vegetarian"], "topic": "nature", "short": True},
    {"q": "In which direction does the Sun rise?", "p": "The Sun rises in which direction?",
     "a": "East", "d": ["West", "North", "South"], "topic": "science", "short": True},
    {"q": "In which direction does the Sun set?", "p": "The Sun sets in which direction?",
     "a": "West", "d": ["East", "North", "South"], "topic": "science", "short": True},
    {"q": "What is the hardest natural material?", "p": "Which natural material is the hardest of all?",
     "a": "Diamond", "d": ["Gold", "Glass", "Wood"], "topic": "science", "short": True},
    {"q": "Which gas do humans breathe out as waste?", "p": "When people breathe out, which waste gas do they get rid of?",
     "a": "Carbon dioxide", "d": ["Oxygen", "Helium", "Hydrogen"], "topic": "science", "short": True},
    {"q": "What state of matter is ice?", "p": "Ice is which state of matter?",
     "a": "A solid", "d": ["A liquid", "A gas", "A plasma"], "topic": "science", "short": True},
    {"q": "What state of matter is steam?", "p": "Steam is which state of matter?",
     "a": "A gas", "d": ["A solid", "A liquid", "A metal"], "topic": "science", "short": True},
    {"q": "What is at the centre of our solar system?", "p": "Which body sits at the centre of our solar system?",
     "a": "The Sun", "d": ["The Earth", "The Moon", "Mars"], "topic": "science", "short": True},
    {"q": "Which is the heaviest land animal?", "p": "Of all animals that live on land, which one is the heaviest?",
     "a": "The elephant", "d": ["The giraffe", "The horse", "The lion"], "topic": "nature", "short": True},
    {"q": "Which is the fastest land animal?", "p": "Of all animals that live on land, which one runs the fastest?",
     "a": "The cheetah", "d": ["The elephant", "The cow", "The tortoise"], "topic": "nature", "short": True},
    {"q": "Which bird cannot fly and lives in Antarctica?", "p": "Which bird lives in Antarctica and is unable to fly?",
     "a": "The penguin", "d": ["The eagle", "The parrot", "The sparrow"], "topic": "nature", "short": True},
    {"q": "Which animal is known for carrying its home on its back?", "p": "Which animal lives in a shell that it carries on its back?",
     "a": "The snail", "d": ["The dog", "The horse", "The eagle"], "topic": "nature", "short": True},
    {"q": "What is the tallest mountain in the world?", "p": "Which mountain is the highest on Earth?",
     "a": "Mount Everest", "d": ["Mont Blanc", "Mount Kilimanjaro", "Mount Fuji"], "topic": "geography", "short": True},
    {"q": "What is the longest river in South America?", "p": "Which river is the longest in South America?",
     "a": "The Amazon", "d": ["The Nile", "The Danube", "The Thames"], "topic": "geography", "short": True},
    {"q": "Which is the largest continent?", "p": "Of all the continents, which one is the biggest?",
     "a": "Asia", "d": ["Europe", "Africa", "South America"], "topic": "geography", "short": True},
    {"q": "Which ocean lies between Africa and South America?", "p": "Which ocean separates Africa from South America?",
     "a": "The Atlantic Ocean", "d": ["The Pacific Ocean", "The Indian Ocean", "The Arctic Ocean"], "topic": "geography", "short": True},
    {"q": "In which country is the Eiffel Tower?", "p": "The Eiffel Tower stands in which country?",
     "a": "France", "d": ["Italy", "Spain", "Germany"], "topic": "geography", "short": True},
    {"q": "In which country is the Great Wall?", "p": "The Great Wall was built in which country?",
     "a": "China", "d": ["Japan", "Egypt", "Brazil"], "topic": "geography", "short": False},
    {"q": "In which city is the Colosseum?", "p": "The Colosseum stands in which city?",
     "a": "Rome", "d": ["Athens", "Paris", "Madrid"], "topic": "geography", "short": True},
    {"q": "In which city is Big Ben?", "p": "Big Ben is in which city?",
     "a": "London", "d": ["Paris", "Rome", "Berlin"], "topic": "geography", "short": True},
    {"q": "In which country is the Taj Mahal?", "p": "The Taj Mahal stands in which country?",
     "a": "India", "d": ["Egypt", "China", "Mexico"], "topic": "geography", "short": True},
    {"q": "Who wrote the play Hamlet?", "p": "Hamlet is a play by which writer?",
     "a": "William Shakespeare", "d": ["Charles Dickens", "Jane Austen", "Mark Twain"], "topic": "culture", "short": True},
    {"q": "Who wrote the novel Oliver Twist?", "p": "Oliver Twist is a novel by which writer?",
     "a": "Charles Dickens", "d": ["William Shakespeare", "Jane Austen", "Mark Twain"], "topic": "culture", "short": True},
    {"q": "Who wrote the novel Pride and Prejudice?", "p": "Pride and Prejudice is a novel by which writer?",
     "a": "Jane Austen", "d": ["Charles Dickens", "William Shakespeare", "Mark Twain"], "topic": "culture", "short": True},
    {"q": "Who painted The Starry Night?", "p": "The Starry Night was painted by which artist?",
     "a": "Vincent van Gogh", "d": ["Pablo Picasso", "Leonardo da Vinci", "Claude Monet"], "topic": "culture", "short": True},
    {"q": "Who was the first person to walk on the Moon?", "p": "Which person walked on the Moon first?",
     "a": "Neil Armstrong", "d": ["Yuri Gagarin", "Albert Einstein", "Isaac Newton"], "topic": "culture", "short": False},
    {"q": "How many players does a football team have on the pitch?", "p": "A football team has how many players on the pitch?",
     "a": "11", "d": ["9", "7", "15"], "topic": "culture", "short": True},
    {"q": "How many strings does a standard guitar have?", "p": "A standard guitar has how many strings?",
     "a": "6", "d": ["4", "5", "8"], "topic": "culture", "short": True},
    {"q": "How many colours are there in a rainbow?", "p": "A rainbow is usually said to have how many colours?",
     "a": "7", "d": ["3", "5", "9"], "topic": "everyday", "short": True},
    {"q": "Which meal do people eat in the morning?", "p": "What is the morning meal called?",
     "a": "Breakfast", "d": ["Lunch", "Dinner", "Supper"], "topic": "everyday", "short": True},
    {"q": "What do people usually use to cut paper?", "p": "Which tool is usually used to cut paper?",
     "a": "Scissors", "d": ["A spoon", "A pillow", "A cup"], "topic": "everyday", "short": True},
    {"q": "Who flies an aeroplane?", "p": "Which person is trained to fly an aeroplane?",
     "a": "A pilot", "d": ["A doctor", "A baker", "A farmer"], "topic": "everyday", "short": True},
    {"q": "Who bakes bread for a living?", "p": "Which person makes bread as a job?",
     "a": "A baker", "d": ["A pilot", "A dentist", "A sailor"], "topic": "everyday", "short": True},
    {"q": "Which person treats sick people in a hospital?", "p": "In a hospital, who treats sick people?",
     "a": "A doctor", "d": ["A pilot", "A baker", "A painter"], "topic": "everyday", "short": True},
    {"q": "Which fruit is long, curved and yellow when ripe?", "p": "A ripe fruit that is long, curved and yellow is which one?",
     "a": "A banana", "d": ["An apple", "A grape", "A cherry"], "topic": "everyday", "short": True},
    {"q": "Where do fish live?", "p": "Fish live where?",
     "a": "In water", "d": ["In trees", "In the desert", "In the sky"], "topic": "nature", "short": True},
    {"q": "How many wheels does a car usually have?", "p": "A car usually has how many wheels?",
     "a": "4", "d": ["2", "3", "6"], "topic": "everyday", "short": True},
    {"q": "How many wheels does a tricycle have?", "p": "A tricycle has how many wheels?",
     "a": "3", "d": ["2", "4", "5"], "topic": "everyday", "short": True},
]

# --------------------------------------------------------------------------- multilingual typed facts
#: q: the question (fr, es, de); a: the correct option (fr, es, de); d: three wrong options
ML_FACTS: list[dict] = [
    {"q": ("Que fabriquent les abeilles ?", "¿Qué producen las abejas?", "Was stellen Bienen her?"),
     "a": ("Le miel", "La miel", "Honig"),
     "d": [("La soie", "La seda", "Seide"), ("Le lait", "La leche", "Milch"), ("La laine", "La lana", "Wolle")]},
    {"q": ("Avec quel organe respirons-nous ?", "¿Con qué órgano respiramos?", "Mit welchem Organ atmen wir?"),
     "a": ("Les poumons", "Los pulmones", "Die Lunge"),
     "d": [("Le cœur", "El corazón", "Das Herz"), ("Le foie", "El hígado", "Die Leber"),
           ("L'estomac", "El estómago", "Der Magen")]},
    {"q": ("Quel est l'animal terrestre le plus lourd ?", "¿Cuál es el animal terrestre más pesado?",
           "Welches ist das schwerste Landtier?"),
     "a": ("L'éléphant", "El elefante", "Der Elefant"),
     "d": [("La girafe", "La jirafa", "Die Giraffe"), ("Le cheval", "El caballo", "Das Pferd"),
           ("Le lion", "El león", "Der Löwe")]},
    {"q": ("Quel est l'animal terrestre le plus rapide ?", "¿Cuál es el animal terrestre más rápido?",
           "Welches ist das schnellste Landtier?"),
     "a": ("Le guépard", "El guepardo", "Der Gepard"),
     "d": [("L'éléphant", "El elefante", "Der Elefant"), ("La vache", "La vaca", "Die Kuh"),
           ("La tortue", "La tortuga", "Die Schildkröte")]},
    {"q": ("Dans quel pays se trouve la tour Eiffel ?", "¿En qué país está la torre Eiffel?",
           "In welchem Land steht der Eiffelturm?"),
     "a": ("La France", "Francia", "Frankreich"),
     "d": [("L'Italie", "Italia", "Italien"), ("L'Espagne", "España", "Spanien"),
           ("L'Allemagne", "Alemania", "Deutschland")]},
    {"q": ("Dans quelle ville se trouve le Colisée ?", "¿En qué ciudad está el Coliseo?",
           "In welcher Stadt steht das Kolosseum?"),
     "a": ("Rome", "Roma", "Rom"),
     "d": [("Athènes", "Atenas", "Athen"), ("Paris", "París", "Paris"), ("Madrid", "Madrid", "Madrid")]},
    {"q": ("Que mesure un thermomètre ?", "¿Qué mide un termómetro?", "Was misst ein Thermometer?"),
     "a": ("La température", "La temperatura", "Die Temperatur"),
     "d": [("Le poids", "El peso", "Das Gewicht"), ("La longueur", "La longitud", "Die Länge"),
           ("La vitesse", "La velocidad", "Die Geschwindigkeit")]},
]

#: multilingual colours: (English key, French, Spanish, German)
COLOURS_ML: list[tuple[str, str, str, str]] = [
    ("White", "Blanc", "Blanco", "Weiß"), ("Black", "Noir", "Negro", "Schwarz"),
    ("Green", "Vert", "Verde", "Grün"), ("Blue", "Bleu", "Azul", "Blau"),
    ("Red", "Rouge", "Rojo", "Rot"), ("Yellow", "Jaune", "Amarillo", "Gelb"),
    ("Orange", "Orange", "Naranja", "Orange"), ("Purple", "Violet", "Morado", "Lila"),
    ("Pink", "Rose", "Rosa", "Rosa"), ("Grey", "Gris", "Gris", "Grau"),
]
#: "What colour is ..." in three languages: (fr question, es question, de question, colour, exclude)
COLOUR_OF_ML: list[tuple[str, str, str, str, list[str]]] = [
    ("De quelle couleur est la neige ?", "¿De qué color es la nieve?", "Welche Farbe hat Schnee?", "White", []),
    ("De quelle couleur est le charbon ?", "¿De qué color es el carbón?", "Welche Farbe hat Kohle?", "Black", ["Grey"]),
    ("De quelle couleur est l'herbe ?", "¿De qué color es la hierba?", "Welche Farbe hat Gras?", "Green", ["Yellow"]),
    ("De quelle couleur est le ciel par temps clair ?", "¿De qué color es el cielo en un día despejado?",
     "Welche Farbe hat der Himmel an einem klaren Tag?", "Blue", []),
    ("De quelle couleur est le lait ?", "¿De qué color es la leche?", "Welche Farbe hat Milch?", "White", []),
    ("De quelle couleur est une tomate mûre ?", "¿De qué color es un tomate maduro?",
     "Welche Farbe hat eine reife Tomate?", "Red", ["Orange", "Yellow"]),
    ("De quelle couleur est une carotte ?", "¿De qué color es una zanahoria?", "Welche Farbe hat eine Karotte?",
     "Orange", ["Purple", "Yellow", "White"]),
    ("De quelle couleur est le sang ?", "¿De qué color es la sangre?", "Welche Farbe hat Blut?", "Red", ["Blue"]),
]
#: colour mixing: (fr partitive pair, es pair, de pair, result)
COLOUR_MIX_ML: list[tuple[str, str, str, str]] = [
    ("du rouge et du jaune", "rojo y amarillo", "Rot und Gelb", "Orange"),
    ("du rouge et du bleu", "rojo y azul", "Rot und Blau", "Purple"),
    ("du rouge et du blanc", "rojo y blanco", "Rot und Weiß", "Pink"),
    ("du noir et du blanc", "negro y blanco", "Schwarz und Weiß", "Grey"),
]

#: counting questions in three languages with a numeric answer: (fr, es, de, answer)
COUNTS_ML: list[tuple[str, str, str, int]] = [
    ("Combien de mois y a-t-il dans une année ?", "¿Cuántos meses tiene un año?", "Wie viele Monate hat ein Jahr?", 12),
    ("Combien de minutes y a-t-il dans une heure ?", "¿Cuántos minutos tiene una hora?", "Wie viele Minuten hat eine Stunde?", 60),
    ("Combien de secondes y a-t-il dans une minute ?", "¿Cuántos segundos tiene un minuto?", "Wie viele Sekunden hat eine Minute?", 60),
    ("Combien de centimètres y a-t-il dans un mètre ?", "¿Cuántos centímetros tiene un metro?", "Wie viele Zentimeter hat ein Meter?", 100),
    ("Combien de grammes y a-t-il dans un kilogramme ?", "¿Cuántos gramos tiene un kilogramo?", "Wie viele Gramm hat ein Kilogramm?", 1000),
    ("Combien de mètres y a-t-il dans un kilomètre ?", "¿Cuántos metros tiene un kilómetro?", "Wie viele Meter hat ein Kilometer?", 1000),
    ("Combien d'années y a-t-il dans un siècle ?", "¿Cuántos años tiene un siglo?", "Wie viele Jahre hat ein Jahrhundert?", 100),
    ("Combien de pattes a un chien ?", "¿Cuántas patas tiene un perro?", "Wie viele Beine hat ein Hund?", 4),
    ("Combien de pattes a un chat ?", "¿Cuántas patas tiene un gato?", "Wie viele Beine hat eine Katze?", 4),
    ("Combien de pattes a un oiseau ?", "¿Cuántas patas tiene un pájaro?", "Wie viele Beine hat ein Vogel?", 2),
    ("Combien de pattes a une fourmi ?", "¿Cuántas patas tiene una hormiga?", "Wie viele Beine hat eine Ameise?", 6),
    ("Combien de pattes a un insecte ?", "¿Cuántas patas tiene un insecto?", "Wie viele Beine hat ein Insekt?", 6),
    ("Combien de pattes a un cheval ?", "¿Cuántas patas tiene un caballo?", "Wie viele Beine hat ein Pferd?", 4),
    ("Combien de pattes a une poule ?", "¿Cuántas patas tiene una gallina?", "Wie viele Beine hat ein Huhn?", 2),
    ("Combien de côtés a un carré ?", "¿Cuántos lados tiene un cuadrado?", "Wie viele Seiten hat ein Quadrat?", 4),
    ("Combien de côtés a un pentagone ?", "¿Cuántos lados tiene un pentágono?", "Wie viele Seiten hat ein Fünfeck?", 5),
    ("Combien de côtés a un hexagone ?", "¿Cuántos lados tiene un hexágono?", "Wie viele Seiten hat ein Sechseck?", 6),
    ("Combien de côtés a un octogone ?", "¿Cuántos lados tiene un octógono?", "Wie viele Seiten hat ein Achteck?", 8),
    ("Combien de côtés a un rectangle ?", "¿Cuántos lados tiene un rectángulo?", "Wie viele Seiten hat ein Rechteck?", 4),
    ("Combien de roues a un vélo ?", "¿Cuántas ruedas tiene una bicicleta?", "Wie viele Räder hat ein Fahrrad?", 2),
    ("Combien de roues a une voiture ?", "¿Cuántas ruedas tiene un coche?", "Wie viele Räder hat ein Auto?", 4),
    ("Combien de roues a un tricycle ?", "¿Cuántas ruedas tiene un triciclo?", "Wie viele Räder hat ein Dreirad?", 3),
]

# --------------------------------------------------------------------------- people and things (math)
#: first names with their pronouns (subject, possessive)
PEOPLE: list[tuple[str, str, str]] = [
    ("Tom", "he", "his"), ("Maria", "she", "her"), ("Anna", "she", "her"), ("Ben", "he", "his"),
    ("Lena", "she", "her"), ("Paul", "he", "his"), ("Jack", "he", "his"), ("Emma", "she", "her"),
    ("Liam", "he", "his"), ("Sofia", "she", "her"), ("Noah", "he", "his"), ("Mia", "she", "her"),
    ("Lucas", "he", "his"), ("Olivia", "she", "her"), ("Ethan", "he", "his"), ("Chloe", "she", "her"),
    ("Leo", "he", "his"), ("Zoe", "she", "her"), ("Omar", "he", "his"), ("Aisha", "she", "her"),
    ("Ravi", "he", "his"), ("Priya", "she", "her"), ("Carlos", "he", "his"), ("Lucia", "she", "her"),
    ("Kofi", "he", "his"), ("Amara", "she", "her"), ("David", "he", "his"), ("Sarah", "she", "her"),
    ("Peter", "he", "his"), ("Nina", "she", "her"), ("Max", "he", "his"), ("Ella", "she", "her"),
]
#: countable things people collect or own (plural)
THINGS: list[str] = ["apples", "stickers", "marbles", "pencils", "stamps", "cards", "books", "balloons",
                     "shells", "coins", "toy cars", "crayons", "buttons", "oranges"]
#: containers: (singular, plural, what they hold (plural))
CONTAINERS: list[tuple[str, str, str]] = [
    ("box", "boxes", "eggs"), ("bag", "bags", "oranges"), ("basket", "baskets", "apples"),
    ("jar", "jars", "cookies"), ("crate", "crates", "bottles"), ("pack", "packs", "pencils"),
    ("tray", "trays", "cupcakes"), ("shelf", "shelves", "books"),
]
#: shop items: (singular with article, plural)
SHOP_ITEMS: list[tuple[str, str]] = [
    ("a notebook", "notebooks"), ("a pen", "pens"), ("a ball", "balls"), ("a cup", "cups"),
    ("a T-shirt", "T-shirts"), ("a cap", "caps"), ("a sandwich", "sandwiches"), ("a toy car", "toy cars"),
    ("a kite", "kites"), ("a plant", "plants"), ("an umbrella", "umbrellas"), ("a puzzle", "puzzles"),
]
FOODS: list[str] = ["cookies", "muffins", "cupcakes", "pancakes", "biscuits"]
