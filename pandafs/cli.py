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
from pydantic import BaseModel, ConfigDict, ValidationError

from events import validate_user_id
from events.errors import EventsError, InvalidUserId
from indexers.errors import IndexingError

from .errors import PandaError, exit_code_for
from .importer import import_turns
from .memory import SCOPES, Memory
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
    memory = Memory(vault)
    with progress_bar(lines, "importing", quiet=as_json) as advance:
        report = import_turns(
            vault, source, batch_size=batch_size, progress=advance, after_batch=memory.index_docs
        )

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


class BatchQuery(BaseModel):
    """One line of `search --batch`."""

    model_config = ConfigDict(extra="forbid")
    query: str
    user: str | None = None
    topic: str | None = None
    types: list[str] = []
    scope: str | None = None
    min_quality: float | None = None
    limit: int = 10
    include_expired: bool = False


def _batch_search(memory: Memory, source: Path) -> None:
    import orjson

    with source.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            try:
                line = BatchQuery.model_validate(orjson.loads(raw))
                hits = memory.search(
                    line.query,
                    user=line.user,
                    topic_filter=line.topic,
                    content_types=line.types,
                    scope=line.scope,
                    min_quality=line.min_quality,
                    include_expired=line.include_expired,
                    limit=line.limit,
                )
                out: Any = hits
            except orjson.JSONDecodeError as exc:
                out = {"error": f"not valid JSON: {exc}"}
            except ValidationError as exc:
                err = exc.errors()[0]
                out = {"error": f"{'.'.join(map(str, err['loc']))}: {err['msg']}"}
            except (PandaError, EventsError) as exc:
                out = {"error": str(exc)}
            click.echo(orjson.dumps(out).decode())


@cli.command()
@click.argument("query", required=False, default="")
@user_option(help="Search as this user: their documents plus global ones.")
@click.option("--topic", help="Hierarchical topic filter, e.g. pet.hamster.")
@click.option("--type", "types", multiple=True, help="Content type filter (repeatable).")
@click.option("--scope", type=click.Choice(SCOPES), help="Scope filter.")
@click.option("--min-quality", type=click.FloatRange(0, 1), help="Minimum quality.")
@click.option("--include-expired", is_flag=True, help="Also show expired documents.")
@click.option("--limit", "-k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option(
    "--batch",
    "batch",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON Lines of queries; prints one JSON hit list per line.",
)
@json_option
@pass_app
def search(
    app: App,
    query: str,
    user: str | None,
    topic: str | None,
    types: tuple[str, ...],
    scope: str | None,
    min_quality: float | None,
    include_expired: bool,
    limit: int,
    batch: Path | None,
    as_json: bool,
) -> None:
    """Unified search over every document (natural language or keywords)."""
    memory = app.memory()
    if batch is not None:
        _batch_search(memory, batch)
        return
    hits = memory.search(
        query,
        user=user,
        topic_filter=topic,
        content_types=types,
        scope=scope,
        min_quality=min_quality,
        include_expired=include_expired,
        limit=limit,
    )

    def human() -> None:
        if not hits:
            click.echo("no results")
        for rank, hit in enumerate(hits, 1):
            flag = " [archived]" if hit["archived"] else ""
            click.echo(f"{rank:2}. {hit['score']:.3f}  {hit['doc_id']}{flag}  — {hit['title']}")
            types = ", ".join(hit["content_types"])
            click.echo(f"    {hit['doc_path']} · {hit['primary_topic']} · {types}")
            if hit["snippet"]:
                click.echo(f"    {hit['snippet']}")

    emit(hits, as_json, human)


@cli.command()
@click.argument("id_or_path")
@json_option
@pass_app
def retrieve(app: App, id_or_path: str, as_json: bool) -> None:
    """Print one document by id (alice/turn_000001) or vault-relative path."""
    doc = app.memory().retrieve(id_or_path)
    emit(doc.as_json(), as_json, lambda: click.echo(doc.content))


@cli.command()
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
@click.option("--scope", type=click.Choice(SCOPES), default="new", show_default=True)
@click.option(
    "--ttl-hours",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Expiry of a 'new' memory (default [memory] new_ttl_hours).",
)
@json_option
@pass_app
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
    """Save a memory document and index it."""
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
    data = {"doc_id": saved.doc_id, "doc_path": saved.doc_path, "created": saved.created}
    verb = "saved" if saved.created else "already saved"
    emit(data, as_json, lambda: click.echo(f"{verb} {saved.doc_id} ({saved.doc_path})"))


@cli.command()
@user_option(help="Rebuild only this user's documents.")
@json_option
@pass_app
def rebuild(app: App, user: str | None, as_json: bool) -> None:
    """Rebuild the search index from the files (searches keep working meanwhile)."""
    memory = app.memory()
    state: dict[str, Any] = {}

    def on_total(total: int) -> None:
        state["bar"] = progress_bar(total, "indexing", quiet=as_json)
        state["advance"] = state["bar"].__enter__()

    def advance(n: int) -> None:
        if "advance" in state:
            state["advance"](n)

    try:
        report = memory.rebuild(user=user, progress=advance, on_total=on_total)
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)

    def human() -> None:
        data = report.as_json()
        click.echo(
            f"indexed {report.indexed} documents in {data['seconds']} s "
            f"({data['docs_per_s']} docs/s); index holds {report.documents}"
        )
        for skipped in report.skipped:
            click.echo(f"  skipped {skipped.path}: {skipped.reason}")

    emit(report.as_json(), as_json, human)


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
    except (PandaError, EventsError, IndexingError) as exc:
        echo_err(f"error: {exc}")
        sys.exit(exit_code_for(exc))
    except OSError as exc:
        echo_err(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
