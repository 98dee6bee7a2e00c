"""Tiered context (seed 002, DESIGN §6): what of a user's history a turn gets to see.

`assemble_tiers` reads the user's past turns — `context.md` of live turns,
`archive/stubs/{user}/{turn}.md` of archived ones, never the Parquet originals
(reading a stub counts no expansion) — and returns three tiers, each within its
`[tiers]` token budget, counted with `count_tokens`:

- **hot** — the last `hot_turns` (3–5) live turns, always.  Newest first, a turn
  goes in whole (`User: …` / `Assistant: …`) if it fits, else as its query only,
  marked `truncated`.  Every hot turn keeps a reserve of `min(its query,
  hot_tokens // hot_turns)` tokens, so an early long turn cannot crowd a later
  one out: an over-long query is cut to what is left (also `truncated`).
- **warm** — the next `warm_turns` live turns, packed greedily newest first into
  `warm_tokens`: whole, else query only (`truncated`), else skipped.
- **cold** — first the user's *identity anchors* (below), which always go in;
  then archived summaries and older turns ranked by
  `0.5·recency + 0.3·similarity + 0.2·anchor` and packed greedily into what is
  left of `cold_tokens` (whole, else query only, else skipped).
  recency = `e^(−λ·days)` (`recency_lambda`); similarity = the larger of the
  unified search score divided by the best hit's score (when the search found the
  turn) and the share of query terms found in the turn's text; anchor = 1 when
  the turn is an identity anchor (the source turn of an identity fact, or marked
  `identity: true` in its import `meta` or its stub), else 0.
  Candidates are the unified search's `cold_candidates` best turns and stubs, the
  source turns of identity facts, and a *sample* of the history older than the
  hot/warm window: the first turn, every Nth and the last 5.  N is
  `sample_every`, grown so at most `max_sampled` turns are read — the cost is
  bounded however long the history.  Turns are found by number, never by listing
  the folder, so 100 or 100,000 turns cost the same.

**Identity anchors** are lines of `facts.md` (one statement per line, see
`memory.store`).  A line is an identity anchor when

1. it carries the tag `#identity` (any line, keyed or not), or
2. its key — the bold `**key:**`, or a leading `Key:` in the statement (how the
   pipeline writes "my name is Alex": `Name: Alex`) — lower-cased with spaces and
   hyphens as `_`, is one of `[tiers] identity_keys` (name, job, work, location, …), or
3. unkeyed, it starts with `Works ` or `Lives ` (how the pipeline writes "I work
   at …" / "I live in …"),

and never when it carries `#not-identity`.  When a key is stated twice the last
line wins (the file says what is true now).  Anchors are packed first into the
cold budget with the hot tier's reserve rule, so they survive whenever the budget
can hold a token of each (`cold_tokens ≥` the number of anchors).

Failures degrade: an exception while assembling a tier leaves that tier empty
with `error` set (the gatherer records it as a `tier_failed` event) and the
other tiers stand; a cold tier that fails after its anchors were read keeps them.
A single unreadable turn (corrupt metadata, broken stub) is skipped, not a failure.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from events import NotInVault, parse_document, read_vault_file, turn_name, turn_number, validate_user_id
from events.clock import utcnow
from events.layout import TURN_DIR_RE

from ..config import TiersConfig
from ..tokens import count_tokens, truncate_tokens
from ..vault import Vault
from .store import Entry, parse_entries

if TYPE_CHECKING:
    from .api import Memory

__all__ = [
    "TIER_NAMES",
    "Anchor",
    "Tier",
    "TierItem",
    "Tiers",
    "TurnRecord",
    "assemble_tiers",
    "identity_anchors",
    "identity_key",
    "RecordCache",
    "item_text",
    "live_turn",
    "parse_turn_context",
    "parse_stub",
    "sample_numbers",
]

TIER_NAMES = ("hot", "warm", "cold")
PROBE_LIMIT = 200  # missing numbers (archived, deleted) skipped while walking back
LAST_SAMPLED = 5
WEIGHTS = (0.5, 0.3, 0.2)  # recency, similarity, anchor

_TAG = re.compile(r"(?<!\S)#identity\b", re.I)
_NOT_TAG = re.compile(r"(?<!\S)#not-identity\b", re.I)
_LEADING_KEY = re.compile(r"^([A-Za-z][\w \-]{0,30}?):\s+(\S.*)$")
_LEADS = {"works": "work", "lives": "location"}
_SOURCE_TURN = re.compile(r"turns/(turn_\d{6,})/")
_WORD = re.compile(r"\w{3,}")
_STOP = frozenset(
    "the and for are was were with that this what which who whom how did does you your "
    "about from have has had our ours they them their there then than into onto can could "
    "would should will shall any all not but just also very more most some such been being "
    "its mine".split()
)


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnRecord:
    """What the tiers know of one past turn: a live turn's context.md or an archive stub."""

    user: str
    turn: str
    archived: bool
    created_at: datetime | None
    query: str
    body: str  # the answer (live) or the stub's summary and key claims (archived)
    identity: bool = False

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


