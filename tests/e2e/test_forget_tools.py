"""The Planner's door of edit, delete and forget: a turn whose model calls the tools (an
OpenAI-compatible stub answering as the offline rules, but routing to these tools)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from events.log import read_events
from pandafs.config import LLMConfig
from pandafs.llm.openai_compat import OpenAIBackend
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from tests.support.openai_stub import OpenAIStub, StubReply
from tests.support.pipeline_llm import offline_responder, task_of, tool_call

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _turn(vault: Vault, question: str, calls: list[tuple[str, dict[str, Any]]]) -> Any:
    def respond(request: dict[str, Any]) -> str | StubReply:
        task = task_of(request)
        if task == "plan":
            reply = json.loads(str(offline_responder(request)))
            reply["route"] = "coordinator"
            return json.dumps(reply)
        if task == "call_tools":
            return StubReply(content="", tool_calls=[tool_call(i, n, a) for i, (n, a) in enumerate(calls, 1)])
        return offline_responder(request)

    stub = OpenAIStub(respond)
    with stub:
        config = LLMConfig(
            backend="openai", base_url=stub.base_url, timeout_s=5, max_retries=1, backoff_s=0.01
        )
        backend = OpenAIBackend(config, api_key="")
        with Pipeline(vault, backend=backend, clock=lambda: T0 + timedelta(hours=1)) as pipeline:
            result = pipeline.ask(question, user="alice")
    events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
    return result, {e.data.tool: e.data for e in events if e.type == "tool_executed"}


def test_planner_edits_and_deletes_only_this_users_documents(vault: Vault) -> None:
    memory = Memory(vault)
    memory.save("Prefers window seats", user="alice", doc_type="preference", key="seat", now=T0)
    memory.save("Drinks oat milk", user="alice", doc_type="preference", now=T0)
    memory.save("Bob's hamster is called Kiwi", user="bob", doc_type="fact", key="hamster", now=T0)
    bob = (vault.root / "users/bob/facts.md").read_bytes()
    _result, executed = _turn(
        vault,
        "Which seats do I like?",
        [
            (
                "edit_memory",
                {"identifier": "alice/preferences", "entry": "seat", "text": "Prefers aisle seats"},
            ),
            ("delete_memory", {"identifier": "alice/preferences", "entry": "2"}),
            ("edit_memory", {"identifier": "bob/facts", "entry": "1", "text": "hacked"}),
        ],
    )
    assert executed["edit_memory"].ok is False  # the last call by name: bob's, refused
    assert executed["delete_memory"].ok is True
    prefs = (vault.root / "users/alice/preferences.md").read_text()
    assert "Prefers aisle seats" in prefs, prefs
    assert "window" not in prefs and "oat milk" not in prefs, prefs
    assert (vault.root / "users/bob/facts.md").read_bytes() == bob


def test_planner_forget_is_a_dry_run_until_confirmed_then_runs_after_the_turn(vault: Vault) -> None:
    Memory(vault).save("The spare key is under the grumbleweed pot", user="alice", now=T0)
    _result, executed = _turn(
        vault,
        "what would forgetting grumbleweed change?",
        [("forget", {"query_or_id": "grumbleweed"})],
    )
    assert executed["forget"].ok and executed["forget"].summary.startswith("would change")
    assert list((vault.root / "users/alice/memories").glob("*.md"))  # nothing changed yet
    result, executed = _turn(
        vault,
        "please forget grumbleweed for good",
        [("forget", {"query_or_id": "grumbleweed", "confirm": True})],
    )
    assert executed["forget"].ok and result.outcome == "APPROVE"
    held = [
        p.relative_to(vault.root).as_posix()
        for p in vault.root.rglob("*")
        if p.is_file() and b"grumbleweed" in p.read_bytes().lower()
    ]
    assert [p for p in held if "alice" in p] == []  # this turn too: it quoted the word
    assert Memory(vault).search("grumbleweed", user="alice", include_expired=True) == []
