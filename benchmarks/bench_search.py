"""Benchmark unified search, import and rebuild against raw tantivy and SQLite FTS5.

    .venv/bin/python benchmarks/bench_search.py [--sizes 10000,100000] [--queries 300]
        [--seed 7] [--out DIR] [--keep] [--profile] [--feedback-docs N]

For each corpus size N (benchmarks/README.md):

1. generate a seeded corpus of N conversational turns (20 users, two years, 1–4 KB
   each, Zipf-distributed words in topical clusters) as an `import-turns` JSONL file
   and import it into a fresh vault the way the CLI does (`import_turns` with
   `after_batch=Memory(vault).index_docs`): import turns/s;
2. stamp each turn's `context.md` frontmatter with its topic, quality and content
   types (what Phase 0 would have written; imported turns are all `conversation`,
   quality 0.5, so without this every filter would match everything), delete
   `indexes/` and time `Memory(vault).rebuild()`: rebuild turns/s;
3. time `Memory.search(limit=10)` over `--queries` queries, warm, in three shapes:
   `user` (visibility filter only), `filtered` (user + topic_filter + content_types
   + min_quality, the §9 target) and `topic` (topic facet only): p50 / p99 ms;
   for `filtered`, also the tantivy searches and counts one query makes;
4. in the same run, index the same text and metadata in a minimal tantivy index
   (one stemmed text field, raw/facet/fast filter fields, no re-ranking, no
   snippets; hits are the stored ids) and in SQLite FTS5 (porter tokenizer,
   contentless, metadata in a side table joined on rowid, `ORDER BY bm25`), and
   time builds and the same queries with equivalent filters.

Output: a table per size, then, last, one JSON line `{"benchmark": "search", ...}`.
Ratios are of the row's own quantity (for latency, > 1 means the numerator is
slower).  Wall-clock time is what the targets are about; CPU time is printed beside
it (process CPU for builds, the searching thread's CPU per query) and the load
average is recorded, because on a shared machine other work inflates wall time.

`--out DIR` keeps the work under DIR (and writes `bench_search.json` there);
`--keep` leaves vaults, corpus and baseline indexes in place afterwards;
`--profile` writes a cProfile of PandaFS's `filtered` loop per size and prints its
top functions on stderr.  `--feedback-docs N` also times `filtered` with RM3 feedback
over N turns (`feedback_docs`) on every query (`feedback_always`; by default it runs only
for a count or a sum), query by query alternating with the configured
ranking, so both see the same load; the profile and the call tally are then RM3's.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import itertools
import math
import os
import pstats
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson
import tantivy
from tantivy import Facet, FieldType, Occur, Query

from indexers.request import Ranking
from indexers.words import query_terms
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

TARGETS = {
    "filtered_p50_ms": 5.0,
    "filtered_p99_ms": 20.0,
}
"""Filtered search at p50 ≤ 5 ms and p99 ≤ 20 ms, and faster than SQLite FTS5 on the same
documents in the same run (what a user would pick instead).  Ratios to raw tantivy are
printed as the floor's measure, not judged.  Import and rebuild speeds are printed for
reference; their targets are ratios to a floor that `bench_import.py` and
`bench_rebuild.py` measure."""
SHAPES = ("user", "filtered", "topic")
WARMUP = 10
LIMIT = 10
START = datetime(2024, 6, 1, tzinfo=UTC)
DAYS = 730

# --------------------------------------------------------------------------- vocabulary

FUNCTION_WORDS = """the to and a of i you it is that in for we this with be on have
not are was my can but so if at as do what just your it's about would there or will
like think from one me they be an all get out up some how when more also which then
if no would could really should it's i'm don't that's been because than very them
other any our by into their what's well now first much only even these those here
after where before most too many over still again while through same sure let's
maybe last both though being doing every since each yes off few might""".split()

GENERAL_WORDS = """time good need want know make thing things use looking help going
better probably new way back day week month year pretty right work idea plan start
option options price cost cheap expensive quality compare difference problem question
answer list try tried found find check note notes remember said told asked mentioned
recommend recommendation choice choose buy bought keep kept change changed small large
big little long short fast slow easy hard simple worth money extra enough different
similar best worse worst review reviews experience friend family weekend morning
evening night home place store shop online order ordered delivery return warranty
model brand version size weight light heavy battery power quick detail details
schedule budget limit goal goals progress result results reason reasons issue issues
update updated test tested setup install guide step steps advice tip tips favorite
usually often sometimes never always today tomorrow yesterday later soon early late
enough actually probably definitely basically honestly sounds makes looks feels seems
works worked working useful useless interesting boring fine great nice bad okay
around between without against during within across toward upon local nearby city
country neighbour colleague partner kids school office weather summer winter spring
autumn holiday trip plans weekly daily monthly yearly total average minimum maximum
spend spent save saved saving pay paid payment account subscription free trial""".split()

TOPICS: dict[str, tuple[str, dict[str, str]]] = {
    "electronics": (
        "device screen charger cable specs storage processor memory display wireless",
        {
            "laptop": "laptop keyboard trackpad ultrabook thinkpad macbook ram ssd gpu hinge "
            "ports thunderbolt webcam fan thermal chassis docking monitor resolution "
            "touchscreen",
            "phone": "phone smartphone android iphone camera lens pixel notification app apps "
            "sim carrier case protector fingerprint unlock charging esim signal "
            "photos",
        },
    ),
    "pets": (
        "pet vet food cage toys feeding grooming treats adopt shelter",
        {
            "hamster": "hamster syrian dwarf wheel bedding burrow cheek pellets hideout "
            "nocturnal gnaw seeds enclosure substrate chew sawdust tunnel nesting "
            "whiskers",
            "dog": "dog puppy leash walk walks bark barking kibble retriever terrier "
            "training crate fetch collar harness paws fur shedding vaccination "
            "spaniel",
        },
    ),
    "travel": (
        "flight hotel booking passport luggage itinerary airport visa tickets sightseeing",
        {
            "japan": "japan tokyo kyoto osaka shinkansen ryokan onsen sushi ramen temple "
            "shrine yen railpass hokkaido sakura izakaya kimono nara hiroshima "
            "convenience",
            "italy": "italy rome florence venice milan pasta gelato piazza colosseum "
            "tuscany vatican espresso trattoria amalfi naples duomo gondola "
            "vineyard uffizi",
        },
    ),
    "cooking": (
        "recipe kitchen oven ingredients dinner lunch flavour spices pan bowl",
        {
            "baking": "bread sourdough flour yeast starter dough loaf crust knead proofing "
            "butter sugar cake cookies muffins hydration levain bake croissant "
            "whisk",
            "curry": "curry garlic ginger turmeric cumin coriander chili coconut lentils "
            "dal masala tikka paneer chickpeas rice simmer onions tomatoes "
            "cardamom",
        },
    ),
    "finance": (
        "bank savings interest loan credit statement fees invest portfolio pension",
        {
            "budget": "budget spreadsheet expenses groceries rent utilities envelope "
            "categories overspending income allowance debt emergency fund "
            "cashback receipts bills frugal tracker",
            "taxes": "tax taxes deduction deductions refund filing return accountant "
            "receipts invoice freelance vat allowance bracket deadline form "
            "audit withholding dividends",
        },
    ),
    "health": (
        "doctor symptoms appointment medication prescription clinic pharmacy dose healthy wellbeing",
        {
            "sleep": "sleep insomnia melatonin nap bedtime mattress pillow snoring dreams "
            "circadian caffeine tired rest alarm routine tracker rem bedroom "
            "darkness",
            "allergy": "allergy allergies pollen hayfever antihistamine sneezing "
            "congestion dust mites eczema rash peanut gluten lactose inhaler "
            "asthma itchy seasonal",
        },
    ),
    "home": (
        "house apartment landlord repair tools contractor room furniture paint floor",
        {
            "renovation": "renovation bathroom tiles plumbing plumber drywall insulation "
            "windows roof permit electrician wiring sanding grout cabinets "
            "countertop demolition quote",
            "garden": "garden tomatoes seedlings compost soil watering pruning roses "
            "lawn mower weeds mulch raised beds herbs basil greenhouse slugs "
            "fertilizer",
        },
    ),
    "cars": (
        "car driving insurance mileage dealer engine tyres registration garage parking",
        {
            "electric": "electric ev tesla charging range kwh charger wallbox leaf "
            "regenerative kilowatt plug hybrid supercharger preconditioning "
            "degradation inverter torque",
            "maintenance": "maintenance oil brakes service mechanic filter coolant "
            "alignment inspection clutch gearbox exhaust spark wipers "
            "battery rust",
        },
    ),
    "fitness": (
        "exercise workout gym training muscles stretching injury warmup cardio recovery",
        {
            "running": "running run marathon 10k pace shoes trail intervals tempo "
            "strava splits hamstring blisters hydration parkrun sprint "
            "endurance stride",
            "climbing": "climbing bouldering rope harness belay chalk crimp overhang "
            "grade route carabiner lead crag holds fingerboard topout "
            "beta",
        },
    ),
    "music": (
        "song songs practice lesson teacher concert chords melody rhythm notes",
        {
            "guitar": "guitar acoustic electric strings fret frets capo pick amp pedal "
            "strumming fingerstyle tuning riff solo tab pickups bridge "
            "humbucker",
            "piano": "piano keys scales sonata chopin bach metronome pedalling "
            "sheet arpeggio octave sightreading grand upright digital etude "
            "recital",
        },
    ),
    "work": (
        "job manager team meeting deadline career salary company feedback office",
        {
            "interviews": "interview interviews recruiter resume cv offer negotiation "
            "onsite behavioral portfolio referral hiring applicant linkedin "
            "screening whiteboard references",
            "projects": "project roadmap milestone stakeholder sprint backlog jira "
            "estimate launch retrospective scope requirements handover "
            "dependency risk kickoff",
        },
    ),
    "learning": (
        "course study exam practice lesson vocabulary grammar textbook homework tutor",
        {
            "spanish": "spanish duolingo verbs conjugation subjunctive madrid mexico "
            "pronunciation podcast flashcards anki tapas preterite "
            "conversation fluency accent dele",
            "python": "python code script function class module pandas numpy "
            "debugging error exception pip virtualenv pytest decorator "
            "generator async",
        },
    ),
}

QUESTION_TEMPLATES = [
    "what did we say about {0} and {1}?",
    "do you remember the {0} I mentioned?",
    "which {0} did you recommend for {1}?",
    "how much was the {0} for the {1}?",
    "can you remind me what the {0} {1} plan was?",
    "when did I last talk about {0}?",
    "what was your advice on {0} {1} {2}?",
]
USERS = [
    "alice", "bruno", "chen", "dana", "emeka", "farah", "gus", "hana", "ivan", "jo",
    "kofi", "lena", "mateo", "nadia", "oskar", "priya", "quinn", "rosa", "sven", "tariq",
]  # fmt: skip
CONTENT_TYPES = (("research", 0.4), ("pricing", 0.25), ("vendor_info", 0.15), ("preference", 0.1))
TYPE_FILTERS = (("research",), ("pricing", "vendor_info"), ("research", "pricing"), ("context",))
MIN_QUALITIES = (0.3, 0.5, 0.6)


def zipf(n: int, s: float = 1.0) -> list[float]:
    weights = [1.0 / (rank + 1) ** s for rank in range(n)]
    total = sum(weights)
    return [w / total for w in weights]


def tail_words(rng: random.Random, count: int) -> list[str]:
    """Rare words (names, products, jargon) as pronounceable pseudo-words."""
    onsets = "b c d f g h j k l m n p r s t v w z br cr dr fl gr kl pl pr sl st tr".split()
    vowels = "a e i o u ai ea io ou".split()
    codas = ["", "", "n", "r", "s", "l", "nd", "rt", "x", "m"]
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.choice((2, 2, 3, 3, 4))
        words.add(
            "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables)) + rng.choice(codas)
        )
    return sorted(words, key=lambda w: (len(w), w))


@dataclass(frozen=True)
class Lexicon:
    """Per leaf topic: the word list and cumulative weights a turn's text is drawn from."""

    leaves: list[str]  # "pets.hamster"
    words: dict[str, list[str]]
    cum: dict[str, list[float]]
    content: dict[str, tuple[list[str], list[float]]]  # query words (no function words)
    size: int

    @classmethod
    def build(cls, rng: random.Random, n_tail: int = 3000) -> Lexicon:
        tail = tail_words(rng, n_tail)
        leaves, words, cum, content = [], {}, {}, {}
        all_leaf_words = sorted(
            {w for _, (_, kids) in TOPICS.items() for v in kids.values() for w in v.split()}
        )
        vocab: set[str] = set(FUNCTION_WORDS) | set(GENERAL_WORDS) | set(tail)
        for parent, (shared, kids) in TOPICS.items():
            for child, own in kids.items():
                leaf = f"{parent}.{child}"
                parts = [
                    (FUNCTION_WORDS, 0.42, 1.0),
                    (GENERAL_WORDS, 0.22, 1.0),
                    (own.split(), 0.15, 0.8),
                    (shared.split(), 0.06, 0.8),
                    (all_leaf_words, 0.04, 0.5),
                    (tail, 0.11, 1.1),
                ]
                w: list[str] = []
                p: list[float] = []
                for items, share, s in parts:
                    w.extend(items)
                    p.extend(share * z for z in zipf(len(items), s))
                    vocab.update(items)
                leaves.append(leaf)
                words[leaf] = w
                cum[leaf] = list(itertools.accumulate(p))
                n_fn = len(FUNCTION_WORDS)
                content[leaf] = (w[n_fn:], list(itertools.accumulate(p[n_fn:])))
        return cls(leaves, words, cum, content, len(vocab))

    def text(self, rng: random.Random, leaf: str, n_words: int) -> str:
        tokens = rng.choices(self.words[leaf], cum_weights=self.cum[leaf], k=n_words)
        paragraphs, sentence, paragraph = [], [], []
        cut = rng.randint(6, 18)
        for token in tokens:
            sentence.append(token)
            if len(sentence) >= cut:
                paragraph.append(sentence[0].capitalize() + " " + " ".join(sentence[1:]) + ".")
                sentence, cut = [], rng.randint(6, 18)
                if len(paragraph) >= 4 and rng.random() < 0.35:
                    paragraphs.append(" ".join(paragraph))
                    paragraph = []
        if sentence:
            paragraph.append(" ".join(sentence).capitalize() + ".")
        if paragraph:
            paragraphs.append(" ".join(paragraph))
        return "\n\n".join(paragraphs)

    def content_words(self, rng: random.Random, leaf: str, count: int) -> list[str]:
        items, cum = self.content[leaf]
        picked: list[str] = []
        while len(picked) < count:
            word = rng.choices(items, cum_weights=cum)[0]
            if word not in picked:
                picked.append(word)
        return picked


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class TurnInfo:
    external_id: str
    user: str
    topic: str
    quality: float
    types: tuple[str, ...]
    created: int  # epoch seconds


