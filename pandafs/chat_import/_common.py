"""What the export readers share: opening an export, the conversion, times, ids, pairs as lines."""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import orjson

from events.errors import json_problem

from ..errors import BadInput
from ..memory.turn_records import parse_time
from ..turn_import.lines import open_source

NO_TEXT = "(no text)"

# reasons a worded message is not imported (the account names each)
BRANCH_LEFT = "on a branch the user left"
BEFORE_FIRST = "before the first question"
INTERRUPTION = "interruption"
SIDECHAIN = "sidechain (sub-agent)"
REWOUND = "rewound (a later prompt replaced it)"
NO_TIME = "no time on the message or the conversation"


class EntryError(ValueError):
    """One conversation (or transcript line) cannot be read; the others go on."""


SHAPE_ERRORS = (EntryError, AttributeError, KeyError, TypeError)
"""What reading an entry whose JSON is not the format's shape raises: that entry fails, the
others go on (as with `EntryError`, without a check written for every field)."""


def shape_error(exc: Exception) -> str:
    """The failure message of an entry that raised one of `SHAPE_ERRORS`."""
    if isinstance(exc, EntryError):
        return str(exc)
    return f"not in the shape of the export ({type(exc).__name__}: {exc})"


@dataclass
class Conversion:
    """What a reader made of an export: import lines (`lines`: each one's label, message count
    and conversation number), failures, what was not imported, and anything not said in words
    (`not_messages`, by kind)."""

    sink: IO[bytes]  # where lines go as they are made
    lines: list[tuple[str, int, int]] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    conversations: int = 0
    messages: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    not_messages: Counter[str] = field(default_factory=Counter)

    def add(self, label: str, line: dict[str, Any], messages: int) -> None:
        self.sink.write(orjson.dumps(line) + b"\n")
        self.lines.append((label, messages, self.conversations))

    def fail(self, entry: str, error: str) -> None:
        # a name that is not UTF-8 is shown with U+FFFD: the account may be printed as JSON
        self.failed.append({"entry": _shown(entry), "error": _shown(error)})

    def skip(self, reason: str, messages: int = 1) -> None:
        self.skipped[reason] += messages


