"""`pandafs mcp`: the SDK's own client against a real `pandafs mcp` child process over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.mcp_stdio import server

mcp = pytest.importorskip("mcp")


def _session(root: Path, user: str, script: Any) -> Any:
    async def run() -> Any:
        from mcp import Client

        async with Client(server(root, user), read_timeout_seconds=60) as client:
            return await script(client)

    return asyncio.run(run())


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.fixture
def two_users(vault: Vault) -> Vault:
    memory = Memory(vault)
    memory.save("I prefer aisle seats on long flights", user="alice", doc_type="preference", key="seat")
    memory.save("Bob's hamster is called Kiwi", user="bob", doc_type="fact", key="hamster")
    (vault.root / "knowledge" / "trains.md").write_text(
        "---\ntitle: Night trains\nscope: global\n---\nNight trains from Vienna leave at 22:00.\n"
    )
    memory.reconcile()
    return vault


def test_tools_search_save_retrieve_ask_over_stdio(two_users: Vault) -> None:
    async def script(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        out["search"] = await client.call_tool("search_memory", {"query": "aisle seats", "limit": 5})
        out["global"] = await client.call_tool("search_memory", {"query": "night trains Vienna"})
        out["save"] = await client.call_tool(
            "save_memory", {"content": "My cat is called Tom", "type": "fact", "key": "cat"}
        )
        out["again"] = await client.call_tool(
            "save_memory", {"content": "My cat is called Tom", "type": "fact", "key": "cat"}
        )
        out["retrieve"] = await client.call_tool("retrieve_memory", {"identifier": "alice/facts"})
        out["ask"] = await client.call_tool("ask", {"question": "What is my cat called?"})
        out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        out["read"] = await client.read_resource("pandafs://vault/users/alice/facts.md")
        return out

    out = _session(two_users.root, "alice", script)
    tools = out["tools"]
    assert set(tools) == {
        "search_memory",
        "save_memory",
        "retrieve_memory",
        "ask",
        "edit_memory",
        "delete_memory",
        "forget",
    }
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["retrieve_memory"].annotations.read_only_hint is True
    for name in ("save_memory", "ask"):
        assert tools[name].annotations.read_only_hint is False
        assert tools[name].annotations.destructive_hint is False
    assert all("user" not in t.input_schema["properties"] for t in tools.values())

    hits = out["search"].structured_content["result"]
    assert hits and hits[0]["doc_id"] == "alice/preferences"
    assert all(h["user"] in (None, "alice") for h in hits)
    assert any(h["doc_id"] == "knowledge/trains" for h in out["global"].structured_content["result"])

    assert not out["save"].is_error
    assert out["save"].structured_content == {
        "doc_id": "alice/facts",
        "doc_path": "users/alice/facts.md",
        "created": True,
        "renewed": False,
    }
    assert out["again"].structured_content["created"] is False  # the same statement adds nothing
    facts = (two_users.root / "users/alice/facts.md").read_text()
    assert facts.count("My cat is called Tom") == 1  # written by Memory.save, the CLI's code

    assert "My cat is called Tom" in out["retrieve"].structured_content["content"]

    answer = out["ask"].structured_content
    assert answer["user"] == "alice" and answer["outcome"] == "APPROVE"
    assert "Tom" in answer["answer"]
    assert (two_users.root / answer["context_path"]).is_file()

    assert "pandafs://vault/users/alice/facts.md" in out["resources"]
    assert "pandafs://vault/knowledge/trains.md" in out["resources"]
    assert not any("/bob/" in uri for uri in out["resources"])
    assert "My cat is called Tom" in out["read"].contents[0].text


def test_another_users_documents_are_refused(two_users: Vault, tmp_path: Path) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("---\ntitle: outside\n---\nthe vault must not leak this\n")
    memories = two_users.root / "users/alice/memories"
    memories.mkdir(parents=True, exist_ok=True)
    (memories / "link.md").symlink_to(secret)
    bob_facts = (two_users.root / "users/bob/facts.md").read_bytes()
    with open(os.fsencode(two_users.root / "knowledge") + b"/caf\xe9.md", "wb") as handle:
        handle.write(b"a name that is not UTF-8 lists nothing and stops nothing\n")

    async def script(client: Any) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        out: dict[str, Any] = {}
        out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        out["as_bob"] = await client.call_tool("search_memory", {"query": "hamster Kiwi", "user": "bob"})
        out["search"] = await client.call_tool("search_memory", {"query": "hamster Kiwi"})
        out["save_as_bob"] = await client.call_tool("save_memory", {"content": "x y z", "user": "bob"})
        out["misnamed"] = await client.call_tool("forget", {"query": "hamster", "confirm": True})
        for name, ident in [
            ("by_id", "bob/facts"),
            ("by_path", "users/bob/facts.md"),
            ("traversal", "users/alice/../bob/facts.md"),
            ("absolute", str(two_users.root / "users/bob/facts.md")),
            ("symlink", "users/alice/memories/link.md"),
        ]:
            out[name] = await client.call_tool("retrieve_memory", {"identifier": ident})
        reads = {}
        for uri in ("pandafs://vault/users/bob/facts.md", "pandafs://vault/users/alice/memories/link.md"):
            try:
                reads[uri] = await client.read_resource(uri)
            except MCPError as exc:
                reads[uri] = exc
        out["reads"] = reads
        return out

    out = _session(two_users.root, "alice", script)
    assert out["as_bob"].is_error and "user" in _text(out["as_bob"])
    assert out["save_as_bob"].is_error
    assert "pandafs://vault/knowledge/trains.md" in out["resources"]
    assert not any("caf" in uri for uri in out["resources"])
    # a misnamed argument is named with what the tool takes, not blamed on the user binding
    misnamed = _text(out["misnamed"])
    assert out["misnamed"].is_error and "query_or_id" in misnamed and "acts only as" not in misnamed
    assert out["search"].structured_content["result"] == []  # bob's fact is not alice's to find
    for name in ("by_id", "by_path", "traversal", "absolute", "symlink"):
        assert out[name].is_error, name
        assert "Kiwi" not in _text(out[name]) and "leak" not in _text(out[name])
        expected = "symbolic link" if name == "symlink" else "visible to alice"
        assert expected in _text(out[name]), (name, _text(out[name]))
    for uri, result in out["reads"].items():
        assert isinstance(result, Exception), uri
    assert (two_users.root / "users/bob/facts.md").read_bytes() == bob_facts
    assert not (two_users.root / "users/bob/memories").exists()


def test_help_documents_transports_and_user_binding(cli) -> None:
    result = cli("mcp", "--help")
    assert result.code == 0
    for words in ("--transport", "stdio", "http", "--user", "loopback", "acts as"):
        assert words in result.out


def test_http_refuses_a_public_host(cli, vault: Vault) -> None:
    result = cli("--root", vault.root, "mcp", "--user", "alice", "--transport", "http", "--host", "0.0.0.0")
    assert result.code == 2 and "loopback" in result.err


def test_streamable_http_on_loopback(two_users: Vault) -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [
        "--root",
        str(two_users.root),
        "mcp",
        "--user",
        "alice",
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    env = {k: v for k, v in os.environ.items() if k != "PANDAFS_ROOT"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pandafs", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as conn:
                if conn.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        async def run() -> Any:
            from mcp import Client

            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=60) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                hits = await client.call_tool("search_memory", {"query": "aisle seats"})
                return names, hits

        names, hits = asyncio.run(run())
        assert names == {
            "search_memory",
            "save_memory",
            "retrieve_memory",
            "ask",
            "edit_memory",
            "delete_memory",
            "forget",
        }
        assert hits.structured_content["result"][0]["doc_id"] == "alice/preferences"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_search_takes_the_memory_tools_arguments_dates_included(two_users: Vault) -> None:
    from pandafs.memory.args import SearchArgs

    async def script(client: Any) -> dict[str, Any]:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        query = {"query": "aisle seats"}
        return {
            "schema": tools["search_memory"].input_schema,
            "after": await client.call_tool("search_memory", {**query, "after": "2000-01-01T00:00:00Z"}),
            "before": await client.call_tool("search_memory", {**query, "before": "2000-01-01T00:00:00Z"}),
            "bad": await client.call_tool("search_memory", {**query, "after": "next tuesday"}),
        }

    out = _session(two_users.root, "alice", script)
    assert set(out["schema"]["properties"]) == set(SearchArgs.model_fields)
    assert "users/alice/preferences.md" in _text(out["after"])  # saved after 2000
    assert "preferences" not in _text(out["before"]) and not out["before"].is_error
    assert out["bad"].is_error


def test_the_resource_list_names_only_what_reading_serves_and_save_refuses_a_nul(
    two_users: Vault, tmp_path: Path
) -> None:
    memories = two_users.root / "users" / "alice" / "memories"
    memories.mkdir(parents=True, exist_ok=True)
    (memories / "trip.md").write_text("A trip to Lisbon in May.\n")
    outside = tmp_path / "outside.md"
    outside.write_text("zebracrypt\n")
    os.link(outside, memories / "linked.md")
    (memories / "photo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    (memories / "nul.md").write_bytes(b"text with a \x00 byte\n")

    async def script(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
        out["save"] = await client.call_tool("save_memory", {"content": "raw \x00 byte", "type": "fact"})
        return out

    out = _session(two_users.root, "alice", script)
    listed = {uri.rsplit("/", 1)[-1] for uri in out["resources"]}
    assert "trip.md" in listed
    assert not listed & {"linked.md", "photo.md", "nul.md"}
    assert out["save"].is_error and "NUL" in _text(out["save"])
    facts = two_users.root / "users" / "alice" / "facts.md"
    assert not facts.exists() or "\x00" not in facts.read_text()
