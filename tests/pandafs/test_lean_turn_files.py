"""A turn's text is kept twice (the event log and context.md), and older folders that kept
it a third time in metadata.json still read and verify clean."""

from __future__ import annotations

from pathlib import Path

import orjson

from pandafs.memory.turn_records import RecordCache, TurnReader
from pandafs.vault import Vault

ANSWER = "Tulips like sandy, well-drained soil. Plant the bulbs in autumn."
QUERY = "what soil do tulips like, and when should I plant them?"


def _import(vault: Vault, cli, tmp_path: Path) -> Path:
    source = tmp_path / "turns.jsonl"
    line = {"user": "alice", "timestamp": "2026-03-01T10:00:00Z", "query": QUERY, "response": ANSWER}
    source.write_bytes(orjson.dumps(line) + b"\n")
    got = cli("--root", vault.root, "import-turns", str(source), "--json")
    assert got.code == 0, got.out + got.err
    return vault.layout.turn_dir("alice", "turn_000001")


def test_the_answer_and_query_are_stored_twice_not_three_times(vault: Vault, cli, tmp_path: Path) -> None:
    turn = _import(vault, cli, tmp_path)
    files = {p.name: p.read_bytes().decode() for p in turn.iterdir()}
    assert sorted(files) == ["context.md", "events.jsonl", "metadata.json"]
    assert [name for name, text in sorted(files.items()) if ANSWER in text] == ["context.md", "events.jsonl"]
    assert files["events.jsonl"].count(QUERY) <= 2 and ANSWER not in files["metadata.json"]
    meta = orjson.loads(files["metadata.json"])
    assert "query" not in meta and meta["outcome"] == "IMPORTED" and meta["events"] == 3
    record = TurnReader(vault, "alice").live(1)
    assert record is not None and (record.query, record.body) == (QUERY, ANSWER)


def test_an_older_metadata_json_with_the_answer_reads_and_verifies_clean(
    vault: Vault, cli, tmp_path: Path
) -> None:
    turn = _import(vault, cli, tmp_path)
    meta = orjson.loads((turn / "metadata.json").read_bytes())
    # the shape written before: indented, with the text and every empty key
    old = {**meta, "answer": ANSWER, "query": QUERY, "resolved_query": QUERY, "summary": QUERY}
    old |= {"subject": None, "keywords": [], "inbox_file": None, "meta": None, "topics": []}
    old_bytes = orjson.dumps(old, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    (turn / "metadata.json").write_bytes(old_bytes)

    assert cli("--root", vault.root, "verify").code == 0
    checked = cli("--root", vault.root, "replay", "--check", "--json")
    assert checked.code == 0 and checked.json["drift"] == [], checked.out
    assert cli("--root", vault.root, "replay").code == 0
    assert (turn / "metadata.json").read_bytes() == old_bytes  # not rewritten: it says the same
    record = TurnReader(vault, "alice").live(1)
    assert record is not None and (record.query, record.body) == (QUERY, ANSWER)

    (turn / "metadata.json").write_bytes(old_bytes.replace(b'"outcome": "IMPORTED"', b'"outcome": "FAIL"'))
    assert cli("--root", vault.root, "replay", "--check").code == 1  # a real difference still drifts


def test_the_record_cache_sees_a_hand_edit_and_never_follows_a_swapped_in_link(
    vault: Vault,
    cli,
    tmp_path: Path,
) -> None:
    turn = _import(vault, cli, tmp_path)
    cache = RecordCache()
    first = TurnReader(vault, "alice", cache).live(1)
    assert first is not None and first.body == ANSWER
    assert TurnReader(vault, "alice", cache).live(1) is first  # parsed once

    context = turn / "context.md"
    context.write_text(context.read_text().replace("autumn", "October"))
    edited = TurnReader(vault, "alice", cache).live(1)
    assert edited is not None and edited.body == ANSWER.replace("autumn", "October")

    other = tmp_path / "elsewhere.md"
    other.write_text(context.read_text().replace("sandy", "SECRET"))
    context.unlink()
    context.symlink_to(other)
    assert TurnReader(vault, "alice", cache).live(1) is None


def test_an_answer_with_its_own_headings_reaches_the_tiers_whole(vault: Vault, cli, tmp_path: Path) -> None:
    answer = "Tulips like sandy soil.\n\n## When to plant\n\nIn autumn.\n\n### Depth\n\nThree bulbs deep."
    source = tmp_path / "turns.jsonl"
    line = {"user": "alice", "timestamp": "2026-03-01T10:00:00Z", "query": QUERY, "response": answer}
    source.write_bytes(orjson.dumps(line) + b"\n")
    assert cli("--root", vault.root, "import-turns", str(source)).code == 0
    record = TurnReader(vault, "alice").live(1)
    assert record is not None and (record.query, record.body) == (QUERY, answer)
