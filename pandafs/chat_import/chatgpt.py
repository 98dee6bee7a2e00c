"""The ChatGPT reader: `conversations.json` of an export (or its ZIP, or one conversation), the
branch the user last saw of each; messages on branches the user left are counted, not imported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import (
    BEFORE_FIRST,
    NO_TEXT,
    Conversion,
    EntryError,
    Pair,
    conversations,
    iso_time,
    nonblank,
    read_tree,
    without_markers,
)

_TEXT_TYPES = (None, "text", "multimodal_text")


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("text"), str):  # {"content_type": "text" | "audio_transcription", "text": …}
        return part["text"]
    kind = str(part.get("content_type") or "attachment")
    if kind == "audio_asset_pointer":
        return ""  # the recording; its words come as an audio_transcription part
    return f"[{kind.replace('_asset_pointer', '')}]"  # an image or file: say so, keep no bytes


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    texts: list[str] = []
    if isinstance(parts, list):
        texts = [_part_text(p) for p in parts]
    elif isinstance(content.get("text"), str):
        texts.append(content["text"])
    return without_markers("\n".join(t for t in texts if t.strip()).strip())


def _chatgpt_path(conv: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(messages on the branch the user last saw, in order; messages on every other branch)."""
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
    others = [
        n["message"]
        for k, n in mapping.items()
        if k not in seen and isinstance(n, dict) and isinstance(n.get("message"), dict)
    ]
    return path[::-1], others


def _kind(message: dict[str, Any]) -> str | None:
    """None for a message in words (a question or an answer); else what it is."""
    author = message.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    raw_meta = message.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
    content_type = (message.get("content") or {}).get("content_type")
    if meta.get("is_visually_hidden_from_conversation") or role == "system":
        return "system or hidden context"
    if role == "tool" or (role == "assistant" and message.get("recipient", "all") not in (None, "all")):
        return "tool call or result"
    if role not in ("user", "assistant"):
        return f"{role} message"
    if content_type not in _TEXT_TYPES:
        return "custom instructions" if role == "user" else f"assistant {content_type}"
    if not _chatgpt_text(message):
        return "empty message"
    return None


def _worded(message: dict[str, Any]) -> bool:
    return _kind(message) is None


def _chatgpt_pairs(messages: list[dict[str, Any]], out: Conversion) -> list[Pair]:
    pairs: list[Pair] = []
    for message in messages:
        kind = _kind(message)
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if kind is not None:
            out.not_messages[kind] += 1
            if kind == "tool call or result" and pairs:
                pairs[-1].tool_messages += 1
                name = (
                    author.get("name")
                    if isinstance(author, dict) and role == "tool"
                    else message.get("recipient")
                )
                if isinstance(name, str) and name:
                    pairs[-1].tools.append(name)
            continue
        out.messages += 1
        text = _chatgpt_text(message)
        if role == "user":
            pairs.append(
                Pair(nonblank(message.get("id")), iso_time(message.get("create_time")), text or NO_TEXT)
            )
        elif not pairs:
            out.skip(BEFORE_FIRST)
        else:
            pairs[-1].answers.append(text)
            model = (message.get("metadata") or {}).get("model_slug")
            if isinstance(model, str):
                pairs[-1].extra["model"] = model
    return pairs


def read_chatgpt(path: Path, user: str, limit: int, out: Conversion) -> Conversion:
    for index, conv in conversations(path, limit, "ChatGPT", out, "mapping"):
        conv_id = nonblank(conv.get("conversation_id")) or nonblank(conv.get("id"))
        times = iso_time(conv.get("create_time")), iso_time(conv.get("update_time"))
        head = (conv_id, conv.get("title"), *times)
        read_tree(out, "chatgpt", user, index, conv, head, _chatgpt_path, _worded, _chatgpt_pairs)
    return out
