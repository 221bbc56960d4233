"""Pool for ``format`` (HOW, scorer ``json_schema``): a task and a JSON Schema.

Each row names a task ("Describe a made-up pet.") and a JSON Schema (draft 2020-12,
written as JSON text in ``schema``, as the builtin rows do): an object of 2 to 5
properties drawn from the entity's catalogue (string, integer, number, boolean,
enum, array of strings or of enum values), ``required`` (all properties, or all
but one), ``additionalProperties: false`` and simple bounds (minimum / maximum,
minLength / maxLength, minItems / maxItems, uniqueItems). Every schema is
satisfiable by a short object: at most 5 properties, arrays of at most 4 short
strings, strings without patterns or formats (the smoke budget is 80 new tokens).

Rows: ``{"id": "pf0001", "task": ..., "schema": "<JSON Schema as JSON text>"}``.
"""

from __future__ import annotations

import json
import random

from facts_will_how import builtin_rows

CAPABILITY = "format"

WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

#: entity → (tasks, property catalogue). A property is (name, kind, *arguments):
#: ("str",), ("int", lo, hi), ("num", lo, hi), ("bool",), ("enum", values), ("arr",) of strings,
#: ("arr_enum", values). Catalogue order is kept in the schema.
ENTITIES: dict[str, tuple[tuple[str, ...], tuple[tuple, ...]]] = {
    "pet": (("Describe a made-up pet.", "Invent a pet and describe it.", "Describe an imaginary family pet."), (
        ("name", "str"), ("species", "enum", ["cat", "dog", "rabbit", "parrot", "hamster", "tortoise"]),
        ("age_years", "int", 0, 30), ("vaccinated", "bool"), ("favourite_foods", "arr"), ("weight_kg", "num", 0.1, 100))),
    "person": (("Describe a made-up person.", "Invent a character for a novel.", "Describe a fictional neighbour."), (
        ("name", "str"), ("age", "int", 0, 120), ("occupation", "str"), ("city", "str"), ("hobbies", "arr"),
        ("married", "bool"), ("height_cm", "num", 50, 250))),
    "book": (("Describe a novel you would like to read.", "Invent a book and describe it.", "Describe a made-up children's book."), (
        ("title", "str"), ("author", "str"), ("year", "int", 1450, 2025), ("pages", "int", 1, 2000), ("genres", "arr"),
        ("available", "bool"), ("rating", "num", 0, 5))),
    "film": (("Describe a film you like.", "Invent a film and describe it.", "Describe a made-up science fiction film."), (
        ("title", "str"), ("director", "str"), ("year", "int", 1900, 2025),
        ("genre", "enum", ["action", "comedy", "drama", "horror", "science fiction", "animation"]),
        ("duration_minutes", "int", 30, 240), ("rating", "num", 0, 10), ("cast", "arr"))),
    "restaurant": (("Describe a restaurant.", "Invent a restaurant for a food guide.", "Describe a made-up restaurant in your town."), (
        ("name", "str"), ("cuisine", "enum", ["italian", "japanese", "mexican", "indian", "french", "thai"]),
        ("rating", "int", 1, 5), ("price_level", "enum", ["$", "$$", "$$$"]), ("open_days", "arr_enum", WEEKDAYS),
        ("dishes", "arr"))),
    "city": (("Describe a city you know.", "Describe a made-up city.", "Describe a European capital."), (
        ("name", "str"), ("country", "str"), ("population", "int", 0, 40000000), ("has_airport", "bool"),
        ("landmarks", "arr"), ("founded_year", "int", -3000, 2025))),
    "product": (("Describe a product sold in a shop.", "Invent a new gadget and describe it.", "Describe an item on sale in an online shop."), (
        ("name", "str"), ("price", "num", 0, 10000), ("currency", "enum", ["EUR", "USD", "GBP"]), ("in_stock", "bool"),
        ("colours", "arr"), ("weight_g", "int", 1, 100000))),
    "song": (("Describe a song you like.", "Invent a pop song and describe it.", "Describe a made-up folk song."), (
        ("title", "str"), ("artist", "str"), ("duration_seconds", "int", 30, 900),
        ("genre", "enum", ["pop", "rock", "jazz", "folk", "classical", "hip hop"]), ("year", "int", 1900, 2025),
        ("explicit", "bool"))),
    "car": (("Describe a car.", "Describe a made-up family car.", "Describe the car of a fictional detective."), (
        ("make", "str"), ("model", "str"), ("year", "int", 1990, 2025), ("electric", "bool"), ("seats", "int", 2, 9),
        ("colour", "enum", ["black", "white", "silver", "red", "blue", "green"]))),
    "hotel": (("Describe a hotel.", "Invent a seaside hotel and describe it.", "Describe a made-up mountain hotel."), (
        ("name", "str"), ("city", "str"), ("stars", "int", 1, 5), ("price_per_night", "num", 0, 2000),
        ("has_pool", "bool"), ("amenities", "arr"))),
    "recipe": (("Give a simple recipe.", "Describe a recipe for a quick dinner.", "Describe a made-up dessert recipe."), (
        ("title", "str"), ("servings", "int", 1, 12), ("prep_minutes", "int", 1, 240), ("vegetarian", "bool"),
        ("ingredients", "arr"))),
    "employee": (("Describe an employee of a company.", "Describe a made-up colleague.", "Invent a new team member and describe them."), (
        ("name", "str"), ("department", "enum", ["sales", "engineering", "support", "finance", "marketing"]),
        ("years_at_company", "int", 0, 50), ("remote", "bool"), ("skills", "arr"))),
    "student": (("Describe a school student.", "Describe a made-up student and their grades.", "Invent a pupil for a school report."), (
        ("name", "str"), ("grade", "int", 1, 12), ("average_score", "num", 0, 100), ("subjects", "arr"),
        ("has_scholarship", "bool"))),
    "event": (("Describe a local event.", "Invent a festival and describe it.", "Describe a made-up community event."), (
        ("name", "str"), ("city", "str"), ("attendees", "int", 1, 100000), ("free_entry", "bool"),
        ("day", "enum", WEEKDAYS), ("duration_hours", "num", 0.5, 72))),
    "flight": (("Describe a flight between two cities.", "Describe a made-up holiday flight.", "Give the details of a flight."), (
        ("airline", "str"), ("from_city", "str"), ("to_city", "str"), ("duration_hours", "num", 0.5, 20),
        ("direct", "bool"), ("cabin", "enum", ["economy", "premium economy", "business", "first"]))),
    "weather": (("Give a weather report for a city.", "Describe today's weather in a city of your choice.", "Describe the weather on a winter day."), (
        ("city", "str"), ("temperature_c", "num", -50, 55), ("condition", "enum", ["sunny", "cloudy", "rainy", "snowy", "windy"]),
        ("humidity_percent", "int", 0, 100), ("wind_kmh", "num", 0, 200))),
    "board_game": (("Describe a board game.", "Invent a board game and describe it.", "Describe a board game for a family evening."), (
        ("name", "str"), ("min_players", "int", 1, 4), ("max_players", "int", 2, 12), ("playing_minutes", "int", 5, 300),
        ("ages", "enum", ["6+", "8+", "10+", "12+"]), ("mechanics", "arr"))),
    "game_character": (("Describe a video game character.", "Invent a hero for a role-playing game.", "Describe a made-up game villain."), (
        ("name", "str"), ("class", "enum", ["warrior", "mage", "rogue", "healer", "archer"]), ("level", "int", 1, 100),
        ("health", "int", 1, 1000), ("abilities", "arr"), ("is_boss", "bool"))),
    "creature": (("Describe a fantasy creature.", "Invent a magical animal and describe it.", "Describe a made-up monster for a fairy tale."), (
        ("name", "str"), ("habitat", "enum", ["forest", "mountain", "ocean", "desert", "sky"]), ("can_fly", "bool"),
        ("legs", "int", 0, 12), ("size_m", "num", 0.01, 100), ("diet", "enum", ["herbivore", "carnivore", "omnivore"]))),
    "planet": (("Describe a made-up planet.", "Invent a planet for a science fiction story.", "Describe an imaginary planet."), (
        ("name", "str"), ("moons", "int", 0, 100), ("has_rings", "bool"), ("diameter_km", "num", 1, 200000),
        ("habitable", "bool"), ("atmosphere_gases", "arr"))),
    "apartment": (("Describe a flat for rent.", "Write an apartment listing.", "Describe a made-up apartment for a rental website."), (
        ("city", "str"), ("rooms", "int", 1, 10), ("rent_per_month", "num", 0, 20000), ("furnished", "bool"),
        ("floor", "int", 0, 100), ("pets_allowed", "bool"))),
    "job": (("Describe a job opening.", "Write a made-up job advert.", "Describe a job at a small company."), (
        ("title", "str"), ("company", "str"), ("salary", "num", 0, 1000000), ("remote", "bool"),
        ("level", "enum", ["junior", "mid", "senior"]), ("requirements", "arr"))),
    "podcast": (("Describe a podcast.", "Invent a podcast and describe it.", "Describe a made-up podcast about science."), (
        ("name", "str"), ("host", "str"), ("episodes", "int", 1, 2000),
        ("topic", "enum", ["science", "history", "comedy", "news", "sport", "technology"]),
        ("minutes_per_episode", "int", 5, 240), ("explicit", "bool"))),
    "museum": (("Describe a museum.", "Invent a museum and describe it.", "Describe a small local museum."), (
        ("name", "str"), ("city", "str"), ("opening_year", "int", 1500, 2025), ("free_entry", "bool"),
        ("collections", "arr"), ("visitors_per_year", "int", 0, 10000000))),
    "match": (("Give the result of a sports match.", "Describe a made-up match result.", "Report the score of a recent game."), (
        ("home_team", "str"), ("away_team", "str"), ("home_score", "int", 0, 200), ("away_score", "int", 0, 200),
        ("sport", "enum", ["football", "basketball", "hockey", "rugby", "cricket"]), ("overtime", "bool"))),
    "plant": (("Describe a houseplant.", "Describe a plant for a garden.", "Describe a plant you could grow on a balcony."), (
        ("common_name", "str"), ("indoor", "bool"), ("waterings_per_week", "int", 0, 14),
        ("sunlight", "enum", ["full sun", "partial shade", "shade"]), ("height_cm", "num", 1, 10000), ("edible", "bool"))),
    "concert": (("Describe a concert.", "Invent a concert and describe it.", "Describe a made-up concert by a rock band."), (
        ("artist", "str"), ("venue", "str"), ("ticket_price", "num", 0, 1000), ("sold_out", "bool"), ("songs", "arr"),
        ("day", "enum", WEEKDAYS))),
    "course": (("Describe an online course.", "Invent an evening class and describe it.", "Describe a made-up language course."), (
        ("title", "str"), ("instructor", "str"), ("hours", "num", 0.5, 500),
        ("level", "enum", ["beginner", "intermediate", "advanced"]), ("topics", "arr"), ("certificate", "bool"))),
    "trip": (("Describe a holiday trip plan.", "Plan a made-up weekend trip.", "Describe a dream holiday."), (
        ("destination", "str"), ("days", "int", 1, 60), ("budget_eur", "num", 0, 50000), ("activities", "arr"),
        ("transport", "arr_enum", ["plane", "train", "car", "bus", "ferry", "bicycle"]),
        ("season", "enum", ["spring", "summer", "autumn", "winter"]))),
    "coffee": (("Give a coffee order.", "Describe a customer's order at a café.", "Describe your usual coffee order."), (
        ("customer_name", "str"), ("drink", "enum", ["espresso", "latte", "cappuccino", "americano", "mocha"]),
        ("size", "enum", ["small", "medium", "large"]), ("sugar_spoons", "int", 0, 5),
        ("milk", "enum", ["none", "whole", "oat", "soy", "almond"]), ("to_go", "bool"))),
    "library_loan": (("Describe a library loan.", "Give the record of a book borrowed from a library.", "Describe a made-up library loan."), (
        ("book_title", "str"), ("borrower", "str"), ("loan_days", "int", 1, 60), ("renewed", "bool"),
        ("late_fee", "num", 0, 100))),
    "spaceship": (("Describe a made-up spaceship.", "Invent a starship for a science fiction film.", "Describe an imaginary space station shuttle."), (
        ("name", "str"), ("crew", "int", 1, 1000), ("max_speed_kmh", "num", 0, 1000000000), ("has_warp_drive", "bool"),
        ("mission", "enum", ["exploration", "cargo", "research", "rescue"]), ("home_planet", "str"))),
    "dinosaur": (("Describe a dinosaur.", "Describe a dinosaur for a museum label.", "Describe a made-up dinosaur species."), (
        ("name", "str"), ("period", "enum", ["Triassic", "Jurassic", "Cretaceous"]),
        ("diet", "enum", ["herbivore", "carnivore", "omnivore"]), ("length_m", "num", 0.1, 50), ("could_fly", "bool"),
        ("discovered_in", "arr"))),
    "bicycle": (("Describe a bicycle.", "Describe a bike for sale.", "Describe a made-up racing bicycle."), (
        ("brand", "str"), ("type", "enum", ["road", "mountain", "city", "electric", "bmx"]), ("gears", "int", 1, 30),
        ("weight_kg", "num", 5, 40), ("has_basket", "bool"), ("colours", "arr"))),
}


