"""`pandafs import chatgpt|claude|claude-code PATH --user U`: the chat histories people have.

Each reader turns one export format into the lines `import-turns` takes
(`{"user", "external_id", "timestamp", "query", "response", "meta"}`, one per
question-and-answer pair) and `import_history` hands them to `importer.import_turns`,
so numbering, events, the ledger that makes re-import add nothing, batching and
indexing are exactly those of `pandafs import-turns`.

Formats (as the exports are written; fixtures in tests/pandafs/fixtures/):

- **chatgpt** — `conversations.json` of a ChatGPT data export: a list of
  conversations `{id|conversation_id, title, create_time, update_time, mapping,
  current_node}`; `mapping` is a tree of nodes `{id, message, parent, children}`.
  Only the branch the user last saw is imported: the path from `current_node` up to
  the root (edited and regenerated branches are left out).
- **claude** — `conversations.json` of a claude.ai export: a list (or
  `{"conversations": [...]}`) of `{uuid, name, created_at, updated_at, chat_messages}`,
  messages `{uuid, sender: human|assistant, text, content: [blocks], created_at,
  parent_message_uuid?}`; with parent links, the path to `current_leaf_message_uuid`
  (else to the last message) is followed.
- **claude-code** — Claude Code's transcripts (`~/.claude/projects/<project>/<session>.jsonl`,
  a file or a folder of them): one JSON record per line `{type: user|assistant|summary|…,
  uuid, parentUuid, sessionId, timestamp, message: {role, content}}`; the path from the
  session's last message back through `parentUuid` (and `logicalParentUuid` across a
  compaction) is followed; sub-agent side chains (`isSidechain`, `agent-*.jsonl`) and
  meta records are left out.

One turn = one user message and the assistant's text until the next user message.
Tool calls and tool results are not part of the answer text: their names and count go
to `meta` (`tools`, `tool_messages`).  Every turn keeps its conversation's title, times
and id in `meta` and `external_id` = `{format}:{conversation id}:{message id}` (a
sha256 of the content when an id is missing), so importing the same export twice, or
an export that grew, adds only what is new.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from indexers.documents import IndexDoc, Skipped

from .errors import BadInput
from .importer import import_turns
from .vault import Vault

__all__ = ["FORMATS", "Conversion", "HistoryReport", "convert", "import_history"]

FORMATS = ("chatgpt", "claude", "claude-code")
NO_TEXT = "(no text)"


class EntryError(ValueError):
    """One conversation (or transcript line) cannot be read; the others go on."""


@dataclass
class Conversion:
    """What a reader made of an export: import lines (with a label each) and failures."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    conversations: int = 0

    def add(self, label: str, line: dict[str, Any]) -> None:
        self.lines.append(line)
        self.labels.append(label)

    def fail(self, entry: str, error: str) -> None:
        self.failed.append({"entry": entry, "error": error})


@dataclass
class HistoryReport:
    format: str
    source: str
    conversations: int = 0
    turns: int = 0
    imported: int = 0
    skipped: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "source": self.source,
            "conversations": self.conversations,
            "turns": self.turns,
            "imported": self.imported,
            "skipped": self.skipped,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
        }


# --- shared helpers -----------------------------------------------------------------------


def _iso(value: Any) -> str | None:
    """An ISO-8601 UTC time from epoch seconds or an ISO string; None if absent or unreadable."""
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(float(value), UTC)
        elif isinstance(value, str) and value.strip():
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment.isoformat().replace("+00:00", "Z")


def _digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


@dataclass
class _Pair:
    """One user message and what followed it until the next one."""

    message_id: str | None
    when: str | None
    query: str
    answers: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tool_messages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def _emit(
    out: Conversion,
    fmt: str,
    user: str,
    conv_id: str | None,
    conv: dict[str, Any],
    pairs: list[_Pair],
    label: str,
    fallback_time: str | None,
) -> None:
    """Turn a conversation's pairs into import lines."""
    key = conv_id or _digest(conv.get("title"), conv.get("created_at"), [p.query for p in pairs[:3]])
    for position, pair in enumerate(pairs, 1):
        when = pair.when or fallback_time
        if when is None:
            out.fail(f"{label} message {position}", "no time on the message or the conversation")
            continue
        response = "\n\n".join(a for a in pair.answers if a.strip())
        ident = pair.message_id or "sha256-" + _digest(pair.query, response, when)
        meta: dict[str, Any] = {
            "source": fmt,
            "conversation_id": conv_id,
            "conversation_title": conv.get("title"),
            "conversation_created_at": conv.get("created_at"),
            "conversation_updated_at": conv.get("updated_at"),
            "message_id": pair.message_id,
            "position": position,
            **pair.extra,
        }
        if pair.tools:
            meta["tools"] = sorted(set(pair.tools))
        if pair.tool_messages:
            meta["tool_messages"] = pair.tool_messages
        out.add(
            f"{label} message {position}",
            {
                "user": user,
                "external_id": f"{fmt}:{key}:{ident}",
                "timestamp": when,
                "query": pair.query,
                "response": response,
                "meta": {k: v for k, v in meta.items() if v is not None},
            },
        )


