"""Scope promotion and demotion rules (`[memory]` thresholds; docs/memory.md).

    new  → user     trust ≥ user_trust (0.5),   usage ≥ user_usage (3),   age ≥ user_age_hours (1)
    user → global   trust ≥ global_trust (0.8), usage ≥ global_usage (10), age ≥ global_age_hours (24)
    global → user   trust < global_trust            (demotion needs `demotion_min_verdicts`
    user → new      trust < user_trust               (3) verdicts: one bad turn is not enough)

One run may take two steps, each its own event.  Only what PandaFS inferred (memories,
research) moves between `new` and `user`; only documents about the world (research) go on
to `global` (sharing a memory is `pandafs save --scope global`).  What a user stated stays
`user`; documents without an owner are global already.  `ScopePolicy` runs the rules over
every used document (`pandafs promote`), or over what one turn used, at its Save."""

import os
from collections.abc import Sequence
from datetime import datetime
from itertools import groupby
from typing import Any, NamedTuple

from events.layout import SHAREABLE_KINDS
from events.projection import TurnView
from events.schema import ScopeChanged

from ..config import MemoryConfig
from ..memory.turn_records import parse_time
from ..vault import Vault
from .maintenance import append_changes
from .materialise import DocInfo, Materialiser, _Target
from .reading import TurnReader
from .state import Cursor, LearningCache
from .trust import Counts, trust_of, turn_facts

__all__ = ["DocState", "ScopePolicy", "decide", "decide_steps", "scope_change"]

PROMOTABLE_KINDS = frozenset({"memory", "research"})


class DocState(NamedTuple):
    doc_id: str
    doc_path: str
    kind: str
    owner: str | None
    scope: str
    trust: float
    usage: int
    validations: int
    age_hours: float


def decide(doc: DocState, cfg: MemoryConfig) -> ScopeChanged | None:
    """The one scope change `doc` qualifies for now, or None."""
    if doc.owner is None or doc.kind not in PROMOTABLE_KINDS:
        return None
    t, u, age = doc.trust, doc.usage, doc.age_hours
    up = {  # the next scope, and the trust, usage and age in hours it takes
        "new": ("user", cfg.user_trust, cfg.user_usage, cfg.user_age_hours),
        "user": ("global", cfg.global_trust, cfg.global_usage, cfg.global_age_hours),
    }
    down = {"user": ("new", cfg.user_trust), "global": ("user", cfg.global_trust)}  # below that trust
    if doc.scope == "new" or (doc.scope == "user" and doc.kind in SHAREABLE_KINDS):
        new, trust, usage, hours = up[doc.scope]
        if t >= trust and u >= usage and age >= hours:
            why = f"trust {t:.2f} ≥ {trust:g}, used {u} ≥ {usage} times, age {age:.1f} h ≥ {hours:g} h"
            return scope_change(doc, new, f"promoted: {why}")
    if doc.scope in down and doc.validations >= cfg.demotion_min_verdicts:
        new, trust = down[doc.scope]
        if t < trust:
            return scope_change(
                doc, new, f"demoted: trust {t:.2f} < {trust:g} after {doc.validations} verdicts"
            )
    return None


def scope_change(doc: DocState, new: str, reason: str) -> ScopeChanged:
    """The event of `doc` going from its scope to `new` (its owner's log records it)."""
    return ScopeChanged(
        doc_id=doc.doc_id,
        doc_path=doc.doc_path,
        old_scope=doc.scope,
        new_scope=new,
        reason=reason,
        trust=doc.trust,
        usage_count=doc.usage,
    )


def decide_steps(doc: DocState, cfg: MemoryConfig) -> list[ScopeChanged]:
    """Every step `doc` takes now (at most two: new → user → global, global → user → new)."""
    steps: list[ScopeChanged] = []
    while len(steps) < 2:
        step = decide(doc, cfg)
        if step is None:
            break
        steps.append(step)
        doc = doc._replace(scope=step.new_scope)
    return steps


