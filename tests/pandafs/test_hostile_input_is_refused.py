"""Hostile input to the CLI: bad TTLs and times, keys with line breaks, lists that are not
UTF-8, a pipe as the import source.

Every refusal is one line on stderr, exit 2, no traceback, and leaves the vault as it was.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import orjson
import pytest

from pandafs.vault import Vault
from tests.support.config import set_setting


def _digest(root: Path) -> dict[str, str]:
    """Every file of the vault (indexes and observability included) with its sha256."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


def _refused(got, code: int = 2) -> None:  # the cli fixture's result
    assert got.code == code, (got.out, got.err)
    assert got.err.count("\n") == 1 and got.err.startswith("error:"), got.err
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err


@pytest.mark.parametrize("ttl", ["nan", "inf", "1e309", "1e12", "1e300"])
def test_save_refuses_a_ttl_that_is_not_a_finite_number_of_hours(cli, vault: Vault, ttl: str) -> None:
    assert cli("--root", vault.root, "save", "seed", "--user", "alice").code == 0
    before = _digest(vault.root)
    _refused(cli("--root", vault.root, "save", "tea at five", "--user", "alice", "--ttl-hours", ttl))
    assert _digest(vault.root) == before


@pytest.mark.parametrize("value", ["nan", "inf", "-5.0"])
def test_save_refuses_a_config_ttl_that_is_not_a_positive_finite_number(
    cli, vault: Vault, value: str
) -> None:
    set_setting(vault.root, "new_ttl_hours", value)
    before = _digest(vault.root)
    got = cli("--root", vault.root, "save", "tea at five", "--user", "alice")
    _refused(got)
    assert "new_ttl_hours" in got.err
    assert _digest(vault.root) == before


@pytest.mark.parametrize(
    "line",
    [
        {"query": "what did we discuss yesterday", "now": "0001-01-01"},
        {"query": "what did we plan for next year", "now": "9999-12-31T23:59:59"},
    ],
)
def test_batch_search_refuses_a_now_out_of_range_on_its_line_only(
    cli, vault: Vault, tmp_path: Path, line: dict[str, str]
) -> None:
    assert cli("--root", vault.root, "save", "a hamster cage", "--user", "alice").code == 0
    batch = tmp_path / "q.jsonl"
    batch.write_bytes(orjson.dumps(line) + b"\n" + orjson.dumps({"query": "hamster"}) + b"\n")
    got = cli("--root", vault.root, "search", "--batch", batch, "--json")
    _refused(got, code=1)
    first, second = (orjson.loads(x) for x in got.out.splitlines())
    assert "out of range" in first["error"]
    assert [hit["doc_path"].split("/")[2] for hit in second] == ["memories"]


def test_import_turns_from_a_pipe_imports_every_line(cli, vault: Vault) -> None:
    """`pandafs import-turns <(zcat turns.jsonl.gz)`: the lines can be read only once."""
    lines = b"".join(
        orjson.dumps(
            {"user": "alice", "timestamp": f"2024-01-0{i}T09:00:00Z", "query": f"q{i}", "response": "r"}
        )
        + b"\n"
        for i in range(1, 4)
    )
    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(lines)

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        got = cli("--root", vault.root, "import-turns", f"/dev/fd/{read_end}", "--json")
    finally:
        writer.join(timeout=5)
        os.close(read_end)
    assert got.code == 0, got.err
    assert got.json["imported"] == 3
    assert len(vault.layout.turn_dirs("alice")) == 3


@pytest.mark.parametrize("args", [("verify", "alcie"), ("replay", "alcie", "--check"), ("replay", "alcie")])
def test_verify_and_replay_of_a_user_with_nothing_in_the_vault_is_refused(
    cli, vault: Vault, args: tuple[str, ...]
) -> None:
    """A mistyped user was 'verified 0 turns: ok' — a check that checked nothing said all is well."""
    assert cli("--root", vault.root, "ask", "hello there", "--user", "alice").code == 0
    before = _digest(vault.root)
    got = cli("--root", vault.root, *args)
    _refused(got)
    assert "no user 'alcie'" in got.err
    assert _digest(vault.root) == before


def test_a_fact_key_with_a_line_break_cannot_add_a_second_entry(cli, vault: Vault) -> None:
    """The key went into facts.md as it came: a newline in it wrote a second, made-up
    entry (`- **name:** Mallory`) that every later read took for a fact of the user."""
    key = "k\n- **name:** Mallory"
    got = cli(
        "--root", vault.root, "save", "tea", "--user", "alice", "--type", "fact", "--key", key, "--json"
    )
    assert got.code == 0, got.err
    body = (vault.root / "users/alice/facts.md").read_text().split("\n---\n", 1)[1]
    entries = [line for line in body.splitlines() if line.startswith("- ")]
    assert len(entries) == 1 and entries[0].startswith("- **k - **name:** Mallory:** tea"), entries


@pytest.mark.parametrize("kind", ["fact", "preference"])
def test_saving_into_a_list_that_is_not_utf8_is_refused_and_keeps_the_file(
    cli, vault: Vault, kind: str
) -> None:
    assert cli("--root", vault.root, "save", "tea", "--user", "alice", "--type", kind).code == 0
    path = vault.root / "users/alice" / f"{kind}s.md"
    path.write_bytes(b"\xff\xfe broken by an editor")
    before = _digest(vault.root)
    got = cli("--root", vault.root, "save", "coffee", "--user", "alice", "--type", kind)
    _refused(got)
    assert "not UTF-8" in got.err
    assert _digest(vault.root) == before


