"""Atomic writes go through a temporary file beside the target whose name is
predictable (the writer's pid): a link planted at that name must never carry the write
out of the vault, for our own writes and for pyarrow's Parquet writers alike."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from events.fsio import atomic_file, atomic_write

SECRET = "purplemoose"


def _planted(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """(target, outside file holding the secret, link to it at the temporary name the
    next write of the target from this process uses)."""
    outside = tmp_path / "outside"
    outside.write_text(SECRET)
    vault = tmp_path / "vault"
    vault.mkdir()
    link = vault / f".pfs-{name}.{os.getpid()}.tmp"
    os.symlink(outside, link)
    return vault / name, outside, link


def test_a_link_at_the_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    target, outside, link = _planted(tmp_path, "preferences.md")

    atomic_write(target, b"- oat milk\n")

    assert outside.read_text() == SECRET  # before: truncated and filled with the new bytes
    assert not target.is_symlink() and target.read_bytes() == b"- oat milk\n"
    assert not os.path.lexists(link)


def test_a_parquet_writer_never_writes_through_a_link_at_the_temporary_name(tmp_path: Path) -> None:
    target, outside, _ = _planted(tmp_path, "part.parquet")

    with atomic_file(target) as out:
        pq.write_table(pa.table({"n": [1, 2, 3]}), out)

    assert outside.read_text() == SECRET
    assert not target.is_symlink() and pq.read_table(target).column("n").to_pylist() == [1, 2, 3]


def test_a_failed_write_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "part.parquet"
    target.write_bytes(b"old")
    try:
        with atomic_file(target) as out:
            out.write(b"half")
            raise RuntimeError("the writer died")
    except RuntimeError:
        pass
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["part.parquet"]


def test_json_lines_yields_the_objects_and_passes_over_torn_and_foreign_lines() -> None:
    from events.fsio import json_lines

    data = b'{"a": 1}\n[1, 2]\nnot json\n{"b": "used"}\n{"c": 3'
    assert list(json_lines(data)) == [{"a": 1}, {"b": "used"}]
    assert list(json_lines(data, b"used")) == [{"b": "used"}]
