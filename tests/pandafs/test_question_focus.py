"""What a question asks about (its focus) and what it asks of it (its predicate)."""

from __future__ import annotations

import pytest

from pandafs.pipeline.synthesis import _tool_facts
from pandafs.pipeline.tools import finding_line
from pandafs.tasks.grounding import (
    Fact,
    answer_checks,
    asked_predicate,
    focus_of,
    is_about,
    requested_kind,
    settle,
)
from pandafs.tasks.schemas import ToolResultView


@pytest.mark.parametrize(
    ("query", "focus"),
    [
        ("What is the price of a Lenovo LOQ 15 gaming laptop?", ("lenovo", "loq")),
        ("What is the name of my hamster?", ("hamster",)),
        ("what kind of music do I like?", ("music",)),
        ("what is my favourite football team?", ("football", "team")),
    ],
)
def test_an_attribute_of_a_thing_is_asked_of_the_thing(query: str, focus: tuple[str, ...]) -> None:
    assert focus_of(query) == focus


def test_a_research_finding_keeps_its_title_as_what_it_is_about() -> None:
    line = finding_line(
        {"title": "Lenovo LOQ 15 Gaming Laptop", "price": "$697.00", "domain": "shop.example"}
    )
    [fact] = _tool_facts([ToolResultView(tool="internet_research", ok=True, summary="", text=line)])
    assert "$697.00" in fact.text and is_about(("lenovo", "loq"), fact.text)


HAMSTER = "Biscuit the Syrian hamster loves sunflower seeds and hides them in his cheeks."
NAMED = "My hamster is called Biscuit"


def _checks(answer: str, query: str) -> dict[str, bool]:
    facts = settle(
        [Fact(HAMSTER, "memory", 2, "alice/memories/m1"), Fact(NAMED, "memory", 1, "alice/facts")], query
    )
    return {c.gate: c.passed for c in answer_checks(answer, query, requested_kind(query), facts, query)}


@pytest.mark.parametrize(
    ("query", "predicate"),
    [
        ("What does my hamster Biscuit like to eat?", ("like", "eat")),
        ("Where does Biscuit the hamster hide his seeds?", ("hide", "seed")),
        ("What do Syrian hamsters like, sunflower seeds?", ("like", "sunflow", "seed")),
        ("What is my favourite tea?", ()),
        ("Which cafe did you recommend to me?", ()),  # what the assistant said answers it
    ],
)
def test_the_predicate_is_what_is_asked_of_the_subject(query: str, predicate: tuple[str, ...]) -> None:
    assert asked_predicate(query) == predicate


def test_an_answer_that_only_names_the_thing_does_not_answer_what_it_likes() -> None:
    query = "What does my hamster Biscuit like to eat?"
    assert not _checks("Your hamster is called Biscuit [1].", query)["about_what_was_asked"]
    assert _checks(HAMSTER.rstrip(".") + " [2].", query)["about_what_was_asked"]


def test_a_place_said_after_the_asked_verb_is_a_place() -> None:
    query = "Where does Biscuit the hamster hide his seeds?"
    assert all(_checks(HAMSTER.rstrip(".") + " [2].", query).values())
    assert not _checks("Biscuit loves seeds in general [2].", query)["requested_data"]


def test_yes_or_no_is_read_off_a_fact_that_states_the_whole_predicate() -> None:
    query = "Does my hamster Biscuit like sunflower seeds?"
    assert all(_checks("Yes — " + HAMSTER.rstrip(".") + " [2].", query).values())
    assert not _checks("Yes — your hamster is called Biscuit [1].", query)["about_what_was_asked"]
