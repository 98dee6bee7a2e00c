"""Cold storage of turns: which turns to archive, moving them to Parquet, and back.

Policy (`[archive]`; docs/memory.md): a turn older than `age_days` and used or expanded
at most `max_recent_uses` times in the last `recent_window_days` is archived, and so is
any turn older than `force_age_days`.  One expanded `expansions_to_restore` times within
`expansion_window_days` is restored.

A turn is archived exactly when its stub `archive/stubs/{user}/{turn}.md` exists; the
stub keeps its id, metadata and summary (search still finds it) and names its Parquet
file.  Rows no stub points at (orphans of a killed batch) are adopted or dropped by the
next run or `verify --repair`.

One batch, crash-safe at every step:

  1. read every file of each turn (bytes, sha256, size, mtime);
  2. write the journal `archive/.journal/{batch}.json`;
  3. write one Parquet part per month to a temp name, fsync, rename, fsync the folder;
  4. read the parts back and compare every sha256: nothing is removed before this;
  5. write the stubs and sync;
  6. move each folder, if unchanged since step 1, to `.archive-trash/`, fsync, delete it;
  7. update the index; remove the journal.

`recover` finishes each journalled batch turn by turn: a turn whose rows match its live
folder (or whose folder is gone) is archived with those rows; any other stays live and
its rows are dropped.  Restore is journalled the same way."""

from __future__ import annotations

from ._jobs import CHECKS, ArchiveReport, archive_turns, expand_turn, restore_turns
from ._policy import find_candidates, recent_uses
from ._stubs import key_claims, read_stub

__all__ = [
    "CHECKS",
    "ArchiveReport",
    "archive_turns",
    "expand_turn",
    "find_candidates",
    "key_claims",
    "read_stub",
    "recent_uses",
    "restore_turns",
]
