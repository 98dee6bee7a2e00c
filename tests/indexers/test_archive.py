"""The Parquet cold store: layout, schema, round trip, checksums, dropping rows, DuckDB."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from events.errors import NotInVault
from indexers import archive as archive_module
from indexers.archive import ARCHIVE_SCHEMA, ArchiveStore
from indexers.errors import ArchiveError
from indexers.turn_folder import collect_turn_files, folder_signature, write_turn_folder
from tests.support.links import moved_aside, swap_for_link

ARCHIVED_AT = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _turn_folder(root: Path, user: str, turn: str, text: str) -> Path:
    folder = root / user / turn
    (folder / "webpage_cache" / "example-com").mkdir(parents=True)
    (folder / "empty").mkdir()
    (folder / "context.md").write_text(f"---\nid: {user}/{turn}\n---\n# {text}\n")
    (folder / "events.jsonl").write_bytes(b'{"seq":0}\n' + os.urandom(64).hex().encode())
    (folder / "metadata.json").write_text('{"created_at": "2026-01-05T00:00:00Z"}\n')
    (folder / "webpage_cache" / "example-com" / "page.bin").write_bytes(bytes(range(256)))
    os.chmod(folder / "metadata.json", 0o600)
    os.utime(folder / "context.md", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    return folder


@pytest.fixture
def store(tmp_path: Path) -> ArchiveStore:
    return ArchiveStore(tmp_path / "archive" / "turns", zstd_level=3)


def _collect(folder: Path, month: int = 1) -> object:
    created = datetime(2026, month, 5, tzinfo=UTC)
    return collect_turn_files(folder, folder.parent.name, folder.name, created)


def test_archive_schema_types() -> None:
    assert ARCHIVE_SCHEMA.field("content").type == pa.binary()
    assert ARCHIVE_SCHEMA.field("created_at").type == pa.timestamp("us", tz="UTC")
    assert "month" not in ARCHIVE_SCHEMA.names  # the partition lives in the folder name


def test_round_trip_is_byte_identical_with_modes_and_mtimes(store: ArchiveStore, tmp_path: Path) -> None:
    folder = _turn_folder(tmp_path / "live", "alice", "turn_000001", "hello")
    files = _collect(folder)
    [part] = store.write_parts([files], batch="b1", archived_at=ARCHIVED_AT).values()
    assert part == store.dir / "month=2026-01" / "part-b1.parquet"
    back = store.read_turn(part, "alice", "turn_000001")
    assert back.checksums() == files.checksums()
    assert "empty/" in back.checksums()
    dest = tmp_path / "restored" / "turn_000001"
    write_turn_folder(back, dest)
    assert folder_signature(dest) == folder_signature(folder)
    for path in folder.rglob("*"):
        twin = dest / path.relative_to(folder)
        assert os.stat(twin).st_mode == os.stat(path).st_mode, path
        if path.is_file():
            assert twin.read_bytes() == path.read_bytes()


def test_rows_sorted_months_partitioned_small_row_groups_zstd(
    store: ArchiveStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive_module, "ROW_GROUP_ROWS", 101)
    turns = []
    for i in range(300):
        user = ("bob", "alice", "carol")[i % 3]
        folder = _turn_folder(tmp_path / "live", user, f"turn_{300 - i:06d}", f"t{i}")
        turns.append(_collect(folder, month=1 + i % 2))
    written = store.write_parts(turns, batch="b7", archived_at=ARCHIVED_AT)
    assert sorted(written) == ["2026-01", "2026-02"]
    assert store.parts() == sorted(written.values())
    for path in written.values():
        parquet = pq.ParquetFile(path)
        meta = parquet.metadata
        assert meta.num_row_groups > 5
        assert meta.row_group(0).column(0).compression == "ZSTD"
        seen: set[tuple[str, str]] = set()
        for i in range(meta.num_row_groups):
            group = parquet.read_row_group(i)
            assert group.num_rows <= 101
            turns_here = set(zip(group["user"].to_pylist(), group["turn"].to_pylist(), strict=True))
            assert not turns_here & seen  # a turn never straddles two row groups
            seen |= turns_here
        table = pq.read_table(path, partitioning=None)
        columns = [table.column(c).to_pylist() for c in ("user", "turn", "path")]
        keys = list(zip(*columns, strict=True))
        assert keys == sorted(keys)


def test_row_groups_are_bounded_by_bytes(store: ArchiveStore, tmp_path: Path) -> None:
    turns = []
    for i in range(1, 4):
        folder = _turn_folder(tmp_path / "live", "alice", f"turn_{i:06d}", f"t{i}")
        (folder / "big.bin").write_bytes(os.urandom(3 << 20))
        turns.append(_collect(folder))
    [part] = store.write_parts(turns, batch="b1", archived_at=ARCHIVED_AT).values()
    assert pq.ParquetFile(part).metadata.num_row_groups == 3


def test_duckdb_reads_the_hive_partitions(store: ArchiveStore, tmp_path: Path) -> None:
    turns = [
        _collect(_turn_folder(tmp_path / "live", "alice", f"turn_{i:06d}", f"t{i}"), 1 + i % 3)
        for i in range(1, 31)
    ]
    store.write_parts(turns[:20], batch="b1", archived_at=ARCHIVED_AT)
    store.write_parts(turns[20:], batch="b2", archived_at=ARCHIVED_AT)
    glob = f"{store.dir}/**/*.parquet"
    rows = duckdb.sql(
        'SELECT month, count(DISTINCT ("user", turn)), bool_and(sha256(content) = sha256) '
        f"FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY month ORDER BY month"
    ).fetchall()
    assert rows == [("2026-01", 10, True), ("2026-02", 10, True), ("2026-03", 10, True)]


def test_tampered_bytes_are_reported_and_never_returned(store: ArchiveStore, tmp_path: Path) -> None:
    files = _collect(_turn_folder(tmp_path / "live", "alice", "turn_000001", "hello"))
    [part] = store.write_parts([files], batch="b1", archived_at=ARCHIVED_AT).values()
    table = pq.read_table(part, partitioning=None)
    content = table.column("content").to_pylist()
    content[0] = content[0].replace(b"hello", b"HELLO") if b"hello" in content[0] else b"x"
    tampered = table.set_column(
        table.schema.get_field_index("content"), "content", pa.array(content, pa.binary())
    )
    pq.write_table(tampered, part)
    contents = store.read_part(part)
    assert len(contents.bad_rows) == 1 and contents.intact(("alice", "turn_000001")) is None
    with pytest.raises(ArchiveError, match="do not match their sha256"):
        store.read_turn(part, "alice", "turn_000001")
    with pytest.raises(ArchiveError, match="holds no rows"):
        store.read_turn(part, "alice", "turn_000002")
    part.write_bytes(b"PAR1 not really")
    with pytest.raises(ArchiveError, match="unreadable"):
        store.read_part(part)


def test_drop_turns_rewrites_then_deletes_an_empty_part(store: ArchiveStore, tmp_path: Path) -> None:
    turns = [
        _collect(_turn_folder(tmp_path / "live", "alice", f"turn_{i:06d}", f"t{i}")) for i in range(1, 4)
    ]
    [part] = store.write_parts(turns, batch="b1", archived_at=ARCHIVED_AT).values()
    assert store.drop_turns(part, [("alice", "turn_000009")]) == 0
    assert store.drop_turns(part, [("alice", "turn_000002")]) == len(turns[1].files)
    assert set(store.read_part(part).turns) == {("alice", "turn_000001"), ("alice", "turn_000003")}
    assert store.read_turn(part, "alice", "turn_000003").checksums() == turns[2].checksums()
    store.drop_turns(part, [("alice", "turn_000001"), ("alice", "turn_000003")])
    assert not part.exists() and store.parts() == []


def test_temp_files_are_invisible_and_cleaned(store: ArchiveStore, tmp_path: Path) -> None:
    files = _collect(_turn_folder(tmp_path / "live", "alice", "turn_000001", "x"))
    [part] = store.write_parts([files], batch="b1", archived_at=ARCHIVED_AT).values()
    leftover = part.with_name(".pfs-part-b2.parquet.123.tmp")
    leftover.write_bytes(b"half a file")
    assert store.parts() == [part] and store.temp_files() == [leftover]
    assert store.clean_temp() == 1 and not leftover.exists()


def test_symlinks_are_refused(tmp_path: Path) -> None:
    folder = _turn_folder(tmp_path / "live", "alice", "turn_000001", "x")
    (folder / "link.md").symlink_to(folder / "context.md")
    with pytest.raises(ArchiveError, match="not a regular file"):
        _collect(folder)


def test_dropping_the_last_rows_never_deletes_through_a_swapped_month_folder(
    store: ArchiveStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The part left empty is deleted.  That went by path after the part was read: its
    month folder swapped for a link in between, the file of that name out there went
    instead.  Now the name is removed in the folder as opened and checked from the root."""
    folder = _turn_folder(tmp_path / "live", "alice", "turn_000001", "hello")
    [part] = store.write_parts([_collect(folder)], batch="b1", archived_at=ARCHIVED_AT).values()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / part.name).write_bytes(b"not the archive's\n")
    real_read = ArchiveStore._read

    def read_then_swapped(self: ArchiveStore, path: Path) -> pa.Table:
        table = real_read(self, path)
        swap_for_link(part.parent, outside)
        return table

    monkeypatch.setattr(ArchiveStore, "_read", read_then_swapped)
    with pytest.raises(NotInVault, match="a folder on its path is a symbolic link or leaves the vault"):
        store.drop_turns(part, [("alice", "turn_000001")])
    assert (outside / part.name).read_bytes() == b"not the archive's\n"
    assert (moved_aside(part.parent) / part.name).is_file()


@pytest.mark.parametrize("swapped", ["archive", "archive/turns"])
def test_a_new_month_folder_is_never_made_through_a_swapped_archive_folder(
    tmp_path: Path, swapped: str
) -> None:
    """A part of a new month makes its month folder first.  That was a `mkdir(parents=True)`
    by path: with `archive/` (or `archive/turns/`) swapped for a link, the month folder was
    made under the link's target, out of the vault, before the checked fsync refused.  Now
    the folders are made from the vault root down and in the store's folder as opened and
    checked from the root: refused with nothing made."""
    root = tmp_path / "vault"
    (root / swapped).parent.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / swapped).symlink_to(outside, target_is_directory=True)
    store = ArchiveStore(root / "archive" / "turns", root=root)
    folder = _turn_folder(tmp_path / "live", "alice", "turn_000001", "hello")
    with pytest.raises(NotInVault, match="is a symbolic link"):
        store.write_parts([_collect(folder)], batch="b1", archived_at=ARCHIVED_AT)
    assert list(outside.rglob("*")) == []
