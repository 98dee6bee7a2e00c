"""A document in tantivy whose path the index's state does not name: what a delete tantivy
lost left behind (2026-11-25, `indexers.writer._tantivy_writer`), made with raw tantivy."""

from __future__ import annotations

import time
from pathlib import Path

import tantivy

__all__ = ["add_orphan"]


def add_orphan(tantivy_dir: Path, path: str, body: str) -> None:
    """Commit one document at `path` into the tantivy index at `tantivy_dir`, behind the
    state log's back (no other field set: no search filter of ours matches it)."""
    index = tantivy.Index.open(str(tantivy_dir))
    deadline = time.monotonic() + 30.0
    while True:  # a command run in this process may still hold tantivy's writer for its merges
        try:
            writer = index.writer(heap_size=15_000_000, num_threads=1)
            break
        except ValueError as exc:
            if "LockBusy" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    writer.add_document(tantivy.Document(path=path, body=body))
    writer.commit()
    writer.wait_merging_threads()
