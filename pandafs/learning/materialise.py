"""Materialising the fold: usage, trust and scope written into documents' frontmatter
and into the index (turns and site notes: the index only)."""

import os
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, NamedTuple

from events.documents import DocumentMetadata, parse_document, render_document
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_bytes, read_vault_file, rewrite_file
from events.layout import candidate_paths, classify
from indexers.documents import IndexDoc, load_index_doc
from indexers.errors import IndexingError

from ..memory.api import Memory
from ..memory.turn_records import parse_time
from ..turns import INDEXING, read_metadata
from ..vault import Vault
from .state import LearningCache
from .trust import SCOPE_RANK, Counts, Projection, ScopeRecord, shares, trust_of

__all__ = ["DocInfo", "Materialiser"]

INDEX_ONLY_KINDS = frozenset({"turn", "archived_turn", "site"})
LEARNING_KEYS = ("usage_count", "validation_count", "validation_success", "trust")
_ORDER = list(DocumentMetadata.model_fields)


class DocInfo(NamedTuple):
    """A document as the policy and the materialiser see it."""

    doc_id: str
    rel: str
    kind: str
    owner: str | None
    front: dict[str, Any]
    body: str
    scope: str  # the projected scope (latest scope change, else the file's)
    created_at: datetime
    quality: float


class _Target(NamedTuple):
    """What a document's file should say after materialisation."""

    counts: Counts | None
    scope: tuple[str, datetime | None] | None  # (scope, when decided) or None: leave it


