"""The turn catalog: one Parquet row per completed turn.

    observability/catalog/month=YYYY-MM/part-{ns}.parquet          compacted, sorted by (user, turn)
    observability/catalog/month=YYYY-MM/delta-{ns}-{pid}.parquet   the rows of one sync

Hive-style month partitions (by `created_at`, UTC), so DuckDB and pyarrow see a `month`
column.  A sync appends one delta per month (Save's rows wait in the learning cache for
`engine.CATALOG_BATCH` of them); more than `COMPACT_AFTER` deltas merge into a part, more
than `MERGE_PARTS_AFTER` parts into one.  A rebuild writes a new folder and swaps it in.
A crash between writing a compacted file and removing what it replaced leaves a row twice;
`read_rows` keeps the last copy, as a DuckDB query can:

    SELECT * FROM read_parquet('observability/catalog/*/*.parquet', hive_partitioning=true)
    QUALIFY row_number() OVER (PARTITION BY "user", turn ORDER BY filename DESC) = 1

The schema is derived from `TurnRow`; times are UTC, latencies in milliseconds (null for a
phase that did not run)."""

from __future__ import annotations

import operator
import os
import time
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq  # writing; reading goes through read_parquet
from pydantic import BaseModel

from events.errors import NotInVault
from events.fsio import atomic_file, checked_folders, make_folder, remove_tree_in_vault, swap_in
from indexers.behind import release_freed_memory
from indexers.parquet import read_parquet

from ..errors import ProblemFound
from ..vault import Vault
from .rows import RowValues, TurnRow, row_values

__all__ = ["COMPACT_AFTER", "Catalog", "CatalogRebuild", "UnreadablePart"]

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
        nullable = isinstance(info.annotation, types.UnionType)  # `X | None`
        kind = typing.get_args(info.annotation)[0] if nullable else info.annotation
        fields.append(pa.field(name, _ARROW[kind], nullable=nullable))
    return pa.schema(fields)


CATALOG_SCHEMA = _arrow_schema(TurnRow)

COMPACT_AFTER = 32
MERGE_PARTS_AFTER = 16
SPILL_ROWS = 20_000
"""Rows a rebuild holds in memory before writing them out (~1 KB each as Python values)."""
ROW_DATE = CATALOG_SCHEMA.names.index("date")
_ROW_ORDER = operator.itemgetter(*(CATALOG_SCHEMA.names.index(n) for n in ("user", "turn_number")))
_ROW_CREATED = CATALOG_SCHEMA.names.index("created_at")
_PART_ORDER = [("user", "ascending"), ("turn_number", "ascending")]  # `_ROW_ORDER`, in arrow


_READ_ORDER = [("created_at", "ascending"), ("user", "ascending"), ("turn_number", "ascending")]
"""The order rows are read in (a UTF-8 string's bytes sort in arrow as its code points do)."""


def _table(rows: Iterable[RowValues]) -> pa.Table:
    names = CATALOG_SCHEMA.names
    values = sorted(rows, key=_ROW_ORDER)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    if values:
        for name, column in zip(names, zip(*values, strict=True), strict=True):
            columns[name] = list(column)
    return pa.table(columns, schema=CATALOG_SCHEMA)


def _write(table: pa.Table, path: Path, root: Path | None) -> None:
    with atomic_file(path, durable=False, root=root) as out:  # derived: `rebuild` makes it again
        pq.write_table(table, out, compression="zstd", row_group_size=4096)


class UnreadablePart(ProblemFound):
    """A catalog part that does not read as one (`stats`, `promote`, `prune` stop on it)."""

    def __init__(self, path: Path, why: object) -> None:
        self.path, self.why = path, str(why)
        rel = path.relative_to(path.parents[3]).as_posix()  # parts live at observability/catalog/month=…/
        super().__init__(f"{rel}: not a readable catalog part ({why}); run `pandafs rebuild`")


