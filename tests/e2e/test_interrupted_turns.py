"""A turn whose `ask` process was killed is closed, never left INCOMPLETE for ever.

Real `pandafs ask` processes wait on a stalled LLM server (127.0.0.1) and are killed
with SIGKILL mid-turn.  The next `ask` of that user closes the turn as FAIL with an
`Interrupted` failure, and so does `verify --repair` (which lists it among its repairs);
a turn a live process still holds is left alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson

from events.clock import utcnow
from events.log import EventWriter, read_events
from events.schema import PhaseFailed, TurnStarted
from pandafs.pipeline import Pipeline
from pandafs.pipeline.interrupted import close_all_interrupted
from pandafs.pipeline.recovery import REPROJECTED, UNPROJECTED, recover, recover_recent, turn_state
from pandafs.vault import Vault
from tests.support.config import set_setting
from tests.support.openai_stub import OpenAIStub, StubReply
from tests.support.turns import allocate_turns

from ..conftest import REPO, run_pandafs


def _use_backend(vault: Vault, base_url: str | None) -> None:
    if base_url is None:
        set_setting(vault.root, "backend", '"offline"')
    else:
        set_setting(vault.root, "backend", '"openai"')
        set_setting(vault.root, "base_url", f'"{base_url}"')


def _kill_mid_turn(vault: Vault, stub: OpenAIStub, query: str) -> None:
    seen = len(stub.requests)
    proc = subprocess.Popen(
        [sys.executable, "-m", "pandafs", "--root", str(vault.root), "ask", query, "--user", "alice"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(stub.requests) == seen and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(stub.requests) > seen, "the turn never reached the LLM"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def _outcome(vault: Vault, turn: str) -> str | None:
    path = vault.layout.turn_dir("alice", turn) / "metadata.json"
    return orjson.loads(path.read_bytes())["outcome"] if path.exists() else None


def _interrupted(vault: Vault, turn: str) -> list[PhaseFailed]:
    events = read_events(vault.layout.turn_dir("alice", turn) / "events.jsonl")
    return [e.data for e in events if isinstance(e.data, PhaseFailed) and e.data.error_type == "Interrupted"]


def test_killed_asks_are_closed_by_the_next_ask_and_by_verify_repair(vault: Vault) -> None:
    with OpenAIStub(lambda request: StubReply(content="{}", delay_s=60)) as stub:
        _use_backend(vault, stub.base_url)
        _kill_mid_turn(vault, stub, "What laptop should I buy?")
        stub.stop()
    _use_backend(vault, None)
    assert _outcome(vault, "turn_000001") is None
    seen = run_pandafs("--root", vault.root, "verify", "--json")
    assert seen.code == 1
    assert {(p["path"], p["kind"]) for p in seen.json["problems"]} >= {
        ("users/alice/turns/turn_000001/events.jsonl", "interrupted")
    }

    nxt = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert nxt.code == 0, nxt.err
    assert _outcome(vault, "turn_000001") == "FAIL" and len(_interrupted(vault, "turn_000001")) == 1

    with OpenAIStub(lambda request: StubReply(content="{}", delay_s=60)) as stub:
        _use_backend(vault, stub.base_url)
        _kill_mid_turn(vault, stub, "And a bag for it?")
        stub.stop()
    _use_backend(vault, None)
    [turn] = [p.name for p in vault.layout.turn_dirs("alice") if _outcome(vault, p.name) is None]
    repaired = run_pandafs("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.json["problems"]
    rel = f"users/alice/turns/{turn}/events.jsonl"
    assert ("interrupted", "closed as FAIL") in {
        (p["kind"], p["message"]) for p in repaired.json["repaired"] if p["path"] == rel
    }
    assert _outcome(vault, turn) == "FAIL" and len(_interrupted(vault, turn)) == 1
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0


def test_a_turn_a_live_process_holds_is_left_alone(vault: Vault) -> None:
    [turn] = allocate_turns(vault, "alice")
    path = vault.layout.turn_dir("alice", turn) / "events.jsonl"
    with EventWriter(path, user="alice", turn=turn, new=True) as writer:
        writer.append(TurnStarted(query="still thinking", occurred_at=utcnow()))
        with Pipeline(vault) as pipeline:
            assert recover_recent(pipeline, "alice", before="turn_000002") == []
        assert close_all_interrupted(vault) == {"closed": [], "open": []}  # verify --repair's pass
        assert not _interrupted(vault, turn)
    with Pipeline(vault) as pipeline:
        assert recover_recent(pipeline, "alice", before="turn_000002") == ["alice/turn_000001"]
    assert _interrupted(vault, turn)


def test_a_turn_seen_unprojected_while_it_was_finishing_is_not_projected_again(vault: Vault) -> None:
    """`turn_state` can read a live turn between its `turn_completed` and its metadata.json
    (written last, under the log's lock); once that turn lets go its files are there, and
    recovery must not project and index it a second time nor report it as repaired."""
    with Pipeline(vault) as pipeline:
        turn = pipeline.ask("what is a quokka?", user="alice").turn
        pipeline.finisher.settle()  # its index commit, written behind the answer, has landed
        folder = vault.layout.turn_dir("alice", turn)
        written = (folder / "metadata.json").read_bytes()
        (folder / "metadata.json").unlink()  # as it is before the live turn's last write
        state = turn_state(vault.root, folder)
        assert state == UNPROJECTED
        (folder / "metadata.json").write_bytes(written)  # the live turn ends and lets go
        before = os.stat(folder / "metadata.json").st_mtime_ns
        assert recover(pipeline, "alice", turn, by="a test", state=state) is None
        assert os.stat(folder / "metadata.json").st_mtime_ns == before
        (folder / "metadata.json").unlink()  # a turn whose process really died there
        assert recover(pipeline, "alice", turn, by="a test", state=state) == REPROJECTED
        assert (folder / "metadata.json").read_bytes() == written


def test_a_folder_whose_ask_died_before_its_first_event_is_removed_by_the_next_ask(vault: Vault) -> None:
    [turn] = allocate_turns(vault, "alice")  # what a killed ask leaves: the folder, no events
    folder = vault.layout.turn_dir("alice", turn)
    old = time.time() - 10
    os.utime(folder, (old, old))
    got = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert got.code == 0, got.err
    assert not folder.exists() and got.json["turn_id"] != turn
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0


def test_a_young_eventless_folder_is_left_to_its_ask_not_waited_on(vault: Vault) -> None:
    with vault.new_turn("alice") as turn:  # a concurrent ask, a moment before its first event
        folder = vault.layout.turn_dir("alice", turn)
        with Pipeline(vault) as pipeline:
            assert recover_recent(pipeline, "alice", before="turn_000002") == []
        assert folder.is_dir()  # still its writer's


# A real `ask` process that stops at a chosen point: it SIGKILLs itself where the named
# Pipeline method would start (`die`), or says so on stdout and waits there (`hold`).
STOP_AT = """
import os, signal, sys
from pandafs.pipeline.finish import Finisher
from pandafs.pipeline.turn import Pipeline
from pandafs.vault import Vault

root, method, how, query = sys.argv[1:]
owner, _, method = method.rpartition(".")

def stop(*args, **kwargs):
    if how == "hold":
        print("holding", flush=True)
        sys.stdin.read()
    os.kill(os.getpid(), signal.SIGKILL)

setattr(Finisher if owner == "Finisher" else Pipeline, method, stop)
with Pipeline(Vault.open(root)) as pipeline:
    pipeline.ask(query, user="alice")
"""


def _ask_stopping_at(vault: Vault, method: str, how: str, query: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", STOP_AT, str(vault.root), method, how, query],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _killed_at(vault: Vault, method: str, query: str) -> None:
    proc = _ask_stopping_at(vault, method, "die", query)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL


def test_a_turn_killed_before_its_projections_is_projected_by_the_very_next_ask(vault: Vault) -> None:
    _killed_at(vault, "Finisher.finish", "Which zeppelin museum is worth a visit?")
    folder = vault.layout.turn_dir("alice", "turn_000001")
    assert read_events(folder / "events.jsonl")[-1].type == "turn_completed"
    assert not (folder / "context.md").exists() and not (folder / "metadata.json").exists()

    nxt = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert nxt.code == 0, nxt.err
    assert (folder / "context.md").is_file() and _outcome(vault, "turn_000001") not in (None, "INCOMPLETE")
    found = run_pandafs("--root", vault.root, "search", "zeppelin museum", "--user", "alice", "--json")
    assert found.code == 0, found.err
    assert "alice/turn_000001" in {hit["doc_id"] for hit in found.json}
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0


def test_watch_upkeep_projects_a_turn_killed_before_its_projections(vault: Vault) -> None:
    _killed_at(vault, "Finisher.finish", "Which zeppelin museum is worth a visit?")
    rel = "users/alice/turns/turn_000001/metadata.json"
    assert close_all_interrupted(vault) == {"closed": [rel], "open": []}
    assert _outcome(vault, "turn_000001") not in (None, "INCOMPLETE")
    with Pipeline(vault) as pipeline:
        hits = pipeline.memory.search("zeppelin museum", user="alice")
    assert "alice/turn_000001" in {hit["doc_id"] for hit in hits}


def test_a_folder_killed_before_its_first_event_is_removed_by_the_very_next_ask(vault: Vault) -> None:
    _killed_at(vault, "_drive", "What laptop should I buy?")
    folder = vault.layout.turn_dir("alice", "turn_000001")
    assert folder.is_dir() and not (folder / "events.jsonl").exists()

    nxt = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert nxt.code == 0, nxt.err
    assert not folder.exists() and nxt.json["turn_id"] != "turn_000001"
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0


def test_a_folder_a_live_allocator_holds_is_never_removed_however_old(vault: Vault) -> None:
    proc = _ask_stopping_at(vault, "_drive", "hold", "What laptop should I buy?")
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
        folder = vault.layout.turn_dir("alice", "turn_000001")
        old = time.time() - 3600
        os.utime(folder, (old, old))

        nxt = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
        assert nxt.code == 0, nxt.err
        assert folder.is_dir()
        repaired = run_pandafs("--root", vault.root, "verify", "--repair", "--json")
        assert folder.is_dir(), repaired.json["repaired"]
        assert repaired.code == 0, repaired.json["problems"]  # a live allocation is no problem
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    repaired = run_pandafs("--root", vault.root, "verify", "--repair", "--json")  # its writer is dead now
    assert repaired.code == 0, repaired.json["problems"]
    assert not folder.exists()


def test_a_turn_folder_swapped_for_a_link_is_not_recovered_through_it(vault: Vault) -> None:
    """Recovery reads a turn from the vault root down: alice's turn folder replaced by a
    link to bob's open turn is not read, closed or resumed through the link (the walks
    skip linked folders; this is the moment after they looked)."""
    from pandafs.pipeline.recovery import recover, turn_state

    [bobs] = allocate_turns(vault, "bob")
    log = vault.layout.turn_dir("bob", bobs) / "events.jsonl"
    with EventWriter(log, user="bob", turn=bobs, new=True) as writer:
        writer.append(TurnStarted(query="bob's secret plan", occurred_at=utcnow()))
    before = log.read_bytes()
    alices = vault.layout.turn_dir("alice", "turn_000001")
    alices.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(vault.layout.turn_dir("bob", bobs), alices)

    assert turn_state(vault.root, vault.layout.turn_dir("bob", bobs)) == "open"  # the real one
    assert turn_state(vault.root, alices) is None
    with Pipeline(vault) as pipeline:
        assert recover(pipeline, "alice", "turn_000001", by="a test") is None
    assert log.read_bytes() == before