@dataclass(frozen=True)
class Corpus:
    path: Path
    turns: list[TurnInfo]
    user_topics: dict[str, list[str]]
    bytes: int
    seconds: float


def plan_sessions(rng: random.Random, n: int, leaves: list[str]) -> tuple[list[Any], dict]:
    activity = zipf(len(USERS), 0.7)
    user_topics = {u: rng.sample(leaves, 4) for u in USERS}
    sessions = []
    total = 0
    while total < n:
        user = rng.choices(USERS, weights=activity)[0]
        leaf = rng.choice(user_topics[user]) if rng.random() < 0.85 else rng.choice(leaves)
        start = START + timedelta(days=rng.randrange(DAYS), minutes=rng.randrange(7 * 60, 23 * 60))
        count = min(rng.randint(1, 12), n - total)
        sessions.append((start, user, leaf, count, len(sessions)))
        total += count
    sessions.sort()
    return sessions, user_topics


def generate_corpus(path: Path, n: int, seed: int, lexicon: Lexicon) -> Corpus:
    """Write N import lines to `path`; return what each turn is about."""
    started = time.perf_counter()
    rng = random.Random(f"{seed}-{n}")
    sessions, user_topics = plan_sessions(rng, n, lexicon.leaves)
    turns: list[TurnInfo] = []
    size = 0
    with open(path, "wb") as out:
        for start, user, leaf, count, number in sessions:
            when = start
            for _ in range(count):
                leaf_now = leaf if rng.random() < 0.9 else rng.choice(user_topics[user])
                words = lexicon.content_words(rng, leaf_now, 3)
                if rng.random() < 0.5:
                    query = rng.choice(QUESTION_TEMPLATES).format(*words).capitalize()
                else:
                    query = lexicon.text(rng, leaf_now, rng.randint(8, 30))
                response = lexicon.text(rng, leaf_now, rng.randint(150, 620))
                external_id = f"{user}-{len(turns):07d}"
                types = tuple(t for t, share in CONTENT_TYPES if rng.random() < share)
                line = orjson.dumps(
                    {
                        "user": user,
                        "external_id": external_id,
                        "timestamp": when.isoformat().replace("+00:00", "Z"),
                        "query": query,
                        "response": response,
                        "meta": {
                            "session": f"{user}-s{number:06d}",
                            "day": when.date().isoformat(),
                        },
                    }
                )
                out.write(line + b"\n")
                size += len(line) + 1
                quality = round(min(1.0, max(0.0, rng.betavariate(4, 3))), 2)
                turns.append(TurnInfo(external_id, user, leaf_now, quality, types, int(when.timestamp())))
                when += timedelta(seconds=rng.randint(30, 600))
    return Corpus(path, turns, user_topics, size, time.perf_counter() - started)


