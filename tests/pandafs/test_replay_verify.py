"""replay recreates projections byte for byte; verify names damage."""

from __future__ import annotations

from pathlib import Path

import orjson

from pandafs.turn_import import import_turns
from pandafs.turns import iter_turns, read_metadata, replay
from pandafs.vault import Vault
from pandafs.verify import verify_vault
from tests.support.turns import allocate_turns


def _import(vault: Vault, tmp_path: Path, n: int = 5) -> None:
    lines = [
        orjson.dumps({"user": u, "timestamp": "2026-02-01T09:00:00Z", "query": f"q{i} {u}", "response": "r"})
        for i in range(n)
        for u in ("alice", "bob")
    ]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(lines))
    import_turns(vault, source)


def test_deleted_context_md_is_recreated_identically(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path)
    originals = {ref.path: (ref.path / "context.md").read_bytes() for ref in iter_turns(vault)}
    for path in originals:
        (path / "context.md").unlink()
    report = replay(vault)
    assert report.checked == 10 and len(report.rewritten) == 10
    for path, data in originals.items():
        assert (path / "context.md").read_bytes() == data


def test_check_reports_hand_edit_and_changes_nothing(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path)
    target = vault.layout.turn_dir("alice", "turn_000002") / "context.md"
    edited = target.read_text() + "\nA note I added by hand.\n"
    target.write_text(edited)
    report = replay(vault, check=True)
    assert [d.path for d in report.drift] == ["users/alice/turns/turn_000002/context.md"]
    assert target.read_text() == edited
    assert verify_vault(vault).problems[0].kind == "drift"


def test_verify_and_replay_tell_their_progress_bars_how_many_turns_to_expect(
    vault: Vault, tmp_path: Path
) -> None:
    """Counted before the first is checked (the whole vault, or one user's), each one
    checked advances it once."""
    _import(vault, tmp_path, n=3)
    for target, expected in ((None, 6), ("bob", 3)):
        totals: list[int] = []
        steps: list[int] = []
        report = verify_vault(vault, target=target, on_total=totals.append, progress=steps.append)
        assert report.ok and report.checked_turns == expected
        assert totals == [expected] and steps == [1] * expected
        totals, steps = [], []
        assert (
            replay(vault, target, check=True, on_total=totals.append, progress=steps.append).checked
            == expected
        )
        assert totals == [expected] and steps == [1] * expected


def test_verify_clean_then_names_tampered_seq(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path)
    assert verify_vault(vault).ok
    log = vault.layout.turn_dir("bob", "turn_000003") / "events.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"answer":"r"', b'"answer":"R"'))
    problems = verify_vault(vault).problems
    assert len(problems) == 1
    assert problems[0].kind == "chain"
    assert problems[0].path == "users/bob/turns/turn_000003/events.jsonl"
    assert "seq 1" in problems[0].message


def test_verify_repair_moves_torn_tail(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path)
    log = vault.layout.turn_dir("alice", "turn_000001") / "events.jsonl"
    before = log.read_bytes()
    with open(log, "ab") as handle:
        handle.write(b'{"v":1,"seq":3,"ts"')
    report = verify_vault(vault)
    assert [p.kind for p in report.problems] == ["torn_tail"]
    assert "after seq 2" in report.problems[0].message
    repaired = verify_vault(vault, repair=True)
    assert repaired.ok and [p.kind for p in repaired.repaired] == ["torn_tail"]
    assert log.read_bytes().startswith(before)
    assert (log.parent / "events.jsonl.torn").exists()
    assert verify_vault(vault).ok


def test_repairing_a_torn_tail_after_the_users_first_turn_leaves_verify_clean(
    vault: Vault, tmp_path: Path
) -> None:
    """The repair event moves the turn's end: the ledger, read at the user's first turn,
    must not then name that turn as rewritten."""
    _import(vault, tmp_path)
    log = vault.layout.turn_dir("alice", "turn_000003") / "events.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"v":1,"seq":3,"ts"')
    repaired = verify_vault(vault, repair=True)
    assert [p.kind for p in repaired.repaired] == ["torn_tail"]
    assert repaired.ok, repaired.problems
    assert verify_vault(vault).ok


