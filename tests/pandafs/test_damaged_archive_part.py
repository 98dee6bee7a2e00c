"""A damaged archive part costs what it holds, not the turn.

A truncated `archive/turns/month=…/part-*.parquet`: an `ask` whose sources touch one of
its turns still answers (the cold tier says `tier_failed`, no `phase_failed`), no host
path reaches the answer, the turn's files or its events, and `verify` names the part
and the turns it held.  Real vault, real Parquet, the real CLI.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from events.log import read_log
from pandafs.vault import Vault

NOW = "2026-06-01T12:00:00+00:00"


def _archived_vault(cli, vault: Vault, tmp_path: Path) -> Path:
    rows = [
        {"user": "alice", "timestamp": "2024-01-05T09:00:00Z", "query": "what is the quokka habitat",
         "response": "Quokkas live on Rottnest Island"},
        {"user": "alice", "timestamp": "2024-01-06T09:00:00Z", "query": "tell me about wombat burrows",
         "response": "Wombats dig long burrows"},
    ]  # fmt: skip
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    assert cli("--root", vault.root, "import-turns", source).code == 0
    got = cli("--root", vault.root, "archive", "--now", NOW, "--json")
    assert got.code == 0, got.err
    (part,) = sorted((vault.root / "archive" / "turns").rglob("part-*.parquet"))
    return part


def test_a_truncated_part_costs_its_turns_not_the_answer(cli, vault: Vault, tmp_path: Path) -> None:
    part = _archived_vault(cli, vault, tmp_path)
    with part.open("r+b") as handle:
        handle.truncate(200)

    got = cli("--root", vault.root, "ask", "where do quokkas live", "--user", "alice", "--json")

    assert got.code in (0, 1), got.err
    turn = vault.layout.turn_dir("alice", "turn_000003")
    types = [r["type"] for r in read_log(turn / "events.jsonl").records]
    assert "phase_failed" not in types and "turn_completed" in types
    failed = [r["data"] for r in read_log(turn / "events.jsonl").records if r["type"] == "tier_failed"]
    rel = part.relative_to(vault.root).as_posix()
    assert len(failed) == 1 and failed[0]["tier"] == "cold" and rel in failed[0]["message"]
    host = str(tmp_path)
    assert host not in got.out and host not in got.err
    for name in ("context.md", "metadata.json", "events.jsonl"):
        assert host not in (turn / name).read_text(), name

    checked = cli("--root", vault.root, "verify", "--json")
    assert checked.code == 1
    (problem,) = [p for p in checked.json["problems"] if p["kind"] == "archive_unreadable"]
    assert problem["path"] == rel and "alice/turn_000001" in problem["message"]
    assert host not in checked.out


def test_retrieving_a_turn_of_a_damaged_part_is_one_line_without_a_host_path(
    cli, vault: Vault, tmp_path: Path
) -> None:
    part = _archived_vault(cli, vault, tmp_path)
    part.write_bytes(b"PAR1 not parquet any more")
    got = cli("--root", vault.root, "retrieve", "alice/turn_000001")
    assert got.code == 1 and got.err.count("\n") == 1, got.err
    assert "cannot be read from the archive" in got.err and str(tmp_path) not in got.err
