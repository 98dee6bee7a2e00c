"""The learning fold's cache under `indexes/learning/` (disposable, rebuildable).

    state.json         how far the fold got and the small maps (`LearningState`)
    counts/{xx}.json   {"gen": g, "docs": {doc id: [usage, validations, successes, trust]}},
                       256 shards by blake2b(doc id), so a turn rewrites a few small files
    ../learning.lock   one writer at a time

The trust column is what was last materialised, which the indexer reads for a document
whose frontmatter carries none.  Shards are written first and `state.json` last, naming
the generation each shard must carry; a shard that disagrees makes `load` report the
cache stale, and the engine recomputes everything from the events."""

# No `from __future__ import annotations`: the models' annotations are objects when the
# classes are built, which pydantic would otherwise compile from their strings one by one.

import hashlib
import os
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.fsio import FileKey, atomic_write, file_key, read_vault_bytes, remove_tree_in_vault
from indexers.learned import Learned

from ..memory.api import Memory
from ..vault import Vault
from .trust import Counts, Projection, ScopeRecord, shares

__all__ = [
    "CounterStore",
    "Cursor",
    "LearningCache",
    "LearningState",
    "SharedReader",
    "StaleCache",
    "TrustReader",
    "shard_of",
]

CACHE_VERSION = 1

T = TypeVar("T")


class StaleCache(Exception):
    """The cache cannot be trusted (missing, another version, torn); recompute it."""


def shard_of(doc_id: str) -> str:
    return hashlib.blake2b(doc_id.encode(), digest_size=1).hexdigest()


class Cursor(BaseModel):
    model_config = ConfigDict(extra="forbid")
    upto: int = 0
    pending: list[int] = Field(default_factory=list)


