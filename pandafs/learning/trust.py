"""Usage and trust of documents: a pure fold over turn events (docs/memory.md).

    usage_count         turns whose §2 cited the document (`documents_used`)
    validation_count    those uses whose turn has a verdict (for a turn itself, also the
                        user's direct feedback on it)
    validation_success  the verdicts that were successes

A turn's verdict is the user's latest implicit feedback about it ("thanks" → success,
"that's wrong" → failure), else its outcome: APPROVE → success, RETRY / FAIL → failure,
REVISE or a technical failure → none.  Trust is the posterior mean of the success rate
under a Beta prior centred on the document's `quality`, worth `w` validations (`[memory]
trust_prior_weight`): `(validation_success + w · quality) / (validation_count + w)`, to 4
decimals.  The counters do not depend on the events' order (a late feedback applies as a
delta against the verdict it replaces), so the incremental fold and a full recompute
agree exactly.  Scope changes fold into the latest per document by decision time."""

from collections import ChainMap
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from events.layout import turn_number
from events.stamps import format_ts

if TYPE_CHECKING:
    from events.projection import TurnView
    from events.schema import Event

__all__ = [
    "SCOPE_RANK",
    "Counts",
    "Projection",
    "ScopeRecord",
    "TurnFacts",
    "trust_of",
    "turn_facts",
    "verdict",
]

SCOPE_RANK = {"new": 0, "user": 1, "global": 2}
SUCCESS, FAILURE = "success", "failure"


_BY_FEEDBACK = {"accepted": SUCCESS, "rejected": FAILURE}
_BY_OUTCOME = {"APPROVE": SUCCESS, "RETRY": FAILURE, "FAIL": FAILURE}


def verdict(outcome: str | None, feedback: str | None = None) -> str | None:
    """success / failure / None for a turn's validation outcome and the user's feedback (first)."""
    return _BY_FEEDBACK.get(feedback or "") or _BY_OUTCOME.get(outcome or "")


class Counts(NamedTuple):
    usage: int = 0
    validations: int = 0
    successes: int = 0

    def plus(self, usage: int = 0, validations: int = 0, successes: int = 0) -> "Counts":
        return Counts(self.usage + usage, self.validations + validations, self.successes + successes)


def trust_of(counts: Counts, quality: float, prior_weight: float) -> float:
    """(successes + w·quality) / (validations + w), clamped to [0, 1], 4 decimals."""
    q = min(1.0, max(0.0, float(quality)))
    value = (counts.successes + prior_weight * q) / (counts.validations + prior_weight)
    return round(min(1.0, max(0.0, value)), 4)


def change_kind(old: str, new: str) -> str:
    """promoted / demoted / expired: how a scope change is counted in the rollups."""
    if new not in SCOPE_RANK:
        return "expired"
    return "promoted" if SCOPE_RANK[new] > SCOPE_RANK.get(old, -1) else "demoted"


def shares(record: "ScopeRecord") -> bool:
    """Whether a recorded scope change made its document global: sharing a user's document
    is this record and nothing else."""
    return record.new == "global"


class ScopeRecord(NamedTuple):
    """One `scope_changed` event: what changed, why, and where it is recorded."""

    doc_id: str
    doc_path: str
    old: str
    new: str
    reason: str
    at: str  # ISO-8601 UTC (format_ts): when it was decided
    log: str  # "alice/turn_000007" or "alice/memory"
    seq: int
    trust: float | None = None
    usage: int = 0

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.at, self.log, self.seq)

    @classmethod
    def from_event(cls, event: "Event", at: datetime) -> "ScopeRecord":
        from events.schema import ScopeChanged

        data = event.data
        assert isinstance(data, ScopeChanged)
        return cls(
            doc_id=data.doc_id,
            doc_path=data.doc_path,
            old=data.old_scope,
            new=data.new_scope,
            reason=data.reason,
            at=format_ts(at),
            log=f"{event.user}/{event.turn}",
            seq=event.seq,
            trust=data.trust,
            usage=data.usage_count,
        )


class TurnFacts(NamedTuple):
    """What one completed turn tells the fold."""

    user: str
    turn: str
    occurred_at: datetime
    used: tuple[str, ...] = ()
    outcome: str | None = None
    quality: float = 0.5
    feedback: tuple[tuple[str, str], ...] = ()  # (target turn, accepted|rejected)
    scope_changes: tuple[ScopeRecord, ...] = ()

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    @property
    def number(self) -> int:
        return turn_number(self.turn)