def _parse_ts(value: object) -> datetime | None:
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str) and value.strip():
        try:
            when = datetime.fromisoformat(value.strip().strip("'\""))
        except ValueError:
            return None
    else:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


class RecordCache:
    """Past turns already parsed, kept by a long-lived process (a `Pipeline`) across turns.

    The tiers read 60-130 past turns per turn, almost all the same as the turn before.
    An entry is the record parsed from a file that was opened safely (no symlink on the
    way, inside the vault) with that file's inode, size and mtime; it is used again only
    while one `lstat` of the same path still shows that inode, size and mtime — so a hand
    edit, a replay or a swapped folder is read afresh, through the safe reader.  Bounded:
    cleared when it holds `limit` entries.
    """

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


class _Reader:
    """Reads turns of one user by number (live folder first, then its stub)."""

    def __init__(self, vault: Vault, user: str, cache: RecordCache | None = None) -> None:
        self.vault = vault
        self.user = validate_user_id(user)
        self.root = str(vault.root)
        self.turns = f"users/{self.user}/turns"  # vault-relative; str joins: hundreds of reads per turn
        self.stubs = f"archive/stubs/{self.user}"
        self.cache = cache

    def live(self, number: int) -> TurnRecord | None:
        name = turn_name(number)
        rel = f"{self.turns}/{name}/context.md"
        if self.cache is not None:
            return self.cache.read(self.root, rel, lambda text: parse_turn_context(self.user, name, text))
        try:  # never through a symlink: a linked folder could be another user's turn
            raw, _ = read_vault_file(self.root, rel)
            text = raw.decode("utf-8")
        except (OSError, NotInVault, UnicodeDecodeError):
            return None
        return parse_turn_context(self.user, name, text)

    def stub(self, number: int) -> TurnRecord | None:
        name = turn_name(number)
        try:
            raw, _ = read_vault_file(self.root, f"{self.stubs}/{name}.md")
            text = raw.decode("utf-8")
        except (OSError, NotInVault, UnicodeDecodeError):
            return None
        return parse_stub(self.user, name, text)

    def any(self, number: int) -> TurnRecord | None:
        return self.live(number) or self.stub(number)


_FRONT_FIELD = re.compile(r"^(created_at|title|identity):[ \t]*(.*?)\s*$", re.M)
_QUERY_LINE = re.compile(r"^\*\*Query:\*\*\s*(.*)$", re.M)
_SUMMARY_LINE = re.compile(r"^\*\*Summary:\*\*\s*(.*)$", re.M)


def live_turn(vault: Vault, user: str, turn: str, cache: RecordCache | None = None) -> TurnRecord | None:
    """One live turn as the tiers see it (its context.md), None if it is unreadable."""
    return _Reader(vault, user, cache).live(turn_number(turn))


