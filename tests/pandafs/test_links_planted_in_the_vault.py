"""A link planted inside the vault (a lock file, a log,
a user's folder, memories/, turns/, its staging, outbox/alice, archive/stubs/alice,
archive/expired, a visit's files, a daily rollup) never carries a write or a read across
the boundary."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from events.errors import NotInVault
from pandafs.vault import Vault
from tests.support.config import set_setting
from tests.support.turns import allocate_turns

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SECRET = "purplemoose"


def _visit(turn_dir: Path, availability: str) -> Path:
    from pandafs.research.extract import Extraction
    from pandafs.research.fetch import FetchResult
    from pandafs.research.visits import write_visit

    url = "http://shop.example/product/lenovo-loq"
    fetched = FetchResult(url, url, 200, "text/html", 1.0, "<html></html>", 10)
    extraction = Extraction(
        title="Lenovo LOQ 15 laptop",
        text="A gaming laptop.",
        fields={"title": "Lenovo LOQ 15 laptop", "availability": availability},
        items=1,
        fields_present=["title", "availability"],
        confidence=0.9,
        page_type="product",
    )
    return write_visit(turn_dir, fetched, extraction, NOW).path


def test_visit_text_never_reads_a_linked_extracted_data(vault: Vault, tmp_path: Path, cli) -> None:
    """alice's own visit folder (real manifest) whose extracted_data.json links to bob's:
    the fields of bob's visit must not reach alice's context or answer."""
    from pandafs.pipeline.sources import visit_text

    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    assert cli("--root", vault.root, "ask", "hello there", "--user", "bob").code == 0
    bob_visit = _visit(vault.layout.turn_dir("bob", "turn_000001"), f"In stock, still held for {SECRET}")
    own = _visit(vault.layout.turn_dir("alice", "turn_000001"), "In stock")
    (own / "extracted_data.json").unlink()
    (own / "extracted_data.json").symlink_to(bob_visit / "extracted_data.json")
    leaked = SECRET in visit_text(vault.root, vault.rel(own / "page_content.md"))
    got = cli(
        "--root", vault.root, "ask", "is that Lenovo LOQ laptop still in stock?", "--user", "alice", "--json"
    )
    assert got.code == 0, got.err
    context = (vault.root / got.json["context_path"]).read_text()
    assert SECRET not in context and SECRET not in got.json["answer"]
    assert not leaked


# --- writes through a link -------------------------------------------------------------


@pytest.mark.parametrize("lock", ["users/alice/turns/.alloc.lock", "users/alice/.memory.lock"])
def test_a_linked_lock_file_is_never_truncated(vault: Vault, tmp_path: Path, cli, lock: str) -> None:
    """A lock file planted as a link (to a file outside the vault): taking the lock must
    not truncate and overwrite the file behind it with our pid."""
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    link = vault.root / lock
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    got = cli(
        "--root", vault.root, "save", "alice likes green tea", "--user", "alice", "--type", "preference"
    )
    refused = got.code == 2 and "is a symbolic link; not written" in got.err
    assert refused == lock.endswith(".memory.lock"), got.err
    if lock.endswith(".alloc.lock"):
        with pytest.raises(NotInVault):
            allocate_turns(vault, "alice")
    assert outside.read_bytes() == before


def test_the_sharing_log_is_not_appended_through_a_link(vault: Vault, tmp_path: Path, cli) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    set_setting(vault.root, "publishers", ["carol"])
    (vault.root / "observability").mkdir(exist_ok=True)
    (vault.root / "observability" / "sharing.jsonl").symlink_to(outside)
    cli("--root", vault.root, "save", "the ridge path is dry", "--user", "carol", "--scope", "global")
    assert outside.read_bytes() == before


def test_the_expansions_log_is_not_appended_through_a_link(vault: Vault, tmp_path: Path) -> None:
    from datetime import timedelta

    from pandafs.archive import archive_turns, expand_turn
    from pandafs.memory.api import Memory
    from pandafs.turn_import import import_turns

    source = tmp_path / "bob.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    source.write_bytes(
        orjson.dumps({"user": "bob", "timestamp": old, "query": "my axolotl tank", "response": "ok"}) + b"\n"
    )
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    assert archive_turns(vault, now=NOW).archived == 1
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    (vault.layout.archive / "expansions.jsonl").unlink(missing_ok=True)
    (vault.layout.archive / "expansions.jsonl").symlink_to(outside)
    with pytest.raises(NotInVault):  # what bob's retrieve of his archived turn does
        expand_turn(vault, "bob/turn_000001", now=NOW)
    assert outside.read_bytes() == before


@pytest.mark.parametrize("kind", ["memory", "preference"])
def test_a_save_never_writes_into_a_linked_folder(vault: Vault, tmp_path: Path, cli, kind: str) -> None:
    """alice's memories folder (or her whole user folder) is a link out of the vault:
    the saved document must not land outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = vault.layout.memories_dir("alice") if kind == "memory" else vault.layout.user_dir("alice")
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(outside, target_is_directory=True)
    cli("--root", vault.root, "save", "alice likes green tea", "--user", "alice", "--type", kind)
    assert sorted(p.name for p in outside.rglob("*")) == []


