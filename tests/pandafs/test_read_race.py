"""Reads that walked, listed or opened a vault folder by path after checking it: with
the folder swapped for a link (by someone who writes its parent: alice, in her own
folder) in between, they named, stat'ed or read the link target's files, another
user's or anything outside the vault, and handed them on to what a user sees.

The swap is made at the exact point, around the library call that ends the check
(as in `test_write_race`); each test asserts on what came out.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from pandafs.vault import Vault
from tests.support.links import moved_aside, swap_for_link

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SECRET = "purplemoose"


def _import(vault: Vault, tmp_path: Path, user: str, query: str) -> Path:
    """One old turn of `user` (90 days before NOW), indexed; its folder."""
    from pandafs.memory.api import Memory
    from pandafs.turn_import import import_turns

    source = tmp_path / f"{user}.jsonl"
    old = (NOW - timedelta(days=90)).isoformat()
    line = {"user": user, "timestamp": old, "query": query, "response": "noted"}
    source.write_bytes(orjson.dumps(line) + b"\n")
    import_turns(vault, source, after_batch=Memory(vault).index_docs)
    return vault.layout.turn_dir(user, "turn_000001")


def test_archiving_never_copies_a_turn_folder_swapped_for_a_link_into_the_archive(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The archive reads every file of a turn it chose.  It walked the folder by path and
    read each file relative to the folder itself: with alice's old turn swapped for a
    link to bob's just after it was chosen, bob's turn went into the Parquet part as
    alice's, its summary into her stub, searchable and retrievable by her.  The folder
    is now opened and checked from the vault root and walked by descriptor: the turn is
    skipped (it stays live) and nothing of bob's reaches alice."""
    import pandafs.archive._jobs as jobs
    from pandafs.archive import archive_turns
    from pandafs.memory.api import Memory

    (tmp_path / "alice").mkdir()
    (tmp_path / "bob").mkdir()
    alice_turn = _import(vault, tmp_path / "alice", "alice", "what did I plant in the garden")
    bob_turn = _import(vault, tmp_path / "bob", "bob", f"my locker code is {SECRET} 7781")
    real = jobs.mark_relink

    def swap_once_chosen(*args: object) -> None:  # right after the candidates were chosen
        swap_for_link(alice_turn, bob_turn)
        real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs, "mark_relink", swap_once_chosen)
    report = archive_turns(vault, now=NOW, user="alice")
    assert [s["doc_id"] for s in report.skipped] == ["alice/turn_000001"]
    assert "symbolic link" in report.skipped[0]["reason"]
    assert report.archived == 0
    assert not vault.layout.archive_stub("alice", "turn_000001").exists()
    assert (bob_turn / "context.md").is_file() and (moved_aside(alice_turn) / "context.md").is_file()
    hits = Memory(vault).search(SECRET, user="alice", now=NOW)
    assert hits == []


def test_the_learning_fold_never_reads_turns_through_a_linked_turns_folder(vault: Vault, cli) -> None:
    """alice's `turns/` is a link to bob's.  The fold found her turn numbers and read each
    turn's events by path (`O_NOFOLLOW` guards the log's own name only), so every turn of
    bob's was folded a second time under alice: a second catalog row (`stats --since`
    counted it twice) and its cited documents used twice.  The log is now read with the
    after-open check from the vault root: refused, folded once, as bob's."""
    import pyarrow.parquet as pq

    assert cli("--root", vault.root, "ask", f"my locker code is {SECRET} 7781", "--user", "bob").code == 0
    vault.layout.user_dir("alice").mkdir(parents=True)
    vault.layout.turns_dir("alice").symlink_to(vault.layout.turns_dir("bob"), target_is_directory=True)
    assert cli("--root", vault.root, "rebuild").code == 0
    rows = [
        (row["user"], row["turn"])
        for part in sorted((vault.layout.observability / "catalog").glob("*/*.parquet"))
        for row in pq.read_table(part, columns=["user", "turn"]).to_pylist()
    ]
    assert rows == [("bob", "turn_000001")]