_IDENTITY_META = re.compile(r"^meta:[ \t]*\n(?:[ \t]+.*\n)*?  identity:[ \t]*true[ \t]*$", re.M)
_S0_LABEL = re.compile(r"\n\n\*\*(?:Resolved query|Query type|Refers to|Feedback on [^*\n]*):\*\*")


def parse_turn_context(user: str, turn: str, text: str) -> TurnRecord | None:
    """A live turn read from its context.md by a scan, not YAML (hundreds are read per
    turn): `created_at` and the import `meta`'s `identity: true` from the frontmatter, the
    query from §0 (up to the renderer's first labelled line) and the answer from §5.

    context.md is what people read and edit, so a hand-corrected answer is what the tiers
    see; metadata.json no longer holds the answer (an older one that does is not read).
    """
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
    if end < 0:
        return None
    front_text = text[3 : end + 1]
    front = {k: v.strip("'\"") for k, v in _FRONT_FIELD.findall(front_text)}
    asked = _section_text(text, end, "0")
    label = _S0_LABEL.search(asked)
    query = (asked[: label.start()] if label else asked).strip()
    answer = _section_text(text, end, "5").strip()
    return TurnRecord(
        user=user,
        turn=turn,
        archived=False,
        created_at=_parse_ts(front.get("created_at")),
        query="" if query == "_(empty query)_" else query,
        body="" if answer == "_(no response)_" else answer,
        identity="identity:" in front_text and bool(_IDENTITY_META.search(front_text)),
    )


def _section_text(text: str, start: int, number: str) -> str:
    """The text under `## {number}. …` (heading excluded), "" if the section is absent."""
    at = text.find(f"\n## {number}. ", start)
    if at < 0:
        return ""
    begin = text.find("\n", at + 1)
    if begin < 0:
        return ""
    stop = text.find("\n## ", begin)
    return text[begin : stop if stop >= 0 else len(text)].strip("\n")


def parse_stub(user: str, turn: str, text: str) -> TurnRecord | None:
    """A stub read by a line scan, not YAML (hundreds are read per turn; this is 20× faster).

    Takes `created_at`, `title` and `identity` from the frontmatter and, from the body,
    the `**Query:**` and `**Summary:**` lines and the `## Key claims` list.
    """
    if not text.startswith("---"):
        return None
    end = text.find("\n---", 3)
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
    if claims_at >= 0:
        claims = []
        for line in body[claims_at:].splitlines()[1:]:
            if line.startswith("## "):
                break
            if line.startswith("- "):
                claims.append(line[2:].strip())
        if claims:
            parts.append("Key claims: " + "; ".join(claims))
    return TurnRecord(
        user=user,
        turn=turn,
        archived=True,
        created_at=_parse_ts(front.get("created_at")),
        query=query,
        body="\n".join(parts),
        identity=front.get("identity", "").lower() == "true",
    )


# --- identity anchors -------------------------------------------------------------------


@dataclass(frozen=True)
class Anchor:
    """One identity fact; `text` is what the cold tier holds of it (maybe cut)."""

    key: str  # normalised identity key ('' for a tagged line without one)
    value: str
    statement: str  # the fact as given to the model: "Name: Alex", "Lives in Berlin"
    line: int
    source_turn: str | None
    doc_id: str
    doc_path: str
    text: str = ""
    tokens: int = 0
    truncated: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "line": self.line,
            "source_turn": self.source_turn,
            "doc_id": self.doc_id,
            "tokens": self.tokens,
            "truncated": self.truncated,
        }


def _norm_key(key: str) -> str:
    return re.sub(r"[\s\-]+", "_", key.strip().lower())