# --- reads through a link --------------------------------------------------------------


def test_stats_never_opens_a_linked_document(vault: Vault, tmp_path: Path) -> None:
    """`stats` opens every .md with open(): a link out of the vault is read (its frontmatter
    counted), a dangling link crashes it, a link to a fifo would hang it."""
    from pandafs.stats import vault_stats

    outside = tmp_path / "outside.md"
    outside.write_text("---\ncontent_types: [outsidesecret]\n---\nsecret\n")
    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "leak.md").symlink_to(outside)
    (memories / "dangling.md").symlink_to(tmp_path / "missing.md")
    data = vault_stats(vault)
    assert "outsidesecret" not in data["content_types"]


def test_an_ask_never_writes_its_turn_into_a_linked_turns_folder(vault: Vault, tmp_path: Path, cli) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    vault.layout.user_dir("alice").mkdir(parents=True)
    vault.layout.turns_dir("alice").symlink_to(outside, target_is_directory=True)
    cli("--root", vault.root, "ask", f"my locker code is {SECRET}", "--user", "alice")
    assert sorted(p.name for p in outside.rglob("*")) == []


def test_an_inbox_answer_never_goes_through_a_linked_outbox_folder(vault: Vault, tmp_path: Path) -> None:
    """outbox/alice is a link to outbox/bob: alice's answer must not land in bob's outbox."""
    import os
    import time

    from pandafs.inbox import Inbox

    (vault.root / "outbox" / "bob").mkdir(parents=True)
    (vault.root / "outbox" / "alice").symlink_to(vault.root / "outbox" / "bob", target_is_directory=True)
    query = vault.root / "inbox" / "alice" / "pin.md"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.write_text(f"my locker code is {SECRET}, what is it?\n")
    past = time.time() - 10
    os.utime(query, (past, past))
    with Inbox(vault, settle_s=0.2) as box:
        box.process_pending()
    assert sorted(p.name for p in (vault.root / "outbox" / "bob").iterdir()) == []


def test_the_archive_sweep_never_moves_another_users_turn_through_a_linked_trash(vault: Vault, cli) -> None:
    """alice's `turns/.archive-trash` is a link to bob's turns folder: the archive's
    recovery sweep must not rename bob's turn folder into alice's turns."""
    from pandafs.archive import archive_turns

    bob = cli("--root", vault.root, "ask", f"my locker code is {SECRET} 7781", "--user", "bob", "--json")
    assert bob.code == 0, bob.err
    bob_turn = (vault.root / bob.json["context_path"]).parent
    vault.layout.turns_dir("alice").mkdir(parents=True)
    (vault.layout.turns_dir("alice") / ".archive-trash").symlink_to(
        vault.layout.turns_dir("bob"), target_is_directory=True
    )
    archive_turns(vault, now=NOW)
    assert (bob_turn / "context.md").is_file()
    assert not vault.layout.turn_dir("alice", bob_turn.name).exists()


