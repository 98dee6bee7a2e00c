"""The watch loop over one vault: the watcher's batches become index work (only changed folders
are reconciled), one inbox file a step, periodic reconciles and upkeep, a status line, a report."""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from events.layout import NOT_DOCUMENTS, classify
from indexers.errors import IndexBusy, IndexDamaged, without_advice
from indexers.sync import SyncReport, scan_documents
from indexers.watcher import ChangeBatch, VaultWatcher, WatcherError, default_ignore

from ..assembly import open_memory
from ..errors import Busy
from ..inbox import Inbox, InboxReport, InboxResult, is_query_candidate
from ..memory.api import Memory
from ..vault import Vault
from ._upkeep import Log, Upkeep, UpkeepResult

MAX_RESCAN_DIRS = 64
"""More changed folders than this in one batch: one full reconcile is cheaper."""
IDLE_WAIT_S = 0.25
"""Longest the loop blocks, so a stop request is seen quickly."""
INDEX_RETRY_S = 1.0
ERROR_RETRY_S = 10.0
REBUILD_AGAIN_S = 600.0
"""Damaged again this soon after a rebuild: the disk is failing, the watch ends with it."""
WATCHER_RESTARTS = 3
STATUS_EVERY_S = 10.0

_UNWATCHED = ("outbox/", "inbox/processed/", "inbox/rejected/", "observability/", "archive/turns/")


def watch_ignore(rel_path: str) -> bool:
    """Paths the watch loop never needs: `default_ignore`, answers, filed queries, observability, archive."""
    return default_ignore(rel_path) or (rel_path + "/").startswith(_UNWATCHED)


def reconcile_dirs(memory: Memory, dirs: Iterable[str]) -> SyncReport:
    """Reconcile only these vault-relative folders: index what changed, drop what left."""
    started = time.perf_counter()
    tops = sorted(set(dirs))
    tops = [d for d in tops if not any(d.startswith(o + "/") for o in tops if o != d)]
    root = memory.vault.root
    state = memory.index.state()
    wanted: set[str] = set()
    unchanged = 0
    for top in tops:
        files = scan_documents(root, top)
        for rel, (mtime, size) in files.items():
            known = state.get(rel)
            if known is None or (known.mtime_ns, known.size) != (mtime, size):
                wanted.add(rel)
            else:
                unchanged += 1
        prefix = top + "/"
        wanted.update(p for p in state if p.startswith(prefix) and p not in files)
    report = memory.index_paths(sorted(wanted)) if wanted else SyncReport()
    report.unchanged += unchanged
    report.seconds = time.perf_counter() - started
    return report


def brief_paths(paths: Iterable[str], limit: int = 3) -> str:
    """The first `limit` paths, sorted, and how many more (for a log line)."""
    items = sorted(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" +{len(items) - limit} more" if len(items) > limit else "")