def identity_key(entry: Entry, keys: Iterable[str]) -> tuple[str, str, str] | None:
    """(normalised key, value, statement) when a facts.md line is an identity anchor."""
    raw = f"{entry.key or ''} {entry.value}"
    if _NOT_TAG.search(raw):
        return None
    tagged = bool(_TAG.search(raw))
    value = " ".join(_TAG.sub("", entry.value).split())
    wanted = {_norm_key(k) for k in keys}
    if entry.key:
        shown = " ".join(_TAG.sub("", entry.key).split())
        key = _norm_key(shown)
        return (key, value, f"{shown}: {value}") if tagged or key in wanted else None
    match = _LEADING_KEY.match(value)
    if match and (tagged or _norm_key(match.group(1)) in wanted):
        return _norm_key(match.group(1)), match.group(2).strip(), value
    lead = value.split(" ", 1)[0].lower()
    if lead in _LEADS and _LEADS[lead] in wanted:
        return _LEADS[lead], value, value
    return ("", value, value) if tagged else None


def identity_anchors(vault: Vault, user: str, keys: Iterable[str]) -> list[Anchor]:
    """The identity anchors of `user` (facts.md), in file order, the last statement per key."""
    rel = f"users/{validate_user_id(user)}/facts.md"
    try:
        raw, _ = read_vault_file(vault.root, rel)
        text = raw.decode("utf-8")
    except (OSError, NotInVault, UnicodeDecodeError):
        return []
    body = parse_document(text, rel).body
    keys = list(keys)
    found: dict[str, Anchor] = {}
    for entry in parse_entries(body):
        hit = identity_key(entry, keys)
        if hit is None:
            continue
        key, value, statement = hit
        source = _SOURCE_TURN.search(entry.note or "")
        slot = key or " ".join(value.lower().split())
        found.pop(slot, None)  # re-inserted: the latest statement, at its own position
        found[slot] = Anchor(
            key=key,
            value=value,
            statement=statement,
            line=entry.line,
            source_turn=source.group(1) if source else None,
            doc_id=f"{user}/facts",
            doc_path=rel,
        )
    return list(found.values())


# --- tiers --------------------------------------------------------------------------------


@dataclass(frozen=True)
class TierItem:
    """One turn in a tier: the text given to the model and how it was scored."""

    record: TurnRecord
    text: str
    tokens: int
    truncated: bool
    score: float = 0.0
    recency: float = 0.0
    similarity: float = 0.0
    anchor: float = 0.0
    search_score: float = 0.0

    @property
    def doc_id(self) -> str:
        return self.record.doc_id

    def summary(self, tier: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "doc_id": self.record.doc_id,
            "turn": self.record.turn,
            "archived": self.record.archived,
            "tokens": self.tokens,
            "truncated": self.truncated,
        }
        if tier == "cold":
            out.update(
                score=round(self.score, 4),
                recency=round(self.recency, 4),
                similarity=round(self.similarity, 4),
                anchor=self.anchor,
            )
        return out


@dataclass
class Tier:
    name: str
    budget: int
    items: list[TierItem] = field(default_factory=list)
    anchors: list[Anchor] = field(default_factory=list)
    ms: float = 0.0  # wall time to assemble
    cpu_ms: float = 0.0  # this thread's CPU time (wall minus waiting for the machine)
    error: tuple[str, str] | None = None  # (exception type, message) when the tier failed
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items) + sum(a.tokens for a in self.anchors)

    @property
    def doc_ids(self) -> list[str]:
        return [i.doc_id for i in self.items]

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "budget": self.budget,
            "tokens": self.tokens,
            "ms": round(self.ms, 3),
            "items": [i.summary(self.name) for i in self.items],
            **self.stats,
        }
        if self.name == "cold":
            out["anchors"] = [a.summary() for a in self.anchors]
        if self.error is not None:
            out["error"] = {"type": self.error[0], "message": self.error[1]}
        return out


