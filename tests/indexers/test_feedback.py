"""Pseudo-relevance feedback (RM3): the best first-round turns' words re-weigh the candidates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from indexers.feedback import feedback_terms
from indexers.query import plan_query
from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.sessions import memory_with, sessions_found

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)
TURNS = [
    (
        "s1",
        "2026-06-02T10:00:00Z",
        "I keep a list of my musical instruments, the banjo is the newest one",
        "Fine.",
    ),
    (
        "s2",
        "2026-07-09T18:00:00Z",
        "Tuned the banjo tonight, the rest of the collection can wait",
        "Cold does that.",
    ),
    (
        "s3",
        "2026-08-01T09:00:00Z",
        "Sorted the stamp collection: a tidy collection",
        "Sounds tidy.",
    ),
    ("s4", "2026-08-20T19:00:00Z", "Booked a table for two at the harbour restaurant", "Enjoy dinner."),
    ("s5", "2026-09-01T08:00:00Z", "My landlord finally fixed the boiler in the flat", "About time."),
    ("s6", "2026-09-03T08:00:00Z", "The train was late again this morning", "Annoying."),
    ("s7", "2026-09-05T20:00:00Z", "Planted tulip bulbs along the fence", "Spring will show."),
    ("s8", "2026-09-08T07:00:00Z", "Ran ten kilometres before breakfast", "Well done."),
    ("s9", "2026-09-10T21:00:00Z", "Finished the crossword in ink for once", "Bold."),
]


def _memory(vault: Vault, tmp_path: Path) -> Memory:
    return memory_with(vault, tmp_path, TURNS)


def _sessions(memory: Memory, query: str) -> list[str]:
    return sessions_found(memory, query, NOW)


def test_feedback_lifts_the_turn_that_shares_the_best_turns_words(vault: Vault, tmp_path: Path) -> None:
    memory = _memory(vault, tmp_path)
    question = "How many musical instruments are in my collection?"
    memory.ranking = memory.ranking._replace(feedback_docs=0)
    assert _sessions(memory, question) == ["s1", "s3", "s2"]  # "collection" twice beats once
    memory.ranking = memory.ranking._replace(feedback_docs=1)
    assert _sessions(memory, question) == ["s1", "s2", "s3"]  # "banjo", read from s1, lifts s2
    assert _sessions(memory, "harbour") == ["s4"]  # the hits still say the question's words


def test_feedback_runs_for_a_count_or_a_sum_unless_asked_for_every_query(
    vault: Vault, tmp_path: Path
) -> None:
    memory = _memory(vault, tmp_path)
    memory.ranking = memory.ranking._replace(feedback_docs=1, feedback_always=False)
    question = "Which musical instruments are in my collection?"
    assert _sessions(memory, question) == ["s1", "s3", "s2"]  # no count asked: one round, BM25's order
    assert _sessions(memory, "How many musical instruments are in my collection?") == ["s1", "s2", "s3"]
    memory.ranking = memory.ranking._replace(feedback_always=True)
    assert _sessions(memory, question) == ["s1", "s2", "s3"]
    assert plan_query("how much did I spend in total on the bike").counts
    assert plan_query("I own many instruments in all").counts
    assert not plan_query("which instruments do I own").counts


def test_feedback_words_weigh_what_rm3_interpolation_says() -> None:
    plan = plan_query("musical instruments")
    prose = "I keep a list of my musical instruments, the banjo is the newest one. Fine."
    words = feedback_terms([(2.0, prose)], plan.groups, terms=3, weight=0.5)
    assert len(words) == 3 and "banjo" in words
    assert not {"music", "instrument", "the", "is"} & set(words)  # the question's own words, stop words
    # λ = ½: the added words together weigh what the question's two groups weigh
    assert abs(sum(words.values()) - sum(g.weight for g in plan.groups)) < 1e-9
    assert feedback_terms([(2.0, prose)], plan.groups, terms=3, weight=0.25) != words
    assert feedback_terms([], plan.groups, terms=3, weight=0.5) == {}


def test_a_documents_terms_are_counted_as_the_index_analyses_the_whole_text() -> None:
    """Counted chunk by chunk (the fast path), the terms, counts, order and length equal
    those of `en_stem` over the whole text: punctuation inside chunks, Unicode letters,
    digits, case folding, over-long tokens and the non-space white space str.split knows."""
    import gc
    from collections import Counter

    from indexers.feedback import MIN_LENGTH, _stop_stems, _term_counts
    from indexers.words import _analyzer

    texts = [
        "Don't-stop_now: the 3rd banjo's strings (42nd try) — naïve CAFÉ İstanbul straße",
        "ΣΊΣΥΦΟΣ Ⅻ ½ ²³ ٣٤ ٣word a\u0301b c\u200bd x\u00a0y a\u2028b c\u3000d e\x1cf " + "z" * 45,
        "Tuned the banjo, tuned it again; tuning banjos\ttakes\npatience... patience!",
    ]
    for text in texts:
        stems = _analyzer().analyze(text)
        whole = [
            (t, n)
            for t, n in Counter(stems).items()
            if len(t) >= MIN_LENGTH and t not in _stop_stems() and not t.isdigit()
        ]
        counts, length = _term_counts(text)
        assert (list(counts.items()), length) == (whole, len(stems)), text
        assert not gc.is_tracked(counts)  # strings and ints: no work for the collector


def test_each_feedback_turn_speaks_in_proportion_to_its_score() -> None:
    """P(D|Q) ∝ the first round's score: the second turn's words weigh half the first's
    when it scores half (as exp(score), they would weigh a fifth: one turn makes the model)."""
    plan = plan_query("musical instruments")
    words = feedback_terms([(3.0, "banjo strings"), (1.5, "harbour ferry")], plan.groups, terms=4, weight=0.5)
    assert set(words) == {"banjo", "string", "harbour", "ferri"}
    assert abs(words["banjo"] / words["harbour"] - 2.0) < 1e-9
