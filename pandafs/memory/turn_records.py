"""Past turns as the tiers read them, by a line scan: a live turn from its context.md, an
archived one from its stub; and the cache that keeps them between turns."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import cached_property, partial

from events.clock import aware
from events.doctypes import SESSION_KEYS
from events.documents import parse_document, split_sections
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.layout import turn_name, turn_number, validate_user_id

from ..tokens import count_tokens
from ..vault import Vault
from .retrieved import jsonable

__all__ = ["WORDS", "RecordCache", "TurnReader", "TurnRecord", "parse_time", "parse_turn_context"]


@dataclass(frozen=True, eq=False)
class TurnRecord:
    """What the tiers know of one past turn: a live turn's context.md or an archive stub."""

    user: str
    turn: str
    archived: bool
    created_at: datetime | None
    query: str
    body: str  # the answer (live) or the stub's summary and key claims (archived)
    identity: bool = False
    session: str | None = None  # a live turn's episode: the first `SESSION_KEYS` value of its `meta`

    @property
    def number(self) -> int:
        return turn_number(self.turn)

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    @property
    def doc_path(self) -> str:
        if self.archived:
            return f"archive/stubs/{self.user}/{self.turn}.md"
        return f"users/{self.user}/turns/{self.turn}/context.md"

    @property
    def kind(self) -> str:
        return "archived_turn" if self.archived else "turn"

    def full_text(self) -> str:
        head = self.query_text()
        if not self.body:
            return head
        return f"{head}\n{self.body}" if self.archived else f"{head}\nAssistant: {self.body}"

    def query_text(self) -> str:
        return f"User: {self.query}"

    @cached_property
    def query_tokens(self) -> int:
        """`count_tokens(query_text())`, counted once: the tiers and §2's budget weigh the same
        records on every turn of a process that keeps them (`RecordCache`)."""
        return count_tokens(self.query_text())

    @cached_property
    def tokens(self) -> int:
        """`count_tokens(full_text())`, counted once."""
        return count_tokens(self.full_text()) if self.body else self.query_tokens

    @cached_property
    def words(self) -> frozenset[str]:
        """The lower-cased words of 3+ letters of `full_text` (the cold tier's overlap), found
        once: a `RecordCache` keeps a record over many turns."""
        return frozenset(WORDS.findall(self.full_text().lower()))


WORDS = re.compile(r"\w{3,}")
"""Words of 3+ letters: what the cold tier compares a query and a turn by."""