@dataclass
class Tiers:
    hot: Tier
    warm: Tier
    cold: Tier

    def __iter__(self) -> Iterator[Tier]:
        return iter((self.hot, self.warm, self.cold))

    @property
    def failures(self) -> list[Tier]:
        return [t for t in self if t.error is not None]

    def items(self) -> list[tuple[str, TierItem]]:
        return [(t.name, i) for t in self for i in t.items]

    def summary(self) -> dict[str, Any]:
        """JSON for `ContextRetrieved.tiers`: per tier its budget, tokens, ms and items."""
        return {t.name: t.summary() for t in self}


def _fail(tier: Tier, exc: BaseException) -> None:
    message = str(exc).splitlines()[0][:500] if str(exc) else repr(exc)
    tier.error = (type(exc).__name__, message)


def _pack_all(forms: Sequence[tuple[str, str]], budget: int) -> list[tuple[str, int, bool] | None]:
    """Fit every (full, short) pair into `budget`, in order: full, else short, else short cut.

    Each pair keeps a reserve of min(its short form, budget // n) tokens for as long
    as it waits, so each gets at least that — no early long item crowds a later one out.
    """
    if not forms:
        return []
    share = budget // len(forms)
    shorts = [count_tokens(s) for _, s in forms]
    reserves = [min(s, share) for s in shorts]
    pending = sum(reserves)
    room = budget
    out: list[tuple[str, int, bool] | None] = []
    for (full, short), short_tokens, reserve in zip(forms, shorts, reserves, strict=True):
        pending -= reserve
        available = room - pending
        full_tokens = count_tokens(full) if full != short else short_tokens
        if full_tokens <= available:
            picked = (full, full_tokens, False)
        elif short_tokens <= available:
            picked = (short, short_tokens, True)
        elif available > 0:
            cut = truncate_tokens(short, available)
            picked = (cut, count_tokens(cut), True)
        else:
            out.append(None)
            continue
        room -= picked[1]
        out.append(picked if picked[1] else None)
    return out


def _fit(record: TurnRecord, room: int) -> tuple[str, int, bool] | None:
    """Greedy step: the whole turn if it fits in `room`, else its query only, else None."""
    short = record.query_text()
    short_tokens = count_tokens(short)
    if short_tokens > room:
        return None
    full = record.full_text()
    tokens = count_tokens(full) if full != short else short_tokens
    return (full, tokens, False) if tokens <= room else (short, short_tokens, True)


def _walk_back(reader: _Reader, before: int, wanted: int) -> list[TurnRecord]:
    """Up to `wanted` live turns below `before`, newest first (probing numbers, not listing)."""
    found: list[TurnRecord] = []
    number, misses = before - 1, 0
    while number > 0 and len(found) < wanted and misses < PROBE_LIMIT:
        record = reader.live(number)
        if record is None:
            misses += 1
        else:
            found.append(record)
        number -= 1
    return found


def sample_numbers(low: int, high: int, every: int, cap: int) -> list[int]:
    """Turn numbers in [low, high] to read for the cold tier: first, every Nth, last 5.

    N is `every`, grown to ⌈length / cap⌉ so the sample stays near `cap` numbers.
    """
    if high < low:
        return []
    length = high - low + 1
    step = max(1, every, math.ceil(length / max(1, cap)))
    picked = {low, *range(low + step - 1, high + 1, step)}
    picked.update(range(max(low, high - LAST_SAMPLED + 1), high + 1))
    return sorted(picked, reverse=True)


def _terms(text: str) -> set[str]:
    """Query terms: words of 3+ letters, not stop words, a plural `s` dropped."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


def _overlap(asked: set[str], text: str) -> float:
    """Share of the query's terms found in `text` (in singular or plural form)."""
    if not asked:
        return 0.0
    words = set(_WORD.findall(text.lower()))
    return sum(1 for t in asked if t in words or t + "s" in words) / len(asked)