def _shown(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def open_export(path: Path, limit: int) -> IO[bytes]:
    """`path` opened under the one rule for outside files, at most `limit` bytes, else BadInput."""
    handle = open_source(path)
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        handle.close()
        raise BadInput(_over(path, size, limit))
    return handle


def _over(path: Path | str, size: int, limit: int) -> str:
    return (
        f"{path} is {size:,} bytes, more than [index] import_max_bytes = {limit:,}: "
        "raise the limit to import it"
    )


STREAM_ABOVE = 64 * 1024 * 1024
"""A larger export JSON is read one conversation at a time; a smaller one is parsed whole."""

CHUNK = 4 * 1024 * 1024


class Capped:
    """A stream refusing (BadInput) more than `limit` bytes in all, whatever its size said."""

    def __init__(self, stream: IO[bytes], limit: int, name: str) -> None:
        self.stream, self.limit, self.name, self.read_so_far = stream, limit, name, 0

    def _count(self, data: bytes) -> bytes:
        self.read_so_far += len(data)
        if self.read_so_far > self.limit:
            raise BadInput(_over(self.name, self.read_so_far, self.limit))
        return data

    def read(self, size: int) -> bytes:
        return self._count(self.stream.read(size))

    def __iter__(self) -> Iterator[bytes]:
        return (self._count(line) for line in self.stream)


@contextmanager
def _export_stream(path: Path, limit: int, member: str) -> Iterator[tuple[Capped, int]]:
    """(stream, size) of an export's JSON: the file, or `member` of a ZIP read as it comes."""
    with open_export(path, limit) as handle:
        if not zipfile.is_zipfile(handle):
            handle.seek(0)
            yield Capped(handle, limit, str(path)), os.fstat(handle.fileno()).st_size
            return
        handle.seek(0)
        try:
            with zipfile.ZipFile(handle) as archive:
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == member]
                if not names:
                    raise BadInput(f"{path} is a ZIP without {member}: not this kind of export")
                info = archive.getinfo(min(names, key=lambda n: (n.count("/"), n)))
                name = f"{path}:{info.filename}"
                if info.file_size > limit:
                    raise BadInput(_over(name, info.file_size, limit))
                with archive.open(info) as inner:
                    yield Capped(inner, limit, name), info.file_size
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as exc:
            raise BadInput(f"{path} is not a readable ZIP export: {exc}") from None


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*(?:"|\\?\Z)|[\[\]{},]')
"""A whole JSON string (or one running to the end of what was read), or a bracket or comma."""


def array_items(stream: Capped, head: bytes = b"") -> Iterator[bytes]:
    """The bytes of each item of the top-level JSON array in `stream` (after `head`), one at a time."""
    buf = bytearray(head)
    pos = start = depth = 0
    eof = False
    while True:
        for match in _TOKEN.finditer(buf, pos):
            token = match.group()
            if token[0] == 0x22:  # a string: skipped whole, unless it may go on
                if match.end() == len(buf) and not eof:
                    break
                continue
            if depth == 0:
                if token != b"[" or buf[: match.start()].strip(b" \t\r\n\xef\xbb\xbf"):
                    raise ValueError("not a JSON array")
                depth, start = 1, match.end()
            elif token in b"[{":
                depth += 1
            elif token in b"]}":
                depth -= 1
                if depth == 0:
                    last = bytes(buf[start : match.start()]).strip()
                    if last:
                        yield last
                    return
            elif depth == 1:
                yield bytes(buf[start : match.start()])
                start = match.end()
            pos = match.end()
        if eof:
            raise ValueError("the JSON ends before its array does")
        more = stream.read(CHUNK)
        eof = not more
        keep = min(start, pos) if depth else pos
        del buf[:keep]
        pos, start = pos - keep, start - keep
        buf += more


def _entries(data: Any, signature: str) -> list[Any] | None:
    """The conversations of a parsed export (a list, `{"conversations": …}`, or one); else None."""
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        return list(data["conversations"])
    if isinstance(data, dict) and signature in data:
        return [data]
    return data if isinstance(data, list) else None


def _json_entries(path: Path, limit: int, what: str, signature: str) -> Iterator[Any]:
    with _export_stream(path, limit, "conversations.json") as (stream, size):
        read = b""
        try:
            read = head = stream.read(CHUNK)
            if size > STREAM_ABOVE and head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"[":
                for read in array_items(stream, head):
                    yield orjson.loads(read)
                return
            read = head + stream.read(limit + 1)
            data = orjson.loads(read)
        except ValueError as exc:  # orjson.JSONDecodeError, or the array's reader
            raise BadInput(f"{path} is not a {what} export ({json_problem(read, exc)})") from None
    entries = _entries(data, signature)
    if entries is None:
        raise BadInput(f"{path} is not a {what} export: expected a list of conversations")
    yield from entries


def conversations(
    path: Path, limit: int, what: str, out: Conversion, signature: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(number, conversation) of a JSON export.  One none of whose conversations has the format's
    `signature` key is refused whole; a conversation that is not an object fails alone."""
    matched = index = 0
    for index, conv in enumerate(_json_entries(path, limit, what, signature), 1):
        if not isinstance(conv, dict):
            out.fail(f"conversation {index}", "not a JSON object")
            continue
        matched += signature in conv
        yield index, conv
    if index and not matched:
        raise BadInput(f"{path} is not a {what} export: no conversation has `{signature}`")


def iso_time(value: Any) -> str | None:
    """An ISO-8601 UTC time from epoch seconds or an ISO string; None if absent or unreadable."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment: datetime | None = datetime.fromtimestamp(float(value), UTC)
        else:
            moment = parse_time(value)
    except (ValueError, OverflowError, OSError):
        return None
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def nonblank(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


_MARKER = re.compile("\ue200[^\ue200\ue201]*\ue201|[\ue200-\ue2ff]")


def without_markers(text: str) -> str:
    """`text` without the citation markers of private-use characters (`\\ue200cite…\\ue201`):
    they point into the exporting product, at nothing a reader here can open."""
    return _MARKER.sub("", text)


def block_text(blocks: list[Any]) -> str:
    """The words of a message's `text` content blocks, blank ones left out."""
    texts = (b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    return "\n\n".join(t for t in texts if isinstance(t, str) and t.strip()).strip()


def external_id(fmt: str, conversation: str, message: str) -> str:
    """An id no two (conversation, message) pairs share (parts percent-encoded: no `:` inside)."""
    return f"{fmt}:{quote(conversation, safe='')}:{quote(message, safe='')}"


@dataclass
class Pair:
    """One user message and what followed it until the next one."""

    message_id: str | None
    when: str | None
    query: str
    answers: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tool_messages: int = 0
    context: list[dict[str, str]] = field(default_factory=list)  # {heading, text}
    context_messages: int = 0  # messages of the export held as context (a compaction summary)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        """Messages of the export this pair holds: the question, each answer, its context's."""
        return 1 + len(self.answers) + self.context_messages

    def count_tools(self, blocks: Any) -> None:
        """Count a message's tool calls (by name) and tool results among its content blocks."""
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self.tools.append(str(block.get("name") or "tool"))
                self.tool_messages += 1
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                self.tool_messages += 1


def emit(
    out: Conversion,
    fmt: str,
    user: str,
    conv_id: str | None,
    conv: dict[str, Any],
    pairs: list[Pair],
    label: str,
) -> None:
    """Turn a conversation's pairs into import lines (a pair without a time has its
    conversation's `created_at`)."""
    key = conv_id or digest(conv.get("title"), conv.get("created_at"), [p.query for p in pairs[:3]])
    for position, pair in enumerate(pairs, 1):
        when = pair.when or conv.get("created_at")
        if when is None:
            out.fail(f"{label} message {position}", NO_TIME)
            out.skip(NO_TIME, pair.messages)
            continue
        response = "\n\n".join(a for a in pair.answers if a.strip())
        ident = pair.message_id or "sha256-" + digest(pair.query, response, when)
        meta: dict[str, Any] = {
            "source": fmt,
            "conversation_id": key,
            "conversation_title": conv.get("title"),
            "conversation_created_at": conv.get("created_at"),
            "conversation_updated_at": conv.get("updated_at"),
            "message_id": pair.message_id,
            "position": position,
            "messages": pair.messages,
            **pair.extra,
            "tools": sorted(set(pair.tools)) or None,
            "tool_messages": pair.tool_messages or None,
        }
        line: dict[str, Any] = {
            "user": user,
            "external_id": external_id(fmt, key, ident),
            "timestamp": when,
            "query": pair.query,
            "response": response,
            "meta": {k: v for k, v in meta.items() if v is not None},
        }
        if pair.context:
            line["context"] = pair.context
        out.add(f"{label} message {position}", line, pair.messages)


def read_tree(
    out: Conversion,
    fmt: str,
    user: str,
    index: int,
    conv: dict[str, Any],
    head: tuple[str | None, Any, str | None, str | None],
    branches: Callable[[dict[str, Any]], tuple[list[dict[str, Any]], list[dict[str, Any]]]],
    worded: Callable[[dict[str, Any]], bool],
    pairs_of: Callable[[list[dict[str, Any]], Conversion], list[Pair]],
) -> None:
    """One conversation of an export whose messages form a tree (ChatGPT, claude.ai): the
    branch shown read into pairs (`branches`: it, then every other branch's messages), each
    message in words on another branch counted as left.  `head`: (id, title, created, updated)."""
    conv_id, title, created, updated = head
    name = f" {title!r}" if isinstance(title, str) and title else ""
    label = f"conversation {index}{name}" + (f" ({conv_id})" if conv_id else "")
    out.conversations += 1
    try:
        shown, others = branches(conv)
        for message in others:
            if worded(message):
                out.messages += 1
                out.skip(BRANCH_LEFT)
        pairs = pairs_of(shown, out)
    except SHAPE_ERRORS as exc:
        out.fail(label, shape_error(exc))
        return
    info = {"title": nonblank(title), "created_at": created, "updated_at": updated}
    emit(out, fmt, user, conv_id, info, pairs, label)
