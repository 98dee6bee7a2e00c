"""The vault is the boundary: no reader follows a symlink or reads outside the root,
and retrieve decides ownership from the path, before it reads or counts anything."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from events.errors import NotInVault
from pandafs.archive import archive_turns
from pandafs.errors import BadInput
from pandafs.memory.api import Memory
from pandafs.turn_import import import_turns
from pandafs.vault import Vault
from tests.conftest import run_pandafs
from tests.support.turns import allocate_turns

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
PASSWD = "root:x:0:0:root:/root:/bin/bash\n"


@pytest.fixture
def two_users(vault: Vault, tmp_path: Path, cli) -> dict[str, Path]:
    """bob has a secret memory; an outside folder holds a secret file and a folder."""
    got = cli("--root", vault.root, "save", "my bank pin hint is purplemoose", "--user", "bob", "--json")
    assert got.code == 0, got.err
    cli("--root", vault.root, "save", "alice likes green tea", "--user", "alice")
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "passwd").write_text(PASSWD)
    (outside / "dir" / "note.md").write_text("giraffe secret outside the vault\n")
    (outside / "zebra.md").write_text("zebra secret outside the vault\n")
    return {"bob_memory": vault.root / got.json["doc_path"], "outside": outside}


def _plant_links(vault: Vault, where: dict[str, Path]) -> None:
    memories = vault.layout.memories_dir("alice")
    (memories / "leak.md").symlink_to(where["outside"] / "passwd")
    (memories / "bobs.md").symlink_to(where["bob_memory"])
    (memories / "linked").symlink_to(where["outside"] / "dir", target_is_directory=True)
    vault.layout.knowledge.mkdir(exist_ok=True)
    (vault.layout.knowledge / "published.md").symlink_to(where["outside"] / "zebra.md")


def _ids(hits: list[dict]) -> list[str]:
    return [h["doc_id"] for h in hits]


def test_rebuild_indexes_no_symlink_and_names_each(vault: Vault, two_users, cli) -> None:
    _plant_links(vault, two_users)
    got = cli("--root", vault.root, "rebuild", "--json")
    assert got.code == 0, got.err
    skipped = {s["path"]: s["reason"] for s in got.json["skipped"]}
    assert set(skipped) == {
        "users/alice/memories/leak.md",
        "users/alice/memories/bobs.md",
        "users/alice/memories/linked",
        "knowledge/published.md",
    }
    assert all("symbolic link" in reason for reason in skipped.values())
    for query, user in (
        ("root", "alice"),
        ("purplemoose", "alice"),
        ("zebra", "carol"),
        ("giraffe", "alice"),
    ):
        hits = cli("--root", vault.root, "search", query, "--user", user, "--json")
        assert hits.code == 0 and hits.json == [], (query, hits.out)
    assert "root:x:0:0" not in cli("--root", vault.root, "search", "root", "--user", "alice").out
    assert _ids(cli("--root", vault.root, "search", "purplemoose", "--user", "bob", "--json").json) == [
        "bob/" + two_users["bob_memory"].relative_to(vault.layout.user_dir("bob")).as_posix()[:-3]
    ]


def test_incremental_indexing_and_reconcile_skip_symlinks(vault: Vault, two_users) -> None:
    _plant_links(vault, two_users)
    memory = Memory(vault)
    report = memory.index_paths(
        [
            "users/alice/memories/leak.md",
            "users/alice/memories/bobs.md",
            "users/alice/memories/linked/note.md",
            "knowledge/published.md",
        ]
    )
    assert report.indexed == 0
    assert {s.path for s in memory.reconcile().skipped} >= {"users/alice/memories/leak.md"}
    assert memory.search("giraffe", user="alice", now=NOW) == []
    assert memory.search("zebra", user="carol", now=NOW) == []
    assert memory.search("purplemoose", user="alice", now=NOW) == []


def test_the_watchers_folder_rescan_does_not_enter_a_linked_folder(vault: Vault, two_users) -> None:
    from pandafs.watch import reconcile_dirs

    _plant_links(vault, two_users)
    memory = Memory(vault)
    assert reconcile_dirs(memory, ["users/alice/memories/linked"]).indexed == 0  # a folder event on the link
    assert memory.search("giraffe", user="alice", now=NOW) == []
    reconcile_dirs(memory, ["users/alice/memories", "knowledge"])
    assert memory.search("root", user="alice", now=NOW) == []
    assert memory.search("zebra", user="alice", now=NOW) == []


def test_a_document_swapped_for_a_symlink_leaves_the_index(vault: Vault, two_users) -> None:
    memory = Memory(vault)
    note = vault.layout.memories_dir("alice") / "note.md"
    note.write_text("a harmless note about kiwis\n")
    memory.index_paths(["users/alice/memories/note.md"])
    assert _ids(memory.search("kiwis", user="alice", now=NOW)) == ["alice/memories/note"]
    note.unlink()
    note.symlink_to(two_users["bob_memory"])
    memory.reconcile()
    assert memory.search("kiwis purplemoose", user="alice", now=NOW) == []


def test_a_symlinked_user_or_turn_folder_is_not_walked(vault: Vault, two_users, cli) -> None:
    (vault.layout.users_dir / "mallory").symlink_to(vault.layout.user_dir("bob"), target_is_directory=True)
    assert "mallory" not in vault.layout.users()
    got = cli("--root", vault.root, "rebuild", "--json")
    assert "users/mallory" in {s["path"] for s in got.json["skipped"]}
    assert cli("--root", vault.root, "search", "purplemoose", "--user", "mallory", "--json").json == []


def test_ask_does_not_answer_from_a_link_to_another_users_memory(vault: Vault, two_users, cli) -> None:
    _plant_links(vault, two_users)
    cli("--root", vault.root, "rebuild")
    (vault.layout.user_dir("alice") / "preferences.md").symlink_to(vault.layout.user_dir("bob") / "facts.md")
    cli("--root", vault.root, "save", "my pin hint is purplemoose", "--user", "bob", "--type", "fact")
    got = cli("--root", vault.root, "ask", "what is my bank pin hint?", "--user", "alice", "--json")
    assert got.code == 0, got.err
    context = (vault.root / got.json["context_path"]).read_text()
    assert "purplemoose" not in got.json["answer"] and "purplemoose" not in context


def test_verify_names_every_symlink(vault: Vault, two_users, cli) -> None:
    _plant_links(vault, two_users)
    cli("--root", vault.root, "rebuild")
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    links = {p["path"] for p in got.json["problems"] if p["kind"] == "symlink"}
    assert links == {
        "users/alice/memories/leak.md",
        "users/alice/memories/bobs.md",
        "users/alice/memories/linked",
        "knowledge/published.md",
    }
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 1 and {p["path"] for p in repaired.json["problems"]} == links
    assert os.path.islink(vault.layout.memories_dir("alice") / "leak.md")  # never deleted or rewritten


def test_retrieve_of_a_symlink_is_one_line_exit_2(vault: Vault, two_users, cli) -> None:
    _plant_links(vault, two_users)
    for target in (
        "users/alice/memories/leak.md",
        "knowledge/published.md",
        "users/alice/memories/linked/note.md",
    ):
        got = cli("--root", vault.root, "retrieve", target)
        assert got.code == 2, (target, got.out, got.err)
        assert got.out == "" and len(got.err.strip().splitlines()) == 1 and "Traceback" not in got.err
        assert "root:x" not in got.err and "symbolic link" in got.err


def test_read_vault_file_refuses_links_and_escapes(tmp_path: Path) -> None:
    from events.errors import NotInVault
    from events.fsio import read_vault_file

    root = tmp_path / "v"
    (root / "a").mkdir(parents=True)
    (root / "a" / "ok.md").write_text("fine")
    (tmp_path / "secret.md").write_text("secret")
    (root / "a" / "link.md").symlink_to(tmp_path / "secret.md")
    (root / "b").symlink_to(root / "a", target_is_directory=True)  # a link inside the vault
    os.mkfifo(root / "a" / "fifo.md")
    assert read_vault_file(root, "a/ok.md")[0] == b"fine"
    for rel in ("a/link.md", "b/ok.md", "../secret.md", "/etc/passwd", "a/fifo.md", "a/./ok.md"):
        with pytest.raises(NotInVault):
            read_vault_file(root, rel)
    with pytest.raises(FileNotFoundError):
        read_vault_file(root, "a/missing.md")


# --- retrieve by path ownership ---------------------------------------------------------


def test_retrieve_checks_owner_from_the_path_not_frontmatter(vault: Vault, cli) -> None:
    bob = vault.layout.memories_dir("bob")
    bob.mkdir(parents=True)
    (bob / "plain.md").write_text("# Bob's plain note\n\nbob's locker code is 7781\n")  # no `user:`
    (bob / "claims.md").write_text("---\nuser: alice\n---\nbob's note claiming alice owns it\n")
    memory = Memory(vault)
    memory.reconcile()
    for doc in ("bob/memories/plain", "users/bob/memories/plain.md", "bob/memories/claims"):
        with pytest.raises(BadInput, match="visible to alice"):
            memory.retrieve(doc, user="alice")
        got = cli("--root", vault.root, "retrieve", doc, "--user", "alice")
        assert got.code == 2 and "7781" not in got.out + got.err and "Traceback" not in got.err
    assert "7781" in memory.retrieve("bob/memories/plain", user="bob").content
    assert "7781" in cli("--root", vault.root, "retrieve", "bob/memories/plain").out  # the owner's admin view
    (vault.layout.knowledge).mkdir(exist_ok=True)
    (vault.layout.knowledge / "tea.md").write_text("green tea brews at 80 degrees\n")
    assert "80 degrees" in memory.retrieve("knowledge/tea", user="alice").content


def test_the_retrieve_tool_uses_path_ownership(vault: Vault) -> None:
    from pandafs.pipeline.context import TurnContext
    from pandafs.pipeline.tools import run_tool

    bob = vault.layout.memories_dir("bob")
    bob.mkdir(parents=True)
    (bob / "plain.md").write_text("bob's locker code is 7781\n")
    memory = Memory(vault)
    ctx = TurnContext(
        vault=vault, memory=memory, backend=None, user="alice", turn="turn_000001", clock=lambda: NOW
    )
    outcome = run_tool(ctx, "retrieve_memory", {"identifier": "bob/memories/plain"})
    assert not outcome.ok and "7781" not in f"{outcome.result} {outcome.error}"


def test_denied_retrieves_of_an_archived_turn_change_nothing(vault: Vault, tmp_path: Path, cli) -> None:
    source = tmp_path / "bob.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    source.write_bytes(
        orjson.dumps({"user": "bob", "timestamp": old, "query": "my axolotl tank secret", "response": "ok"})
        + b"\n"
    )
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    assert archive_turns(vault, now=NOW).archived == 1
    expansions = vault.layout.archive / "expansions.jsonl"
    before = expansions.read_bytes() if expansions.exists() else b""
    stub = vault.root / "archive/stubs/bob/turn_000001.md"
    for _ in range(3):
        with pytest.raises(BadInput):
            memory.retrieve("bob/turn_000001", user="alice", now=NOW)
        got = cli(
            "--root", vault.root, "retrieve", "bob/turn_000001", "--user", "alice", "--now", NOW.isoformat()
        )
        assert got.code == 2 and "axolotl" not in got.out
    assert (expansions.read_bytes() if expansions.exists() else b"") == before
    assert stub.exists() and not vault.layout.turn_dir("bob", "turn_000001").exists()
    assert memory.retrieve("bob/turn_000001", user="bob", now=NOW).archived  # bob's own: expands


def test_a_linked_turn_folder_never_reaches_the_tiers(vault: Vault, cli) -> None:
    bob = cli("--root", vault.root, "ask", "my locker code is purplemoose 7781", "--user", "bob", "--json")
    assert bob.code == 0, bob.err
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    bob_turn = (vault.root / bob.json["context_path"]).parent
    (vault.layout.turns_dir("alice") / "turn_000002").symlink_to(bob_turn, target_is_directory=True)
    got = cli("--root", vault.root, "ask", "what did I tell you before?", "--user", "alice", "--json")
    assert got.code == 0, got.err
    context = (vault.root / got.json["context_path"]).read_text()
    assert "purplemoose" not in got.json["answer"] and "purplemoose" not in context
    problems = cli("--root", vault.root, "verify", "--json").json["problems"]
    assert {"path": "users/alice/turns/turn_000002", "kind": "symlink"} in [
        {"path": p["path"], "kind": p["kind"]} for p in problems
    ]


def test_save_into_a_linked_preferences_file_is_refused(vault: Vault, cli) -> None:
    cli("--root", vault.root, "save", "my pin hint is purplemoose", "--user", "bob", "--type", "fact")
    bob_facts = vault.layout.facts("bob")
    before = bob_facts.read_bytes()
    vault.layout.user_dir("alice").mkdir(parents=True, exist_ok=True)
    vault.layout.preferences("alice").symlink_to(bob_facts)
    got = cli("--root", vault.root, "save", "I like tea", "--user", "alice", "--type", "preference")
    assert got.code == 2 and "symbolic link" in got.err and "Traceback" not in got.err
    assert vault.layout.preferences("alice").is_symlink() and bob_facts.read_bytes() == before


def test_verify_names_a_link_inside_a_turn_folder(vault: Vault, tmp_path: Path, cli) -> None:
    source = tmp_path / "t.jsonl"
    source.write_bytes(
        orjson.dumps({"user": "bob", "timestamp": "2026-01-01T00:00:00Z", "query": "q", "response": "a"})
    )
    assert cli("--root", vault.root, "import-turns", source).code == 0
    assert cli("--root", vault.root, "verify").code == 0
    (vault.layout.turn_dir("bob", "turn_000001") / "toolresults.md").symlink_to("/etc/passwd")
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    assert [(p["path"], p["kind"]) for p in got.json["problems"]] == [
        ("users/bob/turns/turn_000001/toolresults.md", "symlink")
    ]


def test_verify_names_a_fifo_for_an_event_log_and_does_not_hang(vault: Vault, tmp_path: Path) -> None:
    """A fifo where a turn's `events.jsonl` should be: every reader of the log opened it
    and blocked on the read until a writer came, so `verify` (and replay, the learning
    fold) hung for good.  It is refused as not a regular file and named by path."""
    source = tmp_path / "t.jsonl"
    source.write_bytes(
        orjson.dumps({"user": "bob", "timestamp": "2026-01-01T00:00:00Z", "query": "q", "response": "a"})
    )
    assert run_pandafs("--root", vault.root, "import-turns", source).code == 0
    log = vault.layout.turn_dir("bob", "turn_000001") / "events.jsonl"
    log.unlink()
    os.mkfifo(log)
    got = run_pandafs("--root", vault.root, "verify", "--json", timeout=60)
    assert got.code == 1 and "Traceback" not in got.err, got.err
    problems = [(p["path"], p["message"]) for p in orjson.loads(got.out)["problems"]]
    why = "is not a regular file (a FIFO); not read"
    assert ("users/bob/turns/turn_000001/events.jsonl", why) in problems


def test_prune_never_follows_a_link_in_memories(vault: Vault, tmp_path: Path, cli) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("---\nscope: new\nexpires_at: 2026-01-01T00:00:00Z\n---\nan outside note\n")
    before = outside.read_bytes()
    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "out.md").symlink_to(outside)
    got = cli("--root", vault.root, "prune", "--expired", "--now", NOW.isoformat(), "--json")
    assert got.code == 0 and "Traceback" not in got.err, got.err
    assert (memories / "out.md").is_symlink() and outside.read_bytes() == before


def test_the_learning_engine_never_reads_a_linked_document(vault: Vault, tmp_path: Path) -> None:
    from pandafs.learning.engine import Learning

    outside = tmp_path / "outside.md"
    outside.write_text("---\nscope: user\n---\nan outside secret about zebras\n")
    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "out.md").symlink_to(outside)
    (memories / "real.md").write_text("a real note about kiwis\n")
    memory = Memory(vault)
    with Learning(vault, memory).open() as engine:
        # its counters would be written over the link
        assert engine.documents.doc_info("alice/memories/out") is None
        real = engine.documents.doc_info("alice/memories/real")
        assert real is not None and "kiwis" in real.body


def test_a_linked_turn_counter_is_not_read(vault: Vault, tmp_path: Path) -> None:
    turns = vault.layout.turns_dir("alice")
    turns.mkdir(parents=True)
    (turns / ".counter").write_text("7")
    assert vault.layout.turn_counter("alice") == 7
    (turns / ".counter").unlink()
    (tmp_path / "counter").write_text("41")
    (turns / ".counter").symlink_to(tmp_path / "counter")
    assert vault.layout.turn_counter("alice") is None
    assert allocate_turns(vault, "alice") == ["turn_000001"]  # the hint outside was ignored
    assert not (turns / ".counter").is_symlink() and (tmp_path / "counter").read_text() == "41"


def _other_vault(tmp_path: Path) -> Vault:
    """Another vault, outside ours: mallory's archived turn, her catalog and reliability table."""
    from tests.support.learning import sync

    other, _ = Vault.init(tmp_path / "other")
    source = tmp_path / "mallory.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    line = {"user": "mallory", "timestamp": old, "query": "the vault key is okapi", "response": "noted"}
    source.write_bytes(orjson.dumps(line) + b"\n")
    import_turns(other, source, after_batch=Memory(other).index_docs)
    sync(other)
    assert archive_turns(other, now=NOW).archived == 1
    return other


