"""Cold storage of turns: which turns to archive, moving them to Parquet, and back.

Policy (`[archive]` in pandafs.toml; docs/memory.md).  A live turn is archived when
its `created_at` is older than `age_days` and it was used or expanded at most
`max_recent_uses` times in the last `recent_window_days`, or when it is older than
`force_age_days` whatever its use.  "Used" means its id is in a `documents_used` event
of one of the same user's turns, stamped inside the window (`recent_uses`, a fold over
the events of the turns whose log changed since the window opened); "expanded" means
`memory.retrieve` read it from the archive (`archive/expansions.jsonl`, append-only).
An archived turn expanded `expansions_to_restore` times within
`expansion_window_days` is restored.

Source of truth.  A turn is archived exactly when its summary stub
`archive/stubs/{user}/{turn}.md` exists; the stub keeps the turn's id, metadata and a
summary (so search still finds it) and names the Parquet file holding its rows
(`archive_file`).  Rows no stub points at are *orphans* — left by a batch that was
killed — and the next run (or `verify --repair`) either adopts them (they match the
live folder: the batch is finished) or drops them, so counting turns in the Parquet
files (DuckDB) is exact whenever no journal is pending.

One archive batch, crash-safe at every step:

  1. read every file of each turn (bytes, sha256, size, mtime);
  2. write the journal `archive/.journal/{batch}.json` naming the turns and part files;
  3. write one Parquet part per month to a temp name, fsync, rename, fsync the folder;
  4. read the parts back and compare every sha256 — nothing is removed before this;
  5. write the stubs and sync;
  6. rename each folder, if unchanged since step 1, to `users/{u}/turns/.archive-trash/`,
     fsync, then delete the trash;
  7. update the index (live paths deleted, stubs indexed); remove the journal.

`recover` (run first by every archive and restore, and by `verify --repair`) finishes
each journalled batch turn by turn: a turn whose rows are intact and match its live
folder (or whose folder is already gone) is archived — the rows are reused, never
written twice; a turn whose copy is missing or differs stays live and its rows are
dropped.  Restore is journalled the same way: rows are written into a staging folder,
synced, renamed into place, then the stub is removed and the rows are dropped.
"""

from __future__ import annotations

from ._check import CHECKS, check_archive
from ._common import archive_lock, parse_turn_id, pending_journals
from ._jobs import ArchiveReport, Expansion, archive_turns, expand_turn, restore_turns
from ._policy import (
    Candidate,
    expansion_counts,
    find_candidates,
    recent_uses,
    record_expansion,
    turn_created_at,
)
from ._steps import RestoreReport, recover
from ._stubs import StubInfo, key_claims, read_stub, render_stub

__all__ = [
    "CHECKS",
    "ArchiveReport",
    "Candidate",
    "Expansion",
    "RestoreReport",
    "StubInfo",
    "archive_lock",
    "archive_turns",
    "check_archive",
    "expand_turn",
    "expansion_counts",
    "find_candidates",
    "key_claims",
    "parse_turn_id",
    "pending_journals",
    "read_stub",
    "recent_uses",
    "record_expansion",
    "recover",
    "render_stub",
    "restore_turns",
    "turn_created_at",
]