def _conv_label(index: int, title: Any, conv_id: Any) -> str:
    name = f" {title!r}" if isinstance(title, str) and title else ""
    ident = f" ({conv_id})" if isinstance(conv_id, str) and conv_id else ""
    return f"conversation {index}{name}{ident}"


def _load_json(path: Path, what: str) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"{path} is not a {what} export (not valid JSON: {exc})") from None


def _conversation_list(data: Any, path: Path, what: str) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise BadInput(f"{path} is not a {what} export: expected a list of conversations")
    return data


# --- ChatGPT --------------------------------------------------------------------------------


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    texts: list[str] = []
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):  # an image or file pointer: say so, keep no bytes
                kind = str(part.get("content_type") or "attachment").replace("_asset_pointer", "")
                texts.append(f"[{kind}]")
    elif isinstance(content.get("text"), str):
        texts.append(content["text"])
    return "\n".join(t for t in texts if t.strip()).strip()


def _chatgpt_path(conv: dict[str, Any]) -> list[dict[str, Any]]:
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise EntryError("no message tree (`mapping`)")
    node_id = conv.get("current_node")
    if node_id not in mapping:  # no pointer to the visible branch: take the newest leaf
        leaves = [n for n in mapping.values() if isinstance(n, dict) and not n.get("children")]
        if not leaves:
            raise EntryError("`current_node` is missing and the tree has no leaf")
        node_id = max(leaves, key=lambda n: (n.get("message") or {}).get("create_time") or 0)["id"]
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    while isinstance(node_id, str) and node_id in mapping:
        if node_id in seen:
            raise EntryError(f"the message tree has a cycle at node {node_id}")
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            raise EntryError(f"node {node_id} is not an object")
        if isinstance(node.get("message"), dict):
            path.append(node["message"])
        node_id = node.get("parent")
    return path[::-1]


def _chatgpt_pairs(messages: list[dict[str, Any]]) -> list[_Pair]:
    pairs: list[_Pair] = []
    for message in messages:
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        meta = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        if meta.get("is_visually_hidden_from_conversation"):
            continue
        text = _chatgpt_text(message)
        content_type = (message.get("content") or {}).get("content_type")
        if role == "user" and content_type not in (None, "text", "multimodal_text"):
            continue  # custom instructions and other context the user did not type here
        if role == "user":
            pairs.append(_Pair(_str(message.get("id")), _iso(message.get("create_time")), text or NO_TEXT))
        elif not pairs:
            continue  # system prompts and anything before the first question
        elif role == "tool":
            pairs[-1].tool_messages += 1
            name = author.get("name") if isinstance(author, dict) else None
            if isinstance(name, str) and name:
                pairs[-1].tools.append(name)
        elif role == "assistant":
            recipient = message.get("recipient", "all")
            if recipient not in (None, "all"):  # a call to a tool (browser, python, …)
                pairs[-1].tools.append(str(recipient))
                pairs[-1].tool_messages += 1
            elif content_type in (None, "text", "multimodal_text") and text:
                pairs[-1].answers.append(text)
                model = meta.get("model_slug")
                if isinstance(model, str):
                    pairs[-1].extra["model"] = model
    return pairs


def read_chatgpt(path: Path, user: str) -> Conversion:
    out = Conversion()
    for index, conv in enumerate(_conversation_list(_load_json(path, "ChatGPT"), path, "ChatGPT"), 1):
        if not isinstance(conv, dict):
            out.fail(f"conversation {index}", "not a JSON object")
            continue
        conv_id = _str(conv.get("conversation_id")) or _str(conv.get("id"))
        label = _conv_label(index, conv.get("title"), conv_id)
        out.conversations += 1
        try:
            pairs = _chatgpt_pairs(_chatgpt_path(conv))
        except EntryError as exc:
            out.fail(label, str(exc))
            continue
        info = {
            "title": _str(conv.get("title")),
            "created_at": _iso(conv.get("create_time")),
            "updated_at": _iso(conv.get("update_time")),
        }
        _emit(out, "chatgpt", user, conv_id, info, pairs, label, info["created_at"])
    return out