class LearningState(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int = CACHE_VERSION
    prior_weight: float
    generation: int = 0
    shard_gens: dict[str, int] = Field(default_factory=dict)
    users: dict[str, Cursor] = Field(default_factory=dict)
    logs: dict[str, int] = Field(default_factory=dict)
    feedback: dict[str, tuple[int, str]] = Field(default_factory=dict)
    scope: dict[str, dict[str, Any]] = Field(default_factory=dict)
    scope_days: dict[str, dict[str, int]] = Field(default_factory=dict)
    dirty: list[str] = Field(default_factory=list)
    rollup_days: list[str] = Field(default_factory=list)
    catalog_rows: list[dict[str, Any]] = Field(default_factory=list)
    """Catalog rows Save folded and has not written yet (`TurnRow`s as JSON values): the
    next sync that writes rollups writes them first, or Save once there are
    `CATALOG_BATCH` of them."""

    def scope_records(self) -> dict[str, ScopeRecord]:
        return {doc: ScopeRecord(**data) for doc, data in self.scope.items()}

    def set_scope_records(self, records: dict[str, ScopeRecord]) -> None:
        self.scope = {doc: r.__dict__.copy() for doc, r in sorted(records.items())}


class CounterStore(MutableMapping[str, Counts]):
    """Per-document counters in hash shards, loaded lazily, written when dirty."""

    def __init__(
        self, directory: Path, shard_gens: dict[str, int], *, root: Path, fresh: bool = False
    ) -> None:
        """`fresh`: start empty and ignore the shards on disk (a full recompute).  `root`,
        the vault: nothing below it is read through a link, nor written through one."""
        self.dir = directory
        self.root = root
        self.expected = shard_gens
        self.fresh = fresh
        self._shards: dict[str, dict[str, list[Any]]] = {}
        self._dirty: set[str] = set()

    def _shard(self, name: str) -> dict[str, list[Any]]:
        if name not in self._shards and self.fresh:
            self._shards[name] = {}
        if name not in self._shards:
            path = self.dir / f"{name}.json"
            try:
                raw = read_vault_bytes(self.root, path)  # a link: as if missing
                data: dict[str, Any] = {"gen": 0, "docs": {}} if raw is None else orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise StaleCache(f"{path}: unreadable ({exc})") from None
            if data.get("gen", 0) != self.expected.get(name, 0):
                raise StaleCache(f"{path}: generation {data.get('gen')} is not the recorded one")
            docs: dict[str, list[Any]] = data["docs"]
            self._shards[name] = docs
        return self._shards[name]

    def __getitem__(self, doc_id: str) -> Counts:
        row = self._shard(shard_of(doc_id))[doc_id]
        return Counts(row[0], row[1], row[2])

    def __setitem__(self, doc_id: str, value: Counts) -> None:
        name = shard_of(doc_id)
        docs = self._shard(name)
        trust = docs[doc_id][3] if doc_id in docs else None
        docs[doc_id] = [value.usage, value.validations, value.successes, trust]
        self._dirty.add(name)

    def __delitem__(self, doc_id: str) -> None:
        name = shard_of(doc_id)
        del self._shard(name)[doc_id]
        self._dirty.add(name)

    def __iter__(self) -> Iterator[str]:
        for name in self.all_shards():
            yield from list(self._shard(name))

    def __len__(self) -> int:
        return sum(len(self._shard(name)) for name in self.all_shards())

    def all_shards(self) -> list[str]:
        on_disk: set[str] = set()
        if not self.fresh and self.dir.is_dir():
            on_disk = {p.stem for p in self.dir.glob("*.json") if len(p.stem) == 2}
        return sorted(on_disk | set(self._shards) | set(self.expected))

    def trust(self, doc_id: str) -> float | None:
        row = self._shard(shard_of(doc_id)).get(doc_id)
        return row[3] if row else None

    def set_trust(self, doc_id: str, trust: float | None) -> None:
        name = shard_of(doc_id)
        row = self._shard(name).get(doc_id)
        if row is not None and row[3] != trust:
            row[3] = trust
            self._dirty.add(name)

    def flush(self, generation: int) -> dict[str, int]:
        """Write dirty shards stamped with `generation` (a fresh store replaces every shard); the
        new shard → generation map."""
        if self.fresh:
            remove_tree_in_vault(self.root, self.dir)  # never through a link
            self.expected, self.fresh = {}, False
            self._dirty = {name for name, docs in self._shards.items() if docs}
        gens = dict(self.expected)
        for name in sorted(self._dirty):
            docs = dict(sorted(self._shards[name].items()))
            atomic_write(
                self.dir / f"{name}.json",
                orjson.dumps({"gen": generation, "docs": docs}),
                durable=False,
                root=self.root,
            )
            gens[name] = generation
        self._dirty.clear()
        self.expected = gens
        return gens


STATE_FILE = "state.json"
"""The cache's state file in its folder (module docstring)."""


def learning_dir(vault: Vault) -> Path:
    """The learning cache's folder, `indexes/learning/`."""
    return vault.layout.indexes / "learning"


def cache_is_there(vault: Vault) -> bool:
    """Whether the learning cache has a state file (after `rm -r indexes/`, or in a vault
    only imported into, it has none)."""
    return (learning_dir(vault) / STATE_FILE).is_file()


class LearningCache:
    """The fold's cache as loaded: `state.json`'s state and the counter shards it names."""

    def __init__(self, directory: Path, prior_weight: float, root: Path) -> None:
        self.dir = directory
        self.prior_weight = prior_weight
        self.root = root  # the vault: nothing below it is read or written through a link
        self.state = LearningState(prior_weight=prior_weight)
        self.counts = CounterStore(directory / "counts", {}, fresh=True, root=root)

    def reset(self) -> None:
        """Start empty: a full recompute replaces every shard when it is saved."""
        self.state = LearningState(prior_weight=self.prior_weight)
        self.counts = CounterStore(self.dir / "counts", {}, fresh=True, root=self.root)

    def load(self) -> None:
        """Load the cached state, or raise `StaleCache` when there is none we can use."""
        path = self.dir / STATE_FILE
        raw = read_vault_bytes(self.root, path)
        if raw is None:
            raise StaleCache("no learning cache yet")
        try:
            state = LearningState.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            raise StaleCache(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
        if state.version != CACHE_VERSION:
            raise StaleCache(f"{path}: cache version {state.version}, this PandaFS writes {CACHE_VERSION}")
        if state.prior_weight != self.prior_weight:
            raise StaleCache("[memory] trust_prior_weight changed")
        self.state = state
        self.counts = CounterStore(self.dir / "counts", state.shard_gens, root=self.root)

    def save(self) -> None:
        """Shards first, then state.json naming their generation (see the module docstring)."""
        state = self.state
        state.generation += 1
        state.shard_gens = self.counts.flush(state.generation)
        self.write_state_file()

    def write_state_file(self) -> None:
        atomic_write(
            self.dir / STATE_FILE,
            orjson.dumps(self.state.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS),
            durable=False,
            root=self.root,
        )

    def projection(self) -> Projection:
        """The fold so far, to fold more into (its counters are the cache's own)."""
        state = self.state
        return Projection(
            counts=self.counts,
            feedback={k: (int(v[0]), str(v[1])) for k, v in state.feedback.items()},
            scope=state.scope_records(),
            scope_days={d: dict(c) for d, c in state.scope_days.items()},
        )

    def keep(self, projection: Projection) -> None:
        """Take the small maps of `projection` into the state (its counters are ours)."""
        state = self.state
        state.feedback = dict(sorted(projection.feedback.items()))
        state.set_scope_records(projection.scope)
        state.scope_days = dict(sorted(projection.scope_days.items()))


class _ReadWhenReplaced(Generic[T]):
    """What `parse` makes of a JSON file of the cache, read again only when its (inode,
    size, mtime) changed; `empty` when it is missing, a link or unreadable."""

    def __init__(self, root: Path, parse: Callable[[Any], T], empty: T) -> None:
        self.root = root
        self.parse = parse
        self.empty = empty
        self._cache: dict[str, tuple[FileKey, T]] = {}

    def get(self, path: str) -> T:
        try:
            key = file_key(os.lstat(path))
        except FileNotFoundError:
            return self.empty
        cached = self._cache.get(path)
        if cached is None or cached[0] != key:
            try:
                raw = read_vault_bytes(self.root, path)
                value = self.empty if raw is None else self.parse(orjson.loads(raw))
            except (orjson.JSONDecodeError, OSError, AttributeError, TypeError):
                value = self.empty
            cached = (key, value)
            self._cache[path] = cached
        return cached[1]


class TrustReader:
    """Trust lookup for the indexer: `reader(doc_id) -> trust | None`.  Turns keep their trust
    in the index only, so a re-indexed turn gets it from here."""

    def __init__(self, directory: Path, root: Path | None = None) -> None:
        self._prefix = os.path.join(directory, "")  # a string: asked once per indexed document
        self._shards: _ReadWhenReplaced[dict[str, Any]] = _ReadWhenReplaced(
            root or directory, lambda data: dict(data.get("docs", {})), {}
        )

    def __call__(self, doc_id: str) -> float | None:
        row = self._shards.get(f"{self._prefix}{shard_of(doc_id)}.json").get(doc_id)
        return row[3] if row else None

    def table(self) -> dict[str, float]:
        """Every document's trust the shards hold, read now (a rebuild indexes turns from
        it while the fold rewrites them, and compares it with what the fold wrote)."""
        try:
            names = sorted(n for n in os.listdir(self._prefix) if len(n) == 7 and n.endswith(".json"))
        except (FileNotFoundError, NotADirectoryError):
            return {}
        return {
            doc_id: row[3]
            for name in names
            for doc_id, row in self._shards.get(self._prefix + name).items()
            if isinstance(row, list) and len(row) > 3 and row[3] is not None
        }


def _shared_in(state: Any) -> frozenset[str]:
    return frozenset(d for d, r in state.get("scope", {}).items() if isinstance(r, dict) and shares(r))


class SharedReader:
    """Sharing lookup for the indexer: `reader(doc_id) -> bool`, whether the fold recorded a
    scope change that made the document `global`.  No readable cache: nothing is shared."""

    def __init__(self, path: Path, root: Path) -> None:
        self.path = os.fspath(path)
        self._state: _ReadWhenReplaced[frozenset[str]] = _ReadWhenReplaced(root, _shared_in, frozenset())

    def __call__(self, doc_id: str) -> bool:
        return doc_id in self._state.get(self.path)


def trust_reader(vault: Vault) -> TrustReader:
    return TrustReader(learning_dir(vault) / "counts", vault.root)


def learned_of(vault: Vault) -> Learned:
    """What the indexer takes from the learning loop (`Memory(learned=…)`)."""
    return Learned(
        trust=trust_reader(vault),
        shared=SharedReader(learning_dir(vault) / STATE_FILE, vault.root),
    )


def learned_memory(vault: Vault) -> Memory:
    """Memory that indexes with what the learning loop derived (the loop and the archive
    re-index through it; front doors use `pandafs.assembly.open_memory`)."""
    return Memory(vault, learned=learned_of(vault))