def test_a_document_whose_name_is_not_utf8_is_named_not_a_crash(cli, vault: Vault) -> None:
    """knowledge/caf\\xe9.md cannot have an id or an index entry: rebuild and watch skip it by
    name (not 'internal error'), and verify keeps naming it until it is renamed."""
    assert cli("--root", vault.root, "save", "bees like clover", "--user", "alice").code == 0
    for folder in (vault.root / "knowledge", vault.root / "users" / "alice" / "memories"):
        with open(os.fsencode(folder) + b"/caf\xe9.md", "wb") as handle:
            handle.write(b"bees like thyme\n")
    rebuilt = cli("--root", vault.root, "rebuild")
    assert rebuilt.code == 0, rebuilt.err
    assert "skipped knowledge/caf\ufffd.md: has a name that is not UTF-8 text" in rebuilt.out
    assert cli("--root", vault.root, "watch", "--once").code == 0
    found = cli("--root", vault.root, "search", "bees", "--user", "alice", "--json")
    assert found.code == 0 and [
        h["doc_path"].startswith("users/alice/memories/memory-") for h in found.json
    ] == [True]
    checked = cli("--root", vault.root, "verify", "--json")
    assert checked.code == 1
    assert {(p["path"], p["kind"]) for p in checked.json["problems"]} == {
        ("knowledge/caf\ufffd.md", "skipped"),
        ("users/alice/memories/caf\ufffd.md", "skipped"),
    }


def test_the_watcher_given_a_name_that_is_not_utf8_names_it_and_goes_on(vault: Vault) -> None:
    """A move of knowledge/caf\\xe9.md reaches the watcher as that path (gone, or there):
    skipped by name, never handed to the index (which refuses it and stopped `watch`)."""
    from pandafs.memory.api import Memory

    memory = Memory(vault)
    bad = os.fsencode(vault.root / "knowledge") + b"/caf\xe9.md"
    with open(bad, "wb") as handle:
        handle.write(b"bees like thyme\n")
    (vault.root / "knowledge" / "wasps.md").write_text("wasps like pears\n")
    there = os.fsdecode(bad)[len(str(vault.root)) + 1 :]
    report = memory.index_paths([there, "knowledge/wasps.md"])
    assert [s.path for s in report.skipped] == ["knowledge/caf\ufffd.md"]
    os.unlink(bad)
    assert [s.path for s in memory.index_paths([there]).skipped] == ["knowledge/caf\ufffd.md"]
    assert [h["doc_path"] for h in memory.search("wasps pears", user="alice")] == ["knowledge/wasps.md"]


def test_forget_refuses_a_users_file_it_could_not_name_then_runs_once_renamed(cli, vault: Vault) -> None:
    """A file of the user's area whose name is not UTF-8 could hold what goes, and no
    record (intent, report, proof) can name it: the forget is refused before it starts."""
    assert cli("--root", vault.root, "save", "bees like clover", "--user", "alice").code == 0
    bad = os.fsencode(vault.root / "users" / "alice" / "memories") + b"/n\xe9.md"
    with open(bad, "wb") as handle:
        handle.write(b"the bees like clover too\n")
    before = _digest(vault.root)
    for extra in (("--dry-run",), ()):
        got = cli("--root", vault.root, "forget", "clover", "--user", "alice", *extra)
        _refused(got)
        assert "users/alice/memories/n\ufffd.md" in got.err and "rename it" in got.err
    assert _digest(vault.root) == before
    os.rename(bad, vault.root / "users" / "alice" / "memories" / "ne.md")
    assert cli("--root", vault.root, "forget", "clover", "--user", "alice").code == 0
    assert cli("--root", vault.root, "verify", "--forgotten").code == 0


def test_archive_keeps_a_turn_holding_a_name_that_is_not_utf8_live_and_says_why(
    cli, vault: Vault, tmp_path: Path
) -> None:
    """No Parquet row can name such a file: that turn is skipped by name (the dry run too),
    the others are archived, and verify stays clean (no batch left half done)."""
    source = tmp_path / "old.jsonl"
    source.write_bytes(
        b"".join(
            orjson.dumps(
                {"user": "alice", "timestamp": f"2025-01-0{d}T10:00:00Z", "query": q, "response": "ok"}
            )
            + b"\n"
            for d, q in ((1, "bees in january"), (2, "wasps in january"))
        )
    )
    assert cli("--root", vault.root, "import-turns", source).code == 0
    folder = vault.layout.turn_dir("alice", "turn_000001")
    with open(os.fsencode(folder) + b"/n\xe9.txt", "wb") as handle:
        handle.write(b"a note of mine\n")
    for extra in (("--dry-run",), ()):
        got = cli("--root", vault.root, "archive", "--age-days", "0", "--json", *extra)
        assert got.code == 0, got.err
        assert [s["doc_id"] for s in got.json["skipped"]] == ["alice/turn_000001"]
        assert "n\ufffd.txt has a name that is not UTF-8" in got.json["skipped"][0]["reason"]
    assert folder.is_dir() and not vault.layout.turn_dir("alice", "turn_000002").exists()
    assert cli("--root", vault.root, "verify").code == 0
