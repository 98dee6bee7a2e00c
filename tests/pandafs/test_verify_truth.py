"""verify tells the whole truth: every skipped, unindexed, stale or gone document is
named with its path and reason; import, incremental indexing and rebuild apply the
same skip rule; a log cut at its end is detected; `--repair` lists what it did."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.config import set_setting
from tests.support.orphans import add_orphan

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _problems(result) -> dict[str, tuple[str, str]]:
    return {p["path"]: (p["kind"], p["message"]) for p in result.json["problems"]}


def test_verify_names_each_skipped_file_with_its_reason_before_and_after_repair(vault: Vault, cli) -> None:
    cli("--root", vault.root, "save", "I prefer window seats", "--user", "alice", "--type", "preference")
    cli("--root", vault.root, "save", "tulips need cold winters", "--user", "alice")
    prefs = vault.layout.preferences("alice")
    prefs.write_text("---\nkeywords: [a, b\n---\n- I prefer window seats\n")
    memories = vault.layout.memories_dir("alice")
    (memories / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50)
    (memories / "huge.md").write_bytes(b"tulips " * 800_000)  # 5.6 MB > [index] max_file_bytes
    bad = {"users/alice/preferences.md", "users/alice/memories/image.md", "users/alice/memories/huge.md"}

    before = cli("--root", vault.root, "verify", "--json")
    assert before.code == 1
    named = _problems(before)
    assert bad <= set(named), named
    assert all(named[p][0] == "index_stale" for p in bad)

    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 1, repaired.out
    after = _problems(repaired)
    assert set(after) == bad
    assert after["users/alice/preferences.md"][0] == "skipped"
    assert "broken frontmatter" in after["users/alice/preferences.md"][1]
    assert "binary" in after["users/alice/memories/image.md"][1]
    assert "too large" in after["users/alice/memories/huge.md"][1]
    assert {p["path"] for p in repaired.json["repaired"]} >= {"users/alice/memories/image.md"} - bad
    again = cli("--root", vault.root, "verify", "--json")
    assert again.code == 1 and set(_problems(again)) == bad  # never "ok" while they are missing
    human = cli("--root", vault.root, "verify")
    assert all(path in human.out for path in bad)


def test_repair_indexes_a_file_skipped_as_too_large_once_the_limit_allows_it(vault: Vault, cli) -> None:
    memories = vault.layout.memories_dir("alice")
    memories.mkdir(parents=True)
    (memories / "long.md").write_text("zanzibar spice notes " * 400)  # 8.4 KB
    set_setting(vault.root, "max_file_bytes", 4000)
    cli("--root", vault.root, "rebuild")
    assert (
        _problems(cli("--root", vault.root, "verify", "--json"))["users/alice/memories/long.md"][0]
        == "skipped"
    )

    set_setting(vault.root, "max_file_bytes", 5_000_000)
    before = _problems(cli("--root", vault.root, "verify", "--json"))
    assert before == {"users/alice/memories/long.md": ("index_stale", "skipped when indexed, readable now")}
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0 and _problems(repaired) == {}, repaired.out
    assert [p["path"] for p in repaired.json["repaired"]] == ["users/alice/memories/long.md"]
    assert [h["doc_id"] for h in Memory(vault).search("zanzibar", user="alice", now=NOW)] == [
        "alice/memories/long"
    ]


def test_verify_names_unindexed_and_gone_files_and_repair_lists_each(vault: Vault, cli) -> None:
    cli("--root", vault.root, "save", "kiwis are fuzzy", "--user", "alice")
    assert cli("--root", vault.root, "verify").code == 0
    memories = vault.layout.memories_dir("alice")
    (memories / "written-by-hand.md").write_text("mangoes ripen on the windowsill\n")
    gone = next(p for p in memories.iterdir() if p.name.startswith("memory-"))
    gone.unlink()
    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    problems = _problems(got)
    assert problems["users/alice/memories/written-by-hand.md"] == ("index_stale", "not in the index")
    assert problems[f"users/alice/memories/{gone.name}"] == ("index_stale", "indexed but the file is gone")

    fixed = cli("--root", vault.root, "verify", "--repair", "--json")
    assert fixed.code == 0, fixed.out
    assert {p["path"] for p in fixed.json["repaired"]} == {
        "users/alice/memories/written-by-hand.md",
        f"users/alice/memories/{gone.name}",
    }
    hits = cli("--root", vault.root, "search", "mangoes", "--user", "alice", "--json").json
    assert [h["doc_path"] for h in hits] == ["users/alice/memories/written-by-hand.md"]


def test_import_incremental_and_rebuild_apply_the_same_skip_rule(vault: Vault, tmp_path: Path, cli) -> None:
    """A NUL in a turn is indexed without it, the same way by import, an incremental index
    and a rebuild; a turn larger than the index takes is refused by name at import, never
    imported unsearchable."""
    ts = "2026-01-01T00:00:00Z"
    rows = [
        {"user": "carol", "timestamp": ts, "query": "a stray\x00 NUL kiwiword", "response": "ok"},
        {
            "user": "carol",
            "timestamp": ts,
            "query": "bigword " + "x " * 1_500_000,
            "response": "y " * 1_500_000,
        },
        {"user": "carol", "timestamp": ts, "query": "plain grapeword", "response": "ok"},
    ]
    source = tmp_path / "rows.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    got = cli("--root", vault.root, "import-turns", source, "--json")
    assert got.code == 1 and got.json["imported"] == 2
    assert [f["line"] for f in got.json["failed"]] == [2] and "too large" in got.json["failed"][0]["error"]
    memory = Memory(vault)
    queries = ["kiwiword", "bigword", "grapeword", "stray"]

    def results() -> list[list[tuple[str, str]]]:
        return [
            [(h["doc_id"], h["title"]) for h in memory.search(q, user="carol", now=NOW, limit=10)]
            for q in queries
        ]

    imported = results()
    assert imported[0] and "\x00" not in imported[0][0][1]
    assert imported[1] == [] and imported[2]
    assert cli("--root", vault.root, "verify").code == 0

    assert cli("--root", vault.root, "rebuild").code == 0
    assert results() == imported
    memory.index_paths([f"users/carol/turns/turn_00000{i}/context.md" for i in (1, 2)], force=True)
    assert results() == imported


def _ask(vault: Vault, cli) -> Path:
    got = cli("--root", vault.root, "ask", "what soil do tulips like?", "--user", "alice", "--json")
    assert got.code == 0 and got.json["outcome"] != "INCOMPLETE", got.out + got.err
    return (vault.root / got.json["context_path"]).parent


def test_a_log_cut_at_its_end_is_detected_by_verify_and_replay(vault: Vault, cli) -> None:
    turn = _ask(vault, cli)
    log = turn / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    assert len(lines) > 3
    projected = {name: (turn / name).read_bytes() for name in ("context.md", "metadata.json")}
    log.write_bytes(b"".join(lines[:-2]))  # a valid chain, two events short

    got = cli("--root", vault.root, "verify", "--json")
    assert got.code == 1
    cut = [p for p in got.json["problems"] if p["kind"] == "cut_tail"]
    assert [p["path"] for p in cut] == [vault.rel(log)]
    assert f"recorded {len(lines)}" in cut[0]["message"]

    replayed = cli("--root", vault.root, "replay", "--json")
    assert replayed.code == 1 and [e["path"] for e in replayed.json["errors"]] == [vault.rel(log)]
    assert {name: (turn / name).read_bytes() for name in projected} == projected  # nothing overwritten
    cut_log = log.read_bytes()
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 1 and "cut_tail" in [p["kind"] for p in repaired.json["problems"]]
    assert cli("--root", vault.root, "ask", "and roses?", "--user", "alice").code == 0
    # not taken for an interrupted turn: never closed, resumed or re-projected over
    assert log.read_bytes() == cut_log
    assert {name: (turn / name).read_bytes() for name in projected} == projected


def test_metadata_records_how_many_events_it_projected(vault: Vault, cli) -> None:
    turn = _ask(vault, cli)
    meta = orjson.loads((turn / "metadata.json").read_bytes())
    records = [orjson.loads(line) for line in (turn / "events.jsonl").read_bytes().splitlines()]
    assert meta["events"] == len(records) and meta["last_hash"] == records[-1]["hash"]
    assert cli("--root", vault.root, "verify").code == 0


def test_a_damaged_index_is_one_clear_error_named_by_verify_and_rebuilt_by_repair(vault: Vault, cli) -> None:
    """A corrupt or missing file of the index was an "internal error ValueError" from
    every command that searched, and from verify itself.  Now search says the index
    cannot be read and to rebuild it, verify names it, and `--repair` rebuilds it."""
    cli("--root", vault.root, "save", "tulips need cold winters", "--user", "alice")
    tantivy = vault.root / "indexes" / "fulltext" / "tantivy"
    for damage in ("meta.json", "schema.json", ".store"):
        if damage.endswith(".json"):
            (tantivy / damage if damage == "meta.json" else tantivy.parent / damage).write_text("garbage\n")
        else:
            for store in tantivy.glob("*.store"):
                store.unlink()
        found = cli("--root", vault.root, "search", "tulips", "--user", "alice")
        assert found.code == 1
        assert found.err.startswith("error: the index indexes/fulltext cannot be read ("), found.err
        assert found.err.rstrip().endswith("run `pandafs rebuild`") and found.err.count("\n") == 1
        assert str(vault.root) not in found.err  # (an MCP client is told nothing of where the vault is)
        named = cli("--root", vault.root, "verify", "--json")
        assert named.code == 1
        [path] = [p["path"] for p in named.json["problems"] if p["kind"] == "index_damaged"]
        assert path.startswith("indexes/fulltext/") and path.endswith(damage), path  # the file itself
        repaired = cli("--root", vault.root, "verify", "--repair", "--json")
        assert repaired.code == 0, repaired.out
        [rebuilt] = repaired.json["repaired"]
        assert (rebuilt["kind"], rebuilt["message"][-9:]) == ("index_damaged", ": rebuilt")
        hits = cli("--root", vault.root, "search", "tulips", "--user", "alice", "--json").json
        assert [h["doc_id"].split("/")[0] for h in hits] == ["alice"], hits


def test_a_turn_whose_only_line_was_torn_is_clean_after_one_repair(vault: Vault, cli) -> None:
    """A process killed (or refused by a full disk) while writing a turn's first event
    leaves a log of one torn line.  `--repair` moves it aside; the folder then held an
    empty log and the torn bytes, an `empty_turn` problem no repair could clear, so
    verify failed for good.  Now it is a warning naming the kept bytes."""
    turn = vault.root / "users" / "alice" / "turns" / "turn_000001"
    turn.mkdir(parents=True)
    (turn / "events.jsonl").write_bytes(b'{"seq":0,"type":"turn_started","user":"ali')
    first = cli("--root", vault.root, "verify", "--repair", "--json")
    assert [p["kind"] for p in first.json["repaired"]] == ["torn_tail"], first.out
    again = cli("--root", vault.root, "verify", "--repair", "--json")
    assert again.code == 0, again.out
    [warning] = again.json["warnings"]
    assert (warning["path"], warning["kind"]) == ("users/alice/turns/turn_000001/events.jsonl", "empty_turn")
    assert (turn / "events.jsonl.torn").read_bytes() == b'{"seq":0,"type":"turn_started","user":"ali\n'


def test_an_index_of_another_version_is_named_relative_to_the_vault(vault: Vault, cli) -> None:
    """The one line that asks for a rebuild after an upgrade names the index as the vault
    does: it held the vault's absolute path, which the MCP server passes to its client."""
    cli("--root", vault.root, "save", "tulips need cold winters", "--user", "alice")
    (vault.root / "indexes" / "fulltext" / "schema.json").write_text('{"schema_version": 4}')
    found = cli("--root", vault.root, "search", "tulips", "--user", "alice")
    assert found.code == 1
    expected = "error: the index indexes/fulltext was built by another PandaFS version; run `pandafs rebuild`"
    assert found.err.strip() == expected


