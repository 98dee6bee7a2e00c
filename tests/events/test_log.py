"""The append-only log: seq, hash chain, tamper detection, torn tails, one writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from events.errors import LogBusyError, NotInVault, TornTailError
from events.log import EventWriter, check_chain, read_events, read_log, repair_torn_tail
from events.schema import ResponseSynthesized, TurnCompleted, TurnStarted, UnknownEvent

NOW = datetime(2026, 11, 21, 22, 0, tzinfo=UTC)


def _write_turn(path: Path, answers: int = 3) -> None:
    with EventWriter(path, user="alice", turn="turn_000001") as writer:
        writer.append(TurnStarted(query="which laptop?", occurred_at=NOW))
        for i in range(answers):
            writer.append(ResponseSynthesized(attempt=i, answer=f"answer {i} ü"))
        writer.append(TurnCompleted(outcome="APPROVE"))


def test_seq_and_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path)
    events = read_events(path)
    assert [e.seq for e in events] == list(range(5))
    assert events[0].prev == "0" * 64
    assert all(b.prev == a.hash for a, b in zip(events, events[1:], strict=False))
    assert type(events[0].data) is TurnStarted
    assert events[-1].data.outcome == "APPROVE"


def test_writer_resumes_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path, answers=1)
    with EventWriter(path, user="alice", turn="turn_000001") as writer:
        assert writer.next_seq == 3
        writer.append_many([ResponseSynthesized(answer="a"), ResponseSynthesized(answer="b")])
    assert check_chain(read_log(path)) is None
    assert len(read_events(path)) == 5


def test_every_byte_change_breaks_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path, answers=1)
    original = path.read_bytes()
    for position in range(len(original)):
        tampered = bytearray(original)
        tampered[position] = ord("#") if original[position] != ord("#") else ord("$")
        path.write_bytes(bytes(tampered))
        log = read_log(path)
        assert check_chain(log) is not None or log.torn_tail is not None, position


def test_reorder_and_delete_name_the_seq(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[2] + lines[1] + b"".join(lines[3:]))
    problem = check_chain(read_log(path))
    assert problem is not None and problem.seq == 1 and "expected seq 1" in str(problem)
    path.write_bytes(b"".join(lines[:2] + lines[3:]))
    problem = check_chain(read_log(path))
    assert problem is not None and problem.seq == 2


def test_whitespace_edit_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path)
    text = path.read_bytes().replace(b'"seq":1,', b'"seq": 1,', 1)
    path.write_bytes(text)
    problem = check_chain(read_log(path))
    assert problem is not None and problem.seq == 1 and "canonical" in str(problem)


def test_torn_tail_is_detected_and_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path)
    complete = path.read_bytes()
    with open(path, "ab") as handle:
        handle.write(b'{"v":1,"seq":5,"ts":"2026-')
    log = read_log(path)
    assert log.torn_tail == b'{"v":1,"seq":5,"ts":"2026-'
    assert check_chain(log) is None
    with pytest.raises(TornTailError):
        EventWriter(path, user="alice", turn="turn_000001").open()
    assert repair_torn_tail(path) == len(b'{"v":1,"seq":5,"ts":"2026-')
    assert path.read_bytes() == complete
    assert (tmp_path / "events.jsonl.torn").read_bytes() == b'{"v":1,"seq":5,"ts":"2026-\n'


HOLD_LOG = """
import fcntl, sys, time
with open(sys.argv[1], "ab") as log:
    fcntl.flock(log, fcntl.LOCK_EX)
    log.write(sys.argv[2].encode()); log.flush()  # a line half-appended, as a writer does
    print("holding", flush=True)
    time.sleep(60)
