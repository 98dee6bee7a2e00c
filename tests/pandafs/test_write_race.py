"""A folder swapped for a link between a writer's folder check and its open (a
check-then-use race) carries no write out of the user's folder.

A real race is not deterministic, so the swap is made at the exact point: right after
the writer's folder check, as the file is opened (the real open is then called).  Each
test asserts on real files: the outside folder gains no file, its file keeps its bytes,
no temporary file is left there, and the write is refused with `NotInVault`.
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

import events.fsio as fsio
from events.errors import NotInVault
from pandafs.inbox import Inbox
from pandafs.memory.api import Memory
from pandafs.turns import TurnRef, project
from pandafs.vault import Vault
from tests.support.config import set_setting
from tests.support.links import moved_aside, swap_for_link
from tests.support.turns import allocate_turns

OUTSIDE_BYTES = b"# not the vault's\n\nkept as it is\n"


def _outside(tmp_path: Path, name: str) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / name).write_bytes(OUTSIDE_BYTES)
    return outside


def _swap_when(monkeypatch: pytest.MonkeyPatch, hook: str, folder: Path, outside: Path, name: str) -> None:
    """Wrap `events.fsio.<hook>`: the first time it opens `name` in `folder`, move the
    folder away and put a link to `outside` in its place, then call the real one."""
    real: Callable = getattr(fsio, hook)

    def swapped(path: Path, *args: object) -> object:
        if path.parent == folder and (path.name == name or path.name.startswith(f"{fsio.TMP_PREFIX}{name}.")):
            swap_for_link(folder, outside)
        return real(path, *args)

    monkeypatch.setattr(fsio, hook, swapped)


def _untouched(outside: Path, name: str) -> None:
    assert sorted(os.listdir(outside)) == [name]  # no new file, no temporary file
    assert (outside / name).read_bytes() == OUTSIDE_BYTES


def test_saved_preference_never_lands_in_a_folder_swapped_for_a_link(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory(vault)
    memory.save("likes green tea", user="alice", doc_type="preference", index=False)
    outside = _outside(tmp_path, "preferences.md")
    _swap_when(monkeypatch, "_create_temp", vault.layout.user_dir("alice"), outside, "preferences.md")
    with pytest.raises(NotInVault, match="preferences.md: a folder on its path is a symbolic link"):
        memory.save("prefers window seats", user="alice", doc_type="preference", index=False)
    _untouched(outside, "preferences.md")
    kept = (vault.layout.users_dir / "alice.moved" / "preferences.md").read_text()
    assert "green tea" in kept and "window seats" not in kept


def test_cli_save_refuses_the_race_in_one_line(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    assert cli("--root", vault.root, "save", "alice likes green tea", "--user", "alice").code == 0
    outside = _outside(tmp_path, "facts.md")
    _swap_when(monkeypatch, "_create_temp", vault.layout.user_dir("alice"), outside, "facts.md")
    got = cli("--root", vault.root, "save", "born in Lyon", "--user", "alice", "--type", "fact")
    assert got.code == 2 and got.out == ""
    assert got.err.count("\n") == 1 and "Traceback" not in got.err
    assert "a folder on its path is a symbolic link or leaves the vault" in got.err
    _untouched(outside, "facts.md")


def test_sharing_log_append_never_lands_outside(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    set_setting(vault.root, "publishers", ["carol"])
    tip = "The quarry trail floods after rain; take the ridge path."
    assert cli("--root", vault.root, "save", tip, "--user", "carol", "--scope", "global").code == 0
    folder = vault.root / "observability"
    outside = _outside(tmp_path, "sharing.jsonl")
    _swap_when(monkeypatch, "open_no_link", folder, outside, "sharing.jsonl")
    got = cli("--root", vault.root, "save", "Ferry leaves at six.", "--user", "carol", "--scope", "global")
    assert got.code == 2 and got.err.count("\n") == 1 and "Traceback" not in got.err
    assert "sharing.jsonl: a folder on its path is a symbolic link" in got.err
    _untouched(outside, "sharing.jsonl")
    assert len((vault.root / "observability.moved" / "sharing.jsonl").read_bytes().splitlines()) == 1
    assert not any("Ferry" in p.read_text() for p in (vault.layout.knowledge / "published").iterdir())


def test_sharing_log_append_creates_nothing_outside(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log the outside folder does not have is not left there, not even empty."""
    folder = vault.root / "observability"
    folder.mkdir(exist_ok=True)
    outside = _outside(tmp_path, "other.txt")
    _swap_when(monkeypatch, "open_no_link", folder, outside, "new.jsonl")
    with pytest.raises(NotInVault):
        fsio.append_file(folder / "new.jsonl", b"{}\n", root=vault.root)
    _untouched(outside, "other.txt")


