"""Tiered context (docs/memory.md): what of a user's history a turn gets to see.

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
A single unreadable turn (corrupt context.md, broken stub) is skipped, not a failure.

This module assembles the three tiers; the parts live beside it: `turn_records`
(reading past turns), `anchors` (identity anchors), `packing` (tier types, greedy
packing) and `cold_tier` (the cold ranking).
"""

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

    `search_hits`: turn hits of a search the caller already ran for this query (the
    Context Gatherer's), used for the cold ranking instead of searching again.
    `cache`: past turns parsed by earlier calls of this process (`RecordCache`).

    `query` drives the cold ranking; `memory` (optional) adds the unified search's
    similarity — without it similarity is term overlap alone.  `exclude` keeps doc ids
    out of warm and cold (hot always holds the latest turns).  Reads files, writes none.
    """
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
