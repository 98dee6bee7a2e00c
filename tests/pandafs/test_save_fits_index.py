"""A save is acknowledged only for a document the index takes: refused above [index]
max_file_bytes, written once (not three times) below it, and then found."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pandafs.errors import BadInput
from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.config import set_setting

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _limit(vault: Vault, value: int) -> Vault:
    set_setting(vault.root, "max_file_bytes", value)
    return Vault.open(vault.root)


def test_a_long_text_of_few_words_is_written_once_and_found(vault: Vault) -> None:
    text = "bulbs " + "tulipa" * 280_000  # ~1.7 MB, two words: the whole text was the title
    saved = Memory(vault).save(text, user="alice", doc_type="memory", scope="user", now=NOW)
    size = (vault.root / saved.doc_path).stat().st_size
    assert saved.created and size < len(text) + 2_000
    assert [h["doc_id"] for h in Memory(vault).search("bulbs", user="alice")] == [saved.doc_id]


@pytest.mark.parametrize("doc_type", ["memory", "fact"])
def test_a_save_larger_than_the_index_takes_is_refused_and_nothing_written(
    vault: Vault, doc_type: str
) -> None:
    vault = _limit(vault, 100_000)
    memory = Memory(vault)
    memory.save("a small fact to start with", user="alice", doc_type="fact", now=NOW)
    facts = (vault.layout.user_dir("alice") / "facts.md").read_bytes()
    with pytest.raises(BadInput, match="too large to save"):
        memory.save("crocus " * 20_000, user="alice", doc_type=doc_type, now=NOW)
    assert (vault.layout.user_dir("alice") / "facts.md").read_bytes() == facts
    folder = vault.layout.memories_dir("alice")
    assert not folder.exists() or not list(folder.iterdir())


def test_cli_save_too_large_is_one_line_and_exit_2(cli, vault: Vault) -> None:
    vault = _limit(vault, 50_000)
    result = cli("--root", vault.root, "save", "iris " * 20_000, "--user", "alice")
    assert result.code == 2 and result.err.count("\n") == 1 and "too large to save" in result.err


def test_mcp_save_memory_too_large_is_an_error_not_created(vault: Vault) -> None:
    pytest.importorskip("mcp")
    import asyncio

    from mcp import Client

    from tests.support.mcp_stdio import server as mcp_server

    vault = _limit(vault, 50_000)
    server = mcp_server(vault.root, "alice")

    async def run() -> object:
        async with Client(server, read_timeout_seconds=60) as client:
            return await client.call_tool("save_memory", {"content": "lily " * 20_000, "type": "memory"})

    result = asyncio.run(run())
    text = " ".join(getattr(c, "text", "") for c in result.content)  # type: ignore[attr-defined]
    assert result.is_error and "too large to save" in text  # type: ignore[attr-defined]
    folder = vault.layout.memories_dir("alice")
    assert not folder.exists() or not list(folder.iterdir())
