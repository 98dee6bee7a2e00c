"""Keeping the index in step with the files: index paths, reconcile, rebuild.

`reconcile` compares (path, mtime, size) on disk with the index's state and touches only
what changed; a new mtime with the same checksum is only re-stamped.  `rebuild` builds a
fresh index beside the live one, catches up with files changed meanwhile, and swaps it
in.  Skipped files are reported with their reason and never rewritten."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from events.fsio import json_lines
from events.layout import DocRef, classify

from .documents import IndexDoc, Loaded, Skipped, parse_index_doc, read_document
from .fulltext import FullTextIndex
from .state import StateEntry
from .walk import is_utf8_name, not_utf8, read_turn_folders, scan_documents, walk_documents
from .writer import IndexBatch

__all__ = ["SyncReport", "index_paths", "rebuild", "reconcile", "scan_documents", "upsert_rendered"]

Progress = Callable[[int], None]
T = TypeVar("T")
Item = str | tuple[str, DocRef, Loaded]
"""A path to read, or a path and what a walk read of it."""


def count_mismatch(held: int, recorded: int) -> str | None:
    """The problem when tantivy holds another number of documents than the state records
    as indexed (`FullTextIndex.counts`), or None."""
    if held == recorded:
        return None
    return f"the index holds {held} documents but {recorded} are recorded as indexed"


@dataclass(eq=False)
class SyncReport:
    """What an index sync did to each document it looked at, and how long it took."""

    indexed: int = 0
    deleted: int = 0
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    seconds: float = 0.0
    documents: int = 0
    stages: dict[str, float] = field(default_factory=dict)
    """Seconds per stage of a full rebuild (walk, read, parse, index add, commit)."""
    recorded: int | None = None
    """Documents the state records as indexed, counted with `documents` under the writer
    lock by a full reconcile (None: not counted); after one, the two are equal unless
    tantivy holds documents no path names, which only a rebuild removes."""

    def out_of_step(self) -> str | None:
        """What a full reconcile's counts say is wrong with the index (None: in step, or not counted)."""
        return None if self.recorded is None else count_mismatch(self.documents, self.recorded)

    def add(self, other: SyncReport) -> None:
        """Count `other`'s documents in too (two passes reported as one)."""
        self.indexed += other.indexed
        self.deleted += other.deleted
        self.unchanged += other.unchanged
        self.skipped += other.skipped

    def as_json(self) -> dict[str, Any]:
        rate = self.indexed / self.seconds if self.seconds else 0.0
        return {
            "documents": self.documents,
            "indexed": self.indexed,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "seconds": round(self.seconds, 3),
            "docs_per_s": round(rate, 1),
            "stages": {k: round(v, 3) for k, v in self.stages.items()},
        }


def record_loaded(batch: IndexBatch, root: Path, loaded: IndexDoc | Skipped, report: SyncReport) -> None:
    """Put one loaded document in the index, or record why it is not there: a skipped file
    is removed from the index and remembered with its mtime and size."""
    if isinstance(loaded, IndexDoc):
        batch.upsert(loaded)
        report.indexed += 1
        return
    report.skipped.append(loaded)
    batch.delete(loaded.path)
    if loaded.refused:
        return
    try:
        st = os.lstat(root / loaded.path)
    except FileNotFoundError:
        return
    batch.touch(loaded.path, StateEntry("", st.st_mtime_ns, st.st_size, skipped=True))