# --- claude.ai ------------------------------------------------------------------------------


def _claude_blocks(message: dict[str, Any], pair: _Pair | None) -> str:
    texts: list[str] = []
    content = message.get("content")
    if isinstance(content, list) and content:
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "tool_use" and pair is not None:
                pair.tools.append(str(block.get("name") or "tool"))
                pair.tool_messages += 1
            elif kind == "tool_result" and pair is not None:
                pair.tool_messages += 1
    if not texts and isinstance(message.get("text"), str):
        texts.append(message["text"])
    return "\n\n".join(t for t in texts if t.strip()).strip()


def _claude_path(conv: dict[str, Any]) -> list[dict[str, Any]]:
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        raise EntryError("no `chat_messages` list")
    good = [m for m in messages if isinstance(m, dict)]
    if len(good) != len(messages):
        raise EntryError("a message is not a JSON object")
    by_id = {m["uuid"]: m for m in good if isinstance(m.get("uuid"), str)}
    if not good or not any("parent_message_uuid" in m for m in good):
        return good
    leaf = by_id.get(conv.get("current_leaf_message_uuid")) or good[-1]
    path: list[dict[str, Any]] = []
    seen: set[int] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        path.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    return path[::-1]


def read_claude(path: Path, user: str) -> Conversion:
    out = Conversion()
    for index, conv in enumerate(_conversation_list(_load_json(path, "claude.ai"), path, "claude.ai"), 1):
        if not isinstance(conv, dict):
            out.fail(f"conversation {index}", "not a JSON object")
            continue
        conv_id = _str(conv.get("uuid"))
        label = _conv_label(index, conv.get("name"), conv_id)
        out.conversations += 1
        try:
            messages = _claude_path(conv)
        except EntryError as exc:
            out.fail(label, str(exc))
            continue
        pairs: list[_Pair] = []
        for message in messages:
            sender = message.get("sender")
            if sender in ("human", "user"):
                pair = _Pair(_str(message.get("uuid")), _iso(message.get("created_at")), "")
                pair.query = _claude_blocks(message, pair) or NO_TEXT
                files = [
                    f.get("file_name")
                    for f in [*(message.get("attachments") or []), *(message.get("files") or [])]
                    if isinstance(f, dict) and isinstance(f.get("file_name"), str)
                ]
                if files:
                    pair.extra["attachments"] = files
                pairs.append(pair)
            elif sender == "assistant" and pairs:
                text = _claude_blocks(message, pairs[-1])
                if text:
                    pairs[-1].answers.append(text)
        info = {
            "title": _str(conv.get("name")),
            "created_at": _iso(conv.get("created_at")),
            "updated_at": _iso(conv.get("updated_at")),
        }
        _emit(out, "claude", user, conv_id, info, pairs, label, info["created_at"])
    return out


# --- Claude Code ----------------------------------------------------------------------------

_COMMAND_PREFIXES = ("<command-", "<local-command-", "Caveat: The messages below were generated")


