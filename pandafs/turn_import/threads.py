"""The turns of one imported conversation, linked in order, and the conversation's note.

A turn whose `meta` names a conversation gets a `Conversation` block in its §2: links to
the conversation's note (`users/{u}/conversations/{source}-{id}.md`) and to the turns
before and after it.  A turn rendered before its next one existed gets its `Next:` link
later as a new context event (`fix_ups`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from events.documents import wikilink
from events.schema import ContextBlock
from events.stamps import format_ts

from .lines import ImportLine

__all__ = ["THREAD_HEADING", "Threads", "conversation_of", "with_next"]

THREAD_HEADING = "Conversation"


def conversation_of(line: ImportLine) -> tuple[str, str, str] | None:
    """(key, source, conversation id) of the conversation `line` belongs to, if it names one."""
    meta = line.meta or {}
    ident = meta.get("conversation_id")
    if not isinstance(ident, str | int) or ident == "":
        return None
    source = str(meta.get("source") or "import")
    return orjson.dumps([source, str(ident)]).decode(), source, str(ident)


def note_rel(user: str, source: str, ident: str) -> str:
    """Where the note of a conversation lives: readable, and distinct for distinct ids."""
    readable = re.sub(r"[^A-Za-z0-9_-]+", "-", ident).strip("-")[:60] or "conversation"
    tag = hashlib.sha256(orjson.dumps([source, ident])).hexdigest()[:8]
    return f"users/{user}/conversations/{re.sub(r'[^a-z0-9_-]+', '-', source.lower())}-{readable}-{tag}.md"


def _turn_link(user: str, turn: str) -> str:
    return wikilink(f"users/{user}/turns/{turn}/context.md", f"turn {int(turn.removeprefix('turn_'))}")


def thread_block(user: str, note: str, title: str, prev: str | None, nxt: str | None) -> ContextBlock:
    lines = [f"In {wikilink(note, title)}"]
    if prev is not None:
        lines.append(f"Previous: {_turn_link(user, prev)}")
    if nxt is not None:
        lines.append(f"Next: {_turn_link(user, nxt)}")
    return ContextBlock(heading=THREAD_HEADING, text="\n\n".join(lines))


def with_next(block: ContextBlock, user: str, nxt: str) -> ContextBlock:
    """`block` (a turn's `Conversation` block) linking `nxt` as the turn after it."""
    kept = [part for part in block.text.split("\n\n") if not part.startswith("Next: ")]
    return ContextBlock(heading=THREAD_HEADING, text="\n\n".join([*kept, f"Next: {_turn_link(user, nxt)}"]))


@dataclass
class Touched:
    """A conversation that got turns in this import: what its note lists."""

    user: str
    source: str
    ident: str
    title: str
    turns: list[tuple[str, str]] = field(default_factory=list)  # (turn, when it was said)

    @property
    def note(self) -> str:
        return note_rel(self.user, self.source, self.ident)


@dataclass
class Threads:
    """The conversations of one import: each one's last turn so far, and turns to fix up."""

    last: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # key → (turn, its Next)
    touched: dict[str, Touched] = field(default_factory=dict)
    fix_ups: list[tuple[str, str, str]] = field(default_factory=list)  # (user, turn, its next)

    def blocks(
        self, user: str, names: list[str], lines: list[ImportLine], before: Callable[[str], str | None]
    ) -> list[ContextBlock | None]:
        """The `Conversation` block of each of a batch's lines (numbered `names`); `before(key)`
        is the conversation's last turn from an earlier import, if any."""
        keys = [conversation_of(line) for line in lines]
        out: list[ContextBlock | None] = []
        for i, (name, line, conv) in enumerate(zip(names, lines, keys, strict=True)):
            if conv is None:
                out.append(None)
                continue
            key, source, ident = conv
            title = str((line.meta or {}).get("conversation_title") or ident)
            touched = self.touched.setdefault(key, Touched(user, source, ident, title))
            touched.turns.append((name, format_ts(line.timestamp)[:16].replace("T", " ")))
            prev: str | None
            if key in self.last:
                prev, prev_next = self.last[key]
                if prev_next != name:
                    self.fix_ups.append((user, prev, name))
            else:
                prev = before(key)
                if prev is not None:
                    self.fix_ups.append((user, prev, name))
            after = keys[i + 1] if i + 1 < len(keys) else None
            nxt = names[i + 1] if after is not None and after[0] == key else None
            self.last[key] = (name, nxt)
            out.append(thread_block(user, touched.note, title, prev, nxt))
        return out