def test_turn_projection_never_lands_in_a_swapped_turn_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    [turn] = [p for p in vault.layout.turns_dir("alice").iterdir() if p.name.startswith("turn_")]
    (turn / "context.md").unlink()
    outside = _outside(tmp_path, "context.md")
    _swap_when(monkeypatch, "_create_temp", turn, outside, "context.md")
    with pytest.raises(NotInVault, match="context.md: a folder on its path is a symbolic link"):
        project(TurnRef("alice", turn.name, turn.parent))
    _untouched(outside, "context.md")


def _swap_after_outbox_check(monkeypatch: pytest.MonkeyPatch, outbox: Path, outside: Path) -> None:
    """Swap `outbox` for a link to `outside` right after `_claims` checked it (`vault_folder`)."""
    import pandafs.inbox._claims as moves

    real = moves.vault_folder

    def checked_then_swapped(root: Path, folder: Path, **kw: object) -> Path:
        got = real(root, folder, **kw)
        if Path(folder) == outbox:
            swap_for_link(outbox, outside)
        return got

    monkeypatch.setattr(moves, "vault_folder", checked_then_swapped)


def test_outbox_answer_never_lands_in_a_swapped_outbox_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer is published into `outbox/alice/` by a hard link, after the folder check."""
    outside = _outside(tmp_path, "notes.md")
    _swap_after_outbox_check(monkeypatch, vault.root / "outbox" / "alice", outside)
    query = vault.root / "inbox" / "alice" / "q.txt"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.write_text("How often should I feed my hamster?\n")
    past = time.time() - 10
    os.utime(query, (past, past))
    with Inbox(vault, settle_s=0.2) as box:
        report = box.process_pending()
    [result] = report.results
    assert result.status == "failed" and "outbox/alice/q.md: a folder on its path" in str(result.message)
    _untouched(outside, "notes.md")
    assert not (vault.root / "outbox" / "alice.moved" / "q.md").exists()  # retried later, whole


def test_the_rename_fallback_never_lands_in_a_swapped_outbox_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a filesystem without hard links (`os.link` fails) the answer is renamed into
    place instead.  That rename went by path with no check: a folder swapped after the
    check took the answer out of the vault.  Now it is refused and the file stays put."""
    from pandafs.inbox._claims import link_no_replace

    outside = _outside(tmp_path, "notes.md")
    _swap_after_outbox_check(monkeypatch, vault.root / "outbox" / "alice", outside)

    def no_hard_links(*args: object, **kw: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_hard_links)
    answer = vault.root / "inbox" / "alice" / "q.md"
    answer.parent.mkdir(parents=True)
    answer.write_bytes(b"Twice a day.\n")
    with pytest.raises(NotInVault, match="outbox/alice/q.md: a folder on its path"):
        link_no_replace(vault.root, answer, vault.root / "outbox" / "alice" / "q.md")
    _untouched(outside, "notes.md")
    assert answer.read_bytes() == b"Twice a day.\n"


