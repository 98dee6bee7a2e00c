"""The cold tier: identity anchors first, then archived summaries and older turns, ranked
by `0.5·recency + 0.3·similarity + 0.2·anchor` and packed into what is left of the budget."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from events.layout import TURN_DIR_RE, turn_name, turn_number

from ..config import TiersConfig
from .anchors import identity_anchors
from .packing import Tier, TierItem, fit_turn, pack_all
from .turn_records import TurnReader, TurnRecord

if TYPE_CHECKING:
    from .api import Memory

__all__ = ["assemble_cold", "sample_numbers"]

LAST_SAMPLED = 5
WEIGHTS = (0.5, 0.3, 0.2)  # recency, similarity, anchor

_WORD = re.compile(r"\w{3,}")
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
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return out


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
    memory: Memory | None,
    search_hits: list[dict[str, Any]] | None = None,
) -> None:
    """Anchors first (always), then the ranked history in what is left of the budget."""
    found = identity_anchors(reader.vault, reader.user, config.identity_keys)
    packed = pack_all([(a.statement, a.statement) for a in found], tier.budget)
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
        overlap = _overlap(asked, record.words)
        similarity = max(hit_scores.get(doc_id, 0.0) / top if top else 0.0, overlap)
        anchored = 1.0 if record.identity or record.turn in anchor_turns else 0.0
        score = WEIGHTS[0] * recency + WEIGHTS[1] * similarity + WEIGHTS[2] * anchored
        scored.append(
            TierItem(
                record,
                "",
                0,
                False,
                score=score,
                recency=recency,
                similarity=similarity,
                anchor=anchored,
                search_score=hit_scores.get(doc_id, 0.0),
            )
        )
    scored.sort(key=lambda i: (-i.score, -i.record.number))
    tier.stats["ranked"] = len(scored)
    room = tier.budget - tier.tokens
    for item in scored:
        fit = fit_turn(item.record, room)
        if fit is None:
            continue
        tier.items.append(replace(item, text=fit[0], tokens=fit[1], truncated=fit[2]))
        room -= fit[1]
