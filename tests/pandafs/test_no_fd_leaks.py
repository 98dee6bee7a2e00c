"""No read or walk of the vault by descriptor leaks one, on any path.

The watcher, the MCP server and the inbox live for days and run these thousands of
times: one descriptor left open per call (an early return, a refusal, a generator
abandoned half-way) and the process hits its descriptor limit, after which nothing
is saved.  Each operation runs many times in this process, on a real vault holding
every refusal the code knows (a fifo as `events.jsonl`, a linked log, a linked turn
folder, a linked `turns/`, a missing log, a linked research cache, a linked memories
folder, a folder swapped for a link), and `/proc/self/fd` must not grow.  The
baseline is taken after two warm-up runs (tantivy opens its own files once)."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from events.errors import EventsError
from events.fsio import (
    append_file,
    atomic_write,
    open_vault_folder,
    read_vault_bytes,
    read_vault_file,
    rename_in_vault,
    unlink_in_vault,
    vault_folder,
)
from events.log import read_log
from indexers.turn_folder import folder_signature
from indexers.walk import scan_documents, walk_documents
from pandafs.archive import expand_turn, restore_turns
from pandafs.archive._common import log_held
from pandafs.errors import PandaError
from pandafs.inbox import Inbox
from pandafs.learning.maintenance import read_changes
from pandafs.mcp_server import _listing
from pandafs.memory.api import Memory
from pandafs.research.visits import load_visits
from pandafs.turn_import.run import import_turns
from pandafs.vault import Vault
from pandafs.verify import verify_vault
from pandafs.watch import Upkeep, Watch, reconcile_dirs
from tests.conftest import run_pandafs
from tests.support.links import swap_for_link
from tests.support.turns import allocate_turns

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")

NOW = datetime(2026, 6, 1, tzinfo=UTC)
SLACK = 3  # a descriptor or two a library may open lazily once (tantivy, pyarrow)


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


WARM_UPS = 6
"""Runs before the count: a turn that cites memories often enough opens the index writer
to materialise their usage (once, then it stays open), which is not a leak."""


def _steady(op: Callable[[], object], times: int) -> int:
    """Descriptors still open after `times` more runs of `op` than after the warm-ups.
    A refusal raised by `op` is one of the paths under test, and is kept until the count
    is taken, as a caller that reports or logs its errors keeps them: a descriptor
    closed only when its error's traceback is freed counts as open."""
    kept: list[BaseException] = []

    def once() -> None:
        try:
            op()
        except (OSError, EventsError, PandaError, ValueError) as exc:
            kept.append(exc)

    for _ in range(WARM_UPS):
        once()
    before = _open_fds()
    for _ in range(times):
        once()
    return _open_fds() - before


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Vault, Path]:
    """alice's and bob's turns imported and indexed, then every refusal planted."""
    tmp = tmp_path_factory.mktemp("fds")
    vault, _ = Vault.init(tmp / "vault")
    rows = [
        {"user": u, "timestamp": f"2026-01-0{i}T00:00:00Z", "query": f"kiwi {i}", "response": "a kiwi"}
        for i in range(1, 5)
        for u in ("alice", "bob", "carol")
    ]
    source = tmp / "turns.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert run_pandafs("--root", vault.root, "import-turns", source).code == 0
    assert run_pandafs("--root", vault.root, "rebuild").code == 0
    outside = tmp / "outside"
    (outside / "cache").mkdir(parents=True)
    turn = vault.layout.turn_dir
    fifo_log = turn("alice", "turn_000001") / "events.jsonl"
    fifo_log.unlink()
    os.mkfifo(fifo_log)
    linked_log = turn("bob", "turn_000001") / "events.jsonl"
    linked_log.unlink()
    linked_log.symlink_to(turn("alice", "turn_000003") / "events.jsonl")
    (turn("bob", "turn_000002") / "events.jsonl").unlink()  # a missing log
    swap_for_link(turn("alice", "turn_000002"), turn("bob", "turn_000003"))  # a linked turn folder
    swap_for_link(vault.layout.turns_dir("carol"), vault.layout.turns_dir("bob"))  # a linked turns/
    (turn("alice", "turn_000003") / "webpage_cache").symlink_to(outside / "cache")
    cache = turn("alice", "turn_000004") / "webpage_cache"
    (cache / "v1").mkdir(parents=True)
    os.mkfifo(cache / "v1" / "manifest.json")
    (cache / "v2").symlink_to(outside / "cache")
    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "real.md").write_text("---\nscope: user\n---\na note on kiwis\n")
    (memories / "linked").symlink_to(outside, target_is_directory=True)
    (memories / "deep" / "deeper").mkdir(parents=True)
    (memories / "deep" / "deeper" / "n.md").write_text("a deep note\n")
    (memories / "pipe.md").unlink(missing_ok=True)
    os.mkfifo(memories / "pipe.md")
    return vault, outside


