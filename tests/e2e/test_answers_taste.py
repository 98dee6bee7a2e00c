"""Questions about what the user likes and prefers, answered from a preference they saved.

A fresh vault, one preference saved as `pandafs save … --type preference` saves it, then
real turns on the offline backend with a fixed clock.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.chat import Chat

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _saved(vault: Vault, *texts: str) -> None:
    for text in texts:
        Memory(vault).save(text, user="alice", doc_type="preference", now=T0)


@pytest.mark.parametrize(
    "question",
    [
        "Which seat do I like?",  # "like" is answered by what the user prefers
        "What seat do I prefer?",
        "Which seats do I prefer?",
        "Where do I prefer to sit on planes?",  # sit ↔ seat: the index's thesaurus
        "Do I prefer aisle or window seats?",  # an alternative question: one of the two
    ],
)
def test_a_saved_preference_answers_a_question_about_its_subject(
    vault: Vault, chat: Chat, question: str
) -> None:
    _saved(vault, "I prefer aisle seats", "I like green tea")
    result = chat.ask(question)
    assert result.outcome == "APPROVE", result.answer
    assert "You prefer aisle seats" in result.answer and "tea" not in result.answer, result.answer


def test_an_alternative_question_is_answered_by_the_taste_that_names_one_of_the_two(
    vault: Vault, chat: Chat
) -> None:
    _saved(vault, "I prefer aisle seats", "I like green tea")
    result = chat.ask("Do I prefer tea or coffee?")
    assert result.outcome == "APPROVE", result.answer
    assert "green tea" in result.answer and "aisle" not in result.answer, result.answer


def test_a_taste_question_about_something_never_said_is_not_answered_by_another(
    vault: Vault, chat: Chat
) -> None:
    _saved(vault, "I prefer aisle seats", "I like green tea")
    result = chat.ask("Do I like window seats?")
    assert result.outcome != "APPROVE", result.answer
