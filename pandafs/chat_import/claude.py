"""The claude.ai reader: `conversations.json` of a claude.ai export, the path to each
conversation's current leaf, as `import-turns` lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    NO_TEXT,
    SHAPE_ERRORS,
    Conversion,
    EntryError,
    Pair,
    conversation_label,
    conversations,
    emit,
    iso_time,
    nonblank,
    shape_error,
)


def _claude_blocks(message: dict[str, Any], pair: Pair | None) -> str:
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


def _claude_pairs(messages: list[dict[str, Any]]) -> list[Pair]:
    pairs: list[Pair] = []
    for message in messages:
        sender = message.get("sender")
        if sender in ("human", "user"):
            pair = Pair(nonblank(message.get("uuid")), iso_time(message.get("created_at")), "")
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
    return pairs


def read_claude(path: Path, user: str) -> Conversion:
    out = Conversion()
    for index, conv in conversations(path, "claude.ai", out):
        conv_id = nonblank(conv.get("uuid"))
        label = conversation_label(index, conv.get("name"), conv_id)
        out.conversations += 1
        try:
            pairs = _claude_pairs(_claude_path(conv))
        except SHAPE_ERRORS as exc:
            out.fail(label, shape_error(exc))
            continue
        info = {
            "title": nonblank(conv.get("name")),
            "created_at": iso_time(conv.get("created_at")),
            "updated_at": iso_time(conv.get("updated_at")),
        }
        emit(out, "claude", user, conv_id, info, pairs, label, info["created_at"])
    return out
