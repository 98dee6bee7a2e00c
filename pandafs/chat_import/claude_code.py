"""The Claude Code reader: a transcript (`*.jsonl`) or a folder of them, read line by line.

A transcript is a tree of records linked by `parentUuid` (`logicalParentUuid` across a
compaction); every record stays in the tree, only messages in words are read:

- each prompt a person typed starts a turn; an assistant message belongs to the nearest
  prompt above it, so parallel tool calls all count;
- a prompt replaced by a later one on the same parent (a rewind) is counted, not imported;
- a compaction's summary (`isCompactSummary`) is the next prompt's context;
- interruptions, sidechains, meta records and slash-command bookkeeping are counted with
  their reason; tool calls, results and thinking are counted by kind."""

from __future__ import annotations

import bisect
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from ..errors import BadInput
from ..turn_import.lines import json_object
from ._common import (
    BEFORE_FIRST,
    INTERRUPTION,
    REWOUND,
    SHAPE_ERRORS,
    SIDECHAIN,
    Capped,
    Conversion,
    EntryError,
    Pair,
    block_text,
    emit,
    iso_time,
    nonblank,
    open_export,
    shape_error,
)

_COMMAND_PREFIXES = ("<command-", "<local-command-", "Caveat: The messages below were generated")
_HARNESS_PREFIXES = ("<task-notification>", "<system-reminder>")  # Claude Code telling the model
_INTERRUPTED = "[Request interrupted by user"
COMPACTED = "Summary of the conversation before (compacted)"
META = "written by Claude Code, not the person (meta, notifications)"
COMMAND = "slash command or its output"
_SKIPPED = {META: META, COMMAND: COMMAND, "interruption": INTERRUPTION, "sidechain": SIDECHAIN}  # role → why
_TRANSCRIPT_TYPES = frozenset(("user", "assistant", "system", "summary", "progress", "file-history-snapshot"))


def _transcripts(path: Path) -> list[Path]:
    if os.path.islink(path) or not path.is_dir():
        return [path]  # opened (and refused if not a regular file) by `open_export`
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(path):  # never follows symlinked folders
        dirnames[:] = sorted(d for d in dirnames if d != "subagents" and not d.startswith("."))
        found += [
            Path(dirpath) / n
            for n in sorted(filenames)
            if n.endswith(".jsonl") and not n.startswith("agent-")
        ]
    if not found:
        raise BadInput(f"{path}: no Claude Code transcripts (*.jsonl) in this folder")
    return found


