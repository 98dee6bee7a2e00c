"""The Parquet cold store of turn folders (`archive/turns/`).

    archive/turns/month=YYYY-MM/part-{batch}.parquet    one file per archive batch and month

One row per file of an archived turn (`ARCHIVE_SCHEMA`: bytes, sha256, size, mode, mtime;
a `path` ending in `/` is an empty folder), sorted by (user, turn, path), zstd, in small
row groups with statistics on `user` and `turn` so a lookup decodes one row group.  Every
part is written to a temporary name, fsynced and renamed.  Which turns to archive, the
stubs and the crash-safe protocol live in `pandafs.archive`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from events.errors import NotInVault
from events.fsio import TMP_PREFIX, atomic_file, checked_folders, vault_folder

from .documents import sha256_bytes
from .errors import ArchiveError
from .parquet import read_parquet
from .turn_folder import FileEntry, TurnFiles, TurnKey

__all__ = [
    "ARCHIVE_SCHEMA",
    "ArchiveStore",
    "PartContents",
]

FORMAT_VERSION = "1"
ROW_GROUP_ROWS = 1024
ROW_GROUP_BYTES = 4 << 20


ARCHIVE_SCHEMA = pa.schema(
    [
        pa.field(name, kind, nullable=False)
        for name, kind in [
            ("user", pa.string()),
            ("turn", pa.string()),
            ("path", pa.string()),
            ("content", pa.binary()),
            ("size", pa.int64()),
            ("sha256", pa.string()),
            ("mode", pa.int64()),
            ("mtime_ns", pa.int64()),
            ("created_at", pa.timestamp("us", tz="UTC")),
            ("archived_at", pa.timestamp("us", tz="UTC")),
            ("batch", pa.string()),
        ]
    ],
    metadata={"pandafs.archive.format": FORMAT_VERSION},
)
"""One row per file of an archived turn folder."""
KEY_COLUMNS = ["user", "turn", "path", "batch"]
STATS_COLUMNS = ["user", "turn", "path", "batch", "size", "created_at"]


@dataclass
class PartContents:
    """The turns of one part file, and any rows whose bytes do not match their sha256."""

    path: Path
    turns: dict[TurnKey, TurnFiles]
    bad_rows: list[str]
    duplicate_rows: list[str]

    def intact(self, key: TurnKey) -> TurnFiles | None:
        """The turn's files if every one of its rows is present once and checks out."""
        doc = f"{key[0]}/{key[1]}/"
        if any(r.startswith(doc) for r in self.bad_rows + self.duplicate_rows):
            return None
        return self.turns.get(key)


class ArchiveStore:
    """The part files under `archive/turns/` of one vault."""

    def __init__(self, directory: Path, *, zstd_level: int = 3, root: Path | None = None) -> None:
        self.dir = directory
        self.root = root or directory  # nothing is read through a link below it
        self.zstd_level = zstd_level

    # --- naming -------------------------------------------------------------------

    def part_path(self, month: str, batch: str) -> Path:
        return self.dir / f"month={month}" / f"part-{batch}.parquet"

    def parts(self) -> list[Path]:
        """Every part file, oldest month first (none when the folder is missing)."""
        return sorted(self.dir.glob("month=*/part-*.parquet"))

    def temp_files(self) -> list[Path]:
        return sorted(self.dir.glob(f"month=*/{TMP_PREFIX}*"))

    def clean_temp(self) -> int:
        """Remove temporary files of writers that died before their rename."""
        found = self.temp_files()
        with checked_folders(self.root, durable=False) as folders:  # by name, never through a link
            for path in found:
                folders.unlink(path, missing_ok=True)
        return len(found)

    # --- writing ------------------------------------------------------------------

    def write_parts(
        self, turns: Iterable[TurnFiles], *, batch: str, archived_at: datetime
    ) -> dict[str, Path]:
        """Write one part file per month for these turns; returns month → path."""
        written: dict[str, Path] = {}
        for month, group in sorted(_by_month(turns).items()):
            path = self.part_path(month, batch)
            self._write_atomic(_to_table(group, batch, archived_at), path)
            written[month] = path
        return written

    def encoded_sizes(
        self, turns: Iterable[TurnFiles], *, batch: str, archived_at: datetime
    ) -> dict[str, int]:
        """month → bytes the part file of these turns would take (written to memory only)."""
        sizes: dict[str, int] = {}
        for month, group in _by_month(turns).items():
            sink = pa.BufferOutputStream()
            self._write_table(_to_table(group, batch, archived_at), sink)
            sizes[month] = sink.getvalue().size
        return sizes

    def _write_table(self, table: pa.Table, where: Any) -> None:
        """Row groups of at most ROW_GROUP_ROWS rows / ROW_GROUP_BYTES bytes, cut between
        turns, so looking up one turn decodes one small group."""
        with pq.ParquetWriter(
            where,
            table.schema,
            compression="zstd",
            compression_level=self.zstd_level,
            use_dictionary=KEY_COLUMNS,
            write_statistics=STATS_COLUMNS,
        ) as writer:
            for start, stop in _row_groups(table):
                writer.write_table(table.slice(start, stop - start), row_group_size=stop - start)

    def _write_atomic(self, table: pa.Table, path: Path) -> None:
        month = path.parent
        if not os.path.lexists(month):  # made in the store's folder checked from the root, fsynced
            if Path(self.root) == self.dir:
                self.dir.mkdir(parents=True, exist_ok=True)
            else:
                vault_folder(self.root, self.dir)
            with checked_folders(self.root) as folders:
                folders.fd(self.dir, target=month)
                with suppress(FileExistsError):  # made meanwhile by another writer
                    folders.make(month)
        with atomic_file(path, root=self.root) as out:
            self._write_table(table, out)

    def drop_turns(self, path: Path, turns: Iterable[TurnKey]) -> int:
        """Rewrite `path` without the rows of these turns (delete it if none is left)."""
        remove = set(turns)
        if not remove or not path.exists():
            return 0
        table = self._read(path)
        keep = [
            (u, t) not in remove
            for u, t in zip(table.column("user").to_pylist(), table.column("turn").to_pylist(), strict=True)
        ]
        dropped = keep.count(False)
        if not dropped:
            return 0
        if dropped == len(keep):  # the file, then its folder if empty: in the folders checked
            with checked_folders(self.root) as folders:
                folders.unlink(path)
            with checked_folders(self.root, durable=False) as folders, suppress(OSError):
                os.rmdir(path.parent.name, dir_fd=folders.fd(path.parent.parent))
            return dropped
        self._write_atomic(table.filter(pa.array(keep, pa.bool_())), path)
        return dropped

    # --- reading ------------------------------------------------------------------

    def name(self, path: Path) -> str:
        """`path` as messages name it: relative to the vault root (a message may reach an
        answer, a turn's context or an MCP client, never the host's paths)."""
        try:
            return Path(path).relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).name

    def _read(self, path: Path, **kwargs: Any) -> pa.Table:
        try:
            return read_parquet(self.root, path, **kwargs)
        except FileNotFoundError:
            raise
        except NotInVault as exc:
            raise ArchiveError(f"{self.name(path)}: {exc.reason}; not read") from None
        except OSError as exc:
            raise ArchiveError(
                f"{self.name(path)}: unreadable ({exc.strerror or type(exc).__name__})"
            ) from None
        except pa.ArrowException as exc:
            why = str(exc).replace(os.fspath(self.root) + "/", "")
            raise ArchiveError(f"{self.name(path)}: unreadable Parquet file ({why})") from None

    def read_part(self, path: Path) -> PartContents:
        """Every turn of a part file, each row's bytes checked against its sha256."""
        return _from_table(path, self._read(path))

    def read_turn(self, path: Path, user: str, turn: str) -> TurnFiles:
        """One turn's files from `path` (a point lookup); raises unless every row checks out."""
        try:
            table = self._read(path, filters=[("user", "=", user), ("turn", "=", turn)])
        except FileNotFoundError:
            raise ArchiveError(f"{self.name(path)}: missing (it should hold {user}/{turn})") from None
        contents = _from_table(path, table)
        found = contents.intact((user, turn))
        if found is None:
            if (user, turn) in contents.turns:
                raise ArchiveError(
                    f"{self.name(path)}: rows of {user}/{turn} do not match their sha256 "
                    f"({', '.join(contents.bad_rows + contents.duplicate_rows)})"
                )
            raise ArchiveError(f"{self.name(path)}: holds no rows for {user}/{turn}")
        return found