def _apply(
    batch: IndexBatch,
    root: Path,
    paths: Iterable[Item],
    state: dict[str, StateEntry],
    report: SyncReport,
    max_bytes: int,
    progress: Progress | None,
    fresh: bool = False,
) -> None:
    """Index, re-stamp (same checksum as `state` records) or delete each of `paths` (a path,
    or a path and what a walk read of it).  `fresh`: a rebuild's new index, nothing to delete;
    its stages' seconds go to `report.stages`."""
    clock = time.perf_counter
    read = parse = add = 0.0
    items = iter(paths)
    while True:
        t0 = clock()
        item = next(items, None)
        if item is None:
            break
        loaded: IndexDoc | Loaded
        if isinstance(item, str):
            rel = item
            ref = classify(rel)
            loaded = None if ref is None else read_document(root, rel, max_bytes=max_bytes)
        else:
            rel, ref, loaded = item
        t1 = clock()
        if not isinstance(loaded, IndexDoc | Skipped | None):  # read, not yet parsed
            loaded = parse_index_doc(rel, *loaded, max_bytes=max_bytes, ref=ref)
        t2 = clock()
        known = state.get(rel)
        if loaded is None:
            if known is not None or (ref is not None and not fresh):
                batch.delete(rel)
                report.deleted += known is not None
        elif isinstance(loaded, IndexDoc) and known is not None and known.checksum == loaded.checksum:
            batch.touch(rel, StateEntry(loaded.checksum, loaded.mtime_ns, loaded.size))
            report.unchanged += 1
        else:
            record_loaded(batch, root, loaded, report)
        read += t1 - t0
        parse += t2 - t1
        add += clock() - t2
        if progress is not None:
            progress(1)
    if fresh:  # (added up: a rebuild may index its paths in two passes)
        for name, seconds in (("read", read), ("parse", parse), ("index add", add)):
            report.stages[name] = report.stages.get(name, 0.0) + seconds


def upsert_rendered(
    batch: IndexBatch, *, root: Path, docs: list[IndexDoc | Skipped], paths: list[str], max_bytes: int
) -> None:
    """Index rendered documents and `paths` read from disk, inside the caller's batch.  A
    rendered document whose file changed since is read again under the index lock, so an
    older copy never replaces a newer one."""
    report, again = SyncReport(), list(paths)  # (what it did is not reported)
    for doc in docs:
        if isinstance(doc, IndexDoc) and not _unchanged(root, doc):
            again.append(doc.path)
        else:
            record_loaded(batch, root, doc, report)
    _apply(batch, root, again, {}, report, max_bytes, None)  # read (or deleted, if gone)


def _unchanged(root: Path, doc: IndexDoc) -> bool:
    """The file of `doc` is still the one it was read from (same mtime and size)."""
    try:
        st = os.lstat(root / doc.path)
    except FileNotFoundError:
        return False
    return (st.st_mtime_ns, st.st_size) == (doc.mtime_ns, doc.size)


def chunked(items: list[T], size: int) -> Iterator[list[T]]:
    """`items` in slices of `size` (the last one shorter)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def index_paths(
    index: FullTextIndex,
    root: Path,
    paths: Iterable[str],
    *,
    max_bytes: int,
    batch_size: int = 1000,
    force: bool = False,
) -> SyncReport:
    """Upsert (or delete, if gone) these vault-relative paths — the watcher's entry point."""
    started = time.perf_counter()
    report = SyncReport()
    wanted = sorted({p for p in paths if classify(p) is not None})
    report.skipped += [not_utf8(p) for p in wanted if not is_utf8_name(p)]  # never in the index
    wanted = [p for p in wanted if is_utf8_name(p)]
    state = {} if force else index.state()
    for chunk in chunked(wanted, batch_size):
        with index.batch() as batch:
            _apply(batch, root, chunk, state, report, max_bytes, None)
    report.seconds = time.perf_counter() - started
    return report


def reconcile(
    index: FullTextIndex,
    root: Path,
    *,
    max_bytes: int,
    batch_size: int = 1000,
    progress: Progress | None = None,
) -> SyncReport:
    """Bring the index exactly in step with the files, touching only what changed."""
    started = time.perf_counter()
    report = SyncReport()
    state = index.state()
    files = scan_documents(root, refused=report.skipped)
    changed = sorted(
        p
        for p, (mtime, size) in files.items()
        if p not in state or state[p].mtime_ns != mtime or state[p].size != size
    )
    gone = sorted(p for p in state if p not in files)
    report.unchanged = len(files) - len(changed)
    for chunk in chunked(changed + gone, batch_size):
        with index.batch() as batch:
            _apply(batch, root, chunk, state, report, max_bytes, progress)
    index.compact_state()  # the state log only grows; reconcile is the periodic moment to fold it
    report.documents, report.recorded = index.counts()
    report.seconds = time.perf_counter() - started
    return report


