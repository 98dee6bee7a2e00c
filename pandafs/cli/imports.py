"""`pandafs import FORMAT PATH --user U`: bring in the chat histories people already have."""

from __future__ import annotations

from pathlib import Path

import click

from ..assembly import open_memory
from ..chat_import import FORMATS, import_history
from ..errors import ProblemFound
from ..output import LazyProgress, echo_err, emit
from .base import App, command, user_option


@command("import")
@click.argument("fmt", metavar="FORMAT", type=click.Choice(FORMATS))
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@user_option(required=True, help="Whose history this is: every conversation becomes this user's turns.")
def import_cmd(app: App, fmt: str, path: Path, user: str, as_json: bool) -> None:
    """\b
    chatgpt      conversations.json of a ChatGPT data export
    claude       conversations.json of a claude.ai data export
    claude-code  a Claude Code transcript (~/.claude/projects/<project>/<session>.jsonl)
                 or a folder of them

    A ZIP export is read as it comes.  Titles, times and ids are kept in each turn's meta;
    importing again adds only what is new, and completes a turn whose answer arrived since.
    The account says what became of every conversation and message: imported, already
    present, or skipped with a reason.  Entries that cannot be read are named (exit 1); the
    rest go in.  A path that is not a regular file, or larger than [index] import_max_bytes,
    or not this format, is refused before anything is written (exit 2).
    """
    vault = app.vault()
    memory = open_memory(vault)

    def counted(total: int) -> None:
        if not as_json:
            echo_err(f"read {path.name}: {total} turns to import")
        bar.start(total)

    with LazyProgress("importing", quiet=as_json) as bar:
        report = import_history(
            vault, fmt, path, user, on_total=counted, progress=bar.advance, after_batch=memory.index_docs
        )

    def human() -> None:
        completed = f", completed {report.completed}" if report.completed else ""
        click.echo(
            f"{report.conversations} conversations, {report.turns} turns: imported {report.imported}"
            f"{completed}, skipped {report.skipped} already present, failed {len(report.failed)} "
            f"({report.seconds:.1f} s)"
        )
        for line in report.account_lines():
            click.echo(line)
        for failure in report.failed:
            click.echo(f"  {failure['entry']}: {failure['error']}")

    emit(report.as_json(), as_json, human)
    if report.failed:
        raise ProblemFound(f"{len(report.failed)} entries of {path.name} failed to import")
