"""Shared pieces of the command line: the `cli` group, per-invocation state, options.

The group is lazy: `COMMANDS` names each command's module and its one-line help, so
`pandafs --help` imports no command module and `pandafs search` imports only the
module holding `search` (and what that imports).  A command module registers its
commands on `cli` when it is imported, as before.
"""

from __future__ import annotations

import importlib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from events.errors import InvalidUserId

if TYPE_CHECKING:
    from ..memory import Memory
    from ..vault import Vault

__all__ = ["COMMANDS", "App", "cli", "now_option", "parse_now", "pass_app", "user_option"]

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
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from `COMMANDS`, without importing any command module."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            loaded = self.commands.get(name)
            if loaded is not None:
                rows.append((name, loaded.get_short_help_str(limit)))
            else:
                rows.append((name, click.utils.make_default_short_help(COMMANDS[name][1], limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


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


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
