"""The turn catalog: one Parquet row per completed turn (replaces the seed's trends.db).

Layout (hive-style month partitions, so DuckDB and pyarrow see a `month` column):

    observability/catalog/month=YYYY-MM/part-{ns}.parquet    compacted, rows sorted by
                                                              (user, turn_number)
    observability/catalog/month=YYYY-MM/delta-{ns}-{pid}.parquet   rows of one sync

The month is the month of the turn's `created_at` (UTC).  Every sync of the learning
fold appends the rows of the turns it folded as one small delta file per month (a
write of a few ms, TECH-NOTES "Parquet").  Compaction is tiered so a big month is not
rewritten every few turns: more than `COMPACT_AFTER` deltas are merged into one new
part; more than `MERGE_PARTS_AFTER` parts are merged into one.  `rebuild` writes the whole catalog again from
the turn folders (and the archive) into a new folder and swaps it in.

Rows are unique by (user, turn) except after a crash between writing a compacted file
and removing what it replaced; `read_rows` (and compaction) keep the last copy, and a
DuckDB query that must be exact even then can do the same:

    SELECT * FROM read_parquet('observability/catalog/*/*.parquet', hive_partitioning=true)
    QUALIFY row_number() OVER (PARTITION BY "user", turn ORDER BY filename DESC) = 1

The schema is derived from `TurnRow`; times are UTC, latencies in milliseconds.  A
phase that did not run in a turn has a null latency.
"""

from __future__ import annotations

import operator
import os
import shutil
import time
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel, ConfigDict

from events import Event, TurnView, turn_number
from events.fsio import TMP_PREFIX, swap_in
from events.schema import PhaseFailed, ScopeChanged

__all__ = [
    "CATALOG_SCHEMA",
    "COMPACT_AFTER",
    "MERGE_PARTS_AFTER",
    "PHASES",
    "Catalog",
    "TurnRow",
    "rows_by_day",
    "turn_row",
    "turn_row_values",
]

COMPACT_AFTER = 32
MERGE_PARTS_AFTER = 16
PHASES = (
    "query_analyzer",
    "reflection",
    "context_gatherer",
    "planner",
    "executor",
    "coordinator",
    "synthesis",
    "validation",
    "save",
)


class TurnRow(BaseModel):
    """One row of the catalog: what a turn was about, how it went, what it cost."""

    model_config = ConfigDict(frozen=True)

    user: str
    turn: str
    turn_number: int
    created_at: datetime
    date: date
    source: str
    topic: str
    query_type: str | None
    outcome: str
    validation: str | None
    quality: float
    attempts: int
    revisions: int
    ms_total: float
    ms_query_analyzer: float | None
    ms_reflection: float | None
    ms_context_gatherer: float | None
    ms_planner: float | None
    ms_executor: float | None
    ms_coordinator: float | None
    ms_synthesis: float | None
    ms_validation: float | None
    ms_save: float | None
    llm_calls: int
    tokens_in: int
    tokens_out: int
    tool_calls: int
    tool_errors: int
    tools: list[str]
    sources_used: int
    memory_committed: int
    scope_changes: int
    failures: int
    feedback_on: str | None
    feedback_status: str | None
    has_research: bool


_ARROW: dict[Any, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
    datetime: pa.timestamp("us", tz="UTC"),
    date: pa.date32(),
    list[str]: pa.list_(pa.string()),
}


def _arrow_schema(model: type[BaseModel]) -> pa.Schema:
    fields = []
    for name, info in model.model_fields.items():
        annotation, nullable = info.annotation, False
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            annotation, nullable = args[0], True
        fields.append(pa.field(name, _ARROW[annotation], nullable=nullable))
    return pa.schema(fields)


CATALOG_SCHEMA = _arrow_schema(TurnRow)


