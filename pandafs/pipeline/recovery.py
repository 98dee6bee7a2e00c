"""Turns whose process died: closed, re-projected or removed as soon as anyone looks.

Whether a turn's process lives is told by a lock the kernel releases when it dies,
never by the turn's age:

- A running turn holds its log's `flock` from its first event until its projections are
  written and indexed (`Pipeline._drive`).  A turn whose log has events but no
  `turn_completed` and that nobody holds is interrupted: a `phase_failed` event
  (`Interrupted`), then Save ends it as FAIL with an intervention note — the user sees
  why, and the trust fold learns nothing from an answer nobody validated.  Turns
  started from the inbox are left to `watch`, which resumes them and answers their file
  exactly once.
- A turn whose log ends in `turn_completed` but whose projections are missing (its
  metadata.json, written last, after the index commit, does not say how it ended) and
  that nobody holds died while projecting or indexing it: it is re-projected and
  indexed by `Pipeline.resume`, the same code that finishes any turn, so the user's
  last answer is in search and in the next turn's context at once.
- A turn folder with no event yet is held by its allocator (`Vault.new_turn`) until its
  turn ends: one nobody holds was left by a process that died before its first event,
  and is removed (`turns.remove_abandoned`); one a live process holds is never removed,
  however old.

Who looks: `ask` checks the user's latest turns before it starts a new one
(`recover_recent`); `watch`'s upkeep and `verify --repair` check every turn
(`interrupted.check_interrupted`; verify's own turn checks remove dead allocations).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from events import Event, EventWriter, read_events, read_vault_file
from events.errors import EventsError, LogBusyError, NotInVault
from events.schema import PhaseFailed, TurnCompleted, TurnStarted

from ..turns import TurnRef, is_abandoned, remove_abandoned

__all__ = [
    "INTERRUPTED",
    "REPROJECTED",
    "close_interrupted",
    "find_interrupted",
    "find_unprojected",
    "recover_recent",
    "reproject",
]

INTERRUPTED = "Interrupted"
REPROJECTED = "re-projected and indexed the turn its process left unprojected"


def _needs_look(folder: Path) -> bool:
    """Cheap first test: a log, and no metadata saying the turn ended."""
    if not (folder / "events.jsonl").is_file():
        return False
    try:
        outcome = orjson.loads(read_vault_file(folder, "metadata.json")[0]).get("outcome")
    except (FileNotFoundError, NotInVault, orjson.JSONDecodeError, AttributeError):
        return True
    return outcome in (None, "INCOMPLETE")


def _events(folder: Path) -> list[Event] | None:
    """The turn's events if the cheap test says it may need recovery (None: it does not,
    or its log is damaged, which is verify's chain/torn-tail report, not ours)."""
    if not _needs_look(folder):
        return None
    try:
        return read_events(folder / "events.jsonl")
    except EventsError:
        return None


def find_interrupted(folder: Path) -> bool:
    """Whether the turn in `folder` was left open by a process that died.

    False for complete turns, turns from the inbox (watch's to finish) and turns a live
    process holds.
    """
    events = _events(folder)
    if not events or not _left_open(events):
        return False
    try:
        with EventWriter(folder / "events.jsonl", user=events[0].user, turn=events[0].turn):
            pass
    except (LogBusyError, EventsError):
        return False  # a live turn
    return True


def _left_open(events: list[Event]) -> bool:
    """Events with no `turn_completed`, of a turn not started from the inbox."""
    if not events or any(isinstance(e.data, TurnCompleted) for e in events):
        return False
    first = events[0].data
    return not (isinstance(first, TurnStarted) and first.source == "inbox")


def find_unprojected(folder: Path) -> bool:
    """Whether the turn in `folder` ended (`turn_completed`) but was not all projected
    and indexed (its metadata.json, written last, does not say how it ended).  Its
    writer may still be at it: `reproject` takes the log's lock first, which a live
    writer holds until it is done."""
    events = _events(folder)
    return bool(events) and any(isinstance(e.data, TurnCompleted) for e in events)


def reproject(pipeline, user: str, turn: str) -> str | None:  # noqa: ANN001
    """Project and index a complete turn whose process died before it could; what was
    done (None: nothing was needed, or its live writer is still at it)."""
    if not find_unprojected(pipeline.vault.layout.turn_dir(user, turn)):
        return None
    try:
        pipeline.resume(user, turn)  # nothing left to run: it writes the projections and indexes
    except LogBusyError:
        return None
    return REPROJECTED


def close_interrupted(pipeline, user: str, turn: str, *, by: str) -> str | None:  # noqa: ANN001
    """Close one interrupted turn; what was done (None: nothing was needed or possible)."""
    folder = pipeline.vault.layout.turn_dir(user, turn)
    if not find_interrupted(folder):
        return None
    try:
        with EventWriter(folder / "events.jsonl", user=user, turn=turn) as writer:
            # decided again on the log as it is under the lock: the events `find_interrupted`
            # read may predate its writer's `turn_completed` and the end of its hold
            if not _left_open(read_events(folder / "events.jsonl")):
                return None
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
    """Recover the user's latest turns (numbered below `before`) whose process died:
    `ask` calls it, so a kill at any point is undone by the very next ask."""
    done = []
    for folder in pipeline.vault.layout.recent_turn_dirs(user, before, count):
        ref = TurnRef(user, folder.name, folder)
        if is_abandoned(ref):  # no event yet: removed if its allocator died, else left
            if remove_abandoned(pipeline.vault, ref):
                done.append(f"{user}/{folder.name}")
            continue
        try:
            what = close_interrupted(pipeline, user, folder.name, by="the next ask")
            what = what or reproject(pipeline, user, folder.name)
        except EventsError:
            continue  # a damaged turn is verify's to report; it must not stop this ask
        if what is not None:
            done.append(f"{user}/{folder.name}")
    return done
