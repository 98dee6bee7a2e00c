"""Shared pieces of the command line: the `cli` group, per-invocation state, options.

The group is lazy: `COMMANDS` (in `commands`, free of click) names each command's module
and its one-line help, so `pandafs --help` imports no command module and `pandafs search` imports only the
module holding `search` (and what that imports).  A command module registers its
commands on `cli` when it is imported, as before.
"""

from __future__ import annotations

import importlib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from events.clock import aware, out_of_range
from events.errors import InvalidUserId

from .commands import COMMANDS, DESCRIPTION, ROOT_DEFAULT, ROOT_ENV, ROOT_HELP, command_rows

if TYPE_CHECKING:
    from ..memory.api import Memory
    from ..vault import Vault

__all__ = ["COMMANDS", "App", "cli", "now_option", "parse_now", "pass_app", "user_option"]


class LazyGroup(click.Group):
    """A group whose commands are imported when one is run (or its help is shown)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"{__package__}.{COMMANDS[cmd_name][0]}")
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from `COMMANDS`, without importing any command module."""
        with formatter.section("Commands"):
            formatter.write_dl(command_rows(formatter.width))


class App:
    """Per-invocation state: where the vault is.  Opened lazily by commands that need it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def vault(self) -> Vault:
        from ..vault import Vault

        return Vault.open(self.root)

    def memory(self) -> Memory:
        from ..assembly import open_memory

        return open_memory(self.vault())


pass_app = click.make_pass_decorator(App)


def _check_user(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from events.layout import validate_user_id  # the vault layout: not for `pandafs --help`

    try:
        return validate_user_id(value)
    except InvalidUserId as exc:
        raise click.BadParameter(str(exc)) from None


def user_option(required: bool = False, help: str = "User id.") -> Any:
    return click.option("--user", "-u", required=required, callback=_check_user, help=help)


@click.group(cls=LazyGroup, help=DESCRIPTION, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    envvar=ROOT_ENV,
    default=ROOT_DEFAULT,
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help=ROOT_HELP,
)
@click.version_option(package_name="pandafs")
@click.pass_context
def cli(ctx: click.Context, root: Path) -> None:
    # no docstring: the group's help is DESCRIPTION, shared with the click-free --help
    ctx.obj = App(root)


def parse_now(ctx: click.Context, param: click.Parameter, value: str | None) -> datetime | None:
    """`--now ISO` (a naive time is UTC)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"not an ISO-8601 time: {value!r}") from None
    problem = out_of_range(parsed)
    if problem is not None:
        raise click.BadParameter(problem)
    return aware(parsed)


def now_option(help: str = "Act as if it were this time (UTC if naive).") -> Any:
    return click.option("--now", callback=parse_now, metavar="ISO", help=help)
