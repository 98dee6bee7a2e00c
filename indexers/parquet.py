"""Reading a Parquet file of the vault as every vault file is read.

pyarrow opens a path following links, so the catalog, archive and reliability files are
read by `read_vault_file` (`NotInVault` for a link or a path leaving `root`) and parsed
from memory on the calling thread: with pyarrow's thread pool a short process could
abort at exit in C++."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from events.errors import NotInVault
from events.fsio import read_vault_file

__all__ = ["read_parquet"]


def read_parquet(root: Path, path: Path, *, filters: list[tuple[str, str, Any]] | None = None) -> pa.Table:
    """The table in `path` under `root` (`NotInVault`, `FileNotFoundError`, or pyarrow's
    errors if it is not Parquet).  Without `filters` it is read whole, not through the
    slower dataset API."""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        raise NotInVault(str(path), "is not inside the vault") from None
    data = pa.BufferReader(read_vault_file(root, rel)[0])
    if filters is None:
        return pq.ParquetFile(data).read(use_threads=False)
    return pq.read_table(data, filters=filters, partitioning=None, use_threads=False)
