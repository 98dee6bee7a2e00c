"""Errors of the `indexers` package.

IndexingError            root
├── IndexBusy            another writer holds the index lock past the wait limit
├── IndexIncompatible    the index on disk was built with another schema: rebuild it
├── IndexWriteError      the disk refused a commit (full, a size limit, an I/O error); also
│                        an `OSError`, which every long-lived loop retries later
└── ArchiveError         the Parquet archive is missing or does not match its checksums
"""

from __future__ import annotations

__all__ = ["ArchiveError", "IndexBusy", "IndexIncompatible", "IndexWriteError", "IndexingError"]


class IndexingError(Exception):
    is_bad_input = False


class IndexBusy(IndexingError):
    pass


class IndexIncompatible(IndexingError):
    pass


class IndexWriteError(IndexingError, OSError):
    """A commit the disk refused: nothing of its batch is in the index, the files keep
    everything, and the next reconcile (or the watcher's retry) indexes them.  Raised
    for tantivy's I/O errors, which it reports as `ValueError`; `errno` is the system's."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


class ArchiveError(IndexingError):
    pass
