"""`pandafs verify`: check everything that can be checked against its source.

Checks (each problem is `{path, kind, message}`; kinds are stable for scripts):
  chain        an event line was changed, reordered or deleted (names file and seq)
  torn_tail    the log ends in an incomplete line (`--repair` moves it aside)
  misplaced    events name another user or turn than their folder
  empty_turn   a turn folder with no events (an allocation whose writer died;
               `--repair` removes it once it is 30 s old)
  drift        a projected file differs from its events (`pandafs replay` rewrites it)
  missing      a projected file is missing (`--repair` re-projects it)
  unreadable   a file that cannot be parsed at all
  index_stale  the search index misses a document or holds one that is gone
               (`--repair` reconciles it)
  archive_*    cold storage (stubs, Parquet rows, checksums): see
               `pandafs.archive.check_archive` for each kind
  The maintenance logs (`users/{u}/memory.events.jsonl`, scope changes made outside
  any turn) are checked like a turn's log: chain, torn_tail, misplaced.

`default_checks()` lists the vault-wide checkers the CLI runs after the turns.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from events import check_chain, parse_event, project_turn, read_log, repair_torn_tail
from events.errors import EventsError
from events.fsio import TMP_PREFIX
from events.schema import TornTailRepaired
from indexers.sync import scan_documents

from .memory import Memory
from .turns import EVENTS_FILE, TurnRef, drift_of, iter_turns, project
from .vault import Vault

__all__ = ["Problem", "VerifyReport", "verify_vault"]

# An empty turn folder younger than this may be a live `ask` about to write its first
# event (the inbox waits 5 s before adopting one); older ones are abandoned.
ABANDONED_AFTER_S = 30.0


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    message: str
    repaired: bool = False  # a checker's way to say "found this and fixed it"

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "kind": self.kind, "message": self.message}


@dataclass
class VerifyReport:
    checked_turns: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    repaired: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked_turns": self.checked_turns,
            "problems": [p.as_json() for p in self.problems],
            "warnings": [p.as_json() for p in self.warnings],
            "repaired": [p.as_json() for p in self.repaired],
        }


Checker = Callable[[Vault, bool], Iterable[Problem]]


def _verify_turn(vault: Vault, ref: TurnRef, repair: bool, report: VerifyReport) -> None:
    rel = vault.rel(ref.events_path)
    if _is_abandoned(ref):
        empty = Problem(vault.rel(ref.path), "empty_turn", "turn folder holds no events")
        if repair and _remove_abandoned(ref):
            report.repaired.append(Problem(empty.path, empty.kind, "removed the empty turn folder"))
        else:
            report.problems.append(empty)
        return
    if not ref.events_path.exists():
        if not any(ref.path.iterdir()):
            report.problems.append(Problem(vault.rel(ref.path), "empty_turn", "no events.jsonl"))
        else:
            report.problems.append(Problem(rel, "missing", "turn folder has files but no events"))
        return
    log = read_log(ref.events_path)
    if log.torn_tail is not None:
        after = f" after seq {len(log.records) - 1}" if log.records else " before any event"
        size = len(log.torn_tail)
        torn = Problem(rel, "torn_tail", f"ends in a torn line of {size} bytes{after}")
        if repair:
            moved = repair_torn_tail(ref.events_path)
            report.repaired.append(torn)
            log = read_log(ref.events_path)
            if log.records:
                _note_repair(ref, moved)
                log = read_log(ref.events_path)
        else:
            report.problems.append(torn)
    problem = check_chain(log)
    if problem is not None:
        report.problems.append(Problem(rel, "chain", str(problem).removeprefix(f"{rel}: ")))
        return
    if not log.records:
        if log.torn_tail is None:
            report.problems.append(Problem(rel, "empty_turn", "events.jsonl holds no events"))
        return
    for record in log.records:
        if record.get("user") != ref.user or record.get("turn") != ref.turn:
            report.problems.append(
                Problem(
                    rel,
                    "misplaced",
                    f"seq {record.get('seq')} names {record.get('user')}/{record.get('turn')}",
                )
            )
            return
    try:
        events = [parse_event(r) for r in log.records]
        view = project_turn(events)
    except (EventsError, ValueError) as exc:
        report.problems.append(Problem(rel, "unreadable", str(exc).splitlines()[0]))
        return
    for kind in sorted(set(view.unknown_types)):
        report.warnings.append(
            Problem(rel, "unknown_event", f"event type {kind!r} from a newer version (kept)")
        )
    for drift in drift_of(vault, ref, view):
        problem = Problem(drift.path, "drift" if drift.kind == "modified" else "missing", drift.message)
        if repair and drift.kind == "missing":
            project(ref, view)
            report.repaired.append(problem)
        else:
            report.problems.append(problem)


def _is_abandoned(ref: TurnRef) -> bool:
    """A turn folder whose writer died before its first event: nothing in it, or only
    an empty `events.jsonl` and our temporary files."""
    try:
        entries = list(os.scandir(ref.path))
    except FileNotFoundError:
        return False
    for entry in entries:
        if entry.name == EVENTS_FILE and entry.is_file(follow_symlinks=False):
            if entry.stat(follow_symlinks=False).st_size:
                return False
        elif not (entry.name.startswith(TMP_PREFIX) and entry.is_file(follow_symlinks=False)):
            return False
    return True


def _remove_abandoned(ref: TurnRef) -> bool:
    """Remove an abandoned turn folder, unless it is young enough to be a live writer's
    (`ask` allocates the folder a moment before its first event)."""
    try:
        age = time.time() - ref.path.stat().st_mtime
    except FileNotFoundError:
        return False
    if age < ABANDONED_AFTER_S:
        return False
    for entry in os.scandir(ref.path):
        os.unlink(entry.path)
    try:
        ref.path.rmdir()
    except OSError:
        return False  # a writer arrived meanwhile: leave it
    return True


def _note_repair(ref: TurnRef, moved: int) -> None:
    """Record the repair in the turn's own log so its history says what happened."""
    from events import EventWriter

    with EventWriter(ref.events_path, user=ref.user, turn=ref.turn) as writer:
        writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))


