"""Errors of the `indexers` package, each an `IndexingError`.  tantivy reports all but
`IndexBusy` and `IndexIncompatible` as `ValueError`; `tantivy_error` says which."""

from __future__ import annotations

import errno
import os
import re

__all__ = [
    "ArchiveError",
    "IndexBusy",
    "IndexDamaged",
    "IndexIOError",
    "IndexIncompatible",
    "IndexingError",
    "REBUILD",
    "tantivy_error",
    "without_advice",
]

REBUILD = "run `pandafs rebuild`"
"""What every message of an index that must be made anew ends with (after "; ")."""


def without_advice(message: str) -> str:
    """`message` less its closing advice to rebuild: said by whoever just rebuilt."""
    return message.removesuffix("; " + REBUILD)


class IndexingError(Exception):
    is_bad_input = False


class IndexBusy(IndexingError):
    """Another writer holds the index lock past the wait limit."""


class IndexIncompatible(IndexingError):
    """The index on disk was built with another schema: rebuild it."""


class IndexDamaged(IndexingError):
    """The index cannot be read: a file of it is corrupt or missing.  The documents are
    untouched; `pandafs rebuild` (or `verify --repair`) makes the index anew from them."""


class IndexIOError(IndexingError, OSError):
    """A read or commit of the index the disk refused (full, a size limit, an I/O error):
    nothing of a refused batch is in the index, the files keep everything, and the next
    reconcile indexes them.  An `OSError` (`errno` the system's), which every long-lived
    loop retries."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()


class ArchiveError(IndexingError):
    """The Parquet archive is missing or does not match its checksums."""


CANNOT_WRITE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})
"""The errnos of a file system that lets nothing be written (read-only, or full): a reader
that only wanted a lock goes on without it, since no writer can change anything there."""


def read_only_refusal(exc: ValueError) -> int | None:
    """The errno when tantivy's error is the file system refusing its lock file (a
    read-only mount or folder: `EROFS`, `EACCES`, `EPERM`), else None."""
    text = str(exc)
    if "Failed to acquire Lockfile" not in text:
        return None
    found = re.search(r"code: (\d+)", text)
    code = int(found.group(1)) if found else 0
    return code if code in (errno.EROFS, errno.EACCES, errno.EPERM) else None


def tantivy_error(exc: ValueError, where: str, *, writing: bool, root: str) -> IndexingError:
    """What tantivy's `ValueError` at `where` is: the disk's refusal (an "IO error" with an
    os error) or damage.  Paths in its text are made relative to `root`: the message may go
    to an MCP client, which is told nothing of where the vault is."""
    text = str(exc).replace(root.rstrip("/") + "/", "")
    refused = read_only_refusal(exc)
    if refused is not None:
        why = os.strerror(refused)
        return IndexIOError(refused, f"the index {where} is read-only here ({why}): not damaged")
    found = re.search(r"os error (\d+)", text)
    if "An IO error occurred" in text and (found is not None or writing):
        code = int(found.group(1)) if found else errno.EIO
        if writing:
            return IndexIOError(
                code,
                f"the index could not be written ({os.strerror(code)}): nothing of this batch is "
                "indexed; the files keep it, and the next reconcile or `pandafs watch` indexes it",
            )
        return IndexIOError(code, f"the index {where} could not be read ({os.strerror(code)})")
    return IndexDamaged(f"the index {where} cannot be read ({text}); {REBUILD}")
