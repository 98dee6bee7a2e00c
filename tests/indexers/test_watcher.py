"""The vault watcher: a real observer process on real temp folders."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from indexers.watcher import ChangeBatch, VaultWatcher, WatcherError, default_ignore

Batches = list[ChangeBatch]


def collect(watcher: VaultWatcher, until: Callable[[Batches], bool], timeout: float = 15.0) -> Batches:
    """Batches from `watcher` until `until(batches)` holds; fail after `timeout` seconds."""
    batches: Batches = []
    deadline = time.monotonic() + timeout
    while not until(batches):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail(f"timed out waiting; got {batches!r}")
        batch = watcher.next_batch(timeout=remaining)
        if batch is not None:
            batches.append(batch)
    return batches


def seen(batches: Batches) -> set[str]:
    return {path for batch in batches for path in batch.paths}


def covers(batch: ChangeBatch, rel_path: str) -> bool:
    """Whether a consumer handling `batch` looks at `rel_path` (listed, under a rescanned
    folder, or everything after an overflow)."""
    if batch.overflow or rel_path in batch.paths:
        return True
    parts = rel_path.split("/")
    return any("/".join(parts[:i]) in batch.rescan_dirs for i in range(1, len(parts)))


def rescanned(batches: Batches) -> set[str]:
    return {path for batch in batches for path in batch.rescan_dirs}


def has(*paths: str) -> Callable[[Batches], bool]:
    return lambda batches: set(paths) <= seen(batches)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    return vault


@pytest.fixture
def watcher(root: Path) -> Iterator[VaultWatcher]:
    with VaultWatcher(root, debounce_s=0.1, max_delay_s=1.0) as started:
        yield started


def test_create_modify_delete_are_reported(root: Path, watcher: VaultWatcher) -> None:
    before = time.monotonic()
    note = root / "notes" / "a.md"
    note.write_text("# A\n")  # right after start(): must not be missed
    batches = collect(watcher, has("notes/a.md"))
    assert before <= batches[0].first_seen <= time.monotonic()
    assert not any(batch.overflow for batch in batches)

    with note.open("a") as f:
        f.write("more\n")
    collect(watcher, has("notes/a.md"))

    note.unlink()
    collect(watcher, has("notes/a.md"))


def test_atomic_save_reports_the_destination_not_the_temp_file(root: Path, watcher: VaultWatcher) -> None:
    (root / "notes" / "x.md").write_text("old\n")
    collect(watcher, has("notes/x.md"))

    tmp = root / "notes" / ".pfs-x.md.123.tmp"
    tmp.write_text("new\n")
    os.replace(tmp, root / "notes" / "x.md")
    batches = collect(watcher, has("notes/x.md"))
    assert seen(batches) == {"notes/x.md"}


def test_moves_report_both_ends_and_folders_are_rescanned(
    capfd: pytest.CaptureFixture[str], root: Path, tmp_path: Path, watcher: VaultWatcher
) -> None:
    (root / "notes" / "old.md").write_text("x\n")
    collect(watcher, has("notes/old.md"))

    (root / "notes" / "old.md").rename(root / "notes" / "new.md")
    collect(watcher, has("notes/old.md", "notes/new.md"))

    (root / "notes").rename(root / "renamed")
    batches = collect(watcher, lambda b: {"notes", "renamed"} <= rescanned(b))
    assert all(covers(batch, "renamed/new.md") for batch in batches[-1:])

    (root / "renamed").rename(tmp_path / "outside")  # one dir delete, nothing per file
    collect(watcher, lambda b: "renamed" in rescanned(b))

    (tmp_path / "outside").rename(root / "back")
    collect(watcher, lambda b: any(covers(x, "back/new.md") for x in b))
    assert capfd.readouterr().err == ""  # nothing from the observer process either


def test_files_in_a_new_folder_are_covered_and_the_folder_is_watched(
    root: Path, watcher: VaultWatcher
) -> None:
    deep = root / "users" / "ann" / "turns" / "turn_000001"
    deep.mkdir(parents=True)
    (deep / "context.md").write_text("# turn\n")
    collect(watcher, lambda b: any(covers(x, "users/ann/turns/turn_000001/context.md") for x in b))

    (deep / "later.md").write_text("later\n")
    collect(watcher, has("users/ann/turns/turn_000001/later.md"))


def test_ignored_paths_never_appear(root: Path, watcher: VaultWatcher) -> None:
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}")
    (root / "indexes" / "fulltext").mkdir(parents=True)
    (root / "indexes" / "foo").write_text("segment")
    (root / "indexes" / "fulltext" / "meta.json").write_text("{}")
    (root / "a.md.swp").write_text("swap")
    (root / "inbox" / ".processing").mkdir(parents=True)
    (root / "inbox" / ".processing" / "q.md").write_text("q")
    (root / ".hidden.md").write_text("dot file")
    (root / "notes" / "sentinel.md").write_text("written last")

    batches = collect(watcher, has("notes/sentinel.md"))
    assert seen(batches) == {"notes/sentinel.md"}
    assert rescanned(batches) <= {"inbox"}


def test_the_ignore_predicate_can_be_extended(root: Path) -> None:
    def ignore(rel: str) -> bool:
        return default_ignore(rel) or rel.startswith("archive/")

    with VaultWatcher(root, debounce_s=0.1, ignore=ignore) as watcher:
        (root / "archive").mkdir()
        (root / "archive" / "2026-01.parquet").write_bytes(b"PAR1")
        (root / "notes" / "kept.md").write_text("x")
        batches = collect(watcher, has("notes/kept.md"))
    assert seen(batches) == {"notes/kept.md"}
    assert rescanned(batches) == {"archive"}


@pytest.mark.parametrize(
    ("rel", "ignored"),
    [
        ("notes/a.md", False),
        ("users/ann/turns/turn_000001/events.jsonl", False),
        ("inbox/q.md", False),
        ("indexes", True),
        ("indexes/fulltext/meta.json", True),
        ("notes/indexes/a.md", False),
        (".obsidian/app.json", True),
        (".trash/a.md", True),
        ("inbox/.processing/q.md", True),
        ("notes/.pfs-a.md.12.tmp", True),
        ("a.md.swp", True),
        ("a.md~", True),
        ("notes/.#a.md", True),
    ],
)
def test_default_ignore(rel: str, ignored: bool) -> None:
    assert default_ignore(rel) is ignored


def test_quick_writes_to_one_file_make_one_batch(root: Path) -> None:
    note = root / "notes" / "busy.md"
    with VaultWatcher(root) as watcher:  # default debounce 0.25 s
        for i in range(20):
            note.write_text(f"version {i}\n")
        first = watcher.next_batch(timeout=5.0)
        assert first is not None and first.paths == {"notes/busy.md"}
        assert watcher.next_batch(timeout=1.0) is None


def test_a_constant_stream_is_flushed_within_max_delay(root: Path) -> None:
    note = root / "notes" / "stream.md"
    arrivals: list[tuple[float, ChangeBatch]] = []
    with VaultWatcher(root, debounce_s=0.25, max_delay_s=1.0) as watcher:
        start = time.monotonic()
        i = 0
        while time.monotonic() - start < 3.0:
            note.write_text(f"line {i}\n")
            i += 1
            time.sleep(0.05)
            batch = watcher.next_batch(timeout=0)
            if batch is not None:
                arrivals.append((time.monotonic(), batch))
        stream_end = time.monotonic()
    assert arrivals, "no batch while the stream was running"
    assert arrivals[0][0] < stream_end
    for arrived, batch in arrivals:
        assert batch.paths == {"notes/stream.md"}
        assert arrived - batch.first_seen < 1.0 + 0.6  # max_delay + slack for a busy machine
    assert len(arrivals) >= 2


def test_pending_counts_what_is_not_yet_taken(root: Path) -> None:
    with VaultWatcher(root, debounce_s=1.0, max_delay_s=2.0) as watcher:
        assert watcher.pending == 0
        (root / "notes" / "one.md").write_text("1")
        (root / "notes" / "two.md").write_text("2")
        deadline = time.monotonic() + 5
        while watcher.pending < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert watcher.pending == 2
        batch = watcher.next_batch(timeout=5)
        assert batch is not None and batch.paths == {"notes/one.md", "notes/two.md"}
        assert watcher.pending == 0


def test_a_burst_is_covered_or_flagged_as_overflow(root: Path) -> None:
    """5,000 files in 50 new folders: the consumer can always recover every file."""
    expected = [f"burst/d{d:02d}/f{f:03d}.md" for d in range(50) for f in range(100)]
    with VaultWatcher(root) as watcher:
        for d in range(50):
            folder = root / "burst" / f"d{d:02d}"
            folder.mkdir(parents=True)
            for f in range(100):
                (folder / f"f{f:03d}.md").write_bytes(b"# burst\n")

        def recovered(batches: Batches) -> bool:
            return any(b.overflow for b in batches) or all(
                any(covers(b, path) for b in batches) for path in expected
            )

        batches = collect(watcher, recovered, timeout=30.0)
    overflow = any(b.overflow for b in batches)
    print(f"burst: {len(seen(batches))} paths, {len(rescanned(batches))} dirs, {overflow=}")


def test_a_kernel_queue_overflow_is_reported(root: Path) -> None:
    """Freeze the observer process so the 16,384-event inotify queue overflows."""
    a, b = root / "notes" / "a.md", root / "notes" / "b.md"
    a.write_text("a")
    b.write_text("b")
    with VaultWatcher(root, debounce_s=0.1) as watcher:
        pid = watcher.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            for _ in range(10_000):  # alternate, or inotify merges identical events
                os.utime(a)
                os.utime(b)
        finally:
            os.kill(pid, signal.SIGCONT)
        batches = collect(watcher, lambda x: any(batch.overflow for batch in x))
        assert all(batch.error is None for batch in batches)
        assert watcher.alive


def test_a_dead_observer_is_reported_and_can_be_restarted(root: Path) -> None:
    watcher = VaultWatcher(root, debounce_s=0.1)
    watcher.start()
    try:
        pid = watcher.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        last = watcher.next_batch(timeout=10)
        assert last is not None and last.overflow and last.error
        assert not watcher.alive
        with pytest.raises(WatcherError):
            watcher.next_batch(timeout=1)

        watcher.start()
        assert watcher.alive and watcher.pid != pid
        (root / "notes" / "after.md").write_text("x")
        collect(watcher, has("notes/after.md"))
    finally:
        watcher.stop()


def test_removing_the_vault_folder_ends_the_watcher(root: Path) -> None:
    with VaultWatcher(root, debounce_s=0.1) as watcher:
        shutil.rmtree(root)
        batches: Batches = []
        with pytest.raises(WatcherError, match="still there"):
            while True:
                batch = watcher.next_batch(timeout=10)
                assert batch is not None
                batches.append(batch)
        assert batches[-1].overflow and batches[-1].error
        assert not watcher.alive


def test_stop_is_quick_clean_and_idempotent(root: Path) -> None:
    watcher = VaultWatcher(root, debounce_s=0.1)
    with pytest.raises(WatcherError):
        watcher.next_batch(timeout=0)
    watcher.start()
    pid = watcher.pid
    assert pid is not None and watcher.alive
    (root / "notes" / "late.md").write_text("x")
    time.sleep(0.05)

    started = time.monotonic()
    watcher.stop()
    assert time.monotonic() - started < 2.0
    watcher.stop()
    assert not watcher.alive and watcher.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)

    started = time.monotonic()
    while (batch := watcher.next_batch(timeout=5)) is not None:  # what was seen is kept
        assert batch.paths <= {"notes/late.md"}
    assert time.monotonic() - started < 0.5


def test_start_fails_clearly_without_a_folder(tmp_path: Path) -> None:
    with pytest.raises(WatcherError, match="not a folder"):
        VaultWatcher(tmp_path / "missing").start()


OUT_OF_DESCRIPTORS = """
import os, resource, sys
from pathlib import Path
from indexers.watcher import VaultWatcher
resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
os.close(held.pop())
os.close(held.pop())  # room for one pipe, not two
try:
    VaultWatcher(Path(sys.argv[1])).start()