def iter_docs(corpus: Corpus) -> Iterator[tuple[TurnInfo, str]]:
    """(turn, text) for the baselines: the same query + response PandaFS indexes."""
    with open(corpus.path, "rb") as handle:
        for info, raw in zip(corpus.turns, handle, strict=True):
            line = orjson.loads(raw)
            yield info, line["query"] + "\n\n" + line["response"]


# --------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class BenchQuery:
    text: str
    terms: tuple[str, ...]
    user: str
    topic: str
    types: tuple[str, ...]
    min_quality: float


def make_queries(rng: random.Random, count: int, corpus: Corpus, lexicon: Lexicon) -> list[Any]:
    users = sorted({t.user for t in corpus.turns})
    queries: list[BenchQuery] = []
    while len(queries) < count:
        user = rng.choice(users)
        leaf = rng.choice(corpus.user_topics[user])
        words = lexicon.content_words(rng, leaf, rng.randint(2, 6))
        if rng.random() < 0.3:
            text = rng.choice(QUESTION_TEMPLATES).format(*words, *words).capitalize()
        else:
            text = " ".join(words)
        terms = tuple(query_terms(text))
        if not terms:
            continue
        topic = leaf if rng.random() < 0.7 else leaf.split(".")[0]
        queries.append(
            BenchQuery(text, terms, user, topic, rng.choice(TYPE_FILTERS), rng.choice(MIN_QUALITIES))
        )
    return queries


