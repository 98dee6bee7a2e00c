"""Forget by id (a statement, a memory, a turn), and a forget that a crash left half done."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from events.log import read_events
from pandafs.errors import BadInput
from pandafs.forget import _run as run_module
from pandafs.forget import forget, intent_path, scan_user
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from pandafs.verify import default_checks, verify_vault


def _alice_files(root: Path, word: str) -> list[str]:
    found = []
    for base in ("users/alice", "outbox/alice", "inbox/processed", "archive"):
        for path in (root / base).rglob("*") if (root / base).exists() else []:
            if path.is_file() and word.encode() in path.read_bytes().lower():
                found.append(path.relative_to(root).as_posix())
    return found


@pytest.fixture
def told(vault: Vault) -> Vault:
    memory = Memory(vault)
    memory.save("My sister Zelbrina lives in Quokkaville", user="alice", doc_type="fact", key="sister")
    memory.save("Likes hiking in the hills", user="alice", doc_type="preference")
    memory.save("The spare key is under the blue flowerpot by the shed", user="alice")
    with Pipeline(vault, memory=memory) as pipeline:
        pipeline.ask("Where does my sister live?", user="alice")
        pipeline.ask("Where is the spare key?", user="alice")
        pipeline.ask("Tell me about the plumbridge festival tomorrow", user="alice")
    return vault


def test_a_statement_by_its_key(told: Vault) -> None:
    report = forget(told, "alice/facts#sister", "alice")
    assert report.ok and report.words >= 1
    assert _alice_files(told.root, "quokkaville") == []
    facts = (told.root / "users/alice/facts.md").read_text()
    assert "sister" not in facts.split("---", 2)[2]
    assert "hiking" in (told.root / "users/alice/preferences.md").read_text()  # the rest stays


def test_a_memory_by_its_id(told: Vault) -> None:
    (path,) = (told.root / "users/alice/memories").glob("*.md")
    report = forget(told, f"alice/memories/{path.stem}", "alice")
    assert report.ok and not path.exists()
    assert _alice_files(told.root, "flowerpot") == []
    assert Memory(told).search("flowerpot", user="alice") == []


def test_a_whole_turn_keeps_its_number_and_replays(told: Vault) -> None:
    report = forget(told, "alice/turn_000003", "alice")
    assert report.ok
    folder = told.layout.turn_dir("alice", "turn_000003")
    assert _alice_files(told.root, "plumbridge") == []
    events = read_events(folder / "events.jsonl")
    assert events[0].type == "turn_started" and events[-1].type == "forgotten"
    assert events[-1].data.replaces and events[-1].data.kind == "turn"
    assert verify_vault(told, checks=default_checks()).ok
    with Pipeline(told) as pipeline:  # the number is not handed out again
        assert pipeline.ask("hello again", user="alice").turn == "turn_000004"


def test_refused_targets_change_nothing(told: Vault) -> None:
    before = {p: p.read_bytes() for p in told.root.rglob("*") if p.is_file() and not p.name.endswith(".lock")}
    for target, user in [
        ("bob/facts#1", "alice"),
        ("alice/facts", "alice"),
        ("alice/memories/nothing-here", "alice"),
        ("alice/turn_000099", "alice"),
        ("the and of", "alice"),
        ("unheardofword", "alice"),
    ]:
        with pytest.raises(BadInput):
            forget(told, target, user)
    after = {p: p.read_bytes() for p in told.root.rglob("*") if p.is_file() and not p.name.endswith(".lock")}
    assert after == before


def test_a_forget_killed_midway_is_finished_by_verify_repair(
    told: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies after the intent, the record and the first files: the intent holds
    no forgotten word, verify names it, `verify --repair` finishes it."""
    calls = {"n": 0}
    real = run_module._replace_log

    def dying(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # stands in for a SIGKILL between two files
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "_replace_log", dying)
    with pytest.raises(KeyboardInterrupt):
        forget(told, "flowerpot", "alice")
    monkeypatch.undo()
    intent = intent_path(told, "alice")
    assert intent.exists() and b"flowerpot" not in intent.read_bytes().lower()
    assert _alice_files(told.root, "flowerpot")  # half done
    report = verify_vault(told, checks=default_checks())
    assert "forget_pending" in {p.kind for p in report.problems}
    repaired = verify_vault(told, repair=True, checks=default_checks())
    assert any(p.kind == "forget_pending" for p in repaired.repaired)
    assert not intent.exists()
    assert _alice_files(told.root, "flowerpot") == []
    assert scan_user(told, "alice") == []
    assert verify_vault(told, checks=default_checks()).ok
    log = (told.root / "users/alice/memory.events.jsonl").read_bytes().splitlines()
    assert sum(orjson.loads(line)["type"] == "forgotten" for line in log) == 1  # recorded once


