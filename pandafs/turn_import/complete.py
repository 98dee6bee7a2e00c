"""Turns an import finds in place already: completed when their line grew (new events,
projected and indexed again; nothing rewritten), linked to the turn after them, and the
notes of the conversations that got turns."""

from __future__ import annotations

from collections.abc import Iterable

from events.clock import utcnow
from events.documents import DocumentMetadata, parse_document, render_document, wikilink
from events.errors import FrontmatterError, NotInVault
from events.fsio import atomic_write, read_vault_file
from events.log import append_events
from events.schema import ContextSynthesized, Payload, ResponseSynthesized
from events.stamps import format_ts
from indexers.documents import IndexDoc, Skipped, load_index_doc

from ..links import turn_keys
from ..turns import TurnRef, load_view, project
from ..vault import Vault
from .lines import ImportLine
from .render import context_blocks, held_digest
from .threads import THREAD_HEADING, Threads, Touched, thread_block, with_next

__all__ = ["Completer", "write_notes"]


class Completer:
    """Reads, completes and links turns already in the vault (live ones; an archived turn
    is left as its stub holds it)."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault

    def _ref(self, user: str, turn: str) -> TurnRef | None:
        ref = TurnRef(user, turn, self.vault.layout.turns_dir(user))
        return ref if ref.events_path.is_file() else None

    def _doc(self, ref: TurnRef) -> IndexDoc | Skipped | None:
        rel = f"users/{ref.user}/turns/{ref.turn}/context.md"
        return load_index_doc(self.vault.root, rel, max_bytes=self.vault.config.index.max_file_bytes)

    def held(self, user: str, turn: str) -> str | None:
        """The digest of what `turn` holds of its line; None when it is not live."""
        ref = self._ref(user, turn)
        if ref is None:
            return None
        view = load_view(ref)
        return held_digest(view.answer or "", list(view.context.blocks) if view.context else [])

    def complete(self, user: str, turn: str, line: ImportLine) -> tuple[IndexDoc | Skipped, int] | str | None:
        """Add to `turn` what `line` holds beyond it: its index document and the messages it
        held before (its line's `meta.messages`, 0 if not said), why not, or None when the
        line holds nothing the turn lacks (an older export: its answer a prefix of the turn's)."""
        ref = self._ref(user, turn)
        if ref is None:
            return f"its turn {turn} is archived: `pandafs restore {user}/{turn}`, then import again"
        view = load_view(ref)
        held = (view.started.meta or {}).get("messages")
        old = list(view.context.blocks) if view.context else []
        thread = next((b for b in old if b.heading == THREAD_HEADING), None)
        payloads: list[Payload] = []
        blocks = context_blocks(line, thread)
        if blocks != old:
            payloads.append(ContextSynthesized(blocks=blocks))
        if not (view.answer or "").startswith(line.response):
            payloads.append(ResponseSynthesized(answer=line.response))
        if not payloads:
            return None
        append_events(ref.events_path, user, turn, payloads, root=self.vault.root)
        project(ref)
        doc = self._doc(ref) or Skipped(f"users/{user}/turns/{turn}/context.md", "not readable")
        return doc, held if isinstance(held, int) else 0

    def link_next(self, user: str, turn: str, nxt: str, threads: Threads) -> IndexDoc | Skipped | None:
        """`turn` linking `nxt` as the turn after it (a context event); its index document."""
        ref = self._ref(user, turn)
        if ref is None:
            return None  # archived: its stub keeps what it said
        view = load_view(ref)
        old = list(view.context.blocks) if view.context else []
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
        append_events(ref.events_path, user, turn, [ContextSynthesized(blocks=blocks)], root=self.vault.root)
        project(ref)
        return self._doc(ref)


def _item(user: str, turn: str, when: str) -> str:
    """A list item of a note: the turn's link and when it was said (no words of it, so a
    search finds the turn, not the list)."""
    link = wikilink(f"users/{user}/turns/{turn}/context.md", f"turn {int(turn.removeprefix('turn_'))}")
    return f"- {link} · {when}"


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
        new = [_item(conv.user, turn, when) for turn, when in conv.turns if turn not in listed]
        if not new:
            continue
        front["updated_at"] = format_ts(utcnow())
        body = body.rstrip("\n") + "\n" + ("\n" if not listed else "") + "\n".join(new) + "\n"
        atomic_write(vault.root / rel, render_document(front, body), root=vault.root)
        doc = load_index_doc(vault.root, rel, max_bytes=max_bytes)
        if doc is not None:
            docs.append(doc)
    return docs
