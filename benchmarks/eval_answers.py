"""Score the answers of whole turns: on real conversations (LongMemEval, LoCoMo) and on scripted dialogues.

    python benchmarks/eval_answers.py [--set all|longmemeval|locomo|ours] [--lme DIR] [--locomo FILE]
        [--limit N] [--dialogues 150] [--seed 1] [--heldout 2] [--json] [--verbose]
        [--without-evidence | --other-user]

**longmemeval**: the shared LongMemEval-S development split (`--lme`, default
`../shared/data/longmemeval-dev` beside the repository).  Each question is its own
user; its sessions are imported as `eval_retrieval.py` imports them (`import_turns`,
one turn per user/assistant pair, stamped from the session's date), then the question
is asked through `Pipeline.ask` on a clock set to its `question_date`.  The final
answer is *right* when it contains the gold answer, both normalised (case,
punctuation, number words as digits); for the abstention questions (`_abs`) when it
says honestly that memory does not hold it.  Each answer is one of: right (APPROVEd,
or unverified and saying so), honest don't-know, wrong and not approved, **wrong and
APPROVEd**.  Two baselines from the same run beside it: the sentence of the best BM25
turn (the question's words over that user's turns, the sentence sharing most of
them; an answer that is never withheld), and "I don't know" every time.  Also: model
calls and prompt / completion tokens per phase (the backend's usage: the server's, or
the offline backend's counted prompt), and the tokens of §2 (its budget 2,000).
With `--without-evidence` each question's evidence sessions are left out of its import:
memory then does not hold the answer, so an APPROVE is a wrong approval (unless another
session repeats the answer), whatever words the answer uses.  With `--other-user` each
question is asked of the next question's user, on that user's question date: their
history is another person's, so again each APPROVE is wrong.

**locomo**: LoCoMo (`--locomo`, default `benchmarks/data/locomo/locomo10.jsonl.gz`;
Maharana et al., ACL 2024, CC BY-NC 4.0: non-commercial evaluation only, see the README
there).  Ten long conversations between two named people, each its own user, its
utterances imported as `eval_retrieval.py` imports them (`load_locomo`: one turn per
utterance, `Speaker: text`, stamped from its session's date); every question asked, as
there, a day after its conversation's last session (the data gives no question date).
`--limit N` is here N questions per conversation (default `LOCOMO_SAMPLE`, 100: 1,000 of
the 1,982), each conversation's questions sorted by category and N taken evenly spaced.
The same judge, classes and baselines as LongMemEval, per category: 1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop are right when the answer contains the gold;
5 adversarial (the question puts one speaker's event on the other: the conversation
does not hold the answer) is an abstention question, right only when the answer says
memory does not hold it, and any APPROVE there is a wrong approval.  The judge's limits
here: LoCoMo's golds are short phrases written by annotators, not words of the
conversation: a date computed from "last week" ("7 May 2023" against "May 7"), a
paraphrase ("his turtles" against "Turtles really bring me joy"), a list of several
items, or a judgement ("Likely no", most open-domain golds) is missed by containment
even when the answer is right when read, so "right" is a lower bound and part of
"wrong + APPROVE" is right when read.  `--without-evidence` leaves out the evidence
utterances of every asked question of a conversation (the questions share one user;
leaving out whole sessions would empty it); `--other-user` asks each question of the
next asked question's user who is another conversation.

**ours** — each dialogue is generated from a seed: one user, a few turns a person might say
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

Output: a table per set, then, last, one JSON line `{"benchmark": "answers", ...}`;
with `--json` only that line.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from events.clock import utcnow
from events.log import read_events
from events.projection import project_turn
from indexers.words import STOP_WORDS
from pandafs.assembly import open_memory
from pandafs.llm.base import Backend, make_backend
from pandafs.llm.offline import OfflineBackend, sentences
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.pipeline.context import context_text
from pandafs.tasks.grounding import is_honest_unknown, stem
from pandafs.tokens import count_tokens
from pandafs.turn_import.run import import_turns
from pandafs.vault import Vault

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("eval_retrieval", HERE / "eval_retrieval.py")
assert _spec is not None and _spec.loader is not None
ev = importlib.util.module_from_spec(_spec)
sys.modules["eval_retrieval"] = ev  # its dataclasses look their module up
_spec.loader.exec_module(ev)

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
        return says_unknown(answer)
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


# --- LongMemEval -----------------------------------------------------------------------------

_NUMBER_WORDS = {
    w: str(n)
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update(
    {"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "once": "1", "twice": "2"}
)
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")


def normalise(text: str) -> str:
    """Lower-cased words, punctuation gone (a thousands comma too), number words as digits."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", str(text).lower())
    words = re.findall(r"[^\W_]+(?:\.\d+)?", text)
    return " ".join(_ORDINAL.sub(r"\1", _NUMBER_WORDS.get(w, w)) for w in words)


