"""`pandafs import chatgpt|claude|claude-code`: fixtures written in each export's real format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest

from pandafs.memory.api import Memory
from pandafs.vault import Vault

FIXTURES = Path(__file__).resolve().parents[1] / "pandafs" / "fixtures"
SOURCES = {
    "chatgpt": FIXTURES / "chatgpt_conversations.json",
    "claude": FIXTURES / "claude_conversations.json",
    "claude-code": FIXTURES / "claude_code",
}
# (conversations, turns, a question that must be a turn, text of a branch that was left)
EXPECTED = {
    "chatgpt": (2, 3, "Which solid wheel size is safe for a Syrian hamster?", "Abandoned branch answer"),
    "claude": (2, 4, "What flour ratio should I feed it?", "An earlier answer that was regenerated"),
    "claude-code": (1, 2, "Also log each watering to a CSV file", "Rewound question that was abandoned"),
}


def _turn_texts(vault: Vault, user: str) -> str:
    return "\n".join(
        (folder / "context.md").read_text() for folder in sorted(vault.layout.turns_dir(user).glob("turn_*"))
    )


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_import_then_reimport_adds_nothing(cli, vault: Vault, fmt: str) -> None:
    conversations, turns, question, left_out = EXPECTED[fmt]
    first = cli("--root", vault.root, "import", fmt, SOURCES[fmt], "--user", "alice", "--json")
    assert first.code == 0, first.err
    assert first.json["conversations"] == conversations
    assert (first.json["imported"], first.json["skipped"], first.json["failed"]) == (turns, 0, [])

    texts = _turn_texts(vault, "alice")
    assert question in texts
    assert left_out not in texts  # only the branch the user last saw
    assert "private reasoning" not in texts and "sub-agent" not in texts and "raw search results" not in texts

    hits = Memory(vault).search(question, user="alice", limit=3)
    top = hits[0]
    assert top["external_id"].startswith(f"{fmt}:")
    meta = top["meta"]
    assert meta["source"] == fmt and meta["conversation_id"] in top["external_id"]
    assert meta["conversation_title"] and meta["conversation_created_at"].endswith("Z")

    again = cli("--root", vault.root, "import", fmt, SOURCES[fmt], "--user", "alice", "--json")
    assert again.code == 0
    assert (again.json["imported"], again.json["skipped"]) == (0, turns)
    assert len(list(vault.layout.turns_dir("alice").glob("turn_*"))) == turns
    assert Memory(vault).search(question, user="bob") == []  # bound to --user


def test_tool_messages_are_kept_out_of_answers_but_counted(cli, vault: Vault) -> None:
    assert cli("--root", vault.root, "import", "chatgpt", SOURCES["chatgpt"], "--user", "alice").code == 0
    assert (
        cli("--root", vault.root, "import", "claude-code", SOURCES["claude-code"], "--user", "alice").code
        == 0
    )
    hits = Memory(vault).search("solid wheel Syrian hamster", user="alice", limit=1)
    assert hits[0]["meta"]["tools"] == ["browser"] and hits[0]["meta"]["tool_messages"] == 2
    hits = Memory(vault).search("waters the tomatoes soil moisture", user="alice", limit=1)
    meta = hits[0]["meta"]
    assert meta["tools"] == ["Read"] and meta["conversation_title"] == "Tomato watering script"
    assert meta["cwd"] == "/home/me/garden" and meta["model"] == "claude-sonnet-4-5"


def test_progress_and_summary_in_text_mode(cli, vault: Vault) -> None:
    result = cli("--root", vault.root, "import", "claude", SOURCES["claude"], "--user", "alice")
    assert result.code == 0
    assert "4 turns to import" in result.err
    assert "2 conversations, 4 turns: imported 4, skipped 0 already present, failed 0" in result.out


def test_without_ids_a_content_hash_keeps_reimport_idempotent(cli, vault: Vault, tmp_path: Path) -> None:
    data = json.loads(SOURCES["chatgpt"].read_text())
    for conv in data:
        conv.pop("id"), conv.pop("conversation_id", None)
        for node in conv["mapping"].values():
            if node["message"] is not None:
                node["message"].pop("id")
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(data))
    first = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice", "--json")
    again = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice", "--json")
    assert first.json["imported"] == 3 and again.json["imported"] == 0 and again.json["skipped"] == 3


def test_malformed_chatgpt_names_bad_entries_and_imports_the_rest(cli, vault: Vault, tmp_path: Path) -> None:
    data = json.loads(SOURCES["chatgpt"].read_text())
    data.insert(1, {"title": "Broken", "id": "conv-broken", "current_node": "x"})  # no mapping
    data.append("not a conversation")
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(data))
    result = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice", "--json")
    assert result.code == 1
    assert result.json["imported"] == 3
    entries = {f["entry"]: f["error"] for f in result.json["failed"]}
    assert entries == {
        "conversation 2 'Broken' (conv-broken)": "no message tree (`mapping`)",
        "conversation 4": "not a JSON object",
    }


def test_malformed_claude_names_bad_entries(cli, vault: Vault, tmp_path: Path) -> None:
    data = json.loads(SOURCES["claude"].read_text())
    data.append({"uuid": "conv-x", "name": "No messages", "chat_messages": "oops"})
    data[0]["chat_messages"][2]["created_at"] = None  # falls back to the conversation's time
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(data))
    result = cli("--root", vault.root, "import", "claude", source, "--user", "alice", "--json")
    assert result.code == 1 and result.json["imported"] == 4
    assert result.json["failed"] == [
        {"entry": "conversation 3 'No messages' (conv-x)", "error": "no `chat_messages` list"}
    ]


@pytest.mark.parametrize(
    ("fmt", "broken"),
    [
        ("chatgpt", {"id": "c-noid", "mapping": {"n1": {"message": {"create_time": 1}, "children": []}}}),
        ("chatgpt", {"id": "c-list", "current_node": ["n1"], "mapping": {"n1": {"id": "n1"}}}),
        (
            "chatgpt",
            {
                "id": "c-times",
                "mapping": {"a": {"id": "a", "message": {"create_time": "x"}}, "b": {"id": "b"}},
            },
        ),
        (
            "chatgpt",
            {
                "id": "c-text",
                "current_node": "n1",
                "mapping": {"n1": {"message": {"author": {"role": "user"}, "content": "hi"}}},
            },
        ),
        (
            "claude",
            {
                "uuid": "c-leaf",
                "current_leaf_message_uuid": [1],
                "chat_messages": [{"parent_message_uuid": "m0"}],
            },
        ),
        ("claude", {"uuid": "c-parent", "chat_messages": [{"uuid": "m1", "parent_message_uuid": {"a": 1}}]}),
        (
            "claude",
            {
                "uuid": "c-files",
                "chat_messages": [{"uuid": "m1", "sender": "human", "text": "hi", "files": 5}],
            },
        ),
    ],
)
def test_an_entry_of_an_unexpected_shape_is_named_and_the_rest_import(
    cli, vault: Vault, tmp_path: Path, fmt: str, broken: dict
) -> None:
    data = json.loads(SOURCES[fmt].read_text())
    data.append(broken)
    source = tmp_path / "conversations.json"
    source.write_text(json.dumps(data))
    result = cli("--root", vault.root, "import", fmt, source, "--user", "alice", "--json")
    assert result.code == 1 and "internal error" not in result.err, result.err
    assert result.json["imported"] == EXPECTED[fmt][1]
    [failure] = result.json["failed"]
    assert failure["entry"].startswith(f"conversation {len(data)}") and failure["error"]


def test_malformed_claude_code_lines_are_named(cli, vault: Vault, tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    shutil.copytree(SOURCES["claude-code"], folder)
    transcript = next(folder.rglob("5e55a000-*.jsonl"))
    with transcript.open("ab") as handle:
        handle.write(b'{"type": "user", "uuid": "torn", "message": {"role": "us\n')
        handle.write(b'{"type": "assistant", "uuid": "u-10", "parentUuid": "u-9"}\n')
    result = cli("--root", vault.root, "import", "claude-code", folder, "--user", "alice", "--json")
    assert result.code == 1 and result.json["imported"] == 2
    entries = [f["entry"] for f in result.json["failed"]]
    assert entries == [f"transcript {transcript.name} line 12", f"transcript {transcript.name} line 13"]


def test_a_transcript_whose_name_is_not_utf8_is_read_and_named_in_the_json(
    cli, vault: Vault, tmp_path: Path
) -> None:
    """A folder's transcripts named in Latin-1: the good one imports, the bad one is named
    (U+FFFD for its byte) in an account `--json` can print."""
    import os

    folder = tmp_path / "projects"
    shutil.copytree(SOURCES["claude-code"], folder)
    transcript = next(folder.rglob("5e55a000-*.jsonl"))
    os.rename(transcript, os.fsencode(transcript.parent) + b"/s\xe9.jsonl")
    with open(os.fsencode(transcript.parent) + b"/b\xe9.jsonl", "wb") as handle:
        handle.write(b"not a transcript\n")
    result = cli("--root", vault.root, "import", "claude-code", folder, "--user", "alice", "--json")
    assert result.code == 1, result.err
    assert result.json["imported"] == 2
    assert [f["entry"] for f in result.json["failed"]] == ["transcript b\ufffd.jsonl"]


def test_not_an_export_is_bad_input(cli, vault: Vault, tmp_path: Path) -> None:
    source = tmp_path / "conversations.json"
    source.write_text('{"truncated": ')
    result = cli("--root", vault.root, "import", "chatgpt", source, "--user", "alice")
    assert result.code == 2 and result.err.count("\n") == 1 and "not valid JSON" in result.err
    source.write_text(orjson.dumps({"title": "one conversation, not a list"}).decode())
    result = cli("--root", vault.root, "import", "claude", source, "--user", "alice")
    assert result.code == 2 and "expected a list of conversations" in result.err
    assert not vault.layout.turns_dir("alice").exists() or not list(vault.layout.turns_dir("alice").iterdir())
