"""Pool generator: ``math`` (one- and two-step word problems with small numbers).

Rows as in ``auditor/data/suites/builtin/math.jsonl``: ``{"id", "question", "answer"}``.
Each template draws its numbers from a seeded generator and computes the answer from
them (always a whole number; divisions are built from a product so they come out
even). Templates cover people and objects, prices and change, time, distance, ages,
comparisons, sharing and groups, shapes.
"""

from __future__ import annotations

import random

import facts as F
from gen_knowledge import builtin_rows

CAPABILITY = "math"
SEED = 20240614
N_ROWS = 240


def _person(rng: random.Random, avoid: tuple = ()) -> tuple[str, str, str]:
    return rng.choice([p for p in F.PEOPLE if p[0] not in avoid])


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


_TIMES = {2: "twice", 3: "three times", 4: "four times", 5: "five times"}


# Each template: rng -> (question, answer)
def t_buy_more(r):
    n, he, _ = _person(r)
    a, b, obj = r.randint(5, 40), r.randint(2, 30), r.choice(F.THINGS)
    return f"{n} has {a} {obj} and buys {b} more. How many {obj} does {he} have now?", a + b


def t_give_away(r):
    n, _, his = _person(r)
    a = r.randint(20, 90)
    b = r.randint(3, a - 5)
    obj = r.choice(F.THINGS)
    return f"{n} had {a} {obj} and gave {b} of them to {his} friend. How many {obj} does {n} have left?", a - b


def t_containers(r):
    box, boxes, what = r.choice(F.CONTAINERS)
    a, b = r.randint(3, 12), r.randint(2, 10)
    prep = "on" if box in ("shelf", "tray") else "in"
    return f"Each {box} holds {a} {what}. How many {what} are there {prep} {b} {boxes}?", a * b


def t_daily_rate(r):
    n, he, _ = _person(r)
    verb, verb3, unit = r.choice([("read", "reads", "pages"), ("walk", "walks", "kilometres"),
                                  ("drink", "drinks", "glasses of water"), ("write", "writes", "pages"),
                                  ("pick", "picks", "apples")])
    a, b = r.randint(2, 15), r.randint(3, 9)
    return f"{n} {verb3} {a} {unit} a day. How many {unit} does {he} {verb} in {b} days?", a * b


def t_two_prices(r):
    (i1, _), (i2, _) = r.sample(F.SHOP_ITEMS, 2)
    a, b = r.randint(2, 20), r.randint(2, 20)
    q = (f"{_cap(i1)} costs {a} dollars and {i2} costs {b} dollars. "
         f"How much do they cost together, in dollars?")
    return q, a + b


def t_groups(r):
    who = r.choice(["students", "children", "players", "campers", "dancers"])
    g, k = r.randint(2, 8), r.randint(3, 10)
    if r.random() < 0.5:
        return f"There are {g * k} {who} and they split into groups of {g}. How many groups are there?", k
    return f"A teacher puts {g * k} {who} into teams of {g}. How many teams are there?", k


def t_share(r):
    n, _, _ = _person(r)
    k, m = r.randint(2, 6), r.randint(2, 12)
    obj = r.choice(F.THINGS)
    return f"{n} shares {k * m} {obj} equally among {k} friends. How many {obj} does each friend get?", m


def t_speed(r):
    veh = r.choice(["car", "bus", "train", "truck", "boat"])
    v, t = r.choice(range(20, 100, 10)), r.randint(2, 5)
    return f"A {veh} travels {v} kilometres per hour for {t} hours. How many kilometres does it travel?", v * t


def t_change(r):
    n, he, _ = _person(r)
    note = r.choice([10, 20, 50, 100])
    item = r.choice(F.SHOP_ITEMS)[0]
    p = r.randint(2, min(note - 1, 40))
    q = (f"{n} buys {item} that costs {p} dollars and pays with a {note}-dollar note. "
         f"How much change does {he} get, in dollars?")
    return q, note - p


def t_bake(r):
    n, he, _ = _person(r)
    food = r.choice(F.FOODS)
    a = r.randint(10, 30)
    b = r.randint(2, a - 3)
    c = r.randint(2, 15)
    q = (f"{n} baked {a} {food} and ate {b} of them. Then {he} baked {c} more. "
         f"How many {food} does {he} have now?")
    return q, a - b + c


def t_unit_price(r):
    item, items = r.choice(F.SHOP_ITEMS)
    p, k = r.randint(2, 15), r.randint(2, 9)
    return f"One {item.split(' ', 1)[1]} costs {p} dollars. How much do {k} {items} cost, in dollars?", p * k


def t_film_minutes(r):
    h = r.randint(2, 4)
    m = r.choice([0, 10, 15, 20, 30, 45])
    if m == 0:
        return f"A film lasts {h} hours. How many minutes is that?", 60 * h
    return f"A film lasts {h} hours and {m} minutes. How many minutes is that in total?", 60 * h + m


