"""verify's promise: a completed turn's log is held to the end the user's ledger recorded.

A log rewritten whole with its hashes recomputed (and `metadata.json`'s `last_hash`
edited to match) passes its own chain; the ledger (`users/{u}/turns/.ledger.jsonl`,
itself chained) says what it ended with, so `verify` names it, `--repair` does not bless
it, and only a rewrite of the ledger too would hide it.  Real vaults, the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from events.ledger import LEDGER_NAME, Anchor, read_ledger, record_turns
from events.log import GENESIS, event_hash, read_log
from pandafs.vault import Vault


def _forge(turn: Path, old: str, new: str) -> str:
    """Rewrite the turn's log with `old` replaced by `new` in every event and every hash
    recomputed, and metadata.json's last_hash edited to match; the new last hash."""
    records = read_log(turn / "events.jsonl").records
    prev, lines = GENESIS, []
    for record in records:
        forged = orjson.loads(orjson.dumps(record).decode().replace(old, new))
        forged["prev"] = prev
        forged["hash"] = event_hash(forged)
        prev = forged["hash"]
        lines.append(orjson.dumps(forged) + b"\n")
    (turn / "events.jsonl").write_bytes(b"".join(lines))
    meta = orjson.loads((turn / "metadata.json").read_bytes())
    meta["last_hash"] = prev
    (turn / "metadata.json").write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    return prev


def test_a_log_rewritten_with_recomputed_hashes_is_named_and_not_repaired_away(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "ask", "my locker code is 4711", "--user", "alice").code == 0
    assert cli("--root", vault.root, "ask", "what is the capital of peru", "--user", "alice").code == 0
    assert cli("--root", vault.root, "verify").code == 0
    turn = vault.layout.turn_dir("alice", "turn_000001")
    _forge(turn, "4711", "9999")
    assert cli("--root", vault.root, "replay", "alice").code in (0, 1)

    got = cli("--root", vault.root, "verify", "--repair", "--json")

    assert got.code == 1, got.out
    kinds = {(p["path"], p["kind"]) for p in got.json["problems"]}
    assert ("users/alice/turns/turn_000001/events.jsonl", "ledger") in kinds
    assert not any(p["path"].startswith("users/alice/turns/turn_000002") for p in got.json["problems"])
    assert cli("--root", vault.root, "verify").code == 1  # the repair did not bless the forgery


def test_a_changed_ledger_line_is_named(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    assert cli("--root", vault.root, "ask", "and again", "--user", "alice").code == 0
    ledger = vault.layout.turns_dir("alice") / LEDGER_NAME
    lines = ledger.read_bytes().splitlines(keepends=True)
    first = orjson.loads(lines[0])
    first["events"] += 1
    ledger.write_bytes(orjson.dumps(first) + b"\n" + b"".join(lines[1:]))
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    assert {"path": f"users/alice/turns/{LEDGER_NAME}", "kind": "ledger"} in [
        {"path": p["path"], "kind": p["kind"]} for p in got.json["problems"]
    ]


def test_a_completed_turn_is_anchored_once_and_imports_in_one_append(
    cli, vault: Vault, tmp_path: Path
) -> None:
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    rows = [
        {"user": "alice", "timestamp": f"2024-01-0{i}T09:00:00Z", "query": f"q{i}", "response": "r"}
        for i in range(1, 4)
    ]
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert cli("--root", vault.root, "import-turns", source).code == 0
    turns = vault.layout.turns_dir("alice")
    read = read_ledger(vault.root, turns)
    assert read.problem is None and sorted(read.anchors) == [f"turn_00000{i}" for i in range(1, 5)]
    assert len((turns / LEDGER_NAME).read_bytes().splitlines()) == 4
    for name, anchor in read.anchors.items():
        log = read_log(turns / name / "events.jsonl")
        assert (anchor.events, anchor.last_hash) == (len(log.records), log.last_hash)


def test_a_vault_without_a_ledger_warns_and_repair_anchors(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    (vault.layout.turns_dir("alice") / LEDGER_NAME).unlink()
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 0 and [w["kind"] for w in got.json["warnings"]] == ["unanchored"]
    fixed = cli("--root", vault.root, "verify", "--repair", "--json")
    assert [r["kind"] for r in fixed.json["repaired"]] == ["unanchored"]
    assert cli("--root", vault.root, "verify", "--json").json["warnings"] == []


def test_record_turns_re_anchors_a_deliberately_rewritten_turn(cli, vault: Vault) -> None:
    """What a forget does after it re-chains a log: record the new end, and verify holds."""
    assert cli("--root", vault.root, "ask", "my locker code is 4711", "--user", "alice").code == 0
    turn = vault.layout.turn_dir("alice", "turn_000001")
    last = _forge(turn, "4711", "[forgotten]")
    assert cli("--root", vault.root, "verify").code == 1
    events = len(read_log(turn / "events.jsonl").records)
    record_turns(vault.layout.turns_dir("alice"), [Anchor("turn_000001", events, last)], root=vault.root)
    assert cli("--root", vault.root, "replay", "alice").code in (0, 1)
    got = cli("--root", vault.root, "verify", "--json")
    assert not [p for p in got.json["problems"] if p["kind"] in ("ledger", "chain", "drift")]