def test_the_mcp_listing_names_nothing_through_a_linked_user_folder(vault: Vault, cli) -> None:
    """The MCP resource listing of alice named her preferences, memories and latest turns
    by path, checking only the last name of each for a link: with `users/alice` a link to
    bob's folder it named bob's preferences, his memory files and his turns as alice's.
    The folders are now opened and checked from the vault root and listed by descriptor:
    nothing of bob's is named (the global documents still are)."""
    from pandafs.mcp_server import _listing

    assert cli("--root", vault.root, "ask", f"my locker code is {SECRET} 7781", "--user", "bob").code == 0
    bob = vault.layout.user_dir("bob")
    (bob / "preferences.md").write_text("# prefs\n\nquiet trains\n")
    (bob / "memories").mkdir(exist_ok=True)
    (bob / "memories" / "private-diagnosis.md").write_text("# note\n\nnot alice's\n")
    (vault.root / "knowledge" / "trains.md").write_text("# Trains\n\nThey run.\n")
    vault.layout.user_dir("alice").symlink_to(bob, target_is_directory=True)
    assert _listing(vault, "alice") == [("knowledge/trains.md", "knowledge/trains")]


def test_search_never_opens_a_linked_tantivy_folder(vault: Vault, tmp_path: Path, cli) -> None:
    """`indexes/fulltext/tantivy` is a link to another vault's index.  The index was opened
    by path after its parent folders (not `tantivy/` itself) were checked, so a search
    answered from the other index: its documents, titles and snippets.  `tantivy/` is now
    checked with them: refused, one line, exit 2, nothing of the other vault shown."""
    other, _ = Vault.init(tmp_path / "other")
    assert cli("--root", other.root, "ask", f"my locker code is {SECRET} 7781", "--user", "alice").code == 0
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    assert cli("--root", vault.root, "search", "hello", "--json").code == 0  # the index is there
    live = vault.root / "indexes" / "fulltext" / "tantivy"
    swap_for_link(live, other.root / "indexes" / "fulltext" / "tantivy")
    found = cli("--root", vault.root, "search", SECRET, "--user", "alice", "--json")
    assert SECRET not in found.out
    assert found.code == 2 and "symbolic link" in found.err