except OSError as exc:
    print("start:", exc.strerror)
os.close(os.pipe()[0])  # the first pipe was given back
print("ok")
"""


def test_start_out_of_descriptors_gives_back_what_it_opened(root: Path) -> None:
    """A watcher that cannot open its second pipe closes its first: in a long-lived
    process at its descriptor limit, each retry of `start` must not take two more."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", OUT_OF_DESCRIPTORS, str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.stdout.splitlines() == ["start: Too many open files", "ok"], done.stderr


def test_the_watcher_imports_events_only() -> None:
    import indexers.watcher as module

    tree = ast.parse(Path(module.__file__ or "").read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
    }
    assert "pandafs" not in imported
    assert imported & {"events", "watchdog"} == {"events", "watchdog"}


def test_a_watchdog_warning_reaches_the_parent_as_an_overflow() -> None:
    """watchdog reports a kernel queue overflow only as a log warning: the observer's sender,
    its log handler, relays any warning as an "overflow" message."""
    import logging
    from multiprocessing import Pipe

    from indexers.observer import _Sender

    received, sent = Pipe(duplex=False)
    sender = _Sender(sent)
    log = logging.getLogger("watchdog.observers.inotify_buffer")
    log.addHandler(sender)
    try:
        log.warning("queue overflow %s", "lost")
        sender.finish()
    finally:
        log.removeHandler(sender)
    assert received.poll(5) and received.recv() == [("overflow", "watchdog: queue overflow lost")]
