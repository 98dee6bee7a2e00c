"""Tiered context (docs/memory.md): what of a user's history a turn sees.  `assemble_tiers`
reads past turns (live context.md, archived stubs; never the Parquet originals) into three
tiers, each within its `[tiers]` token budget:

- **hot**: the last `hot_turns` live turns, newest first, whole if it fits, else the query
  only (`truncated`); each keeps a reserve so an early long turn cannot crowd a later one out.
- **warm**: the next `warm_turns` live turns, packed greedily: whole, else query, else skipped.
- **cold**: the user's identity anchors first, always; then archived summaries and older
  turns ranked by `0.5·recency + 0.3·similarity + 0.2·anchor` (recency `e^(−λ·days)`;
  similarity the larger of the score over the best search hit's and the share of query
  terms in the turn), packed greedily.  Candidates: the search's `cold_candidates`, identity
  facts' source turns, and a sample of older history found by number, never by listing.

**Identity anchors** are the lines of facts.md tagged `#identity`, keyed (bold, or a leading
`Key:`) by one of `[tiers] identity_keys`, or starting `Works ` or `Lives `; never one tagged
`#not-identity`; the last line of a key wins.  A tier that fails is left empty with `error`
set (a `tier_failed` event); the others stand.  An unreadable turn is skipped."""

import math
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from events.clock import utcnow
from events.documents import parse_document
from events.errors import NotInVault
from events.fsio import read_vault_file
from events.layout import TURN_DIR_RE, turn_name, turn_number, validate_user_id

from ..config import TiersConfig
from ..errors import first_line
from ..tokens import count_tokens, truncate_tokens
from ..vault import Vault
from .store import Entry, parse_entries
from .turn_records import WORDS, RecordCache, TurnReader, TurnRecord

__all__ = [
    "TIER_NAMES",
    "Tiers",
    "assemble_tiers",
    "identity_anchors",
    "sample_numbers",
]

PROBE_LIMIT = 200  # missing numbers (archived, deleted) skipped while walking back


_TAG = re.compile(r"(?<!\S)#identity\b", re.I)
_NOT_TAG = re.compile(r"(?<!\S)#not-identity\b", re.I)
_LEADING_KEY = re.compile(r"^([A-Za-z][\w \-]{0,30}?):\s+(\S.*)$")
_LEADS = {"works": "work", "lives": "location"}
_SOURCE_TURN = re.compile(r"turns/(turn_\d{6,})/")


class Anchor(NamedTuple):
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
        return {k: v for k, v in self._asdict().items() if k not in ("statement", "doc_path", "text")}


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
        turn = source.group(1) if source else None
        found[slot] = Anchor(key, value, statement, entry.line, turn, f"{user}/facts", rel)
    return list(found.values())


TIER_NAMES = ("hot", "warm", "cold")


class TierItem(NamedTuple):
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
        r = self.record
        out = {"doc_id": r.doc_id, "turn": r.turn, "archived": r.archived, "tokens": self.tokens}
        out["truncated"] = self.truncated
        if tier == "cold":
            out |= {k: round(getattr(self, k), 4) for k in ("score", "recency", "similarity")}
            out["anchor"] = self.anchor
        return out


@dataclass(eq=False)
class Tier:
    """One tier of the gathered context: its items within its token budget, and how it went."""

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

    def fill(self, items: Iterable[TierItem]) -> int:
        """Add each item greedily in what is left of the budget (`fit_turn`); how many did not fit."""
        room, left = self.budget - self.tokens, 0
        for item in items:
            fit = fit_turn(item.record, room)
            if fit is None:
                left += 1
                continue
            self.items.append(item._replace(text=fit[0], tokens=fit[1], truncated=fit[2]))
            room -= fit[1]
        return left

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


@dataclass(eq=False)
class Tiers:
    """The hot, warm and cold tiers of one gathered context."""

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


@contextmanager
def _assembling(tier: Tier) -> Iterator[None]:
    """Time the block that fills `tier`; an error in it fails the tier alone (its `error`
    is set, a `tier_failed` event): a partial answer beats none."""
    started, cpu = time.perf_counter(), time.thread_time()
    try:
        yield
    except Exception as exc:
        tier.error = (type(exc).__name__, first_line(exc))
    tier.ms = (time.perf_counter() - started) * 1000.0
    tier.cpu_ms = (time.thread_time() - cpu) * 1000.0


def pack_all(forms: Sequence[tuple[str, str]], budget: int) -> list[tuple[str, int, bool] | None]:
    """Fit every (full, short) pair into `budget`, in order: full, else short, else short cut.
    Each pair keeps a reserve of min(its short form, budget // n) tokens while it waits, so
    an early long item cannot crowd a later one out."""
    share = budget // max(1, len(forms))
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


def fit_turn(record: TurnRecord, room: int) -> tuple[str, int, bool] | None:
    """Greedy step: the whole turn if it fits in `room`, else its query only, else None."""
    if record.query_tokens > room:
        return None
    if record.tokens <= room:
        return (record.full_text(), record.tokens, False)
    return (record.query_text(), record.query_tokens, True)


LAST_SAMPLED = 5
WEIGHTS = (0.5, 0.3, 0.2)  # recency, similarity, anchor

