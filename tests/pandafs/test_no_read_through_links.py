"""No file of the vault is read through a link: the config, a turn's metadata.json read
for its quality or its age, the archive's expansions log, a file relinked after an
archive, the import ledger.  Each was read by path (following links) before the fix; each test plants a
link to a file outside the vault holding a recognisable secret and runs the real code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from events.log import EventWriter
from events.schema import DocumentsUsed
from pandafs.vault import Vault
from tests.conftest import run_pandafs

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
SECRET = "okapi-secret"


def _outside(tmp_path: Path, name: str, data: bytes) -> tuple[Path, bytes]:
    path = tmp_path / "outside" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return path, data


def _link(path: Path, target: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(target)


def _no_secret_in(root: Path) -> None:
    """No regular file under `root` holds the secret (links are not followed)."""
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET.encode() not in path.read_bytes(), path


def _import(vault: Vault, tmp_path: Path, *turns: tuple[str, float]) -> None:
    """Import alice's turns, (query, days old) each, numbered from turn_000001."""
    rows = [
        {
            "user": "alice",
            "timestamp": (NOW - timedelta(days=age)).isoformat(),
            "query": q,
            "response": "noted",
        }
        for q, age in turns
    ]
    source = tmp_path / "turns.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    got = run_pandafs("--root", vault.root, "import-turns", source)
    assert got.code == 0, got.err


def test_a_linked_config_is_one_line_exit_2_not_followed(vault: Vault, tmp_path: Path) -> None:
    """A pandafs.toml linked to a config outside the vault set the LLM server every turn
    goes to (here: an address named for the secret): it is refused, never followed, and
    never taken for a missing file (the defaults)."""
    config = f'[llm]\nbackend = "openai"\nbase_url = "http://{SECRET}.invalid:9/v1"\nmax_retries = 0\n'
    target, data = _outside(tmp_path, "pandafs.toml", config.encode())
    _link(vault.layout.config_file, target)
    for args in (("ask", "hello there", "--user", "alice"), ("search", "hello", "--user", "alice")):
        got = run_pandafs("--root", vault.root, *args)
        assert got.code == 2, (args, got.out, got.err)
        assert got.err.count("\n") == 1 and "symbolic link" in got.err and "Traceback" not in got.err
        assert SECRET not in got.out + got.err
    assert not vault.layout.users_dir.exists() or not any(vault.layout.users_dir.iterdir())
    assert vault.layout.config_file.is_symlink() and target.read_bytes() == data


def test_turn_trust_never_comes_from_a_linked_metadata_json(vault: Vault, tmp_path: Path) -> None:
    """The learning loop took a turn's quality for its trust from metadata.json by path:
    one linked to a file outside the vault set the trust the index ranks by."""
    from pandafs.learning.state import learned_of

    _import(vault, tmp_path, ("which laptop do I like", 3), ("and which bag", 2))
    with EventWriter(
        vault.layout.turn_dir("alice", "turn_000002") / "events.jsonl", user="alice", turn="turn_000002"
    ) as writer:
        writer.append(DocumentsUsed(doc_ids=["alice/turn_000001"], outcome="APPROVE"), ts=NOW)
    metadata = vault.layout.turn_dir("alice", "turn_000001") / "metadata.json"
    outside = {**orjson.loads(metadata.read_bytes()), "quality": 0.99, "note": SECRET}
    target, data = _outside(tmp_path, "metadata.json", orjson.dumps(outside))

    def trust() -> float | None:
        got = run_pandafs("--root", vault.root, "promote", "--full", "--now", NOW.isoformat(), "--json")
        assert got.code == 0 and SECRET not in got.out + got.err, got.err
        return learned_of(vault).trust("alice/turn_000001")

    metadata.unlink()
    missing = trust()  # what a turn without a readable metadata.json gets
    _link(metadata, target)
    assert missing is not None and trust() == missing
    assert metadata.is_symlink() and target.read_bytes() == data
    _no_secret_in(vault.root)


