"""The one rule for every file PandaFS reads: a regular file with one name, nothing else.

A hard link, a symbolic link, a FIFO, a device or a folder is never read, wherever it
is: documents, the inbox (and what it files away), import sources, PandaFS's own
files.  The inbox rejects such an entry with a reason and keeps no second name of
anyone's file; `verify` names each one, in `inbox/processed` and `inbox/rejected` too.
Real vaults, the real CLI, real links and FIFOs.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import orjson
import pytest

from events.errors import NotInVault
from events.fsio import open_outside_file, read_vault_bytes, read_vault_file, refusal
from pandafs.vault import Vault

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _secret_turn(cli, vault: Vault) -> Path:
    got = cli("--root", vault.root, "ask", "my bank pin hint is purplemoose", "--user", "bob")
    assert got.code == 0, got.err
    return vault.layout.turn_dir("bob", "turn_000001")


def _files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if not p.is_dir() or p.is_symlink())


def test_a_hard_link_in_the_inbox_to_another_users_turn_or_an_outside_file_is_rejected_unread(
    cli, vault: Vault, tmp_path: Path
) -> None:
    turn = _secret_turn(cli, vault)
    inbox = vault.root / "inbox" / "alice"
    inbox.mkdir(parents=True)
    os.link(turn / "ticket.md", inbox / "t.txt")
    os.link(turn / "events.jsonl", inbox / "e.txt")
    outside = tmp_path / "outside.txt"
    outside.write_text("zebracrypt\n")
    os.link(outside, inbox / "o.txt")

    got = cli("--root", vault.root, "watch", "--once", "--no-upkeep", "--json")

    outbox = vault.root / "outbox" / "alice"
    answers = [p.read_text() for p in outbox.glob("*")] if outbox.exists() else []
    assert not any("purplemoose" in a or "zebracrypt" in a for a in answers)
    found = cli("--root", vault.root, "search", "purplemoose zebracrypt", "--user", "alice", "--json")
    assert found.code == 0 and found.json == []
    assert not vault.layout.turns_dir("alice").exists() or not list(vault.layout.turns_dir("alice").iterdir())
    rejected = {r["source"]: r for r in got.json["inbox"]["rejected"]}
    assert set(rejected) == {"inbox/alice/t.txt", "inbox/alice/e.txt", "inbox/alice/o.txt"}
    assert {r["reason"] for r in rejected.values()} == {"hard_link"}
    # no second name is kept anywhere: only the explanations are there
    for path in _files_under(vault.root / "inbox"):
        assert refusal(path.lstat()) is None, path
    assert sorted(p.name for p in (vault.root / "inbox" / "rejected").iterdir()) == [
        "e.txt.error.md",
        "o.txt.error.md",
        "t.txt.error.md",
    ]
    error = (vault.root / "inbox" / "rejected" / "t.txt.error.md").read_text()
    assert "hard link" in error and "purplemoose" not in error
    assert (turn / "ticket.md").stat().st_nlink == 1 and outside.stat().st_nlink == 1
    assert cli("--root", vault.root, "verify").code == 0


def test_a_hard_link_to_a_facts_file_leaves_no_second_name_and_later_saves_work(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "save", "--type", "fact", "bob likes tea", "--user", "bob").code == 0
    facts = vault.root / "users" / "bob" / "facts.md"
    (vault.root / "inbox" / "alice").mkdir(parents=True)
    os.link(facts, vault.root / "inbox" / "alice" / "f.md")

    cli("--root", vault.root, "watch", "--once", "--no-upkeep")

    assert facts.stat().st_nlink == 1
    assert not (vault.root / "inbox" / "rejected" / "f.md.rejected").exists()
    assert (vault.root / "inbox" / "rejected" / "f.md.error.md").exists()
    assert (
        cli("--root", vault.root, "save", "--type", "fact", "bob drinks coffee too", "--user", "bob").code
        == 0
    )
    found = cli("--root", vault.root, "search", "tea", "--user", "bob", "--json")
    assert "users/bob/facts.md" in [h["doc_path"] for h in found.json]


def test_a_symlink_a_fifo_and_a_folder_named_as_queries_are_rejected_with_an_explanation(
    cli, vault: Vault
) -> None:
    _secret_turn(cli, vault)
    inbox = vault.root / "inbox" / "alice"
    inbox.mkdir(parents=True)
    (inbox / "s.md").symlink_to(vault.root / "users" / "bob" / "turns" / "turn_000001" / "ticket.md")
    os.mkfifo(inbox / "p.md")
    (inbox / "d.md").mkdir()
    (inbox / "d.md" / "inner.md").write_text("what is inside?\n")
    (inbox / "notes").mkdir()  # a plain folder of the user's own: left alone

    got = cli("--root", vault.root, "watch", "--once", "--no-upkeep", "--json")

    rejected = {r["source"]: r["reason"] for r in got.json["inbox"]["rejected"]}
    assert rejected == {
        "inbox/alice/s.md": "symlink",
        "inbox/alice/p.md": "not_a_file",
        "inbox/alice/d.md": "not_a_file",
    }
    names = sorted(p.name for p in (vault.root / "inbox" / "rejected").iterdir())
    assert names == ["d.md.rejected", "d.md.rejected.error.md", "p.md.error.md", "s.md.error.md"]
    # the folder is kept whole (renamed, nothing read); the link and the FIFO are gone
    assert (
        vault.root / "inbox" / "rejected" / "d.md.rejected" / "inner.md"
    ).read_text() == "what is inside?\n"
    assert sorted(p.name for p in inbox.iterdir()) == ["notes"]
    assert (vault.root / "users" / "bob" / "turns" / "turn_000001" / "ticket.md").exists()


@pytest.mark.parametrize(
    "where", ["inbox/processed/q.txt", "inbox/rejected/q.md.rejected", "outbox/alice/a.md"]
)
def test_verify_names_a_second_name_wherever_it_is(cli, vault: Vault, where: str) -> None:
    turn = _secret_turn(cli, vault)
    (vault.root / where).parent.mkdir(parents=True, exist_ok=True)
    os.link(turn / "ticket.md", vault.root / where)
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    named = {(p["path"], p["kind"]) for p in got.json["problems"]}
    assert (where, "hard_link") in named
    assert ("users/bob/turns/turn_000001/ticket.md", "hard_link") in named


def test_verify_calls_a_fifo_a_fifo(cli, vault: Vault) -> None:
    memories = vault.root / "users" / "alice" / "memories"
    memories.mkdir(parents=True)
    os.mkfifo(memories / "pipe.md")
    os.mkfifo(vault.root / "inbox" / "waiting.md")
    got = cli("--root", vault.root, "verify", "--json")
    kinds = {p["path"]: p["kind"] for p in got.json["problems"]}
    assert kinds["users/alice/memories/pipe.md"] == "fifo"
    assert kinds["inbox/waiting.md"] == "fifo"


def test_every_reader_refuses_a_second_name_not_only_documents(vault: Vault, tmp_path: Path) -> None:
    cache = vault.root / "indexes" / "learning" / "state.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "secret.json"
    outside.write_text('{"secret": 1}')
    os.link(outside, cache)
    assert read_vault_bytes(vault.root, cache) is None
    with pytest.raises(NotInVault, match="has other names"):
        read_vault_file(vault.root, "indexes/learning/state.json")


@pytest.mark.parametrize("kind", ["symlink", "hard_link", "fifo", "folder"])
def test_import_turns_refuses_a_source_the_rule_refuses(cli, vault: Vault, tmp_path: Path, kind: str) -> None:
    real = tmp_path / "turns.jsonl"
    line = {"user": "alice", "timestamp": "2024-01-01T09:00:00Z", "query": "q", "response": "r"}
    real.write_bytes(orjson.dumps(line) + b"\n")
    source = tmp_path / "source.jsonl"
    if kind == "symlink":
        source.symlink_to(real)
    elif kind == "hard_link":
        os.link(real, source)
    elif kind == "fifo":
        os.mkfifo(source)
    else:
        source.mkdir()
    got = cli("--root", vault.root, "import-turns", source)
    assert got.code == 2 and got.err.count("\n") == 1, got.err
    assert "not read" in got.err or "Directory" in got.err or "directory" in got.err
    assert not vault.layout.turns_dir("alice").exists() or not list(vault.layout.turns_dir("alice").iterdir())


@pytest.mark.parametrize("kind", ["symlink", "hard_link", "fifo"])
def test_import_of_an_export_refuses_a_source_the_rule_refuses(
    cli, vault: Vault, tmp_path: Path, kind: str
) -> None:
    real = tmp_path / "conversations.json"
    shutil.copy(FIXTURES / "chatgpt_conversations.json", real)
    source = tmp_path / "export.json"
    if kind == "symlink":
        source.symlink_to(real)
    elif kind == "hard_link":
        os.link(real, source)
    else:
        os.mkfifo(source)
    got = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice")
    assert got.code == 2 and got.err.count("\n") == 1 and "not read" in got.err, got.err


def test_a_linked_transcript_in_a_claude_code_folder_is_named_not_read(
    cli, vault: Vault, tmp_path: Path
) -> None:
    folder = tmp_path / "projects"
    shutil.copytree(FIXTURES / "claude_code", folder)
    secret = tmp_path / "secret.jsonl"
    secret.write_text(
        '{"type": "user", "uuid": "s1", "message": {"role": "user", "content": "zebracrypt"}}\n'
    )
    transcript = next(folder.rglob("5e55a000-*.jsonl"))
    (transcript.parent / "linked.jsonl").symlink_to(secret)
    got = cli("--root", vault.root, "import", "claude-code", folder, "--user", "alice", "--json")
    assert got.code == 1 and got.json["imported"] == 2
    assert [f["entry"] for f in got.json["failed"]] == ["transcript linked.jsonl"]
    texts = "".join(p.read_text() for p in vault.layout.turns_dir("alice").rglob("*.md"))
    assert "zebracrypt" not in texts


def test_open_outside_file_reads_a_pipe_handed_over_but_no_named_fifo(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"line\n")
    os.close(write_end)
    try:
        with open_outside_file(f"/dev/fd/{read_end}") as handle:
            assert handle.read() == b"line\n"
    finally:
        os.close(read_end)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotInVault, match="FIFO"):
        open_outside_file(fifo)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