def _unless(held: Callable[[str], bool], items: Iterable[Item], later: list[str]) -> Iterator[Item]:
    """The items whose path `held` says no to; the other paths go to `later`, read again
    after the barrier (their files may be rewritten meanwhile)."""
    for item in items:
        path = item if isinstance(item, str) else item[0]
        if held(path):
            later.append(path)
        else:
            yield item


def rebuild(
    index: FullTextIndex,
    root: Path,
    *,
    max_bytes: int,
    batch_size: int = 1000,
    user: str | None = None,
    progress: Progress | None = None,
    on_total: Callable[[int], None] | None = None,
    held: Callable[[str], bool] | None = None,
    barrier: Callable[[], None] | None = None,
) -> SyncReport:
    """Recreate the index from the files (all of it, or one user's documents).  With
    `barrier`, the paths `held` refuses are indexed only after `barrier()` returns; its
    exception leaves the live index as it was."""
    started = time.perf_counter()
    report = SyncReport()
    if user is not None:
        files = scan_documents(root, f"users/{user}", refused=report.skipped)
        files.update(scan_documents(root, f"archive/stubs/{user}", refused=report.skipped))
        if on_total is not None:
            on_total(len(files))
        old = [p for p in index.state() if classify(p) is not None and classify(p).user == user]  # type: ignore[union-attr]
        with index.batch() as batch:
            for path in old:
                batch.delete(path)
        for chunk in chunked(sorted(files), batch_size):
            with index.batch() as batch:
                _apply(batch, root, chunk, {}, report, max_bytes, progress)
    else:
        # the turn folders are listed, not walked: their documents are read as they are
        # walked (`read_turn_folders`), the others by path; the progress counts each turn
        # folder as one step and each other document as one
        turns: list[str] = []
        skipped = report.skipped
        paths = sorted(rel for rel, _ in walk_documents(root, refused=skipped, turn_folders=turns))
        report.stages["walk"] = time.perf_counter() - started
        if on_total is not None:
            on_total(len(paths) + len(turns))

        hold = held if barrier is not None else None
        live_log = index.folder.state_path
        mark = live_log.stat().st_size if live_log.exists() else 0

        def catch_up(open_batch: Callable[[], Any], built: Callable[[], dict[str, StateEntry]]) -> None:
            """Redo on the new index what other writers did to the live one meanwhile: the lines
            its state log gained since the rebuild began (an edit no writer saw: reconcile's)."""
            if not live_log.exists() or live_log.stat().st_size <= mark:
                return
            added = index.read_state_log(live_log, mark)  # never through a link
            paths = {entry["p"] for entry in json_lines(added) if "p" in entry}
            if paths:
                with open_batch() as batch:
                    _apply(batch, root, sorted(paths), built(), report, max_bytes, None)

        with index.rebuild(catch_up) as batch:
            later_in_turns: list[str] = []  # (their folders were counted: no progress step)
            later: list[str] = []
            found = read_turn_folders(root, turns, refused=skipped, max_bytes=max_bytes, progress=progress)
            in_turns = found if hold is None else _unless(hold, found, later_in_turns)
            _apply(batch, root, in_turns, {}, report, max_bytes, None, fresh=True)
            first = paths if hold is None else _unless(hold, paths, later)
            _apply(batch, root, first, {}, report, max_bytes, progress, fresh=True)
            if barrier is not None and hold is not None:
                waited = time.perf_counter()
                barrier()
                report.stages["waiting"] = time.perf_counter() - waited
                _apply(batch, root, later_in_turns, {}, report, max_bytes, None, fresh=True)
                _apply(batch, root, later, {}, report, max_bytes, progress, fresh=True)
            filled = time.perf_counter()
        report.stages["commit"] = time.perf_counter() - filled
    report.documents = index.reader.count()
    report.seconds = time.perf_counter() - started
    return report
