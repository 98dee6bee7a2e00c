"""Every wikilink PandaFS wrote resolves in Obsidian after `archive` and after `restore`."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

from pandafs.archive import archive_turns, restore_turns
from pandafs.inbox import Inbox
from pandafs.links import same_but_turn_links, turn_keys
from pandafs.llm.offline import OfflineBackend
from pandafs.pipeline import Pipeline
from pandafs.turns import replay
from pandafs.vault import Vault
from pandafs.verify import default_checks, verify_vault
from tests.support.obsidian import broken_links, resolve, vault_files, wikilinks

JAN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FEB = datetime(2026, 2, 20, 9, 0, tzinfo=UTC)
MAR = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OLD = ["turn_000001", "turn_000002", "turn_000003", "turn_000004"]  # January: archived


def _ask(vault: Vault, when: datetime, *queries: str, inbox: str | None = None) -> None:
    with Pipeline(vault, backend=OfflineBackend(), clock=lambda: when) as pipeline:
        for query in queries:
            pipeline.ask(query, user="alice")
        if inbox is not None:
            path = vault.root / "inbox" / "alice" / "laptop.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(inbox)
            os.utime(path, (time.time() - 60, time.time() - 60))
            with Inbox(vault, pipeline=pipeline, settle_s=0.0) as box:
                assert [r.status for r in box.process_pending(final=True).results] == ["answered"]


def _targets(vault: Vault, rel: str) -> list[str]:
    """Where each turn link of a note resolves, by Obsidian's rules."""
    files = vault_files(vault.root)
    text = (vault.root / rel).read_text()
    found = []
    for target in wikilinks(text):
        if "/turns/turn_" in target or target.startswith("archive/stubs/"):
            resolved = resolve(files, target, rel)
            assert resolved is not None, (rel, target)
            found.append(resolved)
    return found


def _clean(vault: Vault) -> None:
    assert broken_links(vault.root) == []
    report = verify_vault(vault, checks=default_checks())
    assert report.ok, report.problems
    assert replay(vault, check=True).drift == []  # rewritten links are not drift from the events


def test_links_into_archived_and_restored_turns_resolve(vault: Vault) -> None:
    _ask(vault, JAN, "I prefer Lenovo laptops", "My name is Ann and I live in Graz")
    _ask(vault, JAN, inbox="Which laptop brand do I prefer?\n")  # turn 3, answered in the outbox
    _ask(vault, JAN, "Which laptop brand do I prefer?")  # turn 4 cites turn 1
    _ask(vault, FEB, "What is my name?")  # turn 5 cites turn 2: stays live
    _clean(vault)
    originals = {
        t: (vault.root / f"users/alice/turns/{t}/context.md").read_bytes() for t in [*OLD, "turn_000005"]
    }
    linked_from = {
        "users/alice/preferences.md": {"turn_000001"},
        "users/alice/facts.md": {"turn_000002"},
        "outbox/alice/laptop.md": {"turn_000003"},
        "users/alice/turns/turn_000004/context.md": {"turn_000001"},
        "users/alice/turns/turn_000005/context.md": {"turn_000002"},
    }
    for rel, turns in linked_from.items():
        assert {t for _, t in turn_keys((vault.root / rel).read_text())} >= turns, rel

    report = archive_turns(vault, age_days=30, now=MAR)
    assert sorted(t["doc_id"] for t in report.turns) == [f"alice/{t}" for t in OLD]
    _clean(vault)
    for rel in ("users/alice/preferences.md", "users/alice/facts.md", "outbox/alice/laptop.md"):
        assert _targets(vault, rel) and all(
            t.startswith("archive/stubs/alice/") for t in _targets(vault, rel)
        )
    assert "archive/stubs/alice/turn_000002.md" in _targets(vault, "users/alice/turns/turn_000005/context.md")
    stub = "archive/stubs/alice/turn_000004.md"
    assert "## Linked from the turn" in (vault.root / stub).read_text()
    assert "archive/stubs/alice/turn_000001.md" in _targets(vault, stub)  # the stub links on

    _ask(vault, MAR, "Which laptop brand do I prefer?")  # turn 6 may cite the archived turns' stubs
    restored = restore_turns(vault)
    assert restored.restored == 4
    _clean(vault)
    for rel in [*linked_from, "users/alice/turns/turn_000006/context.md"]:
        for target in _targets(vault, rel):
            assert target.startswith("users/alice/turns/") and target.endswith("/context.md"), (rel, target)
    assert not list((vault.root / "archive" / "stubs").rglob("*.md"))
    for turn, data in originals.items():  # the bytes archived came back; only turn links may differ
        assert same_but_turn_links((vault.root / f"users/alice/turns/{turn}/context.md").read_bytes(), data)


def test_a_relink_cut_short_is_finished_by_the_next_run(vault: Vault) -> None:
    _ask(vault, JAN, "I prefer Lenovo laptops")
    _ask(vault, FEB, "Which laptop brand do I prefer?")
    journal = vault.layout.archive / ".journal"
    journal.mkdir(parents=True, exist_ok=True)
    assert archive_turns(vault, age_days=30, now=MAR).archived == 1
    prefs = vault.root / "users/alice/preferences.md"
    stale = prefs.read_text().replace(
        "archive/stubs/alice/turn_000001", "users/alice/turns/turn_000001/context"
    )
    prefs.write_text(stale)  # as if the process died between moving the turn and relinking
    (journal / "relink.users").write_text("alice\n")
    assert broken_links(vault.root) != []
    found = verify_vault(vault, checks=default_checks())
    assert "archive_links_pending" in [p.kind for p in found.problems]
    assert verify_vault(vault, repair=True, checks=default_checks()).ok
    assert broken_links(vault.root) == [] and not (journal / "relink.users").exists()
    assert Path(vault.root / "archive/stubs/alice/turn_000001.md").is_file()