def _transcripts(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise BadInput(f"{path}: no such file or folder")
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


def _code_content(record: dict[str, Any], pair: _Pair | None) -> tuple[str, bool]:
    """(text, has_tool_results) of one transcript record's message."""
    message = record.get("message")
    if not isinstance(message, dict):
        raise EntryError("no `message` object")
    content = message.get("content")
    if isinstance(content, str):
        return content.strip(), False
    if not isinstance(content, list):
        raise EntryError("`message.content` is neither text nor a list of blocks")
    texts: list[str] = []
    results = False
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_result":
            results = True
            if pair is not None:
                pair.tool_messages += 1
        elif kind == "tool_use" and pair is not None:
            pair.tools.append(str(block.get("name") or "tool"))
            pair.tool_messages += 1
    return "\n\n".join(t for t in texts if t.strip()).strip(), results


def _code_chain(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The path from the last main-chain message back to the first (rewound branches left out)."""
    chain = [r for r in records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")]
    by_id = {r["uuid"]: r for r in chain if isinstance(r.get("uuid"), str)}
    if not chain:
        return []
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node: dict[str, Any] | None = chain[-1]
    while node is not None:
        uuid = node.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                break
            seen.add(uuid)
        path.append(node)
        parent = node.get("parentUuid") or node.get("logicalParentUuid")
        node = by_id.get(parent) if isinstance(parent, str) else None
    if len(path) < len(chain) and not any(isinstance(r.get("parentUuid"), str) for r in chain[1:]):
        return chain  # transcripts without parent links: file order is the conversation
    return path[::-1]


def _read_transcript(file: Path, user: str, out: Conversion) -> None:
    label = f"transcript {file.name}"
    try:
        raw_lines = file.read_bytes().splitlines()
    except OSError as exc:
        out.fail(label, f"cannot read: {exc.strerror or exc}")
        return
    records: list[dict[str, Any]] = []
    title: str | None = None
    for number, raw in enumerate(raw_lines, 1):
        if not raw.strip():
            continue
        try:
            record = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            out.fail(f"{label} line {number}", f"not valid JSON: {exc}")
            continue
        if not isinstance(record, dict):
            out.fail(f"{label} line {number}", "not a JSON object")
            continue
        if record.get("type") == "summary" and isinstance(record.get("summary"), str):
            title = title or record["summary"]
        elif record.get("type") in ("user", "assistant") and not isinstance(record.get("message"), dict):
            out.fail(f"{label} line {number}", "no `message` object")
            continue
        record["_line"] = number
        records.append(record)
    chain = _code_chain(records)
    if not chain:
        return
    out.conversations += 1
    session = next((r["sessionId"] for r in chain if isinstance(r.get("sessionId"), str)), None)
    session = session or file.stem
    pairs: list[_Pair] = []
    for record in chain:
        if record.get("isMeta"):
            continue
        try:
            if record.get("type") == "user":
                text, results = _code_content(record, pairs[-1] if pairs else None)
                if not text or text.startswith(_COMMAND_PREFIXES):
                    continue  # a tool result or a slash command's bookkeeping, not a question
                if results and pairs:
                    pairs[-1].answers.append(text)  # rare: words sent along with tool output
                    continue
                pair = _Pair(_str(record.get("uuid")), _iso(record.get("timestamp")), text)
                if isinstance(record.get("cwd"), str):
                    pair.extra["cwd"] = record["cwd"]
                if isinstance(record.get("gitBranch"), str) and record["gitBranch"]:
                    pair.extra["git_branch"] = record["gitBranch"]
                pairs.append(pair)
            elif pairs:
                text, _ = _code_content(record, pairs[-1])
                if text:
                    pairs[-1].answers.append(text)
                model = record["message"].get("model")
                if isinstance(model, str) and not model.startswith("<"):
                    pairs[-1].extra["model"] = model
        except EntryError as exc:
            out.fail(f"{label} line {record['_line']}", str(exc))
    times = [t for t in (_iso(r.get("timestamp")) for r in chain) if t]
    info = {
        "title": title or (pairs[0].query.splitlines()[0][:80] if pairs else None),
        "created_at": min(times) if times else None,
        "updated_at": max(times) if times else None,
    }
    _emit(out, "claude-code", user, session, info, pairs, label, info["created_at"])


def read_claude_code(path: Path, user: str) -> Conversion:
    out = Conversion()
    for file in _transcripts(path):
        _read_transcript(file, user, out)
    return out


READERS: dict[str, Callable[[Path, str], Conversion]] = {
    "chatgpt": read_chatgpt,
    "claude": read_claude,
    "claude-code": read_claude_code,
}


def convert(fmt: str, path: Path, user: str) -> Conversion:
    """Read an export into import-turns lines (nothing is written)."""
    if fmt not in READERS:
        raise BadInput(f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
    return READERS[fmt](path, user)


def import_history(
    vault: Vault,
    fmt: str,
    path: Path,
    user: str,
    *,
    on_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
    after_batch: Callable[[list[IndexDoc | Skipped]], None] | None = None,
) -> HistoryReport:
    """Import one export for `user`: convert it, then `import_turns` does the rest."""
    started = time.perf_counter()
    conversion = convert(fmt, path, user)
    report = HistoryReport(fmt, str(path), conversion.conversations, len(conversion.lines))
    report.failed = list(conversion.failed)
    if on_total is not None:
        on_total(len(conversion.lines))
    if conversion.lines:
        with tempfile.TemporaryDirectory(prefix="pandafs-import-") as tmp:
            staged = Path(tmp) / "turns.jsonl"
            staged.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in conversion.lines))
            result = import_turns(vault, staged, progress=progress, after_batch=after_batch)
        report.imported, report.skipped = result.imported, result.skipped
        report.failed += [_named(conversion.labels, f) for f in result.failed]
    report.seconds = time.perf_counter() - started
    return report


def _named(labels: list[str], failure: dict[str, Any]) -> dict[str, str]:
    line = failure.get("line")
    entry = labels[line - 1] if isinstance(line, int) and 0 < line <= len(labels) else f"line {line}"
    return {"entry": entry, "error": str(failure.get("error"))}