def test_no_parquet_file_is_read_through_a_link(vault: Vault, tmp_path: Path, cli) -> None:
    """The catalog, the archive and the reliability table are Parquet files pyarrow opened
    by path, following links: `stats` counted mallory's turns from a catalog part linked
    in from outside the vault, and verify said ok."""
    from indexers.errors import ArchiveError
    from pandafs.archive._common import store_of
    from pandafs.research.reliability import TABLE, ReliabilityTable

    other = _other_vault(tmp_path)
    part = next((other.layout.observability / "catalog").glob("month=*/part-*.parquet"))
    outside = part.read_bytes()
    cli("--root", vault.root, "ask", "what do I keep in the shed", "--user", "alice")
    month = vault.layout.observability / "catalog" / part.parent.name
    month.mkdir(parents=True, exist_ok=True)
    link = month / "part-00000000000000000001.parquet"
    link.symlink_to(part)

    got = cli("--root", vault.root, "stats", "--since", "365d", "--now", NOW.isoformat(), "--json")
    assert got.code == 1 and "mallory" not in got.out + got.err, got.out[-300:]
    assert got.err.count("\n") == 1 and "symbolic link" in got.err and "Traceback" not in got.err
    found = cli("--root", vault.root, "verify")
    assert found.code == 1 and f"unreadable {vault.rel(link)}" in found.out, found.out
    assert cli("--root", vault.root, "verify", "--repair").code == 0
    assert not link.exists() and part.read_bytes() == outside
    got = cli("--root", vault.root, "stats", "--since", "365d", "--now", NOW.isoformat(), "--json")
    assert got.code == 0 and "mallory" not in got.out

    archived = next((other.layout.archive / "turns").glob("month=*/part-*.parquet"))
    store = store_of(vault)
    planted = store.part_path(archived.parent.name.removeprefix("month="), "1")
    planted.parent.mkdir(parents=True)
    planted.symlink_to(archived)
    claimed = vault.root / "archive" / ".." / ".." / "other" / archived.relative_to(other.root)
    for path in (planted, claimed, archived):  # a link, a stub's `archive_file` with `..`, an outside path
        with pytest.raises(ArchiveError, match="not read|not inside"):
            store.read_turn(path, "mallory", "turn_000001")

    table = vault.layout.indexes / TABLE
    (tmp_path / "outside.parquet").write_bytes(part.read_bytes())
    table.symlink_to(tmp_path / "outside.parquet")
    with pytest.raises(NotInVault):
        ReliabilityTable(vault).load()


def test_init_makes_no_folder_through_a_linked_layout_folder(tmp_path: Path) -> None:
    """`init` keeps what exists and makes the rest of the layout.  Its folders were made
    with mkdir(parents=True) by path: with `observability` a link to a folder,
    `observability/daily` and `.../interventions` were made under the link's target, out
    of the vault.  Now they are made from the vault root down, never through a link."""
    root = tmp_path / "vault"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "observability").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotInVault, match="observability: is a symbolic link"):
        Vault.init(root)
    assert list(outside.iterdir()) == []
