"""`pandafs import` on exports shaped like the real ones (tests/pandafs/fixtures/shapes/README.md):
every chain read, every message accounted for, grown exports completed, inputs bounded."""

from __future__ import annotations

import json
import os
import zipfile
from datetime import timedelta
from pathlib import Path

import pytest

from pandafs.memory.api import Memory
from pandafs.vault import Vault
from tests.support.config import set_setting

SHAPES = Path(__file__).resolve().parents[1] / "pandafs" / "fixtures" / "shapes"


def _turns(vault: Vault, user: str = "alice") -> list[str]:
    folder = vault.layout.turns_dir(user)
    return [(t / "context.md").read_text() for t in sorted(folder.glob("turn_*"))] if folder.exists() else []


def _found(vault: Vault, words: str) -> list[str]:
    return [str(h["doc_id"]) for h in Memory(vault).search(words, user="alice", limit=3)]


def _question(text: str) -> str:
    return text.split("## 0. User Query\n\n", 1)[1].split("\n\n", 1)[0]


def test_claude_code_reads_every_chain_and_keeps_compaction_as_context(cli, vault: Vault) -> None:
    result = cli(
        "--root",
        vault.root,
        "import",
        "claude-code",
        SHAPES / "claude_code_session.jsonl",
        "--user",
        "alice",
        "--json",
    )
    assert result.code == 0, result.err
    texts = _turns(vault)
    questions = [_question(t) for t in texts]
    # the turn_duration record and the compact boundary cut nothing; both roots are read
    assert questions == [
        "How many frames does a Langstroth hive body hold, and should I use 8 or 10?",
        "When should I add a honey super in spring?",
        "Write a varroa mite count log as CSV",
        "Use semicolons instead of commas in the mite log",
        "Remind me what threshold of mites per 100 bees means I should treat?",
        "What wax foundation thickness suits a Warre hive?",
    ]
    assert "stay with ten" in texts[0] and "alice/turn_000001" in _found(vault, "Langstroth frames eight ten")
    assert not any("Request interrupted" in q for q in questions)
    # the compaction summary is context of the turn after it, not a question or a title
    assert "This session is being continued" in texts[4].split("## 0.")[1].split("## 5.")[0]
    assert all("This session is being continued" not in t.split("\n# Turn")[0] for t in texts)
    account = result.json["account"]
    assert result.json["conversations"] == 2 and result.json["imported"] == 6
    skipped = account["messages"]["skipped"]
    assert skipped["interruption"] == 2 and skipped["sidechain (sub-agent)"] == 1
    assert (
        account["messages"]["imported"] + account["messages"]["already_present"] + sum(skipped.values())
        == (account["messages"]["seen"])
    )
    assert account["not_messages"]["progress"] == 2 and account["not_messages"]["system"] == 3


def _zip(tmp_path: Path, source: Path) -> Path:
    archive = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("user.json", '{"id": "user-1"}')
        out.writestr("chat.html", "<html></html>")
        out.write(source, "conversations.json")
    return archive


def test_chatgpt_zip_parts_markers_and_a_grown_export(cli, vault: Vault, tmp_path: Path) -> None:
    first = cli(
        "--root",
        vault.root,
        "import",
        "chatgpt",
        _zip(tmp_path, SHAPES / "chatgpt_conversations.json"),
        "--user",
        "alice",
        "--json",
    )
    assert first.code == 0, first.err
    texts = "\n".join(_turns(vault))
    assert (
        "Should I burn the frames with mummies" in texts and "[text]" not in texts
    )  # {"content_type":"text"}
    assert "Can I still harvest honey from a colony with chalkbrood?" in texts  # a voice message's words
    assert "chalkbrood, a fungal disease that mummifies larvae." in texts.replace(" .", ".")
    assert not any(0xE000 <= ord(c) <= 0xF8FF for c in texts) and "turn0search3" not in texts
    assert first.json["imported"] == 5
    skipped = first.json["account"]["messages"]["skipped"]
    assert skipped["on a branch the user left"] == 2

    grown = tmp_path / "grown.json"
    grown.write_bytes((SHAPES / "chatgpt_conversations_grown.json").read_bytes())
    again = cli("--root", vault.root, "import", "chatgpt", grown, "--user", "alice", "--json")
    assert again.code == 0, again.err
    assert (again.json["imported"], again.json["completed"], again.json["skipped"]) == (1, 1, 4)
    assert "burn only frames with foulbrood" in "\n".join(_turns(vault))
    assert "alice/turn_000003" in _found(vault, "scrape reuse frames foulbrood")
    assert (
        cli("--root", vault.root, "import", "chatgpt", grown, "--user", "alice", "--json").json["imported"]
        == 0
    )


