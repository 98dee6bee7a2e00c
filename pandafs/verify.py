"""`pandafs verify`: check everything that can be checked against its source.

Checks (each problem is `{path, kind, message}`; kinds are stable for scripts):
  chain        an event line was changed, reordered or deleted (names file and seq)
  torn_tail    the log ends in an incomplete line (`--repair` moves it aside)
  misplaced    events name another user or turn than their folder
  empty_turn   a turn folder with no events (an allocation whose writer died)
  drift        a projected file differs from its events (`pandafs replay` rewrites it)
  missing      a projected file is missing (`--repair` re-projects it)
  unreadable   a file that cannot be parsed at all
  index_stale  the search index misses a document or holds one that is gone
               (`--repair` reconciles it)
  scope_claim  `scope: global` on a user's document that cannot be shared (it stays theirs)
  id_claim     an `id:` in frontmatter that is not the path's (ids come from paths)
  interrupted  a turn whose process died before it ended (`--repair` closes it as FAIL;
               inbox turns are `watch`'s to resume)
  archive_*    cold storage (stubs, Parquet rows, checksums): see
               `pandafs.archive.check_archive` for each kind
  The maintenance logs (`users/{u}/memory.events.jsonl`, scope changes made outside
  any turn) are checked like a turn's log: chain, torn_tail, misplaced.

`default_checks()` lists the vault-wide checkers the CLI runs after the turns.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from events import (
    check_chain,
    classify,
    parse_document,
    parse_event,
    project_turn,
    read_log,
    repair_torn_tail,
)
from events.errors import EventsError
from events.layout import effective_scope
from events.schema import TornTailRepaired
from indexers.sync import scan_documents

from .memory import Memory
from .turns import TurnRef, drift_of, iter_turns, project
from .vault import Vault

__all__ = ["Problem", "VerifyReport", "verify_vault"]


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    message: str
    repaired: bool = False
    """Set by a checker that fixed it under `--repair`: listed as a repair, not a problem."""

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
        memory.reconcile()
        return []
    return [
        Problem(
            "indexes/fulltext", "index_stale", f"{what}; run `pandafs verify --repair` or `pandafs rebuild`"
        )
    ]


def check_claims(vault: Vault, repair: bool) -> list[Problem]:
    """Frontmatter that claims what only the path decides: `scope: global` on a document
    of `users/{u}/` that is not shareable (indexed as that user's; publish it instead), an
    `id:` other than the path's (ignored: ids come from paths).  Turn folders are written
    by PandaFS and checked against their events instead; `--repair` changes nothing here,
    since the file is the person's to edit."""
    problems: list[Problem] = []
    roots = [vault.layout.knowledge]
    users = vault.root / "users"
    if users.is_dir():
        roots += [e for e in sorted(users.iterdir()) if e.is_dir() and not e.is_symlink()]
    for top in roots:
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "turns" and not d.startswith("."))
            for name in sorted(filenames):
                path = Path(dirpath) / name
                rel = vault.rel(path) if not path.is_symlink() else None
                ref = classify(rel) if rel else None
                if ref is None:
                    continue
                try:
                    front = parse_document(path.read_text(encoding="utf-8"), rel).frontmatter
                except (OSError, UnicodeDecodeError, EventsError):
                    continue  # unreadable files are named by the index check
                claimed = front.get("scope")
                if claimed == "global" and effective_scope(ref, claimed) != "global":
                    problems.append(
                        Problem(
                            rel,
                            "scope_claim",
                            "says `scope: global`, but what a user keeps under users/ stays theirs "
                            "(searched as theirs); publish it with `pandafs save --scope global`",
                        )
                    )
                if front.get("id") not in (None, ref.doc_id):
                    problems.append(
                        Problem(
                            rel,
                            "id_claim",
                            f"says `id: {front['id']}`, but its id is {ref.doc_id} (ids come from "
                            "paths: rename the file to change it)",
                        )
                    )
    return problems


def default_checks() -> list[Checker]:
    from .archive import check_archive  # it imports this module: load it lazily
    from .learning import check_learning
    from .pipeline.recovery import check_interrupted

    return [check_archive, check_learning, check_interrupted, check_index, check_claims]


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
