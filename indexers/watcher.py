"""Watch a vault and hand debounced batches of changed paths to one consumer.

    child process                          parent process (the consumer's)
    ─────────────                          ───────────────────────────────
    watchdog Observer (inotify)            pump thread: filter, debounce ──▶ next_batch()
      └ handler ─▶ buffer ─▶ sender ─pipe─▶   (paths, rescan_dirs, overflow)

A child process, because an observer in our process competes for the GIL on every event;
a fresh interpreter (`subprocess`: never a fork of a threaded parent, nor multiprocessing's
spawn, which re-runs the parent's main script) importing only `indexers.observer`.

Batches of paths, not events: inotify is lossy and editors' event shapes vary, so an event
only means "this path may have changed" and the consumer confirms by checksum.
`rescan_dirs` names every folder created, moved or deleted; `overflow` relays any watchdog
warning (a kernel queue overflow is only logged): the consumer answers with a reconcile.

When the child dies, the pending changes come in a last batch with `overflow=True` and
`error` set, `alive` turns False, and the next `next_batch` raises `WatcherError`; the
consumer decides whether to `start()` again.  No hidden restart loop."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Literal, Self

from watchdog.events import EVENT_TYPE_MOVED

from events.fsio import is_temp_name

from .errors import IndexingError
from .observer import STOP_TIMEOUT_S, child_main

__all__ = ["ChangeBatch", "VaultWatcher", "WatcherError", "default_ignore"]

logger = logging.getLogger(__name__)

_IDLE_POLL_S = 1.0


class WatcherError(IndexingError):
    """The watcher could not start, or its observer process has died."""


def default_ignore(rel_path: str) -> bool:
    """True for paths no consumer cares about: dot-files and dot-folders (`.obsidian/`,
    `.trash/`, `inbox/.processing/`), the derived `indexes/` folder, and temporary files."""
    parts = rel_path.split("/")
    return parts[0] == "indexes" or any(part.startswith(".") for part in parts) or is_temp_name(parts[-1])


@dataclass
class ChangeBatch:
    """Everything that may have changed in the vault since the previous batch (gathered by
    the watcher until it is due, then handed to the consumer, merged into one not yet taken)."""

    paths: set[str] = field(default_factory=set)
    """Vault-relative POSIX paths of files that may have changed (any kind of file)."""
    rescan_dirs: set[str] = field(default_factory=set)
    """Vault-relative folders whose whole subtree must be rescanned (or dropped if gone)."""
    overflow: bool = False
    """Events may have been lost: run a full reconcile scan."""
    first_seen: float = 0.0
    """`time.monotonic()` when the oldest change in this batch reached the watcher."""
    error: str | None = None
    """Set on the last batch of a watcher whose observer process died."""
    last_seen: float = 0.0
    """`time.monotonic()` when the latest change in this batch reached the watcher."""

    def merge(self, later: ChangeBatch) -> ChangeBatch:
        """This batch with the changes of `later` added."""
        self.paths |= later.paths
        self.rescan_dirs |= later.rescan_dirs
        self.overflow = self.overflow or later.overflow
        self.first_seen = min(self.first_seen, later.first_seen)
        self.last_seen = max(self.last_seen, later.last_seen)
        self.error = later.error or self.error
        return self


_State = Literal["new", "running", "stopped", "dead"]


def _reap(proc: subprocess.Popen[bytes] | None) -> int | None:
    """The exit code of the observer process once it has ended (killed after STOP_TIMEOUT_S)."""
    if proc is None:
        return None
    try:
        return proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


class VaultWatcher:
    """Batches of changed vault-relative paths, sealed after `debounce_s` of quiet or when the
    oldest change is `max_delay_s` old (merged for a slow consumer); `ignore(rel_path)` drops
    paths nobody should index (extend `default_ignore`)."""

    def __init__(
        self,
        root: Path,
        *,
        debounce_s: float = 0.25,
        max_delay_s: float = 2.0,
        ignore: Callable[[str], bool] = default_ignore,
    ) -> None:
        if debounce_s <= 0 or max_delay_s < debounce_s:
            raise ValueError("need 0 < debounce_s <= max_delay_s")
        self.root = Path(root)
        self.debounce_s = debounce_s
        self.max_delay_s = max_delay_s
        self._ignore = ignore
        self._watched = os.path.abspath(self.root)
        self._prefix = os.path.join(self._watched, "")
        self._cond = threading.Condition()
        self._state: _State = "new"
        self._stopping = False
        self._open: ChangeBatch | None = None  # not yet due
        self._ready: ChangeBatch | None = None  # due, not yet taken
        self._error: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._events: Connection | None = None
        self._control: Connection | None = None
        self._pump_thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Start the observer process; return once every folder of the vault is watched, so a
        file written afterwards is seen.  `WatcherError` if the vault cannot be watched or the
        observer is not ready within `timeout`.  Restarts a stopped or dead watcher."""
        with self._cond:
            if self._state == "running":
                return
        self._release()
        if not os.path.isdir(self._watched):
            raise WatcherError(f"cannot watch {self._watched}: not a folder")
        boot = (
            "import sys; sys.path[:] = sys.argv[4:]; "
            f"from {child_main.__module__} import child_main; "
            "child_main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))"
        )
        with ExitStack() as ours:  # our ends of the pipes, closed if the child does not start
            events, events_w = Pipe(duplex=False)
            ours.callback(events.close)
            with events_w:  # the child's ends, closed here once it has them (or failed)
                control_r, control = Pipe(duplex=False)
                ours.callback(control.close)
                with control_r:
                    fds = (events_w.fileno(), control_r.fileno())
                    proc = subprocess.Popen(
                        [sys.executable, "-c", boot, self._watched, *map(str, fds), *map(str, sys.path)],
                        stdin=subprocess.DEVNULL,
                        pass_fds=fds,
                        start_new_session=True,  # the terminal's Ctrl-C is the parent's to handle
                    )
            ours.pop_all()
        self._proc, self._events, self._control = proc, events, control
        with self._cond:
            self._error = None  # unread batches of an earlier run are kept
            self._stopping = False
        try:
            self._wait_ready(events, timeout)
        except BaseException:
            self._release()
            raise
        with self._cond:
            self._state = "running"
        self._pump_thread = threading.Thread(
            target=self._pump, args=(events,), name="pandafs-watcher-pump", daemon=True
        )
        self._pump_thread.start()

    def stop(self) -> None:
        """Stop the observer and the pump thread; idempotent.  Changes seen stay for `next_batch`."""
        with self._cond:
            self._stopping = True
        self._release()
        with self._cond:
            if self._state in ("running", "dead"):
                self._state = "stopped"
            self._seal_locked()
            self._cond.notify_all()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- consumer side -----------------------------------------------------------

    def next_batch(self, timeout: float | None = None) -> ChangeBatch | None:
        """Block until a batch is due and return it; None on timeout or once stopped.
        `WatcherError` once the dead observer's last batch has been returned."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._ready is not None:
                    batch, self._ready = self._ready, None
                    return batch
                if self._state == "dead":
                    raise WatcherError(self._error or "watcher process died")
                if self._state == "new":
                    raise WatcherError("the watcher is not started")
                if self._state == "stopped":
                    return None
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)

    @property
    def pending(self) -> int:
        """Changed paths and folders seen but not yet returned by `next_batch`."""
        with self._cond:
            batches = [batch for batch in (self._ready, self._open) if batch is not None]
            return sum(len(batch.paths) + len(batch.rescan_dirs) for batch in batches)

    @property
    def alive(self) -> bool:
        """True while the observer process is running and reporting."""
        with self._cond:
            return self._state == "running"

    @property
    def pid(self) -> int | None:
        """Process id of the observer process (for status lines and diagnostics)."""
        proc = self._proc
        return None if proc is None else proc.pid

    # -- internals ---------------------------------------------------------------

    def _wait_ready(self, conn: Connection, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0 or not conn.poll(remaining):
                    raise WatcherError(f"the watcher was not ready within {timeout:g} s")
                messages = conn.recv()
            except (EOFError, OSError) as exc:
                raise WatcherError("the watcher process exited while starting") from exc
            with self._cond:
                ready = self._apply_locked(messages, time.monotonic())
            if self._error is not None:
                raise WatcherError(self._error)
            if ready:
                return

    def _pump(self, conn: Connection) -> None:
        """Receive event lists from the child and seal batches when they are due."""
        try:
            while True:
                with self._cond:
                    wait = self._flush_due_locked(time.monotonic())
                if conn.poll(_IDLE_POLL_S if wait is None else wait):
                    messages = conn.recv()
                    with self._cond:
                        self._apply_locked(messages, time.monotonic())
        except (EOFError, OSError):
            pass  # the child closed its end: it stopped or died
        except Exception as exc:  # a bug, or a consumer's ignore() raising
            logger.exception("watcher pump failed")
            self._error = f"watcher pump failed: {exc!r}"
            proc = self._proc
            if proc is not None:
                proc.kill()
        self._child_gone()

    def _child_gone(self) -> None:
        code = _reap(self._proc)
        with self._cond:
            if not self._stopping:
                self._error = self._error or f"watcher process exited (exit code {code})"
                logger.error("%s", self._error)
                pending = self._pending(time.monotonic())
                pending.overflow = True
                pending.error = self._error
                self._state = "dead"
            self._seal_locked()
            self._cond.notify_all()

    def _release(self) -> None:
        """Stop the child, join the pump thread, close the pipes (safe to call twice)."""
        proc, events, control, pump = self._proc, self._events, self._control, self._pump_thread
        if control is not None:
            control.close()  # EOF on the control pipe tells the child to stop
        _reap(proc)
        if pump is not None and pump is not threading.current_thread():
            pump.join()
        if events is not None:
            events.close()
        self._proc = self._events = self._control = self._pump_thread = None

    def _flush_due_locked(self, now: float) -> float | None:
        """Seal the pending changes if due; return seconds until they will be, or None."""
        pending = self._open
        if pending is None:
            return None
        due = min(pending.last_seen + self.debounce_s, pending.first_seen + self.max_delay_s)
        if now < due:
            return due - now
        self._seal_locked()
        self._cond.notify_all()
        return None

    def _seal_locked(self) -> None:
        if self._open is not None:
            self._ready = self._open if self._ready is None else self._ready.merge(self._open)
            self._open = None

    def _pending(self, now: float) -> ChangeBatch:
        """The changes not yet due, `now` the time of the latest."""
        if self._open is None:
            self._open = ChangeBatch(first_seen=now)
        self._open.last_seen = now
        return self._open

    def _apply_locked(self, messages: list[tuple[str, ...]], now: float) -> bool:
        """Fold messages from the child into the pending changes; True if one said "ready"."""
        ready = False
        for message in messages:
            kind = message[0]
            if kind == "event":
                _, event_type, src, dest, is_dir = message
                for path in (src, dest) if event_type == EVENT_TYPE_MOVED else (src,):
                    self._note(path, is_dir == "d", now)
            elif kind == "overflow":
                logger.warning("events may have been lost: %s", message[1])
                self._pending(now).overflow = True
            elif kind == "ready":
                ready = True
            elif kind == "error":
                self._error = message[1]
        return ready

    def _note(self, path: str, is_dir: bool, now: float) -> None:
        """Record one end of an event, if it is a change the consumer wants."""
        if not path.startswith(self._prefix):
            if is_dir and path == self._watched:
                self._pending(now).overflow = True  # the vault folder itself moved or vanished
            return
        rel = path[len(self._prefix) :].replace(os.sep, "/")
        if rel and not self._ignore(rel):
            pending = self._pending(now)
            (pending.rescan_dirs if is_dir else pending.paths).add(rel)