def t_sleep_week(r):
    n, he, _ = _person(r)
    a = r.randint(6, 10)
    return f"{n} sleeps {a} hours every night. How many hours does {he} sleep in a week?", 7 * a


def t_age_future(r):
    n, he, _ = _person(r)
    a, b = r.randint(4, 40), r.randint(2, 15)
    return f"{n} is {a} years old. How old will {he} be in {b} years?", a + b


def t_age_older(r):
    n, _, his = _person(r)
    sib = r.choice(["brother", "sister", "cousin"])
    a, b = r.randint(3, 20), r.randint(2, 12)
    return f"{n} is {a} years old. {_cap(his)} {sib} is {b} years older. How old is {his} {sib}?", a + b


def t_times_as_many(r):
    n1, _, _ = _person(r)
    n2, _, _ = _person(r, (n1,))
    k, a = r.randint(2, 5), r.randint(3, 15)
    obj = r.choice(F.THINGS)
    q = (f"{n1} has {_TIMES[k]} as many {obj} as {n2}. {n2} has {a} {obj}. "
         f"How many {obj} does {n1} have?")
    return q, k * a


def t_more_than(r):
    n1, _, _ = _person(r)
    n2, _, _ = _person(r, (n1,))
    a, b = r.randint(5, 40), r.randint(2, 20)
    obj = r.choice(F.THINGS)
    return f"{n1} has {a} {obj}. {n2} has {b} more {obj} than {n1}. How many {obj} does {n2} have?", a + b


def t_how_many_more(r):
    n1, _, _ = _person(r)
    n2, _, _ = _person(r, (n1,))
    b = r.randint(5, 40)
    a = b + r.randint(2, 25)
    obj = r.choice(F.THINGS)
    q = (f"{n1} has {a} {obj} and {n2} has {b} {obj}. "
         f"How many more {obj} does {n1} have than {n2}?")
    return q, a - b


def t_square_perimeter(r):
    a = r.randint(2, 25)
    return f"A square has sides of {a} centimetres. What is its perimeter, in centimetres?", 4 * a


def t_rectangle_area(r):
    a = r.randint(3, 12)
    b = r.randint(2, a - 1)
    return f"A rectangle is {a} metres long and {b} metres wide. What is its area, in square metres?", a * b


def t_farm_legs(r):
    a, b = r.randint(2, 12), r.randint(2, 10)
    return f"A farm has {a} chickens and {b} cows. How many legs do the animals have in total?", 2 * a + 4 * b


def t_hall_chairs(r):
    rows, per = r.randint(4, 10), r.choice([5, 6, 8, 10, 12])
    t = r.randint(5, rows * per - 5)
    q = (f"A hall has {rows} rows of {per} chairs. People are sitting on {t} of them. "
         f"How many chairs are empty?")
    return q, rows * per - t


def t_budget(r):
    n, he, _ = _person(r)
    items = r.choice(F.SHOP_ITEMS)[1]
    k, p = r.randint(2, 5), r.randint(2, 9)
    m = k * p + r.randint(1, 30)
    q = (f"{n} has {m} dollars and buys {k} {items} that cost {p} dollars each. "
         f"How much money does {he} have left, in dollars?")
    return q, m - k * p


def t_school_walk(r):
    n, he, _ = _person(r)
    a, d = r.randint(1, 4), r.randint(2, 6)
    q = (f"{n} walks {a} kilometres to school and {a} kilometres back home every day. "
         f"How many kilometres does {he} walk in {d} days?")
    return q, 2 * a * d


def t_pencils_left(r):
    c, b = r.randint(3, 9), r.randint(2, 5)
    a = b * c + r.randint(1, 20)
    q = (f"A teacher has {a} pencils and gives {b} pencils to each of {c} students. "
         f"How many pencils are left?")
    return q, a - b * c


def t_bag_weight(r):
    what = r.choice(["rice", "flour", "potatoes", "sugar"])
    a, k = r.randint(2, 10), r.randint(2, 8)
    return f"A bag of {what} weighs {a} kilograms. How many kilograms do {k} bags weigh?", a * k


def t_pizza(r):
    n, _, his = _person(r)
    s = r.choice([6, 8, 10, 12])
    if r.random() < 0.5:
        e = r.randint(2, s - 1)
        q = (f"A pizza is cut into {s} slices. {n} and {his} friends eat {e} slices. "
             f"How many slices are left?")
        return q, s - e
    k = r.randint(2, 5)
    return f"There are {k} pizzas, and each one is cut into {s} slices. How many slices are there in total?", k * s


def t_buses_needed(r):
    s, k = r.choice([20, 25, 30, 40, 50]), r.randint(2, 6)
    q = f"{s * k} people go on a trip. Each bus carries {s} people. How many buses are needed if every bus is full?"
    return q, k


