"""Shared pieces of the command line: the `cli` group, per-invocation state, options."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from events import validate_user_id
from events.errors import InvalidUserId

from ..memory import Memory
from ..vault import Vault

__all__ = ["App", "cli", "now_option", "parse_now", "pass_app", "user_option"]


class App:
    """Per-invocation state: where the vault is.  Opened lazily by commands that need it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def vault(self) -> Vault:
        return Vault.open(self.root)

    def memory(self) -> Memory:
        return Memory(self.vault())


pass_app = click.make_pass_decorator(App)


def _check_user(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return validate_user_id(value)
    except InvalidUserId as exc:
        raise click.BadParameter(str(exc)) from None


def user_option(required: bool = False, help: str = "User id.") -> Any:
    return click.option("--user", "-u", required=required, callback=_check_user, help=help)


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


MIN_NOW, MAX_NOW = datetime(1900, 1, 1, tzinfo=UTC), datetime(9000, 1, 1, tzinfo=UTC)


def parse_now(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """`--now ISO` (a naive time is UTC)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"not an ISO-8601 time: {value!r}") from None
    if not MIN_NOW.year <= parsed.year <= MAX_NOW.year:  # windows and TTLs are added to it
        raise click.BadParameter(f"{value!r} is out of range ({MIN_NOW.year}–{MAX_NOW.year})")
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed


def now_option(help: str = "Act as if it were this time (UTC if naive).") -> Any:
    return click.option("--now", callback=parse_now, metavar="ISO", help=help)
