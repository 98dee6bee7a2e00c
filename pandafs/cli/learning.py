"""Commands of the learning loop: promote and prune --expired (stats --since is in records)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from ..learning.promotion import promote as run_promotion
from ..learning.promotion import prune_expired
from ..output import emit
from .base import App, command, now_option


@command("promote")
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@now_option()
@click.option("--full", is_flag=True, help="Recompute usage and trust from every event first.")
def promote(app: App, dry_run: bool, now: datetime | None, full: bool, as_json: bool) -> None:
    """Usage and trust are folded from the turns' events first; each change is recorded
    as a scope_changed event in the owner's users/{user}/memory.events.jsonl.
    """
    report = run_promotion(app.vault(), now=now, dry_run=dry_run, full=full)

    def human() -> None:
        verb = "would change" if dry_run else "changed"
        for change in report.changes:
            click.echo(
                f"{change.doc_id}: {change.old_scope} → {change.new_scope} "
                f"(trust {change.trust:.2f}, used {change.usage_count}×) — {change.reason}"
            )
        click.echo(f"{verb} the scope of {len(report.changes)} document(s)")

    emit(report.as_json(), as_json, human)


@command("prune")
@click.option("--expired", is_flag=True, help="Move expired 'new' documents to archive/expired/.")
@click.option("--dry-run", is_flag=True, help="Show what would move; move nothing.")
@now_option()
def prune(app: App, expired: bool, dry_run: bool, now: datetime | None, as_json: bool) -> None:
    if not expired:
        raise click.UsageError("say what to prune: --expired")
    report = prune_expired(app.vault(), now=now, dry_run=dry_run)

    def human() -> None:
        verb = "would move" if dry_run else "moved"
        for item in report.pruned:
            click.echo(f"{item['doc_id']}: expired {item['expired_at']} → {item['archived_to']}")
        for item in report.kept:
            click.echo(f"kept {item['doc_id']}: {item['reason']}")
        click.echo(f"{verb} {len(report.pruned)} expired document(s) to the archive")

    emit(report.as_json(), as_json, human)


def print_trends(data: dict[str, Any]) -> None:
    """The daily rollups of `stats --since` as a table, one line per day, then the total."""
    click.echo(f"\ndaily trends {data['since']} … {data['until']} (UTC)")
    click.echo(
        f"{'day':<10} {'turns':>5} {'approve':>7} {'fail':>4} {'p50 ms':>8} {'p95 ms':>8} "
        f"{'tokens':>7} {'tools':>5} {'+scope':>6} {'-scope':>6} {'expired':>7}"
    )
    for row in [*data["daily"], {"date": "total", **data["totals"]}]:
        latency = row["latency_ms"]["total"]
        scope = row["scope_changes"]
        click.echo(
            f"{row['date']:<10} {row['turns']:>5} {row['outcomes'].get('APPROVE', 0):>7} "
            f"{row['outcomes'].get('FAIL', 0):>4} {latency.get('p50', 0):>8.1f} "
            f"{latency.get('p95', 0):>8.1f} {row['tokens']['total']:>7} "
            f"{row['tool_calls']['total']:>5} {scope['promoted']:>6} {scope['demoted']:>6} "
            f"{scope['expired']:>7}"
        )