def test_an_older_export_after_a_grown_one_takes_nothing_back(cli, vault: Vault, tmp_path: Path) -> None:
    """Importing exports out of order (an old backup after a newer export) is not growth:
    the answer that arrived in the newer one stays in its turn and in search."""
    grown = tmp_path / "grown.json"
    grown.write_bytes((SHAPES / "chatgpt_conversations_grown.json").read_bytes())
    older = tmp_path / "older.json"
    older.write_bytes((SHAPES / "chatgpt_conversations.json").read_bytes())
    assert cli("--root", vault.root, "import", "chatgpt", grown, "--user", "alice").code == 0
    logs = sorted(vault.layout.turns_dir("alice").glob("turn_*/events.jsonl"))
    before = {log: log.read_bytes() for log in logs}
    stale = cli("--root", vault.root, "import", "chatgpt", older, "--user", "alice", "--json")
    assert stale.code == 0, stale.err
    assert (stale.json["imported"], stale.json["completed"], stale.json["skipped"]) == (0, 0, 5)
    assert {log: log.read_bytes() for log in logs} == before
    assert "burn only frames with foulbrood" in "\n".join(_turns(vault))


def test_the_human_output_prints_the_account(cli, vault: Vault) -> None:
    result = cli(
        "--root", vault.root, "import", "chatgpt", SHAPES / "chatgpt_conversations.json", "--user", "alice"
    )
    assert result.code == 0, result.err
    assert "messages: 11 seen: 9 imported, 0 already present, 2 skipped" in result.out
    assert "  skipped, on a branch the user left: 2" in result.out
    assert "conversations: 2 seen: 2 new, 0 went on or grew, 0 already present" in result.out
    assert "tool call or result 2" in result.out


def test_chatgpt_one_conversation_object(cli, vault: Vault) -> None:
    result = cli(
        "--root",
        vault.root,
        "import",
        "chatgpt",
        SHAPES / "chatgpt_one_conversation.json",
        "--user",
        "alice",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json["imported"] == 2


def test_claude_attachment_text_is_searchable_and_named_once(cli, vault: Vault) -> None:
    result = cli(
        "--root",
        vault.root,
        "import",
        "claude",
        SHAPES / "claude_conversations.json",
        "--user",
        "alice",
        "--json",
    )
    assert result.code == 0, result.err
    texts = _turns(vault)
    assert len(texts) == 2
    assert "three capped queen cells" in texts[1] and "38.9" in texts[0]
    assert texts[0].count("scale-log.csv") <= 2  # the §2 heading and meta, not twice in the list
    assert "alice/turn_000002" in _found(vault, "capped queen cells no eggs")


def test_ids_with_separators_do_not_collide(cli, vault: Vault, tmp_path: Path) -> None:
    base = json.loads((SHAPES / "chatgpt_one_conversation.json").read_text())
    one, two = json.loads(json.dumps(base)), json.loads(json.dumps(base))
    one["id"] = one["conversation_id"] = "a:b"
    two["id"] = two["conversation_id"] = "a"
    for node in two["mapping"].values():
        if node["message"] is not None:
            node["message"]["id"] = "b:" + node["message"]["id"]
    for node in one["mapping"].values():
        if node["message"] is not None:
            node["message"]["id"] = node["message"]["id"]
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([one, two]))
    result = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice", "--json")
    assert result.code == 0 and result.json["imported"] == 4 and result.json["skipped"] == 0


