"""Interrupted turns: a turn whose process died before `turn_completed` gets closed.

A turn is interrupted when its log has events but no `turn_completed` and no process
holds it (a running turn keeps its log's `flock` from start to end).  Turns started
from the inbox are left to `watch`, which resumes them and answers their file exactly
once.  Any other interrupted turn is closed: a `phase_failed` event (`Interrupted`),
then Save ends it as FAIL with an intervention note — the user sees why, and the trust
fold learns nothing from an answer nobody validated.  (A turn whose events are complete
but whose projections are missing is not interrupted: its writer may be projecting it
right now; verify's `missing` check re-projects it.)

Who looks: `ask` checks the user's latest turns before it starts a new one; `watch`'s
upkeep and `verify --repair` check every turn (`interrupted.check_interrupted`).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from events import EventWriter, read_events, read_vault_file
from events.errors import EventsError, LogBusyError, NotInVault
from events.schema import PhaseFailed, TurnCompleted, TurnStarted

from ..turns import TurnRef, is_abandoned, remove_abandoned

__all__ = [
    "INTERRUPTED",
    "close_interrupted",
    "find_interrupted",
    "recover_recent",
]

INTERRUPTED = "Interrupted"
EMPTY_GRACE_S = 2.0
"""An eventless turn folder at least this old is an allocation whose `ask` died before
its first event (a live one writes it within milliseconds): the next ask removes it."""


def _needs_look(folder: Path) -> bool:
    """Cheap first test: a log, and no metadata saying the turn ended."""
    if not (folder / "events.jsonl").is_file():
        return False
    try:
        outcome = orjson.loads(read_vault_file(folder, "metadata.json")[0]).get("outcome")
    except (FileNotFoundError, NotInVault, orjson.JSONDecodeError, AttributeError):
        return True
    return outcome in (None, "INCOMPLETE")


def find_interrupted(folder: Path) -> bool:
    """Whether the turn in `folder` was left open by a process that died.

    False for complete turns, turns from the inbox (watch's to finish) and turns a live
    process holds.
    """
    if not _needs_look(folder):
        return False
    try:
        events = read_events(folder / "events.jsonl")
    except EventsError:
        return False  # a damaged log is verify's chain/torn-tail report, not ours
    if not events or any(isinstance(e.data, TurnCompleted) for e in events):
        return False
    first = events[0].data
    if isinstance(first, TurnStarted) and first.source == "inbox":
        return False
    try:
        with EventWriter(folder / "events.jsonl", user=events[0].user, turn=events[0].turn):
            pass
    except (LogBusyError, EventsError):
        return False  # a live turn
    return True


def close_interrupted(pipeline, user: str, turn: str, *, by: str) -> str | None:  # noqa: ANN001
    """Close one interrupted turn; what was done (None: nothing was needed or possible)."""
    folder = pipeline.vault.layout.turn_dir(user, turn)
    if not find_interrupted(folder):
        return None
    try:
        with EventWriter(folder / "events.jsonl", user=user, turn=turn) as writer:
            writer.append(
                PhaseFailed(
                    phase="system",
                    error_type=INTERRUPTED,
                    message=f"the process running this turn stopped before it ended; closed by {by}",
                )
            )
        pipeline.resume(user, turn)
    except LogBusyError:
        return None  # another process took it up meanwhile (a resumer): it is theirs
    return "closed as FAIL"


def recover_recent(pipeline, user: str, before: str, count: int = 3) -> list[str]:  # noqa: ANN001
    """Close the user's latest interrupted turns (numbered below `before`): `ask` calls it."""
    done = []
    for folder in pipeline.vault.layout.recent_turn_dirs(user, before, count):
        ref = TurnRef(user, folder.name, folder)
        if is_abandoned(ref):  # killed between allocating the folder and its first event
            if remove_abandoned(ref, EMPTY_GRACE_S):  # younger: maybe a live ask's; left, not waited on
                done.append(f"{user}/{folder.name}")
            continue
        try:
            closed = close_interrupted(pipeline, user, folder.name, by="the next ask")
        except EventsError:
            continue  # a damaged turn is verify's to report; it must not stop this ask
        if closed is not None:
            done.append(f"{user}/{folder.name}")
    return done
