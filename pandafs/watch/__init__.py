"""`pandafs watch`: keep the index in step with the vault, answer the inbox, run upkeep.

    VaultWatcher (child process) ──batches──▶ Watch loop (this process, one thread)
                                                ├ documents changed  → Memory.index_paths
                                                ├ folders changed    → reconcile_dirs
                                                ├ events lost        → Memory.reconcile (full)
                                                ├ inbox/ changed     → Inbox.process, one file a step
                                                ├ every reconcile_interval_s → full reconcile
                                                └ when idle and due  → upkeep jobs

Index changes go before each inbox file, so a burst of queries delays freshness by at
most one turn.  The index lock is taken per batch, so other commands keep working beside
it.  `run_once()` is the same work without a watcher (`watch --once`, cron).  Upkeep jobs
(`UPKEEP_JOBS`) record when each last ran in `observability/upkeep.json`."""

from ._loop import Watch, WatchReport, reconcile_dirs, watch_ignore
from ._upkeep import UPKEEP_JOBS, Upkeep, UpkeepJob

__all__ = [
    "UPKEEP_JOBS",
    "Upkeep",
    "UpkeepJob",
    "Watch",
    "WatchReport",
    "reconcile_dirs",
    "watch_ignore",
]
