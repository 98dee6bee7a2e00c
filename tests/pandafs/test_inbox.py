"""The inbox: query files become exactly one answered turn, bad files are explained.

Real vaults, real pipeline (offline backend).  A process dying at a step is
simulated by raising a BaseException from `Inbox._checkpoint` (or from inside a
pipeline phase): nothing below catches it, locks are released as by a real death,
and a fresh `Inbox` — the restarted process — must finish the work exactly once.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from events.documents import parse_document
from events.log import read_log
from pandafs.inbox import Inbox, is_query_candidate
from pandafs.memory.api import Memory
from pandafs.pipeline import turn as turn_module
from pandafs.vault import Vault, file_lock
from pandafs.verify import check_index, verify_vault
from tests.support.config import set_setting


class Died(BaseException):
    """Stands for SIGKILL: escapes every `except Exception`."""


def drop(vault: Vault, rel: str, data: bytes | str, *, age: float = 10.0) -> Path:
    """Write a query file as if it had been dropped `age` seconds ago."""
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    past = time.time() - age
    os.utime(path, (past, past))
    return path


def turns(vault: Vault) -> list[tuple[str, str, dict]]:
    """Every turn folder as (user, turn, first event's data); fails on an empty folder."""
    found = []
    for user in vault.layout.users():
        for folder in vault.layout.turn_dirs(user):
            log = read_log(folder / "events.jsonl")
            assert log.records, f"empty turn folder {folder}"
            assert any(r["type"] == "turn_completed" for r in log.records), folder
            found.append((user, folder.name, log.records[0]["data"]))
    return found


def front(path: Path) -> dict:
    return parse_document(path.read_text()).frontmatter


def claims(vault: Vault) -> list[str]:
    processing = vault.root / "inbox" / ".processing"
    return sorted(p.name for p in processing.iterdir() if p.name != ".lock") if processing.exists() else []


def assert_clean(vault: Vault) -> None:
    report = verify_vault(vault)
    assert report.ok, report.as_json()
    Memory(vault).reconcile()
    assert check_index(vault, False) == []
    assert claims(vault) == []


@pytest.fixture
def inbox(vault: Vault):
    with Inbox(vault, settle_s=0.2) as box:
        yield box


def test_files_from_the_inbox_and_user_folders_become_answered_turns(vault: Vault, inbox: Inbox) -> None:
    drop(vault, "inbox/laptop.md", "What laptop should I buy for travel?\n")
    drop(vault, "inbox/alice/hamster.txt", "How often should I feed my hamster?\n", age=9)
    drop(vault, "inbox/from-bob.md", "---\nuser: bob\n---\nWhere do dogs like to walk?\n", age=8)

    report = inbox.process_pending()

    answered = {r.source: r for r in report.of("answered")}
    assert set(answered) == {"inbox/laptop.md", "inbox/alice/hamster.txt", "inbox/from-bob.md"}
    assert [r.user for r in report.results] == ["me", "alice", "bob"]  # oldest first
    for result in answered.values():
        answer = vault.root / str(result.answer)
        meta = front(answer)
        assert meta["doc_id"] == f"{result.user}/{result.turn}"
        assert meta["turn_id"] == result.turn and meta["outcome"] == result.outcome
        assert meta["context"] == f"[[users/{result.user}/turns/{result.turn}/context|{meta['doc_id']}]]"
        assert (vault.root / meta["context_path"]).is_file()
        assert meta["query_file"] == result.query_file
        metadata = orjson.loads(
            (vault.root / f"users/{result.user}/turns/{result.turn}/metadata.json").read_bytes()
        )
        assert metadata["inbox_file"] == result.query_file
    assert answered["inbox/alice/hamster.txt"].answer == "outbox/alice/hamster.md"
    assert (vault.root / "inbox/processed/hamster.txt").read_text().startswith("How often")
    assert (vault.root / "inbox/processed/from-bob.md").read_text().startswith("---\nuser: bob")
    assert [(u, data["source"]) for u, _, data in turns(vault)] == [
        ("alice", "inbox"),
        ("bob", "inbox"),
        ("me", "inbox"),
    ]
    assert inbox.pending() == []
    assert_clean(vault)

    assert inbox.process_pending().results == []  # nothing twice


@pytest.mark.parametrize(
    ("rel", "data", "reason", "says"),
    [
        ("inbox/photo.jpg", b"\xff\xd8\xff\xe0", "wrong_extension", "not a .md or .txt"),
        ("inbox/empty.md", b"", "empty", "empty"),
        ("inbox/blank.md", b"---\nuser: me\n---\n\n  \n", "empty", "no question"),
        ("inbox/nul.md", b"what\x00is this", "binary", "NUL bytes"),
        ("inbox/latin1.txt", "café?".encode("latin-1"), "binary", "not UTF-8"),
        ("inbox/big.md", b"x" * 5_000_000, "too_large", "5,000,000 bytes"),
        ("inbox/etc.md", b"---\nuser: ../etc\n---\nhi\n", "unknown_user", "'../etc'"),
        ("inbox/Alice/q.md", b"hi there\n", "unknown_user", "'Alice'"),
        ("inbox/alice/q.md", b"---\nuser: bob\n---\nhi\n", "user_conflict", "inbox/alice/"),
        ("inbox/broken.md", b"---\nuser: [me\n---\nhi\n", "bad_frontmatter", "broken frontmatter"),
        ("inbox/far.md", b"---\nnow: 9999-12-31T23:00:00-05:00\n---\nhi\n", "bad_frontmatter", "now: 9999"),
        ("inbox/long.txt", ("why " * 6000).encode(), "too_long", "characters long"),
    ],
)
def test_bad_files_are_rejected_with_an_explanation(
    vault: Vault, inbox: Inbox, rel: str, data: bytes, reason: str, says: str
) -> None:
    drop(vault, rel, data)
    [result] = inbox.process_pending().results
    name = Path(rel).name
    name += ".rejected" if name.endswith(".md") else ""  # not a name Obsidian parses as a note
    assert result.status == "rejected" and result.reason == reason and says in str(result.message)
    assert result.rejected == f"inbox/rejected/{name}"
    assert (vault.root / result.rejected).read_bytes() == data  # kept, unchanged
    error = vault.root / f"inbox/rejected/{name}.error.md"
    assert result.error_file == f"inbox/rejected/{name}.error.md"
    assert "[[" not in error.read_text()  # the kept file is named, not linked: Obsidian cannot open it
    meta, body = front(error), error.read_text()
    assert meta["reason"] == reason and meta["source"] == rel
    assert "**Why:**" in body and says in body and "**What to do:**" in body
    assert not (vault.root / rel).exists()
    assert turns(vault) == [] and claims(vault) == []


def test_a_file_name_that_is_not_utf8_is_answered_under_a_utf8_name(vault: Vault, inbox: Inbox) -> None:
    """The bytes of a name that are not UTF-8 become U+FFFD when claimed: every record of
    the file (plan, turn, answer) is UTF-8, and the question is answered, not failed forever."""
    folder = vault.root / "inbox" / "alice"
    folder.mkdir(parents=True)
    dropped = os.fsencode(folder) + b"/caf\xe9.md"
    with open(dropped, "wb") as handle:
        handle.write(b"How often should I feed my hamster?\n")
    past = time.time() - 10
    os.utime(dropped, (past, past))
    [result] = inbox.process_pending().results
    assert result.status == "answered", result.message
    assert result.source == "inbox/alice/caf\ufffd.md" and result.answer == "outbox/alice/caf\ufffd.md"
    assert (vault.root / "inbox/processed/caf\ufffd.md").read_text().startswith("How often")
    assert os.listdir(folder) == []
    assert_clean(vault)


def test_allowed_users_limit_who_may_ask(vault: Vault) -> None:
    set_setting(vault.root, "allowed_users", ["alice"])
    vault = Vault.open(vault.root)
    drop(vault, "inbox/alice/ok.md", "Is this allowed?")
    drop(vault, "inbox/carol/no.md", "And this?")
    drop(vault, "inbox/default.md", "Me?")  # default user "me" is not in the list either
    with Inbox(vault, settle_s=0.1) as box:
        report = box.process_pending()
    assert {r.source: r.status for r in report.results} == {
        "inbox/alice/ok.md": "answered",
        "inbox/carol/no.md": "rejected",
        "inbox/default.md": "rejected",
    }
    assert all("allowed_users" in str(r.message) for r in report.of("rejected"))


def test_temporary_hidden_and_filed_away_files_are_never_claimed(vault: Vault, inbox: Inbox) -> None:
    ignored = [
        "inbox/.q.md.swp",
        "inbox/q.md.swp",
        "inbox/q.md~",
        "inbox/draft.tmp",
        "inbox/.hidden.md",
        "inbox/download.md.part",
        "inbox/processed/old.md",
        "inbox/rejected/old.md",
        "inbox/rejected/old.md.error.md",
        "inbox/alice/deeper/q.md",
        "inbox/.obsidian/q.md",
    ]
    for rel in ignored:
        drop(vault, rel, "What about this?")
        assert not is_query_candidate(rel)
    assert inbox.process_pending().results == []
    assert all((vault.root / rel).exists() for rel in ignored)
    assert turns(vault) == []


def test_a_file_still_being_written_waits(vault: Vault) -> None:
    with Inbox(vault, settle_s=0.5, empty_grace_s=3.0) as box:
        path = drop(vault, "inbox/q.md", "half a quest", age=0)
        assert box.readiness("inbox/q.md") > 0.3
        assert box.process("inbox/q.md") == []
        with path.open("a") as handle:
            handle.write("ion?\n")
        assert box.process("inbox/q.md") == []
        time.sleep(0.6)
        [result] = box.process("inbox/q.md")
        assert result.status == "answered"
        assert (vault.root / "inbox/processed/q.md").read_text() == "half a question?\n"

        drop(vault, "inbox/new-note.md", "", age=1.0)  # an editor created it: you type next
        assert box.process_pending(final=False).results[-1].status == "deferred"
        assert (vault.root / "inbox/new-note.md").exists()
        [result] = box.process_pending(final=True).results  # --once: decide now
        assert result.status == "rejected" and result.reason == "empty"


def test_names_already_taken_get_a_suffix_and_nothing_is_overwritten(vault: Vault, inbox: Inbox) -> None:
    taken = {
        "inbox/processed/q.md": b"an older query",
        "outbox/me/q.md": b"a note of mine",
        "inbox/rejected/e.md.rejected": b"an older rejected file",
    }
    for rel, data in taken.items():
        drop(vault, rel, data)
    drop(vault, "inbox/q.md", "What now?")
    drop(vault, "inbox/q.txt", "And what about this?", age=9)
    drop(vault, "inbox/e.md", b"")
    report = inbox.process_pending()
    assert sorted((r.source, r.query_file or r.rejected, r.answer) for r in report.results) == [
        ("inbox/e.md", "inbox/rejected/e.md-2.rejected", None),
        ("inbox/q.md", "inbox/processed/q-2.md", "outbox/me/q-2.md"),
        ("inbox/q.txt", "inbox/processed/q.txt", "outbox/me/q-3.md"),
    ]
    assert (vault.root / "inbox/rejected/e.md-2.rejected.error.md").is_file()
    for rel, data in taken.items():
        assert (vault.root / rel).read_bytes() == data


# -- dying at any step -----------------------------------------------------------------


def die_at(monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    def checkpoint(self: Inbox, name: str) -> None:
        if name == step:
            raise Died(step)

    monkeypatch.setattr(Inbox, "_checkpoint", checkpoint)


def run_dying(vault: Vault, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    with monkeypatch.context() as patch:
        die_at(patch, step)
        box = Inbox(vault, settle_s=0.1)
        try:
            with pytest.raises(Died):
                box.process_pending()
        finally:
            box.close()


ANSWER_STEPS = [
    "claimed",
    "planned",
    "allocated",
    "started",
    "turn_done",
    "answer_published",
    "moved",
    "cleaned",
]


@pytest.mark.parametrize("step", ANSWER_STEPS)
def test_dying_at_any_step_still_gives_exactly_one_turn(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    drop(vault, "inbox/alice/q.md", "Which laptop is good for travel?\n")
    run_dying(vault, monkeypatch, step)
    assert not (vault.root / "inbox/alice/q.md").exists()  # claimed before it died

    with Inbox(vault, settle_s=0.1) as box:
        report = box.process_pending()
        assert box.process_pending().results == []
    if step == "cleaned":  # it died after the last step: nothing was left to do
        assert report.results == []
    else:
        [result] = report.results
        assert result.status == "answered" and result.recovered
        assert result.turn == "turn_000001" and result.answer == "outbox/alice/q.md"
    [(user, turn, started)] = turns(vault)
    assert (user, turn, started["inbox_file"]) == ("alice", "turn_000001", "inbox/processed/q.md")
    assert front(vault.root / "outbox/alice/q.md")["doc_id"] == "alice/turn_000001"
    assert sorted(p.name for p in (vault.root / "outbox/alice").iterdir()) == ["q.md"]
    assert os.listdir(vault.root / "inbox/processed") == ["q.md"]
    assert_clean(vault)


@pytest.mark.parametrize("phase", ["retrieve", "plan", "validate", "save"])
def test_dying_inside_the_pipeline_resumes_the_same_turn(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    drop(vault, "inbox/q.md", "What laptop for travel?")

    def dies(ctx, view, attempt):
        raise Died(phase)

    with monkeypatch.context() as patch:  # the process dies inside the step, as a kill would leave it
        patch.setitem(turn_module.STEPS, phase, (turn_module.STEPS[phase][0], dies))
        box = Inbox(vault, settle_s=0.1)
        with pytest.raises(Died):
            box.process_pending()
        box.close()
    with Inbox(vault, settle_s=0.1) as box:
        [result] = box.process_pending().results
    assert result.status == "answered" and result.turn == "turn_000001"
    assert len(turns(vault)) == 1
    assert_clean(vault)


@pytest.mark.parametrize("step", ["planned", "moved", "error_written", "cleaned"])
def test_dying_while_rejecting_still_rejects_once(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    drop(vault, "inbox/bin.md", b"\x00\x01\x02")
    run_dying(vault, monkeypatch, step)
    with Inbox(vault, settle_s=0.1) as box:
        results = box.process_pending().results
    assert [(r.status, r.reason) for r in results] == ([] if step == "cleaned" else [("rejected", "binary")])
    assert sorted(os.listdir(vault.root / "inbox/rejected")) == [
        "bin.md.rejected",
        "bin.md.rejected.error.md",
    ]
    assert claims(vault) == [] and turns(vault) == []


def test_a_torn_turn_started_is_repaired_and_the_folder_adopted(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    drop(vault, "inbox/q.md", "Tell me about hamsters")
    run_dying(vault, monkeypatch, "allocated")
    log = vault.root / "users/me/turns/turn_000001/events.jsonl"
    log.write_bytes(b'{"v":1,"seq":0,"ts":"2026')  # died halfway through the first write
    with Inbox(vault, settle_s=0.1) as box:
        [result] = box.process_pending().results
    assert result.status == "answered" and result.turn == "turn_000001"
    types = Counter(r["type"] for r in read_log(log).records)
    assert types["turn_started"] == 1 and types["torn_tail_repaired"] == 1
    assert log.with_name("events.jsonl.torn").is_file()
    assert_clean(vault)


def test_an_older_empty_turn_folder_is_not_taken_for_ours(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = vault.layout.turns_dir("me") / "turn_000001"  # left by some other dead writer
    stale.mkdir(parents=True)
    drop(vault, "inbox/q.md", "Tell me about hamsters")
    run_dying(vault, monkeypatch, "allocated")
    with Inbox(vault, settle_s=0.1) as box:
        [result] = box.process_pending().results
    assert result.turn == "turn_000002"
    assert not any(stale.iterdir())
    assert sorted(p.name for p in vault.layout.turn_dirs("me")) == ["turn_000001", "turn_000002"]


def test_an_empty_claim_folder_is_tidied_away(vault: Vault, inbox: Inbox) -> None:
    (vault.root / "inbox/.processing/00000000000000000001-1-1/query/alice").mkdir(parents=True)
    drop(vault, "inbox/q.md", "hello?")
    [result] = inbox.process_pending().results
    assert result.status == "answered"
    assert claims(vault) == []


def test_a_claim_that_keeps_failing_stays_and_is_retried_later(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    drop(vault, "inbox/q.md", "hello?")

    def broken(self, user, turn, **_):
        raise RuntimeError("backend exploded")

    with monkeypatch.context() as patch:
        patch.setattr(turn_module.Pipeline, "resume", broken)
        with Inbox(vault, settle_s=0.1) as box:
            [result] = box.process_pending().results
            assert result.status == "failed" and "backend exploded" in str(result.message)
            assert box.process_pending().results == []  # backing off
    assert len(claims(vault)) == 1
    with Inbox(vault, settle_s=0.1) as box:  # a restart retries at once
        [result] = box.process_pending().results
    assert result.status == "answered" and result.recovered
    assert_clean(vault)


def test_a_name_taken_between_a_crash_and_the_restart_does_not_lose_the_turn(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    drop(vault, "inbox/q.md", "Which laptop for travel?")
    run_dying(vault, monkeypatch, "answer_published")
    drop(vault, "inbox/processed/q.md", "someone else's file")  # takes the planned name
    with Inbox(vault, settle_s=0.1) as box:
        [result] = box.process_pending().results
    assert (result.turn, result.query_file) == ("turn_000001", "inbox/processed/q-2.md")
    assert (vault.root / "inbox/processed/q.md").read_text() == "someone else's file"
    assert (vault.root / "inbox/processed/q-2.md").read_text() == "Which laptop for travel?"
    [(_, _, started)] = turns(vault)
    assert started["inbox_file"] == "inbox/processed/q.md"  # the key it was started under
    assert_clean(vault)


def test_when_another_process_holds_the_inbox_files_are_left_to_it(vault: Vault) -> None:
    drop(vault, "inbox/q.md", "hello?")
    with file_lock(vault.root / "inbox/.processing/.lock"), Inbox(vault, lock_wait_s=0.2) as box:
        [result] = box.process_pending().results
    assert (result.source, result.status, result.reason) == ("inbox/q.md", "deferred", "busy")
    assert "the inbox is busy, held by pid" in str(result.message)
    assert (vault.root / "inbox/q.md").exists()