def _reads(vault: Vault, outside: Path) -> dict[str, Callable[[], object]]:
    root, turn = vault.root, vault.layout.turn_dir
    alice, bob, linked = "users/alice/turns", "users/bob/turns", turn("alice", "turn_000002")
    return {
        "read_vault_file": lambda: read_vault_file(root, f"{alice}/turn_000003/events.jsonl"),
        "read_vault_file of a fifo": lambda: read_vault_file(root, f"{alice}/turn_000001/events.jsonl"),
        "read_vault_file through a linked folder": lambda: read_vault_file(
            root, f"{alice}/turn_000002/events.jsonl"
        ),
        "read_vault_file of a link": lambda: read_vault_file(root, f"{bob}/turn_000001/events.jsonl"),
        "read_vault_file of a missing file": lambda: read_vault_file(root, f"{alice}/nothing"),
        "read_vault_file of a folder": lambda: read_vault_file(root, alice),
        "read_vault_bytes refused": lambda: read_vault_bytes(root, linked / "context.md"),
        "open_vault_folder refused": lambda: os.close(open_vault_folder(root, "users/carol/turns")),
        "open_vault_folder of a file": lambda: os.close(
            open_vault_folder(root, f"{alice}/turn_000003/context.md")
        ),
        "read_log": lambda: read_log(turn("alice", "turn_000003") / "events.jsonl", root=root),
        "read_log of a fifo": lambda: read_log(turn("alice", "turn_000001") / "events.jsonl", root=root),
        "read_log of a link": lambda: read_log(turn("bob", "turn_000001") / "events.jsonl", root=root),
        "read_log through a linked folder": lambda: read_log(
            turn("alice", "turn_000002") / "events.jsonl", root=root
        ),
        "read_log of a missing log": lambda: read_log(turn("bob", "turn_000002") / "events.jsonl", root=root),
        "turn_dirs, turn_numbers, users": lambda: [
            (vault.layout.turn_dirs(u), vault.layout.turn_numbers(u, staged=True))
            for u in [*vault.layout.users(), "carol", "nobody"]
        ],
        "scan_documents": lambda: scan_documents(root, refused=[]),
        "scan_documents under a linked folder": lambda: scan_documents(root, "users/carol/turns", refused=[]),
        "walk_documents left half-way": lambda: list(itertools.islice(walk_documents(root), 2)),
        "folder_signature": lambda: folder_signature(turn("alice", "turn_000004"), root),
        "folder_signature of a linked turn": lambda: folder_signature(turn("alice", "turn_000002"), root),
        "mcp listing": lambda: (_listing(vault, "alice"), _listing(vault, "carol")),
        "research visits": lambda: (
            load_visits(turn("alice", "turn_000003"), root=root),
            load_visits(turn("alice", "turn_000004"), root=root),
        ),
        "learning log read": lambda: (read_changes(vault, "alice"), read_changes(vault, "carol")),
    }


def _writes(vault: Vault, outside: Path) -> dict[str, Callable[[], object]]:
    root, turn = vault.root, vault.layout.turn_dir
    linked = turn("alice", "turn_000002")
    counter = itertools.count()
    carol = outside / "carol.jsonl"  # carol's turns/ is a link: her import is refused
    carol.write_bytes(
        orjson.dumps({"user": "carol", "timestamp": "2026-01-01T00:00:00Z", "query": "q", "response": "a"})
    )
    return {
        "import refused": lambda: import_turns(vault, carol),
        "vault_folder through a link": lambda: vault_folder(root, linked / "new"),
        "atomic_write through a link": lambda: atomic_write(linked / "x.md", b"x", root=root),
        "append_file through a link": lambda: append_file(linked / "x.log", b"x", root=root),
        "unlink through a link": lambda: unlink_in_vault(root, linked / "context.md"),
        "rename through a link": lambda: rename_in_vault(root, linked / "context.md", linked / "c.md"),
        "atomic_write": lambda: atomic_write(root / "users/alice/memories/w.md", b"w\n", root=root),
        "append_file": lambda: append_file(root / "users/alice/memories/a.log", b"a\n", root=root),
        "archive log lock": lambda: _held_logs(turn("alice", "turn_000001"), *vault.layout.turn_dirs("bob")),
        "new and held turns": lambda: _new_and_held(vault, f"turn_{next(counter):06d}"),
    }


def _held_logs(*folders: Path) -> list[str | None]:
    why = []
    for folder in folders:
        with log_held(folder) as reason:
            why.append(reason)
    return why


def _new_and_held(vault: Vault, turn: str) -> None:
    with vault.new_turn("dora"), vault.held_turn("alice", turn):
        pass