def test_the_archive_sweep_never_deletes_through_a_linked_staging_folder(
    vault: Vault,
    tmp_path: Path,
    cli,
) -> None:
    from pandafs.archive import archive_turns

    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    outside = tmp_path / "outside"
    (outside / "turn_000001.job1").mkdir(parents=True)
    (outside / "turn_000001.job1" / "precious.txt").write_text("must not be deleted\n")
    (vault.layout.turns_dir("alice") / ".archive-restore").symlink_to(outside, target_is_directory=True)
    archive_turns(vault, now=NOW)
    assert (outside / "turn_000001.job1" / "precious.txt").is_file()


def test_trends_never_read_a_linked_daily_rollup(vault: Vault, tmp_path: Path) -> None:
    """A day without activity whose rollup file is a link out of the vault: the linked
    JSON must not come back in `stats --since`."""
    from pandafs.learning.api import trends

    outside = tmp_path / "credentials.json"
    outside.write_bytes(orjson.dumps({"date": "2026-11-20", "token": SECRET}))
    daily = vault.layout.observability / "daily"
    daily.mkdir(parents=True, exist_ok=True)
    (daily / "2026-11-20.json").symlink_to(outside)
    data = trends(vault, since="2026-11-19", now=NOW)
    assert SECRET not in orjson.dumps(data).decode()


def test_an_import_never_appends_to_a_linked_ledger(vault: Vault, tmp_path: Path) -> None:
    from pandafs.turn_import import import_turns

    source = tmp_path / "bob.jsonl"
    source.write_bytes(
        orjson.dumps(
            {
                "user": "bob",
                "external_id": "ext-1",
                "timestamp": "2026-01-01T00:00:00Z",
                "query": "q",
                "response": "a",
            }
        )
        + b"\n"
    )
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    vault.layout.turns_dir("bob").mkdir(parents=True)
    (vault.layout.turns_dir("bob") / ".external_ids.jsonl").symlink_to(outside)
    with pytest.raises(NotInVault):
        import_turns(vault, source)
    assert outside.read_bytes() == before


def test_a_torn_tail_is_never_appended_through_a_linked_torn_file(vault: Vault, tmp_path: Path, cli) -> None:
    got = cli("--root", vault.root, "ask", "hello there", "--user", "alice", "--json")
    assert got.code == 0, got.err
    folder = (vault.root / got.json["context_path"]).parent
    with open(folder / "events.jsonl", "ab") as log:
        log.write(b'{"torn": ')  # a writer killed mid-line
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    (folder / "events.jsonl.torn").symlink_to(outside)
    cli("--root", vault.root, "verify", "--repair")
    assert outside.read_bytes() == before


def test_the_index_state_log_is_never_appended_through_a_link(vault: Vault, tmp_path: Path, cli) -> None:
    assert cli("--root", vault.root, "save", "bob likes coffee", "--user", "bob").code == 0
    state = vault.layout.indexes / "fulltext" / "state.jsonl"
    outside = tmp_path / "precious.txt"
    outside.write_text("a file outside the vault that must not change\n")
    before = outside.read_bytes()
    state.unlink()
    state.symlink_to(outside)
    cli("--root", vault.root, "save", "alice likes green tea", "--user", "alice")
    assert outside.read_bytes() == before


