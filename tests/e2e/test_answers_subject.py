"""Answers about what was asked: each example of dialogues written outside the project.

Real turns on the offline backend in a tmp vault with a fixed clock.  A wrong answer
must never be APPROVEd; when memory does not hold the answer the honest reply says so.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from events.documents import parse_document
from pandafs.memory.api import Memory
from pandafs.memory.store import parse_entries
from pandafs.pipeline import Pipeline
from pandafs.tasks.grounding import is_honest_unknown
from pandafs.turn_import.run import import_turns
from pandafs.vault import Vault
from tests.support.chat import Chat, import_history

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _not_a_wrong_approval(result: Any, wrong: str) -> None:
    assert not (wrong.lower() in result.answer.lower() and result.outcome == "APPROVE"), result.answer


def test_a_cat_does_not_answer_a_question_about_a_dog(chat: Chat) -> None:
    chat.ask("My cat is called Miso")
    result = chat.ask("what is my dog called?")
    _not_a_wrong_approval(result, "Miso")
    assert result.outcome != "APPROVE"
    assert is_honest_unknown(result.answer), result.answer


def test_a_career_change_answers_what_my_job_is_now(chat: Chat) -> None:
    chat.ask("I work as a nurse")
    chat.ask("I changed careers and now work as a pilot")
    result = chat.ask("what is my job now?")
    assert "pilot" in result.answer and result.outcome == "APPROVE", result.answer
    assert "work as a nurse" not in result.answer.split("(")[0]


def test_an_idiom_asking_for_the_job_is_answered_by_the_job(chat: Chat) -> None:
    # eval_answers' stated-fact dialogue: "for a living" is how the job is asked, not a
    # statement about living somewhere, so the home the user also gave does not answer it
    chat.ask("Remember that I work as a nurse")
    chat.ask("I live in Oslo")
    result = chat.ask("What do I do for a living?")
    assert "nurse" in result.answer and result.outcome == "APPROVE", result.answer


def test_what_i_do_for_fun_is_not_my_job(chat: Chat) -> None:
    chat.ask("I work as a nurse")
    result = chat.ask("What do I do for fun?")
    _not_a_wrong_approval(result, "nurse")
    chat.ask("I play chess on weekends")
    result = chat.ask("What do I do on weekends?")
    assert "chess" in result.answer and result.outcome == "APPROVE", result.answer


def test_sold_and_bought_answers_the_car_i_have(chat: Chat) -> None:
    chat.ask("My car is a blue Volvo")
    chat.ask("I sold the Volvo and bought a white Tesla")
    result = chat.ask("what car do I have?")
    _not_a_wrong_approval(result, "is a blue Volvo")
    assert "Tesla" in result.answer and result.outcome == "APPROVE", result.answer


def test_seats_do_not_answer_a_football_team_and_no_pipeline_text_leaks(chat: Chat) -> None:
    chat.ask("I prefer window seats on flights")
    result = chat.ask("what is my favourite football team?")
    _not_a_wrong_approval(result, "window seats")
    assert "Query type" not in result.answer and "Topic:" not in result.answer
    assert result.outcome != "APPROVE" and is_honest_unknown(result.answer), result.answer


def test_my_favourite_colour_is_found(chat: Chat) -> None:
    chat.ask("my favourite colour is teal")
    result = chat.ask("what is my favourite colour?")
    assert "teal" in result.answer and result.outcome == "APPROVE", result.answer


def test_how_much_was_that_desk_answers_with_its_price(chat: Chat) -> None:
    chat.ask("I'm looking at a standing desk for $349")
    chat.ask("Any tips for sleeping better?")
    result = chat.ask("how much was that desk?")
    assert "Query type" not in result.answer and "Decision:" not in result.answer
    assert "$349" in result.answer and result.outcome == "APPROVE", result.answer


def _saved_tea(vault: Vault) -> None:
    Memory(vault).save("My favourite tea is genmaicha.", user="alice", doc_type="preference", now=T0)


def test_a_saved_favourite_tea_is_not_answered_by_a_laptop(chat: Chat, vault: Vault) -> None:
    _saved_tea(vault)
    chat.ask("I prefer Lenovo laptops")
    result = chat.ask("What is my favourite tea?")
    _not_a_wrong_approval(result, "Lenovo")
    assert "genmaicha" in result.answer and result.outcome == "APPROVE", result.answer


def test_a_saved_favourite_tea_is_found_in_a_fresh_vault(chat: Chat, vault: Vault) -> None:
    _saved_tea(vault)
    result = chat.ask("What is my favourite tea?")
    assert "genmaicha" in result.answer and result.outcome == "APPROVE", result.answer


def test_my_budget_is_a_statement_that_is_kept_and_found(chat: Chat, vault: Vault) -> None:
    chat.ask("I prefer Lenovo laptops")
    said = chat.ask("My budget for a laptop is 800 dollars")
    _not_a_wrong_approval(said, "Lenovo")
    entries = [
        e.value
        for kind in ("facts", "preferences")
        for path in [getattr(vault.layout, kind)("alice")]
        if path.exists()
        for e in parse_entries(parse_document(path.read_text()).body)
    ]
    assert any("800" in e for e in entries), entries
    result = chat.ask("What is my budget for a laptop?")
    assert "800" in result.answer and result.outcome == "APPROVE", result.answer


def test_hello_there_is_a_greeting(chat: Chat) -> None:
    result = chat.ask("hello there")
    assert result.outcome != "CLARIFY" and "Which one do you mean" not in result.answer
    assert result.answer.startswith("Hello")


def test_a_request_in_an_imported_history_is_not_a_fact(chat: Chat, vault: Vault, tmp_path: Path) -> None:
    lines = [
        {
            "user": "alice",
            "external_id": "cc-1",
            "timestamp": "2026-02-10T10:00:00Z",
            "query": "The gooseberry widget test keeps failing on CI. Please make that change to the "
            "gooseberry widget test.",
            "response": "I raised the timeout in the gooseberry widget test to 45 seconds.",
        }
    ]
    source = tmp_path / "turns.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    import_turns(vault, source)
    result = chat.ask("What timeout did we set in the gooseberry widget test?")
    _not_a_wrong_approval(result, "Please make that change")
    assert result.outcome != "APPROVE" or "45" in result.answer, result.answer


def _import(vault: Vault, tmp_path: Path, pairs: list[tuple[str, str]]) -> None:
    stamps = [datetime(2026, 2, 10 + n, 10, 0, tzinfo=UTC) for n in range(len(pairs))]
    import_history(vault, tmp_path, pairs, stamps)


def test_what_the_assistant_said_answers_a_question_about_it_and_only_that(
    chat: Chat, vault: Vault, tmp_path: Path
) -> None:
    _import(
        vault,
        tmp_path,
        [
            (
                "I need a quiet cafe in Bandung to work from.",
                "A quiet cafe for that is Kopi Tuku Bandung, with fast wifi in the mornings.",
            ),
        ],
    )
    said = chat.ask("Which cafe in Bandung did you recommend to me in our previous conversation?")
    assert "Kopi Tuku" in said.answer, said.answer
    mine = chat.ask("What is my favourite cafe in Bandung?")
    _not_a_wrong_approval(mine, "Kopi Tuku")


def test_a_newer_tally_replaces_the_older_one(chat: Chat) -> None:
    chat.ask("I've watched 4 MCU films this year")
    chat.ask("Guess what, I've now watched 5 MCU films")
    result = chat.ask("How many MCU films have I watched?")
    _not_a_wrong_approval(result, "watched 4 MCU films this year")
    assert "5 MCU films" in result.answer, result.answer


def test_a_model_that_answers_junk_ends_the_turn_as_a_recorded_fail(vault: Vault) -> None:
    from events.log import read_events
    from pandafs.config import LLMConfig
    from pandafs.llm.openai_compat import OpenAIBackend
    from tests.support.openai_stub import OpenAIStub

    with OpenAIStub(lambda request: "Sure!!! {{{ not json") as stub:
        config = LLMConfig(backend="openai", base_url=stub.base_url, timeout_s=5, max_retries=0)
        backend = OpenAIBackend(config, api_key="")
        with Pipeline(vault, backend=backend, clock=lambda: T0) as pipeline:
            result = pipeline.ask("What is my job?", user="alice")
    assert result.outcome == "FAIL"
    assert result.failure and "did not return valid JSON" in result.failure
    events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
    failed = next(e.data for e in events if e.type == "phase_failed")
    assert failed.metrics is not None and failed.metrics.llm_calls == 2  # the try and its correction
    assert events[-1].type == "turn_completed"  # the summary's junk did not stop the turn ending


@pytest.mark.parametrize("verb", ["eat", "read", "wear", "drink"])
def test_what_i_like_to_do_is_answered_by_a_taste_for_doing_it(chat: Chat, verb: str) -> None:
    # eval_answers' stated-fact shape: a taste said earlier, then a question asking the
    # taste of one act ("like to eat"): "I like jazz" says nothing of eating
    chat.ask("I like jazz")
    result = chat.ask(f"What do I like to {verb}?")
    _not_a_wrong_approval(result, "jazz")
    chat.ask(f"I like to {verb} something new every week")
    result = chat.ask(f"What do I like to {verb}?")
    assert f"to {verb} something new" in result.answer and result.outcome == "APPROVE", result.answer


@pytest.mark.parametrize("first", ["I work as an architect", "I work at the Oslo office"])
def test_where_i_work_is_the_place_and_my_job_the_role(chat: Chat, first: str) -> None:
    # the same shape: "where" asks a place, which "I work as an architect" does not give;
    # the role and the place are two things said, neither replaces the other
    chat.ask(first)
    chat.ask("I work at the Oslo office" if "architect" in first else "I work as an architect")
    result = chat.ask("Where do I work?")
    assert result.answer.startswith("You work at the Oslo office"), result.answer
    assert "replaces" not in result.answer and result.outcome == "APPROVE", result.answer
    result = chat.ask("What's my job?")
    assert result.answer.startswith("You work as an architect") and result.outcome == "APPROVE", result.answer


@pytest.mark.parametrize(
    ("said", "question"),
    [
        ("I live near the river", "Where do I live?"),
        ("I work in a hospital", "Where do I work?"),
        ("I work for NovaTech", "Where do I work?"),  # "where do you work?" is answered by the employer
    ],
)
def test_a_place_or_an_employer_answers_where(chat: Chat, said: str, question: str) -> None:
    chat.ask(said)
    result = chat.ask(question)
    assert said.split(None, 2)[2] in result.answer and result.outcome == "APPROVE", result.answer


@pytest.mark.parametrize("question", ["Where do I work?", "Where do I study?", "Where do I shop?"])
def test_a_job_without_a_place_does_not_say_where(chat: Chat, question: str) -> None:
    chat.ask("I work as an architect")
    result = chat.ask(question)
    _not_a_wrong_approval(result, "architect")
    assert result.outcome != "APPROVE", result.answer
