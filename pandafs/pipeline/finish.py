"""The end of a turn: its projections and its index batch, which for a new turn is
written behind its answer.

`ask` returns once the turn's events are fsynced and its files written; its index commit
lands meanwhile on a thread of its own (`indexers.behind`).  Until then the turn keeps its
log's lock and its `.indexing` mark: this process's index reads wait for the commit, and
a process killed before it leaves the mark for the next `ask`, `watch` or `verify
--repair` (`recovery.UNINDEXED`).  The commit's error is kept for `settle`."""

from __future__ import annotations

import os
import time
from collections import deque
from functools import partial
from pathlib import Path

from events.fsio import atomic_write, unlink_in_vault
from events.log import EventWriter
from events.projection import TurnView
from events.render import context_parts, render_turn
from indexers.documents import IndexDoc, index_doc_from_parts

from ..memory.api import Memory
from ..research.reliability import ReliabilityTable
from ..turns import INDEXING, TurnRef, project
from ..vault import Vault

__all__ = ["Finisher"]

BEHIND_KEPT = 1024
"""Commit times kept (a `watch` or MCP process runs turns for days)."""


class Finisher:
    """Writes complete turns' projections and index batches for one `Pipeline`."""

    def __init__(self, vault: Vault, memory: Memory, reliability: ReliabilityTable) -> None:
        self.vault = vault
        self.memory = memory
        self.reliability = reliability
        self.behind_ms: deque[float] = deque(maxlen=BEHIND_KEPT)
        """How long each of the last batches written behind an answer took, handed over to
        committed (benchmarks read it)."""
        self._errors: list[BaseException] = []

    def settle(self) -> None:
        """Wait until the last batch written behind has ended, and raise what one ended with
        since the last call (its turn keeps its `.indexing` mark for recovery)."""
        self.memory.index.folder.behind.settle()
        errors, self._errors = self._errors, []
        if errors:
            raise errors[0]

    def finish(
        self,
        ref: TurnRef,
        view: TurnView,
        queued: list[IndexDoc],
        steps: dict[str, float],
        writer: EventWriter | None = None,
    ) -> None:
        """Write the projections and index, in one commit, the turn, its research document, the
        memory it committed, the site notes it changed and the documents Save updated (`queued`).

        metadata.json is written last, so one that says how the turn ended means it was
        projected.  With `writer` the batch is written behind: the turn is marked `.indexing`
        first, and the log's lock and the mark are let go when the commit has landed."""
        begun = time.perf_counter()
        front, body = context_parts(view)
        files = render_turn(view, parts=(front, body))
        last = {"metadata.json": files.pop("metadata.json")}
        project(ref, view, durable=False, files=files)
        context = ref.path / "context.md"
        doc = index_doc_from_parts(
            self.vault.rel(context),
            files["context.md"],
            front,
            body,
            os.stat(context).st_mtime_ns,
            max_bytes=self.vault.config.index.max_file_bytes,
        )
        paths = [c.doc_path for c in view.committed]
        # the turn's own time, as a rebuild folds it from the events (not the clock at Save)
        paths += self.reliability.apply(ref.doc_id, list(view.extractions), view.occurred_at)
        if (ref.path / "research.md").exists():
            paths.append(self.vault.rel(ref.path / "research.md"))
        mark = ref.path / INDEXING
        if writer is None:
            indexed = time.perf_counter()
            self.memory.index_docs([doc, *queued], paths)
            index_s = time.perf_counter() - indexed
            if os.path.lexists(mark):  # a dead run's, whose batch was written behind
                unlink_in_vault(self.vault.root, mark, durable=False)
            project(ref, view, durable=False, files=last)
        else:
            atomic_write(mark, b"", durable=False, root=self.vault.root)
            project(ref, view, durable=False, files=last)
            indexed = time.perf_counter()
            lock = writer.keep_lock()
            try:
                done = partial(self._indexed, mark, lock, indexed)
                self.memory.index_docs([doc, *queued], paths, then=done)
            except BaseException:
                os.close(lock)
                raise
            index_s = time.perf_counter() - indexed
        steps["project"] += time.perf_counter() - begun - index_s
        steps["index"] += index_s

    def _indexed(self, mark: Path, lock: int, began: float, error: BaseException | None) -> None:
        """A turn's batch written behind has ended (on its thread): unmark the turn if it
        was committed, let go of the turn's log, keep an error for `settle`."""
        try:
            if error is None:
                unlink_in_vault(self.vault.root, mark, durable=False)
                self.behind_ms.append((time.perf_counter() - began) * 1000.0)
        except BaseException as exc:  # the mark stays: the turn is indexed again, harmlessly
            error = error or exc
        finally:
            os.close(lock)
        if error is not None:
            self._errors.append(error)