def check_index(vault: Vault, repair: bool) -> list[Problem]:
    """The index must hold exactly the documents on disk, at their current bytes."""
    memory = Memory(vault)
    files = scan_documents(vault.root)
    if memory.index.exists():
        state = memory.index.state()
        stale = sum(
            1 for p, (m, s) in files.items() if p not in state or (state[p].mtime_ns, state[p].size) != (m, s)
        )
        gone = sum(1 for p in state if p not in files)
        what = f"{stale} changed or unindexed, {gone} gone"
    else:
        stale, gone, what = len(files), 0, "index is missing"
    if not stale and not gone:
        return []
    if repair:
        done = memory.reconcile()
        message = f"{what}; reconciled: {done.indexed} indexed, {done.deleted} removed"
        return [Problem("indexes/fulltext", "index_stale", message, repaired=True)]
    return [
        Problem(
            "indexes/fulltext", "index_stale", f"{what}; run `pandafs verify --repair` or `pandafs rebuild`"
        )
    ]


def default_checks() -> list[Checker]:
    from .archive import check_archive  # it imports this module: load it lazily
    from .learning import check_learning

    return [check_archive, check_learning, check_index]


def verify_vault(
    vault: Vault,
    *,
    repair: bool = False,
    target: str | None = None,
    checks: Iterable[Checker] = (),
    progress: Callable[[int], None] | None = None,
) -> VerifyReport:
    report = VerifyReport()
    for ref in iter_turns(vault, target):
        report.checked_turns += 1
        _verify_turn(vault, ref, repair, report)
        if progress is not None:
            progress(1)
    for checker in checks:
        for problem in checker(vault, repair):
            (report.repaired if problem.repaired else report.problems).append(problem)
    return report