# --------------------------------------------------------------------------- PandaFS


def stamp_turns(vault: Vault, corpus: Corpus) -> int:
    """Write each turn's topic, quality and types into its context.md frontmatter."""
    by_id = {t.external_id: t for t in corpus.turns}
    ext = re.compile(r"^external_id: (\S+)$", re.M)
    stamped = 0
    for user_dir in sorted((vault.root / "users").iterdir()):
        for context in sorted(user_dir.glob("turns/turn_*/context.md")):
            text = context.read_text(encoding="utf-8")
            found = ext.search(text)
            if found is None:
                continue
            info = by_id[found.group(1)]
            types = "".join(f"\n- {t}" for t in info.types)
            new = (
                text.replace("\nprimary_topic: conversation\n", f"\nprimary_topic: {info.topic}\n")
                .replace("\ncontent_types:\n- context\n", f"\ncontent_types:\n- context{types}\n")
                .replace("\nquality: 0.5\n", f"\nquality: {info.quality}\n")
            )
            if new != text:
                context.write_text(new, encoding="utf-8")
                stamped += 1
    return stamped


def pandafs_search(memory: Memory, shape: str) -> Callable[[BenchQuery], int]:
    def run(q: BenchQuery) -> int:
        if shape == "user":
            hits = memory.search(q.text, user=q.user, limit=LIMIT)
        elif shape == "filtered":
            hits = memory.search(
                q.text,
                user=q.user,
                topic_filter=q.topic,
                content_types=q.types,
                min_quality=q.min_quality,
                limit=LIMIT,
            )
        else:
            hits = memory.search(q.text, topic_filter=q.topic, limit=LIMIT)
        return len(hits)

    return run


class _Counting:
    """A tantivy searcher that tallies the searches and counts made through it."""

    def __init__(self, inner: tantivy.Searcher, tally: dict[str, int]) -> None:
        self.inner, self.tally = inner, tally

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name not in ("search", "cardinality"):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            self.tally[name] += 1
            return value(*args, **kwargs)

        return call