def _gold_forms(gold: str) -> list[str]:
    """The gold answer, and for a gold of several sentences ("21 days. 22 days … is also
    acceptable.") its first sentence, normalised."""
    full = normalise(gold)
    first = normalise(re.split(r"(?<=[.;])\s+|\s+\(", str(gold).strip())[0])
    return [f for f in dict.fromkeys([full, first]) if f]


def contains_gold(answer: str, gold: str) -> bool:
    said = f" {normalise(answer)} "
    return any(f" {form} " in said for form in _gold_forms(gold))


_UNVERIFIED = re.compile(r"\bI couldn'?t (?:give a reliable answer|verify)\b", re.I)


def says_unknown(answer: str) -> bool:
    """An honest "memory does not hold it": the pipeline's don't-know, or a FAIL saying it
    could not give a reliable answer."""
    return is_honest_unknown(answer) or bool(_UNVERIFIED.search(answer))


def judge(answer: str, approved: bool, gold: str, abstention: bool) -> str:
    """right | honest | wrong | wrong_approved."""
    honest = says_unknown(answer)
    if abstention:
        if honest:
            return "right"
    elif contains_gold(answer, gold):
        return "right"
    elif honest and not approved:
        return "honest"
    return "wrong_approved" if approved else "wrong"


_WORD = re.compile(r"[^\W_]+")


def _terms(text: str) -> list[str]:
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


