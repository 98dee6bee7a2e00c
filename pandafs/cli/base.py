"""Shared pieces of the command line: the `cli` group, per-invocation state, options.

The group is lazy: `COMMANDS` (in `commands`, free of click) names each command's module
and its one-line help, so `pandafs --help` imports no command module and `pandafs search` imports only the
module holding `search` (and what that imports).  A command module registers its
commands on `cli` when it is imported, as before.
"""

from __future__ import annotations

import gc
import importlib
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from events.clock import aware, out_of_range
from events.errors import InvalidUserId

from ..errors import BadInput
from .commands import COMMANDS, DESCRIPTION, ROOT_DEFAULT, ROOT_ENV, ROOT_HELP

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
        if not gc.isenabled():  # `program` imports with the collector off: the imports are done
            gc.freeze()
            gc.enable()
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from `COMMANDS`, without importing any command module."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        # each one-liner cut as click cuts a command's short help, the command not imported
        rows = [
            (name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
            for name in sorted(COMMANDS)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class App:
    """Per-invocation state: where the vault is.  Opened lazily by commands that need it.

    Without `--root` (or `PANDAFS_ROOT`) the vault is `./panda-system-docs`; in a checkout
    of PandaFS that is the example vault the repository tracks, and a command run there
    would write turns, indexes and counters into it.  So there no command opens it: each
    says, in one line, to give a vault.
    """

    def __init__(self, root: Path, *, defaulted: bool = False) -> None:
        self._root = root
        self._defaulted = defaulted

    @property
    def root(self) -> Path:
        if self._defaulted and is_repository(self._root.parent):
            raise BadInput(
                f"{self._root} is the example vault of the PandaFS repository: give your own with "
                f"--root DIR (or {ROOT_ENV}=DIR), e.g. `pandafs --root ~/assistant init`"
            )
        return self._root

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
    ctx.obj = App(root, defaulted=ctx.get_parameter_source("root") is ParameterSource.DEFAULT)


def is_repository(folder: Path) -> bool:
    """`folder` is a checkout of PandaFS (its pyproject.toml names the project)."""
    try:
        return 'name = "pandafs"' in (folder / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


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
