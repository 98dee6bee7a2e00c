"""The ChatGPT reader: `conversations.json` of a ChatGPT data export, the branch the user
last saw of each conversation, as `import-turns` lines."""

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


def _chatgpt_pairs(messages: list[dict[str, Any]]) -> list[Pair]:
    pairs: list[Pair] = []
    for message in messages:
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        meta = message.get("metadata")
        if not isinstance(meta, dict):
            meta = {}
        if meta.get("is_visually_hidden_from_conversation"):
            continue
        text = _chatgpt_text(message)
        content_type = (message.get("content") or {}).get("content_type")
        if role == "user" and content_type not in (None, "text", "multimodal_text"):
            continue  # custom instructions and other context the user did not type here
        if role == "user":
            pairs.append(
                Pair(nonblank(message.get("id")), iso_time(message.get("create_time")), text or NO_TEXT)
            )
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
    for index, conv in conversations(path, "ChatGPT", out):
        conv_id = nonblank(conv.get("conversation_id")) or nonblank(conv.get("id"))
        label = conversation_label(index, conv.get("title"), conv_id)
        out.conversations += 1
        try:
            pairs = _chatgpt_pairs(_chatgpt_path(conv))
        except SHAPE_ERRORS as exc:
            out.fail(label, shape_error(exc))
            continue
        info = {
            "title": nonblank(conv.get("title")),
            "created_at": iso_time(conv.get("create_time")),
            "updated_at": iso_time(conv.get("update_time")),
        }
        emit(out, "chatgpt", user, conv_id, info, pairs, label, info["created_at"])
    return out