def bm25_sentence(question: str, turns: list[str]) -> str:
    """The best BM25 turn (k1 1.2, b 0.75) of `turns` for `question`, and of it the sentence
    sharing most of the question's words."""
    docs = [_terms(t) for t in turns]
    if not docs:
        return ""
    avg = sum(map(len, docs)) / len(docs) or 1.0
    df: Counter[str] = Counter(w for d in docs for w in set(d))
    asked = set(_terms(question))
    best, best_score = 0, -1.0
    for i, doc in enumerate(docs):
        tf = Counter(doc)
        score = 0.0
        for w in asked:
            if tf[w]:
                idf = math.log(1 + (len(docs) - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * tf[w] * 2.2 / (tf[w] + 1.2 * (0.25 + 0.75 * len(doc) / avg))
        if score > best_score:
            best, best_score = i, score
    said = sentences(turns[best]) or [turns[best]]
    return max(said, key=lambda s: len(asked & set(_terms(s))))


_KINDS = ("right", "honest", "wrong", "wrong_approved")


def _phase_usage(vault: Vault, user: str, turn: str) -> tuple[dict[str, Counter[str]], int]:
    """Calls and tokens per phase of one turn, and its §2 size in tokens."""
    events = read_events(vault.layout.turn_dir(user, turn) / "events.jsonl")
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    for event in events:
        metrics = getattr(event.data, "metrics", None)
        if metrics is None:
            continue
        phase = event.type
        phases[phase]["calls"] += metrics.llm_calls
        phases[phase]["prompt"] += metrics.tokens_in
        phases[phase]["completion"] += metrics.tokens_out
    view = project_turn(events)
    size = count_tokens(context_text(view.context.blocks)) if view.context else 0
    return phases, size


def run_longmemeval(
    folder: Path,
    limit: int | None,
    backend: Backend | None = None,
    verbose: bool = False,
    without_evidence: bool = False,
    other_user: bool = False,
) -> dict[str, Any]:
    dataset = ev.load_longmemeval(folder, limit)
    if without_evidence:  # each user's history less the sessions that answer its question
        evidence = {q.user: q.sessions for q in dataset.questions}
        lines = [line for line in dataset.lines if line["meta"]["session"] not in evidence[line["user"]]]
        dataset = ev.Dataset(dataset.name, lines, dataset.questions)
    with gzip.open(folder / "questions.jsonl.gz", "rt", encoding="utf-8") as handle:
        gold = {r["question_id"]: str(r["answer"]) for r in map(json.loads, handle)}
    return run_real(dataset, gold, backend, verbose, without_evidence, other_user)


LOCOMO_SAMPLE = 100
"""LoCoMo questions asked per conversation by default (10 conversations)."""


def locomo_gold(path: Path) -> dict[str, str]:
    """Question id (as `eval_retrieval.load_locomo` names it) → the gold answer."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        samples = [json.loads(raw) for raw in handle if raw.strip()]
    return {f"{s['sample_id']}-q{i:03d}": str(q["answer"]) for s in samples for i, q in enumerate(s["qa"])}


def run_locomo(
    path: Path,
    per_conversation: int,
    backend: Backend | None = None,
    verbose: bool = False,
    without_evidence: bool = False,
    other_user: bool = False,
) -> dict[str, Any]:
    """`per_conversation` questions of each conversation, sorted by category then spread
    evenly (every category while it is at least 5); adversarial ones are abstentions."""
    full = ev.load_locomo(path)
    by_user: dict[str, list[Any]] = defaultdict(list)
    for q in full.questions:
        by_user[q.user].append(replace(q, abstention=q.kind == "adversarial"))
    questions = [
        q
        for asked in by_user.values()
        for q in ev._spread(sorted(asked, key=lambda q: q.kind), per_conversation)
    ]
    users = {q.user for q in questions}
    lines = [line for line in full.lines if line["user"] in users]
    if without_evidence:  # each conversation less the utterances that answer its asked questions
        evidence = {turn for q in questions for turn in q.turns}
        lines = [line for line in lines if line["external_id"] not in evidence]
    dataset = ev.Dataset(full.name, lines, questions)
    return run_real(dataset, locomo_gold(path), backend, verbose, without_evidence, other_user)


def run_real(
    dataset: Any,
    gold: dict[str, str],
    backend: Backend | None = None,
    verbose: bool = False,
    without_evidence: bool = False,
    other_user: bool = False,
) -> dict[str, Any]:
    """Import `dataset`'s lines, ask each question through `Pipeline.ask` as of its date and
    judge the answer beside the two baselines (see the module docstring)."""
    lines = dataset.lines
    started = time.perf_counter()
    rows: dict[str, dict[str, Counter[str]]] = {"pandafs": {}, "bm25_sentence": {}, "always_unknown": {}}
    phases: dict[str, Counter[str]] = defaultdict(Counter)
    sizes: list[int] = []
    per_user: dict[str, list[str]] = defaultdict(list)
    for line in lines:
        per_user[line["user"]].append(f"{line['query']}\n{line['response']}")
    with tempfile.TemporaryDirectory() as tmp:
        vault, _ = Vault.init(Path(tmp) / "vault")
        source = Path(tmp) / "turns.jsonl"
        with open(source, "w", encoding="utf-8") as handle:
            for line in lines:
                handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        memory = open_memory(vault)
        imported = import_turns(vault, source, after_batch=memory.index_docs)
        import_seconds = time.perf_counter() - started
        clock = {"t": utcnow()}
        asked = time.perf_counter()
        with Pipeline(
            vault, backend=backend or OfflineBackend(), memory=memory, clock=lambda: clock["t"]
        ) as p:
            questions = dataset.questions
            for i, q in enumerate(questions):
                # --other-user: asked of the next question of another user, whose history lacks its answer
                later = [*questions[i + 1 :], *questions[:i]]
                asker = next((o for o in later if o.user != q.user), q) if other_user else q
                clock["t"] = datetime.fromisoformat(asker.now.replace("Z", "+00:00"))
                result = p.ask(q.text, user=asker.user)
                kinds = {
                    "pandafs": judge(result.answer, result.outcome == "APPROVE", gold[q.qid], q.abstention),
                    "bm25_sentence": judge(
                        bm25_sentence(q.text, per_user[q.user]), True, gold[q.qid], q.abstention
                    ),
                    "always_unknown": judge("I don't know.", False, gold[q.qid], q.abstention),
                }
                kind = q.kind + ("_abs" if q.abstention else "")
                for system, verdict in kinds.items():
                    tally = rows[system].setdefault(kind, Counter())
                    tally["n"] += 1
                    tally[verdict] += 1
                    if system == "pandafs" and result.outcome == "APPROVE":
                        tally["approved"] += 1
                        tally["right_approved"] += verdict == "right"
                used, size = _phase_usage(vault, asker.user, result.turn)
                for phase, counts in used.items():
                    phases[phase].update(counts)
                sizes.append(size)
                probe = without_evidence or other_user
                if verbose and (kinds["pandafs"] != "right" or probe and result.outcome == "APPROVE"):
                    print(
                        f"  {kinds['pandafs']:<14} [{kind}] {q.text[:90]!r}\n"
                        f"      gold {gold[q.qid][:80]!r}\n      [{result.outcome}] {result.answer[:240]!r}",
                        file=sys.stderr,
                    )
        ask_seconds = time.perf_counter() - asked
    n = len(dataset.questions)
    totals = {s: sum((t for t in r.values()), Counter()) for s, r in rows.items()}
    return {
        "set": dataset.name,
        "questions": n,
        "turns": len(lines),
        "without_evidence": without_evidence,
        "other_user": other_user,
        "imported": imported.imported,
        "import_seconds": round(import_seconds, 1),
        "ask_seconds": round(ask_seconds, 1),
        "kinds": {s: {k: dict(t) for k, t in sorted(r.items())} for s, r in rows.items()},
        "totals": {s: dict(t) for s, t in totals.items()},
        "wrong_approved_rate": round(totals["pandafs"]["wrong_approved"] / n, 4) if n else 0.0,
        "phases": {k: dict(v) for k, v in sorted(phases.items())},
        "context_tokens": {
            "mean": round(sum(sizes) / len(sizes), 1) if sizes else 0,
            "max": max(sizes, default=0),
            "over_budget": sum(1 for s in sizes if s > 2000),
        },
    }


_TITLES = {"longmemeval": "LongMemEval dev", "locomo": "LoCoMo"}


def render_real(res: dict[str, Any]) -> str:
    out = [
        f"{_TITLES[res['set']]}: {res['questions']} questions over {res['turns']} imported turns "
        f"(import {res['import_seconds']} s, asking {res['ask_seconds']} s)",
        f"{'type':<28} {'system':<15} {'n':>3} {'right':>6} {'(APPR)':>6} {'honest':>7} "
        f"{'wrong':>6} {'wrong+APPROVE':>14}",
    ]
    kinds = sorted(res["kinds"]["pandafs"])
    for kind in [*kinds, "ALL"]:
        for system in ("pandafs", "bm25_sentence", "always_unknown"):
            t = res["totals"][system] if kind == "ALL" else res["kinds"][system][kind]
            approved = str(t.get("right_approved", 0)) if system == "pandafs" else ""
            out.append(
                f"{kind if system == 'pandafs' else '':<28} {system:<15} {t['n']:>3} {t.get('right', 0):>6} "
                f"{approved:>6} {t.get('honest', 0):>7} {t.get('wrong', 0):>6} "
                f"{t.get('wrong_approved', 0):>14}"
            )
    out.append(f"wrong and APPROVEd: {res['wrong_approved_rate']:.1%} of answers")
    approved = res["totals"]["pandafs"].get("approved", 0)
    if res["without_evidence"] or res["other_user"]:
        evidence = "utterances" if res["set"] == "locomo" else "sessions"
        where = f"without their evidence {evidence}" if res["without_evidence"] else "of another user"
        out.append(f"APPROVEd {where}: {approved} of {res['questions']}")
    out.append(f"{'phase':<24} {'calls':>7} {'prompt tok':>11} {'completion':>11}   (per turn)")
    n = max(1, res["questions"])
    for phase, c in res["phases"].items():
        out.append(
            f"{phase:<24} {c.get('calls', 0) / n:>7.2f} {c.get('prompt', 0) / n:>11.0f} "
            f"{c.get('completion', 0) / n:>11.0f}"
        )
    ctx = res["context_tokens"]
    out.append(
        f"§2 size: mean {ctx['mean']} tokens, max {ctx['max']}, over the 2,000 budget: {ctx['over_budget']}"
    )
    return "\n".join(out)


def _backend(url: str | None, model: str) -> Backend | None:
    if not url:
        return None
    from pandafs.config import LLMConfig

    return make_backend(LLMConfig(backend="openai", base_url=url, model=model))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("all", "longmemeval", "locomo", "ours"), default="all")
    parser.add_argument("--lme", type=Path, default=ev.DEFAULT_LME, help="the LongMemEval dev folder")
    parser.add_argument("--locomo", type=Path, default=ev.DEFAULT_LOCOMO, help="the LoCoMo slice (.jsonl.gz)")
    parser.add_argument(
        "--limit",
        type=int,
        default=None,
        help=f"LongMemEval: questions spread over types; LoCoMo: per conversation ({LOCOMO_SAMPLE})",
    )
    parser.add_argument("--dialogues", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--heldout", type=int, default=2)
    parser.add_argument("--llm-url", default=None, help="an OpenAI-compatible /v1 URL instead of offline")
    parser.add_argument("--llm-model", default="local")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="print each wrong answer on stderr")
    parser.add_argument(
        "--without-evidence",
        action="store_true",
        help="leave the evidence out: LongMemEval's sessions, LoCoMo's utterances (an APPROVE is then wrong)",
    )
    parser.add_argument(
        "--other-user",
        action="store_true",
        help="ask each question of the next question's other user (an APPROVE is then wrong)",
    )
    args = parser.parse_args(argv)
    if args.dialogues < 1:
        parser.error("--dialogues must be at least 1")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    summary: dict[str, Any] = {"benchmark": "answers", "backend": "openai" if args.llm_url else "offline"}
    probes = (args.verbose, args.without_evidence, args.other_user)
    real: list[tuple[str, dict[str, Any]]] = []
    if args.set in ("all", "longmemeval"):
        if not (args.lme / "questions.jsonl.gz").is_file():
            parser.error(f"no LongMemEval questions in {args.lme}")
        real.append(
            ("lme", run_longmemeval(args.lme, args.limit, _backend(args.llm_url, args.llm_model), *probes))
        )
    if args.set in ("all", "locomo"):
        if not args.locomo.is_file():
            parser.error(f"{args.locomo} is not a file")
        per_conversation = LOCOMO_SAMPLE if args.limit is None else args.limit
        real.append(
            (
                "locomo",
                run_locomo(args.locomo, per_conversation, _backend(args.llm_url, args.llm_model), *probes),
            )
        )
    for prefix, res in real:
        if not args.json:
            print(render_real(res))
        totals = res["totals"]
        summary.update(
            {
                f"{prefix}_questions": res["questions"],
                f"{prefix}_right": totals["pandafs"].get("right", 0),
                f"{prefix}_right_approved": totals["pandafs"].get("right_approved", 0),
                f"{prefix}_approved": totals["pandafs"].get("approved", 0),
                f"{prefix}_without_evidence": args.without_evidence,
                f"{prefix}_other_user": args.other_user,
                f"{prefix}_wrong_approved": totals["pandafs"].get("wrong_approved", 0),
                f"{prefix}_wrong_approved_rate": res["wrong_approved_rate"],
                f"{prefix}_bm25_right": totals["bm25_sentence"].get("right", 0),
                f"{prefix}_unknown_right": totals["always_unknown"].get("right", 0),
                f"{prefix}_phases": res["phases"],
                f"{prefix}_context_tokens": res["context_tokens"],
                f"{prefix}_kinds": res["kinds"]["pandafs"],
            }
        )
    if args.set in ("all", "ours"):
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
        summary.update(
            {
                f"{name}_{key}": res[key]
                for name, res in results.items()
                for key in ("seed", "accuracy", "wrong_approve")
            }
        )
        summary["dialogues"] = args.dialogues
        summary["kinds"] = {name: res["kinds"] for name, res in results.items()}
    print(json.dumps(summary, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