def tantivy_calls(memory: Memory, queries: list[BenchQuery]) -> dict[str, float]:
    """Tantivy searches and counts per `filtered` query; counts as for fresh words (the
    count cache emptied before each query: a warm cache hides them)."""
    tally = {"search": 0, "cardinality": 0}
    reader = memory.index.reader
    original = reader.searcher
    reader.searcher = lambda: _Counting(original(), tally)  # type: ignore[method-assign]
    run = pandafs_search(memory, "filtered")
    try:
        for q in queries:
            reader._counts.clear()
            run(q)
    finally:
        del reader.searcher
    per = max(len(queries), 1)
    return {
        "searches_per_query": round(tally["search"] / per, 2),
        "counts_per_query": round(tally["cardinality"] / per, 2),
    }


def check_filtered(memory: Memory, queries: list[BenchQuery]) -> None:
    """The stamped metadata reached the index: filtered hits obey every filter."""
    for q in queries[:20]:
        hits = memory.search(
            q.text,
            user=q.user,
            topic_filter=q.topic,
            content_types=q.types,
            min_quality=q.min_quality,
            limit=LIMIT,
        )
        for hit in hits:
            topic = hit["primary_topic"]
            ok = (
                hit["user"] == q.user
                and (topic == q.topic or topic.startswith(q.topic + "."))
                and set(hit["content_types"]) & set(q.types)
                and hit["quality"] >= q.min_quality
            )
            if not ok:
                raise SystemExit(f"filtered search returned a hit outside its filters: {hit}")


# --------------------------------------------------------------------------- raw tantivy


class RawTantivy:
    """The floor: one stemmed text field, filters as const-score clauses, top 10 ids."""

    def __init__(self, folder: Path, heap_mb: int) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        sb.add_text_field("owner", tokenizer_name="raw", index_option="basic")
        sb.add_text_field("ctype", tokenizer_name="raw", index_option="basic")
        sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
        sb.add_facet_field("topic")
        sb.add_float_field("quality", fast=True, indexed=True)
        sb.add_integer_field("created", fast=True, indexed=True)
        self.schema = sb.build()
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.index = tantivy.Index(self.schema, path=str(folder))
        self.heap_mb = heap_mb
        self.searcher: tantivy.Searcher | None = None

    def build(self, docs: Iterator[tuple[TurnInfo, str]]) -> int:
        writer = self.index.writer(heap_size=self.heap_mb * 1_000_000, num_threads=1)
        count = 0
        for info, text in docs:
            d = tantivy.Document()
            d.add_text("id", info.external_id)
            d.add_text("owner", info.user)
            for t in ("context", *info.types):
                d.add_text("ctype", t)
            d.add_text("text", text)
            d.add_facet("topic", topic_facet(info.topic))
            d.add_float("quality", info.quality)
            d.add_integer("created", info.created)
            writer.add_document(d)
            count += 1
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        return count

    def search(self, shape: str) -> Callable[[BenchQuery], int]:
        schema = self.schema

        def run(q: BenchQuery) -> int:
            searcher = self.searcher
            assert searcher is not None
            filters: list[Query] = []
            if shape in ("user", "filtered"):
                filters.append(Query.term_set_query(schema, "owner", [q.user, "_global"]))
            if shape in ("filtered", "topic"):
                filters.append(Query.term_query(schema, "topic", topic_facet(q.topic)))
            if shape == "filtered":
                filters.append(Query.term_set_query(schema, "ctype", list(q.types)))
                filters.append(Query.range_query(schema, "quality", FieldType.Float, q.min_quality, None))
            text_q = self.index.parse_query(" ".join(q.terms), ["text"])
            query = Query.boolean_query(
                [(Occur.Must, text_q)] + [(Occur.Must, Query.const_score_query(f, 0.0)) for f in filters]
            )
            hits = searcher.search(query, LIMIT, count=False).hits
            return len([searcher.doc(a).get_first("id") for _, a in hits])

        return run


def topic_facet(topic: str) -> Facet:
    return Facet.from_string("/" + topic.replace(".", "/"))


# --------------------------------------------------------------------------- SQLite FTS5