def test_an_index_holding_documents_its_state_does_not_name_is_rebuilt_by_repair(vault: Vault, cli) -> None:
    """A document in tantivy that the index's state does not record (a delete tantivy
    lost, 2026-11-25) cannot be reconciled by path.  `--repair` listed it as
    "reconciled" and left it; verify failed again.  Now the index is rebuilt."""
    cli("--root", vault.root, "save", "tulips need cold winters", "--user", "alice")
    index = Memory(vault).index
    add_orphan(index.folder.tantivy_dir, "users/alice/memories/gone.md", "tulips")
    named = cli("--root", vault.root, "verify", "--json")
    assert named.code == 1
    kind, message = _problems(named)["indexes/fulltext"]
    assert kind == "index_stale" and "holds 2 documents but 1 are recorded" in message, message
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert repaired.code == 0, repaired.out
    [rebuilt] = repaired.json["repaired"]
    assert (rebuilt["path"], rebuilt["kind"], rebuilt["message"][-9:]) == (
        "indexes/fulltext",
        "index_stale",
        ": rebuilt",
    )
    assert cli("--root", vault.root, "verify").code == 0
    # with a changed document beside it, the count shows only once that is reconciled:
    # one `--repair` does both
    add_orphan(index.folder.tantivy_dir, "users/alice/memories/gone.md", "tulips")
    (vault.root / "users" / "alice" / "memories" / "roses.md").write_text("Roses want sun.\n")
    both = cli("--root", vault.root, "verify", "--repair", "--json")
    assert both.code == 0, both.out
    assert [p["message"].rsplit(": ", 1)[1] for p in both.json["repaired"]] == ["reconciled", "rebuilt"]


