"""Errors of the `indexers` package.

IndexingError            root
├── IndexBusy            another writer holds the index lock past the wait limit
├── IndexIncompatible    the index on disk was built with another schema: rebuild it
└── ArchiveError         the Parquet archive is missing or does not match its checksums
"""

from __future__ import annotations

__all__ = ["ArchiveError", "IndexBusy", "IndexIncompatible", "IndexingError"]


class IndexingError(Exception):
    is_bad_input = False


class IndexBusy(IndexingError):
    pass


class IndexIncompatible(IndexingError):
    pass


class ArchiveError(IndexingError):
    pass