def _assemble_cold(
    tier: Tier,
    reader: _Reader,
    query: str,
    *,
    before: int,
    window_low: int,
    exclude: set[str],
    now: datetime,
    config: TiersConfig,
    memory: Memory | None,
    search_hits: list[dict[str, Any]] | None = None,
) -> None:
    """Anchors first (always), then the ranked history in what is left of the budget."""
    found = identity_anchors(reader.vault, reader.user, config.identity_keys)
    packed = _pack_all([(a.statement, a.statement) for a in found], tier.budget)
    for anchor, fit in zip(found, packed, strict=True):
        if fit is not None:
            tier.anchors.append(replace(anchor, text=fit[0], tokens=fit[1], truncated=fit[2]))
    tier.stats["anchors_dropped"] = len(found) - len(tier.anchors)
    anchor_turns = {a.source_turn for a in found if a.source_turn}

    def eligible(doc_id: str, number: int) -> bool:
        return number < before and doc_id not in exclude

    records: dict[str, TurnRecord] = {}
    hit_scores: dict[str, float] = {}
    if search_hits is not None or (memory is not None and query.strip() and config.cold_candidates > 0):
        if search_hits is not None:
            hits = search_hits[: config.cold_candidates]
        else:
            assert memory is not None
            hits = memory.search(
                query,
                user=reader.user,
                kinds=("turn", "archived_turn"),
                limit=config.cold_candidates,
                now=now,
                exclude_ids=sorted(exclude),
                snippets=False,  # ranked by score; the tier reads the turns' own summaries
            )
        for hit in hits:
            user, _, name = str(hit["doc_id"]).partition("/")
            if user != reader.user or not TURN_DIR_RE.fullmatch(name):
                continue
            number = turn_number(name)
            if not eligible(hit["doc_id"], number):
                continue
            archived = hit.get("kind") == "archived_turn"
            record = reader.stub(number) if archived else reader.live(number)
            if record is not None:
                records[record.doc_id] = record
                hit_scores[record.doc_id] = max(0.0, float(hit.get("score") or 0.0))
        tier.stats["searched"] = len(hit_scores)
    numbers = sample_numbers(1, window_low - 1, config.sample_every, config.max_sampled)
    numbers += [turn_number(t) for t in anchor_turns]
    sampled = 0
    for number in numbers:
        doc_id = f"{reader.user}/{turn_name(number)}"
        if doc_id in records or not eligible(doc_id, number):
            continue
        record = reader.any(number)
        if record is not None:
            records[doc_id] = record
            sampled += 1
    tier.stats["sampled"] = sampled
    top = max(hit_scores.values(), default=0.0)
    asked = _terms(query)
    lam = config.recency_lambda
    scored: list[TierItem] = []
    for doc_id, record in records.items():
        days = (now - record.created_at).total_seconds() / 86400.0 if record.created_at else None
        recency = math.exp(-lam * max(0.0, days)) if days is not None else 0.0
        overlap = _overlap(asked, record.full_text())
        similarity = max(hit_scores.get(doc_id, 0.0) / top if top else 0.0, overlap)
        anchor = 1.0 if record.identity or record.turn in anchor_turns else 0.0
        score = WEIGHTS[0] * recency + WEIGHTS[1] * similarity + WEIGHTS[2] * anchor
        scored.append(
            TierItem(
                record,
                "",
                0,
                False,
                score=score,
                recency=recency,
                similarity=similarity,
                anchor=anchor,
                search_score=hit_scores.get(doc_id, 0.0),
            )
        )
    scored.sort(key=lambda i: (-i.score, -i.record.number))
    tier.stats["ranked"] = len(scored)
    room = tier.budget - tier.tokens
    for item in scored:
        fit = _fit(item.record, room)
        if fit is None:
            continue
        tier.items.append(replace(item, text=fit[0], tokens=fit[1], truncated=fit[2]))
        room -= fit[1]