def mtime_of(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


@dataclass
class WatchReport:
    """What a watch run did (cumulative for the foreground loop)."""

    inbox: InboxReport = field(default_factory=InboxReport)
    index: dict[str, int] = field(
        default_factory=lambda: {"indexed": 0, "deleted": 0, "unchanged": 0, "skipped": 0}
    )
    reconciles: int = 0
    documents: int = 0
    upkeep: list[UpkeepResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (
            self.problems
            or self.inbox.of("failed")
            or self.inbox.of("rejected")
            or any(u.status == "error" for u in self.upkeep)
        )

    def add_sync(self, report: SyncReport) -> None:
        self.index["indexed"] += report.indexed
        self.index["deleted"] += report.deleted
        self.index["unchanged"] += report.unchanged
        self.index["skipped"] += len(report.skipped)
        if report.documents:
            self.documents = report.documents

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "inbox": self.inbox.as_json(),
            "index": {**self.index, "documents": self.documents, "reconciles": self.reconciles},
            "upkeep": [u.as_json() for u in self.upkeep],
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
        }


class Watch:
    """The watch loop over one vault.  `run(stop)` until `stop` is set; `run_once()`."""

    def __init__(
        self,
        vault: Vault,
        *,
        upkeep: Upkeep | None = None,
        log: Log | None = None,
    ) -> None:
        self.vault = vault
        cfg = vault.config.watch
        self._log = log or (lambda line: None)
        self.memory = open_memory(vault)
        self.inbox = Inbox(vault, memory=self.memory, log=self._log)
        self.upkeep = upkeep or Upkeep(vault, log=self._log)
        self.debounce_s = max(cfg.debounce_ms, 1) / 1000.0
        self.max_delay_s = max(cfg.max_delay_ms / 1000.0, self.debounce_s)
        self.reconcile_interval_s = cfg.reconcile_interval_s
        self.watcher: VaultWatcher | None = None
        self.report = WatchReport()
        self._paths: set[str] = set()
        self._dirs: set[str] = set()
        self._full = False
        self._first_seen: float | None = None
        self._index_retry_at = 0.0
        self._rebuilt_at = -math.inf
        self._queue: deque[str] = deque()
        self._inbox_dirty = True
        self._inbox_wake: float | None = None
        self._next_reconcile = 0.0
        self._next_upkeep_check = 0.0
        self._next_claim_retry = 0.0
        self._last_status = 0.0
        self._was_busy = False
        self._started = time.monotonic()
        self._skips_reported: dict[str, tuple[str, str]] = {}

    def close(self) -> None:
        self.inbox.close()

    def run_once(self) -> WatchReport:
        """Answer every pending inbox file, reconcile the index, run upkeep if due."""
        started = time.perf_counter()
        report = self.report
        report.inbox = self.inbox.process_pending(final=True, on_result=lambda r: self._log(r.describe()))
        self._reconcile()
        report.upkeep += self.upkeep.run_due()
        report.seconds = time.perf_counter() - started
        return report

    def run(self, stop: threading.Event) -> WatchReport:
        """Watch until `stop` is set (Ctrl-C / SIGTERM); finishes the file in hand first."""
        started = time.perf_counter()
        self.watcher = VaultWatcher(
            self.vault.root,
            debounce_s=self.debounce_s,
            max_delay_s=self.max_delay_s,
            ignore=watch_ignore,
        )
        self.watcher.start()
        self._log(
            f"watching {self.vault.root} (observer pid {self.watcher.pid}, "
            f"debounce {self.debounce_s * 1000:.0f} ms, reconcile every "
            f"{self.reconcile_interval_s:g} s, upkeep "
            + (f"every {self.upkeep.interval_s / 3600:g} h)" if self.upkeep.enabled else "off)")
        )
        try:
            self._reconcile()
            for result in self.inbox.recover():
                self._note_inbox(result)
            while not stop.is_set():
                self._step()
        finally:
            self.watcher.stop()
            self.report.seconds = time.perf_counter() - started
            self._log("stopped; " + self.status_line())
        return self.report

    def handle_batch(self, batch: ChangeBatch) -> None:
        """Bring the index in step with one batch of changes (and note inbox work)."""
        self._absorb(batch)
        self._sync_index()

    def _step(self) -> None:
        batch = self._next_batch(self._wait_s())
        if batch is not None:
            self._absorb(batch)
        self._sync_index()
        if not self._inbox_step():
            self._periodic()
        self._maybe_status()

    def _next_batch(self, timeout: float) -> ChangeBatch | None:
        assert self.watcher is not None
        try:
            return self.watcher.next_batch(timeout=timeout)
        except WatcherError as exc:
            self._log(f"watcher stopped: {exc}; restarting it and reconciling")
            self._restart_watcher()
            return None

    def _restart_watcher(self) -> None:
        assert self.watcher is not None
        for attempt in range(1, WATCHER_RESTARTS + 1):
            if not self.vault.root.is_dir():
                raise WatcherError(f"the vault {self.vault.root} is gone")
            try:
                self.watcher.start()
            except WatcherError as exc:
                self._log(f"restart {attempt} failed: {exc}")
                time.sleep(attempt)
                continue
            self._full = True
            self._inbox_dirty = True
            return
        raise WatcherError(f"the watcher could not be restarted after {WATCHER_RESTARTS} tries")

    def _wait_s(self) -> float:
        now = time.monotonic()
        if (self._has_index_work() and now >= self._index_retry_at) or self._queue or self._inbox_dirty:
            return 0.0
        deadlines = [self._next_reconcile, self._next_upkeep_check, self._next_claim_retry]
        if self._inbox_wake is not None:
            deadlines.append(self._inbox_wake)
        if self._has_index_work():
            deadlines.append(self._index_retry_at)
        return max(0.0, min(IDLE_WAIT_S, *(d - now for d in deadlines)))

    def _absorb(self, batch: ChangeBatch) -> None:
        if batch.error:
            self._log(f"watcher: {batch.error}")
        if self._first_seen is None or batch.first_seen < self._first_seen:
            self._first_seen = batch.first_seen
        if batch.overflow:
            self._full = True
            self._inbox_dirty = True
        self._paths.update(p for p in batch.paths if classify(p) is not None)
        self._dirs.update(d for d in batch.rescan_dirs if d.split("/")[0] not in NOT_DOCUMENTS)
        if any(is_query_candidate(p) for p in batch.paths) or any(
            d == "inbox" or d.startswith("inbox/") for d in batch.rescan_dirs
        ):
            self._inbox_dirty = True

    def _has_index_work(self) -> bool:
        return self._full or bool(self._paths or self._dirs)

    def _sync_index(self) -> None:
        if not self._has_index_work() or time.monotonic() < self._index_retry_at:
            return
        if self._full or len(self._dirs) > MAX_RESCAN_DIRS:
            self._reconcile()
            return
        paths, dirs, first = self._paths, self._dirs, self._first_seen
        self._drop_index_work()
        started = time.perf_counter()
        try:
            report = SyncReport()
            if dirs:
                report = reconcile_dirs(self.memory, dirs)
                paths = {p for p in paths if not any(p.startswith(d + "/") for d in dirs)}
            if paths:
                report.add(self.memory.index_paths(sorted(paths)))
        except IndexDamaged as exc:
            self._rebuild(without_advice(str(exc)), damage=exc)
            return
        except (IndexBusy, Busy, OSError) as exc:  # a schema mismatch (IndexIncompatible) ends the watch
            self._paths |= paths
            self._dirs |= dirs
            self._first_seen = first
            self._retry_later(exc, "indexing failed")
            return
        self.report.add_sync(report)
        self._log_skips(report)
        if report.indexed or report.deleted:
            took = time.perf_counter() - started
            since = f", {time.monotonic() - first:.2f} s after the change" if first else ""
            self._log(
                f"indexed {report.indexed}, removed {report.deleted} "
                f"({brief_paths(paths | dirs)}) in {took:.2f} s{since}"
            )

    def _drop_index_work(self) -> None:
        self._paths, self._dirs, self._first_seen = set(), set(), None

    def _reconcile(self) -> None:
        self._full = False
        self._drop_index_work()
        try:
            report = self.memory.reconcile()
        except IndexDamaged as exc:
            self._rebuild(without_advice(str(exc)), damage=exc)
            return
        except (IndexBusy, Busy, OSError) as exc:
            self._full = True
            self._retry_later(exc, "reconcile failed")
            return
        self.report.reconciles += 1
        self.report.add_sync(report)
        self._log_skips(report)
        interval = self.reconcile_interval_s
        self._next_reconcile = time.monotonic() + interval if interval > 0 else math.inf
        if report.indexed or report.deleted or self.report.reconciles == 1:
            self._log(
                f"reconciled {report.documents} documents: {report.indexed} indexed, "
                f"{report.deleted} removed, {report.unchanged} unchanged in {report.seconds:.2f} s"
            )
        mismatch = report.out_of_step()
        if mismatch is not None:
            self._rebuild(mismatch)

    def _retry_later(self, exc: Exception, failed: str) -> None:
        """Index work failed with `exc`: try again soon if the index was busy, else later."""
        busy = isinstance(exc, IndexBusy | Busy)
        self._index_retry_at = time.monotonic() + (INDEX_RETRY_S if busy else ERROR_RETRY_S)
        self._log(f"{'index busy' if busy else failed}, will retry: {exc}")

    def _rebuild(self, why: str, *, damage: IndexDamaged | None = None) -> None:
        """Make the index anew from the documents, as `verify --repair` does (damaged, or holding
        documents its state does not record).  At most once per `REBUILD_AGAIN_S`: damage back
        sooner is the disk failing (raised)."""
        if time.monotonic() - self._rebuilt_at < REBUILD_AGAIN_S:
            if damage is not None:
                raise damage
            self._log(
                f"{why}; rebuilt less than {REBUILD_AGAIN_S:g} s ago, left to `pandafs verify --repair`"
            )
            return
        self._log(f"{why}; rebuilding it from the documents")
        self._drop_index_work()
        try:
            report = self.memory.rebuild()  # built beside the damaged one, then swapped in
        except (IndexBusy, Busy, OSError) as busy:
            self._full = True
            self._index_retry_at = time.monotonic() + INDEX_RETRY_S
            self._log(f"rebuild could not start, will retry: {busy}")
            return
        self._rebuilt_at = time.monotonic()
        self._full = False
        self._log(f"rebuilt the index: {report.indexed} documents in {report.seconds:.2f} s")

    def _log_skips(self, report: SyncReport) -> None:
        for skipped in report.skipped:
            key = (skipped.reason, str(mtime_of(self.vault.root / skipped.path)))
            if self._skips_reported.get(skipped.path) != key:
                self._skips_reported[skipped.path] = key
                self._log(f"not indexed {skipped.path}: {skipped.reason}")

    def _inbox_step(self) -> bool:
        """Handle at most one inbox file; True if one was handled (or tried)."""
        now = time.monotonic()
        if self._inbox_dirty or (self._inbox_wake is not None and now >= self._inbox_wake):
            self._inbox_dirty = False
            self._inbox_wake = None
            self._queue = deque(self.inbox.pending())
        while self._queue:
            rel = self._queue.popleft()
            wait = self.inbox.readiness(rel)
            if wait is None:
                continue
            if wait > 0:
                due = now + wait
                self._inbox_wake = due if self._inbox_wake is None else min(self._inbox_wake, due)
                continue
            try:
                results = self.inbox.process(rel)
            except Busy as exc:
                self._log(f"inbox busy, will retry {rel}: {exc}")
                self._inbox_wake = now + INDEX_RETRY_S
                return True
            except OSError as exc:  # e.g. no permission to move it: say so, try again later
                self._log(f"cannot claim {rel}: {exc}")
                self._inbox_wake = now + ERROR_RETRY_S
                return True
            for result in results:
                self._note_inbox(result)
            return True
        return False

    def _note_inbox(self, result: InboxResult) -> None:
        self.report.inbox.results.append(result)
        self._log(result.describe())

    def _periodic(self) -> None:
        now = time.monotonic()
        if now >= self._next_claim_retry:
            self._next_claim_retry = now + 5.0
            with suppress(Busy):  # (`recover` looks for claims before it takes the inbox's lock)
                for result in self.inbox.recover():
                    self._note_inbox(result)
        if now >= self._next_reconcile and now >= self._index_retry_at:
            self._reconcile()
        if now >= self._next_upkeep_check:
            self._next_upkeep_check = now + 60.0
            self.report.upkeep += self.upkeep.run_due()  # (nothing when none is due)
            wait = self.upkeep.seconds_until_due()
            if wait is not None:
                self._next_upkeep_check = now + min(max(wait, 1.0), 3600.0)

    def queue_length(self) -> int:
        """Changes and files waiting: inbox files, index paths and folders, watcher backlog."""
        backlog = self.watcher.pending if self.watcher is not None else 0
        return len(self._queue) + len(self._paths) + len(self._dirs) + int(self._full) + backlog

    def status_line(self) -> str:
        inbox = self.report.inbox
        up = time.monotonic() - self._started
        return (
            f"status: queue {self.queue_length()} "
            f"(inbox {len(self._queue)}, index {len(self._paths) + len(self._dirs)}) · "
            f"answered {len(inbox.of('answered'))} · rejected {len(inbox.of('rejected'))} · "
            f"failed {len(inbox.of('failed'))} · indexed {self.report.index['indexed']} · "
            f"removed {self.report.index['deleted']} · up {up:.0f} s"
        )

    def _maybe_status(self) -> None:
        now = time.monotonic()
        busy = self.queue_length() > 0
        settled = self._was_busy and not busy
        self._was_busy = busy
        elapsed = now - self._last_status
        if settled or (busy and elapsed >= STATUS_EVERY_S) or elapsed >= 30 * STATUS_EVERY_S:
            self._last_status = now
            self._log(self.status_line())
