"""Turns whose process died: closed, re-projected or removed as soon as anyone looks.
Whether a turn's process lives is told by a lock the kernel releases when it dies, never
by the turn's age:

- events but no `turn_completed`, log held by nobody: interrupted; a `phase_failed`
  (`Interrupted`), then Save ends it as FAIL with an intervention note (inbox turns are
  left to `watch`, which resumes them);
- completed, but metadata.json (written last) does not say so, or still marked
  `.indexing`: it died projecting or indexing; `Pipeline.resume` finishes it;
- no event, held by nobody: its allocator died; the folder is removed.

`ask` checks the user's latest turns (`recover_recent`); upkeep and `verify --repair`
check every turn."""

from __future__ import annotations

import os
from pathlib import Path

from events.errors import EventsError, LogBusyError
from events.fsio import read_vault_bytes
from events.log import EventWriter, events_of, parse_log
from events.schema import Event, PhaseFailed, TurnCompleted, TurnStarted
from indexers.errors import IndexingError

from ..turns import INDEXING, TurnRef, is_abandoned, read_metadata, remove_abandoned

__all__ = [
    "OPEN",
    "REPROJECTED",
    "UNINDEXED",
    "UNPROJECTED",
    "recover",
    "recover_recent",
    "turn_state",
]

INTERRUPTED = "Interrupted"
REPROJECTED = "re-projected and indexed the turn its process left unprojected"
REINDEXED = "indexed the turn its process left before its index commit landed"
OPEN, UNPROJECTED, UNINDEXED = "open", "unprojected", "unindexed"
"""What `turn_state` says of a turn that may need recovery (None: it does not)."""


def _needs_look(root: Path, rel: str) -> bool:
    """Cheap first test: a log without metadata saying the turn ended, or an `.indexing` mark
    (read from the vault root down)."""
    if not os.path.isfile(f"{root}/{rel}/events.jsonl"):
        return False
    return os.path.lexists(f"{root}/{rel}/{INDEXING}") or not _said_ended(root, rel)


def _said_ended(root: Path, rel: str) -> bool:
    """The turn's metadata.json says how it ended."""
    return (read_metadata(root, f"{root}/{rel}") or {}).get("outcome") not in (None, "INCOMPLETE")


def _left_open(events: list[Event]) -> bool:
    """Events with no `turn_completed`, of a turn not started from the inbox."""
    if not events or any(isinstance(e.data, TurnCompleted) for e in events):
        return False
    first = events[0].data
    return not (isinstance(first, TurnStarted) and first.source == "inbox")


def turn_state(root: Path, folder: Path) -> str | None:
    """Which recovery the turn in `folder` may need, from one read of its files: `OPEN`,
    `UNPROJECTED`, `UNINDEXED`, or None.  Only a pre-filter: `recover` decides again on the
    log as it reads under the log's lock."""
    rel = folder.relative_to(root).as_posix()
    if not _needs_look(root, rel):
        return None
    try:
        data = read_vault_bytes(root, folder / "events.jsonl") or b""
        events = events_of(parse_log(folder / "events.jsonl", data))
    except (EventsError, OSError):
        return None
    if any(isinstance(e.data, TurnCompleted) for e in events):
        return UNINDEXED if _said_ended(root, rel) else UNPROJECTED  # (then it is marked)
    return OPEN if _left_open(events) else None


def recover(pipeline, user: str, turn: str, *, by: str, state: str | None = None) -> str | None:
    """Close (as FAIL) or re-project one turn whose process died; what was done (None: nothing
    needed, or a live process holds it).  `state`: `turn_state`, if just read."""
    state = state or turn_state(pipeline.vault.root, pipeline.vault.layout.turn_dir(user, turn))
    try:
        if state == OPEN:
            return _close(pipeline, user, turn, by=by)
        if state in (UNPROJECTED, UNINDEXED) and _still_unprojected(pipeline.vault, user, turn):
            pipeline.resume(user, turn)  # nothing left to run: it writes the projections and indexes
            return REPROJECTED if state == UNPROJECTED else REINDEXED
    except LogBusyError:
        return None  # a live writer, or another recoverer took it up meanwhile: it is theirs
    return None


def _still_unprojected(vault, user: str, turn: str) -> bool:
    """Is the turn still unprojected now that its log's lock is taken?  `turn_state` may
    have read it while its live process was between `turn_completed` and its metadata.json."""
    folder = vault.layout.turn_dir(user, turn)
    with EventWriter(folder / "events.jsonl", user=user, turn=turn, root=vault.root):
        return _needs_look(vault.root, vault.rel(folder))


def _close(pipeline, user: str, turn: str, *, by: str) -> str | None:
    """Append `Interrupted` under the log's lock if the log, as it reads there, is still open,
    then let Save end the turn."""
    path = pipeline.vault.layout.turn_dir(user, turn) / "events.jsonl"
    with EventWriter(path, user=user, turn=turn, root=pipeline.vault.root) as writer:
        if not _left_open(writer.history()):
            return None
        writer.append(
            PhaseFailed(
                phase="system",
                error_type=INTERRUPTED,
                message=f"the process running this turn stopped before it ended; closed by {by}",
            )
        )
    pipeline.resume(user, turn)
    return "closed as FAIL"


def recover_recent(pipeline, user: str, before: str, count: int = 3) -> list[str]:
    """Recover the user's latest turns (numbered below `before`) whose process died:
    `ask` calls it, so a kill at any point is undone by the very next ask."""
    done = []
    for folder in pipeline.vault.layout.recent_turn_dirs(user, before, count):
        ref = TurnRef(user, folder.name, folder.parent)
        if is_abandoned(ref):  # no event yet: removed if its allocator died, else left
            if remove_abandoned(pipeline.vault, ref):
                done.append(f"{user}/{folder.name}")
            continue
        try:
            what = recover(pipeline, user, folder.name, by="the next ask")
        except (EventsError, IndexingError):  # neither stops this ask: a damaged turn is verify's
            continue  # to report, a turn whose index cannot be written keeps its mark for --repair
        if what is not None:
            done.append(f"{user}/{folder.name}")
    return done
