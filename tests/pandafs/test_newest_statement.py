"""Validation approves the newest statement about what was asked, and only the speaker asked about."""

from __future__ import annotations

from datetime import UTC, datetime

from pandafs.tasks.grounding import Fact, answer_checks, requested_kind, settle

AUGUST = datetime(2023, 8, 16, 9, 37, tzinfo=UTC)
OCTOBER = datetime(2023, 10, 9, 7, 0, tzinfo=UTC)
PROJECTS = "How many projects have I completed since starting painting classes?"
OLDER = "I've completed 4 projects since starting painting classes, and I'm feeling pretty confident"
NEWER = "I just finished my 5th project since starting painting classes, and I'm feeling accomplished"


def _checks(answer: str, query: str, facts: list[Fact]) -> dict[str, tuple[bool, str]]:
    settled = settle(facts, query)
    return {
        c.gate: (c.passed, c.detail)
        for c in answer_checks(answer, query, requested_kind(query), settled, query)
    }


def _projects() -> list[Fact]:
    return [
        Fact(OLDER, "stated", 1, "alice/turn_000001", AUGUST),
        Fact(NEWER, "stated", 2, "alice/turn_000002", OCTOBER),
    ]


def test_an_older_value_is_not_approved_when_a_later_statement_gives_another() -> None:
    passed, detail = _checks(OLDER + " [1].", PROJECTS, _projects())["consistent_with_memory"]
    assert not passed and "2023-10-09" in detail and "5th project" in detail


def test_the_newest_value_is_approved() -> None:
    assert all(passed for passed, _ in _checks(NEWER + " [2].", PROJECTS, _projects()).values())


def test_a_question_about_the_earlier_value_is_answered_by_it() -> None:
    query = "How many projects had I completed at first, before the summer?"
    assert _checks(OLDER + " [1].", query, _projects())["consistent_with_memory"][0]


def test_a_later_statement_about_another_thing_does_not_replace_the_value() -> None:
    facts = [*_projects()[:1], Fact("I've bought 7 new brushes for my classes", "stated", 2, "a/t2", OCTOBER)]
    assert _checks(OLDER + " [1].", PROJECTS, facts)["consistent_with_memory"][0]


CAFE_ASKED = "I need a quiet cafe in Bandung to work from, one with good wifi."
CAFE_REPLY = "A quiet cafe for that is Kopi Tuku Bandung, with fast wifi in the mornings."


def _cafe() -> list[Fact]:
    when = datetime(2026, 2, 10, 10, 0, tzinfo=UTC)
    return [
        Fact(CAFE_ASKED, "stated", 1, "alice/turn_000001", when),
        Fact(CAFE_REPLY, "assistant", 1, "alice/turn_000001", when),
    ]


def test_an_assistant_reply_quoted_as_the_users_fact_is_not_approved() -> None:
    query = "What is the name of the quiet cafe in Bandung I work from?"
    passed, detail = _checks(CAFE_REPLY.rstrip(".") + " [1].", query, _cafe())["about_what_was_asked"]
    assert not passed and "assistant" in detail


def test_the_assistant_reply_answers_what_the_assistant_recommended() -> None:
    query = "Which cafe in Bandung did you recommend to me?"
    assert _checks(CAFE_REPLY.rstrip(".") + " [1].", query, _cafe())["about_what_was_asked"][0]


def test_how_many_asks_about_what_is_counted_not_the_place_it_is_counted_in() -> None:
    from pandafs.tasks.grounding import focus_of

    assert focus_of("How many Korean restaurants have I tried in my city?") == ("korean", "restaurants")


def test_a_count_is_stated_by_an_ordinal_by_ones_and_by_a_count_noun() -> None:
    from pandafs.tasks.grounding import has_requested

    assert has_requested("count", NEWER, PROJECTS)
    restaurants = "How many Korean restaurants have I tried in my city?"
    assert has_requested(
        "count", "Korean restaurants are great, I've tried four different ones so far", restaurants
    )
    followers = "How many followers do I have on Instagram now?"
    assert has_requested("count", "I checked my follower count - I think I'm close to 1300", followers)
    assert not has_requested("count", "I checked my follower count yesterday", followers)


def test_a_question_naming_no_datum_is_held_to_the_newest_number_too() -> None:
    query = "What is my monthly rent?"
    older = "My monthly rent is 1200 dollars"
    facts = [
        Fact(older, "stated", 1, "alice/turn_000001", AUGUST),
        Fact("My landlord raised my monthly rent to 1350 dollars", "stated", 2, "a/t2", OCTOBER),
    ]
    passed, detail = _checks(older + " [1].", query, facts)["consistent_with_memory"]
    assert requested_kind(query) == "" and not passed and "1350" in detail
