"""Scope promotion and demotion rules (`[memory]` thresholds; docs/memory.md).

    new  → user     trust ≥ user_trust (0.5),   usage ≥ user_usage (3),   age ≥ user_age_hours (1)
    user → global   trust ≥ global_trust (0.8), usage ≥ global_usage (10), age ≥ global_age_hours (24)
    global → user   trust < global_trust            (demotion needs `demotion_min_verdicts`
    user → new      trust < user_trust               (3) verdicts: one bad turn is not enough)

One run may take a document two steps, each its own event.  Only what PandaFS inferred
(`PROMOTABLE_KINDS`: memories, research) moves between `new` and `user`; only documents
about the world (`SHAREABLE_KINDS`: research) go on to `global`.  A memory is never shared
automatically (that is `pandafs save --scope global`).  What a user stated stays `user`;
documents without an owner are global already."""

from __future__ import annotations

from dataclasses import dataclass

from events.layout import SHAREABLE_KINDS

from ..config import MemoryConfig

__all__ = ["DocState", "ScopeDecision", "decide", "decide_steps", "promotable"]

PROMOTABLE_KINDS = frozenset({"memory", "research"})


@dataclass(frozen=True)
class DocState:
    doc_id: str
    doc_path: str
    kind: str
    owner: str | None
    scope: str
    trust: float
    usage: int
    validations: int
    age_hours: float


@dataclass(frozen=True)
class ScopeDecision:
    doc_id: str
    doc_path: str
    owner: str
    old_scope: str
    new_scope: str
    reason: str
    trust: float
    usage_count: int

    def as_json(self) -> dict[str, object]:
        return {
            "doc_id": self.doc_id,
            "doc_path": self.doc_path,
            "old_scope": self.old_scope,
            "new_scope": self.new_scope,
            "reason": self.reason,
            "trust": self.trust,
            "usage_count": self.usage_count,
        }


def promotable(kind: str, owner: str | None) -> bool:
    return owner is not None and kind in PROMOTABLE_KINDS


def _hours(value: float) -> str:
    return f"{value:.1f} h"


def decide(doc: DocState, cfg: MemoryConfig) -> ScopeDecision | None:
    """The one scope change `doc` qualifies for now, or None."""
    if not promotable(doc.kind, doc.owner) or doc.scope not in ("new", "user", "global"):
        return None
    t, u, age = doc.trust, doc.usage, doc.age_hours
    new_scope, reason = None, ""
    if doc.scope == "new":
        if t >= cfg.user_trust and u >= cfg.user_usage and age >= cfg.user_age_hours:
            new_scope = "user"
            reason = (
                f"promoted: trust {t:.2f} ≥ {cfg.user_trust:g}, used {u} ≥ {cfg.user_usage} times, "
                f"age {_hours(age)} ≥ {cfg.user_age_hours:g} h"
            )
    elif doc.scope == "user":
        shareable = doc.kind in SHAREABLE_KINDS
        if shareable and t >= cfg.global_trust and u >= cfg.global_usage and age >= cfg.global_age_hours:
            new_scope = "global"
            reason = (
                f"promoted: trust {t:.2f} ≥ {cfg.global_trust:g}, used {u} ≥ {cfg.global_usage} "
                f"times, age {_hours(age)} ≥ {cfg.global_age_hours:g} h"
            )
        elif doc.validations >= cfg.demotion_min_verdicts and t < cfg.user_trust:
            new_scope = "new"
            reason = f"demoted: trust {t:.2f} < {cfg.user_trust:g} after {doc.validations} verdicts"
    elif doc.validations >= cfg.demotion_min_verdicts and t < cfg.global_trust:
        new_scope = "user"
        reason = f"demoted: trust {t:.2f} < {cfg.global_trust:g} after {doc.validations} verdicts"
    if new_scope is None:
        return None
    assert doc.owner is not None
    return ScopeDecision(doc.doc_id, doc.doc_path, doc.owner, doc.scope, new_scope, reason, t, u)


def decide_steps(doc: DocState, cfg: MemoryConfig) -> list[ScopeDecision]:
    """Every step `doc` takes now (at most two: new → user → global, global → user → new)."""
    steps: list[ScopeDecision] = []
    while len(steps) < 2:
        step = decide(doc, cfg)
        if step is None:
            break
        steps.append(step)
        doc = DocState(**{**doc.__dict__, "scope": step.new_scope})
    return steps
