"""Commands that run turns: ask, and the tool schemas the Planner's LLM sees."""

from __future__ import annotations

import sys
from datetime import datetime

import click

from indexers.errors import IndexingError

from ..errors import first_line
from ..output import echo_err, emit
from ..pipeline import Pipeline
from ..pipeline.tools import tool_schemas
from .base import App, command, now_option, user_option


@command("ask")
@click.argument("query")
@user_option(required=True, help="Whose turn this is.")
@now_option("Ask at this time (UTC if naive): the turn happens then and reads its history as of then.")
def ask(app: App, query: str, user: str, now: datetime | None, as_json: bool) -> None:
    vault = app.vault()
    unindexed: IndexingError | None = None
    with Pipeline(vault) as pipeline:
        result = pipeline.ask(query, user=user, now=now)
        try:
            pipeline.finisher.settle()
        except IndexingError as exc:  # the answer stands; its turn keeps its `.indexing` mark
            unindexed = exc
    if unindexed is not None:
        echo_err(f"warning: {result.doc_id} is answered but not yet searchable ({first_line(unindexed)})")

    if result.failure:  # recorded as a FAIL turn; the failure is not an answer
        if as_json:
            emit(result.as_json(), True, lambda: None)
        echo_err(f"error: turn {result.doc_id} failed: {result.failure}")
        sys.exit(1)

    def human() -> None:
        click.echo(result.answer)
        click.echo(f"\n[{result.outcome}] {result.doc_id} · {result.context_path}", err=False)

    emit(result.as_json(), as_json, human)


@command("tools")
def tools(app: App, as_json: bool) -> None:
    schemas = tool_schemas()

    def human() -> None:
        for schema in schemas:
            fn = schema["function"]
            click.echo(f"{fn['name']}: {fn['description']}")

    emit(schemas, as_json, human)