def _nothing_written(vault: Vault) -> bool:
    return not vault.layout.turns_dir("alice").exists() or not list(vault.layout.turns_dir("alice").iterdir())


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "over-limit", "symlink", "wrong-format"])
def test_unsafe_or_wrong_input_is_one_line_and_exit_2(cli, vault: Vault, tmp_path: Path, kind: str) -> None:
    fmt = "chatgpt"
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        path = tmp_path / "conversations.json"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "export"
        path.mkdir()
    elif kind == "over-limit":
        set_setting(vault.root, "import_max_bytes", 1000)
        path = SHAPES / "chatgpt_conversations.json"
    elif kind == "symlink":
        path = tmp_path / "link.json"
        path.symlink_to(SHAPES / "chatgpt_conversations.json")
    else:
        fmt, path = "claude-code", SHAPES / "chatgpt_conversations.json"
    result = cli("--root", vault.root, "import", fmt, path, "--user", "alice")
    assert result.code == 2, result.err
    assert result.err.count("\n") == 1 and "Traceback" not in result.err, result.err
    assert _nothing_written(vault)


def test_a_source_that_grows_past_the_limit_while_read_is_refused(tmp_path: Path) -> None:
    from pandafs.chat_import._common import Capped
    from pandafs.errors import BadInput

    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 3)
    with path.open("rb") as handle:  # measured at 18 bytes, grown to 27 while read by lines
        lines = iter(Capped(handle, 18, str(path)))
        assert [next(lines), next(lines)] == [b'{"a": 1}\n'] * 2
        with pytest.raises(BadInput, match=r"27 bytes, more than \[index\] import_max_bytes = 18"):
            next(lines)


def test_a_message_larger_than_the_index_takes_is_refused_not_acknowledged(cli, vault: Vault, tmp_path: Path):
    set_setting(vault.root, "max_file_bytes", 200_000)
    data = json.loads((SHAPES / "chatgpt_one_conversation.json").read_text())
    data["mapping"]["b-4"]["message"]["content"]["parts"] = ["White. " + "wax " * 60_000]
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps([data]))
    result = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice", "--json")
    assert result.code == 1 and result.json["imported"] == 1
    [failure] = result.json["failed"]
    assert "too large for the index" in failure["error"]
    for text in _turns(vault):
        assert len(text.encode()) <= 200_000


def test_turns_of_a_conversation_link_to_each_other_and_to_its_note(cli, vault: Vault) -> None:
    source = SHAPES / "claude_code_session.jsonl"
    assert cli("--root", vault.root, "import", "claude-code", source, "--user", "alice").code == 0
    texts = _turns(vault)

    def link(n: int) -> str:
        return f"[[users/alice/turns/turn_{n:06d}/context|turn {n}]]"

    assert f"Next: {link(2)}" in texts[0] and "Previous:" not in texts[0]
    assert f"Previous: {link(1)}" in texts[1] and f"Next: {link(3)}" in texts[1]
    assert f"Previous: {link(4)}" in texts[4] and "Next:" not in texts[4]
    assert "Previous:" not in texts[5] and "Next:" not in texts[5]  # the file's second session
    notes = sorted((vault.layout.user_dir("alice") / "conversations").glob("*.md"))
    assert len(notes) == 2
    first = next(n.read_text() for n in notes if "3f1c7a52" in n.name)
    assert [f"turn {i}]]" in first for i in range(1, 7)] == [True] * 5 + [False]
    assert any(f"In [[users/alice/conversations/{n.stem}|" in texts[0] for n in notes)


def test_a_grown_conversation_links_its_last_turn_to_the_new_one(cli, vault: Vault) -> None:
    before, after = SHAPES / "chatgpt_conversations.json", SHAPES / "chatgpt_conversations_grown.json"
    assert cli("--root", vault.root, "import", "chatgpt", before, "--user", "alice").code == 0
    assert cli("--root", vault.root, "import", "chatgpt", after, "--user", "alice").code == 0
    texts = _turns(vault)
    assert "Next: [[users/alice/turns/turn_000006/context|turn 6]]" in texts[2]
    assert "Previous: [[users/alice/turns/turn_000003/context|turn 3]]" in texts[5]
    [note] = [n.read_text() for n in (vault.layout.user_dir("alice") / "conversations").glob("*4d5e01*.md")]
    assert all(f"turn_00000{i}/context|turn {i}]]" in note for i in (1, 2, 3, 6))


def test_a_grown_export_leaves_every_turn_verified(cli, vault: Vault) -> None:
    before, after = SHAPES / "chatgpt_conversations.json", SHAPES / "chatgpt_conversations_grown.json"
    assert cli("--root", vault.root, "import", "chatgpt", before, "--user", "alice").code == 0
    assert cli("--root", vault.root, "import", "chatgpt", after, "--user", "alice").code == 0
    # the completed and linked turns' new ends are in the ledger: not taken for a rewrite
    result = cli("--root", vault.root, "verify", "--json")
    assert result.code == 0 and result.json["ok"], result.out


