"""`pandafs promote` and `pandafs prune --expired`: scope changes outside any turn.

`promote` syncs the fold, runs the policy over every used promotable document, records
each step in the owner's maintenance log (events first), folds them, and writes the new
scope into the documents (promoted `new` loses `expires_at`; demoted gets one).

`prune_expired` moves each expired `new` document to `archive/expired/{its path}`
(nothing is deleted) and out of the index, after recording `scope_changed` (new →
expired).  A document the policy would promote now is kept.  An interrupted prune
finishes at the next run without a second event."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from events.clock import utcnow
from events.fsio import rename_in_vault, vault_folder
from events.layout import classify
from events.schema import ScopeChanged
from events.stamps import format_ts
from indexers.sync import scan_documents

from ..checks import Problem, frontmatter_of
from ..memory.api import Memory
from ..memory.turn_records import parse_time
from ..vault import Vault
from .engine import Learning, SyncReport
from .policy import decide_steps, scope_change
from .state import learned_memory
from .trust import Counts, shares

__all__ = ["check_shared", "promote", "prune_expired"]


@dataclass(eq=False)
class PromotionReport:
    """The scope changes a promotion run made (or would make, dry run)."""

    now: datetime
    dry_run: bool
    changes: list[ScopeChanged] = field(default_factory=list)
    sync: SyncReport = field(default_factory=SyncReport)

    def as_json(self) -> dict[str, Any]:
        return {
            "now": format_ts(self.now),
            "dry_run": self.dry_run,
            "changes": [c.model_dump() for c in self.changes],
            "promoted": sum(1 for c in self.changes if c.reason.startswith("promoted")),
            "demoted": sum(1 for c in self.changes if c.reason.startswith("demoted")),
            "sync": self.sync.as_json(),
        }


def promote(
    vault: Vault,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    full: bool = False,
) -> PromotionReport:
    """Run scope promotion / demotion now (`full`: recompute usage and trust first)."""
    now = now or utcnow()
    report = PromotionReport(now, dry_run)
    with Learning(vault).open() as engine:
        report.sync = engine.rebuild(write=not dry_run) if full else engine.sync(write=not dry_run)
        report.changes = engine.policy.decide_all(now)
        if report.changes and not dry_run:
            engine.policy.record_decisions(report.changes, now)
            after = engine.sync()
            report.sync.documents = sorted(set(report.sync.documents) | set(after.documents))
    return report


@dataclass(eq=False)
class PruneReport:
    """The expired documents a prune moved to the archive (or would move, dry run), and those kept."""

    now: datetime
    dry_run: bool
    pruned: list[dict[str, Any]] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "now": format_ts(self.now), "count": len(self.pruned)}


def _expiry(vault: Vault, rel: str) -> datetime | None:
    """`expires_at` of a `new` document, read from its file (None: not a candidate)."""
    front = frontmatter_of(vault, rel) or {}
    return parse_time(front.get("expires_at")) if front.get("scope") == "new" else None


def _candidates(vault: Vault, memory: Memory, now: datetime) -> list[tuple[str, datetime]]:
    """Vault-relative paths of `new` documents whose expiry has passed, and that expiry: those
    the index knows, and memories written by hand and not indexed yet."""
    found = {
        hit["doc_path"] for hit in memory.search(scope="new", include_expired=True, limit=100_000, now=now)
    }
    for user in vault.layout.users():  # the same walk as the indexer's: symlinks are not documents
        found |= set(scan_documents(vault.root, f"users/{user}/memories"))
    return [(rel, when) for rel in sorted(found) if (when := _expiry(vault, rel)) is not None and when <= now]


def prune_expired(
    vault: Vault,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
) -> PruneReport:
    """Move expired `new` documents to archive/expired/ (see the module docstring)."""
    from ..memory.editing import expired_path  # not loaded by a turn's Save, which imports this module

    now = now or utcnow()
    report = PruneReport(now, dry_run)
    memory = learned_memory(vault)
    with Learning(vault, memory).open() as engine:
        engine.sync(write=not dry_run)
        projection = engine.cache.projection()
        moved: list[str] = []
        for rel, expired_at in _candidates(vault, memory, now):
            ref = classify(rel)
            info = engine.documents.doc_info(ref.doc_id, projection) if ref is not None else None
            if info is None or info.rel != rel or info.owner is None:
                continue
            counts = engine.cache.state.counts.get(info.doc_id) or Counts()
            state = engine.policy.doc_state(info, counts, now)
            steps = decide_steps(state, engine.policy.cfg)
            if steps:
                report.kept.append({"doc_id": info.doc_id, "doc_path": rel, "reason": steps[0].reason})
                continue
            target = expired_path(vault, rel)
            archived_to = target.relative_to(vault.root).as_posix()
            item = {"doc_id": info.doc_id, "doc_path": rel, "archived_to": archived_to}
            report.pruned.append({**item, "expired_at": format_ts(expired_at)})
            if dry_run:
                continue
            record = projection.scope.get(info.doc_id)
            if record is None or record.new != "expired":  # no event records it yet
                reason = (
                    f"expired: expires_at {format_ts(expired_at)} ≤ {format_ts(now)}, "
                    f"used {state.usage} times; moved to {archived_to}"
                )
                engine.policy.record_decisions([scope_change(state, "expired", reason)], now)
            vault_folder(vault.root, target.parent)  # archive/expired/…: made, never through a link
            with vault.memory_lock(info.owner):  # both folders checked again as opened
                rename_in_vault(vault.root, vault.root / rel, target)
            moved.append(rel)
        if moved:
            with memory.index.batch() as batch:
                for rel in moved:
                    batch.delete(rel)
            engine.sync()
    return report


def check_shared(vault: Vault, repair: bool) -> list[Problem]:
    """Research claiming `scope: global` with no recorded promotion behind it (`scope_claim`):
    indexed as its owner's.  `--repair` changes nothing: the claim is the person's."""
    claims: list[tuple[str, str]] = []
    for user in vault.layout.users():
        for folder in vault.layout.turn_dirs(user):  # one lstat a turn: most have no research
            if not os.path.lexists(folder / "research.md"):
                continue
            rel = f"{vault.rel(folder)}/research.md"
            ref = classify(rel)
            if ref is None:
                continue
            front = frontmatter_of(vault, rel)
            if front is not None and front.get("scope") == "global":
                claims.append((ref.doc_id, rel))
    if not claims:
        return []
    with Learning(vault).open() as engine:
        engine.sync(write=False)
        shared = {d for d, r in engine.cache.state.scope.items() if shares(r)}
    why = "says `scope: global`, but no promotion of it is recorded: searched as {}'s only"
    why += " (research is shared by `pandafs promote`)"
    return [
        Problem(rel, "scope_claim", why.format(doc_id.partition("/")[0]))
        for doc_id, rel in claims
        if doc_id not in shared
    ]
