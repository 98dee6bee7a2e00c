"""The learning fold's cache under `indexes/learning/` (disposable: made again from the events).

    state.json          a snapshot of the fold (how far it got, its maps, every counted
                        document's counters and last trust); it names its journal
    journal-{n}.jsonl   one JSON line per save since: each map's changed keys (null: removed)
    ../learning.lock    one writer at a time

When the journal outgrows the snapshot, a new snapshot naming a new, empty journal replaces
it, then the old journal goes (a crash between leaves it named by nothing: no line is folded
twice).  A torn or unreadable file makes `load` report the cache stale, and the engine
recomputes everything.  A process keeps the state it last saved (`LearningCache.of`) and
reads only the lines appended since; the indexer's readers (`learned_of`) do the same
without the lock, up to the last whole line."""

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from events.errors import NotInVault
from events.fsio import (
    FileKey,
    append_file,
    atomic_write,
    file_key,
    open_vault_file,
    remove_tree_in_vault,
    unlink_in_vault,
)
from indexers.writer import Learned

from ..memory.api import Memory
from ..vault import Vault
from .trust import Counts, Projection, ScopeRecord, shares

__all__ = ["Cursor", "LearnedReader", "LearningCache", "StaleCache", "learned_of"]

CACHE_VERSION = 2
STATE_FILE = "state.json"
JOURNAL_MIN_BYTES = 1 << 20
"""A journal is folded into a new snapshot once it is this long and longer than the snapshot."""


class StaleCache(Exception):
    """The cache cannot be trusted (missing, another version, torn); recompute it."""


class Cursor(NamedTuple):
    """How far the fold got in one user's turns: all up to `upto`, but those `pending`."""

    upto: int = 0
    pending: tuple[int, ...] = ()