def test_archiving_never_writes_a_stub_through_a_linked_stub_folder(vault: Vault, tmp_path: Path) -> None:
    """archive/stubs/alice is a link to archive/stubs/bob: alice's archived turn must not
    become a stub in bob's folder (which search and retrieve then give to bob)."""
    from datetime import timedelta

    from pandafs.archive import archive_turns
    from pandafs.memory.api import Memory
    from pandafs.turn_import import import_turns

    source = tmp_path / "alice.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    source.write_bytes(
        orjson.dumps(
            {"user": "alice", "timestamp": old, "query": f"my axolotl is {SECRET}", "response": "ok"}
        )
        + b"\n"
    )
    memory = Memory(vault)
    import_turns(vault, source, after_batch=memory.index_docs)
    stubs = vault.layout.archive / "stubs"
    (stubs / "bob").mkdir(parents=True)
    (stubs / "alice").symlink_to(stubs / "bob", target_is_directory=True)
    try:
        archive_turns(vault, now=NOW)
    except Exception:  # refusing is fine; writing into bob's folder is not
        pass
    memory.reconcile()
    assert memory.search(SECRET, user="bob", now=NOW) == []
    assert sorted(p.name for p in (stubs / "bob").iterdir()) == []


def test_prune_never_moves_a_document_through_a_linked_expired_folder(vault: Vault, cli) -> None:
    """archive/expired is a link into bob's memories: alice's expired memory must not
    become a document of bob's."""
    from pandafs.memory.api import Memory

    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "pin.md").write_text(
        f"---\nscope: new\nexpires_at: 2026-01-01T00:00:00Z\n---\nalice's locker code is {SECRET}\n"
    )
    bob = vault.layout.memories_dir("bob")
    bob.mkdir(parents=True)
    vault.layout.archive.mkdir(parents=True, exist_ok=True)
    (vault.layout.archive / "expired").symlink_to(bob, target_is_directory=True)
    cli("--root", vault.root, "prune", "--expired", "--now", NOW.isoformat())
    moved = bob / "users/alice/memories/pin.md"
    if moved.is_file():  # what bob now retrieves as his own document
        assert (
            SECRET not in Memory(vault).retrieve("bob/memories/users/alice/memories/pin", user="bob").content
        )
    assert sorted(p.name for p in bob.rglob("*")) == []


def test_an_import_never_stages_in_a_linked_staging_folder(vault: Vault, tmp_path: Path) -> None:
    """bob's `turns/.staging` is a link out of the vault: the import refuses it before
    writing a turn there, and nothing lands outside."""
    from pandafs.turn_import import import_turns

    source = tmp_path / "bob.jsonl"
    line = {"user": "bob", "timestamp": "2026-01-01T00:00:00Z", "query": f"q {SECRET}", "response": "a"}
    source.write_bytes(orjson.dumps(line) + b"\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    vault.layout.turns_dir("bob").mkdir(parents=True)
    (vault.layout.turns_dir("bob") / ".staging").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotInVault):
        import_turns(vault, source)
    assert sorted(p.name for p in outside.rglob("*")) == []


@pytest.mark.parametrize("folder", ["indexes", "observability", "observability/interventions", "archive"])
def test_no_derived_file_is_written_through_a_linked_vault_folder(
    vault: Vault,
    tmp_path: Path,
    cli,
    folder: str,
) -> None:
    """The index, the learning state, the catalog, a failed turn's intervention note and the
    archive hold users' words: a linked folder of the vault's own is refused, not written."""
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    outside = tmp_path / "outside"
    outside.mkdir()
    path = vault.root / folder
    if path.exists():
        import shutil

        shutil.rmtree(path)
    path.symlink_to(outside, target_is_directory=True)
    ask = cli("--root", vault.root, "ask", f"what is my locker code {SECRET}?", "--user", "alice")
    archive = cli("--root", vault.root, "archive", "--age-days", "0")
    assert "is a symbolic link; not written" in ask.err + archive.err
    assert sorted(p.name for p in outside.rglob("*")) == []
    checked = cli("--root", vault.root, "verify", "--json")
    assert checked.code == 1 and "Traceback" not in checked.err, checked.err
    assert {"path": folder, "kind": "symlink"} in [
        {"path": p["path"], "kind": p["kind"]} for p in checked.json["problems"]
    ]