class Fts5:
    """SQLite FTS5 (porter, contentless) + a metadata table joined on rowid."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA cache_size=-65536")
        self.db.execute(
            "CREATE TABLE docs(id INTEGER PRIMARY KEY, doc_id TEXT, user TEXT, topic TEXT,"
            " ctypes TEXT, quality REAL, created INTEGER)"
        )
        self.db.execute("CREATE VIRTUAL TABLE fts USING fts5(text, content='', tokenize='porter unicode61')")

    def build(self, docs: Iterator[tuple[TurnInfo, str]]) -> int:
        count = 0
        self.db.execute("BEGIN")
        for rowid, (info, text) in enumerate(docs, 1):
            ctypes = " " + " ".join(("context", *info.types)) + " "
            row = (rowid, info.external_id, info.user, info.topic, ctypes, info.quality)
            self.db.execute("INSERT INTO docs VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, info.created))
            self.db.execute("INSERT INTO fts(rowid, text) VALUES (?, ?)", (rowid, text))
            count += 1
        self.db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        self.db.execute("COMMIT")
        return count

    def search(self, shape: str) -> Callable[[BenchQuery], int]:
        def run(q: BenchQuery) -> int:
            where = ["fts MATCH ?"]
            args: list[Any] = [" OR ".join(f'"{t}"' for t in q.terms)]
            if shape in ("user", "filtered"):
                where.append("d.user IN (?, '_global')")
                args.append(q.user)
            if shape in ("filtered", "topic"):
                where.append("(d.topic = ? OR d.topic LIKE ?)")
                args += [q.topic, q.topic + ".%"]
            if shape == "filtered":
                where.append("(" + " OR ".join("instr(d.ctypes, ?) > 0" for _ in q.types) + ")")
                args += [f" {t} " for t in q.types]
                where.append("d.quality >= ?")
                args.append(q.min_quality)
            sql = (
                "SELECT d.doc_id FROM fts JOIN docs d ON d.id = fts.rowid WHERE "
                + " AND ".join(where)
                + f" ORDER BY bm25(fts) LIMIT {LIMIT}"
            )
            return len(self.db.execute(sql, args).fetchall())

        return run


# --------------------------------------------------------------------------- timing


def percentile(sorted_ms: list[float], p: float) -> float:
    return sorted_ms[max(0, math.ceil(p / 100 * len(sorted_ms)) - 1)]


def time_queries(run: Callable[[BenchQuery], int], queries: list[BenchQuery]) -> dict[str, float]:
    """Wall-clock p50/p99 (the target) and this thread's CPU p50/p99 (robust to other load)."""
    return time_alternating({"": run}, queries)[""]


def time_alternating(
    runs: dict[str, Callable[[BenchQuery], int]], queries: list[BenchQuery]
) -> dict[str, dict[str, float]]:
    """`time_queries` of each run, each query through every run in turn (the same load for all)."""
    for q in queries[:WARMUP]:
        for run in runs.values():
            run(q)
    gc.collect()
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    hits = dict.fromkeys(runs, 0)
    for q in queries:
        for name, run in runs.items():
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            hits[name] += run(q)
            wall[name].append((time.perf_counter_ns() - t0) / 1e6)
            cpu[name].append((time.thread_time_ns() - c0) / 1e6)
    out: dict[str, dict[str, float]] = {}
    for name in runs:
        w, c = sorted(wall[name]), sorted(cpu[name])
        out[name] = {
            "p50_ms": round(percentile(w, 50), 3),
            "p99_ms": round(percentile(w, 99), 3),
            "mean_ms": round(sum(w) / len(w), 3),
            "cpu_p50_ms": round(percentile(c, 50), 3),
            "cpu_p99_ms": round(percentile(c, 99), 3),
            "mean_hits": round(hits[name] / len(queries), 2),
        }
    return out


def ranked_by(
    memory: Memory, ranking: Ranking, run: Callable[[BenchQuery], int]
) -> Callable[[BenchQuery], int]:
    """`run` with `ranking` as the memory's ranking."""

    def go(q: BenchQuery) -> int:
        memory.ranking = ranking
        return run(q)

    return go


T = TypeVar("T")


@dataclass(frozen=True)
class Timed(Generic[T]):
    value: T
    wall_s: float
    cpu_s: float  # the whole process: includes tantivy's indexing and merge threads


def timed(fn: Callable[[], T]) -> Timed[T]:
    c0, t0 = time.process_time(), time.perf_counter()
    value = fn()
    return Timed(value, time.perf_counter() - t0, time.process_time() - c0)


def rates(count: int, t: Timed[Any], unit: str) -> dict[str, float]:
    return {
        f"{unit}_per_s": round(count / t.wall_s),
        "wall_s": round(t.wall_s, 2),
        "cpu_s": round(t.cpu_s, 2),
    }


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def profile_loop(run: Callable[[BenchQuery], int], queries: list[BenchQuery], out: Path) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for q in queries:
        run(q)
    profiler.disable()
    profiler.dump_stats(out)
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(18)
    log(f"profile of PandaFS 'filtered' search ({out}):\n{text.getvalue()}")


# --------------------------------------------------------------------------- one size


