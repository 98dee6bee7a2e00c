"""Scope promotion, demotion and TTL: the rules, the maintenance log, prune --expired."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from events.log import EventWriter, read_events
from events.schema import TurnCompleted
from events.stamps import format_ts
from pandafs.config import MemoryConfig
from pandafs.learning.maintenance import log_path
from pandafs.learning.policy import DocState, decide, decide_steps
from pandafs.learning.promotion import promote, prune_expired
from pandafs.memory.api import Memory
from pandafs.pipeline import Pipeline
from pandafs.vault import Vault
from pandafs.verify import default_checks, verify_vault
from tests.support.learning import T0, front_of, sync

CFG = MemoryConfig()


def doc(
    scope: str,
    trust: float,
    usage: int,
    age_hours: float,
    kind: str = "memory",
    validations: int | None = None,
) -> DocState:
    return DocState(
        doc_id="alice/memories/x",
        doc_path="users/alice/memories/x.md",
        kind=kind,
        owner=None if kind == "knowledge" else "alice",
        scope=scope,
        trust=trust,
        usage=usage,
        validations=usage if validations is None else validations,
        age_hours=age_hours,
    )


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (doc("new", 0.5, 3, 1.0), "user"),
        (doc("new", 0.49, 3, 1.0), None),
        (doc("new", 0.9, 2, 5.0), None),
        (doc("new", 0.9, 3, 0.9), None),
        (doc("user", 0.8, 10, 24.0, kind="research"), "global"),
        (doc("user", 0.99, 50, 480.0), None),  # a memory is the user's own: never shared
        (doc("user", 0.79, 10, 48.0), None),
        (doc("user", 0.95, 9, 48.0), None),
        (doc("user", 0.95, 12, 23.0), None),
        (doc("user", 0.49, 4, 1.0), "new"),
        (doc("user", 0.4, 1, 1.0), None),  # one bad turn is not enough to demote
        (doc("user", 0.3, 0, 1.0, validations=0), None),  # nobody judged it: it keeps its scope
        (doc("global", 0.79, 12, 48.0), "user"),
        (doc("global", 0.85, 12, 48.0), None),
        (doc("user", 0.1, 5, 1.0, kind="preferences"), None),  # what the user stated stays
        (doc("new", 0.9, 5, 2.0, kind="facts"), None),
        (doc("user", 0.95, 20, 48.0, kind="research"), "global"),
    ],
)
def test_the_thresholds(state: DocState, expected: str | None) -> None:
    decision = decide(state, CFG)
    assert (decision.new_scope if decision else None) == expected
    if decision is not None:
        assert decision.reason.startswith(("promoted: trust", "demoted: trust"))


def test_one_run_may_take_two_steps_each_its_own_change() -> None:
    steps = decide_steps(doc("new", 0.93, 12, 49.0, kind="research"), CFG)
    assert [(s.old_scope, s.new_scope) for s in steps] == [("new", "user"), ("user", "global")]
    steps = decide_steps(doc("new", 0.93, 12, 49.0), CFG)
    assert [(s.old_scope, s.new_scope) for s in steps] == [("new", "user")]
    steps = decide_steps(doc("global", 0.3, 12, 49.0), CFG)
    assert [(s.old_scope, s.new_scope) for s in steps] == [("global", "user"), ("user", "new")]


def test_a_new_memory_never_used_expires_and_is_archived(cli, vault: Vault) -> None:
    """Acceptance 2: hidden from search after its TTL, shown with --include-expired,
    and `prune --expired` archives it."""
    root = vault.root
    saved = Memory(vault).save(
        "Book the dentist appointment for Tuesday.", user="alice", keywords=["dentist"], now=T0
    )
    assert front_of(vault, saved.doc_path)["expires_at"] == T0 + timedelta(hours=24)
    before, after = T0 + timedelta(hours=23), T0 + timedelta(hours=25)
    assert [h["doc_id"] for h in Memory(vault).search("dentist", user="alice", now=before)] == [saved.doc_id]
    assert Memory(vault).search("dentist", user="alice", now=after) == []
    shown = cli("--root", root, "search", "dentist", "--user", "alice", "--include-expired", "--json")
    assert [h["doc_id"] for h in shown.json] == [saved.doc_id]
    assert cli("--root", root, "search", "dentist", "--user", "alice", "--json").json == []  # now > TTL

    dry = cli("--root", root, "prune", "--expired", "--now", format_ts(after), "--dry-run", "--json")
    assert dry.code == 0 and dry.json["count"] == 1 and (root / saved.doc_path).exists()
    early = cli("--root", root, "prune", "--expired", "--now", format_ts(before), "--json")
    assert early.json["pruned"] == []

    done = cli("--root", root, "prune", "--expired", "--now", format_ts(after), "--json")
    assert done.code == 0, done.err
    [item] = done.json["pruned"]
    target = root / item["archived_to"]
    assert item["archived_to"] == f"archive/expired/{saved.doc_path}"
    assert target.is_file() and not (root / saved.doc_path).exists()
    assert "Book the dentist" in target.read_text()
    included = cli("--root", root, "search", "dentist", "--include-expired", "--json")
    assert included.json == []  # no longer in the index: it is in the archive
    [event] = read_events(log_path(vault, "alice"))
    assert (event.data.old_scope, event.data.new_scope, event.turn) == ("new", "expired", "memory")
    assert event.data.reason.startswith("expired: expires_at 2026-01-06T09:00:00")
    assert cli("--root", root, "prune", "--expired", "--now", format_ts(after), "--json").json["count"] == 0
    assert verify_vault(vault, checks=default_checks()).ok
    assert cli("--root", root, "prune").code == 2  # say what to prune


def test_prune_keeps_what_qualifies_for_promotion(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    saved = Memory(vault).save(
        "Biscuit the Syrian hamster loves sunflower seeds.", user="alice", topic="pet.hamster", now=T0
    )
    for i in range(3):  # used three times in its first hour: too young to be promoted by Save
        clock["t"] = T0 + timedelta(minutes=10 * (i + 1))
        pipeline.ask("What does my hamster Biscuit like?", user="alice")
    sync(vault)
    assert front_of(vault, saved.doc_path)["scope"] == "new"
    assert front_of(vault, saved.doc_path)["usage_count"] == 3
    report = prune_expired(vault, now=T0 + timedelta(hours=30))
    assert report.pruned == [] and [k["doc_id"] for k in report.kept] == [saved.doc_id]
    promoted = promote(vault, now=T0 + timedelta(hours=30))
    assert [(c.old_scope, c.new_scope) for c in promoted.changes] == [("new", "user")]
    front = front_of(vault, saved.doc_path)
    assert front["scope"] == "user" and "expires_at" not in front and front["scope_origin"] == "new"


def test_rejections_demote_and_a_demoted_document_gets_a_new_ttl(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime]
) -> None:
    saved = Memory(vault).save(
        "Biscuit the Syrian hamster loves sunflower seeds.",
        user="alice",
        topic="pet.hamster",
        scope="user",
        now=T0,
    )
    prefs = Memory(vault).save(
        "I prefer hamster food without nuts", user="alice", doc_type="preference", now=T0
    )
    for i, query in enumerate(["What does my hamster Biscuit like?", "that's wrong"] * 3):
        clock["t"] = T0 + timedelta(hours=1 + i)
        result = pipeline.ask(query, user="alice")
        events = read_events(vault.layout.turn_dir("alice", result.turn) / "events.jsonl")
        changes = [(e.data.old_scope, e.data.new_scope) for e in events if e.type == "scope_changed"]
        # turns 1 and 3 were rejected; the Save of turn 5 sees its third verdict, trust 0.44
        assert changes == ([("user", "new")] if result.turn == "turn_000005" else [])
    sync(vault)
    front = front_of(vault, saved.doc_path)
    assert (front["usage_count"], front["validation_count"], front["validation_success"]) == (3, 3, 0)
    assert front["trust"] == 0.24
    assert front["scope"] == "new" and front["scope_origin"] == "user"
    assert front["expires_at"] == T0 + timedelta(hours=5 + 24)  # decided at turn 5
    prefs_front = front_of(vault, prefs.doc_path)
    assert prefs_front["scope"] == "user" and prefs_front["validation_success"] == 0  # pinned
    assert promote(vault, now=T0 + timedelta(hours=8)).changes == []  # nothing left to do
    assert not log_path(vault, "alice").exists()


def test_verify_checks_the_maintenance_log(vault: Vault) -> None:
    saved = Memory(vault).save("Water the plants on Friday.", user="alice", now=T0)
    assert prune_expired(vault, now=T0 + timedelta(days=2)).pruned
    log = log_path(vault, "alice")
    assert verify_vault(vault, checks=default_checks()).ok
    good = log.read_bytes()
    assert saved.doc_id in good.decode()
    log.write_bytes(good.replace(b'"old_scope":"new"', b'"old_scope":"user"'))
    problems = verify_vault(vault, checks=default_checks()).problems
    assert [(p.path, p.kind) for p in problems] == [("users/alice/memory.events.jsonl", "chain")]
    log.write_bytes(good + b'{"v":1,"seq":1,"ts"')
    problems = verify_vault(vault, checks=default_checks()).problems
    assert [p.kind for p in problems] == ["torn_tail"]
    assert verify_vault(vault, repair=True, checks=default_checks()).ok
    assert log.read_bytes() == good and log.with_name(log.name + ".torn").exists()


def test_verify_names_a_maintenance_log_copied_into_another_users_folder(vault: Vault) -> None:
    Memory(vault).save("Water the plants on Friday.", user="alice", now=T0)
    assert prune_expired(vault, now=T0 + timedelta(days=2)).pruned
    copied = log_path(vault, "bob")
    copied.parent.mkdir(parents=True, exist_ok=True)
    copied.write_bytes(log_path(vault, "alice").read_bytes())
    problems = verify_vault(vault, checks=default_checks()).problems
    assert [(p.path, p.message) for p in problems if p.kind == "misplaced"] == [
        ("users/bob/memory.events.jsonl", "seq 0 names alice/memory")
    ]


class Crash(Exception):
    pass


def test_a_save_killed_before_its_events_are_written_is_undone_then_redone(
    vault: Vault, pipeline: Pipeline, clock: dict[str, datetime], monkeypatch: pytest.MonkeyPatch
) -> None:
    saved = Memory(vault).save(
        "Biscuit the Syrian hamster loves sunflower seeds.",
        user="alice",
        topic="pet.hamster",
        keywords=["hamster", "biscuit"],
        now=T0,
    )
    for i in range(2):
        clock["t"] = T0 + timedelta(hours=1 + i)
        pipeline.ask("What does my hamster Biscuit like?", user="alice")
    original = EventWriter.append_many

    def dies_at_the_end(self: EventWriter, payloads, **kwargs):
        payloads = list(payloads)
        if any(isinstance(p, TurnCompleted) for p in payloads):
            raise Crash("killed before the Save events reached the log")
        return original(self, payloads, **kwargs)

    monkeypatch.setattr(EventWriter, "append_many", dies_at_the_end)
    clock["t"] = T0 + timedelta(hours=3)
    with pytest.raises(Crash):
        pipeline.ask("What does my hamster Biscuit like?", user="alice")
    monkeypatch.setattr(EventWriter, "append_many", original)
    ahead = front_of(vault, saved.doc_path)  # Save wrote the document before it died
    assert (ahead["scope"], ahead["usage_count"], ahead["scope_origin"]) == ("user", 3, "new")

    sync(vault)  # nothing in the events says so: the file goes back to what they say
    back = front_of(vault, saved.doc_path)
    assert (back["scope"], back["usage_count"]) == ("new", 2)
    assert back["expires_at"] == T0 + timedelta(hours=24)

    pipeline.resume("alice", "turn_000003")
    events = read_events(vault.layout.turn_dir("alice", "turn_000003") / "events.jsonl")
    assert [(e.data.old_scope, e.data.new_scope) for e in events if e.type == "scope_changed"] == [
        ("new", "user")
    ]
    assert events[-1].type == "turn_completed"
    sync(vault)
    done = front_of(vault, saved.doc_path)
    assert (done["scope"], done["usage_count"], done.get("expires_at")) == ("user", 3, None)
