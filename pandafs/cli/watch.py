"""`pandafs watch`: the index in step with the vault, the inbox answered, upkeep on time."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import click

from events.clock import utcnow

from ..errors import ProblemFound
from ..output import echo_err, emit
from ..watch import Upkeep, Watch, WatchReport
from .base import App, command


@contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """Ctrl-C or SIGTERM stops the loop after the file in hand; a second Ctrl-C at once."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _summary(report: WatchReport) -> str:
    inbox = report.inbox
    upkeep = ", ".join(f"{u.job} {u.status}" for u in report.upkeep) or "nothing due"
    return (
        f"inbox: {len(inbox.of('answered'))} answered, {len(inbox.of('rejected'))} rejected, "
        f"{len(inbox.of('failed'))} failed, {len(inbox.of('deferred'))} still being written · "
        f"index: {report.index['indexed']} indexed, {report.index['deleted']} removed "
        f"({report.documents} documents) · upkeep: {upkeep} · {report.seconds:.2f} s"
    )


@command("watch")
@click.option("--once", is_flag=True, help="Process what is pending, reconcile the index, exit.")
@click.option(
    "--no-upkeep",
    is_flag=True,
    help="Skip the scheduled jobs (interrupted turns, archive, promotion, prune).",
)
@click.option("--quiet", "-q", is_flag=True, help="No log lines on stderr, only the summary.")
def watch(app: App, once: bool, no_upkeep: bool, quiet: bool, as_json: bool) -> None:
    """Runs in the foreground and logs one line per event (and a status line with the
    queue length) on stderr; Ctrl-C or SIGTERM stops it cleanly.  With --once it
    answers every pending inbox file, reconciles the index, runs upkeep if due and
    exits 1 if a file was rejected or failed.  --json prints the summary as JSON.
    """
    vault = app.vault()
    log = (lambda line: None) if quiet else (lambda line: echo_err(f"{utcnow():%H:%M:%S} {line}"))
    upkeep = Upkeep(vault, log=log, interval_s=0.0 if no_upkeep else None)
    runner = Watch(vault, log=log, upkeep=upkeep)
    try:
        if once:
            report = runner.run_once()
        else:
            with _stop_on_signals() as stop:
                report = runner.run(stop)
    finally:
        runner.close()
    emit(report.as_json(), as_json, lambda: click.echo(_summary(report)))
    if once and not report.ok:
        raise ProblemFound("the run did not go cleanly: failed or rejected files, problems or upkeep errors")