class Tracked(dict[str, Any]):
    """A dict that remembers the keys set or removed since the last save."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.changed: set[str] = set()

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.changed.add(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.changed.add(key)

    def hold(self, keys: Iterable[str]) -> None:
        """Hold exactly `keys` (a set kept as a map of each key to 1)."""
        keys = set(keys)
        for key in [k for k in self if k not in keys]:
            del self[key]
        for key in keys - set(self):
            self[key] = 1


# each map's values as JSON and back (the others are JSON already)
_DUMP: dict[str, Callable[[Any], Any]] = {
    "counts": list,
    "users": lambda c: {"upto": c.upto, "pending": list(c.pending)},
    "scope": lambda r: r._asdict(),
}
_LOAD: dict[str, Callable[[Any], Any]] = {
    "counts": lambda v: Counts(*v),
    "users": lambda v: Cursor(v["upto"], tuple(v["pending"])),
    "feedback": lambda v: (int(v[0]), str(v[1])),
    "scope": lambda v: ScopeRecord(**v),
}


@dataclass(eq=False)
class LearningState:
    """The fold's state.  `counts`: usage, validations, successes per document; `trust`: what
    was last materialised (the indexer's trust for a document whose file carries none);
    `users`: each user's `Cursor`; `logs`: maintenance log events folded per user;
    `feedback`, `scope`, `scope_days`: the `Projection`'s maps; `catalog_rows`: rows Save folded
    and has not written yet, by turn id; `dirty`: documents being written; `rollup_days`:
    days whose rollups are out of date (both sets: `Tracked.hold`)."""

    counts: Tracked = field(default_factory=Tracked)
    trust: Tracked = field(default_factory=Tracked)
    users: Tracked = field(default_factory=Tracked)
    logs: Tracked = field(default_factory=Tracked)
    feedback: Tracked = field(default_factory=Tracked)
    scope: Tracked = field(default_factory=Tracked)
    scope_days: Tracked = field(default_factory=Tracked)
    catalog_rows: Tracked = field(default_factory=Tracked)
    dirty: Tracked = field(default_factory=Tracked)
    rollup_days: Tracked = field(default_factory=Tracked)

    def fold(self, data: dict[str, Any]) -> None:
        """Apply one journal line (or a snapshot's maps)."""
        for name in MAPS:
            changes = data.get(name)
            if changes:
                target: Tracked = getattr(self, name)
                load = _LOAD.get(name)
                for key, value in changes.items():
                    if value is None:
                        dict.pop(target, key, None)
                    else:
                        dict.__setitem__(target, key, load(value) if load else value)

    def dump(self, *, changes: bool = False) -> dict[str, Any]:
        """The maps (only their changed keys with `changes`) as JSON values."""
        out: dict[str, Any] = {}
        for name in MAPS:
            target: Tracked = getattr(self, name)
            dump = _DUMP.get(name)
            keys = sorted(target.changed) if changes else sorted(target)
            values = {k: (dump(target[k]) if dump else target[k]) if k in target else None for k in keys}
            if values or not changes:
                out[name] = values
        return out

    def saved(self) -> None:
        """Forget what changed: it is on disk now."""
        for name in MAPS:
            getattr(self, name).changed.clear()


MAPS = tuple(f.name for f in fields(LearningState))


def learning_dir(vault: Vault) -> Path:
    """The learning cache's folder, `indexes/learning/`."""
    return vault.layout.indexes / "learning"


def cache_is_there(vault: Vault) -> bool:
    """Whether the learning cache has a state file (after `rm -r indexes/`, or in a vault
    only imported into, it has none)."""
    return (learning_dir(vault) / STATE_FILE).is_file()


_KEPT: "dict[tuple[str, float], LearningCache]" = {}


class LearningCache:
    """The fold's state as loaded from a snapshot and its journal (module docstring)."""

    def __init__(self, directory: Path, prior_weight: float, root: Path) -> None:
        self.dir = directory
        self.prior_weight = prior_weight
        self.root = root  # the vault: nothing below it is read or written through a link
        self.state = LearningState()
        self._snapshot: FileKey | None = None  # the snapshot the state holds, as read or written
        self._snapshot_bytes = 0
        self._journal = ""  # the journal's file name
        self._offset = 0  # the journal's bytes folded into the state
        self._clean = False  # the state is what the files say (nothing folded since, unsaved)
        self.queued: tuple[str, dict[str, float]] = ("", {})
        """The turn folder whose index commit carries the trust Save's preview gave the
        documents it used, and that trust."""

    @classmethod
    def of(cls, vault: Vault) -> "LearningCache":
        """This process's cache of `vault`, kept between uses (used under the learning lock)."""
        key = (os.fspath(learning_dir(vault)), vault.config.memory.trust_prior_weight)
        kept = _KEPT.get(key)
        if kept is None:
            kept = _KEPT[key] = cls(learning_dir(vault), key[1], vault.root)
        return kept

    def reset(self) -> None:
        """Start empty: the next save writes a whole new snapshot."""
        self.state = LearningState()
        self._snapshot = None
        self._clean = False
        self.queued = ("", {})

    def load(self, *, strict: bool = True) -> None:
        """Bring the state up to what the files say, or raise `StaleCache` when there is none
        we can use.  Only what was appended since the last load or save is read, if the
        state is as that left it.  `strict=False` (a reader without the lock): a line still
        being written is left for later."""
        path = self.dir / STATE_FILE
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            self.reset()
            raise StaleCache("no learning cache yet") from None
        if not (self._clean and self._snapshot == file_key(st)):
            self._clean = False
            self._load_snapshot(path)
        self._clean = False
        self._fold_journal(strict)
        self._clean = True

    def _load_snapshot(self, path: Path) -> None:
        try:
            with open_vault_file(self.root, path.relative_to(self.root).as_posix()) as handle:
                st = os.fstat(handle.fileno())
                raw = handle.read()
            data = orjson.loads(raw)
        except (FileNotFoundError, NotInVault):
            raise StaleCache(f"{path}: not a file of the cache") from None
        except orjson.JSONDecodeError as exc:
            raise StaleCache(f"{path}: unreadable ({exc})") from None
        if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
            raise StaleCache(f"{path}: not a cache this PandaFS writes (version {CACHE_VERSION})")
        if data.get("prior_weight") != self.prior_weight:
            raise StaleCache("[memory] trust_prior_weight changed")
        state = LearningState()
        try:
            state.fold(data)
        except (TypeError, ValueError, IndexError, AttributeError) as exc:
            raise StaleCache(f"{path}: unreadable ({exc})") from None
        state.saved()
        self.state = state
        self.queued = ("", {})
        self._snapshot, self._snapshot_bytes = file_key(st), len(raw)
        self._journal, self._offset = str(data.get("journal", "")), 0

    def _fold_journal(self, strict: bool) -> None:
        path = self.dir / self._journal
        try:
            if os.stat(path).st_size == self._offset:
                return  # nothing appended since (a link is refused below, when it grows)
            with open_vault_file(self.root, path.relative_to(self.root).as_posix()) as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:
                    raise StaleCache(f"{path}: shorter than what was folded from it")
                handle.seek(self._offset)
                raw = handle.read()
        except FileNotFoundError:
            if self._offset:
                raise StaleCache(f"{path}: gone") from None
            return
        except NotInVault:
            raise StaleCache(f"{path}: not a file of the cache") from None
        whole = raw[: raw.rfind(b"\n") + 1]
        if strict and len(whole) < len(raw):
            raise StaleCache(f"{path}: ends in a torn line")
        try:
            for line in whole.splitlines():
                self.state.fold(orjson.loads(line))
        except (orjson.JSONDecodeError, TypeError, ValueError, IndexError, AttributeError) as exc:
            raise StaleCache(f"{path}: unreadable ({exc})") from None
        self.state.saved()
        self._offset += len(whole)
        if whole:  # another process saved meanwhile: what it indexed is not known here
            self.queued = ("", {})

    def release(self) -> None:
        """The caller is done with the state: folded changes it did not save make the next
        load read the files again."""
        if any(getattr(self.state, name).changed for name in MAPS):
            self._clean = False

    def save(self) -> None:
        """Append what changed to the journal (a whole snapshot after a reset, or once the
        journal outgrows the snapshot)."""
        self._clean = False
        if self._snapshot is None or self._offset > max(JOURNAL_MIN_BYTES, self._snapshot_bytes):
            self._write_snapshot()
        else:
            line = self.state.dump(changes=True)
            if line:
                data = orjson.dumps(line) + b"\n"
                append_file(self.dir / self._journal, data, root=self.root, durable=False)
                self._offset += len(data)
        self.state.saved()
        self._clean = True

    def _write_snapshot(self) -> None:
        self._journal, self._offset = f"journal-{time.time_ns():020d}.jsonl", 0
        data = orjson.dumps(
            {
                "version": CACHE_VERSION,
                "prior_weight": self.prior_weight,
                "journal": self._journal,
                **self.state.dump(),
            }
        )
        path = self.dir / STATE_FILE
        atomic_write(path, data, durable=False, root=self.root)
        self._snapshot, self._snapshot_bytes = file_key(os.lstat(path)), len(data)
        for stale in [p for p in self.dir.glob("journal-*.jsonl") if p.name != self._journal]:
            unlink_in_vault(self.root, stale, durable=False)
        remove_tree_in_vault(self.root, self.dir / "counts")  # what an older PandaFS kept here

    def projection(self) -> Projection:
        """The fold so far, to fold more into (its maps are the state's own)."""
        state = self.state
        return Projection(state.counts, state.feedback, state.scope, state.scope_days)


class LearnedReader:
    """What the indexer takes from the learning cache, read without its lock: `trust(doc_id)`
    (turns keep theirs in the index only, so a re-indexed turn gets it from here) and
    `shared(doc_id)`, whether a recorded scope change made the document `global`.  No
    readable cache: no trust, nothing shared."""

    def __init__(self, vault: Vault) -> None:
        self.cache = LearningCache(learning_dir(vault), vault.config.memory.trust_prior_weight, vault.root)
        self._lock = threading.Lock()  # a turn's index commit is written on a thread of its own

    def _state(self) -> LearningState:
        with self._lock:
            try:
                self.cache.load(strict=False)
            except StaleCache:
                self.cache.reset()
            return self.cache.state

    def trust(self, doc_id: str) -> float | None:
        value = self._state().trust.get(doc_id)
        return value if isinstance(value, float | int) else None

    def shared(self, doc_id: str) -> bool:
        record = self._state().scope.get(doc_id)
        return record is not None and shares(record)

    def table(self) -> dict[str, float]:
        """Every document's trust, read now (a rebuild indexes turns from it while the fold
        rewrites it, and compares it with what the fold wrote)."""
        return {d: t for d, t in self._state().trust.items() if t is not None}


def learned_of(vault: Vault) -> Learned:
    """What the indexer takes from the learning loop (`Memory(learned=…)`)."""
    reader = LearnedReader(vault)
    return Learned(trust=reader.trust, shared=reader.shared)


def learned_memory(vault: Vault) -> Memory:
    """Memory that indexes with what the learning loop derived (the loop and the archive
    re-index through it; front doors use `pandafs.assembly.open_memory`)."""
    return Memory(vault, learned=learned_of(vault))
