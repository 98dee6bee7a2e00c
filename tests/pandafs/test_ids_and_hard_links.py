"""Two documents that share an id, and hard links, never carry a read or a write across
the user boundary: a user named `knowledge` must not have their private facts read by
another user as the global `knowledge/facts.md`, a document hard-linked to a file outside
the vault or to another user's memory is neither indexed nor served, and a log
hard-linked outside takes no appended line."""

from __future__ import annotations

import os
from pathlib import Path

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.config import set_setting

SECRET = "purplemoose"


def _publishers(vault: Vault, *names: str) -> None:
    set_setting(vault.root, "publishers", list(names))


def test_a_user_may_not_be_named_like_the_global_documents_ids(vault: Vault, cli) -> None:
    """`save --user knowledge` made `users/knowledge/facts.md`, id `knowledge/facts`: the
    id of the global `knowledge/facts.md`.  `retrieve users/knowledge/facts.md --user alice`
    then printed it (exit 0), as MCP's `retrieve_memory` did.  Now the name is refused,
    and a folder of that name made by hand holds no document: nothing of it is read."""
    for name in ("knowledge", "site"):
        refused = cli(
            "--root", vault.root, "save", f"my dentist is {SECRET}", "--user", name, "--type", "fact"
        )
        assert refused.code == 2 and "reserved" in refused.err and refused.err.count("\n") == 1, refused.err
    assert not (vault.root / "users" / "knowledge").exists()
    hand_made = vault.root / "users" / "knowledge" / "facts.md"
    hand_made.parent.mkdir(parents=True)
    hand_made.write_text(f"---\nscope: user\n---\n- my dentist is {SECRET}\n")
    (vault.root / "knowledge" / "facts.md").write_text("---\ntitle: Facts\n---\nWater is wet.\n")
    assert cli("--root", vault.root, "rebuild").code == 0
    asked = cli("--root", vault.root, "retrieve", "users/knowledge/facts.md", "--user", "alice")
    assert asked.code == 2 and SECRET not in asked.out + asked.err, asked.out
    found = cli("--root", vault.root, "search", SECRET, "--json")
    assert found.code == 0 and found.json == [], found.out
    assert (
        cli("--root", vault.root, "retrieve", "knowledge/facts", "--user", "alice").out.count("Water is wet")
        == 1
    )
    checked = cli("--root", vault.root, "verify", "--json")  # named, so the person can move it
    assert checked.code == 1 and [(p["path"], p["kind"]) for p in checked.json["problems"]] == [
        ("users/knowledge", "not_a_user")
    ]


def test_another_users_document_is_judged_by_its_own_path_not_its_id(vault: Vault) -> None:
    """`visible_to` looked the asked document up in the index by id and read the scope of
    whichever document came first; it now looks up the path asked for."""
    memory = Memory(vault)
    saved = memory.save(f"the spare key is under {SECRET}", user="bob", topic="home")
    memory.reconcile()
    assert memory.index.reader.lookup(saved.doc_path)["scope"] == "new"
    assert memory.index.reader.lookup(saved.doc_id) is None  # an id is not a path
    found = [h["doc_path"] for h in memory.search(SECRET, user="alice")]
    assert found == []


def test_a_hard_linked_document_is_never_read_indexed_or_served(
    vault: Vault,
    tmp_path: Path,
    cli,
) -> None:
    """A hard link has no link to see: `users/alice/memories/out.md` hard-linked to a
    file outside the vault was indexed and its text returned by search and retrieve, and
    `knowledge/x.md` hard-linked to bob's private memory was global to everyone.  A
    document with other names is now refused as a link is: not indexed, not read, and
    named by verify."""
    outside = tmp_path / "outside.md"
    outside.write_text(f"# Outside\nthe server password is {SECRET}\n")
    memories = vault.root / "users" / "alice" / "memories"
    memories.mkdir(parents=True)
    os.link(outside, memories / "out.md")
    bob = Memory(vault).save(f"bob's locker code is {SECRET}x", user="bob", topic="gym")
    os.link(vault.root / bob.doc_path, vault.root / "knowledge" / "locker.md")
    assert cli("--root", vault.root, "rebuild").code == 0
    for user in ("alice", "carol"):
        found = cli("--root", vault.root, "search", SECRET, "--user", user, "--json")
        assert found.code == 0 and found.json == [], (user, found.out)
    for path in ("users/alice/memories/out.md", "knowledge/locker.md", bob.doc_path):
        asked = cli("--root", vault.root, "retrieve", path, "--user", "alice")
        assert asked.code == 2 and SECRET not in asked.out + asked.err, (path, asked.out)
    named = cli("--root", vault.root, "verify", "--json")
    kinds = {p["path"]: p["kind"] for p in named.json["problems"]}
    assert {p: k for p, k in kinds.items() if k == "hard_link"} == {
        "users/alice/memories/out.md": "hard_link",
        "knowledge/locker.md": "hard_link",
        bob.doc_path: "hard_link",  # its other name is in knowledge/: it is not read either
    }, kinds


def test_a_log_with_another_name_outside_the_vault_is_not_appended(vault: Vault, tmp_path: Path, cli) -> None:
    """The sharing log hard-linked to a file outside the vault took the publish record
    (the save exited 0): a file found there with other names is not written."""
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    _publishers(vault, "carol")
    (vault.root / "observability").mkdir(exist_ok=True)
    os.link(outside, vault.root / "observability" / "sharing.jsonl")
    saved = cli("--root", vault.root, "save", "the ridge path is dry", "--user", "carol", "--scope", "global")
    assert saved.code != 0 and "hard link" in saved.err, saved.err
    assert outside.read_bytes() == before
    lock = vault.root / "indexes" / "fulltext.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.unlink(missing_ok=True)
    os.link(outside, lock)  # taking the lock writes the pid into it
    assert cli("--root", vault.root, "save", "tulips", "--user", "alice").code != 0
    assert outside.read_bytes() == before
