"""One imported turn: rendered in memory (event log, projected files, index document parts),
linked in its conversation, and completed when an import finds it in place and its line grew
(new events, projected and indexed again; nothing rewritten).

A turn whose `meta` names a conversation gets a `Conversation` block in its §2 linking the
conversation's note and the turns before and after it; a `Next:` link to a turn not yet
rendered comes later as a new context event (`Threads.fix_ups`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from events.clock import utcnow
from events.documents import DocumentMetadata, parse_document, render_document, wikilink
from events.errors import FrontmatterError, NotInVault
from events.fsio import atomic_write, read_vault_file
from events.log import append_events, encode_events
from events.projection import TurnView, project_turn
from events.render import context_parts, render_turn
from events.schema import (
    ContextBlock,
    ContextSynthesized,
    Payload,
    ResponseSynthesized,
    TurnCompleted,
    TurnStarted,
    parse_event,
)
from events.stamps import format_ts
from indexers.documents import IndexDoc, Skipped, load_index_doc

from ..links import turn_keys
from ..turns import TurnRef, load_view, project
from ..vault import Vault
from .lines import ImportLine

__all__ = [
    "Completer",
    "Threads",
    "conversation_of",
    "line_digest",
    "size_bound",
    "turn_files",
    "write_notes",
]

# (events.jsonl bytes, {projected file: bytes}, context.md frontmatter, context.md body)
TurnFiles = tuple[bytes, dict[str, bytes], dict[str, Any], str]


SUMMARY_CHARS = 240
OVERHEAD = 8192
"""A turn's context.md besides the line's texts: frontmatter, headings, title, summary, links."""


def size_bound(line: ImportLine) -> int:
    """At least the bytes of the context.md `line` renders to (checked before a number is reserved)."""
    texts = [line.query, line.response, *(c.heading + c.text for c in line.context)]
    return sum(len(t.encode()) for t in texts) + 2 * len(orjson.dumps(line.meta or {})) + OVERHEAD


def held_digest(answer: str, blocks: list[ContextBlock]) -> str:
    """A digest of what an imported turn holds of its line: one that differs has grown."""
    kept = [[b.heading, b.text] for b in blocks if b.heading != THREAD_HEADING]
    return hashlib.sha256(orjson.dumps([answer, kept])).hexdigest()[:16]


def line_digest(line: ImportLine) -> str:
    return held_digest(line.response, context_blocks(line, None))


def context_blocks(line: ImportLine, thread: ContextBlock | None) -> list[ContextBlock]:
    """§2 of an imported turn: what came with the question, then its place in its conversation."""
    blocks = [ContextBlock(heading=c.heading, text=c.text) for c in line.context]
    return blocks + ([thread] if thread is not None else [])


def turn_files(
    user: str, turn: str, line: ImportLine, *, ts: datetime, thread: ContextBlock | None = None
) -> TurnFiles:
    """The files of `turn` holding `line` as events stamped `ts`, projected as a replay would."""
    started = TurnStarted(
        query=line.query,
        source="import",
        occurred_at=line.timestamp,
        external_id=line.external_id,
        meta=line.meta,
    )
    completed = TurnCompleted(
        outcome="IMPORTED",
        summary=" ".join(line.query.split()[:24])[:SUMMARY_CHARS],
        query_type="imported",
        quality=0.5,
    )
    blocks = context_blocks(line, thread)
    payloads: list[Payload] = [started]
    if blocks:
        payloads.append(ContextSynthesized(blocks=blocks))
    payloads += [ResponseSynthesized(answer=line.response), completed]
    log, records = encode_events(user, turn, payloads, ts=ts)
    view = project_turn([parse_event(r) for r in records])
    front, body = context_parts(view)
    return log, render_turn(view, parts=(front, body)), front, body


THREAD_HEADING = "Conversation"


def conversation_of(line: ImportLine) -> tuple[str, str, str] | None:
    """(key, source, conversation id) of the conversation `line` belongs to, if it names one."""
    meta = line.meta or {}
    ident = meta.get("conversation_id")
    if not isinstance(ident, str | int) or ident == "":
        return None
    source = str(meta.get("source") or "import")
    return orjson.dumps([source, str(ident)]).decode(), source, str(ident)


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
        """Where the note of the conversation lives: readable, and distinct for distinct ids."""
        readable = re.sub(r"[^A-Za-z0-9_-]+", "-", self.ident).strip("-")[:60] or "conversation"
        tag = hashlib.sha256(orjson.dumps([self.source, self.ident])).hexdigest()[:8]
        source = re.sub(r"[^a-z0-9_-]+", "-", self.source.lower())
        return f"users/{self.user}/conversations/{source}-{readable}-{tag}.md"


@dataclass
class Threads:
    """The conversations of one import: each one's last turn so far, and turns to fix up."""

    last: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # key → (turn, its Next)
    touched: dict[str, Touched] = field(default_factory=dict)
    fix_ups: list[tuple[str, str, str]] = field(default_factory=list)  # (user, turn, its next)

    def blocks(
        self, user: str, names: list[str], lines: list[ImportLine], before: Callable[[str], str | None]
    ) -> list[ContextBlock | None]:
        """The `Conversation` block of each line; `before(key)`: the conversation's last turn so far."""
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


