"""Reading a Parquet file of the vault as every vault file is read.

The catalog (`observability/catalog/`), the archive (`archive/turns/`) and the source
reliability table are Parquet files that the vault's writers made; what a reader finds
there may still be a link someone put in their place.  pyarrow opens a path as the
system does, following links, so each file is read here by `read_vault_file`: a link
(the file or a folder on its path) or anything leading out of `root` raises
`NotInVault`.  pyarrow then reads the bytes from memory, on the calling thread
(`use_threads=False`): with its thread pool, a short process that had read a part could
die at exit in C++ ("terminate called without an active exception", SIGABRT, exit -6):
a plain `verify` of a 3-turn vault did in 4 of ~120 runs, two at a time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from events.errors import NotInVault
from events.fsio import read_vault_file

__all__ = ["read_parquet"]


def read_parquet(
    root: Path,
    path: Path,
    *,
    columns: list[str] | None = None,
    filters: list[tuple[str, str, Any]] | None = None,
) -> pa.Table:
    """The table in `path`, a file under `root` (`NotInVault` if it is a link, or its
    path leaves `root`; `FileNotFoundError` if it is gone; pyarrow's errors if it is
    not Parquet).  Without `filters` it is read whole as one file (the dataset API that
    filters need costs several times more a file)."""
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        raise NotInVault(str(path), "is not inside the vault") from None
    data = pa.BufferReader(read_vault_file(root, rel)[0])
    if filters is None:
        return pq.ParquetFile(data).read(columns=columns, use_threads=False)
    return pq.read_table(data, columns=columns, filters=filters, partitioning=None, use_threads=False)
