"""The MCP door of edit, delete and forget: the SDK's client against a real `pandafs mcp` child."""

from __future__ import annotations

from typing import Any

import pytest

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.cli.test_mcp import _session

mcp = pytest.importorskip("mcp")


@pytest.fixture
def saved(vault: Vault) -> Vault:
    memory = Memory(vault)
    memory.save("Prefers window seats", user="alice", doc_type="preference", key="seat")
    memory.save("Keeps the spare key under the grumbleweed pot", user="alice")
    memory.save("Bob's hamster is called Kiwi", user="bob", doc_type="fact", key="hamster")
    return vault


def _memory_id(vault: Vault, user: str) -> str:
    (path,) = (vault.root / f"users/{user}/memories").glob("*.md")
    return f"{user}/memories/{path.stem}"


def test_edit_delete_forget_over_stdio(saved: Vault) -> None:
    memory_id = _memory_id(saved, "alice")
    bob_facts = (saved.root / "users/bob/facts.md").read_bytes()

    async def script(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"tools": {t.name: t for t in (await client.list_tools()).tools}}
        out["edit"] = await client.call_tool(
            "edit_memory", {"identifier": "alice/preferences", "entry": "seat", "text": "Prefers aisle seats"}
        )
        out["edit_bob"] = await client.call_tool(
            "edit_memory", {"identifier": "bob/facts", "entry": "1", "text": "hacked"}
        )
        out["delete_bob"] = await client.call_tool("delete_memory", {"identifier": "bob/facts", "entry": "1"})
        out["dry"] = await client.call_tool("forget", {"query_or_id": "grumbleweed"})
        out["search_before"] = await client.call_tool("search_memory", {"query": "grumbleweed"})
        out["forget"] = await client.call_tool("forget", {"query_or_id": "grumbleweed", "confirm": True})
        out["search_after"] = await client.call_tool("search_memory", {"query": "grumbleweed"})
        out["retrieve_after"] = await client.call_tool("retrieve_memory", {"identifier": memory_id})
        out["delete"] = await client.call_tool(
            "delete_memory", {"identifier": "alice/preferences", "entry": "1"}
        )
        return out

    out = _session(saved.root, "alice", script)
    tools = out["tools"]
    for name in ("edit_memory", "delete_memory", "forget"):
        assert tools[name].annotations.read_only_hint is False
        assert tools[name].annotations.destructive_hint is True
        assert "user" not in tools[name].input_schema["properties"]
    assert "confirm" in tools["forget"].input_schema["properties"]

    assert not out["edit"].is_error, out["edit"]
    assert out["edit"].structured_content["entry"] == 1, out["edit"]
    prefs = (saved.root / "users/alice/preferences.md").read_text()
    assert "aisle" not in prefs  # deleted at the end
    assert out["edit_bob"].is_error and out["delete_bob"].is_error
    assert (saved.root / "users/bob/facts.md").read_bytes() == bob_facts

    dry = out["dry"].structured_content
    assert dry["dry_run"] is True and f"users/{memory_id}.md" in dry["files"]
    assert "confirm" in dry["next"]
    assert out["search_before"].structured_content["result"]  # the dry run changed nothing
    assert out["forget"].structured_content["ok"] is True
    assert out["search_after"].structured_content["result"] == []
    assert out["retrieve_after"].is_error
    assert not out["delete"].is_error
    assert "Prefers aisle seats" in (saved.root / "archive/expired/users/alice/preferences.md").read_text()
    held = [p for p in saved.root.rglob("*") if p.is_file() and b"grumbleweed" in p.read_bytes().lower()]
    assert [p for p in held if "users/alice" in p.as_posix()] == []