def test_the_rename_fallback_still_names_the_file_and_never_replaces_one(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pandafs.inbox._claims import link_no_replace

    def no_hard_links(*args: object, **kw: object) -> None:
        raise OSError(errno.EPERM, "hard links not supported")

    monkeypatch.setattr(os, "link", no_hard_links)
    outbox = vault.root / "outbox" / "alice"
    first, second = vault.root / "a.md", vault.root / "b.md"
    first.write_bytes(b"first\n")
    second.write_bytes(b"second\n")
    assert link_no_replace(vault.root, first, outbox / "q.md")
    assert not link_no_replace(vault.root, second, outbox / "q.md")
    assert (outbox / "q.md").read_bytes() == b"first\n" and second.read_bytes() == b"second\n"


def test_turn_events_never_land_in_a_swapped_turn_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """The turn's folder is made, then swapped for a link just before its log is opened."""
    from pandafs.pipeline import turn as turn_module

    outside = _outside(tmp_path, "notes.md")

    class SwappedBeforeOpen(turn_module.EventWriter):
        def open(self) -> None:
            swap_for_link(self.path.parent, outside)
            super().open()

    monkeypatch.setattr(turn_module, "EventWriter", SwappedBeforeOpen)
    got = cli("--root", vault.root, "ask", "hello there", "--user", "alice")
    assert got.code == 2 and got.err.count("\n") == 1 and "Traceback" not in got.err
    assert "events.jsonl: a folder on its path is a symbolic link" in got.err
    _untouched(outside, "notes.md")


def test_import_ledger_append_never_lands_in_a_swapped_turns_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pandafs.turn_import.ledger import LEDGER, Ledger

    turns = vault.layout.turns_dir("alice")
    turns.mkdir(parents=True)
    ledger = Ledger(vault, "alice")
    outside = _outside(tmp_path, "notes.md")
    _swap_when(monkeypatch, "open_no_link", turns, outside, LEDGER)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        ledger.append([{"e": "chat-1", "t": "turn_000001"}])
    _untouched(outside, "notes.md")


def _swap_at_fsync(monkeypatch: pytest.MonkeyPatch, folder: Path, outside: Path, name: str) -> None:
    """Swap `folder` for a link to `outside` while the temporary file of `name` is being
    fsynced: after the writer's checks passed and its bytes were written, before the
    rename (`os.fsync` is wrapped; the real one is then called)."""
    from events.fsio import where_opened

    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.basename(where_opened(fd, "")).startswith(f"{fsio.TMP_PREFIX}{name}."):
            swap_for_link(folder, outside)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_a_second_swap_before_the_rename_lands_nothing_outside_and_leaves_no_temp(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rename and the folder's fsync go to the folder that was checked, not to the
    path again: before, a folder swapped after the check made the rename fail with a raw
    `FileNotFoundError` and left the temporary file behind in the real folder."""
    folder = vault.layout.user_dir("alice")
    folder.mkdir(parents=True)
    (folder / "facts.md").write_bytes(b"old\n")
    outside = _outside(tmp_path, "facts.md")
    _swap_at_fsync(monkeypatch, folder, outside, "facts.md")
    fsio.atomic_write(folder / "facts.md", b"new\n", root=vault.root)
    _untouched(outside, "facts.md")
    moved = folder.with_name("alice.moved")
    assert sorted(os.listdir(moved)) == ["facts.md"] and (moved / "facts.md").read_bytes() == b"new\n"


def test_cli_save_with_a_second_swap_saves_in_the_folder_checked_and_leaves_no_temp(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    assert cli("--root", vault.root, "save", "alice likes green tea", "--user", "alice").code == 0
    outside = _outside(tmp_path, "facts.md")
    _swap_at_fsync(monkeypatch, vault.layout.user_dir("alice"), outside, "facts.md")
    got = cli("--root", vault.root, "save", "born in Lyon", "--user", "alice", "--type", "fact")
    assert got.code == 0 and got.err == "", got  # saved, in the folder checked (moved since)
    _untouched(outside, "facts.md")
    moved = vault.layout.users_dir / "alice.moved"
    assert not [p for p in moved.rglob("*") if fsio.is_temp_name(p.name)]
    assert "born in Lyon" in (moved / "facts.md").read_text()


def test_learning_state_never_lands_in_a_swapped_indexes_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """PandaFS's own files (here the learning cache under `indexes/`) are written with
    the vault root too, so their folder swapped for a link gets no file either."""
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    now = ("--now", "2026-11-21T12:00:00+00:00")
    assert cli("--root", vault.root, "promote", *now).code == 0
    folder = vault.layout.indexes / "learning"
    outside = _outside(tmp_path, "state.json")
    _swap_when(monkeypatch, "_create_temp", folder, outside, "state.json")
    got = cli("--root", vault.root, "promote", "--full", *now)
    assert got.code == 2 and got.err.count("\n") == 1 and "Traceback" not in got.err, got
    assert "state.json: a folder on its path is a symbolic link" in got.err
    _untouched(outside, "state.json")


def test_verify_repair_moves_no_torn_bytes_into_a_swapped_turn_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli
) -> None:
    """`verify --repair` appends a torn tail to `events.jsonl.torn`: that append went by
    path with no after-open check, so a turn folder swapped for a link as it opened the
    file carried the torn bytes out of the vault.  Now it is refused and the log is left
    uncut, for a later repair."""
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    [turn] = [p for p in vault.layout.turns_dir("alice").iterdir() if p.name.startswith("turn_")]
    torn = b'{"v":1,"seq":9,"ts":"2026-'
    with open(turn / "events.jsonl", "ab") as log:
        log.write(torn)
    outside = _outside(tmp_path, "events.jsonl.torn")
    _swap_when(monkeypatch, "open_no_link", turn, outside, "events.jsonl.torn")
    got = cli("--root", vault.root, "verify", "--repair")
    assert got.code == 2 and got.err.count("\n") == 1 and "Traceback" not in got.err, got
    assert "events.jsonl.torn: a folder on its path is a symbolic link" in got.err
    _untouched(outside, "events.jsonl.torn")
    moved = moved_aside(turn)
    assert (moved / "events.jsonl").read_bytes().endswith(torn)
    assert not (moved / "events.jsonl.torn").exists()


def test_memory_lock_file_never_lands_in_a_swapped_user_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory lock's file was opened with no after-open check: the user's folder
    swapped for a link after its check got the lock file (and the holder's pid) made
    outside the vault.  Now the open is checked and the file it made is removed."""
    memory = Memory(vault)
    memory.save("likes green tea", user="alice", doc_type="preference", index=False)
    folder = vault.layout.user_dir("alice")
    (folder / ".memory.lock").unlink()
    outside = _outside(tmp_path, "preferences.md")
    _swap_when(monkeypatch, "open_no_link", folder, outside, ".memory.lock")
    with pytest.raises(NotInVault, match=r"alice/\.memory\.lock: a folder on its path is a symbolic link"):
        memory.save("prefers window seats", user="alice", doc_type="preference", index=False)
    _untouched(outside, "preferences.md")
    assert "window seats" not in (vault.layout.users_dir / "alice.moved" / "preferences.md").read_text()


def test_an_existing_lock_file_outside_is_refused_and_kept(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock file found through the swapped folder is not this open's: it is left as is."""
    folder = vault.root / "indexes"
    outside = _outside(tmp_path, "x.lock")
    _swap_when(monkeypatch, "open_no_link", folder, outside, "x.lock")
    with (
        pytest.raises(NotInVault),
        fsio.held_lock(folder / "x.lock", wait_s=0.0, on_busy=RuntimeError, root=vault.root),
    ):
        pass
    _untouched(outside, "x.lock")


def test_a_new_log_whose_folder_moves_after_the_append_is_kept_without_an_error(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A durable append that made its file fsyncs the folder's entry too.  That fsync
    went by path again after the bytes were written: the folder moved away by then made
    the append fail with a raw `FileNotFoundError` (through a link, the wrong folder was
    fsynced).  Now the folder checked before the open is the one fsynced."""
    from events.fsio import where_opened

    folder = vault.root / "observability"
    folder.mkdir(exist_ok=True)
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.basename(where_opened(fd, "")) == "new.jsonl" and folder.exists():
            folder.rename(folder.with_name("observability.moved"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    fsio.append_file(folder / "new.jsonl", b"{}\n", root=vault.root)
    assert (vault.root / "observability.moved" / "new.jsonl").read_bytes() == b"{}\n"


def _settled_query(path: Path) -> Path:
    """A query file in an inbox folder, old enough for the inbox to take it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("What did I say about my savings?\n")
    past = time.time() - 10
    os.utime(path, (past, past))
    return path


def _swap_when_claiming(monkeypatch: pytest.MonkeyPatch, folder: Path, outside: Path) -> None:
    """`folder` swapped for a link to `outside` as a claim names itself: after the inbox
    lock was taken and the scan found the query."""
    from pandafs.inbox._claims import ClaimFolders

    real = ClaimFolders.new_claim_id

    def swapped_then_named(self: ClaimFolders) -> str:
        swap_for_link(folder, outside)
        return real(self)

    monkeypatch.setattr(ClaimFolders, "new_claim_id", swapped_then_named)


def test_a_claim_never_moves_a_query_into_a_swapped_processing_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can write `inbox/` can rename `inbox/.processing`.  Swapped for a link
    after the inbox lock was taken (its folder checked), the claim made its folders and
    renamed bob's query through the link: out of the vault, to wherever it pointed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    query = _settled_query(vault.root / "inbox" / "bob" / "q.txt")
    _swap_when_claiming(monkeypatch, vault.root / "inbox" / ".processing", outside)
    with Inbox(vault, settle_s=0.2) as box, pytest.raises(NotInVault, match="a folder on its path"):
        box.process_pending()  # refused, as a linked .processing found by the lock is
    assert list(outside.rglob("*")) == []  # no claim folder, no query out there
    assert query.read_text() == "What did I say about my savings?\n"  # left where bob put it


def test_a_claim_never_takes_a_file_from_outside_through_a_swapped_inbox_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob can write `inbox/bob/`, so he can swap it for a link after the scan found his
    query.  The claim renamed the file by path: it took the link target's file of that
    name (from wherever the link pointed, out of the vault) and answered it as his."""
    bob = vault.root / "inbox" / "bob"
    outside = _outside(tmp_path, "q.txt")
    _settled_query(bob / "q.txt")
    _swap_when_claiming(monkeypatch, bob, outside)
    with Inbox(vault, settle_s=0.2) as box, pytest.raises(NotInVault, match="bob/q.txt: a folder on its"):
        box.process_pending()
    _untouched(outside, "q.txt")
    assert (bob.with_name("bob.moved") / "q.txt").read_text() == "What did I say about my savings?\n"
    assert [p for p in (vault.root / "inbox" / ".processing").rglob("*") if p.name != ".lock"] == []


@pytest.mark.parametrize("swapped", ["archive/expired/users/alice/memories", "users/alice/memories"])
def test_expiry_never_moves_a_memory_through_a_swapped_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """`prune --expired` moves a user's memory into `archive/expired/`.  The rename went
    by path after the target folder was checked: swapped for a link under the memory lock,
    the archive folder took alice's memory out of the vault, and her memory folder handed
    a file from outside into the archive.  Now both folders are opened and checked from
    the vault root and the rename goes through them: refused, nothing moves."""
    from contextlib import contextmanager

    from pandafs.learning.promotion import prune_expired
    from tests.support.learning import T0

    saved = Memory(vault).save("Book the dentist for Tuesday.", user="alice", keywords=["dentist"], now=T0)
    name = Path(saved.doc_path).name
    folder = vault.root / swapped
    outside = _outside(tmp_path, name)
    expired_folder = vault.root / "archive" / "expired" / "users" / "alice" / "memories"
    real = Vault.memory_lock

    @contextmanager
    def locked_then_swapped(self: Vault, owner: str | None, **kw: object):
        with real(self, owner, **kw):  # the owner's folders checked; the expiry's target made
            if expired_folder.is_dir():
                swap_for_link(folder, outside)
            yield

    monkeypatch.setattr(Vault, "memory_lock", locked_then_swapped)
    with pytest.raises(NotInVault, match=f"{name}: a folder on its path is a symbolic link or leaves"):
        prune_expired(vault, now=T0 + timedelta(hours=25))
    _untouched(outside, name)
    kept = "memories.moved" if swapped.startswith("users") else "memories"
    memories = vault.root / "users" / "alice" / kept
    assert "Book the dentist" in (memories / name).read_text()  # still where alice's memory was
    assert [p for p in (vault.root / "archive" / "expired").rglob("*") if p.is_file()] == []


def _swap_claim(vault: Vault, tmp_path: Path, outside: Path) -> None:
    """The one claim folder in `inbox/.processing/` moved out of the way (out of the
    inbox, so it is no orphan claim) and a link to `outside` put in its place."""
    processing = vault.root / "inbox" / ".processing"
    claim = next(p for p in processing.iterdir() if p.name != ".lock" and not p.is_symlink())
    claim.rename(tmp_path / "claim.moved")
    claim.symlink_to(outside, target_is_directory=True)


def _swap_claim_at(
    monkeypatch: pytest.MonkeyPatch, step: str, vault: Vault, tmp_path: Path, outside: Path
) -> None:
    """`_swap_claim` as the inbox reaches its checkpoint `step`."""
    from pandafs.inbox import Inbox as Box

    def swap_at_step(self: Box, reached: str) -> None:
        if reached == step:
            _swap_claim(vault, tmp_path, outside)

    monkeypatch.setattr(Box, "_checkpoint", swap_at_step)


def _tree(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


def test_clearing_a_claim_never_deletes_through_a_swapped_claim_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever can write `inbox/` can reach `.processing/`.  A claim folder swapped for a
    link once its query was filed away was cleared by path: the walk went through the link
    and deleted `plan.json`, every temporary-looking file (`*~`, `*.tmp`...) and every
    empty folder under the link's target, out of the vault.  Now the claim folder is
    opened and checked from the vault root and cleared through descriptors: refused."""

    outside = _outside(tmp_path, "notes.md~")
    (outside / "plan.json").write_bytes(OUTSIDE_BYTES)
    (outside / "deep").mkdir()
    (outside / "deep" / "draft.tmp").write_bytes(OUTSIDE_BYTES)
    (outside / "empty").mkdir()
    before = _tree(outside)
    _settled_query(vault.root / "inbox" / "bob" / "q.txt")

    _swap_claim_at(monkeypatch, "moved", vault, tmp_path, outside)
    with Inbox(vault, settle_s=0.2) as box:
        [result] = box.process_pending().results
    assert _tree(outside) == before
    assert (outside / "deep" / "draft.tmp").read_bytes() == OUTSIDE_BYTES
    assert result.status == "failed" and "a folder on its path is a symbolic link" in result.message
    assert (vault.root / "inbox" / "processed" / "q.txt").is_file()  # filed before the swap


def test_a_claim_never_looks_for_its_query_through_a_swapped_claim_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim finds its query file by walking its `query/` folder.  The walk went by
    path: with the claim folder swapped for a link just after the claim, it named (and
    stat'ed) the link target's files and planned the first one as the query (the plan's
    write was then refused, so the name got no further).  Now the folder is opened and
    checked from the vault root: refused before anything outside is named."""

    outside = tmp_path / "outside"
    (outside / "query" / "carol").mkdir(parents=True)
    (outside / "query" / "carol" / "private-diagnosis.txt").write_bytes(OUTSIDE_BYTES)
    before = _tree(outside)
    _settled_query(vault.root / "inbox" / "bob" / "q.txt")

    _swap_claim_at(monkeypatch, "claimed", vault, tmp_path, outside)
    with Inbox(vault, settle_s=0.2) as box:
        [result] = box.process_pending().results
        [claim] = [p for p in (vault.root / "inbox" / ".processing").iterdir() if p.is_symlink()]
        with pytest.raises(NotInVault, match="query: a folder on its path is a symbolic link"):
            box.claims.claimed_file(claim, None)  # what the next retry does first
    assert result.status == "failed" and "a folder on its path is a symbolic link" in result.message
    assert "private-diagnosis" not in result.message
    assert _tree(outside) == before


@pytest.mark.parametrize(("published", "planted"), [("q.txt", "query/bob/q.txt"), ("answer.md", "answer.md")])
def test_a_published_claim_file_is_never_removed_through_a_swapped_claim_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published: str, planted: str
) -> None:
    """Once the answer (or the query) is hard-linked to its public name, the claim's copy
    is removed.  That unlink went by path: a claim folder swapped for a link just after
    the link deleted the file of that name under the link's target (the query's name is
    the sender's choice), out of the vault.  Now it goes through the checked folder."""
    outside = tmp_path / "outside"
    (outside / planted).parent.mkdir(parents=True)
    (outside / planted).write_bytes(OUTSIDE_BYTES)
    _settled_query(vault.root / "inbox" / "bob" / "q.txt")
    real_link = os.link

    def link_then_swap(src: str, dst: str, **kw: object) -> None:
        real_link(src, dst, **kw)  # type: ignore[arg-type]
        if src == published and not (tmp_path / "claim.moved").exists():
            _swap_claim(vault, tmp_path, outside)

    monkeypatch.setattr(os, "link", link_then_swap)
    with Inbox(vault, settle_s=0.2) as box:
        [result] = box.process_pending().results
    assert (outside / planted).read_bytes() == OUTSIDE_BYTES
    assert _tree(outside) == sorted({planted, *(p.as_posix() for p in Path(planted).parents[:-1])})
    assert result.status == "failed" and "a folder on its path is a symbolic link" in result.message


def test_scope_changes_never_land_in_a_user_folder_swapped_for_a_link(vault: Vault, tmp_path: Path) -> None:
    """`promote` appends its scope decisions to the owner's maintenance log.  That writer
    was opened without the vault root: no folder check, no after-open check, so with
    `users/alice` a link the events went to the link's target (out of the vault, or into
    another user's folder).  Now the log's writer is checked like every other."""
    from events.schema import ScopeChanged
    from pandafs.learning.maintenance import append_changes
    from tests.support.learning import T0

    alice = vault.root / "users" / "alice"
    alice.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    alice.rename(alice.with_name("alice.moved"))
    alice.symlink_to(outside, target_is_directory=True)
    change = ScopeChanged(
        doc_id="alice/memories/x",
        doc_path="users/alice/memories/x.md",
        old_scope="new",
        new_scope="user",
        reason="promoted",
    )
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        append_changes(vault, "alice", [change], T0)
    assert list(outside.iterdir()) == []


def test_a_new_turn_folder_is_never_made_in_a_swapped_turns_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn number is claimed by making its folder, under the allocation lock.  That
    `mkdir` went by path after the turns folder was checked: swapped for a link once the
    lock was taken, the new turn folder was made under the link's target, out of the vault.
    Now it is made in the turns folder as opened and checked from the vault root."""
    from events.layout import Layout

    turns = vault.layout.turns_dir("alice")
    turns.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    real = Layout.highest_turn

    def locked_then_swapped(self: Layout, user: str) -> int:
        if not turns.is_symlink():
            turns.rename(turns.with_name("turns.moved"))
            turns.symlink_to(outside, target_is_directory=True)
        return real(self, user)

    monkeypatch.setattr(Layout, "highest_turn", locked_then_swapped)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        with vault.new_turn("alice"):
            pass
    assert list(outside.iterdir()) == []


def test_an_abandoned_turn_folder_is_never_removed_through_a_link(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn folder whose writer died before its first event is removed: its temporary
    files, an empty log, then the folder.  That went by path after the folder was locked
    and judged abandoned: swapped for a link in between, the link target's `.pfs-*` files
    and empty `events.jsonl` were deleted, out of the vault.  Now the folder is opened and
    checked from the vault root and emptied by descriptor: refused, nothing removed."""
    import pandafs.turns as turns_module

    [turn] = allocate_turns(vault, "alice")
    folder = vault.layout.turns_dir("alice") / turn
    outside = _outside(tmp_path, f"{fsio.TMP_PREFIX}notes.md.1.tmp")
    (outside / "events.jsonl").write_bytes(b"")
    real = turns_module.is_abandoned

    def judged_then_swapped(ref: TurnRef) -> bool:
        abandoned = real(ref)
        if not folder.is_symlink():
            folder.rename(tmp_path / "turn.moved")
            folder.symlink_to(outside, target_is_directory=True)
        return abandoned

    monkeypatch.setattr(turns_module, "is_abandoned", judged_then_swapped)
    ref = TurnRef("alice", turn, folder.parent)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        turns_module.remove_abandoned(vault, ref)
    assert sorted(os.listdir(outside)) == sorted([f"{fsio.TMP_PREFIX}notes.md.1.tmp", "events.jsonl"])


def test_an_imported_turn_is_never_written_through_a_swapped_staging_folder(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import builds each turn folder in `turns/.staging/` (I/O threads) and renames
    it into place.  The folder was made and opened by path after `.staging` was checked:
    swapped for a link in between (alice writes her own folder), her imported turns were
    written under the link's target, out of the vault.  Now each is made in `.staging` as
    opened and checked from the vault root."""
    import orjson

    from pandafs.turn_import import import_turns
    from pandafs.vault import STAGING_DIR

    staging = vault.layout.turns_dir("alice") / STAGING_DIR
    outside = tmp_path / "outside"
    outside.mkdir()
    real = Vault.reserve_turns

    def reserved_then_swapped(self: Vault, user: str, count: int) -> list[str]:
        names = real(self, user, count)
        if not staging.is_symlink():
            staging.rename(tmp_path / "staging.moved")
            staging.symlink_to(outside, target_is_directory=True)
        return names

    monkeypatch.setattr(Vault, "reserve_turns", reserved_then_swapped)
    source = tmp_path / "turns.jsonl"
    line = {
        "user": "alice",
        "external_id": "a-1",
        "timestamp": "2026-10-01T10:00:00+00:00",
        "query": "How often should I feed my hamster?",
        "response": "Once a day.",
    }
    source.write_bytes(orjson.dumps(line) + b"\n")
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        import_turns(vault, source)
    assert list(outside.rglob("*")) == []
