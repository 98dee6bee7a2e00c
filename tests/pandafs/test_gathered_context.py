"""§2 spends its token budget on evidence: the prior turns most relevant to the question,
each with its own text (question and answer), dated, abridged only by dropping the
sentences that do not match the question.  Real vaults, real imports, real tantivy and
the offline backend; the question is asked at a fixed time (`ask --now`)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from events.log import read_events
from pandafs.llm.offline import OfflineBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.pipeline.sources import abridge, date_phrases, sentence_pieces
from pandafs.tokens import count_tokens
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.support.config import set_setting

ASKED = datetime(2023, 6, 1, 12, 0, tzinfo=UTC)
FILLER = (
    "The weather was mild that week. We talked about the neighbours and their garden. "
    "Nothing else happened on the street. The bus was late again as usual. "
)


def _import(vault: Vault, lines: list[dict[str, Any]]) -> Memory:
    memory = Memory(vault)
    source = vault.root / "lines.jsonl"
    source.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    report = import_turns(vault, source, after_batch=memory.index_docs)
    assert not report.failed and report.imported == len(lines)
    source.unlink()
    return memory


def _line(n: int, when: datetime, query: str, response: str, session: str = "s1") -> dict[str, Any]:
    return {
        "user": "ann",
        "external_id": f"{session}-{n}",
        "timestamp": when.isoformat(),
        "query": query,
        "response": response,
        "meta": {"session": session},
    }


def _set_budget(vault: Vault, tokens: int) -> None:
    set_setting(vault.root, "context_tokens", tokens)


def _ask(vault: Vault, memory: Memory, question: str) -> tuple[Any, list[list[str]]]:
    with Pipeline(Vault(vault.root), backend=OfflineBackend(), memory=memory) as pipeline:
        result = pipeline.ask(question, user="ann", now=ASKED)
    events = read_events(vault.layout.turn_dir("ann", result.turn) / "events.jsonl")
    synthesized = next(e.data for e in events if e.type == "context_synthesized")
    rows = [r for b in synthesized.blocks if b.heading == "Relevant Prior Turns" for r in b.rows]
    return synthesized, rows


def test_the_budget_not_a_count_bounds_the_prior_turns(vault: Vault) -> None:
    start = ASKED - timedelta(days=30)
    lines = [
        _line(
            i,
            start + timedelta(hours=i),
            f"How is my tomato seedling number {i} doing?",
            f"Seedling {i} grows.",
        )
        for i in range(20)
    ]
    memory = _import(vault, lines)
    synthesized, rows = _ask(vault, memory, "How are my tomato seedlings doing?")
    assert len(rows) > 6  # more sources than a fixed count of six: they fit the budget
    assert synthesized.tokens <= vault.config.pipeline.context_tokens

    _set_budget(vault, 400)
    smaller, fewer = _ask(vault, memory, "How are my tomato seedlings doing?")
    assert 0 < len(fewer) < len(rows)
    assert smaller.tokens <= 400


def test_a_row_keeps_the_sentence_that_matched_the_question(vault: Vault) -> None:
    answer = FILLER * 8 + "Your secret ingredient for the tomato soup is smoked paprika. " + FILLER * 8
    memory = _import(vault, [_line(1, ASKED - timedelta(days=3), "Let me tell you about my week.", answer)])
    _set_budget(vault, 450)
    synthesized, rows = _ask(vault, memory, "What is the secret ingredient of my tomato soup?")
    (row,) = rows
    assert "secret ingredient for the tomato soup is smoked paprika" in row[3]
    assert "…" in row[3]  # abridged: the sentences that did not match were dropped
    assert synthesized.tokens <= 450


def test_every_row_is_dated_and_relative_phrases_resolved(vault: Vault) -> None:
    told = datetime(2023, 5, 20, 9, 30, tzinfo=UTC)
    memory = _import(
        vault,
        [
            _line(1, told, "I adopted a kitten named Miso two days ago.", "Congratulations on Miso!", "cat"),
            _line(
                2, told + timedelta(days=3), "Miso the kitten hates the vacuum.", "Many kittens do.", "cat2"
            ),
        ],
    )
    _, rows = _ask(vault, memory, "When did I adopt my kitten Miso?")
    assert len(rows) == 2
    for row in rows:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \(\w{3}\) \d\d:\d\d, session \w+", row[1]), row[1]
    adopted = next(r for r in rows if "adopted" in r[3])
    assert adopted[1] == "2023-05-20 (Sat) 09:30, session cat"
    assert "two days ago (2023-05-18)" in adopted[3]


def test_abridge_drops_unmatched_sentences_first_and_marks_gaps() -> None:
    text = "User: I went to Spain two days ago. It was sunny! Also a dog barked.\nAssistant: Great. Sure."
    pieces = sentence_pieces(text)
    assert pieces[0] == "User: I went to Spain two days ago." and pieces[-1] == "Sure."
    scores = [1.0 if "Spain" in p else 0.0 for p in pieces]
    cut = abridge(text, scores, 20)
    assert cut is not None and cut.startswith("User: I went to Spain two days ago.") and "…" in cut
    assert count_tokens(cut) <= 20
    assert abridge(text, scores, 5) is None  # not even the matching sentence fits
    assert abridge(text, scores, 100) == " ".join(pieces)


def test_date_phrases_name_the_day_they_mean() -> None:
    when = datetime(2023, 5, 20, tzinfo=UTC)  # a Saturday
    said = date_phrases("Yesterday and last Friday, 3 weeks ago, a month ago and last year.", when)
    assert said == (
        "Yesterday (2023-05-19) and last Friday (2023-05-19), 3 weeks ago (week of 2023-04-29), "
        "a month ago (2023-04) and last year (2022)."
    )
    assert date_phrases("two days ago", None) == "two days ago"


def _bike_reply(n: int) -> str:
    return " ".join(
        f"Lock model {n}-{k} suits many bikes you own: road bikes, mountain bikes, commuter bikes."
        for k in range(40)
    )


def test_long_relevant_turns_leave_room_for_the_user_words_of_others(vault: Vault) -> None:
    # three long turns that repeat the question's words rank above the one whose user
    # message answers it: none of them may be given whole at the cost of its row.
    start = ASKED - timedelta(days=10)
    lines = [
        _line(i, start + timedelta(minutes=i), f"Which lock fits the many bikes I own, {i}?", _bike_reply(i))
        for i in range(3)
    ]
    lines.append(
        _line(
            3,
            start + timedelta(days=2),
            "I own three bikes: a road bike, a gravel bike and a tandem.",
            "Sounds like a lot of riding. " + FILLER * 12,
            "s2",
        )
    )
    memory = _import(vault, lines)
    assert all(count_tokens(line["response"]) > 600 for line in lines[:3])
    synthesized, rows = _ask(vault, memory, "How many bikes do I own?")
    owned = [r for r in rows if "I own three bikes: a road bike, a gravel bike and a tandem." in r[3]]
    assert owned, [(r[0], count_tokens(r[3])) for r in rows]
    assert any(count_tokens(r[3]) > 600 for r in rows)  # the most relevant one still whole
    assert synthesized.tokens <= vault.config.pipeline.context_tokens


def test_a_key_fact_the_row_already_says_is_not_repeated(vault: Vault) -> None:
    # the backend's key facts are the matching sentences, cut short when long: the row's
    # own text holds them, so its Key Facts cell does not say them again.
    layers = ", ".join(f"layer {k} of ricotta" for k in range(40))
    long = f"My grandmother's lasagne recipe uses {layers}."
    memory = _import(vault, [_line(1, ASKED - timedelta(days=3), long, "What a lasagne recipe!")])
    _, rows = _ask(vault, memory, "What does my grandmother's lasagne recipe use?")
    (row,) = rows
    assert "layer 39 of ricotta" in row[3]
    assert row[4] == ""


def test_the_offline_planner_weighs_every_word_of_a_long_question() -> None:
    # a long question names what it asks for after the analyzer's first ten keywords; the
    # best hit shares only those words and is still judged highly relevant
    from pandafs.llm.offline import plan_retrieval
    from pandafs.tasks.schemas import CandidateView, RetrievalIn

    question = (
        "I was going through our previous conversation about the weather and the food in Lisbon "
        "during the festival, remind me of the bakery you said sells custard tarts at dawn?"
    )
    keywords = ["going", "previous", "conversation", "weather", "food", "lisbon", "festival", "remind"]
    best = CandidateView(
        doc_id="ann/turn_000002",
        kind="turn",
        score=9.0,
        snippet="…the bakery by the river sells custard tarts from dawn…",
        tier="search",
    )
    other = CandidateView(
        doc_id="ann/turn_000001", kind="turn", score=8.0, snippet="Lisbon weather and food.", tier="search"
    )
    plan = plan_retrieval(
        RetrievalIn(query=question, resolved_query=question, keywords=keywords, candidates=[best, other])
    )
    relevance = {p.doc_id: p.relevance for p in plan.relevant}
    assert relevance == {"ann/turn_000002": "high", "ann/turn_000001": "high"}


def test_retrieval_chooses_no_more_sources_than_the_rows_hold(vault: Vault) -> None:
    # a chosen source is read and abridged for the backend: one that §2's rows cannot
    # hold (each row a link, a date and a relevance beside its text) is not chosen
    start = ASKED - timedelta(days=30)
    reply = " ".join(f"Compost batch {k} needs turning and watering every week." for k in range(30))
    lines = [
        _line(i, start + timedelta(hours=i), f"How is my garden compost heap {i} doing?", reply)
        for i in range(20)
    ]
    memory = _import(vault, lines)
    synthesized, rows = _ask(vault, memory, "How is my garden compost doing?")
    turn = max(vault.layout.turns_dir("ann").iterdir())
    events = read_events(turn / "events.jsonl")
    retrieved = next(e.data for e in events if e.type == "context_retrieved")
    chosen = [c for c in retrieved.candidates if c.selected]
    assert 3 < len(rows) <= len(chosen) <= len(rows) + 2, (len(rows), len(chosen))
