"""`ask --now`: at every door that asks (CLI, inbox frontmatter, MCP) a question can be
asked at a given time; the turn happens then and every phase reads that time as the
present (here: the date the preference it saves is stamped with)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import orjson
import pytest

from events.log import read_log
from pandafs.inbox import Inbox
from pandafs.vault import Vault

ASKED = "2023-05-20T14:00:00Z"


def _turn(vault: Vault, user: str, turn: str = "turn_000001") -> tuple[dict[str, Any], str]:
    folder = vault.root / f"users/{user}/turns/{turn}"
    started = read_log(folder / "events.jsonl").records[0]["data"]
    created = orjson.loads((folder / "metadata.json").read_bytes())["created_at"]
    return started, created


def _assert_asked_then(vault: Vault, user: str) -> None:
    started, created = _turn(vault, user)
    assert started["asked_at"] == started["occurred_at"] == ASKED
    assert created.startswith("2023-05-20T14:00:00")
    preferences = (vault.root / f"users/{user}/preferences.md").read_text()
    assert "aisle seats" in preferences and "2023-05-20)" in preferences  # saved by the turn, at its time


def test_cli_ask_now(vault: Vault, cli: Any) -> None:
    done = cli(
        "--root", vault.root, "ask", "I prefer aisle seats", "--user", "alice", "--now", "2023-05-20T14:00"
    )
    assert done.code == 0, done.err
    _assert_asked_then(vault, "alice")

    plain = cli("--root", vault.root, "ask", "hello there", "--user", "alice", "--json")
    assert plain.code == 0, plain.err
    started, _ = _turn(vault, "alice", plain.json["turn_id"])
    assert "asked_at" not in started  # without --now: the clock's time, as before


def test_a_turn_asked_in_the_past_ages_from_when_it_was_asked_here(vault: Vault, cli: Any) -> None:
    from datetime import timedelta

    from events.log import read_events
    from pandafs.archive import find_candidates

    done = cli("--root", vault.root, "ask", "I prefer aisle seats", "--user", "alice", "--now", ASKED)
    assert done.code == 0, done.err
    entered = read_events(vault.root / "users/alice/turns/turn_000001/events.jsonl")[0].ts
    soon, _, _ = find_candidates(vault, now=entered + timedelta(days=1))
    assert soon == []  # dated 2023, asked a day ago: stays live
    later, _, _ = find_candidates(vault, now=entered + timedelta(days=400))
    assert [(c.user, c.turn) for c in later] == [("alice", "turn_000001")]


@pytest.mark.parametrize("bad", ["yesterday", "1200-01-01"])
def test_cli_ask_refuses_a_bad_now_and_writes_nothing(vault: Vault, cli: Any, bad: str) -> None:
    done = cli("--root", vault.root, "ask", "hi", "--user", "alice", "--now", bad)
    assert done.code == 2 and done.err.count("\n") == 1 and "--now" in done.err
    assert not (vault.root / "users/alice/turns").exists() or not any(
        (vault.root / "users/alice/turns").iterdir()
    )


def _drop(vault: Vault, rel: str, text: str) -> None:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    past = time.time() - 10
    os.utime(path, (past, past))


def test_inbox_frontmatter_now(vault: Vault) -> None:
    _drop(vault, "inbox/alice/seat.md", "---\nnow: 2023-05-20T14:00:00\n---\nI prefer aisle seats\n")
    _drop(vault, "inbox/alice/when.md", "---\nnow: the day after tomorrow\n---\nI prefer trains\n")
    with Inbox(vault, settle_s=0.2) as box:
        report = box.process_pending()
    assert [r.source for r in report.of("answered")] == ["inbox/alice/seat.md"]
    (rejected,) = report.of("rejected")
    assert rejected.source == "inbox/alice/when.md" and rejected.reason == "bad_frontmatter"
    assert "now:" in str(rejected.message)
    _assert_asked_then(vault, "alice")


def test_mcp_ask_now(vault: Vault) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from tests.support.mcp_stdio import server as mcp_server

    server = mcp_server(vault.root, "alice")

    async def run() -> Any:
        async with Client(server, read_timeout_seconds=60) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            asked = await client.call_tool(
                "ask", {"question": "I prefer aisle seats", "now": "2023-05-20T14:00:00"}
            )
            bad = await client.call_tool("ask", {"question": "hi", "now": "1200-01-01T00:00:00"})
            return tools, asked, bad

    tools, asked, bad = asyncio.run(run())
    assert "now" in tools["ask"].input_schema["properties"]
    assert not asked.is_error and asked.structured_content["turn_id"] == "turn_000001"
    assert bad.is_error and "out of range" in " ".join(getattr(c, "text", "") for c in bad.content)
    _assert_asked_then(vault, "alice")
