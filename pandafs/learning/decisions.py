"""Running the scope policy over documents: every used one (`pandafs promote`), or
what one turn used, at its Save (`on_turn`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from events import Event, TurnView, turn_number
from events.schema import DocumentsUsed, ScopeChanged, TurnCompleted

from .maintenance import append_changes
from .materialise import DocInfo, _Materialising, _Target, _utc
from .policy import DocState, ScopeDecision, decide_steps, promotable
from .reading import _TurnReading
from .state import Cursor, write_state_file
from .trust import Counts, Projection, TurnFacts, trust_of, turn_facts


class _Deciding(_Materialising, _TurnReading):
    """The policy part of `Learning` (a mixin over the reading and materialising parts;
    `dir` and `projection` are `Learning`'s)."""

    dir: Path
    projection: Callable[[], Projection]

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

    def decide_all(self, now: datetime) -> list[ScopeDecision]:
        """What the policy does now to every promotable document that has been used."""
        decisions: list[ScopeDecision] = []
        projection = self.projection()
        for doc_id in sorted(self.counts):
            owner, _, rest = doc_id.partition("/")
            if not rest.startswith("memories/") and not rest.endswith("/research"):
                continue
            info = self.doc_info(doc_id, projection)
            if info is None or not promotable(info.kind, info.owner):
                continue
            record = projection.scope.get(doc_id)
            if record is not None and _utc(record.at) and now < _utc(record.at):  # type: ignore[operator]
                continue  # decided after `now`: nothing to decide in its past
            decisions += decide_steps(self.doc_state(info, self.counts[doc_id], now), self.cfg)
        return decisions

    def record_decisions(self, decisions: Sequence[ScopeDecision], now: datetime) -> list[Event]:
        """Append decisions to their owners' maintenance logs, dated `now` (the next sync
        folds them and writes the documents: events first)."""
        written: list[Event] = []
        by_owner: dict[str, list[ScopeChanged]] = {}
        for d in decisions:
            by_owner.setdefault(d.owner, []).append(_event(d))
        for owner, changes in sorted(by_owner.items()):
            written += append_changes(self.vault, owner, changes, now)
        return written

    def on_turn(self, view: TurnView, pending: Sequence[Any], now: datetime) -> list[ScopeChanged]:
        """Run the policy for what this turn used (its events not yet written); write the
        documents at once and return the scope changes as events of the turn."""
        facts = _pending_facts(view, pending)
        projection = self.projection()
        cursor = self.state.users.get(view.user, Cursor())

        def folded(_user: str, number: int) -> bool:
            return number <= cursor.upto and number not in cursor.pending

        def target(user: str, turn: str) -> TurnFacts | None:
            loaded = self.load_turn(user, turn_number(turn))
            return turn_facts(*loaded) if isinstance(loaded, tuple) else None

        preview = projection.preview(facts, target, folded)
        changes: list[ScopeChanged] = []
        targets: dict[str, _Target] = {}
        for doc_id, counts in preview.items():
            info = self.doc_info(doc_id, projection)
            if info is None:
                continue
            scope = self._scope_target(info, projection.scope.get(doc_id))
            if doc_id in facts.used and promotable(info.kind, info.owner):
                steps = decide_steps(self.doc_state(info, counts, now), self.cfg)
                changes += [_event(step) for step in steps]
                if steps:  # dated like the fold will date it: when the turn happened
                    scope = (steps[-1].new_scope, facts.occurred_at)
            targets[doc_id] = _Target(counts, scope)
        plans, overlay = self._plan(sorted(targets), projection, preview=targets)
        if plans:
            self.state.dirty = sorted(set(self.state.dirty) | set(plans))
            write_state_file(self.dir, self.state, self.vault.root)
        if plans or overlay:
            self._apply(plans, overlay)
        return changes


def _event(d: ScopeDecision) -> ScopeChanged:
    return ScopeChanged(
        doc_id=d.doc_id,
        doc_path=d.doc_path,
        old_scope=d.old_scope,
        new_scope=d.new_scope,
        reason=d.reason,
        trust=d.trust,
        usage_count=d.usage_count,
    )


def _pending_facts(view: TurnView, pending: Sequence[Any]) -> TurnFacts:
    """The facts of a turn whose Save events are about to be written."""
    facts = turn_facts(view)
    used = next((p for p in pending if isinstance(p, DocumentsUsed)), view.used)
    completed = next((p for p in pending if isinstance(p, TurnCompleted)), view.completed)
    technical = any(f.phase != "learning" for f in view.failures)
    return replace(
        facts,
        used=tuple(dict.fromkeys(used.doc_ids)) if used else (),
        outcome=used.outcome if used and not technical else None,
        quality=completed.quality if completed else facts.quality,
    )
