"""`site_knowledge/{domain}.md`: a projection of the reliability table, written under its
lock, and never read or written through a symbolic link."""

from __future__ import annotations

import multiprocessing
from datetime import UTC, datetime
from pathlib import Path

from events.documents import parse_document
from events.schema import ExtractionRecorded
from pandafs.research.reliability import ReliabilityTable
from pandafs.vault import Vault

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WRITERS, TURNS = 4, 12


def _event(success: bool) -> ExtractionRecorded:
    return ExtractionRecorded(domain="shop.example", url="https://shop.example/p", success=success, items=1)


def _apply_turns(root: str, writer: int) -> None:
    table = ReliabilityTable(Vault.open(Path(root)))
    for n in range(TURNS):
        table.apply(f"u{writer}/turn_{n:04d}", [_event(n % 3 != 0)], at=NOW)


def _note_front(vault: Vault) -> dict[str, object]:
    text = (vault.root / "site_knowledge" / "shop.example.md").read_text(encoding="utf-8")
    return parse_document(text, "site_knowledge/shop.example.md").frontmatter


def test_concurrent_turns_leave_the_note_at_the_tables_numbers(vault: Vault) -> None:
    """Four processes fold turns about one domain at once: the note ends with every
    attempt the table holds (a note written after the lock could lag behind it)."""
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_apply_turns, args=(str(vault.root), w)) for w in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    stats = ReliabilityTable(vault).load()["shop.example"]
    assert stats.attempts == WRITERS * TURNS
    front = _note_front(vault)
    assert (front["attempts"], front["successes"]) == (stats.attempts, stats.successes)


def test_a_linked_note_is_neither_read_nor_written_through(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: private\nsecret_key: leak-me\n---\nnot yours\n", encoding="utf-8")
    before = outside.read_bytes()
    note = vault.root / "site_knowledge" / "shop.example.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.symlink_to(outside)
    ReliabilityTable(vault).apply("alice/turn_0001", [_event(True)], at=NOW)
    assert outside.read_bytes() == before
    assert note.is_symlink()
    leaked = [
        p
        for p in vault.root.rglob("*")
        if p.is_file() and not p.is_symlink() and b"leak-me" in p.read_bytes()
    ]
    assert not leaked


def test_a_linked_site_knowledge_folder_gets_no_note(vault: Vault, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder = vault.root / "site_knowledge"
    if folder.exists():
        folder.rmdir()
    folder.symlink_to(elsewhere, target_is_directory=True)
    ReliabilityTable(vault).apply("alice/turn_0001", [_event(True)], at=NOW)
    assert list(elsewhere.iterdir()) == []
    assert ReliabilityTable(vault).load()["shop.example"].attempts == 1
