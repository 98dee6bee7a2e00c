"""Entry points of the learning loop for the pipeline, the CLI and scripts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from events.clock import utcnow
from events.fsio import read_vault_bytes
from events.projection import TurnView
from events.schema import Payload, PhaseFailed

from ..checks import Problem
from ..errors import BadInput, first_line
from ..memory.api import Memory
from ..vault import Vault
from .engine import Learning, SyncReport
from .maintenance import check_learning
from .promotion import check_shared
from .rollups import daily_path, days_between, rollup, summarize

if TYPE_CHECKING:  # the reliability table's module loads pyarrow
    from indexers.documents import IndexDoc

    from ..research.reliability import TurnsRead


__all__ = ["INDEX_QUEUE", "after_save", "rebuild", "trends"]

SAVE_WAIT_S = 10.0
INDEX_QUEUE = "learning_index_queue"


def rebuild(
    vault: Vault,
    *,
    memory: Memory | None = None,
    extractions: TurnsRead | None = None,
    index: bool = True,
    progress: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> SyncReport:
    """Recompute usage, trust, scope, the turn catalog and the rollups from the events.

    `extractions` is filled with each live turn's extraction events as the fold reads them.
    `index=False`: the caller rebuilds the index next, so nothing is re-indexed now."""
    with Learning(vault, memory).open() as engine:
        engine.reader.extractions = extractions
        engine.on_total, engine.progress = on_total, progress
        engine.documents.index_mode = "commit" if index else "skip"
        return engine.rebuild()


def after_save(
    vault: Vault,
    memory: Memory,
    view: TurnView,
    pending: Sequence[Payload],
    now: datetime,
    queue: list[IndexDoc],
) -> list[Payload]:
    """The end of Phase 8: fold what is new, run the policy for the documents this turn
    used, and return its scope changes as events of the turn.

    Never fails the turn: an error comes back as a `phase_failed` event of phase "learning"
    and the next sync makes up for it.  The rewritten documents are handed to the turn's own
    index commit through `queue` (its `extras[INDEX_QUEUE]`)."""
    try:
        with Learning(vault, memory).open(wait_s=SAVE_WAIT_S) as engine:
            engine.documents.index_mode = "queue"
            try:
                engine.sync(rollups=False, users=[view.user])
                return list(engine.policy.on_turn(view, pending, now))
            finally:
                queue.extend(engine.documents.take_index_queue())
    except Exception as exc:  # recorded in the turn's log; the turn itself stands
        return [PhaseFailed(phase="learning", error_type=type(exc).__name__, message=first_line(exc))]


_SINCE = re.compile(r"^(\d+)\s*([dhw])$")


MAX_WINDOW_DAYS = 36_600  # a century: longer windows are typos, and would overflow dates


def parse_since(text: str, now: datetime) -> date:
    """First day of a window: `7d` (today and the 6 days before), `24h`, `2w`, or a date."""
    match = _SINCE.match(text.strip().lower())
    if match:
        n, unit = int(match.group(1)), match.group(2)
        if n < 1:
            raise BadInput(f"--since {text!r}: the window must be at least 1 {unit}")
        days = -(-n // 24) if unit == "h" else n * (7 if unit == "w" else 1)
        if days > MAX_WINDOW_DAYS:
            raise BadInput(f"--since {text!r}: the window may be at most {MAX_WINDOW_DAYS:,} days")
        if unit == "h":
            return (now - timedelta(hours=n)).astimezone(UTC).date()
        return now.astimezone(UTC).date() - timedelta(days=days - 1)
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise BadInput(f"--since {text!r}: use 7d, 24h, 2w or a date like 2026-01-31") from None


def trends(vault: Vault, *, since: str, now: datetime | None = None) -> dict[str, Any]:
    """The daily rollups from `since` (`7d`, `24h`, `2w` or a date) to the day of `now`,
    empty days included, and their totals: `{since, until, daily, totals}`."""
    now = now or utcnow()
    first = parse_since(since, now)
    until = now.astimezone(UTC).date()
    if until < first:
        raise BadInput(f"the window ends ({until}) before it starts ({first})")
    if (until - first).days >= MAX_WINDOW_DAYS:
        raise BadInput(f"the window {first} … {until} is longer than {MAX_WINDOW_DAYS:,} days")
    with Learning(vault).open() as engine:
        engine.sync()
        months = {d.strftime("%Y-%m") for d in days_between(first, until)}
        rows = [r for r in engine.catalog.read_rows(months=months) if first <= r["date"] <= until]
        scope: Counter[str] = Counter()
        for name, counts in engine.cache.state.scope_days.items():
            if first.isoformat() <= name <= until.isoformat():
                scope.update(counts)
    days = []
    for day in days_between(first, until):
        data = read_vault_bytes(vault.root, daily_path(engine.daily_dir, day))
        rollup_read = _json_object(data) if data is not None else rollup(day, [], {})  # a link: quiet
        if rollup_read is None:  # a damaged rollup costs itself: made again from the catalog
            changes = engine.cache.state.scope_days.get(day.isoformat(), {})
            rollup_read = rollup(day, [r for r in rows if r["date"] == day], changes)
        days.append(rollup_read)
    window = {"since": first.isoformat(), "until": until.isoformat()}
    return {**window, "daily": days, "totals": summarize(rows, scope)}


def check_catalog(vault: Vault, repair: bool) -> list[Problem]:
    """Every part of the turn catalog reads as one (kind `unreadable`): `stats`, `promote`
    and `prune` read them.  `--repair` rebuilds the learning state, catalog included."""
    from .catalog import Catalog, UnreadablePart  # pyarrow: only when checked

    catalog = Catalog.of(vault)
    problems = []
    for month in catalog.months():
        for path in catalog.files(month):
            try:
                catalog.read_table([path])
            except UnreadablePart as exc:
                problems.append(
                    Problem(vault.rel(path), "unreadable", f"not a readable catalog part ({exc.why})")
                )
    return _rebuilt(vault, problems, "catalog") if repair else problems


def _json_object(data: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def check_caches(vault: Vault, repair: bool) -> list[Problem]:
    """The learning cache's snapshot and each line of its journal, and every daily rollup,
    read as JSON objects, or are named `unreadable`.  Each is made again from the events
    (by the next sync, or from the catalog) and `--repair` does it now."""
    from .state import STATE_FILE, learning_dir

    cache = learning_dir(vault)
    daily = vault.layout.observability / "daily"
    problems: list[Problem] = []
    for folder, pattern, what in (
        (cache, STATE_FILE, "the learning cache"),
        (cache, "journal-*.jsonl", "the learning cache's journal"),
        (daily, "????-??-??.json", "a daily rollup"),
    ):
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in sorted(folder.glob(pattern)):
            data = read_vault_bytes(vault.root, path)  # a link, a FIFO: the one read rule names it
            if data is None:
                continue
            lines = data.splitlines() if path.suffix == ".jsonl" else [data]
            torn = path.suffix == ".jsonl" and data and not data.endswith(b"\n")
            if torn or any(_json_object(line) is None for line in lines):
                why = f"{what} does not read as JSON objects (rebuilt from the events)"
                problems.append(Problem(vault.rel(path), "unreadable", why))
    return _rebuilt(vault, problems, "learning state") if repair else problems


def _rebuilt(vault: Vault, problems: list[Problem], what: str) -> list[Problem]:
    """`problems` repaired by a rebuild of the learning state (none: nothing is rebuilt)."""
    if problems:
        rebuild(vault)
    return [p._replace(message=f"{p.message}: {what} rebuilt", repaired=True) for p in problems]


CHECKS = (check_learning, check_catalog, check_caches, check_shared)
"""What verify runs for the learning loop (`pandafs.checks`)."""
