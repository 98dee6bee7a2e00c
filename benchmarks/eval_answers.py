"""Score the answers of whole turns on scripted multi-turn dialogues (issue 12).

    python benchmarks/eval_answers.py [--dialogues 150] [--seed 1] [--heldout 2] [--json]

Each dialogue is generated from a seed: one user, a few turns a person might say
(facts, preferences, updates, plans, filler), then a question, all run through
`Pipeline.ask` — the library call behind `pandafs ask` — on the offline backend, in a
fresh tmp vault, on a clock that moves minutes between turns and days between
sessions.  The answer is correct when it contains the expected fact (for a question
about something never said: when it says plainly that it does not know).  A wrong
answer with verdict APPROVE is the failure that matters most and is counted apart.

Kinds: stated facts, preferences, updates that supersede, references ("there", "that
one"), questions across days, questions about things never said, price follow-ups
(with and without a price in memory).  Phrasings, names and values come from small
hand-written lists of everyday English (below); the generator draws them at random
so no answer rule can lean on one wording.  `--seed` is the development seed,
`--heldout` a second seed reported beside it.

Output: a table per kind and seed, then, last, one JSON line
`{"benchmark": "answers", ...}`; with `--json` only that line.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.tasks.grounding import is_honest_unknown
from pandafs.vault import Vault

CITIES = "Oslo Bergen Trondheim Lisbon Porto Vienna Prague Dublin Madrid Seville Zurich Krakow".split()
JOBS = "carpenter nurse teacher plumber chemist baker pilot librarian welder architect".split()
BRANDS = [
    ("Lenovo", "laptops"),
    ("Dell", "laptops"),
    ("Asus", "laptops"),
    ("Sony", "headphones"),
    ("Bose", "headphones"),
    ("Nikon", "cameras"),
    ("Canon", "cameras"),
    ("Brooks", "running shoes"),
]
PEOPLE = "Berg Lund Haugen Silva Novak Moreau Keller Costa Ferreira Horvath".split()
MONTHS = "March April May June July August September October".split()
RELATIONS = "sister brother cousin neighbour boss landlord".split()
PRODUCTS = [
    ("Lenovo LOQ 15", "laptop", "Best Buy"),
    ("Sony WH-1000XM5", "headphones", "Elkjop"),
    ("Nikon Z50", "camera", "Foto Shop"),
    ("Garmin Forerunner 265", "watch", "Komplett"),
    ("Kindle Paperwhite", "e-reader", "Amazon"),
]
FILLER = [
    "Any tips for sleeping better?",
    "hello",
    "thanks!",
    "What's a good stretch for my back?",
    "Tell me something about tea.",
    "I like green tea",
    "Remember that I have a cat",
]


@dataclass
class Dialogue:
    kind: str
    turns: list[str]
    expect: str  # a substring of the right answer, or "" for "honestly unknown"
    forbid: str = ""  # a substring a right answer must not state
    saved: list[str] = field(default_factory=list)
    day_gap: int = 0  # days between the statements and the question


def _stated_fact(r: random.Random) -> Dialogue:
    job, city = r.choice(JOBS), r.choice(CITIES)
    say = r.choice([f"I work as a {job} in {city}", f"I work as a {job}", f"Remember that I work as a {job}"])
    ask = r.choice(
        [
            "What's my job?",
            "What do I do for work?",
            "What is my occupation?",
            "What do I do for a living?",
            "What's my line of work?",
            "what is my job",
        ]
    )
    return Dialogue("stated_fact", [say, *r.sample(FILLER, r.randint(0, 2)), ask], job)


def _preference(r: random.Random) -> Dialogue:
    brand, things = r.choice(BRANDS)
    say = r.choice(
        [f"I prefer {brand} {things}", f"I really prefer {brand} {things}", f"we prefer {brand} {things}"]
    )
    ask = r.choice(
        [
            f"Which {things} do I prefer?",
            f"What {things} brand do I prefer?",
            f"what {things} do I prefer",
            f"Do I have a favourite {things} brand?",
        ]
    )
    return Dialogue("preference", [say, *r.sample(FILLER, r.randint(0, 2)), ask], brand)


def _update(r: random.Random) -> Dialogue:
    old, new = r.sample(CITIES, 2)
    move = r.choice(
        [f"I moved to {new}", f"I now live in {new}", f"I have moved to {new}", f"I live in {new}"]
    )
    ask = r.choice(
        [
            "Where do I live?",
            "where do I live now?",
            "Which city do I live in?",
            "What city am I based in?",
            "Where's home for me these days?",
        ]
    )
    return Dialogue(
        "update", [f"I live in {old}", *r.sample(FILLER, r.randint(0, 1)), move, ask], new, f"live in {old}"
    )


def _taste_update(r: random.Random) -> Dialogue:
    (old, things), new = r.choice(BRANDS), ""
    new = r.choice([b for b, t in BRANDS if t == things and b != old] or ["Apple"])
    change = r.choice(
        [
            f"Actually, I now prefer {new} {things}",
            f"These days I prefer {new} {things}",
            f"I prefer {new} {things} now",
        ]
    )
    ask = r.choice([f"Which {things} do I prefer?", f"what {things} brand do I prefer now?"])
    turns = [f"I prefer {old} {things}", *r.sample(FILLER, r.randint(0, 2)), change, ask]
    return Dialogue("update", turns, new, f"prefer {old}")


def _reference(r: random.Random) -> Dialogue:
    city, month = r.choice(CITIES), r.choice(MONTHS)
    say = r.choice(
        [
            f"I'm planning a trip to {city} in {month}",
            f"I'm going to {city} in {month}",
            f"We're planning a holiday in {city} in {month}",
        ]
    )
    ask = r.choice(
        [
            f"Where am I travelling in {month}?",
            f"Where am I going in {month}?",
            "Where is my trip?",
            "Any tips for getting around there?",
            "Recommend a good hotel there",
            "What should I see there?",
        ]
    )
    return Dialogue("reference", [say, *r.sample(FILLER, r.randint(0, 1)), ask], city)


def _across_days(r: random.Random) -> Dialogue:
    name = r.choice(PEOPLE)
    who = r.choice(["dentist", "doctor", "lawyer", "accountant"])
    say = r.choice([f"My {who} is Dr. {name}", f"My {who} is {name}", f"Remember that my {who} is {name}"])
    ask = r.choice(
        [
            f"Who is my {who}?",
            f"who's my {who}?",
            f"What is the name of my {who}?",
            f"Remind me who my {who} is",
        ]
    )
    return Dialogue("across_days", [say, ask], name, day_gap=r.randint(1, 20))


def _never_said(r: random.Random) -> Dialogue:
    ask = r.choice(
        [
            f"What is my {r.choice(RELATIONS)}'s name?",
            "When is my dentist appointment?",
            "How much did my bike cost?",
            "Where did I park my car?",
            "What's my job?",
            "Which headphones do I prefer?",
            "What's my cat's name?",
            "When is my flight?",
        ]
    )
    return Dialogue("never_said", [*r.sample(FILLER, r.randint(1, 3)), ask], "")


def _price(r: random.Random) -> Dialogue:
    product, category, shop = r.choice(PRODUCTS)
    price = f"${r.randint(49, 1999)}"
    priced = r.random() < 0.6
    note = (
        f"{product} {category}: {price} at {shop}, in stock."
        if priced
        else f"{product} {category} at {shop}, in stock."
    )
    first = r.choice([f"Which {category} did we look at?", f"What {category} did I look at?"])
    ask = r.choice(["How much was that one?", "how much is it?", "What's the price of that one?"])
    return Dialogue(
        "price_followup" if priced else "price_unknown", [first, ask], price if priced else "", saved=[note]
    )


KINDS = [_stated_fact, _preference, _update, _reference, _across_days, _never_said, _price, _taste_update]


def dialogues(seed: int, count: int) -> list[Dialogue]:
    r = random.Random(seed)
    return [KINDS[i % len(KINDS)](r) for i in range(count)]


def correct(d: Dialogue, answer: str) -> bool:
    if not d.expect:
        return is_honest_unknown(answer) or answer.startswith("Sorry")
    if d.forbid and re.search(re.escape(d.forbid) + r"(?![^(]*\))", answer, re.I):
        return False  # stated as current (naming it inside "(this replaces …)" is fine)
    return d.expect.lower() in answer.lower()


def run(seed: int, count: int) -> dict[str, object]:
    per_kind: dict[str, Counter[str]] = defaultdict(Counter)
    started = time.perf_counter()
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = Vault.init(Path(tmp) / "vault")
        clock = {"t": datetime(2026, 2, 2, 9, 0, tzinfo=UTC)}
        memory = Memory(vault)
        with Pipeline(vault, backend=OfflineBackend(), memory=memory, clock=lambda: clock["t"]) as pipeline:
            for number, d in enumerate(dialogues(seed, count)):
                user = f"u{number:04d}"
                for note in d.saved:
                    memory.save(note, user=user, topic="shopping", now=clock["t"])
                result = None
                for i, query in enumerate(d.turns):
                    clock["t"] += timedelta(minutes=7)
                    if i == len(d.turns) - 1:
                        clock["t"] += timedelta(days=d.day_gap)
                    result = pipeline.ask(query, user=user)
                    turns += 1
                assert result is not None
                ok = correct(d, result.answer)
                tally = per_kind[d.kind]
                tally["n"] += 1
                tally["correct"] += ok
                tally["approve"] += result.outcome == "APPROVE"
                tally["wrong_approve"] += (not ok) and result.outcome == "APPROVE"
                if not ok and "--verbose" in sys.argv:
                    print(f"  x [{d.kind}] {d.turns} -> [{result.outcome}] {result.answer}", file=sys.stderr)
                clock["t"] += timedelta(hours=3)
    n = sum(t["n"] for t in per_kind.values())
    right = sum(t["correct"] for t in per_kind.values())
    return {
        "seed": seed,
        "dialogues": n,
        "turns": turns,
        "accuracy": round(right / n, 4) if n else 0.0,
        "wrong_approve": sum(t["wrong_approve"] for t in per_kind.values()),
        "seconds": round(time.perf_counter() - started, 2),
        "kinds": {
            k: {
                "n": t["n"],
                "accuracy": round(t["correct"] / t["n"], 4),
                "approve": t["approve"],
                "wrong_approve": t["wrong_approve"],
            }
            for k, t in sorted(per_kind.items())
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialogues", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heldout", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print each wrong answer on stderr")
    args = parser.parse_args(argv)
    if args.dialogues < 1:
        parser.error("--dialogues must be at least 1")
    results = {"dev": run(args.seed, args.dialogues), "heldout": run(args.heldout, args.dialogues)}
    if not args.json:
        print(f"{'seed':>10} {'kind':<16} {'n':>4} {'accuracy':>9} {'APPROVE':>8} {'wrong+APPROVE':>14}")
        for name, res in results.items():
            for kind, row in res["kinds"].items():  # type: ignore[union-attr]
                print(
                    f"{name:>10} {kind:<16} {row['n']:>4} {row['accuracy']:>9.3f} {row['approve']:>8} "
                    f"{row['wrong_approve']:>14}"
                )
            print(
                f"{name:>10} {'ALL':<16} {res['dialogues']:>4} {res['accuracy']:>9.3f} {'':>8} "
                f"{res['wrong_approve']:>14}   ({res['turns']} turns, {res['seconds']} s)"
            )
    summary = {
        "benchmark": "answers",
        "backend": "offline",
        **{
            f"{name}_{key}": res[key]
            for name, res in results.items()
            for key in ("seed", "accuracy", "wrong_approve")
        },
        "dialogues": args.dialogues,
        "kinds": {name: res["kinds"] for name, res in results.items()},
    }
    print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
