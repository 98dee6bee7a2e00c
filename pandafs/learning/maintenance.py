"""The maintenance log: scope changes that no turn made.

`pandafs promote` and `prune --expired` run outside any turn, so their decisions go to
the owner's `users/{user}/memory.events.jsonl`: the same hash-chained, fsynced log as a
turn's, with `"turn": "memory"` and `ts` the decision time.  Only documents a user owns
change scope, so there is no global log.  `verify` checks it like a turn's log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from events.errors import EventsError, LogBusyError
from events.log import EventWriter, check_chain, read_log, repair_torn_tail
from events.schema import Event, ScopeChanged, parse_event

from ..checks import Problem
from ..vault import Vault

__all__ = ["LOG_NAME", "LOG_TURN", "append_changes", "check_learning", "log_path", "read_changes"]

LOG_NAME = "memory.events.jsonl"
LOG_TURN = "memory"


def log_path(vault: Vault, user: str) -> Path:
    return vault.layout.user_dir(user) / LOG_NAME


def append_changes(vault: Vault, user: str, changes: Sequence[ScopeChanged], now: datetime) -> list[Event]:
    """Append scope changes (at least one) to `user`'s maintenance log in one fsynced write."""
    with EventWriter(log_path(vault, user), user=user, turn=LOG_TURN, root=vault.root) as writer:
        return writer.append_many(changes, ts=now)


def read_changes(vault: Vault, user: str, start: int = 0) -> tuple[list[Event], str | None]:
    """Events of `user`'s maintenance log from seq `start`, and the first problem if any:
    a broken chain stops the read; a torn tail is left for `verify --repair`."""
    path = log_path(vault, user)
    log = read_log(path, root=vault.root)
    problem = check_chain(log)
    records = log.records
    if problem is not None:
        records = records[: problem.seq] if isinstance(problem.seq, int) else []
    events: list[Event] = []
    for record in records[start:]:
        try:
            events.append(parse_event(record))
        except (EventsError, ValueError) as exc:
            return events, f"{vault.rel(path)}: seq {record.get('seq')}: {exc}"
    return events, str(problem) if problem is not None else None


def check_learning(vault: Vault, repair: bool) -> list[Problem]:
    """Verify every maintenance log (kinds as for turns: chain, torn_tail, misplaced)."""
    problems: list[Problem] = []
    for user in vault.layout.users():
        path = log_path(vault, user)
        if not path.exists():
            continue
        rel = vault.rel(path)
        log = read_log(path, root=vault.root)
        torn = log.torn_tail
        if torn is not None:
            if repair:
                try:
                    repair_torn_tail(path, root=vault.root)
                except LogBusyError:
                    continue  # its writer is appending that line now
                log = read_log(path, root=vault.root)
            else:
                problems.append(Problem(rel, "torn_tail", f"ends in a torn line of {len(torn)} bytes"))
        chain = check_chain(log)
        if chain is not None:
            problems.append(Problem(rel, "chain", str(chain).removeprefix(f"{path}: ")))
            continue
        stray = next((r for r in log.records if r.get("user") != user or r.get("turn") != LOG_TURN), None)
        if stray is not None:
            names = f"{stray.get('user')}/{stray.get('turn')}"
            problems.append(Problem(rel, "misplaced", f"seq {stray.get('seq')} names {names}"))
    return problems