def _content(record: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(text, the non-text blocks) of one transcript record's message."""
    message = record.get("message")
    if not isinstance(message, dict):
        raise EntryError("no `message` object")
    content = message.get("content")
    if isinstance(content, str):
        return content.strip(), []
    if not isinstance(content, list):
        raise EntryError("`message.content` is neither text nor a list of blocks")
    others = [b for b in content if isinstance(b, dict) and b.get("type") != "text"]
    return block_text(content), others


def _role(record: dict[str, Any], text: str, others: list[dict[str, Any]]) -> str:
    """What a user or assistant record is: `prompt`, `command`, `answer`, `summary`,
    `interruption`, `sidechain`, META, COMMAND, or a kind that is not a message in words."""
    if record.get("isSidechain"):
        return "sidechain" if text else "sidechain record"
    if record.get("type") == "assistant":
        return "answer" if text else "thinking or tool call"
    if record.get("isCompactSummary"):
        return "summary"
    if not text:
        return "tool result" if any(b.get("type") == "tool_result" for b in others) else "empty message"
    if record.get("isMeta"):
        return META
    if text.startswith(_INTERRUPTED):
        return "interruption"
    if text.startswith("<command-") and "<command-name>" in text:
        return "command"  # a slash command the person typed: a question if it is answered
    if text.startswith(_COMMAND_PREFIXES):
        return COMMAND
    if text.startswith(_HARNESS_PREFIXES):
        return META
    if any(b.get("type") == "tool_result" for b in others):
        return "answer"  # words sent along with tool output: part of the exchange
    return "prompt"


def _read_records(file: Path, limit: int, out: Conversion, label: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    bad = 0
    with open_export(file, limit) as handle:
        for number, raw in enumerate(Capped(handle, limit, str(file)), 1):
            if not raw.strip():
                continue
            record = json_object(raw)
            if isinstance(record, str):
                bad += 1
                out.fail(f"{label} line {number}", record)
                continue
            record["_line"] = number
            records.append(record)
    if not any(r.get("type") in _TRANSCRIPT_TYPES for r in records) and (records or bad):
        del out.failed[len(out.failed) - bad :]
        raise BadInput(f"{file} is not a Claude Code transcript: no line is a user or assistant record")
    return records


class _Tree:
    """The records of one file by uuid, and the prompt each hangs below (a walk ending at a
    compaction's boundary continues at the session's last prompt above it in the file)."""

    def __init__(self, records: list[dict[str, Any]], prompts: set[str]) -> None:
        self.by_id = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
        self._prompt_of: dict[str, str | None] = {}
        self._order = [
            (r["_line"], r["uuid"], r.get("sessionId")) for r in records if r.get("uuid") in prompts
        ]

    def _prompt_before(self, boundary: dict[str, Any]) -> str | None:
        at = bisect.bisect_left(self._order, (boundary["_line"],))
        session = boundary.get("sessionId")
        return next((uuid for _, uuid, s in reversed(self._order[:at]) if s == session), None)

    def parent(self, record: dict[str, Any]) -> dict[str, Any] | None:
        parent = record.get("parentUuid") or record.get("logicalParentUuid")
        return self.by_id.get(parent) if isinstance(parent, str) else None

    def prompt_above(self, record: dict[str, Any], prompts: set[str]) -> str | None:
        """The uuid of the nearest prompt above `record` (not itself)."""
        walked: dict[str, None] = {}  # in order, and a cycle found at once
        node = self.parent(record)
        found: str | None = None
        while node is not None:
            uuid = node["uuid"]
            if uuid in prompts:
                found = uuid
                break
            if uuid in self._prompt_of:
                found = self._prompt_of[uuid]
                break
            if uuid in walked:
                break  # a cycle: no prompt above
            walked[uuid] = None
            above = self.parent(node)
            if above is None and node.get("subtype") == "compact_boundary":
                found = self._prompt_before(node)
                break
            node = above
        for uuid in walked:
            self._prompt_of[uuid] = found
        return found


def _roles(records: list[dict[str, Any]], out: Conversion, label: str) -> dict[int, tuple[str, str]]:
    """index → (role, text) of each user and assistant record; other records counted by type."""
    roles: dict[int, tuple[str, str]] = {}
    for index, record in enumerate(records):
        kind = record.get("type")
        if kind not in ("user", "assistant"):
            out.not_messages[str(kind)] += 1
            continue
        try:
            text, others = _content(record)
        except SHAPE_ERRORS as exc:
            out.fail(f"{label} line {record['_line']}", shape_error(exc))
            continue
        roles[index] = (_role(record, text, others), text)
    return roles


def _anchors(
    records: list[dict[str, Any]], roles: dict[int, tuple[str, str]]
) -> tuple[set[str], set[str], set[str]]:
    """(prompts typed in words, slash commands, prompts rewound by a later one) by uuid."""
    typed: set[str] = set()
    commands: set[str] = set()
    siblings: dict[str, list[str]] = defaultdict(list)  # parent → prompts typed on it, file order
    for i, (role, _) in roles.items():
        uuid, parent = records[i].get("uuid"), records[i].get("parentUuid")
        if not isinstance(uuid, str):
            continue
        if role == "prompt":
            typed.add(uuid)
            if isinstance(parent, str):
                siblings[parent].append(uuid)
        elif role == "command":
            commands.add(uuid)
    return typed, commands, {uuid for group in siblings.values() for uuid in group[:-1]}


def _read_transcript(file: Path, user: str, limit: int, out: Conversion) -> None:
    label = f"transcript {file.name}"
    records = _read_records(file, limit, out, label)
    roles = _roles(records, out, label)
    typed, commands, rewound = _anchors(records, roles)
    prompts = typed | commands  # what an answer may hang below
    tree = _Tree(records, prompts)
    provisional: dict[str, tuple[str, Pair]] = {}  # a command's pair, until an answer comes

    sessions: dict[str, list[Pair]] = {}
    pairs: dict[str, Pair] = {}
    waiting: dict[str, list[str]] = defaultdict(list)  # prompt → summaries above it, kept as context
    for i, (role, text) in roles.items():
        record = records[i]
        if role in ("prompt", "command", "answer", "summary", *_SKIPPED):
            out.messages += 1
        else:
            out.not_messages[role] += 1
            continue
        if role in _SKIPPED:
            out.skip(_SKIPPED[role])
        elif role == "prompt" and record.get("uuid") in rewound:
            out.skip(REWOUND)
        elif role in ("prompt", "command"):
            query = _command_line(text) if role == "command" else text
            pair = Pair(nonblank(record.get("uuid")), iso_time(record.get("timestamp")), query)
            if isinstance(record.get("cwd"), str):
                pair.extra["cwd"] = record["cwd"]
            if isinstance(record.get("gitBranch"), str) and record["gitBranch"]:
                pair.extra["git_branch"] = record["gitBranch"]
            for summary in waiting.pop(record.get("uuid", ""), []):
                pair.context.append({"heading": COMPACTED, "text": summary})
                pair.context_messages += 1
            session = nonblank(record.get("sessionId")) or file.stem
            if role == "command":
                provisional[record["uuid"]] = (session, pair)
            else:
                sessions.setdefault(session, []).append(pair)
            pairs[record.get("uuid", f"line {i}")] = pair
        else:
            above = tree.prompt_above(record, prompts)
            if role == "summary":  # context of the next prompt below it, else of the exchange it goes on with
                below = _prompt_below(records, i, tree, typed)
                if below is not None:
                    waiting[below].append(text)
                elif above in pairs:
                    if above in provisional:  # `/compact …` whose summary this is
                        session, pair = provisional.pop(above)
                        sessions.setdefault(session, []).append(pair)
                    pairs[above].context.append({"heading": COMPACTED, "text": text})
                    pairs[above].context_messages += 1
                else:
                    out.skip(BEFORE_FIRST)
            elif above is None:
                out.skip(BEFORE_FIRST)
            elif above in rewound:
                out.skip(REWOUND)
            else:
                if above in provisional:  # the command was a question: it has an answer
                    session, pair = provisional.pop(above)
                    sessions.setdefault(session, []).append(pair)
                pair = pairs[above]
                pair.answers.append(text)
                model = (record.get("message") or {}).get("model")
                if isinstance(model, str) and not model.startswith("<"):
                    pair.extra["model"] = model
    for i, (role, _) in roles.items():  # tool calls and results of each exchange, by name
        if role in ("answer", "thinking or tool call", "tool result"):
            above = tree.prompt_above(records[i], prompts)
            if above in pairs:
                pairs[above].count_tools((records[i].get("message") or {}).get("content"))
    for session, pair in provisional.values():  # commands nothing answered: bookkeeping…
        if pair.context:  # …unless something was kept with them
            sessions.setdefault(session, []).append(pair)
        else:
            out.skip(COMMAND)
    titles = [
        r["summary"] for r in records if r.get("type") == "summary" and isinstance(r.get("summary"), str)
    ]
    line_of = {r["uuid"]: r["_line"] for r in records if r.get("uuid") in prompts}
    for session, session_pairs in sessions.items():
        session_pairs.sort(key=lambda p: line_of.get(p.message_id or "", 0))  # file order
        out.conversations += 1
        times = [p.when for p in session_pairs if p.when]
        info = {
            "title": titles[0]
            if titles and len(sessions) == 1
            else session_pairs[0].query.splitlines()[0][:80],
            "created_at": min(times) if times else None,
            "updated_at": max(times) if times else None,
        }
        emit(out, "claude-code", user, session, info, session_pairs, label)
    for summary_list in waiting.values():
        out.skip(BEFORE_FIRST, len(summary_list))


def _command_line(text: str) -> str:
    """`/name args` of a slash command's record (`<command-name>…<command-args>…`)."""
    name = re.search(r"<command-name>(.*?)</command-name>", text, re.S)
    args = re.search(r"<command-args>(.*?)</command-args>", text, re.S)
    line = " ".join(part.group(1).strip() for part in (name, args) if part and part.group(1).strip())
    return line or text


def _prompt_below(records: list[dict[str, Any]], index: int, tree: _Tree, prompts: set[str]) -> str | None:
    """The first prompt after `records[index]` in the file whose chain passes through it."""
    uuid = records[index].get("uuid")
    for record in records[index + 1 :]:
        if record.get("uuid") not in prompts:
            continue
        node = tree.parent(record)
        hops = 0
        while node is not None and hops < 10_000:
            if node.get("uuid") == uuid:
                return str(record["uuid"])
            if node.get("uuid") in prompts:
                break
            node = tree.parent(node)
            hops += 1
    return None


def read_claude_code(path: Path, user: str, limit: int, out: Conversion) -> Conversion:
    files = _transcripts(path)
    for file in files:
        try:
            _read_transcript(file, user, limit, out)
        except BadInput as exc:
            if files == [path]:
                raise  # the one file asked for: refused whole
            out.fail(f"transcript {file.name}", str(exc))  # one file of a folder: named, the rest go in
    return out