def _by_month(turns: Iterable[TurnFiles]) -> dict[str, list[TurnFiles]]:
    by_month: dict[str, list[TurnFiles]] = {}
    for turn in turns:
        by_month.setdefault(turn.month, []).append(turn)
    return by_month


def _row_groups(table: pa.Table) -> list[tuple[int, int]]:
    """(start, stop) row ranges for the row groups of a table sorted by (user, turn)."""
    rows = zip(*(table.column(name).to_pylist() for name in ("user", "turn", "size")), strict=True)
    groups: list[tuple[int, int]] = []
    start, size, row = 0, 0, 0
    for _, files in groupby(rows, key=itemgetter(0, 1)):  # each turn's rows
        sizes = [file[2] for file in files]
        end, turn_size = row + len(sizes), sum(sizes)
        too_big = end - start > ROW_GROUP_ROWS or size + turn_size > ROW_GROUP_BYTES
        if row > start and too_big:
            groups.append((start, row))
            start, size = row, 0
        size += turn_size
        row = end
    if row > start:
        groups.append((start, row))
    return groups


def _to_table(turns: list[TurnFiles], batch: str, archived_at: datetime) -> pa.Table:
    at = archived_at.astimezone(UTC)
    rows = [  # in ARCHIVE_SCHEMA's order
        (t.user, t.turn, e.path, e.data, len(e.data), e.sha256, e.mode, e.mtime_ns, t.created_at, at, batch)
        for t in sorted(turns, key=lambda t: t.key)
        for e in t.files
    ]
    columns = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in ARCHIVE_SCHEMA.names]
    return pa.table(dict(zip(ARCHIVE_SCHEMA.names, columns, strict=True)), schema=ARCHIVE_SCHEMA)


def _from_table(path: Path, table: pa.Table) -> PartContents:
    data = table.to_pydict()
    grouped: dict[TurnKey, list[FileEntry]] = {}
    created: dict[TurnKey, datetime] = {}
    bad: list[str] = []
    duplicates: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    keys = zip(data["user"], data["turn"], data["path"], strict=True)
    for i, (user, turn, rel) in enumerate(keys):
        content: bytes = data["content"][i]
        name = f"{user}/{turn}/{rel}"
        if (user, turn, rel) in seen:
            duplicates.append(name)
            continue
        seen.add((user, turn, rel))
        if sha256_bytes(content) != data["sha256"][i] or len(content) != data["size"][i]:
            bad.append(name)
        entry = FileEntry(rel, content, data["mode"][i], data["mtime_ns"][i], data["sha256"][i])
        grouped.setdefault((user, turn), []).append(entry)
        created.setdefault((user, turn), data["created_at"][i])
    turns = {
        key: TurnFiles(key[0], key[1], created[key], tuple(sorted(files, key=lambda f: f.path)))
        for key, files in grouped.items()
    }
    return PartContents(path, turns, bad, duplicates)
