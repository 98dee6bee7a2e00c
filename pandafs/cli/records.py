"""Commands over the records: init, import-turns, replay, verify, stats (--since: trends)."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

import click

from events.errors import NotInVault
from events.fsio import is_real_file, open_outside_file

from ..assembly import open_memory
from ..checks import Problem
from ..errors import ProblemFound
from ..learning.api import trends
from ..output import LazyProgress, emit
from ..stats import vault_stats
from ..turn_import import import_turns
from ..turns import replay as replay_turns
from ..vault import Vault
from ..verify import default_checks, verify_vault
from .base import App, command, now_option
from .learning import print_trends


@command("init")
@click.argument("folder", required=False, type=click.Path(path_type=Path))
def init(app: App, folder: Path | None, as_json: bool) -> None:
    """FOLDER: where to make the vault, in place of --root (`pandafs init ~/assistant`)."""
    vault, created = Vault.init(folder if folder is not None else app.root)
    emit(
        {"root": str(vault.root), "created": created},
        as_json,
        lambda: click.echo(f"vault ready at {vault.root} ({len(created)} entries created)"),
    )


@command("import-turns")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Turns per durable batch.")
def import_turns_cmd(app: App, source: Path, batch_size: int | None, as_json: bool) -> None:
    """Each line: {"user", "external_id"?, "timestamp", "query", "response", "context"?, "meta"?}
    ("context": [{"heading", "text"}], shown in the turn's §2).  Re-importing the same
    external_id for the same user adds nothing, or completes its turn if the line holds more
    (a longer response, more context).  A line whose turn the index would not take
    ([index] max_file_bytes) is refused by name.
    """
    vault = app.vault()
    lines = 0  # a pipe (`<(zcat …)`) can be read once: the import reads it, the bar has no length
    if is_real_file(source):  # (what the import refuses is refused there, with its reason)
        with suppress(OSError, NotInVault), open_outside_file(source) as handle:
            lines = sum(1 for line in handle if line.strip())
    memory = open_memory(vault)
    with LazyProgress("importing", quiet=as_json) as bar:
        bar.start(lines)
        report = import_turns(
            vault,
            source,
            batch_size=batch_size,
            progress=bar.advance,
            after_batch=memory.index_docs,
        )

    def human() -> None:
        data = report.as_json()
        completed = f", completed {report.completed}" if report.completed else ""
        click.echo(
            f"imported {report.imported}{completed}, skipped {report.skipped} already present, "
            f"failed {len(report.failed)} in {data['seconds']} s ({data['turns_per_s']} turns/s)"
        )
        for failure in report.failed:
            click.echo(f"  line {failure['line']}: {failure['error']}")

    emit(report.as_json(), as_json, human)
    if report.failed:
        raise ProblemFound(f"{len(report.failed)} line(s) of {source.name} failed to import")


@command("replay")
@click.argument("target", required=False)
@click.option("--check", is_flag=True, help="Only report drift; change nothing.")
def replay(app: App, target: str | None, check: bool, as_json: bool) -> None:
    with LazyProgress("checking turns" if check else "replaying turns", quiet=as_json) as bar:
        report = replay_turns(app.vault(), target, check=check, progress=bar.advance, on_total=bar.start)

    def human() -> None:
        for d in report.drift:
            click.echo(f"drift  {d.kind:8} {d.path}")
        for d in report.errors:
            click.echo(f"error  {d.path}: {d.message}")
        verb = "found drift in" if check else "rewrote"
        count = len(report.drift) if check else len(report.rewritten)
        click.echo(f"checked {report.checked} turns; {verb} {count} files")

    emit(asdict(report), as_json, human)
    if report.errors:
        raise ProblemFound(f"{len(report.errors)} turn(s) could not be replayed")
    if check and report.drift:
        raise ProblemFound(f"drift in {len(report.drift)} file(s)")


@command("verify")
@click.option("--repair", is_flag=True, help="Move torn tails aside and re-project missing files.")
@click.option(
    "--forgotten",
    is_flag=True,
    help="Prove what was forgotten is gone: scan every file, archive row and the index (TARGET: user).",
)
@click.argument("target", required=False)
def verify(app: App, repair: bool, forgotten: bool, target: str | None, as_json: bool) -> None:
    vault = app.vault()
    if forgotten:
        _verify_forgotten(vault, target, as_json)
        return
    with LazyProgress("verifying turns", quiet=as_json) as bar:
        report = verify_vault(
            vault,
            repair=repair,
            target=target,
            checks=default_checks() if target is None else (),
            progress=bar.advance,
            on_total=bar.start,
        )

    def human() -> None:
        for p in report.repaired:
            click.echo(f"repaired {p.kind:10} {p.path}: {p.message}")
        for p in report.warnings:
            click.echo(f"warning  {p.kind:10} {p.path}: {p.message}")
        for p in report.problems:
            click.echo(f"problem  {p.kind:10} {p.path}: {p.message}")
        state = "ok" if report.ok else f"{len(report.problems)} problem(s)"
        click.echo(f"verified {report.checked_turns} turns: {state}")

    emit(report.as_json(), as_json, human)
    if not report.ok:
        raise ProblemFound(f"{len(report.problems)} problem(s) found")


def _verify_forgotten(vault: Vault, user: str | None, as_json: bool) -> None:
    from ..forget import scan_user

    users = [vault.require_user(user)] if user is not None else vault.layout.users()
    survivors = [s for u in users for s in scan_user(vault, u)]
    kind = "forgotten_survives"
    found = [Problem(s.where, kind, f"holds words forgotten by {s.forget_id}") for s in survivors]
    data = {"ok": not survivors, "problems": [p.as_json() for p in found]}

    def human() -> None:
        for s in survivors:
            click.echo(f"problem  forgotten_survives {s.where}: holds words of forget {s.forget_id}")
        click.echo("forgotten: nothing survives" if not survivors else f"{len(survivors)} place(s) hold it")

    emit(data, as_json, human)
    if survivors:
        raise ProblemFound(f"{len(survivors)} place(s) still hold forgotten words")


@command("stats")
@click.option("--since", metavar="WINDOW", help="Also show daily trends: 7d, 24h, 2w or a date.")
@now_option()
def stats(app: App, since: str | None, now: datetime | None, as_json: bool) -> None:
    vault = app.vault()
    data = vault_stats(vault)
    if since is not None:
        data.update(trends(vault, since=since, now=now))

    def human() -> None:
        for user, counts in data["users"].items():
            parts = ", ".join(f"{k} {v}" for k, v in counts.items())
            click.echo(f"{user}: {parts}")
        click.echo("by type:  " + ", ".join(f"{k} {v}" for k, v in data["content_types"].items()))
        click.echo("by scope: " + ", ".join(f"{k} {v}" for k, v in data["scopes"].items()))
        if since is not None:
            print_trends(data)

    emit(data, as_json, human)
