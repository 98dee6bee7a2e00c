"""search / save / retrieve / rebuild through the CLI contract."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest


@pytest.fixture
def root(cli, tmp_path: Path) -> Path:
    root = tmp_path / "v"
    cli("--root", root, "init")
    lines = [
        {
            "user": "alice",
            "external_id": "a1",
            "timestamp": "2026-10-01T10:00:00Z",
            "query": "we adopted a syrian hamster",
            "response": "congrats",
            "meta": {"day": "d1"},
        },
        {
            "user": "alice",
            "external_id": "a2",
            "timestamp": "2026-10-02T10:00:00Z",
            "query": "best budget laptop?",
            "response": "a lenovo",
        },
        {
            "user": "bob",
            "external_id": "b1",
            "timestamp": "2026-10-01T10:00:00Z",
            "query": "my hamster escaped",
            "response": "oh no",
        },
    ]
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(x) for x in lines))
    assert cli("--root", root, "import-turns", source).code == 0
    return root


def test_search_json_hits(cli, root: Path) -> None:
    result = cli("--root", root, "search", "hamster", "--user", "alice", "--json")
    assert result.code == 0
    hits = result.json
    assert [h["doc_id"] for h in hits] == ["alice/turn_000001"]
    assert hits[0]["meta"] == {"day": "d1"} and hits[0]["external_id"] == "a1"
    assert hits[0]["doc_path"] == "users/alice/turns/turn_000001/context.md"


def test_a_query_with_nothing_searchable_finds_nothing(cli, root: Path) -> None:
    """Only an empty query lists documents; words the index cannot hold ("???", a token
    longer than any word) are not an empty query, so they match nothing."""
    listed = cli("--root", root, "search", "", "--user", "alice", "--json")
    assert listed.code == 0 and len(listed.json) == 2
    for query in ("???", "y" * 130):
        result = cli("--root", root, "search", query, "--user", "alice", "--json")
        assert result.code == 0 and result.json == [], query


def test_search_batch(cli, root: Path, tmp_path: Path) -> None:
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        '{"query": "hamster", "user": "bob"}\n'
        "not json\n"
        '{"query": "laptop", "user": "alice", "limit": 1}\n'
        '{"query": "x", "user": "../etc"}\n'
        '{"query": "hamster", "types": ["context"]}\n'
    )
    result = cli("--root", root, "search", "--batch", batch, "--json")
    assert result.code == 1 and "2 line(s)" in result.err  # two lines failed: not a success
    out = [orjson.loads(line) for line in result.out.splitlines()]
    assert len(out) == 5
    assert [h["doc_id"] for h in out[0]] == ["bob/turn_000001"]
    assert "error" in out[1]
    assert [h["doc_id"] for h in out[2]] == ["alice/turn_000002"]
    assert "invalid user id" in out[3]["error"]
    assert {h["doc_id"] for h in out[4]} == {"alice/turn_000001", "bob/turn_000001"}


def test_save_retrieve_roundtrip(cli, root: Path) -> None:
    saved = cli(
        "--root",
        root,
        "save",
        "Prefers aisle seats",
        "--user",
        "alice",
        "--type",
        "preference",
        "--key",
        "seat",
        "--json",
    )
    assert saved.code == 0 and saved.json["doc_id"] == "alice/preferences"
    got = cli("--root", root, "retrieve", "alice/preferences", "--json")
    assert got.code == 0 and "aisle seats" in got.json["content"]
    assert set(got.json) >= {"doc_id", "doc_path", "metadata", "content", "archived"}
    found = cli("--root", root, "search", "aisle", "--user", "alice", "--json").json
    assert found[0]["doc_id"] == "alice/preferences"


@pytest.mark.parametrize("bad", ["../x", "Alice", "a/b", "", "a" * 200])
def test_bad_user_exit_2_and_nothing_created(cli, root: Path, bad: str) -> None:
    before = sorted(p.relative_to(root) for p in root.rglob("*") if "indexes" not in p.parts)
    for args in (("save", "x", "--user", bad), ("search", "x", "--user", bad)):
        result = cli("--root", root, *args)
        assert result.code == 2, (args, result.err)
        assert result.err.startswith("error:") and result.err.count("\n") == 1
    after = sorted(p.relative_to(root) for p in root.rglob("*") if "indexes" not in p.parts)
    assert after == before


def test_rebuild_summary(cli, root: Path) -> None:
    (root / "knowledge" / "broken.md").write_text("---\nid: [\n---\n")
    result = cli("--root", root, "rebuild", "--json")
    assert result.code == 0
    data = result.json
    assert data["indexed"] == 3 and data["documents"] == 3
    assert data["skipped"][0]["path"] == "knowledge/broken.md"
    assert {"seconds", "docs_per_s"} <= set(data)
    human = cli("--root", root, "rebuild")
    assert "skipped knowledge/broken.md" in human.out


def test_retrieve_missing_is_exit_2(cli, root: Path) -> None:
    result = cli("--root", root, "retrieve", "alice/memories/none")
    assert result.code == 2 and "no document" in result.err


def test_search_after_before_and_batch_dates(cli, root: Path, tmp_path: Path) -> None:
    def found(*args: str) -> list[str]:
        result = cli("--root", root, "search", "hamster", "--json", *args)
        assert result.code == 0, result.err
        return sorted(h["external_id"] for h in result.json)

    assert found() == ["a1", "b1"]
    assert found("--after", "2026-10-01T12:00:00") == []
    assert found("--before", "2026-10-01T12:00:00", "--user", "bob") == ["b1"]
    assert cli("--root", root, "search", "hamster", "--after", "yesterday").code == 2
    batch = tmp_path / "dated.jsonl"
    batch.write_text(
        '{"query": "laptop", "user": "alice", "after": "2026-10-02"}\n'
        '{"query": "laptop", "user": "alice", "before": "2026-10-02"}\n'
        '{"query": "which laptop did I ask about yesterday?", "user": "alice", "now": "2026-10-03T09:00Z"}\n'
    )
    result = cli("--root", root, "search", "--batch", batch, "--json")
    out = [orjson.loads(line) for line in result.out.splitlines()]
    assert [h["external_id"] for h in out[0]] == ["a2"]
    assert out[1] == []
    assert out[2][0]["external_id"] == "a2" and out[2][0]["date"] == "2026-10-02"


def test_the_memory_tool_schema_offers_dates(cli) -> None:
    tools = {t["function"]["name"]: t["function"] for t in cli("tools", "--json").json}
    params = tools["search_memory"]["parameters"]["properties"]
    assert {"after", "before"} <= set(params)


def test_search_unit_episode_one_hit_per_conversation(cli, tmp_path: Path) -> None:
    root = tmp_path / "v"
    cli("--root", root, "init")
    said = ["the kayak leaks", "a kayak patch kit", "kayak glue dries overnight"]
    lines = [
        {"user": "alice", "external_id": f"k{i}", "timestamp": f"2026-10-01T10:0{i}:00Z",
         "query": text, "response": "ok", "meta": {"session": "boat"}}
        for i, text in enumerate(said)
    ] + [
        {"user": "alice", "external_id": "c1", "timestamp": "2026-10-05T10:00:00Z",
         "query": "a kayak trip in May", "response": "ok", "meta": {"session": "trip"}}
    ]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(orjson.dumps(x) for x in lines))
    assert cli("--root", root, "import-turns", source).code == 0
    turns = cli("--root", root, "search", "kayak", "--user", "alice", "--json").json
    episodes = cli("--root", root, "search", "kayak", "--user", "alice", "--unit", "episode", "--json").json
    assert len(turns) == 4 and sorted(h["episode"] for h in episodes) == ["boat", "trip"]
    human = cli("--root", root, "search", "kayak", "--user", "alice", "--unit", "episode")
    assert human.code == 0 and "episode boat" in human.out and "episode trip" in human.out
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"query": "kayak", "user": "alice", "unit": "episode"}\n')
    out = cli("--root", root, "search", "--batch", batch, "--json")
    assert out.code == 0 and len(orjson.loads(out.out)) == 2
    bad = cli("--root", root, "search", "kayak", "--unit", "day")
    assert bad.code == 2 and "Traceback" not in bad.err