class Completer:
    """Reads, completes and links live turns already in the vault (an archived one is left)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault

    def _live(self, user: str, turn: str) -> tuple[TurnRef, TurnView, list[ContextBlock]] | None:
        """The turn, its view and its §2 blocks; None when it is not live."""
        ref = TurnRef(user, turn, self.vault.layout.turns_dir(user))
        if not ref.events_path.is_file():
            return None
        view = load_view(ref)
        return ref, view, list(view.context.blocks) if view.context else []

    def _append(self, ref: TurnRef, payloads: list[Payload]) -> IndexDoc | Skipped | None:
        """`payloads` appended to the turn's log, projected; its context.md's index document."""
        append_events(ref.events_path, ref.user, ref.turn, payloads, root=self.vault.root)
        project(ref)
        rel = f"users/{ref.user}/turns/{ref.turn}/context.md"
        return load_index_doc(self.vault.root, rel, max_bytes=self.vault.config.index.max_file_bytes)

    def held(self, user: str, turn: str) -> str | None:
        """The digest of what `turn` holds of its line; None when it is not live."""
        live = self._live(user, turn)
        return None if live is None else held_digest(live[1].answer or "", live[2])

    def complete(self, user: str, turn: str, line: ImportLine) -> tuple[IndexDoc | Skipped, int] | str | None:
        """Add to `turn` what `line` holds beyond it: (its index document, the messages it held
        before, `meta.messages`), or why not, or None if the line holds nothing new."""
        live = self._live(user, turn)
        if live is None:
            return f"its turn {turn} is archived: `pandafs restore {user}/{turn}`, then import again"
        ref, view, old = live
        held = (view.started.meta or {}).get("messages")
        thread = next((b for b in old if b.heading == THREAD_HEADING), None)
        payloads: list[Payload] = []
        blocks = context_blocks(line, thread)
        if blocks != old:
            payloads.append(ContextSynthesized(blocks=blocks))
        if not (view.answer or "").startswith(line.response):
            payloads.append(ResponseSynthesized(answer=line.response))
        if not payloads:
            return None
        doc = self._append(ref, payloads) or Skipped(f"users/{user}/turns/{turn}/context.md", "not readable")
        return doc, held if isinstance(held, int) else 0

    def link_next(self, user: str, turn: str, nxt: str, threads: Threads) -> IndexDoc | Skipped | None:
        """`turn` linking `nxt` as the turn after it (a context event); its index document."""
        live = self._live(user, turn)
        if live is None:
            return None  # archived: its stub keeps what it said
        ref, _, old = live
        thread = next((b for b in old if b.heading == THREAD_HEADING), None)
        if thread is None:  # imported before turns were linked: link it now
            touched = next(
                (t for t in threads.touched.values() if t.user == user and any(n == nxt for n, _ in t.turns)),
                None,
            )
            if touched is None:
                return None
            thread = thread_block(user, touched.note, touched.title, None, None)
        blocks = [b for b in old if b.heading != THREAD_HEADING] + [with_next(thread, user, nxt)]
        if blocks == old:
            return None
        return self._append(ref, [ContextSynthesized(blocks=blocks)])


def write_notes(vault: Vault, touched: Iterable[Touched]) -> list[IndexDoc | Skipped]:
    """Write (or extend) the note of each conversation in `touched`: its turns in order."""
    docs: list[IndexDoc | Skipped] = []
    max_bytes = vault.config.index.max_file_bytes
    for conv in touched:
        rel = conv.note
        try:
            text = read_vault_file(vault.root, rel)[0].decode("utf-8")
            parsed = parse_document(text, rel)
            front, body = dict(parsed.frontmatter), parsed.body
        except (FileNotFoundError, NotInVault, UnicodeDecodeError, FrontmatterError):
            front = DocumentMetadata(
                id=rel.removeprefix("users/").removesuffix(".md"),
                user=conv.user,
                title=conv.title,
                primary_topic="conversation",
                content_types=["note"],
                scope="user",
                quality=0.5,
                created_at=utcnow(),
                tags=["pandafs/conversation"],
            ).to_frontmatter()
            front |= {"source": conv.source, "conversation_id": conv.ident}
            body = f"# {conv.title}\n\nA {conv.source} conversation, imported: its turns in order.\n\n"
        listed = {turn for _, turn in turn_keys(body)}
        # the turn's link and when (none of its words: a search finds the turn, not the list)
        new = [f"- {_turn_link(conv.user, t)} · {when}" for t, when in conv.turns if t not in listed]
        if not new:
            continue
        front["updated_at"] = format_ts(utcnow())
        body = body.rstrip("\n") + "\n" + ("\n" if not listed else "") + "\n".join(new) + "\n"
        atomic_write(vault.root / rel, render_document(front, body), root=vault.root)
        doc = load_index_doc(vault.root, rel, max_bytes=max_bytes)
        if doc is not None:
            docs.append(doc)
    return docs