def bench_size(n: int, args: argparse.Namespace, lexicon: Lexicon, work: Path) -> dict[str, Any]:
    started = time.perf_counter()
    load_start = round(os.getloadavg()[0], 2)
    if load_start > (os.cpu_count() or 1) / 2:
        log(f"[{n:,}] warning: load average {load_start} — other work will skew the timings")
    work.mkdir(parents=True, exist_ok=True)
    log(f"[{n:,}] generating corpus")
    corpus = generate_corpus(work / "turns.jsonl", n, args.seed, lexicon)
    queries = make_queries(random.Random(f"{args.seed}-q-{n}"), args.queries, corpus, lexicon)

    log(f"[{n:,}] importing into a fresh vault")
    vault, _ = Vault.init(work / "vault")
    imported = timed(lambda: import_turns(vault, corpus.path, after_batch=Memory(vault).index_docs))
    if imported.value.imported != n or imported.value.failed:
        failed = imported.value.failed[:3]
        raise SystemExit(f"import: {imported.value.imported} of {n} imported, failed {failed}")

    log(f"[{n:,}] stamping topics into context.md, rebuilding")
    stamped = timed(lambda: stamp_turns(vault, corpus))
    shutil.rmtree(vault.layout.indexes)
    os.sync()  # the rebuild should not pay for writing back the stamped files
    memory = Memory(vault)
    rebuilt = timed(memory.rebuild)
    if rebuilt.value.skipped or rebuilt.value.indexed < n:
        raise SystemExit(f"rebuild indexed {rebuilt.value.indexed} of {n}: {rebuilt.value.skipped}")
    check_filtered(memory, queries)

    log(f"[{n:,}] PandaFS searches")
    pandafs: dict[str, Any] = {
        shape: time_queries(pandafs_search(memory, shape), queries) for shape in SHAPES
    }
    configured = memory.ranking
    if args.feedback_docs is not None:  # RM3 on beside the configured ranking, alternating
        rm3 = configured._replace(feedback_docs=args.feedback_docs, feedback_always=True)
        filtered = pandafs_search(memory, "filtered")
        pair = time_alternating(
            {
                "filtered": ranked_by(memory, configured, filtered),
                "filtered_rm3": ranked_by(memory, rm3, filtered),
            },
            queries,
        )
        pandafs.update(pair)
        memory.ranking = configured
        pandafs["filtered"].update(tantivy_calls(memory, queries))
        memory.ranking = rm3
        pandafs["filtered_rm3"].update(tantivy_calls(memory, queries))
        pandafs["filtered_rm3"]["feedback_docs"] = args.feedback_docs
    else:
        pandafs["filtered"].update(tantivy_calls(memory, queries))
    if args.profile:
        profile_loop(pandafs_search(memory, "filtered"), queries, work.parent / f"profile-{n}.prof")
    memory.ranking = configured

    log(f"[{n:,}] raw tantivy")
    raw = RawTantivy(work / "raw-tantivy", vault.config.index.writer_heap_mb)
    raw_build = timed(lambda: raw.build(iter_docs(corpus)))
    raw_times = {shape: time_queries(raw.search(shape), queries) for shape in SHAPES}

    log(f"[{n:,}] SQLite FTS5")
    fts = Fts5(work / "fts5.sqlite")
    fts_build = timed(lambda: fts.build(iter_docs(corpus)))
    fts_times = {shape: time_queries(fts.search(shape), queries) for shape in SHAPES}
    fts.db.close()

    result: dict[str, Any] = {
        "turns": n,
        "queries": len(queries),
        "corpus": {
            "bytes": corpus.bytes,
            "avg_turn_bytes": round(corpus.bytes / n),
            "vocabulary": lexicon.size,
            "users": len({t.user for t in corpus.turns}),
            "generate_s": round(corpus.seconds, 2),
            "stamped": stamped.value,
            "stamp_s": round(stamped.wall_s, 2),
        },
        "pandafs": {
            "import": rates(n, imported, "turns"),
            "rebuild": rates(rebuilt.value.indexed, rebuilt, "turns"),
            "index_bytes": dir_bytes(vault.layout.indexes),
            **pandafs,
        },
        "tantivy": {
            "build": rates(n, raw_build, "docs"),
            "index_bytes": dir_bytes(raw.folder),
            **raw_times,
        },
        "fts5": {
            "build": rates(n, fts_build, "docs"),
            "index_bytes": fts.path.stat().st_size,
            **fts_times,
        },
    }
    result["ratios"] = ratios(result)
    filtered = pandafs["filtered"]
    x = result["ratios"]
    result["pass"] = {
        "search_filtered": filtered["p50_ms"] <= TARGETS["filtered_p50_ms"]
        and filtered["p99_ms"] <= TARGETS["filtered_p99_ms"]
        and (x["fts5_over_pandafs_filtered_p50"] or 0) > 1
        and (x["fts5_over_pandafs_filtered_p99"] or 0) > 1,
    }
    if "filtered_rm3" in pandafs:
        rm3 = pandafs["filtered_rm3"]
        result["pass"]["search_filtered_rm3"] = (
            rm3["p50_ms"] <= TARGETS["filtered_p50_ms"] and rm3["p99_ms"] <= TARGETS["filtered_p99_ms"]
        )
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["loadavg_1m"] = {"start": load_start, "end": round(os.getloadavg()[0], 2)}
    return result


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def ratios(r: dict[str, Any]) -> dict[str, Any]:
    p, t, f = r["pandafs"], r["tantivy"], r["fts5"]
    out: dict[str, Any] = {
        "fts5_build_over_pandafs_rebuild": ratio(f["build"]["docs_per_s"], p["rebuild"]["turns_per_s"]),
        "pandafs_rebuild_over_tantivy_build": ratio(p["rebuild"]["turns_per_s"], t["build"]["docs_per_s"]),
    }
    for shape in SHAPES:
        for pct in ("p50_ms", "p99_ms"):
            key = pct.removesuffix("_ms")
            out[f"fts5_over_pandafs_{shape}_{key}"] = ratio(f[shape][pct], p[shape][pct])
            out[f"pandafs_over_tantivy_{shape}_{key}"] = ratio(p[shape][pct], t[shape][pct])
    return out


# --------------------------------------------------------------------------- output


