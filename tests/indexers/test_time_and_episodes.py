"""Time in questions, --after/--before, and episodes: each test fails if dates are ignored."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from indexers.time_words import TimeHint, resolve_time
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault

NOW = datetime(2026, 9, 15, 12, 0, tzinfo=UTC)  # a Tuesday


def day(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "inside", "outside"),
    [
        ("what did I cook last week?", "2026-09-09", "2026-08-20"),
        ("where did I go in May?", "2026-05-14", "2026-06-20"),
        ("what did I buy two months ago?", "2026-07-15", "2026-09-10"),
        ("who did I meet yesterday", "2026-09-14", "2026-09-10"),
        ("what happened on March 3rd?", "2026-03-03", "2026-03-20"),
        ("what happened in May 2025", "2025-05-10", "2026-05-10"),
        ("what did I do last Tuesday", "2026-09-08", "2026-09-01"),
        ("what did we discuss in the past 3 days", "2026-09-13", "2026-09-05"),
        ("what did I finish last month", "2026-08-12", "2026-06-12"),
        ("what did we say on 2026-04-02", "2026-04-02T20:00", "2026-04-05"),
    ],
)
def test_time_words_resolve_to_a_window_around_now(query: str, inside: str, outside: str) -> None:
    text, hint = resolve_time(query, NOW)
    assert hint.after is not None and hint.before is not None
    assert hint.after <= day(inside) < hint.before
    assert not hint.after <= day(outside) < hint.before
    assert resolve_time(text, NOW)[1] == TimeHint()  # the time words do not become query terms


def test_order_words_and_the_verb_may() -> None:
    assert resolve_time("when did I go climbing for the first time?", NOW)[1].order == "earliest"
    assert resolve_time("what have I been reading recently", NOW)[1].order == "latest"
    assert resolve_time("where did I eat the last time I was in Porto", NOW)[1].order == "latest"
    text, hint = resolve_time("I may buy a kayak", NOW)
    assert hint == type(hint)() and "may" in text
    later = resolve_time("where did I go in May?", datetime(2027, 2, 1, tzinfo=UTC))[1]
    assert later.after is not None and later.after.year == 2026  # the last May before now


# --------------------------------------------------------------------------- in the index


def _import(vault: Vault, tmp_path: Path, lines: list[dict]) -> Memory:
    memory = Memory(vault)
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    import_turns(vault, source, after_batch=memory.index_docs)
    return memory


def _turn(external: str, when: str, query: str, response: str = "ok", session: str | None = None) -> dict:
    line = {"user": "alice", "external_id": external, "timestamp": when, "query": query, "response": response}
    if session is not None:
        line["meta"] = {"session": session}
    return line


@pytest.fixture
def dated(vault: Vault, tmp_path: Path) -> Memory:
    """The same words said in May, July and September."""
    return _import(
        vault,
        tmp_path,
        [
            _turn("may", "2026-05-12T18:00:00Z", "I cooked a mushroom risotto for friends"),
            _turn("july", "2026-07-16T18:00:00Z", "I cooked a mushroom risotto for friends"),
            _turn("sept", "2026-09-10T18:00:00Z", "I cooked a mushroom risotto for friends"),
        ],
    )


def externals(hits: list[dict]) -> list[str]:
    return [h["external_id"] for h in hits]


def test_a_query_the_quick_test_passes_over_holds_no_time_expression() -> None:
    """`resolve_time` skips its patterns when no trigger word is in the query: that must
    never skip one that matches.  Seeded strings of near misses (glued, prefixed and
    suffixed trigger words, numbers and dates in every shape) and every expression
    word; for each the quick test lets through nothing a pattern would match."""
    import random

    from indexers.time_words import MONTHS, TRIGGERS, WEEKDAYS, _may_hold_time, _patterns

    words = sorted(TRIGGERS) + ["a", "the", "in", "on", "since", "of", "early", "late", "mid", "mid-", "back"]
    words += [
        "day",
        "days",
        "week",
        "weeks",
        "weekend",
        "month",
        "year",
        "time",
        "ever",
        "just",
        "very",
        "my",
    ]
    words += ["2024", "05", "3rd", "12", "2024-05-01", "1999-12-31", "two", "couple", "several", "5th,"]
    near = [w + x for w in [*MONTHS, *WEEKDAYS, "ago", "last", "first", "now"] for x in ("x", "_", "s", "ly")]
    near += ["x" + w for w in [*MONTHS, "ago", "last", "now"]] + [f"mid{m}" for m in MONTHS]
    near += ["lastly", "thisx", "agony", "nowhere", "mayday", "marching", "sundays", "années", "maý"]
    rng = random.Random(20261124)
    queries = [f"{x} {y}" for x in words + near for y in words + near]  # every pair
    queries += [" ".join(rng.choice(words + near) for _ in range(rng.randint(3, 6))) for _ in range(5000)]
    skipped = 0
    for query in queries:
        lowered = query.lower()
        if not _may_hold_time(lowered):
            skipped += 1
            matched = [kind for kind, pattern in _patterns() if pattern.search(lowered)]
            assert not matched, (query, matched)
    assert skipped > 1000  # the test exercised the quick path
    examples = {  # one of each kind: the quick test lets each through
        "ago": "about two weeks ago",
        "past": "over the past 3 months",
        "last_unit": "previous year",
        "this_unit": "this weekend",
        "yesterday": "yesterday",
        "today": "this morning",
        "date": "on june 5th, 2024",
        "month": "midjune",
        "weekday": "sunday",
        "first": "at first",
        "recent": "the other day",
        "iso": "since 2024-05-01",
    }
    for kind, pattern in _patterns():
        assert pattern.search(examples[kind]) and _may_hold_time(examples[kind]), kind
    for phrase in ("tonight", "just now", "originally", "the first time", "last time"):
        assert _may_hold_time(phrase), phrase
    assert resolve_time("hamsters and laptops", NOW) == ("hamsters and laptops", resolve_time("", NOW)[1])
    assert resolve_time("plans for midjune", NOW)[1].after is not None  # "mid" glued to a month


def test_time_words_in_the_question_pick_the_dated_turn(dated: Memory) -> None:
    def top(query: str) -> str:
        return externals(dated.search(query, user="alice", now=NOW))[0]

    assert top("what did I cook in May?") == "may"
    assert top("what did I cook two months ago?") == "july"
    assert top("what did I cook last week?") == "sept"
    assert dated.ranking.latest_weight == 0.0  # off by default: no gain on the real sets
    dated.ranking = dated.ranking._replace(latest_weight=1.0)
    assert top("what did I cook for the first time?") == "may"


def test_after_and_before_filter_by_creation_time(dated: Memory) -> None:
    hits = dated.search("risotto", user="alice", now=NOW, after=day("2026-06-01"), before=day("2026-08-01"))
    assert externals(hits) == ["july"]
    assert externals(dated.search("risotto", user="alice", now=NOW, before=day("2026-07-16"))) == ["may"]
    assert externals(dated.search("risotto", user="alice", now=NOW, after=day("2026-09-10T18:00:00"))) == [
        "sept"
    ]


def test_hits_name_their_episode_and_date(vault: Vault, tmp_path: Path) -> None:
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("s1", "2026-09-01T10:00:00Z", "planning the garden shed", session="chat-1"),
            _turn("g1", "2026-09-02T09:00:00Z", "the shed roof leaks"),
            _turn("g2", "2026-09-02T09:10:00Z", "which sealant works on felt?"),
            _turn("g3", "2026-09-02T15:00:00Z", "the shed door squeaks"),
        ],
    )
    hits = {h["external_id"]: h for h in memory.search("shed roof sealant door", user="alice", now=NOW)}
    assert hits["s1"]["episode"] == "chat-1" and hits["s1"]["date"] == "2026-09-01"
    assert hits["g1"]["episode"] == hits["g2"]["episode"] == "gap:2026-09-02T09:00:00Z"
    assert hits["g3"]["episode"] == "gap:2026-09-02T15:00:00Z"  # five hours later: a new episode


def test_an_answer_next_door_is_found_within_an_episode_not_across_one(vault: Vault, tmp_path: Path) -> None:
    """A reply that only answers (no question word in it) inherits from its neighbour
    in the same conversation; the same reply in another conversation does not."""
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("q", "2026-09-01T10:00:00Z", "what should we name the new kayak?", session="a"),
            _turn("a", "2026-09-01T10:01:00Z", "Driftwood, definitely", session="a"),
            _turn("x", "2026-09-01T10:02:00Z", "Bluebell, definitely", session="b"),
        ],
    )
    found = externals(memory.search("kayak name", user="alice", now=NOW))
    assert "a" in found and "x" not in found


@pytest.mark.parametrize("session", [None, "chat-1"])
def test_a_long_episode_is_scored_near_its_best_turns_and_keeps_its_name(
    vault: Vault, tmp_path: Path, session: str | None
) -> None:
    """A run of back-to-back turns (or one session) longer than a conversation
    (2·`episode_reach` + 1) is scored only within `episode_reach` turns of its best
    stage-1 hits: the reply next door still inherits from the question, and every hit
    still names the episode as before: a run by its first turn, though that turn was
    left out; a session by its id."""
    lines = [
        _turn(
            f"t{i:02d}",
            f"2026-09-01T09:{i:02d}:00Z",
            f"small talk number {i} about the weather",
            session=session,
        )
        for i in range(40)
    ]
    lines[30] = _turn("q", "2026-09-01T09:30:00Z", "what should we name the new kayak?", session=session)
    lines[31] = _turn("a", "2026-09-01T09:31:00Z", "Driftwood, definitely", session=session)
    memory = _import(vault, tmp_path, lines)
    name = session or "gap:2026-09-01T09:00:00Z"
    for reach in (3, 0):  # 0: the whole episode, as before the reach existed
        memory.ranking = memory.ranking._replace(episode_reach=reach)
        hits = {h["external_id"]: h for h in memory.search("kayak name", user="alice", now=NOW)}
        assert list(hits)[:2] == ["q", "a"], reach
        assert hits["q"]["episode"] == hits["a"]["episode"] == name, reach


def test_same_time_turns_keep_their_conversation_order_when_one_is_reindexed(
    vault: Vault, tmp_path: Path
) -> None:
    """Turns imported with one time (a session's date) are in the order the vault
    numbered them, whatever order the index holds them in: a turn re-indexed (its
    frontmatter updated, as the learning fold does to a turn it cites) moves to the end
    of the index, and its neighbours were then decided by that position."""
    when = "2026-09-01T10:00:00Z"
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("q", when, "what should we name the new kayak?", session="s"),
            _turn("a", when, "Driftwood, definitely", session="s"),
            _turn("z", when, "Bluebell, definitely", session="s"),
        ],
    )
    before = externals(memory.search("kayak name", user="alice", now=NOW))
    question = next(h for h in memory.search("kayak", user="alice", now=NOW) if h["external_id"] == "q")
    memory.index_paths([question["doc_path"]], force=True)
    after = externals(memory.search("kayak name", user="alice", now=NOW))
    assert before == after
    assert "a" in after and "z" not in after


def test_reach_slices_keep_the_turns_near_each_anchor_and_a_short_episode_whole() -> None:
    from indexers.episodes import reach_slices

    assert reach_slices(7, [3], 3) == [(0, 7)]  # a conversation's length: whole
    assert reach_slices(100, [10, 14, 60], 3) == [(7, 18), (57, 64)]  # near windows merge
    assert reach_slices(100, [0, 99], 3) == [(0, 4), (96, 100)]  # clipped at the ends
    assert reach_slices(100, [], 3) == []  # no anchor in it: nothing kept
    assert reach_slices(100, [50], 0) == [(0, 100)]  # reach 0: the whole episode


def test_unit_episode_ranks_conversations_one_hit_each(vault: Vault, tmp_path: Path) -> None:
    """`unit="episode"`: each conversation once, by its best turn, sessions and time-gap
    runs alike; `unit="turn"` lists every matching turn."""
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("a1", "2026-09-01T10:00:00Z", "the shed roof leaks", session="chat-1"),
            _turn("a2", "2026-09-01T10:01:00Z", "which sealant for a shed roof?", session="chat-1"),
            _turn("a3", "2026-09-01T10:02:00Z", "the shed roof again", session="chat-1"),
            _turn("b1", "2026-09-03T10:00:00Z", "painting the shed"),
            _turn("b2", "2026-09-03T10:05:00Z", "the shed needs a second coat"),
            _turn("c1", "2026-09-05T10:00:00Z", "the roof of the car", session="chat-2"),
        ],
    )
    turns = memory.search("shed roof", user="alice", now=NOW, snippets=False)
    episodes = memory.search("shed roof", user="alice", now=NOW, snippets=False, unit="episode")
    assert len(turns) == 6
    assert [h["episode"] for h in episodes] == list(dict.fromkeys(h["episode"] for h in turns))
    assert len(episodes) == 3 and episodes[0]["episode"] == "chat-1"
    assert {h["external_id"] for h in episodes} <= {h["external_id"] for h in turns}


def test_a_conversation_that_says_the_word_in_more_turns_ranks_higher(vault: Vault, tmp_path: Path) -> None:
    """An episode's word counts more the more of its turns hold it, saturating as BM25's
    term frequency does (`coverage_k1`): a conversation about the kayak outranks one
    that names it once, even by a slightly better single turn."""
    memory = _import(
        vault,
        tmp_path,
        [
            _turn("a1", "2026-09-10T10:00:00Z", "my kayak", session="once"),
            _turn("a2", "2026-09-10T10:01:00Z", "lunch was sandwiches", session="once"),
            _turn("a3", "2026-09-10T10:02:00Z", "then the weather turned", session="once"),
            _turn("b1", "2026-09-02T10:00:00Z", "my kayak again", session="about"),
            _turn("b2", "2026-09-02T10:01:00Z", "the kayak paddle", session="about"),
            _turn("b3", "2026-09-02T10:02:00Z", "a sturdier kayak", session="about"),
        ],
    )

    def order() -> list[str]:
        hits = memory.search("kayak", user="alice", now=NOW, snippets=False, unit="episode")
        return [h["episode"] for h in hits]

    memory.ranking = memory.ranking._replace(coverage_k1=0.0)  # the best turn alone speaks
    assert order() == ["once", "about"]
    memory.ranking = memory.ranking._replace(coverage_k1=1.2)
    assert order() == ["about", "once"]
