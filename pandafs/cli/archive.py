"""Commands of the cold store: archive (with --dry-run) and restore."""

from __future__ import annotations

from datetime import datetime

import click

from ..archive import ArchiveReport, archive_turns, restore_turns
from ..errors import ProblemFound
from ..output import LazyProgress, emit
from .base import App, command, now_option, user_option


def _print_archive(report: ArchiveReport) -> None:
    verb = "would archive" if report.dry_run else "archived"
    for item in report.turns:
        line = f"{item['doc_id']}  {item['age_days']:>7.1f} d  {item['uses']} uses  "
        if report.dry_run:
            line += f"{item['bytes']:>9,} B, saves ~{item['saves']:,} B  ({item['reason']})"
        else:
            line += f"{item['bytes']:>9,} B  → {item['archive_file']}"
        click.echo(line)
    for item in report.kept:
        click.echo(f"kept {item['doc_id']}: {item['reason']}")
    for item in report.skipped:
        click.echo(f"skipped {item['doc_id']}: {item['reason']}")
    for note in report.recovered:
        click.echo(f"recovered {note}")
    count = len(report.turns) if report.dry_run else report.archived
    click.echo(
        f"{verb} {count} turns: {report.bytes_before:,} bytes of folders → "
        f"{report.parquet_bytes:,} bytes of Parquet + {report.stub_bytes:,} bytes of stubs "
        f"in {report.seconds:.2f} s"
    )


@command("archive")
@click.option("--age-days", type=click.IntRange(0), help="Archive turns older than this.")
@click.option("--dry-run", is_flag=True, help="Show what would be archived and why; change nothing.")
@user_option(help="Only this user's turns.")
@now_option("Judge ages and uses as of this ISO time (default: now).")
@click.option("--batch-size", type=click.IntRange(1), help="Turns per Parquet batch.")
def archive(
    app: App,
    age_days: int | None,
    dry_run: bool,
    user: str | None,
    now: datetime | None,
    batch_size: int | None,
    as_json: bool,
) -> None:
    """Defaults come from [archive] in pandafs.toml: older than 30 days and used at most
    twice in the last 30 days, or older than 365 days whatever their use.
    """
    with LazyProgress("archiving", quiet=as_json or dry_run) as bar:
        report = archive_turns(
            app.vault(),
            age_days=age_days,
            user=user,
            now=now,
            dry_run=dry_run,
            batch_size=batch_size,
            progress=bar.advance,
            on_total=bar.start,
        )
    emit(report.as_json(), as_json, lambda: _print_archive(report))


@command("restore")
@click.argument("ids", nargs=-1)
@click.option("--all", "all_turns", is_flag=True, help="Restore every archived turn (rollback).")
@click.option("--batch-size", type=click.IntRange(1), help="Turns per durable batch.")
def restore(app: App, ids: tuple[str, ...], all_turns: bool, batch_size: int | None, as_json: bool) -> None:
    if bool(ids) == all_turns:
        raise click.UsageError("give turn ids or --all (not both)")
    with LazyProgress("restoring", quiet=as_json) as bar:
        report = restore_turns(
            app.vault(),
            None if all_turns else ids,
            batch_size=batch_size,
            progress=bar.advance,
            on_total=bar.start,
        )

    def human() -> None:
        for item in report.skipped:
            click.echo(f"skipped {item['doc_id']}: {item['reason']}")
        for item in report.failed:
            click.echo(f"failed  {item['doc_id']}: {item['error']}")
        click.echo(f"restored {report.restored} turns ({report.bytes:,} bytes) in {report.seconds:.2f} s")

    emit(report.as_json(), as_json, human)
    if report.failed:
        raise ProblemFound(f"{len(report.failed)} turn(s) failed to restore")
