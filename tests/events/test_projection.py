"""Projection is a pure function: same events, same bytes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from events.documents import parse_document
from events.log import EventWriter, read_events
from events.projection import project_turn
from events.render import render_turn
from events.schema import (
    ContextBlock,
    ContextSynthesized,
    GateResult,
    PlanCreated,
    QueryAnalyzed,
    ReflectionDecided,
    ResponseSynthesized,
    SourceRef,
    Todo,
    ToolExecuted,
    TurnCompleted,
    TurnStarted,
    ValidationDecided,
)

NOW = datetime(2026, 11, 21, 22, 0, tzinfo=UTC)


def _pipeline_turn(path: Path) -> None:
    with EventWriter(path, user="alice", turn="turn_000002") as w:
        w.append(TurnStarted(query="how much was that one?", occurred_at=NOW))
        w.append(
            QueryAnalyzed(
                resolved_query="how much was the Lenovo LOQ 15?",
                query_type="followup",
                primary_topic="electronics.laptop",
                keywords=["lenovo", "price"],
            )
        )
        w.append(ReflectionDecided(decision="PROCEED", user_purpose="price check"))
        w.append(
            ContextSynthesized(
                blocks=[
                    ContextBlock(
                        heading="Relevant Prior Turns",
                        meta={"type": "turn_context", "relevant_turns": [1]},
                        columns=["Turn", "Summary"],
                        rows=[["1", "Lenovo LOQ 15 at $697 | cheapest"]],
                    )
                ],
                sources=[
                    SourceRef(
                        doc_id="alice/turn_000001",
                        doc_path="users/alice/turns/turn_000001/context.md",
                    )
                ],
                gates=[GateResult(gate="source_linking", passed=True)],
            )
        )
        w.append(
            PlanCreated(route="coordinator", todos=[Todo(id=1, text="search memory", status="completed")])
        )
        w.append(ToolExecuted(tool="memory.search", args={"query": "lenovo"}, ok=True, summary="1 hit"))
        w.append(ResponseSynthesized(answer="It was $697 [1]."))
        w.append(ValidationDecided(decision="APPROVE", reasons=["grounded"]))
        w.append(TurnCompleted(outcome="APPROVE", summary="price of the Lenovo", quality=0.8))


def test_same_events_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _pipeline_turn(path)
    first = render_turn(project_turn(read_events(path)))
    second = render_turn(project_turn(read_events(path)))
    assert first == second
    assert set(first) == {
        "context.md",
        "metadata.json",
        "query_analysis.json",
        "ticket.md",
        "toolresults.md",
        "metrics.json",
    }


def test_context_md_has_all_sections_and_wikilinks(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _pipeline_turn(path)
    text = render_turn(project_turn(read_events(path)))["context.md"].decode()
    parsed = parse_document(text)
    for n in range(7):
        assert f"## {n}. " in parsed.body
    assert "[[users/alice/turns/turn_000001/context|" in text
    assert "```yaml\n_meta:\n  type: turn_context\n" in text
    assert "$697 \\| cheapest" in text  # table cells escape pipes
    assert parsed.frontmatter["outcome"] == "APPROVE"
    assert parsed.frontmatter["primary_topic"] == "electronics.laptop"