def table(r: dict[str, Any]) -> str:
    p, t, f, x = r["pandafs"], r["tantivy"], r["fts5"], r["ratios"]
    c = r["corpus"]

    def lat(side: dict[str, Any], shape: str, kind: str = "") -> str:
        return f"{side[shape][kind + 'p50_ms']:.2f} / {side[shape][kind + 'p99_ms']:.2f}"

    def xr(prefix: str, shape: str) -> str:
        return f"{x[f'{prefix}_{shape}_p50']}× / {x[f'{prefix}_{shape}_p99']}×"

    def rate(block: dict[str, Any]) -> str:
        per_s = next(v for k, v in block.items() if k.endswith("_per_s"))
        return f"{per_s:,} ({block['wall_s']:,.0f}/{block['cpu_s']:,.0f} s)"

    rows = [
        ("", "PandaFS", "raw tantivy", "SQLite FTS5", "FTS5/PandaFS", "PandaFS/tantivy"),
        ("import turns/s (wall/cpu s)", rate(p["import"]), "", "", "", ""),
        (
            "rebuild|build docs/s (wall/cpu s)",
            rate(p["rebuild"]),
            rate(t["build"]),
            rate(f["build"]),
            f"{x['fts5_build_over_pandafs_rebuild']}×",
            f"{x['pandafs_rebuild_over_tantivy_build']}×",
        ),
        (
            "index size, MB",
            f"{p['index_bytes'] / 1e6:,.0f}",
            f"{t['index_bytes'] / 1e6:,.0f}",
            f"{f['index_bytes'] / 1e6:,.0f}",
            "",
            "",
        ),
    ]
    labels = {
        "user": "search user, p50 / p99 ms",
        "filtered": "search filtered, p50 / p99 ms (≤ 5 / 20; FTS5 slower)",
        "topic": "search topic, p50 / p99 ms",
    }
    for shape in SHAPES:
        rows.append(
            (
                labels[shape],
                lat(p, shape),
                lat(t, shape),
                lat(f, shape),
                xr("fts5_over_pandafs", shape),
                xr("pandafs_over_tantivy", shape),
            )
        )
        rows.append(
            ("  thread CPU only", lat(p, shape, "cpu_"), lat(t, shape, "cpu_"), lat(f, shape, "cpu_"), "", "")
        )
    calls = p["filtered"]
    rows.append(
        (
            "tantivy searches / counts per filtered query",
            f"{calls['searches_per_query']} / {calls['counts_per_query']}",
            "1 / 0",
            "",
            "",
            "",
        )
    )
    if "filtered_rm3" in p:
        rm3 = p["filtered_rm3"]
        rows.append(
            (
                f"search filtered, RM3 on ({rm3['feedback_docs']} turns)",
                lat(p, "filtered_rm3"),
                "",
                "",
                "",
                "",
            )
        )
        rows.append(("  thread CPU only", lat(p, "filtered_rm3", "cpu_"), "", "", "", ""))
        rows.append(
            (
                "  tantivy searches / counts per query",
                f"{rm3['searches_per_query']} / {rm3['counts_per_query']}",
                "",
                "",
                "",
                "",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    head = (
        f"== {r['turns']:,} turns, {r['queries']} queries: corpus {c['bytes'] / 1e6:,.0f} MB "
        f"({c['avg_turn_bytes']:,} B/turn, {c['vocabulary']:,} words, {c['users']} users), "
        f"{r['seconds']:,.0f} s, load {r['loadavg_1m']['start']}→{r['loadavg_1m']['end']} =="
    )
    lines = [head]
    for row in rows:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    verdict = ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in r["pass"].items())
    lines.append(f"targets: {verdict}")
    return "\n".join(lines)


def library_version() -> dict[str, Any]:
    """The commit and a digest of the library sources: results belong to one snapshot."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for package in ("events", "indexers", "pandafs"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {"commit": commit, "sources_sha256": digest.hexdigest()[:16]}


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(s.replace("_", "")) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or min(sizes) < 50:
        raise argparse.ArgumentTypeError("sizes must be integers ≥ 50")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=parse_sizes, default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, help="work and results folder (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep vaults and baseline indexes")
    parser.add_argument("--profile", action="store_true", help="cProfile the filtered loop")
    parser.add_argument(
        "--feedback-docs",
        type=int,
        metavar="N",
        help="also time `filtered` with RM3 over N feedback turns, alternating with the configured ranking",
    )
    args = parser.parse_args()
    if args.queries < 1:
        parser.error("--queries must be at least 1")
    if args.feedback_docs is not None and args.feedback_docs < 1:
        parser.error("--feedback-docs must be at least 1")
    version = library_version()
    lexicon = Lexicon.build(random.Random(args.seed))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        base = args.out
    else:
        base = Path(tempfile.mkdtemp(prefix="pandafs-bench-search-"))
    results: dict[str, Any] = {}
    try:
        for n in args.sizes:
            work = base / f"n{n}"
            shutil.rmtree(work, ignore_errors=True)
            results[str(n)] = bench_size(n, args, lexicon, work)
            print(table(results[str(n)]), flush=True)
            if not args.keep:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        if args.out is None and not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    summary = {
        "benchmark": "search",
        "sizes": results,
        "targets": TARGETS,
        "pass": {key: all(r["pass"][key] for r in results.values()) for key in ("search_filtered",)},
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "library": version,
    }
    line = orjson.dumps(summary).decode()
    if args.out is not None:
        (args.out / "bench_search.json").write_text(line + "\n", encoding="utf-8")
    if args.keep:
        log(f"kept: {base}")
    print(line)


if __name__ == "__main__":
    main()
