"""Commands of the memory API: search (and --batch), retrieve, save, rebuild."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import click
import orjson
from click.core import ParameterSource

from events.clock import aware, utcnow
from events.doctypes import CONTENT_TYPES
from events.errors import EventsError, json_problem
from indexers.request import Argument, search_arguments

from ..errors import PandaError, ProblemFound
from ..memory.api import SCOPES, Memory
from ..output import LazyProgress, echo_err, emit
from .base import App, command, now_option, parse_now, user_option


def _nothing_beside_batch(ctx: click.Context) -> None:
    """`--batch` takes queries and filters from its lines: one given beside it is refused."""
    given = [
        param.opts[0] if isinstance(param, click.Option) else param.human_readable_name
        for param in ctx.command.params
        if param.name not in ("batch", "as_json")
        and ctx.get_parameter_source(param.name or "") not in (None, ParameterSource.DEFAULT)
    ]
    if given:
        raise click.UsageError(f"--batch takes each query and filter from its lines; drop {', '.join(given)}")


def _option(arg: Argument) -> Any:
    """The `pandafs search` option of one search argument."""
    spec: dict[str, Any] = {"help": arg.description[:1].upper() + arg.description[1:] + "."}
    if arg.choices:
        spec["type"] = click.Choice(arg.choices)
    elif arg.hint is bool:
        spec["is_flag"] = True
    elif arg.hint == tuple[str, ...]:
        spec["multiple"] = True
        spec["help"] = spec["help"][:-1] + " (repeatable)."
    elif arg.hint == datetime | None:
        spec.update(callback=parse_now, metavar="ISO")
    elif arg.hint is int:
        low, high = (None if b is None else int(b) for b in (arg.ge, arg.le))
        spec.update(type=click.IntRange(low, high), default=arg.default, show_default=True)
    elif arg.hint == float | None:
        spec["type"] = click.FloatRange(arg.ge, arg.le)
    return click.option(*arg.flags, arg.name, **spec)


def search_options(command: Any) -> Any:
    """The options of every search argument a person may give (`search_arguments()`)."""
    for arg in reversed(search_arguments()):
        if arg.flags:
            command = _option(arg)(command)
    return command


@command("search")
@click.argument("query", required=False, default="")
@user_option(help="Search as this user: their documents plus global ones.")
@search_options
@now_option(help="Search as of this time: time words in the query resolve to it (UTC if naive).")
@click.option(
    "--batch",
    "batch",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON Lines of queries; prints one JSON hit list per line.",
)
def search(
    app: App,
    query: str,
    user: str | None,
    now: datetime | None,
    batch: Path | None,
    as_json: bool,
    **request: Any,
) -> None:
    if batch is not None:
        _nothing_beside_batch(click.get_current_context())
    memory = app.memory()
    if batch is not None:
        failed = _batch_search(memory, batch)
        if failed:
            raise ProblemFound(f"{failed} line(s) of {batch} failed (see their error objects)")
        return
    for unknown in sorted(set(request["content_types"]) - set(CONTENT_TYPES)):
        echo_err(f"warning: {unknown!r} is not a content type PandaFS writes ({', '.join(CONTENT_TYPES)})")
    hits = memory.search(query, user=user, now=now, **request)

    def human() -> None:
        if not hits:
            click.echo("no results")
        for rank, hit in enumerate(hits, 1):
            flag = " [archived]" if hit["archived"] else ""
            click.echo(f"{rank:2}. {hit['score']:.3f}  {hit['doc_id']}{flag}  — {hit['title']}")
            types = ", ".join(hit["content_types"])
            episode = f" · episode {hit['episode']}" if hit.get("episode") else ""
            click.echo(f"    {hit['doc_path']} · {hit['primary_topic']} · {types}{episode}")
            if hit["snippet"]:
                click.echo(f"    {hit['snippet']}")

    emit(hits, as_json, human)


def _batch_search(memory: Memory, source: Path) -> int:
    """`search --batch`: a JSON query a line in, a hit list (or error) a line out; how many failed."""
    from pydantic import ValidationError  # pydantic: only for --batch

    from ..memory.args import batch_query

    failed = 0
    with source.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                line = batch_query().model_validate(orjson.loads(raw))
                now = aware(line.now) if line.now else line.now
                out: Any = memory.search(line.query, user=line.user, now=now, **line.search_kwargs())
            except orjson.JSONDecodeError as exc:
                out = {"error": json_problem(raw, exc)}
            except ValidationError as exc:
                err = exc.errors()[0]
                out = {"error": f"{'.'.join(map(str, err['loc']))}: {err['msg']}"}
            except (PandaError, EventsError) as exc:
                out = {"error": str(exc)}
            failed += isinstance(out, dict)
            click.echo(orjson.dumps(out).decode())
    return failed


@command("retrieve")
@click.argument("id_or_path")
@user_option(help="Retrieve as this user: their documents and global ones only.")
@now_option("Count an archived turn's expansion at this time (UTC if naive).")
def retrieve(app: App, id_or_path: str, user: str | None, now: datetime | None, as_json: bool) -> None:
    """Without --user this is the vault owner's view (any user's document); with it,
    another user's document is refused like a missing one and nothing is counted.
    """
    doc = app.memory().retrieve(id_or_path, user=user, now=now or utcnow())
    emit(doc.as_json(), as_json, lambda: click.echo(doc.content))


@command("save")
@click.argument("content")
@user_option(required=True, help="Owner of the memory.")
@click.option(
    "--type",
    "doc_type",
    default="memory",
    show_default=True,
    help="preference and fact go to preferences.md / facts.md; others to memories/.",
)
@click.option("--topic", default="general", show_default=True, help="Hierarchical topic.")
@click.option("--keywords", default="", help="Comma-separated keywords.")
@click.option("--key", default=None, help="Key of a preference or fact (e.g. laptop_brand).")
@click.option(
    "--scope",
    type=click.Choice(SCOPES),
    default="new",
    show_default=True,
    help="new memories expire after their TTL unless promoted; global publishes to every "
    "user (only [memory] publishers may).",
)
@click.option(
    "--ttl-hours",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Expiry of a 'new' memory (default [memory] new_ttl_hours).",
)
def save(
    app: App,
    content: str,
    user: str,
    doc_type: str,
    topic: str,
    keywords: str,
    key: str | None,
    scope: str,
    ttl_hours: float | None,
    as_json: bool,
) -> None:
    saved = app.memory().save(
        content,
        user=user,
        doc_type=doc_type,
        topic=topic,
        keywords=keywords.split(","),
        scope=scope,
        ttl_hours=ttl_hours,
        key=key,
    )
    verb = "saved" if saved.created else "renewed (it had expired)" if saved.renewed else "already saved"
    emit(saved.as_json(), as_json, lambda: click.echo(f"{verb} {saved.doc_id} ({saved.doc_path})"))


@command("rebuild")
@user_option(help="Rebuild only this user's documents.")
def rebuild(app: App, user: str | None, as_json: bool) -> None:
    """Searches keep working meanwhile (the new index is swapped in at the end)."""
    from ..rebuild import rebuild_all  # the learning fold and research: only when rebuilding

    with (
        LazyProgress("reading turns", quiet=as_json) as folding,
        LazyProgress("indexing", quiet=as_json) as bar,
    ):

        def indexing(total: int) -> None:
            folding.close()  # one bar at a time: the fold's ends where the indexing's starts
            bar.start(total)

        data = rebuild_all(
            app.vault(),
            user=user,
            progress=bar.advance,
            on_total=indexing,
            stage=None if as_json else echo_err,
            fold_progress=folding.advance,
            on_fold_total=folding.start,
        )

    def human() -> None:
        click.echo(
            f"indexed {data['indexed']} documents in {data['seconds']} s "
            f"({data['docs_per_s']} docs/s); index holds {data['documents']}"
        )
        for skipped in data["skipped"]:
            click.echo(f"  skipped {skipped['path']}: {skipped['reason']}")
        if "learning" in data:
            click.echo(f"trust and scope recomputed from {data['learning']['turns']} turns")

    emit(data, as_json, human)