class ScopePolicy:
    """Runs the scope policy over one vault's documents, on the fold's cache: reads turns
    with `reader`, sees and writes documents with `documents`."""

    def __init__(
        self, vault: Vault, cache: LearningCache, reader: TurnReader, documents: Materialiser
    ) -> None:
        self.vault = vault
        self.cfg = vault.config.memory
        self.cache = cache
        self.reader = reader
        self.documents = documents

    def doc_state(self, info: DocInfo, counts: Counts, now: datetime) -> DocState:
        return DocState(
            doc_id=info.doc_id,
            doc_path=info.rel,
            kind=info.kind,
            owner=info.owner,
            scope=info.scope,
            trust=trust_of(counts, info.quality, self.cfg.trust_prior_weight),
            usage=counts.usage,
            validations=counts.validations,
            age_hours=max(0.0, (now - info.created_at).total_seconds() / 3600.0),
        )

    def decide_all(self, now: datetime) -> list[ScopeChanged]:
        """What the policy does now to every promotable document that has been used."""
        decisions: list[ScopeChanged] = []
        projection = self.cache.projection()
        for doc_id in sorted(self.cache.state.counts):
            rest = doc_id.partition("/")[2]
            if not rest.startswith("memories/") and not rest.endswith("/research"):
                continue
            info = self.documents.doc_info(doc_id, projection)
            if info is None:
                continue
            record = projection.scope.get(doc_id)
            if record is not None and (at := parse_time(record.at)) is not None and now < at:
                continue  # decided after `now`: nothing to decide in its past
            decisions += decide_steps(self.doc_state(info, self.cache.state.counts[doc_id], now), self.cfg)
        return decisions

    def record_decisions(self, decisions: Sequence[ScopeChanged], now: datetime) -> None:
        """Append decisions to their owners' maintenance logs, dated `now` (the next sync
        folds them and writes the documents: events first)."""
        for owner, owned in groupby(sorted(decisions, key=_owner), key=_owner):
            append_changes(self.vault, owner, list(owned), now)

    def on_turn(self, view: TurnView, pending: Sequence[Any], now: datetime) -> list[ScopeChanged]:
        """Run the policy for what this turn used (its events not yet written); write the
        documents at once and return the scope changes as events of the turn."""
        facts = turn_facts(view, pending=pending)
        projection = self.cache.projection()
        cursor = self.cache.state.users.get(view.user, Cursor())

        def folded(_user: str, number: int) -> bool:
            return number <= cursor.upto and number not in cursor.pending

        preview = projection.preview(facts, self.reader.facts, folded)
        changes: list[ScopeChanged] = []
        targets: dict[str, _Target] = {}
        infos: dict[str, DocInfo] = {}
        for doc_id, counts in preview.items():
            info = self.documents.doc_info(doc_id, projection)
            if info is None:
                continue
            infos[doc_id] = info
            scope = self.documents.scope_target(info, projection.scope.get(doc_id))
            if doc_id in facts.used:
                steps = decide_steps(self.doc_state(info, counts, now), self.cfg)
                changes += steps
                if steps:  # dated like the fold will date it: when the turn happened
                    scope = (steps[-1].new_scope, facts.occurred_at)
            targets[doc_id] = _Target(counts, scope)
        plans, overlay = self.documents.plan(sorted(targets), projection, preview=targets, infos=infos)
        if plans:
            self.cache.state.dirty.hold({*self.cache.state.dirty, *plans})
            self.cache.save()
        if plans or overlay:
            self.documents.apply(plans, overlay)
        folder = os.fspath(self.vault.layout.turn_dir(view.user, view.turn))
        self.cache.queued = (folder, {d: t for d, (_, t) in overlay.items() if t is not None})
        return changes


def _owner(change: ScopeChanged) -> str:
    """Whose maintenance log records a change: the owner named by the document's id."""
    return change.doc_id.partition("/")[0]