def test_the_learning_cache_is_never_read_through_a_link(vault: Vault, tmp_path: Path) -> None:
    """state.json and its journal (whose trust the indexer gives turns) are read in the vault
    only: a journal linked to a file outside the vault does not set a turn's trust, and a
    linked state.json is not taken for the cache.  Each reads as missing and is recomputed."""
    from pandafs.learning.state import CACHE_VERSION, learned_of

    _import(vault, tmp_path, ("which laptop do I like", 3))
    doc = "alice/turn_000001"
    cache = vault.layout.indexes / "learning"
    cache.mkdir(parents=True)
    weight = vault.config.memory.trust_prior_weight
    head = {"version": CACHE_VERSION, "prior_weight": weight, "journal": "journal-1.jsonl"}
    (cache / "state.json").write_bytes(orjson.dumps(head))
    shard, shard_data = _outside(tmp_path, "journal.jsonl", orjson.dumps({"trust": {doc: 0.123}}) + b"\n")
    _link(cache / "journal-1.jsonl", shard)
    assert learned_of(vault).trust(doc) is None
    state, state_data = _outside(
        tmp_path, "state.json", orjson.dumps({**head, "trust": {doc: 0.123}, "note": SECRET})
    )
    (cache / "journal-1.jsonl").unlink()
    assert learned_of(vault).trust(doc) is None
    (cache / "state.json").unlink()
    _link(cache / "state.json", state)
    assert learned_of(vault).trust(doc) is None
    got = run_pandafs("--root", vault.root, "promote", "--now", NOW.isoformat(), "--json")
    assert got.code == 0 and SECRET not in got.out + got.err, got.err
    assert not (cache / "state.json").is_symlink() and learned_of(vault).trust(doc) != 0.123
    assert shard.read_bytes() == shard_data and state.read_bytes() == state_data
    _no_secret_in(vault.root)


def test_archive_decisions_never_read_a_linked_metadata_json_or_expansions_log(
    vault: Vault, tmp_path: Path
) -> None:
    """Which turns are archived came from files read by path: a young turn whose
    metadata.json linked to one dated years ago was forced out, and an expansions log
    linked to one outside the vault kept an old turn live.  Both are read as missing."""
    _import(vault, tmp_path, ("an old question", 40), ("a young question", 5))
    now = ("--now", NOW.isoformat())
    before = run_pandafs("--root", vault.root, "archive", "--dry-run", "--json", *now)
    assert before.code == 0, before.err
    assert [t["doc_id"] for t in before.json["turns"]] == ["alice/turn_000001"]

    metadata = vault.layout.turn_dir("alice", "turn_000002") / "metadata.json"
    aged = {**orjson.loads(metadata.read_bytes()), "created_at": "2020-01-01T00:00:00Z", "note": SECRET}
    meta_target, meta_data = _outside(tmp_path, "metadata.json", orjson.dumps(aged))
    _link(metadata, meta_target)
    uses = b"".join(
        orjson.dumps({"id": "alice/turn_000001", "ts": (NOW - timedelta(days=1)).isoformat(), "n": SECRET})
        + b"\n"
        for _ in range(5)
    )
    log_target, log_data = _outside(tmp_path, "expansions.jsonl", uses)
    _link(vault.layout.archive / "expansions.jsonl", log_target)

    after = run_pandafs("--root", vault.root, "archive", "--dry-run", "--json", *now)
    assert after.code == 0 and after.json["turns"] == before.json["turns"], after.out
    assert after.json["skipped"] == before.json["skipped"] == []  # turn 2 was not judged 2020-old
    got = run_pandafs("--root", vault.root, "archive", "--json", *now)
    assert got.code == 0 and SECRET not in got.out + got.err, got.err
    assert [t["doc_id"] for t in got.json["turns"]] == ["alice/turn_000001"]
    assert vault.layout.turn_dir("alice", "turn_000002").is_dir()
    assert meta_target.read_bytes() == meta_data and log_target.read_bytes() == log_data
    _no_secret_in(vault.root)