def test_imported_history_is_archived_by_when_it_came_in_not_when_it_was_said(cli, vault: Vault) -> None:
    from events.log import read_events
    from pandafs.archive import find_candidates

    source = SHAPES / "claude_code_session.jsonl"
    assert cli("--root", vault.root, "import", "claude-code", source, "--user", "alice").code == 0
    entered = read_events(vault.layout.turns_dir("alice") / "turn_000001" / "events.jsonl")[0].ts
    soon, _, _ = find_candidates(vault, now=entered + timedelta(days=1))
    assert soon == []  # said in September, imported a day ago: stays live
    later, _, _ = find_candidates(vault, now=entered + timedelta(days=40))
    assert len(later) == 6


@pytest.mark.parametrize(
    ("fmt", "name"), [("chatgpt", "chatgpt_conversations.json"), ("claude", "claude_conversations.json")]
)
def test_a_large_export_is_read_as_a_stream_with_the_same_result(
    cli, vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, name: str
) -> None:
    whole = cli("--root", vault.root, "import", fmt, SHAPES / name, "--user", "alice", "--json").json
    from pandafs.chat_import import _common

    monkeypatch.setattr(_common, "STREAM_ABOVE", 0)  # every export is "large"
    monkeypatch.setattr(_common, "CHUNK", 7)  # and read 7 bytes at a time
    streamed = cli(
        "--root", vault.root, "import", fmt, _zip(tmp_path, SHAPES / name), "--user", "bob", "--json"
    )
    assert streamed.code == 0, streamed.err
    assert streamed.json["account"] == whole["account"] and streamed.json["imported"] == whole["imported"]
    assert [t.replace("bob", "alice") for t in _turns(vault, "bob")] == _turns(vault, "alice")


def test_a_claude_code_session_that_went_on_completes_and_continues(
    cli, vault: Vault, tmp_path: Path
) -> None:
    lines = (SHAPES / "claude_code_session.jsonl").read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"uuid":"c-15"' in line)  # before the answer
    session = tmp_path / "3f1c7a52-8d2e-4b61-9a0e-2c5d7e9f1a01.jsonl"
    session.write_bytes(b"".join(lines[:cut]))
    first = cli("--root", vault.root, "import", "claude-code", session, "--user", "alice", "--json")
    assert first.code == 0 and first.json["imported"] == 4
    session.write_bytes(b"".join(lines))
    again = cli("--root", vault.root, "import", "claude-code", session, "--user", "alice", "--json")
    assert again.code == 0, again.err
    assert (again.json["completed"], again.json["imported"], again.json["skipped"]) == (1, 2, 3)
    texts = _turns(vault)
    assert (
        "date;count;hive columns" in texts[3] and "Next: [[users/alice/turns/turn_000005/context" in texts[3]
    )
    messages = again.json["account"]["messages"]
    assert (
        messages["imported"] + messages["already_present"] + sum(messages["skipped"].values())
        == messages["seen"]
    )


def test_claude_code_commands_and_an_automatic_compaction(cli, vault: Vault) -> None:
    source = SHAPES / "claude_code_compacted.jsonl"
    result = cli("--root", vault.root, "import", "claude-code", source, "--user", "alice", "--json")
    assert result.code == 0, result.err
    texts = _turns(vault)
    assert [_question(t) for t in texts] == [
        "/hive-check colony four after the heatwave",  # an answered slash command is a question
        "Feed colony four 2:1 syrup this week",
    ]
    assert "capped brood on five frames" in texts[0]
    # after the compaction the assistant went on with the exchange before it
    assert "feeding schedule is written to feeding.md" in texts[1] and "gained 0.8 kg" in texts[1]
    assert "This session is being continued" in texts[1] and "task-notification" not in texts[1]
    messages = result.json["account"]["messages"]
    assert messages["skipped"] == {
        "interruption": 1,
        "written by Claude Code, not the person (meta, notifications)": 2,
    }
    assert messages["imported"] + sum(messages["skipped"].values()) == messages["seen"] == 10
