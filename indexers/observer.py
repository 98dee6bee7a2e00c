"""The observer process (`indexers.watcher` says why): watchdog in a fresh interpreter,
relaying raw events to the parent down a pipe, in lists, until the control pipe closes."""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import warnings
from multiprocessing.connection import Connection

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

__all__ = ["STOP_TIMEOUT_S", "child_main"]

STOP_TIMEOUT_S = 5.0

# Without this filter watchdog also asks inotify for open and close-no-write events,
# and with ~5,000 folders the kernel queue overflows at start and keeps overflowing.
_EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]


class _Sender(logging.Handler):
    """Sends messages from watchdog's threads to the parent in lists, on a thread of its own:
    the observer thread only puts, so a slow parent never stalls inotify reading.  As
    watchdog's log handler it turns its warnings into "overflow" messages: it reports a kernel
    queue overflow only as a log warning, and any warning means events may be missing."""

    def __init__(self, conn: Connection) -> None:
        super().__init__(logging.WARNING)
        self._conn = conn
        self._queue: queue.SimpleQueue[tuple[str, ...] | None] = queue.SimpleQueue()  # None: stop
        self.put = self._queue.put
        self._thread = threading.Thread(target=self._run, name="pandafs-watcher-send", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.put(("overflow", f"watchdog: {record.getMessage()}"))
        except Exception:
            self.handleError(record)

    def finish(self) -> None:
        """Send what is queued, then stop."""
        self._queue.put(None)
        self._thread.join(STOP_TIMEOUT_S)

    def _run(self) -> None:
        stop = False
        while not stop:
            queued = [self._queue.get()]  # then whatever came meanwhile, in one list
            while not self._queue.empty():
                queued.append(self._queue.get())
            messages = [m for m in queued if m is not None]
            stop = len(messages) < len(queued)
            try:
                if messages:
                    self._conn.send(messages)
            except OSError:
                return  # the parent is gone; the main loop sees EOF on the control pipe


def child_main(root: str, events_fd: int, control_fd: int) -> None:
    """Entry point of the observer process (started by `VaultWatcher.start`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    # watchdog's bookkeeping noise when a folder that left the vault comes back
    # (the kernel reuses its watch); no events are lost.
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning)
    events, control = Connection(events_fd, readable=False), Connection(control_fd, writable=False)
    sender = _Sender(events)  # events relayed to the parent until `control` is closed
    crashed = threading.Event()

    def on_thread_crash(args: threading.ExceptHookArgs) -> None:
        thread = args.thread.name if args.thread is not None else "?"
        sender.put(("error", f"watcher thread {thread} failed: {args.exc_value!r}"))
        crashed.set()

    threading.excepthook = on_thread_crash
    watchdog_logger = logging.getLogger("watchdog")
    watchdog_logger.addHandler(sender)
    watchdog_logger.setLevel(logging.WARNING)

    class Relay(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            sender.put(
                (
                    "event",
                    event.event_type,
                    os.fsdecode(event.src_path),
                    os.fsdecode(event.dest_path),
                    "d" if event.is_directory else "f",
                )
            )

    observer = Observer()
    failed = False
    try:
        observer.schedule(Relay(), root, recursive=True, event_filter=_EVENT_FILTER)
        observer.start()  # returns once every folder has its inotify watch
    except OSError as exc:
        sender.put(("error", f"cannot watch {root}: {exc}"))
        sender.finish()
        events.close()
        raise SystemExit(1) from None
    sender.put(("ready",))
    try:
        while not control.poll(0.5):  # readable = stop requested or the parent is gone
            if crashed.is_set():
                failed = True
                break
            if not observer.is_alive() or not all(e.is_alive() for e in observer.emitters):
                sender.put(("error", f"the observer stopped (is {root} still there?)"))
                failed = True
                break
    finally:
        observer.stop()
        observer.join(STOP_TIMEOUT_S)
        sender.finish()
        events.close()
        control.close()
    if failed:
        raise SystemExit(1)
