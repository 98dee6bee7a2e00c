"""The claude.ai reader: `conversations.json` of an export (or its ZIP), the path to each
conversation's current leaf; an attachment's `extracted_content` is its question's context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    BEFORE_FIRST,
    NO_TEXT,
    Conversion,
    EntryError,
    Pair,
    block_text,
    conversations,
    iso_time,
    nonblank,
    read_tree,
)


def _claude_blocks(message: dict[str, Any], pair: Pair | None) -> str:
    """The text of `message` (its tool blocks counted on `pair`)."""
    content = message.get("content")
    text = block_text(content) if isinstance(content, list) else ""
    if pair is not None:
        pair.count_tools(content)
    if not text and isinstance(message.get("text"), str):
        text = message["text"].strip()
    return text


def _files(message: dict[str, Any]) -> tuple[list[str], list[dict[str, str]]]:
    """(names of the files attached to `message`, each once; their extracted text as context)."""
    names: list[str] = []
    context: list[dict[str, str]] = []
    for item in [*(message.get("attachments") or []), *(message.get("files") or [])]:
        if not isinstance(item, dict) or not isinstance(item.get("file_name"), str):
            continue
        name = item["file_name"]
        if name not in names:
            names.append(name)
        text = nonblank(item.get("extracted_content"))
        if text is not None:
            context.append({"heading": f"Attached: {name}", "text": text})
    return names, context


def _worded(message: dict[str, Any]) -> bool:
    return bool(_claude_blocks(message, None)) or bool(_files(message)[1])


def _claude_path(conv: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages on the path to the current leaf, in order; messages on other branches)."""
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        raise EntryError("no `chat_messages` list")
    good = [m for m in messages if isinstance(m, dict)]
    if len(good) != len(messages):
        raise EntryError("a message is not a JSON object")
    by_id = {m["uuid"]: m for m in good if isinstance(m.get("uuid"), str)}
    if not good or not any("parent_message_uuid" in m for m in good):
        return good, []
    leaf = by_id.get(conv.get("current_leaf_message_uuid")) or good[-1]
    path: list[dict[str, Any]] = []
    seen: set[int] = set()
    node: dict[str, Any] | None = leaf
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        path.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    return path[::-1], [m for m in good if id(m) not in seen]


def _claude_pairs(messages: list[dict[str, Any]], out: Conversion) -> list[Pair]:
    pairs: list[Pair] = []
    for message in messages:
        sender = message.get("sender")
        if sender not in ("human", "user", "assistant") or not _worded(message):
            out.not_messages[
                "tool use or empty message" if sender == "assistant" else f"{sender} message"
            ] += 1
            if sender == "assistant" and pairs:
                _claude_blocks(message, pairs[-1])
            continue
        out.messages += 1
        if sender in ("human", "user"):
            pair = Pair(nonblank(message.get("uuid")), iso_time(message.get("created_at")), "")
            names, context = _files(message)
            pair.query = _claude_blocks(message, pair) or (
                f"(attached: {', '.join(names)})" if names else NO_TEXT
            )
            pair.context = context
            if names:
                pair.extra["attachments"] = names
            pairs.append(pair)
        elif pairs:
            pairs[-1].answers.append(_claude_blocks(message, pairs[-1]))
        else:
            out.skip(BEFORE_FIRST)
    return pairs


def read_claude(path: Path, user: str, limit: int, out: Conversion) -> Conversion:
    for index, conv in conversations(path, limit, "claude.ai", out, "chat_messages"):
        times = iso_time(conv.get("created_at")), iso_time(conv.get("updated_at"))
        head = (nonblank(conv.get("uuid")), conv.get("name"), *times)
        read_tree(out, "claude", user, index, conv, head, _claude_path, _worded, _claude_pairs)
    return out
