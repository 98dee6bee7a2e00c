"""The newest statement about what is asked answers how a thing stands now.

Real turns on the offline backend in a tmp vault: a history imported with dated turns
(as `import-turns` reads a chat export), then a question asked after it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.chat import Chat, import_history

START = datetime(2023, 8, 1, 9, 0, tzinfo=UTC)
ASKED = datetime(2023, 11, 8, 9, 0, tzinfo=UTC)
QUESTION = "How many projects have I completed since starting painting classes?"


def _history(vault: Vault, tmp_path: Path, pairs: list[tuple[str, str]]) -> None:
    import_history(vault, tmp_path, pairs, [START + timedelta(days=3 * n) for n in range(len(pairs))])


def _ask(vault: Vault, query: str) -> tuple[str, str]:
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: ASKED) as pipeline:
        result = pipeline.ask(query, user="alice")
    return result.answer, result.outcome


def test_a_later_value_in_the_history_answers_the_count(vault: Vault, tmp_path: Path) -> None:
    _history(
        vault,
        tmp_path,
        [
            (
                "I'm working on a sunset painting for my sister. I've completed 4 projects since "
                "starting painting classes, and I'm feeling pretty confident about my skills. "
                "How should I varnish it?",
                "Let the paint cure for a few weeks, then apply a removable varnish in thin coats.",
            ),
            (
                "I'm looking for ideas for my next painting. By the way, I just finished my 5th project "
                "since starting painting classes, and I'm feeling accomplished!",
                "Congratulations! You could try a still life or a cityscape at night.",
            ),
        ],
    )
    answer, outcome = _ask(vault, QUESTION)
    assert not ("4 projects" in answer and outcome == "APPROVE"), answer
    assert "5th project" in answer and outcome == "APPROVE", answer


def test_the_newest_statement_is_looked_for_beyond_the_gathered_context(vault: Vault, tmp_path: Path) -> None:
    painting = (
        "Since starting painting classes I've completed 4 projects, and I'm asking about painting classes, "
        "projects completed, how many projects, painting class homework and class projects again. "
    )
    older = [
        (painting * 3 + f"Question {n}: which brush should I use?", "A flat brush. " * 80) for n in range(12)
    ]
    newest = ("Guess what: my 5th project is done!", "Well done.")
    _history(vault, tmp_path, [*older, newest])
    answer, outcome = _ask(vault, QUESTION)
    assert not ("4 projects" in answer and outcome == "APPROVE"), answer
    assert "5th project" in answer, answer


def test_where_is_home_asks_where_i_live_now(chat: Chat) -> None:
    chat.ask("I live in Lisbon")
    chat.ask("I have moved to Prague")
    result = chat.ask("Where's home for me these days?")
    assert "Prague" in result.answer and result.outcome == "APPROVE", result.answer