HOLD_LOG = """
import sys
from pathlib import Path
from events.log import EventWriter
path, user, turn, root = sys.argv[1:]
with EventWriter(Path(path), user=user, turn=turn, root=Path(root)):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
"""


def test_repair_leaves_a_turn_being_written_alone_and_projects_it_once_it_is_not(vault: Vault, cli) -> None:
    """A turn whose process is still writing it has no context.md or metadata.json yet:
    `verify` named them `missing` and `--repair` projected the log as it first read it,
    without the log's lock, over the files the turn then wrote at its end (seen 2026-11-25:
    a turn that ended APPROVE left `INCOMPLETE`, drifted, past any repair).  A turn whose
    log's writer lock is held is now left alone; once free it is read again under the lock."""
    import subprocess
    import sys

    from pandafs.pipeline import Pipeline
    from tests.conftest import REPO

    with Pipeline(vault) as pipeline:
        result = pipeline.ask("which tulips like cold winters?", user="alice")
    turn = vault.layout.turn_dir("alice", result.turn)
    for name in ("context.md", "metadata.json"):
        (turn / name).unlink()  # as while its process runs
    held = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOG, str(turn / "events.jsonl"), "alice", result.turn, str(vault.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert held.stdout is not None and held.stdout.readline().strip() == "held"
        for args in (("verify", "--json"), ("verify", "--repair", "--json")):
            live = cli("--root", vault.root, *args)
            turn_kinds = [
                p["kind"] for p in live.json["problems"] + live.json["repaired"] if "index" not in p["kind"]
            ]
            assert turn_kinds == [], live.out  # (the index is told the files went: not the turn's problem)
        assert not (turn / "context.md").exists() and not (turn / "metadata.json").exists()
    finally:
        held.communicate("")
    named = _problems(cli("--root", vault.root, "verify", "--json"))
    assert named[vault.rel(turn / "context.md")][0] == "missing", named
    repaired = cli("--root", vault.root, "verify", "--repair", "--json")
    assert {p["path"] for p in repaired.json["repaired"]} >= {vault.rel(turn / "context.md")}, repaired.out
    assert cli("--root", vault.root, "verify").code == 0
    assert "outcome: APPROVE" in (turn / "context.md").read_text() or result.outcome != "APPROVE"