"""


def test_a_line_a_live_writer_is_appending_is_not_cut_as_torn(tmp_path: Path) -> None:
    """From outside, the line a live writer is appending looks like a torn tail:
    `repair_torn_tail` read and cut it without the log's lock, losing an event its
    writer was about to acknowledge.  It takes the lock, and a held log is left whole."""
    path = tmp_path / "events.jsonl"
    _write_turn(path)
    partial = '{"v":1,"seq":5,"ts":"2026-'
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOG, str(path), partial], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        before = path.read_bytes()
        with pytest.raises(LogBusyError):
            repair_torn_tail(path)
        assert path.read_bytes() == before and not (tmp_path / "events.jsonl.torn").exists()
    finally:
        holder.kill()
        holder.communicate()
    assert repair_torn_tail(path) == len(partial)  # its writer is gone: now it is torn


def test_second_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventWriter(path, user="alice", turn="turn_000001") as writer:
        writer.append(TurnStarted(query="q", occurred_at=NOW))
        with pytest.raises(LogBusyError, match="another process is writing"):
            EventWriter(path, user="alice", turn="turn_000001").open()


def test_unknown_event_types_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    _write_turn(path, answers=0)
    # A newer version appends a type we do not know, with a valid chain.
    from events.log import event_hash

    log = read_log(path)
    record = {
        "v": 2,
        "seq": len(log.records),
        "ts": "2026-11-21T22:00:01.000000Z",
        "user": "alice",
        "turn": "turn_000001",
        "phase": "future",
        "type": "hologram_rendered",
        "data": {"frames": 3},
        "prev": log.last_hash,
    }
    record["hash"] = event_hash(record)
    with open(path, "ab") as handle:
        handle.write(orjson.dumps(record) + b"\n")
    events = read_events(path)
    assert isinstance(events[-1], UnknownEvent)
    assert events[-1].data == {"frames": 3}
    with EventWriter(path, user="alice", turn="turn_000001") as writer:
        writer.append(ResponseSynthesized(answer="still appendable"))
    assert check_chain(read_log(path)) is None


REFUSED_APPEND = """
import sys
from pathlib import Path
from events.log import EventWriter
from events.fsio import append_file
from events.schema import ResponseSynthesized
from tests.support.faults import writes_refused_past
path = Path(sys.argv[1])
def limited(append):
    with writes_refused_past(4096):
        try:
            append()
        except OSError as exc:
            print("refused:", exc.strerror)
with EventWriter(path, user="alice", turn="turn_000001") as writer:
    limited(lambda: writer.append(ResponseSynthesized(answer="x" * 20_000)))
    writer.append(ResponseSynthesized(attempt=9, answer="after"))
other = path.with_name("other.jsonl")
append_file(other, b"one\\n", root=path.parent)
limited(lambda: append_file(other, b"y" * 20_000 + b"\\n", root=path.parent))
append_file(other, b"two\\n", root=path.parent)
"""


def test_an_append_the_disk_refuses_leaves_the_log_as_it_was(tmp_path: Path) -> None:
    """A write cut short (a full disk; a size limit here) is cut back to where the
    append began, and the next append goes on the chain.  Before, the bytes written so
    far stayed, and the next event was glued onto them: one line that is not JSON in
    the middle of the log, a broken chain no repair could mend."""
    path = tmp_path / "events.jsonl"
    _write_turn(path, answers=1)
    before = path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", REFUSED_APPEND, str(path)], capture_output=True, text=True, cwd=os.getcwd()
    )
    assert done.stdout.splitlines() == ["refused: File too large"] * 2, done.stderr
    log = read_log(path)
    assert log.torn_tail is None and check_chain(log) is None
    assert path.read_bytes().startswith(before)
    assert [e.data.answer for e in read_events(path)[3:]] == ["after"]
    assert (tmp_path / "other.jsonl").read_bytes() == b"one\ntwo\n"  # any append: `append_file` too


CHILD = """
import sys
import time
from pathlib import Path
from events.log import EventWriter
from events.clock import utcnow
from events.errors import NotInVault
from events.schema import ResponseSynthesized, TurnStarted
path = Path(sys.argv[1])
with EventWriter(path, user="alice", turn="turn_000001", durable=False) as writer:
    if writer.next_seq == 0:
        writer.append(TurnStarted(query="q", occurred_at=utcnow()))
    print("ready", flush=True)
    big = "x" * 500_000
    i = 0
    while True:
        writer.append(ResponseSynthesized(attempt=i, answer=big if i % 3 == 0 else f"small {i}"))
        i += 1
        time.sleep(0.002)
