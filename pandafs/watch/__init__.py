"""`pandafs watch`: keep the index in step with the vault, answer the inbox, run upkeep.

    VaultWatcher (child process) ──batches──▶ Watch loop (this process, one thread)
                                                ├ documents changed  → Memory.index_paths
                                                ├ folders changed    → reconcile_dirs
                                                ├ events lost        → Memory.reconcile (full)
                                                ├ inbox/ changed     → Inbox.process, one file a step
                                                ├ every reconcile_interval_s → full reconcile
                                                └ when idle and due  → upkeep jobs

The loop handles index changes before each inbox file, so a burst of queries does
not delay search freshness by more than one turn.  The index writer lock is taken
per batch (`FullTextIndex.batch`), so `ask`, `save`, `import-turns` and `rebuild`
keep working beside it; a batch that finds the index busy past the wait limit is
logged and retried.  PandaFS's own writes come back as events too: re-indexing an
unchanged file only re-stamps it (checksums), and outbox / processed / rejected
files are never taken for queries.

`run_once()` is the same work without a watcher (what `watch --once` and cron use):
every pending inbox file, a full reconcile, upkeep if due.

Upkeep: `UPKEEP_JOBS` is a registry of jobs named by `module:function`, imported
lazily, so a job whose code has not landed yet is skipped (and said so) rather than
breaking the watcher.  Each job is called as `fn(vault, now=...)` (only the keyword
arguments its signature accepts) and its result summarised from `as_json()`.  When a
job last ran is kept in `observability/upkeep.json`, so a restart does not rerun it.

One job a module: `_loop` (the watch loop: batches to index work, inbox steps,
periodic work, status), `_index` (which paths it ignores, reconciling only the folders
that changed), `_report` (what a run did), `_upkeep` (the upkeep jobs and when each is due).
"""

from ._index import reconcile_dirs, watch_ignore
from ._loop import Watch
from ._report import WatchReport
from ._upkeep import UPKEEP_JOBS, Upkeep, UpkeepJob, UpkeepResult

__all__ = [
    "UPKEEP_JOBS",
    "Upkeep",
    "UpkeepJob",
    "UpkeepResult",
    "Watch",
    "WatchReport",
    "reconcile_dirs",
    "watch_ignore",
]