@pytest.mark.parametrize("step", ["_anchor", "_project"])
def test_a_forget_killed_between_a_log_and_its_projections_projects_on_resume(
    told: Vault, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Killed after a turn's log was rewritten, before its ledger line or its context.md
    was: the resumed forget finds nothing left to redact in that log, and records and
    re-projects it all the same."""

    real = getattr(run_module, step)

    def dying(vault, rel, *args, **kwargs):
        if "/turns/" not in rel:  # (the owner's maintenance log is rewritten first)
            return real(vault, rel, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(run_module, step, dying)
    with pytest.raises(KeyboardInterrupt):
        forget(told, "flowerpot", "alice")
    monkeypatch.undo()
    stale = [p for p in _alice_files(told.root, "flowerpot") if p.endswith("context.md")]
    assert stale  # the log is redacted, its projection is not yet
    verify_vault(told, repair=True, checks=default_checks())
    assert _alice_files(told.root, "flowerpot") == []
    report = verify_vault(told, checks=default_checks())
    assert report.ok, report.problems


def test_words_spread_over_a_keyword_list_are_forgotten(vault: Vault) -> None:
    # a turn keeps its query's words as a list, one word an item: no item holds both words
    with Pipeline(vault) as pipeline:
        pipeline.ask("I live at 12 Larch Street", user="alice")
    report = forget(vault, "Larch Street", "alice")
    assert report.ok, report.survivors
    assert _alice_files(vault.root, "larch") == []
    assert verify_vault(vault, checks=default_checks()).ok
    assert Memory(vault).search("larch", user="alice") == []


def _busy_forget(vault: Vault, asked: str, word: str) -> None:
    """`forget(asked)` stopped by a turn log holding `word` that its writer has (`Busy`)."""
    import fcntl
    import os

    from pandafs.errors import Busy

    held = next(p for p in _alice_files(vault.root, word) if p.endswith("events.jsonl") and "/turns/" in p)
    fd = os.open(vault.root / held, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(Busy, match="again to finish"):
            forget(vault, asked, "alice")
    finally:
        os.close(fd)
    assert intent_path(vault, "alice").exists()


@pytest.mark.parametrize("asked", ["flowerpot", "memory"])
def test_run_again_after_busy_finishes_the_forget_and_says_so(told: Vault, asked: str) -> None:
    """A turn's log held by its writer stops the forget (`Busy`: "run it again"); the run
    again finishes it and reports that, rather than finding nothing left to forget."""
    if asked == "memory":
        (path,) = (told.root / "users/alice/memories").glob("*.md")
        asked = f"alice/memories/{path.stem}"
    _busy_forget(told, asked, "flowerpot")
    report = forget(told, asked, "alice")
    assert report.resumed and report.ok
    assert not intent_path(told, "alice").exists()
    assert _alice_files(told.root, "flowerpot") == []
    with pytest.raises(BadInput, match="nothing to forget|no memory"):
        forget(told, asked, "alice")  # once finished, there is nothing to forget


def test_another_query_after_a_busy_forget_finishes_it_and_is_answered_for_itself(told: Vault) -> None:
    """Words that nothing holds are 'nothing to forget' (exit 2), also in the run that
    finishes an interrupted forget of other words."""
    _busy_forget(told, "flowerpot", "flowerpot")
    with pytest.raises(BadInput, match="nothing to forget"):
        forget(told, "zebraphone", "alice")
    assert not intent_path(told, "alice").exists()
    assert _alice_files(told.root, "flowerpot") == []


def test_an_entry_by_number_run_again_after_busy_forgets_only_that_entry(told: Vault) -> None:
    """Run again, `preferences#1` finishes the forget of the entry it named; it does not go on
    to forget the entry that has become number 1 since."""
    memory = Memory(told)
    memory.save("Drinks green tea every morning", user="alice", doc_type="preference")
    with Pipeline(told, memory=memory) as pipeline:
        pipeline.ask("Do I like hiking in the hills?", user="alice")
    _busy_forget(told, "alice/preferences#1", "hiking")
    report = forget(told, "alice/preferences#1", "alice")
    assert report.resumed and report.ok
    assert _alice_files(told.root, "hiking") == []
    assert "green tea" in (told.root / "users/alice/preferences.md").read_text()