class Catalog:
    """The catalog files of one vault (see the module docstring for the layout)."""

    def __init__(self, directory: Path, root: Path | None = None) -> None:
        self.dir = directory
        self.root = root  # the vault: nothing below it is read or written through a link

    @classmethod
    def of(cls, vault: Vault) -> Catalog:
        """The catalog of `vault`: `observability/catalog/`."""
        return cls(vault.layout.observability / "catalog", vault.root)

    def month_dir(self, month: str) -> Path:
        return self.dir / f"month={month}"

    def months(self) -> list[str]:
        return sorted(p.name.removeprefix("month=") for p in self.dir.glob("month=*") if p.is_dir())

    def files(self, month: str) -> list[Path]:
        """Part files first, then deltas, each oldest first: later copies of a row win."""
        folder = self.month_dir(month)  # (none there: no files)
        return sorted(folder.glob("part-*.parquet")) + sorted(folder.glob("delta-*.parquet"))

    def append(self, rows: Sequence[TurnRow]) -> list[str]:
        """Write `rows` as one delta per month; compact crowded months.  Months touched."""
        by_month = _by_month(row_values(r) for r in rows)
        for month, items in sorted(by_month.items()):
            folder = self.month_dir(month)
            _write(_table(items), folder / f"delta-{time.time_ns():020d}-{os.getpid()}.parquet", self.root)
            if len(list(folder.glob("delta-*.parquet"))) > COMPACT_AFTER:
                self.compact(month, deltas_only=len(list(folder.glob("part-*.parquet"))) < MERGE_PARTS_AFTER)
        return sorted(by_month)

    def compact(self, month: str, *, deltas_only: bool = False) -> None:
        """Merge a month's files (or only its deltas) into one new part, rows deduplicated
        (the later copy wins) and sorted; then drop the merged files."""
        inputs = self.files(month)
        if deltas_only:
            inputs = [p for p in inputs if p.name.startswith("delta-")]
        if len(inputs) > 1:
            self.merge(inputs, self.month_dir(month))

    def merge(self, inputs: Sequence[Path], folder: Path) -> None:
        """`inputs` as one new part in `folder`, sorted, one row per turn (the later copy wins);
        then the inputs go."""
        part = folder / f"part-{time.time_ns():020d}.parquet"
        _write(self.read_table(inputs).sort_by(_PART_ORDER), part, self.root)
        with checked_folders(self.root, durable=False) as folders:  # by name, never through a link
            for path in inputs:
                folders.unlink(path, missing_ok=True)

    def read_table(self, paths: Iterable[Path]) -> pa.Table:
        """The rows of `paths`, read in order, one per (user, turn): the later copy wins."""
        tables = []
        for path in paths:
            try:
                tables.append(read_parquet(self.root or self.dir, path))
            except FileNotFoundError:
                continue  # compacted away meanwhile; its rows are in the newer part
            except NotInVault as exc:
                raise UnreadablePart(path, exc.reason) from None
            except (pa.ArrowInvalid, OSError) as exc:
                raise UnreadablePart(path, exc) from None
            if not tables[-1].schema.equals(CATALOG_SCHEMA):
                raise UnreadablePart(path, "other columns")
        if not tables:
            return CATALOG_SCHEMA.empty_table()
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        if len(tables) > 1:
            keys = zip(table["user"].to_pylist(), table["turn"].to_pylist(), strict=True)
            last = {key: i for i, key in enumerate(keys)}
            if len(last) < table.num_rows:
                table = table.take(sorted(last.values()))
        return table

    def read_rows(self, *, months: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Rows (one per turn) of the given months (all by default)."""
        chosen = self.months() if months is None else sorted(set(months))
        tables = [self.read_table(self.files(month)) for month in chosen]
        return _day_rows(pa.concat_tables(tables) if tables else CATALOG_SCHEMA.empty_table(), None)

    def days_of(
        self, month: str, columns: Sequence[str] | None = None
    ) -> Callable[[date], list[dict[str, Any]]]:
        """The rows of one day of `month`, the month's files read once; with `columns`, only those."""
        table = self.read_table(self.files(month))
        return lambda day: _day_rows(table, day, columns)


def _day_rows(
    table: pa.Table, day: date | None, columns: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The rows of `table` (of `day` only, when given) in read order (`_READ_ORDER`), as
    dicts of every column or of `columns`."""
    if day is not None:
        table = table.filter(pc.equal(table["date"], pa.scalar(day, pa.date32())))
    table = table.sort_by(_READ_ORDER)
    return (table if columns is None else table.select(list(columns))).to_pylist()


def _by_month(rows: Iterable[RowValues]) -> dict[str, list[RowValues]]:
    by_month: dict[str, list[RowValues]] = {}
    for row in rows:
        by_month.setdefault(row[_ROW_CREATED].strftime("%Y-%m"), []).append(row)
    return by_month


class CatalogRebuild:
    """The whole catalog written anew: `add` each turn's row values in any order, `finish`
    swaps the new folder in.  At most `SPILL_ROWS` rows are held; the rest go out as chunks
    that become each month's one sorted part."""

    def __init__(self, catalog: Catalog) -> None:
        self.dir = catalog.dir
        self.new = catalog.dir.with_name(catalog.dir.name + ".new")
        self.root = catalog.root
        self._chunks_in = Catalog(self.new, self.root)  # the chunks it has just written there
        remove_tree_in_vault(self.root, self.new)  # never through a link
        make_folder(self.new, self.root)
        self.days: set[date] = set()
        self._rows: list[RowValues] = []
        self._chunks = 0

    def add(self, row: RowValues) -> None:
        self._rows.append(row)
        self.days.add(row[ROW_DATE])
        if len(self._rows) >= SPILL_ROWS:
            self._write(f"chunk-{self._chunks:06d}")
            self._chunks += 1
            self._rows = []
            # what the chunk's table and the rows freed, handed back: the fold runs beside the indexing
            pa.default_memory_pool().release_unused()
            release_freed_memory()

    def _write(self, name: str) -> None:
        """The rows held, written as `name` in each of their months' folders."""
        for month, items in sorted(_by_month(self._rows).items()):
            _write(_table(items), self.new / f"month={month}" / f"{name}.parquet", self.root)

    def finish(self) -> list[str]:
        """Every month's part written, the new catalog in place.  Months written."""
        if not self._chunks:  # all of it in memory: each month's part at once
            self._write(f"part-{time.time_ns():020d}")
        else:
            self._write(f"chunk-{self._chunks:06d}")
            for folder in sorted(self.new.iterdir()):
                self._chunks_in.merge(sorted(folder.glob("chunk-*.parquet")), folder)
        self._rows = []
        swap_in(self.new, self.dir, root=self.root)
        # pyarrow's pool keeps what the parts' buffers freed, and a rebuild indexes next
        pa.default_memory_pool().release_unused()
        return sorted(p.name.removeprefix("month=") for p in self.dir.glob("month=*"))