def _put(front: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Set `key`, keeping the key order: a new key goes after its predecessors in
    `DocumentMetadata` (or after `scope` for scope_origin), else at the end."""
    if key in front:
        front[key] = value
        return front
    anchors = ["scope"] if key == "scope_origin" else _ORDER[: _ORDER.index(key)]
    items = list(front.items())
    at = len(items) if key not in _ORDER and key != "scope_origin" else 0
    for i, (k, _) in enumerate(items):
        if k in anchors:
            at = i + 1
    items.insert(at, (key, value))
    return dict(items)


IndexMode = Literal["commit", "queue", "skip"]
"""What a sync does with its index updates: "commit" them at its end (one tantivy commit);
"queue" them for the caller (Save: they join the turn's own commit, `take_index_queue`);
"skip" them (the index is rebuilt next, from the files and the learning cache's trust)."""


class Materialiser:
    """Writes the fold's values into one vault's documents and index, reading the
    documents as the policy sees them (`doc_info`); holds the index updates queued."""

    def __init__(self, vault: Vault, memory: Memory, cache: LearningCache) -> None:
        self.vault = vault
        self.memory = memory
        self.cache = cache
        self.cfg = vault.config.memory
        self.index_mode: IndexMode = "commit"
        self.root = os.fspath(vault.root)
        self._index_queue: list[IndexDoc] = []

    def locate(self, doc_id: str) -> tuple[str, str, str | None] | None:
        """(vault-relative path, kind, owner) of the file behind `doc_id`, if it exists."""
        for rel in candidate_paths(doc_id):
            ref = classify(rel)
            if ref is not None and os.path.isfile(f"{self.root}/{rel}"):
                return rel, ref.kind, ref.user
        return None

    def doc_info(self, doc_id: str, projection: Projection | None = None) -> DocInfo | None:
        """The document behind `doc_id` as it is on disk, with its projected scope (turns and site
        notes are not parsed: their values go to the index only)."""
        found = self.locate(doc_id)
        if found is None:
            return None
        rel, kind, owner = found
        if kind in INDEX_ONLY_KINDS:
            return DocInfo(doc_id, rel, kind, owner, {}, "", "user", datetime.min.replace(tzinfo=UTC), 0.5)
        try:  # never through a symlink: its counters are written back over this path
            data, st = read_vault_file(self.vault.root, rel)
        except (OSError, NotInVault):
            return None
        return self._info_of(doc_id, rel, data, st, projection)

    def _info_of(
        self, doc_id: str, rel: str, data: bytes, st: os.stat_result, projection: Projection | None = None
    ) -> DocInfo | None:
        """`doc_info` of the bytes read from `rel` (None: not a document it can change)."""
        ref = classify(rel)
        if ref is None:
            return None
        kind, owner = ref.kind, ref.user
        try:
            parsed = parse_document(data.decode("utf-8"), rel)
        except (UnicodeDecodeError, FrontmatterError):
            return None
        stat_time = datetime.fromtimestamp(st.st_mtime, UTC)
        front = dict(parsed.frontmatter)
        created = parse_time(front.get("created_at")) or stat_time
        try:
            quality = float(front.get("quality", 0.5))
        except (TypeError, ValueError):
            quality = 0.5
        scope = str(front.get("scope") or ("user" if owner else "global"))
        record = (projection.scope if projection else self.cache.state.scope).get(doc_id)
        info = DocInfo(doc_id, rel, kind, owner, front, parsed.body, scope, created, quality)
        projected = self.scope_target(info, record)
        return info if projected is None else info._replace(scope=projected[0])

    def _turn_quality(self, rel: str) -> float:
        """The quality a turn (its metadata.json) or a site note (its frontmatter) states;
        0.5 when that file is missing, unreadable or a link (never followed)."""
        try:
            if rel.endswith("/context.md"):
                folder = f"{self.root}/{rel.removesuffix('/context.md')}"
                return float((read_metadata(self.root, folder) or {})["quality"])
            data = read_vault_bytes(self.root, f"{self.root}/{rel}")
            if data is None:
                return 0.5
            return float(parse_document(data.decode("utf-8"), rel).frontmatter.get("quality", 0.5))
        except (OSError, KeyError, TypeError, ValueError, FrontmatterError):
            return 0.5

    def _target_front(self, info: DocInfo, target: _Target) -> dict[str, Any]:
        front = dict(info.front)
        if target.counts is not None:
            c = target.counts
            trust = trust_of(c, info.quality, self.cfg.trust_prior_weight)
            for key, value in zip(LEARNING_KEYS, (c.usage, c.validations, c.successes, trust), strict=True):
                front = _put(front, key, value)
        if target.scope is not None:
            scope, when = target.scope
            current = str(front.get("scope") or ("user" if info.owner else "global"))
            if scope != current:
                if "scope_origin" not in front:
                    front = _put(front, "scope_origin", current)
                front = _put(front, "scope", scope)
                if scope == "new":
                    base = when or info.created_at
                    front = _put(front, "expires_at", base + timedelta(hours=self.cfg.new_ttl_hours))
                else:
                    front.pop("expires_at", None)
        return front

    def scope_target(self, info: DocInfo, record: ScopeRecord | None) -> tuple[str, datetime | None] | None:
        """(scope, when decided) from the latest change `record`, else an unrecorded `scope_origin`."""
        if record is not None and record.new in SCOPE_RANK:
            return (record.new, parse_time(record.at))
        if record is None and info.front.get("scope_origin") in SCOPE_RANK:
            return (str(info.front["scope_origin"]), None)
        return None

    def plan(
        self,
        docs: Sequence[str],
        projection: Projection,
        preview: dict[str, _Target] | None = None,
        infos: dict[str, DocInfo] | None = None,
    ) -> tuple[dict[str, tuple[str, _Target]], dict[str, tuple[str, float | None]]]:
        """Files to rewrite ({doc: (rel, target)}) and what to index again as it is, with
        a turn's trust ({doc: (rel, trust or None)}).  `infos`: documents read already."""
        plans: dict[str, tuple[str, _Target]] = {}
        overlay: dict[str, tuple[str, float | None]] = {}
        w, trusts = self.cfg.trust_prior_weight, self.cache.state.trust
        for doc_id in docs:
            info = infos[doc_id] if infos and doc_id in infos else self.doc_info(doc_id, projection)
            if info is None:
                continue
            if preview is not None and doc_id in preview:
                target = preview[doc_id]
            else:
                counts = self.cache.state.counts.get(doc_id)
                target = _Target(counts, self.scope_target(info, projection.scope.get(doc_id)))
            if info.kind in INDEX_ONLY_KINDS:
                if target.counts is None:
                    continue
                trust = trust_of(target.counts, self._turn_quality(info.rel), w)
                if trusts.get(doc_id) != trust:
                    if preview is not None:
                        overlay[doc_id] = (info.rel, trust)  # a preview, too, so the index is current
                        continue
                    trusts[doc_id] = trust
                    if self.index_mode != "skip" and not self._indexed(doc_id, info.rel, trust):
                        overlay[doc_id] = (info.rel, trust)
                continue
            front = self._target_front(info, target)
            written = front.get("trust")
            if preview is None and target.counts is not None and trusts.get(doc_id) != written:
                trusts[doc_id] = written
            if front != info.front:
                plans[doc_id] = (info.rel, target)
            elif preview is None and self._shared_now(info, projection.scope.get(doc_id)):
                overlay[doc_id] = (info.rel, None)
        return plans, overlay

    def _shared_now(self, info: DocInfo, record: ScopeRecord | None) -> bool:
        """Has the change just folded made `info` global while the index holds it as its owner's?
        (Save's preview indexed it before the turn's events existed.)"""
        return (
            record is not None
            and shares(record)
            and info.owner is not None
            and self.index_mode != "skip"
            and self._lookup(info.rel).get("scope") != "global"
        )

    def _indexed(self, doc_id: str, rel: str, trust: float) -> bool:
        """Whether the index holds `trust` for the turn at `rel`: Save's preview gave it in a
        turn's commit that landed (its folder is projected and not marked `.indexing`), or
        the index says so.  A fold that finds the value already indexed re-indexes nothing."""
        folder, queued = self.cache.queued
        if queued.get(doc_id) == trust and folder:
            if os.path.exists(f"{folder}/metadata.json") and not os.path.lexists(f"{folder}/{INDEXING}"):
                return True
        return self._lookup(rel).get("trust") == trust

    def _lookup(self, rel: str) -> dict[str, Any]:
        """What the index holds for the document at `rel` (empty: not indexed, or unreadable)."""
        try:
            return self.memory.index.reader.lookup(rel) or {}
        except IndexingError:
            return {}

    def _rewrite(self, doc_id: str, rel: str, target: _Target) -> bool:
        """Write `target` into the file at `rel` as it is now; False: nothing to change."""

        def change(data: bytes | None, st: os.stat_result | None) -> tuple[bytes | None, bool]:
            info = None if data is None or st is None else self._info_of(doc_id, rel, data, st)
            if info is None:
                return None, False
            front = self._target_front(info, target)
            if front == info.front:
                return None, False
            return render_document(front, info.body).encode("utf-8"), True

        return rewrite_file(self.vault.root, rel, change)

    def apply(
        self, plans: dict[str, tuple[str, _Target]], overlay: dict[str, tuple[str, float | None]]
    ) -> tuple[list[str], int]:
        """Write the planned files, then index them and the turns' new trust in one batch.

        Each file is re-read under its owner's memory lock and only the learning keys and scope
        change on what it says now, so a concurrent save or a person's edit is kept."""
        written: list[str] = []
        for doc_id, (rel, target) in plans.items():
            ref = classify(rel)
            with self.vault.memory_lock(ref.user if ref else None):
                found = self.locate(doc_id)
                if found is None or found[0] != rel or not self._rewrite(doc_id, rel, target):
                    continue
            written.append(rel)
        if self.index_mode == "skip":  # rebuilt next, from these files and the cache's trust
            return sorted(written), 0
        max_bytes = self.vault.config.index.max_file_bytes
        for rel, trust in [*((rel, None) for rel in written), *overlay.values()]:
            loaded = load_index_doc(self.vault.root, rel, max_bytes=max_bytes)
            if isinstance(loaded, IndexDoc):
                self._index_queue.append(loaded if trust is None else loaded._replace(trust=trust))
        count = len(self._index_queue)
        if self.index_mode == "commit":
            self.flush_index()
        return sorted(written), count

    def take_index_queue(self) -> list[IndexDoc]:
        """The queued index updates, for a caller that commits them itself."""
        queue, self._index_queue = self._index_queue, []
        return list({d.path: d for d in queue}.values())

    def flush_index(self) -> None:
        """Commit the queued index updates in one commit, through `Memory.index_docs`."""
        queue = self.take_index_queue()
        if queue:
            self.memory.index_docs(queue)