def _row_fields(view: TurnView, events: Sequence[Event]) -> dict[str, Any]:
    """The catalog fields of a completed turn (a pure function of its events)."""
    created = view.occurred_at.astimezone(UTC)
    analysis, completed = view.analysis, view.completed
    validations = [a.validation for a in view.attempts if a.validation is not None]
    llm_calls = tokens_in = tokens_out = scope_changes = failures = 0
    for event in events:
        data = event.data
        metrics = getattr(data, "metrics", None)
        if metrics is not None:
            llm_calls += metrics.llm_calls
            tokens_in += metrics.tokens_in
            tokens_out += metrics.tokens_out
        if isinstance(data, ScopeChanged):
            scope_changes += 1
        elif isinstance(data, PhaseFailed):
            failures += 1
    tools = view.tool_calls()
    feedback = view.feedback[-1] if view.feedback else None
    fields: dict[str, Any] = {
        "user": view.user,
        "turn": view.turn,
        "turn_number": turn_number(view.turn),
        "created_at": created,
        "date": created.date(),
        "source": view.started.source,
        "topic": analysis.primary_topic if analysis else "conversation",
        "query_type": analysis.query_type if analysis else (completed.query_type if completed else None),
        "outcome": view.outcome or "INCOMPLETE",
        "validation": validations[-1].decision if validations else None,
        "quality": float(completed.quality) if completed else 0.5,
        "attempts": len(view.attempts),
        "revisions": max(0, len(validations) - 1),
        "ms_total": float(round(sum(view.phase_ms.values()), 3)),
    }
    for phase in PHASES:
        ms = view.phase_ms.get(phase)
        fields[f"ms_{phase}"] = None if ms is None else float(ms)
    fields.update(
        llm_calls=llm_calls,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        tool_calls=len(tools),
        tool_errors=sum(1 for t in tools if not t.ok),
        tools=[t.tool for t in tools],
        sources_used=len(view.used.doc_ids) if view.used else 0,
        memory_committed=len(view.committed),
        scope_changes=scope_changes,
        failures=failures,
        feedback_on=feedback.target_turn if feedback else None,
        feedback_status=feedback.status if feedback else None,
        has_research=bool(completed.has_research) if completed else False,
    )
    return fields


def turn_row(view: TurnView, events: Sequence[Event]) -> TurnRow:
    """The catalog row of a completed turn (a pure function of its events)."""
    return TurnRow(**_row_fields(view, events))


def turn_row_values(view: TurnView, events: Sequence[Event]) -> RowValues:
    """`row_values(turn_row(view, events))` without building the model (a rebuild makes
    one per turn of the vault; the fields are typed already, from the events)."""
    fields = _row_fields(view, events)
    return tuple(fields[name] for name in _NAMES)


RowValues = tuple[Any, ...]
"""A row's values in `CATALOG_SCHEMA` order: what a rebuild keeps of every turn's row
(a `TurnRow` model costs several times the memory of its values)."""

_NAMES = tuple(CATALOG_SCHEMA.names)
row_values: Callable[[TurnRow], RowValues] = operator.attrgetter(*_NAMES)
ROW_DATE = CATALOG_SCHEMA.names.index("date")
_ROW_ORDER = operator.itemgetter(*(CATALOG_SCHEMA.names.index(n) for n in ("user", "turn_number")))
_ROW_CREATED = CATALOG_SCHEMA.names.index("created_at")
_READ_ORDER = operator.itemgetter(
    *(CATALOG_SCHEMA.names.index(n) for n in ("created_at", "user", "turn_number"))
)


def rows_by_day(values: Iterable[RowValues]) -> dict[date, list[dict[str, Any]]]:
    """Rows as `Catalog.read_rows` gives them (dicts, in its order), by day: a rebuild's
    rollups from the rows it just wrote, without reading the catalog back."""
    by_day: dict[date, list[dict[str, Any]]] = {}
    for row in sorted(values, key=_READ_ORDER):
        by_day.setdefault(row[ROW_DATE], []).append(dict(zip(_NAMES, row, strict=True)))
    return by_day


def _table(rows: Iterable[TurnRow | RowValues]) -> pa.Table:
    names = CATALOG_SCHEMA.names
    values = sorted((r if isinstance(r, tuple) else row_values(r) for r in rows), key=_ROW_ORDER)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    if values:
        for name, column in zip(names, zip(*values, strict=True), strict=True):
            columns[name] = list(column)
    return pa.table(columns, schema=CATALOG_SCHEMA)