def test_the_document_walk_names_nothing_through_a_folder_swapped_once_listed(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk every rebuild, reconcile and verify makes listed each folder by path: with
    alice's `memories/` swapped for a link to bob's just after her folder was listed
    (it was a folder then), the walk listed bob's memory files as documents of alice's
    (their names reached rebuild's skipped list and verify's "not in the index").  Each
    folder is now opened by name in its parent's descriptor, never through a link: the
    swapped folder is refused and named as a link, nothing in it is."""

    from indexers.sync import scan_documents

    bob = vault.layout.user_dir("bob") / "memories"
    bob.mkdir(parents=True)
    (bob / "private-diagnosis.md").write_text("# note\n\nnot alice's\n")
    alice = vault.layout.user_dir("alice") / "memories"
    alice.mkdir(parents=True)
    (alice / "garden.md").write_text("# garden\n\ntomatoes\n")
    _after_listing(
        monkeypatch,
        lambda where, listed: any(e.name == "memories" for e in listed) and "alice" in _real_path(where),
        lambda: swap_for_link(alice, bob),
    )
    refused: list = []
    found = scan_documents(vault.root, refused=refused)
    monkeypatch.undo()
    assert "users/alice/memories/private-diagnosis.md" not in found
    assert "users/bob/memories/private-diagnosis.md" in found  # bob's, as his
    assert [s.path for s in refused] == ["users/alice/memories"]


def test_a_rebuild_never_reads_a_document_through_a_link_swapped_in_once_listed(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild lists the documents first and reads them after.  With alice's note
    swapped for a link to bob's private note, and her `memories/` folder swapped for a
    link to bob's, both just after the listing, nothing of bob's becomes alice's: each
    read refuses what a link leads to (and names it), and bob's notes stay his."""

    from pandafs.memory.api import Memory

    bob = vault.layout.user_dir("bob") / "memories"
    bob.mkdir(parents=True)
    (bob / "garden.md").write_text(f"# bob's\n\nmy locker code is {SECRET}\n")
    (bob / "tools.md").write_text(f"# bob's tools\n\nspare key under {SECRET}\n")
    alice = vault.layout.user_dir("alice") / "memories"
    alice.mkdir(parents=True)
    (alice / "garden.md").write_text("# garden\n\ntomatoes\n")
    (alice / "tools.md").write_text("# tools\n\na rake and a hoe\n")

    def swaps() -> None:
        (alice / "garden.md").unlink()
        (alice / "garden.md").symlink_to(bob / "garden.md")
        swap_for_link(alice, bob)

    _after_listing(monkeypatch, lambda where, _: _real_path(where).endswith("/users/alice/memories"), swaps)
    report = Memory(vault).rebuild()
    monkeypatch.undo()
    refused = {s.path for s in report.skipped}
    assert "users/alice/memories/garden.md" in refused
    assert refused <= {"users/alice/memories/garden.md", "users/alice/memories/tools.md"}
    memory = Memory(vault)
    assert memory.search(SECRET, user="alice", now=NOW) == []
    found = {h["doc_id"] for h in memory.search(SECRET, user="bob", now=NOW)}
    assert found == {"bob/memories/garden", "bob/memories/tools"}


def _after_listing(
    monkeypatch: pytest.MonkeyPatch, when: Callable[[object, list], bool], swap: Callable[[], None]
) -> None:
    """Make `swap()` happen just after a folder is listed (`os.scandir`), when
    `when(where, listing)` says it is the one: the listing is the one read before."""
    import os

    real = os.scandir

    class Listed(list):
        def __enter__(self) -> Listed:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

    def listing_then_swap(where: object = ".") -> object:
        with real(where) as entries:  # type: ignore[call-overload]
            listed = Listed(entries)
        if when(where, listed):
            swap()
        return listed

    monkeypatch.setattr(os, "scandir", listing_then_swap)


def _real_path(where: object) -> str:
    import os

    return os.readlink(f"/proc/self/fd/{where}") if isinstance(where, int) else os.fspath(where)  # type: ignore[arg-type]


def test_turn_numbers_are_never_counted_through_a_linked_turns_folder(vault: Vault, cli) -> None:
    """alice's `turns/` is a link to bob's.  Her turn numbers were listed by path, so bob's
    turns counted as hers: the fold went looking for each (one problem per turn of
    bob's in rebuild's report, so how many he has) and her next number started above
    his.  A linked folder now holds no turn of hers."""
    assert cli("--root", vault.root, "ask", "hello there", "--user", "bob").code == 0
    assert cli("--root", vault.root, "ask", "hello again", "--user", "bob").code == 0
    vault.layout.user_dir("alice").mkdir(parents=True)
    vault.layout.turns_dir("alice").symlink_to(vault.layout.turns_dir("bob"), target_is_directory=True)
    assert vault.layout.turn_numbers("alice", staged=True) == set()
    assert vault.layout.highest_turn("alice") == 0
    rebuilt = cli("--root", vault.root, "rebuild", "--json")
    assert rebuilt.code == 0 and rebuilt.json["learning"]["problems"] == []


def test_replay_never_compares_through_a_turn_folder_swapped_for_a_link(
    vault: Vault,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    cli,
) -> None:
    """`replay --check` reads each projected file to compare it with its events.  It read
    them relative to the turn folder itself, so with alice's turn swapped for a link (here
    to a copy outside the vault) once its events were read, the files out there were
    read and, being the same, reported as no drift.  They are now read from the vault
    root: refused, and reported as drift."""
    import shutil

    import pandafs.turns as turns

    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    folder = vault.layout.turn_dir("alice", "turn_000001")
    outside = tmp_path / "copy"
    shutil.copytree(folder, outside)
    real = turns.cut_tail_of

    def swap_once_read(*args: object) -> object:  # the events were read: swap before the files are
        swap_for_link(folder, outside)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(turns, "cut_tail_of", swap_once_read)
    report = turns.replay(vault, "alice/turn_000001", check=True)
    assert {d.kind for d in report.drift} == {"modified"}
    assert all("symbolic link" in d.message for d in report.drift)