_STOP = frozenset(
    "the and for are was were with that this what which who whom how did does you your "
    "about from have has had our ours they them their there then than into onto can could "
    "would should will shall any all not but just also very more most some such been being "
    "its mine".split()
)


def sample_numbers(low: int, high: int, every: int, cap: int) -> list[int]:
    """Turn numbers in [low, high] to read for the cold tier: first, every Nth, last 5;
    N is `every`, grown so the sample stays near `cap` numbers."""
    if high < low:
        return []
    length = high - low + 1
    step = max(1, every, math.ceil(length / max(1, cap)))
    picked = {low, *range(low + step - 1, high + 1, step)}
    picked.update(range(max(low, high - LAST_SAMPLED + 1), high + 1))
    return sorted(picked, reverse=True)


def _terms(text: str) -> set[str]:
    """Query terms: words of 3+ letters, not stop words, a plural `s` dropped."""
    words = [w for w in WORDS.findall(text.lower()) if w not in _STOP]
    return {w[:-1] if len(w) > 4 and w.endswith("s") and not w.endswith("ss") else w for w in words}


def _overlap(asked: set[str], words: frozenset[str]) -> float:
    """Share of the query's terms found in `words` (in singular or plural form)."""
    if not asked:
        return 0.0
    return sum(1 for t in asked if t in words or t + "s" in words) / len(asked)


def assemble_cold(
    tier: Tier,
    reader: TurnReader,
    query: str,
    *,
    before: int,
    window_low: int,
    exclude: set[str],
    now: datetime,
    config: TiersConfig,
    search_hits: list[dict[str, Any]] | None = None,
) -> None:
    """Anchors first (always), then the ranked history in what is left of the budget."""
    found = identity_anchors(reader.vault, reader.user, config.identity_keys)
    packed = pack_all([(a.statement, a.statement) for a in found], tier.budget)
    for anchor, fit in zip(found, packed, strict=True):
        if fit is not None:
            tier.anchors.append(anchor._replace(text=fit[0], tokens=fit[1], truncated=fit[2]))
    tier.stats["anchors_dropped"] = len(found) - len(tier.anchors)
    anchor_turns = {a.source_turn for a in found if a.source_turn}

    def eligible(doc_id: str, number: int) -> bool:
        return number < before and doc_id not in exclude

    records: dict[str, TurnRecord] = {}
    hit_scores: dict[str, float] = {}
    if search_hits is not None:
        for hit in search_hits[: config.cold_candidates]:
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
        record = reader.live(number) or reader.stub(number)
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
        search_score = hit_scores.get(doc_id, 0.0)
        similarity = max(search_score / top if top else 0.0, _overlap(asked, record.words))
        anchored = 1.0 if record.identity or record.turn in anchor_turns else 0.0
        score = WEIGHTS[0] * recency + WEIGHTS[1] * similarity + WEIGHTS[2] * anchored
        scored.append(TierItem(record, "", 0, False, score, recency, similarity, anchored, search_score))
    scored.sort(key=lambda i: (-i.score, -i.record.number))
    tier.stats["ranked"] = len(scored)
    tier.fill(scored)


def _walk_back(reader: TurnReader, before: int, wanted: int) -> list[TurnRecord]:
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


def assemble_tiers(
    vault: Vault,
    user: str,
    query: str,
    *,
    before: str,
    now: datetime | None = None,
    config: TiersConfig | None = None,
    search_hits: list[dict[str, Any]] | None = None,
    cache: RecordCache | None = None,
) -> Tiers:
    """The hot, warm and cold tiers of `user` for a turn `before` (turns numbered below it).

    `search_hits`: the turns a search of the query found (the Context Gatherer's), which add
    their score to the cold ranking (else term overlap alone); `cache`: past turns parsed
    before.  Writes nothing."""
    config = config or vault.config.tiers
    now = now or utcnow()
    reader = TurnReader(vault, user, cache)
    limit = turn_number(before)
    hot = Tier("hot", config.hot_tokens)
    warm = Tier("warm", config.warm_tokens)
    cold = Tier("cold", config.cold_tokens)
    skip = {f"{user}/{before}"}
    window_low = limit

    with _assembling(hot):
        recent = _walk_back(reader, limit, config.hot_turns)
        window_low = recent[-1].number if recent else limit
        packed = pack_all([(r.full_text(), r.query_text()) for r in recent], hot.budget)
        for record, fit in zip(recent, packed, strict=True):
            if fit is not None:
                hot.items.append(TierItem(record, *fit))
        hot.stats["considered"] = len(recent)
    with _assembling(warm):
        older = _walk_back(reader, window_low, config.warm_turns)
        window_low = older[-1].number if older else window_low
        skipped = warm.fill(TierItem(r, "", 0, False) for r in older if r.doc_id not in skip)
        warm.stats.update(considered=len(older), skipped=skipped)
    with _assembling(cold):
        assemble_cold(
            cold,
            reader,
            query,
            before=limit,
            window_low=window_low,
            exclude=skip | set(hot.doc_ids) | set(warm.doc_ids),
            now=now,
            config=config,
            search_hits=search_hits,
        )
    if cold.error is not None:
        cold.items.clear()  # the anchors, packed first, stay
    return Tiers(hot, warm, cold)