def turn_facts(view: "TurnView", events: "Sequence[Event]" = (), pending: Sequence[Any] = ()) -> TurnFacts:
    """The facts of a turn from its view (and its events, for the scope changes' seq), or of
    one whose Save events (`pending`) are about to be written."""
    from events.schema import DocumentsUsed, ScopeChanged, TurnCompleted  # loaded when turns are folded

    at = view.occurred_at if view.occurred_at.tzinfo else view.occurred_at.replace(tzinfo=UTC)
    changes = tuple(ScopeRecord.from_event(e, at) for e in events if isinstance(e.data, ScopeChanged))
    technical = any(f.phase != "learning" for f in view.failures)
    used = next((p for p in pending if isinstance(p, DocumentsUsed)), view.used)
    completed = next((p for p in pending if isinstance(p, TurnCompleted)), view.completed)
    return TurnFacts(
        user=view.user,
        turn=view.turn,
        occurred_at=at,
        used=tuple(dict.fromkeys(used.doc_ids)) if used else (),
        outcome=used.outcome if used and not technical else None,
        quality=completed.quality if completed else 0.5,
        feedback=tuple((f.target_turn, f.status) for f in view.feedback),
        scope_changes=changes,
    )


TargetLookup = Callable[[str, str], "TurnFacts | None"]
FoldedCheck = Callable[[str, int], bool]


@dataclass(eq=False)
class Projection:
    """The fold's state: counters per document, feedback per turn, latest scope change.

    `counts` may be any mutable mapping.  For feedback that arrives after the turn it judges,
    `fold_turn` asks whether that turn was folded (`folded`) and what it used (`target`)."""

    counts: MutableMapping[str, Counts] = field(default_factory=dict)
    feedback: dict[str, tuple[int, str]] = field(default_factory=dict)
    scope: dict[str, ScopeRecord] = field(default_factory=dict)
    scope_days: dict[str, dict[str, int]] = field(default_factory=dict)

    def _add(self, doc_id: str, usage: int = 0, validations: int = 0, successes: int = 0) -> None:
        if usage or validations or successes:
            self.counts[doc_id] = self.counts.get(doc_id, Counts()).plus(usage, validations, successes)

    def fold_turn(self, facts: TurnFacts, target: TargetLookup, folded: FoldedCheck) -> set[str]:
        """Fold one completed turn; returns the ids of the documents whose counters moved."""
        changed: set[str] = set()
        own = self.feedback.get(facts.doc_id)
        mine = verdict(facts.outcome, own[1] if own else None)
        for doc_id in dict.fromkeys(facts.used):
            self._add(doc_id, 1, mine is not None, mine == SUCCESS)
            changed.add(doc_id)
        for target_turn, status in facts.feedback:
            changed |= self._fold_feedback(facts, target_turn, status, target, folded)
        for record in facts.scope_changes:
            changed |= self.fold_scope(record)
        return changed

    def _fold_feedback(
        self,
        facts: TurnFacts,
        target_turn: str,
        status: str,
        target: TargetLookup,
        folded: FoldedCheck,
    ) -> set[str]:
        target_id = f"{facts.user}/{target_turn}"
        prev = self.feedback.get(target_id)
        if prev is not None and prev[0] > facts.number:
            return set()  # a later turn's feedback about the same turn wins
        before = prev[1] if prev else None
        self.feedback[target_id] = (facts.number, status)
        self._add(
            target_id,
            validations=int(prev is None),
            successes=int(status == "accepted") - int(before == "accepted"),
        )
        changed = {target_id}
        judged = target(facts.user, target_turn) if folded(facts.user, turn_number(target_turn)) else None
        if judged is not None:
            old, new = verdict(judged.outcome, before), verdict(judged.outcome, status)
            dv = int(new is not None) - int(old is not None)
            ds = int(new == SUCCESS) - int(old == SUCCESS)
            for doc_id in dict.fromkeys(judged.used):
                self._add(doc_id, validations=dv, successes=ds)
                changed.add(doc_id)
        return changed

    def fold_scope(self, record: ScopeRecord) -> set[str]:
        """Fold one scope change (the latest by decision time wins), counted per day.  Only the
        owner's logs change a document's scope."""
        if record.doc_id.partition("/")[0] != record.log.partition("/")[0]:
            return set()
        current = self.scope.get(record.doc_id)
        if current is not None and current.key == record.key:
            return set()
        if current is None or record.key > current.key:
            self.scope[record.doc_id] = record
        day = dict(self.scope_days.get(record.at[:10], {}))
        kind = change_kind(record.old, record.new)
        day[kind] = day.get(kind, 0) + 1
        self.scope_days[record.at[:10]] = day  # a new value: the cache journals what is set
        return {record.doc_id}

    def preview(self, facts: TurnFacts, target: TargetLookup, folded: FoldedCheck) -> dict[str, Counts]:
        """Counters of the documents `facts` touches as if the turn were folded (no change)."""
        written: dict[str, Counts] = {}
        scratch = Projection(ChainMap(written, self.counts), dict(self.feedback), dict(self.scope), {})
        scratch.fold_turn(facts._replace(scope_changes=()), target, folded)
        return written
