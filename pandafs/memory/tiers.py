"""Tiered context (docs/memory.md): what of a user's history a turn gets to see.

`assemble_tiers` reads past turns (live context.md, archived stubs; never the Parquet
originals) into three tiers, each within its `[tiers]` token budget:

- **hot**: the last `hot_turns` live turns, newest first, whole if it fits, else the query
  only (`truncated`); each keeps a reserve so an early long turn cannot crowd a later one out.
- **warm**: the next `warm_turns` live turns, packed greedily: whole, else query, else skipped.
- **cold**: the user's identity anchors first, always; then archived summaries and older
  turns ranked by `0.5·recency + 0.3·similarity + 0.2·anchor`, packed greedily.
  recency = `e^(−λ·days)`; similarity = the larger of the search score over the best
  hit's and the share of query terms in the turn.  Candidates: the search's
  `cold_candidates`, identity facts' source turns, and a sample of older history
  (first, every Nth, last 5, at most `max_sampled`), found by number, never by listing.

**Identity anchors** are lines of `facts.md` tagged `#identity`, or whose key (bold, or a
leading `Key:`) is one of `[tiers] identity_keys`, or that start with `Works ` or `Lives `;
never one tagged `#not-identity`.  The last line of a key wins.

A tier that fails is left empty with `error` set (a `tier_failed` event); the others
stand.  An unreadable turn is skipped."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from events.clock import utcnow
from events.layout import turn_number

from ..config import TiersConfig
from ..vault import Vault
from .cold_tier import assemble_cold
from .packing import Tier, TierItem, Tiers, fail_tier, fit_turn, pack_all
from .turn_records import RecordCache, TurnReader, TurnRecord

if TYPE_CHECKING:
    from .api import Memory

__all__ = ["assemble_tiers"]

PROBE_LIMIT = 200  # missing numbers (archived, deleted) skipped while walking back


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
    memory: Memory | None = None,
    config: TiersConfig | None = None,
    exclude: Iterable[str] = (),
    search_hits: list[dict[str, Any]] | None = None,
    cache: RecordCache | None = None,
) -> Tiers:
    """The hot, warm and cold tiers of `user` for a turn `before` (turns numbered below it).

    `search_hits`: the Context Gatherer's turn hits, used instead of searching again;
    `cache`: past turns parsed before.  `memory` adds search similarity to the cold ranking
    (else term overlap alone); `exclude` keeps doc ids out of warm and cold.  Writes nothing."""
    config = config or vault.config.tiers
    now = now or utcnow()
    reader = TurnReader(vault, user, cache)
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
        packed = pack_all([(r.full_text(), r.query_text()) for r in recent], hot.budget)
        for record, fit in zip(recent, packed, strict=True):
            if fit is not None:
                hot.items.append(TierItem(record, *fit))
        hot.stats["considered"] = len(recent)
    except Exception as exc:  # a tier that fails leaves the others standing: a partial answer beats none
        fail_tier(hot, exc)
    hot.ms, hot.cpu_ms = _elapsed(started, cpu)

    started, cpu = time.perf_counter(), time.thread_time()
    try:
        older = _walk_back(reader, window_low, config.warm_turns)
        window_low = older[-1].number if older else window_low
        room, skipped = warm.budget, 0
        for record in older:
            if record.doc_id in skip:
                continue
            fit = fit_turn(record, room)
            if fit is None:
                skipped += 1
                continue
            warm.items.append(TierItem(record, *fit))
            room -= fit[1]
        warm.stats.update(considered=len(older), skipped=skipped)
    except Exception as exc:
        fail_tier(warm, exc)
    warm.ms, warm.cpu_ms = _elapsed(started, cpu)

    started, cpu = time.perf_counter(), time.thread_time()
    try:
        assemble_cold(
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
        fail_tier(cold, exc)
        cold.items.clear()  # the anchors, packed first, stay
    cold.ms, cold.cpu_ms = _elapsed(started, cpu)
    return Tiers(hot, warm, cold)


def _elapsed(wall: float, cpu: float) -> tuple[float, float]:
    return (time.perf_counter() - wall) * 1000.0, (time.thread_time() - cpu) * 1000.0