def parse_time(value: object) -> datetime | None:
    """A stored time in UTC (naive is UTC, as every time PandaFS writes is): a datetime, a date
    (its midnight), or ISO text, quoted or not; None for anything else."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().strip("'\""))
        except ValueError:
            return None
    if isinstance(value, datetime):
        try:
            return aware(value).astimezone(UTC)
        except OverflowError:  # an offset that moves it past year 9999
            return None
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    return None


class RecordCache:
    """Past turns already parsed, kept by a long-lived process across turns.  An entry is
    used again only while one `lstat` shows the same inode, size and mtime, so an edit, a
    replay or a swapped folder is read afresh through the safe reader.  Cleared at `limit`."""

    def __init__(self, limit: int = 50_000) -> None:
        self.limit = limit
        self.entries: dict[str, tuple[tuple[int, int, int], TurnRecord | None]] = {}

    def read(self, root: str, rel: str, parse: Callable[[str], TurnRecord | None]) -> TurnRecord | None:
        path = f"{root}/{rel}"
        cached = self.entries.get(path)
        if cached is not None:
            try:
                st = os.lstat(path)
            except OSError:
                st = None
            if st is not None and (st.st_ino, st.st_size, st.st_mtime_ns) == cached[0]:
                return cached[1]
        try:  # never through a symlink: a linked folder could be another user's turn
            raw, st = read_vault_file(root, rel)
            record = parse(raw.decode("utf-8"))
        except (OSError, NotInVault, UnicodeDecodeError):
            self.entries.pop(path, None)
            return None
        if len(self.entries) >= self.limit:
            self.entries.clear()
        self.entries[path] = ((st.st_ino, st.st_size, st.st_mtime_ns), record)
        return record


class TurnReader:
    """Reads turns of one user by number (live folder first, then its stub), through `cache`
    (a process's, kept across turns; else one of its own)."""

    def __init__(self, vault: Vault, user: str, cache: RecordCache | None = None) -> None:
        self.vault = vault
        self.user = validate_user_id(user)
        self.root = str(vault.root)
        self.turns = f"users/{self.user}/turns"  # vault-relative; str joins: hundreds of reads per turn
        self.stubs = f"archive/stubs/{self.user}"
        self.cache = RecordCache() if cache is None else cache

    def live(self, number: int) -> TurnRecord | None:
        name = turn_name(number)
        return self.cache.read(
            self.root, f"{self.turns}/{name}/context.md", partial(parse_turn_context, self.user, name)
        )

    def stub(self, number: int) -> TurnRecord | None:
        name = turn_name(number)
        return self.cache.read(self.root, f"{self.stubs}/{name}.md", partial(parse_stub, self.user, name))


_FRONT_FIELD = re.compile(r"^(created_at|title|identity):[ \t]*(.*?)\s*$", re.M)
_QUERY_LINE = re.compile(r"^\*\*Query:\*\*\s*(.*)$", re.M)
_SUMMARY_LINE = re.compile(r"^\*\*Summary:\*\*\s*(.*)$", re.M)


_IDENTITY_META = re.compile(r"^meta:[ \t]*\n(?:[ \t]+.*\n)*?  identity:[ \t]*true[ \t]*$", re.M)
_S0_LABEL = re.compile(r"\n\n\*\*(?:Resolved query|Query type|Refers to|Feedback on [^*\n]*):\*\*")


def _front_end(text: str) -> int:
    """Where the frontmatter's closing `---` line starts (-1: the text has none)."""
    return text.find("\n---", 3) if text.startswith("---") else -1


def parse_turn_context(user: str, turn: str, text: str) -> TurnRecord | None:
    """A live turn read from its context.md by a scan, not YAML: `created_at` and `identity`
    from the frontmatter, the query from §0 and the answer from §5 (a hand-corrected answer
    is what the tiers see)."""
    end = _front_end(text)
    if end < 0:
        return None
    front_text = text[3 : end + 1]
    front = {k: v.strip("'\"") for k, v in _FRONT_FIELD.findall(front_text)}
    sections = split_sections(text, start=end + 4, numbers=(0, 5))
    asked = sections.get(0, "")
    label = _S0_LABEL.search(asked)
    query = (asked[: label.start()] if label else asked).strip()
    answer = sections.get(5, "").strip()
    return TurnRecord(
        user=user,
        turn=turn,
        archived=False,
        created_at=parse_time(front.get("created_at")),
        query="" if query == "_(empty query)_" else query,
        body="" if answer == "_(no response)_" else answer,
        identity="identity:" in front_text and bool(_IDENTITY_META.search(front_text)),
        session=_session(text) if "session" in front_text or "conversation" in front_text else None,
    )


def _session(text: str) -> str | None:
    """The first of `SESSION_KEYS` set in the frontmatter's `meta`, as YAML reads it (only
    files that name one pay for the parse)."""
    try:
        meta = jsonable(parse_document(text).frontmatter.get("meta"))
    except FrontmatterError:
        return None
    if not isinstance(meta, dict):
        return None
    return next((str(meta[k]) for k in SESSION_KEYS if meta.get(k) not in (None, "")), None)


def parse_stub(user: str, turn: str, text: str) -> TurnRecord | None:
    """A stub read by a line scan, not YAML: `created_at`, `title`, `identity`, and the
    `**Query:**`, `**Summary:**` and `## Key claims` of the body."""
    end = _front_end(text)
    if end < 0:
        return None
    front = {k: v.strip("'\"") for k, v in _FRONT_FIELD.findall(text[3:end])}
    body = text[end + 4 :]
    query_match = _QUERY_LINE.search(body)
    query = query_match.group(1).strip() if query_match else ""
    if not query or query == "_(unknown)_":
        query = front.get("title", "")
    parts: list[str] = []
    summary = _SUMMARY_LINE.search(body)
    if summary and summary.group(1).strip():
        parts.append(f"Summary: {summary.group(1).strip()}")
    claims_at = body.find("## Key claims")
    section = body[claims_at:].partition("\n## ")[0] if claims_at >= 0 else ""
    claims = [line[2:].strip() for line in section.splitlines() if line.startswith("- ")]
    if claims:
        parts.append("Key claims: " + "; ".join(claims))
    return TurnRecord(
        user=user,
        turn=turn,
        archived=True,
        created_at=parse_time(front.get("created_at")),
        query=query,
        body="\n".join(parts),
        identity=front.get("identity", "").lower() == "true",
    )