def test_repairing_a_torn_tail_keeps_the_evidence_of_a_cut_log(vault: Vault, tmp_path: Path) -> None:
    """A log cut after its turn completed, then torn: `--repair` moves the torn line aside
    but records no new end for it, so that verify, and every one after, still names the cut."""
    _import(vault, tmp_path)
    log = vault.layout.turn_dir("alice", "turn_000003") / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:-1]) + b'{"v":1,"seq":3,"ts"')
    repaired = verify_vault(vault, repair=True)
    assert [p.kind for p in repaired.repaired] == ["torn_tail"]
    assert {p.kind for p in repaired.problems} >= {"ledger"}
    assert {p.kind for p in verify_vault(vault).problems} >= {"ledger", "cut_tail"}


def test_empty_turn_folder_is_reported(vault: Vault) -> None:
    allocate_turns(vault, "alice")
    report = verify_vault(vault)
    assert [p.kind for p in report.problems] == ["empty_turn"]


def test_verify_repair_lists_what_a_vault_wide_check_repaired(cli, vault: Vault) -> None:
    """A torn maintenance log is moved aside by `check_learning` under --repair: listed."""
    from events.log import EventWriter
    from events.schema import ScopeChanged

    path = vault.layout.user_dir("alice") / "memory.events.jsonl"
    path.parent.mkdir(parents=True)
    with EventWriter(path, user="alice", turn="memory", new=True) as writer:
        writer.append(
            ScopeChanged(
                doc_id="alice/memories/x",
                doc_path="users/alice/memories/x.md",
                old_scope="new",
                new_scope="user",
                reason="promoted",
            )
        )
    with open(path, "ab") as handle:
        handle.write(b'{"v":1,"seq":1,"ty')
    seen = cli("--root", vault.root, "verify", "--json")
    assert seen.code == 1
    assert ("users/alice/memory.events.jsonl", "torn_tail") in {
        (p["path"], p["kind"]) for p in seen.json["problems"]
    }
    fixed = cli("--root", vault.root, "verify", "--repair", "--json")
    assert fixed.code == 0, fixed.json["problems"]
    assert ("users/alice/memory.events.jsonl", "torn_tail") in {
        (p["path"], p["kind"]) for p in fixed.json["repaired"]
    }


def test_an_event_of_the_wrong_type_under_a_valid_chain_is_named_not_a_crash(cli, vault: Vault) -> None:
    """A hand edit that re-hashes the chain but gives a field the wrong type (a float
    made a word): rebuild finishes and verify names the turn, neither exits with a traceback."""
    from events.log import event_hash

    got = cli("--root", vault.root, "ask", "I prefer window seats", "--user", "alice", "--json")
    assert got.code == 0, got.err
    log = (vault.root / got.json["context_path"]).parent / "events.jsonl"
    records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    edited = next(r for r in records if isinstance(r["data"].get("confidence"), float))
    edited["data"]["confidence"] = "very"
    prev = records[0]["prev"]
    for record in records:  # re-hash from the edit on: the chain itself stays valid
        record["prev"] = prev
        record["hash"] = event_hash(record)
        prev = record["hash"]
    log.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))

    rebuilt = cli("--root", vault.root, "rebuild", "--json")
    assert rebuilt.code == 0, rebuilt.err  # was exit 1 with pydantic's many-line error
    checked = cli("--root", vault.root, "verify", "--json")
    assert "Traceback" not in checked.err, checked.err
    problems = {(p["path"], p["kind"]) for p in checked.json["problems"]}
    assert (vault.rel(log), "unreadable") in problems
    assert (vault.rel(log), "ledger") in problems  # re-hashed: its end is not the one recorded
    detail = next(
        p["message"]
        for p in checked.json["problems"]
        if (p["path"], p["kind"]) == (vault.rel(log), "unreadable")
    )
    assert "does not match its schema" in detail and "confidence" in detail


def test_read_metadata_gives_an_object_and_nothing_through_a_link(vault: Vault, tmp_path: Path) -> None:
    _import(vault, tmp_path, n=1)
    folder = next(iter_turns(vault)).path
    meta = read_metadata(vault.root, folder)
    assert meta is not None and meta["outcome"] == "IMPORTED"
    (folder / "metadata.json").write_bytes(b"[1, 2]")
    assert read_metadata(vault.root, folder) is None  # JSON, but not an object
    outside = tmp_path / "outside.json"
    outside.write_bytes(b'{"outcome": "APPROVE"}')
    (folder / "metadata.json").unlink()
    (folder / "metadata.json").symlink_to(outside)
    assert read_metadata(vault.root, folder) is None
    (folder / "metadata.json").unlink()
    assert read_metadata(vault.root, folder) is None