def test_the_learning_fold_never_reads_a_linked_turn_folder(vault: Vault, cli) -> None:
    """alice's turns/turn_000002 is a link to bob's turn: a rebuild's learning fold counts
    bob's turn once (as bob's), never as one of alice's."""
    import pyarrow.parquet as pq

    assert cli("--root", vault.root, "ask", f"my locker code is {SECRET} 7781", "--user", "bob").code == 0
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    bob_turn = vault.layout.turn_dir("bob", "turn_000001")
    (vault.layout.turns_dir("alice") / "turn_000002").symlink_to(bob_turn, target_is_directory=True)
    assert cli("--root", vault.root, "rebuild").code == 0
    rows = [
        (row["user"], row["turn"])
        for part in sorted((vault.layout.observability / "catalog").glob("*/*.parquet"))
        for row in pq.read_table(part, columns=["user", "turn"]).to_pylist()
    ]
    assert sorted(rows) == [("alice", "turn_000001"), ("bob", "turn_000001")]


def test_the_inbox_never_claims_a_query_into_a_linked_processing_folder(vault: Vault, tmp_path: Path) -> None:
    """`inbox/.processing` is a link out of the vault: the query is not moved there (it
    stays in the inbox, untouched) and nothing is written outside."""
    import os
    import time

    from pandafs.inbox import Inbox

    outside = tmp_path / "outside"
    outside.mkdir()
    query = vault.root / "inbox" / "alice" / "pin.md"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.write_text(f"my locker code is {SECRET}, what is it?\n")
    past = time.time() - 10
    os.utime(query, (past, past))
    (vault.root / "inbox" / ".processing").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotInVault), Inbox(vault, settle_s=0.2) as box:
        box.process_pending()
    assert query.read_text() == f"my locker code is {SECRET}, what is it?\n"
    assert sorted(p.name for p in outside.rglob("*")) == []


def test_archiving_never_moves_a_turn_into_a_linked_trash_folder(vault: Vault, tmp_path: Path) -> None:
    """alice's `turns/.archive-trash` is a link out of the vault: her old turn is not moved
    there while its batch is archived; it stays live and nothing lands outside."""
    from datetime import timedelta

    from pandafs.archive import archive_turns
    from pandafs.memory.api import Memory
    from pandafs.turn_import import import_turns

    source = tmp_path / "alice.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    line = {"user": "alice", "timestamp": old, "query": f"my axolotl is {SECRET}", "response": "ok"}
    source.write_bytes(orjson.dumps(line) + b"\n")
    import_turns(vault, source, after_batch=Memory(vault).index_docs)
    outside = tmp_path / "outside"
    outside.mkdir()
    (vault.layout.turns_dir("alice") / ".archive-trash").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotInVault):
        archive_turns(vault, now=NOW)
    assert (vault.layout.turn_dir("alice", "turn_000001") / "context.md").is_file()
    assert sorted(p.name for p in outside.rglob("*")) == []


def test_a_linked_projection_is_replaced_not_read(vault: Vault, tmp_path: Path, cli) -> None:
    """A turn's context.md swapped for a link (even to a file with the very same bytes,
    outside the vault): replay does not read through it; it writes the file in its place."""
    from pandafs.turns import replay

    got = cli("--root", vault.root, "ask", "hello there", "--user", "alice", "--json")
    assert got.code == 0, got.err
    context = vault.root / got.json["context_path"]
    outside = tmp_path / "copy.md"
    outside.write_bytes(context.read_bytes())
    context.unlink()
    context.symlink_to(outside)
    replay(vault)
    assert not context.is_symlink() and context.read_bytes() == outside.read_bytes()


def test_a_linked_archive_stub_is_not_read(vault: Vault, tmp_path: Path) -> None:
    from indexers.errors import ArchiveError
    from pandafs.archive._stubs import read_stub

    outside = tmp_path / "stub.md"
    outside.write_text("---\narchive_file: archive/turns/month=2026-01/part-1.parquet\n---\nx\n")
    stub = vault.layout.archive_stub("alice", "turn_000001")
    stub.parent.mkdir(parents=True)
    stub.symlink_to(outside)
    with pytest.raises(ArchiveError, match="symbolic link"):
        read_stub(vault, "alice", "turn_000001")
