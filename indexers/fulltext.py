"""The tantivy full-text index over every document of a vault: one class, `FullTextIndex`.

Layout under `indexes/`:

    fulltext/            the live index: tantivy/ (segments), state.jsonl, schema.json
    fulltext.lock        writer lock (flock; holds the writer's pid)
    fulltext.new/        a rebuild in progress (swapped in when complete)

The class is thin; its jobs live in their own modules: the schema (`schema`), the
state log (`state`), writing and rebuilding (`writer`, and `behind` for a batch
committed after its caller moved on), searching (`search`, with
`filters`, `ranking` — the ranking formula is that module's docstring — and
`snippets`), and what a search asks for (`request`).

Writers hold `fulltext.lock` only for one batch (and its commit's merges,
which end on their own thread: `settling`); a second writer waits up to
`wait_s` and then gets `IndexBusy` naming the holder's pid.  Readers wait for no
writer but a batch their own process writes behind (`behind`): every search reloads
the reader (≈50 µs) and reopens the index if a rebuild swapped the folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tantivy

from .behind import WrittenBehind, _WritingBehind
from .learned import Learned
from .schema import build_schema
from .search import _Searching
from .settling import MergesInFlight
from .state import StateEntry, _StateLog
from .visible_idf import VisibleIdf
from .writer import _Writing

__all__ = ["FullTextIndex"]


class FullTextIndex(_Writing, _WritingBehind, _StateLog, _Searching):
    """One vault's full-text index.  Cheap to construct; opens tantivy lazily."""

    def __init__(
        self, indexes_dir: Path, *, wait_s: float = 30.0, heap_mb: int = 128, name: str = "fulltext"
    ) -> None:
        self.indexes_dir = indexes_dir
        self.dir = indexes_dir / name
        self.lock_path = indexes_dir / f"{name}.lock"
        self.wait_s = wait_s
        self.heap_mb = heap_mb
        self._index: tantivy.Index | None = None
        self._ino: int | None = None
        self._state_cache: tuple[int, int, dict[str, StateEntry]] | None = None
        self._generation: tuple[int | None, int] | None = None
        self._counts: dict[tuple[Any, ...], float] = {}
        self._visible_idf = VisibleIdf()  # per user, the idf of what they may see
        self._untrimmed = 0  # documents committed since freed memory was handed back
        self._merges = MergesInFlight()  # the last commit's, ended on their own thread
        self._behind = WrittenBehind.of(self.dir)  # a batch committed after its caller moved on
        # what the learning loop derived and recorded: trust of turns, sharing of research
        self.learned = Learned()
        self._schema = build_schema()

    # --- layout -------------------------------------------------------------------

    @property
    def tantivy_dir(self) -> Path:
        return self.dir / "tantivy"

    @property
    def state_path(self) -> Path:
        return self.dir / "state.jsonl"