def _leaks(ops: dict[str, Callable[[], object]], times: int) -> dict[str, int]:
    """The operations that left descriptors open, with how many."""
    return {name: grew for name, op in ops.items() if (grew := _steady(op, times)) > SLACK}


def test_reads_and_walks_leave_no_descriptor_open(staged: tuple[Vault, Path]) -> None:
    assert _leaks(_reads(*staged), 200) == {}


def test_writes_and_refused_writes_leave_no_descriptor_open(staged: tuple[Vault, Path]) -> None:
    assert _leaks(_writes(*staged), 200) == {}


def test_verify_search_and_reconcile_leave_no_descriptor_open(staged: tuple[Vault, Path]) -> None:
    vault, _ = staged
    memory = Memory(vault)
    assert _steady(lambda: verify_vault(vault), 20) <= SLACK
    assert _steady(lambda: memory.search("kiwi", user="alice"), 50) <= SLACK
    assert _steady(lambda: reconcile_dirs(memory, ["users/alice", "users/carol"]), 50) <= SLACK


def test_the_inbox_leaves_no_descriptor_open(
    staged: tuple[Vault, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answered and rejected queries, over and over in one inbox; then with the claim
    folder swapped for a link once the query is filed away, and with the new turn's
    folder swapped as its turn starts (both refused: the query fails)."""
    vault, outside = staged
    serial = itertools.count()
    swap = {"at": ""}

    def drop_and_process() -> list[str]:
        n = next(serial)
        (vault.root / "inbox" / "bob").mkdir(parents=True, exist_ok=True)
        (vault.root / "inbox" / "bob" / f"q{n}.md").write_text("How do I feed a hamster?\n")
        (vault.root / "inbox" / f"bad{n}.md").write_text("")
        return [r.status for r in box.process_pending().results]

    def swap_at(box: Inbox, reached: str) -> None:
        if reached == swap["at"] == "moved":
            processing = vault.root / "inbox" / ".processing"
            for claim in processing.iterdir():
                if claim.name != ".lock":
                    swap_for_link(claim, outside)
        if reached == swap["at"] == "started":
            swap_for_link(vault.layout.turn_dirs("bob")[-1], outside)

    monkeypatch.setattr(Inbox, "_checkpoint", swap_at)
    with Inbox(vault, settle_s=0.0, empty_grace_s=0.0) as box:
        for at, status in [("", "answered"), ("moved", "failed"), ("started", "failed")]:
            swap["at"] = at
            assert status in drop_and_process()
            assert _steady(drop_and_process, 15) <= SLACK, at


def test_the_watch_loop_and_its_upkeep_leave_no_descriptor_open(staged: tuple[Vault, Path]) -> None:
    """The watcher's own round (inbox, reconcile) and every upkeep job, forced each time,
    with a fresh abandoned turn folder for the `interrupted` job to clear."""
    vault, _ = staged
    upkeep = Upkeep(vault, interval_s=0, clock=lambda: NOW)  # the watch's round runs none; forced, all

    source = vault.root.parent / "more.jsonl"
    source.write_bytes(
        orjson.dumps({"user": "erin", "timestamp": "2026-01-01T00:00:00Z", "query": "q", "response": "a"})
    )

    def upkeep_round() -> None:
        restore_turns(vault)
        import_turns(vault, source)
        allocate_turns(vault, "alice")
        upkeep.run_due(NOW, force=True)
        expand_turn(vault, "erin/turn_000001", now=NOW, record=False)

    watch = Watch(vault, upkeep=upkeep)
    try:
        assert _steady(lambda: watch.run_once(), 20) <= SLACK
        assert _steady(upkeep_round, 20) <= SLACK
    finally:
        watch.close()


def test_a_failed_import_closes_its_source_at_once(vault: Vault, tmp_path: Path) -> None:
    """`import_turns` opened the source, then made `users/` outside any `with`: when that
    failed (here `users/` is a dangling link) the source stayed open for as long as the
    error was kept (its traceback holds the frame), then was closed by the finalizer with
    a ResourceWarning.  A caller that keeps its errors (a report, a log of the last
    failures) kept one descriptor per failed import."""
    source = tmp_path / "turns.jsonl"
    source.write_bytes(
        orjson.dumps({"user": "erin", "timestamp": "2026-01-01T00:00:00Z", "query": "q", "response": "a"})
    )
    users = vault.layout.users_dir
    shutil.rmtree(users)
    users.symlink_to(tmp_path / "nowhere", target_is_directory=True)
    kept: list[BaseException] = []
    before = _open_fds()
    for _ in range(50):
        with pytest.raises(OSError) as caught:
            import_turns(vault, source)
        kept.append(caught.value)
    assert _open_fds() - before <= SLACK
