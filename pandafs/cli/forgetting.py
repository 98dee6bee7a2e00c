"""Commands that change or take back what a person told their assistant: edit, delete, forget."""

from __future__ import annotations

from datetime import datetime

import click

from ..errors import ProblemFound
from ..output import emit
from .base import App, command, now_option, user_option

_ENTRY_HELP = "An entry of preferences.md / facts.md: its number in the list or its key."


@command("edit")
@click.argument("doc_id")
@user_option(required=True, help="Owner of the document (ownership comes from its path).")
@click.option("--text", help="The new text (an entry's value, or a memory's body).")
@click.option("--entry", help=_ENTRY_HELP)
@click.option("--title", help="A memory's new title.")
@click.option("--topic", help="A memory's new topic.")
@click.option("--keywords", help="Comma-separated keywords (replace the old ones).")
@now_option()
def edit(
    app: App,
    doc_id: str,
    user: str,
    text: str | None,
    entry: str | None,
    title: str | None,
    topic: str | None,
    keywords: str | None,
    now: datetime | None,
    as_json: bool,
) -> None:
    from ..memory.editing import edit_document

    words = keywords.split(",") if keywords is not None else None
    changed = edit_document(
        app.vault(), doc_id, user, text=text, entry=entry, title=title, topic=topic, keywords=words, now=now
    )
    what = f" entry {changed.entry}" if changed.entry else ""
    emit(changed.as_json(), as_json, lambda: click.echo(f"edited {changed.doc_id}{what}"))


@command("delete")
@click.argument("doc_id")
@user_option(required=True, help="Owner of the document (ownership comes from its path).")
@click.option("--entry", help=_ENTRY_HELP)
@now_option()
def delete(app: App, doc_id: str, user: str, entry: str | None, now: datetime | None, as_json: bool) -> None:
    from ..memory.editing import delete_document

    changed = delete_document(app.vault(), doc_id, user, entry=entry, now=now)
    what = f" entry {changed.entry}" if changed.entry else ""
    emit(
        changed.as_json(),
        as_json,
        lambda: click.echo(f"deleted {changed.doc_id}{what} → {changed.moved_to} (not searchable)"),
    )


@command("forget")
@click.argument("query_or_id")
@user_option(required=True, help="Whose memory forgets.")
@click.option("--dry-run", is_flag=True, help="List every file that would change; change nothing.")
@now_option()
def forget(app: App, query_or_id: str, user: str, dry_run: bool, now: datetime | None, as_json: bool) -> None:
    """QUERY_OR_ID: a document id (alice/memories/x, alice/turn_000003, alice/preferences#2)
    or words: every entry and memory holding all of them goes, and every sentence that
    quotes them, in turns, archive, index, caches, outbox and inbox copies.
    """
    from ..forget import forget as run_forget

    report = run_forget(app.vault(), query_or_id, user, dry_run=dry_run, now=now)

    def human() -> None:
        verb = "would change" if dry_run else "changed"
        for forget_id in report.resumed:
            click.echo(f"finished the forget {forget_id} that a busy file had stopped")
        for target in report.targets:
            click.echo(f"forget {target}")
        for path in report.files:
            click.echo(f"  {path}")
        click.echo(f"{verb} {len(report.files)} file(s); {report.words} distinctive word(s) checked")
        for problem in report.survivors:
            click.echo(f"  still there: {problem}")

    emit(report.as_json(), as_json, human)
    if report.survivors:
        raise ProblemFound(f"{len(report.survivors)} place(s) still hold forgotten words")
