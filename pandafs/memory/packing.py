"""What a tier holds and how it is filled: the tier types and the greedy packing of turns
(whole, else their query, else nothing) into a token budget."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..tokens import count_tokens, truncate_tokens
from .anchors import Anchor
from .turn_records import TurnRecord

__all__ = ["TIER_NAMES", "Tier", "TierItem", "Tiers", "fail_tier", "fit_turn", "pack_all"]

TIER_NAMES = ("hot", "warm", "cold")


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


def fail_tier(tier: Tier, exc: BaseException) -> None:
    message = str(exc).splitlines()[0][:500] if str(exc) else repr(exc)
    tier.error = (type(exc).__name__, message)


def pack_all(forms: Sequence[tuple[str, str]], budget: int) -> list[tuple[str, int, bool] | None]:
    """Fit every (full, short) pair into `budget`, in order: full, else short, else short cut.
    Each pair keeps a reserve of min(its short form, budget // n) tokens while it waits, so
    an early long item cannot crowd a later one out."""
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


def fit_turn(record: TurnRecord, room: int) -> tuple[str, int, bool] | None:
    """Greedy step: the whole turn if it fits in `room`, else its query only, else None."""
    short = record.query_text()
    short_tokens = count_tokens(short)
    if short_tokens > room:
        return None
    full = record.full_text()
    tokens = count_tokens(full) if full != short else short_tokens
    return (full, tokens, False) if tokens <= room else (short, short_tokens, True)