"""


def test_sigkill_mid_append_keeps_complete_lines(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    torn_seen = 0
    for round_ in range(4):
        before = path.read_bytes() if path.exists() else b""
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, cwd=os.getcwd()
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.07 * round_)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        log = read_log(path)
        assert check_chain(log) is None
        assert path.read_bytes().startswith(before)
        if log.torn_tail is not None:
            torn_seen += 1
            repair_torn_tail(path)
        assert read_log(path).torn_tail is None
    assert len(read_events(path)) > 4


def test_a_log_is_never_read_or_appended_through_a_symlink(tmp_path: Path) -> None:
    from events.errors import EventLogError
    from events.log import EventWriter, read_log
    from events.schema import TurnStarted

    real = tmp_path / "bob" / "events.jsonl"
    real.parent.mkdir()
    with EventWriter(real, user="bob", turn="turn_000001", new=True) as writer:
        writer.append(TurnStarted(query="bob's secret", occurred_at=datetime(2026, 1, 1, tzinfo=UTC)))
    before = real.read_bytes()
    link = tmp_path / "alice" / "events.jsonl"
    link.parent.mkdir()
    link.symlink_to(real)
    with pytest.raises(EventLogError, match="symbolic link"):
        read_log(link)
    with pytest.raises(EventLogError, match="symbolic link"):
        EventWriter(link, user="alice", turn="turn_000001").open()
    assert real.read_bytes() == before


def test_a_folder_or_a_hard_linked_file_in_a_log_s_place_is_named_not_read(tmp_path: Path) -> None:
    """What the one read rule refuses in a log's place is an `EventLogError` naming the log
    and why, as a link is: a folder (not an `IsADirectoryError` from the read), a file with
    other names (one may be another user's log)."""
    from events.errors import EventLogError

    folder = tmp_path / "a" / "events.jsonl"
    folder.mkdir(parents=True)
    with pytest.raises(EventLogError, match="events.jsonl: is a folder, not a file; not read"):
        read_log(folder)
    real = tmp_path / "b" / "events.jsonl"
    real.parent.mkdir()
    _write_turn(real)
    os.link(real, tmp_path / "b" / "other.jsonl")
    with pytest.raises(EventLogError, match="has other names .*; not read"):
        read_log(real)


def test_a_fifo_in_a_log_s_place_is_neither_appended_to_nor_repaired(tmp_path: Path) -> None:
    """A writer opens a log by the writers' one rule (a regular file, never a link): a FIFO
    there is an `EventLogError` naming it, for an append and for a repair alike."""
    from events.errors import EventLogError

    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(EventLogError, match="events.jsonl: is not a regular file; not written"):
        EventWriter(fifo, user="alice", turn="turn_000001").open()
    with pytest.raises(EventLogError, match="is not a regular file; not written"):
        repair_torn_tail(fifo)


def test_repair_with_a_root_cuts_no_log_outside_it(tmp_path: Path) -> None:
    """With the vault root, the log opened for the cut is checked too: a turn folder that
    is a link to a folder outside has that folder's log left whole and no `.torn` file."""
    outside = tmp_path / "outside"
    outside.mkdir()
    _write_turn(outside / "events.jsonl")
    with open(outside / "events.jsonl", "ab") as handle:
        handle.write(b'{"v":1,"seq":5,"ts":"2026-')
    before = (outside / "events.jsonl").read_bytes()
    root = tmp_path / "vault"
    (root / "turns").mkdir(parents=True)
    (root / "turns" / "turn_000001").symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link"):
        repair_torn_tail(root / "turns" / "turn_000001" / "events.jsonl", root=root)
    assert (outside / "events.jsonl").read_bytes() == before
    assert sorted(os.listdir(outside)) == ["events.jsonl"]


def test_parse_event_types_every_payload_keeps_an_unknown_one_and_names_what_does_not_fit() -> None:
    """Each record is validated by the payload class its type names; the data of a type this
    version does not know is kept as it is; a record that fits no schema is an error naming
    the field (which `verify` reports with the event's type)."""
    from pydantic import ValidationError

    from events.schema import PAYLOADS, UnknownEvent, parse_event

    envelope = {"v": 1, "seq": 0, "ts": "2026-11-21T22:00:00.000000Z", "user": "alice"}
    envelope |= {"turn": "turn_000001", "phase": "intake", "prev": "0" * 64, "hash": "1" * 64}
    for kind, payload in PAYLOADS.items():
        if any(field.is_required() for field in payload.model_fields.values()):
            with pytest.raises(ValidationError):
                parse_event({**envelope, "type": kind, "data": {}})
        else:
            assert type(parse_event({**envelope, "type": kind, "data": {}}).data) is payload
    started = {"query": "q", "occurred_at": envelope["ts"]}
    event = parse_event({**envelope, "type": "turn_started", "data": started})
    assert type(event.data) is PAYLOADS["turn_started"] and event.known and event.data.query == "q"
    newer = parse_event({**envelope, "type": "from_a_newer_version", "data": {"x": [1]}})
    assert isinstance(newer, UnknownEvent) and newer.data == {"x": [1]} and not newer.known
    with pytest.raises(ValidationError, match="query"):
        parse_event({**envelope, "type": "turn_started", "data": {**started, "query": 5}})
    with pytest.raises(ValidationError, match="seq"):
        parse_event({**envelope, "seq": -1, "type": "turn_started", "data": started})