def _property(spec: tuple, rng: random.Random) -> dict:
    kind = spec[1]
    if kind == "str":
        r = rng.random()
        if r < 0.5:
            return {"type": "string"}
        if r < 0.75:
            return {"type": "string", "minLength": 1}
        return {"type": "string", "maxLength": rng.choice([30, 40, 60])}
    if kind in ("int", "num"):
        lo, hi = spec[2], spec[3]
        out = {"type": "integer" if kind == "int" else "number", "minimum": lo}
        if rng.random() < 0.7:
            out["maximum"] = hi
        return out
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "enum":
        return {"enum": list(spec[2])}
    if kind in ("arr", "arr_enum"):
        lo = rng.choice([1, 1, 2])
        out = {"type": "array", "items": {"type": "string"} if kind == "arr" else {"enum": list(spec[2])},
               "minItems": lo, "maxItems": rng.randint(lo, min(lo + 2, 4))}
        if rng.random() < 0.4:
            out["uniqueItems"] = True
        return out
    raise ValueError(kind)


def _schema(props: tuple[tuple, ...], rng: random.Random) -> dict:
    k = rng.choices([2, 3, 4, 5], weights=[15, 35, 30, 20])[0]
    k = min(k, len(props))
    chosen = sorted(rng.sample(range(len(props)), k))
    names = [props[i][0] for i in chosen]
    required = list(names)
    if k >= 3 and rng.random() < 0.2:
        required.remove(rng.choice(names[1:]))
    return {"type": "object", "properties": {props[i][0]: _property(props[i], rng) for i in chosen},
            "required": required, "additionalProperties": False}


def rows(per_entity: int = 7) -> list[dict]:
    rng = random.Random(20240605)
    seen = {(r["task"], r["schema"]) for r in builtin_rows(CAPABILITY)}
    out = []
    for tasks, props in ENTITIES.values():
        made = 0
        for _ in range(50 * per_entity):
            if made == per_entity:
                break
            task = tasks[made % len(tasks)]
            schema = json.dumps(_schema(props, rng))
            if (task, schema) in seen:
                continue
            seen.add((task, schema))
            out.append({"task": task, "schema": schema})
            made += 1
    rng.shuffle(out)
    return [{"id": f"pf{k:04d}", **r} for k, r in enumerate(out, 1)]