def assemble_tiers(
    vault: Vault,
    user: str,
    query: str,
    *,
    before: str,
    now: datetime | None = None,
    memory: Memory | None = None,
    config: TiersConfig | None = None,
    exclude: Iterable[str] = (),
    search_hits: list[dict[str, Any]] | None = None,
    cache: RecordCache | None = None,
) -> Tiers:
    """The hot, warm and cold tiers of `user` for a turn `before` (turns numbered below it).

    `search_hits`: turn hits of a search the caller already ran for this query (the
    Context Gatherer's), used for the cold ranking instead of searching again.
    `cache`: past turns parsed by earlier calls of this process (`RecordCache`).

    `query` drives the cold ranking; `memory` (optional) adds the unified search's
    similarity — without it similarity is term overlap alone.  `exclude` keeps doc ids
    out of warm and cold (hot always holds the latest turns).  Reads files, writes none.
    """
    config = config or vault.config.tiers
    now = now or utcnow()
    reader = _Reader(vault, user, cache)
    limit = turn_number(before)
    hot = Tier("hot", config.hot_tokens)
    warm = Tier("warm", config.warm_tokens)
    cold = Tier("cold", config.cold_tokens)
    skip = set(exclude) | {f"{user}/{before}"}
    window_low = limit

    started, cpu = time.perf_counter(), time.thread_time()
    try:
        recent = _walk_back(reader, limit, config.hot_turns)
        window_low = recent[-1].number if recent else limit
        packed = _pack_all([(r.full_text(), r.query_text()) for r in recent], hot.budget)
        for record, fit in zip(recent, packed, strict=True):
            if fit is not None:
                hot.items.append(TierItem(record, *fit))
        hot.stats["considered"] = len(recent)
    except Exception as exc:  # a tier that fails leaves the others standing (seed 002)
        _fail(hot, exc)
    hot.ms, hot.cpu_ms = _elapsed(started, cpu)

    started, cpu = time.perf_counter(), time.thread_time()
    try:
        older = _walk_back(reader, window_low, config.warm_turns)
        window_low = older[-1].number if older else window_low
        room, skipped = warm.budget, 0
        for record in older:
            if record.doc_id in skip:
                continue
            fit = _fit(record, room)
            if fit is None:
                skipped += 1
                continue
            warm.items.append(TierItem(record, *fit))
            room -= fit[1]
        warm.stats.update(considered=len(older), skipped=skipped)
    except Exception as exc:
        _fail(warm, exc)
    warm.ms, warm.cpu_ms = _elapsed(started, cpu)

    started, cpu = time.perf_counter(), time.thread_time()
    try:
        _assemble_cold(
            cold,
            reader,
            query,
            before=limit,
            window_low=window_low,
            exclude=skip | set(hot.doc_ids) | set(warm.doc_ids),
            now=now,
            config=config,
            memory=memory,
            search_hits=search_hits,
        )
    except Exception as exc:
        _fail(cold, exc)
        cold.items.clear()  # the anchors, packed first, stay
    cold.ms, cold.cpu_ms = _elapsed(started, cpu)
    return Tiers(hot, warm, cold)


def _elapsed(wall: float, cpu: float) -> tuple[float, float]:
    return (time.perf_counter() - wall) * 1000.0, (time.thread_time() - cpu) * 1000.0


def item_text(vault: Vault, user: str, item: Mapping[str, Any]) -> str | None:
    """Re-read the text a tier gave a turn, from its summary in `ContextRetrieved.tiers`.

    Whole if it was whole, else its query cut to the recorded tokens; never more
    than the recorded tokens, even if the file changed since.  None if it is gone.
    """
    name = str(item.get("turn", ""))
    if not TURN_DIR_RE.fullmatch(name):
        return None
    reader = _Reader(vault, user)
    number = turn_number(name)
    record = reader.stub(number) if item.get("archived") else reader.live(number)
    if record is None:
        return None
    tokens = int(item.get("tokens", 0))
    text = record.query_text() if item.get("truncated") else record.full_text()
    return truncate_tokens(text, tokens)
