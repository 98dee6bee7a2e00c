"""The Claude Code reader: a session transcript (`*.jsonl`) or a folder of them, the
chain from each session's last message back, as `import-turns` lines."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ..errors import BadInput
from ._common import (
    SHAPE_ERRORS,
    Conversion,
    EntryError,
    Pair,
    emit,
    iso_time,
    nonblank,
    read_source,
    shape_error,
)

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


def _code_content(record: dict[str, Any], pair: Pair | None) -> tuple[str, bool]:
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
        raw_lines = read_source(file).splitlines()
    except BadInput as exc:
        out.fail(label, str(exc))
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
    pairs: list[Pair] = []
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
                pair = Pair(nonblank(record.get("uuid")), iso_time(record.get("timestamp")), text)
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
        except SHAPE_ERRORS as exc:
            out.fail(f"{label} line {record['_line']}", shape_error(exc))
    times = [t for t in (iso_time(r.get("timestamp")) for r in chain) if t]
    info = {
        "title": title or (pairs[0].query.splitlines()[0][:80] if pairs else None),
        "created_at": min(times) if times else None,
        "updated_at": max(times) if times else None,
    }
    emit(out, "claude-code", user, session, info, pairs, label, info["created_at"])


def read_claude_code(path: Path, user: str) -> Conversion:
    out = Conversion()
    for file in _transcripts(path):
        _read_transcript(file, user, out)
    return out
