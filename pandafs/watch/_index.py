"""The index side of the watch: which paths the loop never needs, reconciling only the
folders that changed, and how its log lines name files."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable

from indexers.sync import SyncReport, scan_documents
from indexers.watcher import default_ignore

from ..memory.api import Memory

_UNWATCHED = ("outbox/", "inbox/processed/", "inbox/rejected/", "observability/", "archive/turns/")


def watch_ignore(rel_path: str) -> bool:
    """Paths the watch loop never needs: `default_ignore` plus answers, filed-away
    queries, observability files and the Parquet archive (none is a document or a query)."""
    return default_ignore(rel_path) or (rel_path + "/").startswith(_UNWATCHED)


def reconcile_dirs(memory: Memory, dirs: Iterable[str]) -> SyncReport:
    """Reconcile only these vault-relative folders: index what changed, drop what left."""
    started = time.perf_counter()
    tops = sorted(set(dirs))
    tops = [d for d in tops if not any(d.startswith(o + "/") for o in tops if o != d)]
    root = memory.vault.root
    state = memory.index.state()
    wanted: set[str] = set()
    unchanged = 0
    for top in tops:
        files = scan_documents(root, top)
        for rel, (mtime, size) in files.items():
            known = state.get(rel)
            if known is None or (known.mtime_ns, known.size) != (mtime, size):
                wanted.add(rel)
            else:
                unchanged += 1
        prefix = top + "/"
        wanted.update(p for p in state if p.startswith(prefix) and p not in files)
    report = memory.index_paths(sorted(wanted)) if wanted else SyncReport()
    report.unchanged += unchanged
    report.seconds = time.perf_counter() - started
    return report


def brief_paths(paths: Iterable[str], limit: int = 3) -> str:
    """The first `limit` paths, sorted, and how many more (for a log line)."""
    items = sorted(paths)
    shown = ", ".join(items[:limit])
    return shown + (f" +{len(items) - limit} more" if len(items) > limit else "")


def mtime_of(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0