def t_temperature(r):
    if r.random() < 0.5:
        a, b = r.randint(2, 20), r.randint(2, 12)
        q = (f"In the morning it was {a} degrees Celsius. By noon it was {b} degrees warmer. "
             f"What was the temperature at noon, in degrees Celsius?")
        return q, a + b
    a = r.randint(12, 30)
    b = r.randint(2, a - 2)
    q = (f"In the afternoon it was {a} degrees Celsius. By night the temperature had fallen by {b} degrees. "
         f"What was the temperature at night, in degrees Celsius?")
    return q, a - b


def t_pages_left(r):
    n, _, _ = _person(r)
    a = r.randint(40, 300)
    b = r.randint(10, a - 10)
    return f"A book has {a} pages. {n} has read {b} pages. How many pages are left to read?", a - b


def t_garden_rows(r):
    plant = r.choice(["roses", "carrots", "tomato plants", "sunflowers", "cabbages"])
    a, c = r.randint(3, 10), r.randint(4, 12)
    return f"A garden has {a} rows with {c} {plant} in each row. How many {plant} are there in the garden?", a * c


def t_savings(r):
    n, he, _ = _person(r)
    a, b = r.randint(2, 15), r.randint(3, 10)
    return f"{n} saves {a} dollars every week. How many dollars has {he} saved after {b} weeks?", a * b


def t_cycle_two_days(r):
    n, he, _ = _person(r)
    d1, d2 = sorted(r.sample(F.DAYS_EN, 2), key=F.DAYS_EN.index)
    a, b = r.randint(3, 30), r.randint(3, 30)
    q = (f"{n} cycles {a} kilometres on {d1} and {b} kilometres on {d2}. "
         f"How many kilometres does {he} cycle on the two days?")
    return q, a + b


def t_bus_stop(r):
    a = r.randint(15, 50)
    b = r.randint(2, a - 5)
    c = r.randint(2, 15)
    q = (f"A bus has {a} passengers. At the first stop {b} people get off and {c} people get on. "
         f"How many passengers are on the bus now?")
    return q, a - b + c


def t_practice(r):
    n, he, _ = _person(r)
    act = r.choice(["the piano", "the guitar", "football", "drawing"])
    m, d = r.choice([10, 15, 20, 25, 30, 40]), r.randint(2, 7)
    return f"{n} practises {act} for {m} minutes every day. How many minutes does {he} practise in {d} days?", m * d


def t_machine(r):
    m = r.choice([5, 10, 12, 15, 20, 30])
    h = r.randint(1, 3)
    span = "one hour" if h == 1 else f"{h} hours"
    return f"A machine makes one toy every {m} minutes. How many toys does it make in {span}?", 60 * h // m


def t_half(r):
    n, _, his = _person(r)
    a = r.randint(5, 40)
    rel = r.choice(["brother", "sister", "friend"])
    obj = r.choice(F.THINGS)
    return f"{n} had {2 * a} {obj} and gave half of them to {his} {rel}. How many {obj} does {n} have left?", a


def t_coins(r):
    n, he, _ = _person(r)
    a, b = r.randint(2, 9), r.randint(2, 9)
    q = (f"{n} has {a} five-dollar notes and {b} one-dollar coins. "
         f"How much money does {he} have, in dollars?")
    return q, 5 * a + b


TEMPLATES = [t_buy_more, t_give_away, t_containers, t_daily_rate, t_two_prices, t_groups, t_share, t_speed,
             t_change, t_bake, t_unit_price, t_film_minutes, t_sleep_week, t_age_future, t_age_older,
             t_times_as_many, t_more_than, t_how_many_more, t_square_perimeter, t_rectangle_area, t_farm_legs,
             t_hall_chairs, t_budget, t_school_walk, t_pencils_left, t_bag_weight, t_pizza, t_buses_needed,
             t_temperature, t_pages_left, t_garden_rows, t_savings, t_cycle_two_days, t_bus_stop, t_practice,
             t_machine, t_half, t_coins]


def rows() -> list[dict]:
    rng = random.Random(SEED)
    seen = {r["question"] for r in builtin_rows("math")}
    out: list[tuple[str, int]] = []
    k = 0
    while len(out) < N_ROWS:
        tmpl = TEMPLATES[k % len(TEMPLATES)]
        k += 1
        q, ans = tmpl(rng)
        if q in seen:
            continue
        assert isinstance(ans, int) and ans > 0, (q, ans)
        seen.add(q)
        out.append((q, ans))
    rng.shuffle(out)  # templates mixed, so any first N rows cover many of them
    return [{"id": f"pm{k:04d}", "question": q, "answer": ans} for k, (q, ans) in enumerate(out, start=1)]