def test_relinking_after_an_archive_never_copies_a_linked_file_in(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After turns move, relinking reads each markdown file of the user's live turns, then
    reads it again under the turn's lock and rewrites it.  A file swapped for a link in
    between was read through the link and its target's text written into the vault."""
    from pandafs.archive import _common, archive_turns

    _import(vault, tmp_path, ("an old question", 40), ("a young question", 5))
    note = vault.layout.turn_dir("alice", "turn_000002") / "notes.md"
    note.write_text("see [[users/alice/turns/turn_000001/context|turn 1]]\n")
    target, data = _outside(
        tmp_path, "stolen.md", f"{SECRET} [[users/alice/turns/turn_000001/context|turn 1]]\n".encode()
    )
    real_relink = _common.relink
    swapped: list[Path] = []

    def relink_then_swap(text: str, where):  # a second process's move, timed
        if not swapped and note.exists() and not note.is_symlink():
            _link(note, target)  # after the scan read it, before the rewrite reads it again
            swapped.append(note)
        return real_relink(text, where)

    monkeypatch.setattr(_common, "relink", relink_then_swap)
    report = archive_turns(vault, now=NOW)
    assert report.archived == 1 and swapped == [note]
    assert note.is_symlink() and target.read_bytes() == data
    _no_secret_in(vault.root)


def test_a_linked_import_ledger_is_refused_not_read(vault: Vault, tmp_path: Path) -> None:
    """The import ledger was read with plain `open()`: one linked to a file outside the
    vault made its ids count as imported, so the real line was skipped as a repeat."""
    from events.errors import NotInVault
    from pandafs.turn_import.ledger import LEDGER, Ledger

    turns = vault.layout.turns_dir("alice")
    turns.mkdir(parents=True)
    target, data = _outside(tmp_path, "ids.jsonl", orjson.dumps({"e": SECRET, "t": "turn_000001"}) + b"\n")
    _link(turns / LEDGER, target)
    with pytest.raises(NotInVault, match="is a symbolic link"):
        Ledger(vault, "alice")
    row = {"user": "alice", "external_id": SECRET, "timestamp": NOW.isoformat(), "query": "q"}
    source = tmp_path / "turns.jsonl"
    source.write_bytes(orjson.dumps({**row, "response": "r"}) + b"\n")
    got = run_pandafs("--root", vault.root, "import-turns", source)
    assert got.code == 2 and "Traceback" not in got.err, (got.out, got.err)
    assert f"{LEDGER}: is a symbolic link" in got.err.splitlines()[-1]
    assert vault.layout.turn_dirs("alice") == [] and target.read_bytes() == data


def test_the_ledger_never_learns_ids_from_a_linked_turn_folder(vault: Vault, tmp_path: Path) -> None:
    """Catching up, the ledger read each newer turn's first event by path: a turn folder
    linked to one outside the vault gave it an external id (then skipped as imported)."""
    from pandafs.turn_import.ledger import Ledger

    turns = vault.layout.turns_dir("alice")
    turns.mkdir(parents=True)
    (turns / ".counter").write_text("3\n")
    started = {"type": "turn_started", "data": {"external_id": SECRET, "source": "chat"}}
    log, _ = _outside(tmp_path, "events.jsonl", orjson.dumps(started) + b"\n")
    (turns / "turn_000001").symlink_to(log.parent, target_is_directory=True)
    ledger = Ledger(vault, "alice")
    assert ledger.recover() == [] and SECRET not in ledger.ids
    _no_secret_in(vault.root)


def test_a_turn_log_linked_to_a_fifo_never_blocks_the_relink(vault: Vault, tmp_path: Path) -> None:
    """Relinking locks each turn's log before rewriting its files, and opened the log by
    path without `O_NOFOLLOW` (nor `O_NONBLOCK`): a log linked to a fifo outside the vault
    hung the archive for good.  Now a linked log is left alone, and so is its turn."""
    import os
    import subprocess

    _import(vault, tmp_path, ("an old question", 40), ("a young question", 5))
    young = vault.layout.turn_dir("alice", "turn_000002")
    note = young / "notes.md"
    note.write_text("see [[users/alice/turns/turn_000001/context|turn 1]]\n")
    fifo = tmp_path / "outside" / "fifo"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    _link(young / "events.jsonl", fifo)
    try:
        got = run_pandafs("--root", vault.root, "archive", "--json", "--now", NOW.isoformat(), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the archive blocked on a log linked to a fifo")
    assert got.code == 0 and [t["doc_id"] for t in got.json["turns"]] == ["alice/turn_000001"], got.err
    assert (young / "events.jsonl").is_symlink() and "turn_000001/context" in note.read_text()


def test_a_full_fold_reads_no_turn_through_a_linked_folder_or_log(vault: Vault, tmp_path: Path) -> None:
    """A full fold reads each turn by name in its user's `turns/` folder (`turns_open`):
    a turn folder that is a link to bob's turn is no turn of alice's, and a log that is a
    link to one outside the vault is named as a problem and not read, as when each turn
    was read by its path."""
    from pandafs.learning import api as learning

    _import(vault, tmp_path, ("which laptop do I like", 3), ("and which bag", 2), ("and shoes", 1))
    bob = tmp_path / "bob-turn"
    bob.mkdir()
    log = vault.layout.turn_dir("alice", "turn_000002") / "events.jsonl"
    target, _ = _outside(tmp_path, "events.jsonl", log.read_bytes().replace(b"which bag", SECRET.encode()))
    for name in ("events.jsonl", "metadata.json", "context.md"):  # a whole turn, elsewhere
        (bob / name).write_bytes((vault.layout.turn_dir("alice", "turn_000003") / name).read_bytes())
    third = vault.layout.turn_dir("alice", "turn_000003")
    for child in third.iterdir():
        child.unlink()
    third.rmdir()
    third.symlink_to(bob, target_is_directory=True)
    _link(log, target)
    report = learning.rebuild(vault)
    assert report.turns == 1  # turn 1 only: turn 2's log is a link, turn 3's folder one
    [problem] = report.problems
    assert problem.startswith("alice/turn_000002: ") and "symbolic link" in problem
    assert SECRET not in problem
    _no_secret_in(vault.root)
