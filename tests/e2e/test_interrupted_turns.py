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

from events import EventWriter, read_events
from events.clock import utcnow
from events.schema import PhaseFailed, TurnStarted
from pandafs.pipeline import Pipeline
from pandafs.pipeline.recovery import recover_recent
from pandafs.vault import Vault
from tests.support.openai_stub import OpenAIStub, StubReply

from ..conftest import REPO, run_pandafs


def _use_backend(vault: Vault, base_url: str | None) -> None:
    config = vault.layout.config_file
    text = config.read_text()
    if base_url is None:
        text = text.replace('backend = "openai"', 'backend = "offline"', 1)
    else:
        text = text.replace('backend = "offline"', 'backend = "openai"', 1)
        text = "\n".join(
            f'base_url = "{base_url}"' if line.startswith("base_url = ") else line
            for line in text.split("\n")
        )
    config.write_text(text)


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
    [turn] = vault.allocate_turns("alice")
    path = vault.layout.turn_dir("alice", turn) / "events.jsonl"
    with EventWriter(path, user="alice", turn=turn, new=True) as writer:
        writer.append(TurnStarted(query="still thinking", occurred_at=utcnow()))
        with Pipeline(vault) as pipeline:
            assert recover_recent(pipeline, "alice", before="turn_000002") == []
    with Pipeline(vault) as pipeline:
        assert recover_recent(pipeline, "alice", before="turn_000002") == ["alice/turn_000001"]
    assert _interrupted(vault, turn)


def test_a_folder_whose_ask_died_before_its_first_event_is_removed_by_the_next_ask(vault: Vault) -> None:
    [turn] = vault.allocate_turns("alice")  # what a killed ask leaves: the folder, no events
    folder = vault.layout.turn_dir("alice", turn)
    old = time.time() - 10
    os.utime(folder, (old, old))
    got = run_pandafs("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert got.code == 0, got.err
    assert not folder.exists() and got.json["turn_id"] != turn
    assert run_pandafs("--root", vault.root, "verify", "--json").code == 0


def test_a_young_eventless_folder_is_left_to_its_ask_not_waited_on(vault: Vault) -> None:
    [turn] = vault.allocate_turns("alice")  # a concurrent ask, a moment before its first event
    folder = vault.layout.turn_dir("alice", turn)
    with Pipeline(vault) as pipeline:
        assert recover_recent(pipeline, "alice", before="turn_000002") == []
    assert folder.is_dir()  # still its writer's; verify or a later ask removes it once old