def _write(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd", row_group_size=4096)
    os.replace(tmp, path)


class Catalog:
    """The catalog files of one vault (see the module docstring for the layout)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def month_dir(self, month: str) -> Path:
        return self.dir / f"month={month}"

    def months(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.name.removeprefix("month=") for p in self.dir.glob("month=*") if p.is_dir())

    def files(self, month: str) -> list[Path]:
        """Part files first, then deltas, each oldest first: later copies of a row win."""
        folder = self.month_dir(month)
        if not folder.is_dir():
            return []
        parts = sorted(folder.glob("part-*.parquet"))
        deltas = sorted(folder.glob("delta-*.parquet"))
        return parts + deltas

    def append(self, rows: Sequence[TurnRow]) -> list[str]:
        """Write `rows` as one delta per month; compact crowded months.  Months touched."""
        by_month: dict[str, list[TurnRow]] = {}
        for row in rows:
            by_month.setdefault(row.created_at.strftime("%Y-%m"), []).append(row)
        for month, items in sorted(by_month.items()):
            name = f"delta-{time.time_ns():020d}-{os.getpid()}.parquet"
            _write(_table(items), self.month_dir(month) / name)
            folder = self.month_dir(month)
            if len(list(folder.glob("delta-*.parquet"))) > COMPACT_AFTER:
                self.compact(month, deltas_only=len(list(folder.glob("part-*.parquet"))) < MERGE_PARTS_AFTER)
        return sorted(by_month)

    def compact(self, month: str, *, deltas_only: bool = False) -> None:
        """Merge a month's files (or only its deltas) into one new part, rows deduplicated
        (the later copy wins) and sorted; then drop the merged files."""
        inputs = self.files(month)
        if deltas_only:
            inputs = [p for p in inputs if p.name.startswith("delta-")]
        if len(inputs) <= 1:
            return
        rows = sorted(self._read_files(inputs), key=lambda r: (r["user"], r["turn_number"]))
        _write(
            pa.Table.from_pylist(rows, schema=CATALOG_SCHEMA),
            self.month_dir(month) / f"part-{time.time_ns():020d}.parquet",
        )
        for path in inputs:
            path.unlink(missing_ok=True)

    @staticmethod
    def _read_files(paths: Iterable[Path], day: date | None = None) -> list[dict[str, Any]]:
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        for path in paths:
            try:
                table = pq.ParquetFile(path).read()  # ~1 ms; the dataset API costs ~8 ms a file
            except FileNotFoundError:
                continue  # compacted away meanwhile; its rows are in the newer part
            if day is not None:
                table = table.filter(pc.equal(table["date"], pa.scalar(day, pa.date32())))
            for row in table.to_pylist():
                latest[(row["user"], row["turn"])] = row
        return list(latest.values())

    def read_rows(
        self, *, months: Iterable[str] | None = None, day: date | None = None
    ) -> list[dict[str, Any]]:
        """Rows (one per turn) of the given months (all by default), or of one day."""
        if day is not None:
            months = [day.strftime("%Y-%m")]
        chosen = self.months() if months is None else sorted(set(months))
        rows: list[dict[str, Any]] = []
        for month in chosen:
            rows += self._read_files(self.files(month), day)
        return sorted(rows, key=lambda r: (r["created_at"], r["user"], r["turn_number"]))

    def rebuild(self, rows: Iterable[TurnRow | RowValues]) -> list[str]:
        """Replace the whole catalog by `rows` (one part file per month).  Months written."""
        by_month: dict[str, list[TurnRow | RowValues]] = {}
        for row in rows:
            created = row[_ROW_CREATED] if isinstance(row, tuple) else row.created_at
            by_month.setdefault(created.strftime("%Y-%m"), []).append(row)
        new = self.dir.with_name(self.dir.name + ".new")
        shutil.rmtree(new, ignore_errors=True)
        new.mkdir(parents=True)
        for month, items in sorted(by_month.items()):
            _write(_table(items), new / f"month={month}" / f"part-{time.time_ns():020d}.parquet")
        swap_in(new, self.dir)
        return sorted(by_month)
