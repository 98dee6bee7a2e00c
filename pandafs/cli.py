"""The `pandafs` command line: thin commands over the library API.

Each command parses options, calls one library function and prints text or, with
`--json`, one JSON document.  Exit codes: 0 success, 1 a problem was found (damage,
drift, failed lines), 2 bad usage or bad input — always with a one-line message on
stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from events.errors import EventsError

from .errors import PandaError, exit_code_for
from .importer import import_turns
from .output import echo_err, emit, json_option, progress_bar
from .stats import vault_stats
from .turns import replay as replay_turns
from .vault import Vault
from .verify import verify_vault

__all__ = ["cli", "main"]


class App:
    """Per-invocation state: where the vault is.  Opened lazily by commands that need it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def vault(self) -> Vault:
        return Vault.open(self.root)


pass_app = click.make_pass_decorator(App)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    envvar="PANDAFS_ROOT",
    default="./panda-system-docs",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Vault folder (or set PANDAFS_ROOT).",
)
@click.version_option(package_name="pandafs")
@click.pass_context
def cli(ctx: click.Context, root: Path) -> None:
    """PandaFS: the file-first, event-sourced memory of a local assistant."""
    ctx.obj = App(root)


@cli.command()
@json_option
@pass_app
def init(app: App, as_json: bool) -> None:
    """Create a vault (layout, pandafs.toml, .obsidian/, home note); keeps what exists."""
    vault, created = Vault.init(app.root)
    emit(
        {"root": str(vault.root), "created": created},
        as_json,
        lambda: click.echo(f"vault ready at {vault.root} ({len(created)} entries created)"),
    )


@cli.command("import-turns")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--batch-size", type=click.IntRange(1), default=None, help="Turns per durable batch.")
@json_option
@pass_app
def import_turns_cmd(app: App, source: Path, batch_size: int | None, as_json: bool) -> None:
    """Import past turns from JSON Lines.

    Each line: {"user", "external_id"?, "timestamp", "query", "response", "meta"?}.
    Re-importing the same external_id for the same user adds nothing.
    """
    vault = app.vault()
    with source.open("rb") as handle:
        lines = sum(1 for line in handle if line.strip())
    with progress_bar(lines, "importing", quiet=as_json) as advance:
        report = import_turns(vault, source, batch_size=batch_size, progress=advance)

    def human() -> None:
        data = report.as_json()
        click.echo(
            f"imported {report.imported}, skipped {report.skipped} already present, "
            f"failed {len(report.failed)} in {data['seconds']} s ({data['turns_per_s']} turns/s)"
        )
        for failure in report.failed:
            click.echo(f"  line {failure['line']}: {failure['error']}")

    emit(report.as_json(), as_json, human)
    if report.failed:
        sys.exit(1)


@cli.command()
@click.argument("target", required=False)
@click.option("--check", is_flag=True, help="Only report drift; change nothing.")
@json_option
@pass_app
def replay(app: App, target: str | None, check: bool, as_json: bool) -> None:
    """Re-project context.md and metadata.json from events (TARGET: user or user/turn_NNNNNN)."""
    report = replay_turns(app.vault(), target, check=check)
    data: dict[str, Any] = {
        "checked": report.checked,
        "drift": [d.__dict__ for d in report.drift],
        "rewritten": report.rewritten,
        "errors": [d.__dict__ for d in report.errors],
    }

    def human() -> None:
        for d in report.drift:
            click.echo(f"drift  {d.kind:8} {d.path}")
        for d in report.errors:
            click.echo(f"error  {d.path}: {d.message}")
        verb = "found drift in" if check else "rewrote"
        count = len(report.drift) if check else len(report.rewritten)
        click.echo(f"checked {report.checked} turns; {verb} {count} files")

    emit(data, as_json, human)
    if report.errors or (check and report.drift):
        sys.exit(1)


@cli.command()
@click.option("--repair", is_flag=True, help="Move torn tails aside and re-project missing files.")
@click.argument("target", required=False)
@json_option
@pass_app
def verify(app: App, repair: bool, target: str | None, as_json: bool) -> None:
    """Check hash chains, torn tails and projections (TARGET: user or user/turn)."""
    vault = app.vault()
    report = verify_vault(vault, repair=repair, target=target)

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
        sys.exit(1)


@cli.command()
@json_option
@pass_app
def stats(app: App, as_json: bool) -> None:
    """Counts per user, content type and scope."""
    data = vault_stats(app.vault())

    def human() -> None:
        for user, counts in data["users"].items():
            parts = ", ".join(f"{k} {v}" for k, v in counts.items())
            click.echo(f"{user}: {parts}")
        click.echo("by type:  " + ", ".join(f"{k} {v}" for k, v in data["content_types"].items()))
        click.echo("by scope: " + ", ".join(f"{k} {v}" for k, v in data["scopes"].items()))

    emit(data, as_json, human)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: maps every known error to a one-line message and exit code."""
    try:
        code = cli.main(args=argv, prog_name="pandafs", standalone_mode=False)
    except click.exceptions.Abort:
        echo_err("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        echo_err(f"error: {exc.format_message()}")
        sys.exit(2 if isinstance(exc, click.UsageError | click.BadParameter) else exc.exit_code)
    except (PandaError, EventsError) as exc:
        echo_err(f"error: {exc}")
        sys.exit(exit_code_for(exc))
    except OSError as exc:
        echo_err(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
