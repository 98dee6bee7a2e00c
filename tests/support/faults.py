"""A disk that refuses writes, for the tests of what a refused write leaves behind.

`RLIMIT_FSIZE` stands in for a full disk: a write that would take a file past the limit
fails with `EFBIG` (the signal it would also raise, SIGXFSZ, is ignored), whoever runs the
tests, root included, and without filling a real disk."""

from __future__ import annotations

import resource
import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["limit_file_size", "writes_refused_past"]


def limit_file_size(limit: int | None) -> None:
    """In this process (and its children to come): a write past `limit` bytes fails;
    None lifts the limit."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard if limit is None else limit, hard))


@contextmanager
def writes_refused_past(limit: int) -> Iterator[None]:
    """`limit_file_size(limit)` while the block runs."""
    limit_file_size(limit)
    try:
        yield
    finally:
        limit_file_size(None)
