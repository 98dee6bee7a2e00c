"""Shared pieces of the command line: the lazy `cli` group, per-invocation state, options.

`COMMANDS` names each command's module and one-line help: `pandafs --help` imports no command
module, `pandafs search` only the one holding `search`, which registers its commands on `cli`.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from events.clock import aware, out_of_range
from events.errors import InvalidUserId

from ..errors import BadInput

if TYPE_CHECKING:
    from ..memory.api import Memory
    from ..vault import Vault

__all__ = ["COMMANDS", "App", "cli", "command", "now_option", "parse_now", "user_option"]

ROOT_ENV = "PANDAFS_ROOT"

# command → (module under pandafs.cli, the first line of its help: shown by --help)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("records", "Create a vault (layout, pandafs.toml, .obsidian/, home note); keeps what exists."),
    "ask": ("turns", "Run one turn through the pipeline and print the answer."),
    "watch": ("watch", "Keep the search index in step with the vault and answer queries dropped in inbox/."),
    "search": ("memory", "Unified search over every document (natural language or keywords)."),
    "retrieve": ("memory", "Print one document by id (alice/turn_000001) or vault-relative path."),
    "save": ("memory", "Save a memory document and index it."),
    "import-turns": ("records", "Import past turns from JSON Lines."),
    "import": ("imports", "Import a chat history: each question and its answer become one turn."),
    "rebuild": ("memory", "Rebuild every derived artefact from the files: the index, trust, the catalog."),
    "archive": ("archive", "Move old, rarely used turns to Parquet, leaving a searchable summary stub."),
    "restore": ("archive", "Put archived turns (IDS like alice/turn_000001) back as byte-identical folders."),
    "replay": (
        "records",
        "Re-project context.md and metadata.json from events (TARGET: user or user/turn_NNNNNN).",
    ),
    "verify": ("records", "Check hash chains, torn tails and projections (TARGET: user or user/turn)."),
    "promote": ("learning", "Run scope promotion and demotion (new → user → global) now."),
    "prune": ("learning", "Move expired documents to the archive (archive/expired/…); nothing is deleted."),
    "edit": ("forgetting", "Change a memory document: an entry's text, or a memory's text, title, topic."),
    "delete": ("forgetting", "Delete a memory document or entry: it moves to archive/expired/."),
    "forget": ("forgetting", "Remove a statement, memory or turn from everything the vault keeps."),
    "tools": ("turns", "The memory tools as LLM tool schemas (OpenAI function-calling format)."),
    "mcp": ("mcp", "Serve the memory tools and documents over MCP, bound to one user."),
    "stats": ("records", "Counts per user, content type and scope; with --since, the daily rollups."),
}


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
        """The command list from `COMMANDS` (cut as click cuts a short help), nothing imported."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, click.Command(name, help=COMMANDS[name][1]).get_short_help_str(limit))
            for name in sorted(COMMANDS)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


class App:
    """Per-invocation state: where the vault is (opened by the commands that need it).

    Without `--root` (or `PANDAFS_ROOT`) the vault is `./panda-system-docs`; in a checkout of
    PandaFS that is the tracked example vault, which no command opens: each asks for a vault.
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


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    envvar=ROOT_ENV,
    default="./panda-system-docs",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help=f"Vault folder (or set {ROOT_ENV}).",
)
@click.version_option(package_name="pandafs")
@click.pass_context
def cli(ctx: click.Context, root: Path) -> None:
    """PandaFS: the file-first, event-sourced memory of a local assistant."""
    ctx.obj = App(root, defaulted=ctx.get_parameter_source("root") is ParameterSource.DEFAULT)


def command(name: str, *, json: bool = True) -> Callable[[Callable[..., Any]], click.Command]:
    """Register `name` on `cli`: its help is its one-liner in `COMMANDS`, then the docstring.
    The function is called with the `App` first and, unless `json=False`, `--json` as `as_json`
    (one JSON document on stdout: `output.emit`)."""

    def register(fn: Callable[..., Any]) -> click.Command:
        import inspect

        more = inspect.cleandoc(fn.__doc__ or "")
        cmd = cli.command(name, help=COMMANDS[name][1] + (f"\n\n{more}" if more else ""))(pass_app(fn))
        if json:
            cmd.params.append(
                click.Option(["--json", "as_json"], is_flag=True, help="Print one JSON document on stdout.")
            )
        return cmd

    return register


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
