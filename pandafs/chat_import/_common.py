"""What the export readers share: the conversion a reader fills, times and digests, and
turning one conversation's question-and-answer pairs into `import-turns` lines."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from events.errors import NotInVault
from events.fsio import open_outside_file

from ..errors import BadInput

NO_TEXT = "(no text)"


class EntryError(ValueError):
    """One conversation (or transcript line) cannot be read; the others go on."""


SHAPE_ERRORS = (EntryError, AttributeError, KeyError, TypeError)
"""What reading one entry of an export raises when its JSON is not the shape the format
has (a list where an id belongs, text where an object does): that entry fails, the
others go on — as `EntryError` says, without a check written for every field."""


def shape_error(exc: Exception) -> str:
    """The failure message of an entry that raised one of `SHAPE_ERRORS`."""
    if isinstance(exc, EntryError):
        return str(exc)
    return f"not in the shape of the export ({type(exc).__name__}: {exc})"


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


# --- shared helpers -----------------------------------------------------------------------


def iso_time(value: Any) -> str | None:
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


def digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()[:32]


def nonblank(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


@dataclass
class Pair:
    """One user message and what followed it until the next one."""

    message_id: str | None
    when: str | None
    query: str
    answers: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    tool_messages: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def emit(
    out: Conversion,
    fmt: str,
    user: str,
    conv_id: str | None,
    conv: dict[str, Any],
    pairs: list[Pair],
    label: str,
    fallback_time: str | None,
) -> None:
    """Turn a conversation's pairs into import lines."""
    key = conv_id or digest(conv.get("title"), conv.get("created_at"), [p.query for p in pairs[:3]])
    for position, pair in enumerate(pairs, 1):
        when = pair.when or fallback_time
        if when is None:
            out.fail(f"{label} message {position}", "no time on the message or the conversation")
            continue
        response = "\n\n".join(a for a in pair.answers if a.strip())
        ident = pair.message_id or "sha256-" + digest(pair.query, response, when)
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


def conversation_label(index: int, title: Any, conv_id: Any) -> str:
    name = f" {title!r}" if isinstance(title, str) and title else ""
    ident = f" ({conv_id})" if isinstance(conv_id, str) and conv_id else ""
    return f"conversation {index}{name}{ident}"


def read_source(path: Path) -> bytes:
    """The bytes of an export file, read under the vault's one rule
    (`events.fsio.open_outside_file`: no link, FIFO, device, folder or file with other
    names); `BadInput` saying why not."""
    try:
        with open_outside_file(path) as handle:
            return handle.read()
    except NotInVault as exc:
        raise BadInput(
            f"{path}: {exc.reason}; not read (PandaFS reads only plain files with one name)"
        ) from None
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None


def load_json(path: Path, what: str) -> Any:
    try:
        return orjson.loads(read_source(path))
    except orjson.JSONDecodeError as exc:
        raise BadInput(f"{path} is not a {what} export (not valid JSON: {exc})") from None


def conversation_list(data: Any, path: Path, what: str) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        data = data["conversations"]
    if not isinstance(data, list):
        raise BadInput(f"{path} is not a {what} export: expected a list of conversations")
    return data


def conversations(path: Path, what: str, out: Conversion) -> Iterator[tuple[int, dict[str, Any]]]:
    """(number, conversation) of a JSON export; a conversation that is not an object is
    recorded as failed in `out` and passed over."""
    for index, conv in enumerate(conversation_list(load_json(path, what), path, what), 1):
        if not isinstance(conv, dict):
            out.fail(f"conversation {index}", "not a JSON object")
            continue
        yield index, conv
