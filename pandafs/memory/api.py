"""The memory API (`memory.search`, `memory.save`, `memory.retrieve`) over one vault.

Search goes to the tantivy index; save writes markdown and indexes it at once; retrieve
reads the file (an archived turn's original from the archive).  What Memory needs from
the learning loop (`learned`) and the archive (`archive`) is handed in by
`pandafs.assembly.open_memory`; it imports neither.  What it refuses from its callers
(the CLI, the tools, scripts) raises `BadInput` naming the value, so every door says the
same thing about it."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from events.clock import TIME_RANGE, aware, out_of_range, utcnow
from events.doctypes import ENTRY_TYPES, SAVE_TYPES, TOPIC_RE
from events.errors import FrontmatterError, NotInVault
from events.fsio import read_vault_file
from events.layout import DocRef, candidate_paths, classify, validate_user_id
from indexers.errors import ArchiveError
from indexers.fulltext import FullTextIndex
from indexers.request import SCOPES, Ranking, SearchRequest
from indexers.writer import Learned

from ..errors import BadInput, Unreadable
from ..vault import Vault

if TYPE_CHECKING:  # imported where used: a search writes nothing and retrieves nothing
    from indexers.documents import IndexDoc, Skipped
    from indexers.sync import SyncReport

    from .retrieved import ArchiveSource, Retrieved
    from .store import SavedDoc

__all__ = ["Memory", "SCOPES"]


class Memory:
    """Search, save and retrieve documents of one vault."""

    def __init__(
        self, vault: Vault, *, learned: Learned | None = None, archive: ArchiveSource | None = None
    ) -> None:
        self.vault = vault
        self.archive = archive
        cfg = vault.config
        self.index = FullTextIndex(
            vault.layout.indexes,
            wait_s=cfg.index.writer_wait_s,
            heap_mb=cfg.index.writer_heap_mb,
            learned=learned or Learned(),
        )
        self.ranking = Ranking(**vars(cfg.search))

    # --- search ---------------------------------------------------------------------

    def search(self, query: str = "", **options: Any) -> list[dict[str, Any]]:
        """Hits for `query`; `options` are the other fields of `SearchRequest` (an unknown
        one is a TypeError), checked here for every door alike."""
        request = SearchRequest(query=query, **options)
        if request.user is not None:
            validate_user_id(request.user)
        if request.scope is not None and request.scope not in SCOPES:
            raise BadInput(f"unknown scope {request.scope!r} (use one of {', '.join(SCOPES)})")
        if request.limit < 1:
            raise BadInput("limit must be at least 1")
        if request.min_quality is not None and not 0.0 <= request.min_quality <= 1.0:
            raise BadInput("min_quality must be between 0 and 1")
        if request.topic_filter:
            check_topic(request.topic_filter)
        after, before = request.after, request.before
        for name, when in (("after", after), ("before", before), ("now", request.now)):  # `--now`'s rule
            if when is not None and (problem := out_of_range(when)) is not None:
                raise BadInput(f"{name}: {problem}")
        if after is not None and before is not None and aware(after) >= aware(before):
            raise BadInput("after must be earlier than before")
        request = request._replace(
            topic_filter=request.topic_filter or None,
            topic=request.topic or None,
            content_types=tuple(request.content_types),
            exclude_ids=tuple(request.exclude_ids),
            kinds=tuple(request.kinds),
            after=aware(after) if after is not None else None,
            before=aware(before) if before is not None else None,
        )
        if not self.index.folder.exists():  # a fresh clone or a deleted indexes/: derive it first
            self.reconcile()
        return self.index.reader.search(request, self.ranking)

    # --- save -------------------------------------------------------------------------

    def save(
        self,
        content: str,
        *,
        user: str,
        doc_type: str = "memory",
        topic: str = "general",
        keywords: Iterable[str] = (),
        scope: str = "new",
        ttl_hours: float | None = None,
        key: str | None = None,
        title: str | None = None,
        source_turn: str | None = None,
        now: datetime | None = None,
        index: bool = True,
    ) -> SavedDoc:
        """Write a memory document and index it.  Preferences and facts go to their lists;
        `scope="global"` publishes to every user, if `user` is one of `[memory] publishers`."""
        validate_user_id(user)
        if not content.strip():
            raise BadInput("nothing to save: content is empty")
        keywords = list(keywords)
        texts = {
            "content": content,
            "key": key,
            "title": title,
            "topic": topic,
            "keywords": " ".join(keywords),
        }
        for name, text in texts.items():
            if text and "\x00" in text:  # a NUL is no text: the file would read as binary
                raise BadInput(f"the {name} holds a NUL byte: not text, nothing saved")
        if scope not in SCOPES:
            raise BadInput(f"unknown scope {scope!r} (use one of {', '.join(SCOPES)})")
        if doc_type not in SAVE_TYPES:
            raise BadInput(f"unknown type {doc_type!r} (use one of {', '.join(SAVE_TYPES)})")
        if key is not None and key.split() and doc_type not in ENTRY_TYPES:
            raise BadInput(f"a key names a preference or fact entry; a {doc_type} has none")
        check_topic(topic)
        now = now or utcnow()
        ttl_name = "ttl_hours" if ttl_hours is not None else "[memory] new_ttl_hours"
        ttl_hours = ttl_hours if ttl_hours is not None else self.vault.config.memory.new_ttl_hours
        check_ttl(ttl_hours, now, ttl_name)
        words = [k.strip() for k in keywords if k.strip()]
        doc: dict[str, Any] = dict(doc_type=doc_type, topic=topic, keywords=words, title=title, now=now)
        from .store import append_entry, publish, write_memory

        if scope == "global":
            self._check_publisher(user, doc_type)
            saved = publish(self.vault, user, content, **doc)
        elif doc_type in ENTRY_TYPES:
            saved = append_entry(
                self.vault,
                user,
                doc_type,
                " ".join(content.split()),
                key=" ".join((key or "").split()) or None,  # an entry is one line, its key too
                source_turn=source_turn,
                now=now,
                keywords=words,
            )
        else:
            saved = write_memory(
                self.vault, user, content, **doc, scope=scope, ttl_hours=ttl_hours, source_turn=source_turn
            )
        if index:
            self.index_paths([saved.doc_path])
        return saved

    def _check_publisher(self, user: str, doc_type: str) -> None:
        """Publishing is for the people the vault's config names, and never a user's lists."""
        if doc_type in ENTRY_TYPES:
            raise BadInput(f"a {doc_type} is about its user: it cannot be published to every user")
        publishers = self.vault.config.memory.publishers
        if user not in publishers:
            allowed = ", ".join(publishers) or "nobody"
            raise BadInput(
                f"{user} may not publish to every user: only [memory] publishers in pandafs.toml "
                f"may (now: {allowed})"
            )

    # --- retrieve ---------------------------------------------------------------------

    def resolve(self, id_or_path: str, user: str | None = None) -> str:
        """The vault-relative path of the document behind an id or a path.  A link (or a
        path through a linked folder) is refused with `BadInput`; with `user`, another user's
        document is reported exactly like a missing one."""
        text = id_or_path.strip().removeprefix("./")
        candidates = [text] if text.endswith(".md") else candidate_paths(text)
        ref = classify(text) if text.endswith(".md") else None
        if ref is not None and ref.kind in ("turn", "archived_turn"):
            candidates += candidate_paths(ref.doc_id)  # a turn's other home: live or archived
        whose = f" visible to {user}" if user is not None else ""
        missing = BadInput(f"no document {id_or_path!r}{whose} in {self.vault.root} (try `pandafs search`)")
        for rel in candidates:
            found = classify(rel)
            if found is None:
                continue
            if user is not None and not self.visible_to(user, found, rel):
                raise missing
            try:
                st = os.lstat(self.vault.root / rel)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if stat.S_ISLNK(st.st_mode):
                raise BadInput(f"{rel} is a symbolic link: PandaFS never follows links out of a document")
            if stat.S_ISREG(st.st_mode):
                return rel
        raise missing

    def visible_to(self, user: str, ref: DocRef, rel: str) -> bool:
        """May `user` read the document `ref` at `rel`?  Their own, the global areas, and
        another user's only if the index holds it as `global`.  Ownership comes from the path,
        never from the frontmatter."""
        if ref.user is None or ref.user == user:
            return True
        if not self.index.folder.exists():
            return False
        indexed = self.index.reader.lookup(rel)
        return indexed is not None and indexed.get("scope") == "global"

    def retrieve(self, id_or_path: str, *, user: str | None = None, now: datetime | None = None) -> Retrieved:
        """The document; an archived turn is expanded from the archive (`archived: true`)
        and the expansion counted, the `expansions_to_restore`-th restoring it.

        A document `user` may not see is refused as if missing, before anything is read or
        counted; `user=None` is the vault owner's view."""
        if user is not None:
            validate_user_id(user)
        rel = self.resolve(id_or_path, user)
        ref = classify(rel)
        assert ref is not None
        if ref.kind == "archived_turn" and self.archive is not None:
            return self._retrieve_archived(ref.doc_id, user, now)
        from events.documents import parse_document  # YAML and the metadata schema: not for a search

        from .retrieved import Retrieved, jsonable

        try:
            data, _ = read_vault_file(self.vault.root, rel)
            parsed = parse_document(data.decode("utf-8"), rel)
        except (NotInVault, FrontmatterError) as exc:
            raise BadInput(str(exc)) from None
        except UnicodeDecodeError:
            raise BadInput(f"{rel} is not UTF-8 text") from None
        metadata = {k: jsonable(v) for k, v in parsed.frontmatter.items()}
        return Retrieved(ref.doc_id, rel, metadata, parsed.body, ref.kind == "archived_turn")

    def _retrieve_archived(self, doc_id: str, user: str | None, now: datetime | None) -> Retrieved:
        from .retrieved import Retrieved, jsonable

        assert self.archive is not None
        try:
            expanded = self.archive(doc_id, now)
        except FileNotFoundError:  # the stub is gone: restored since we resolved it
            return self.retrieve(doc_id, user=user, now=now)
        except FrontmatterError as exc:
            raise BadInput(str(exc)) from None
        except ArchiveError as exc:  # a damaged part costs what it holds: `verify` names it
            raise Unreadable(f"{doc_id} cannot be read from the archive: {exc}") from None
        if expanded.restored:
            live = self.retrieve(doc_id, user=user, now=now)
            live.metadata["restored_from_archive"] = True
            return live
        metadata = {k: jsonable(v) for k, v in expanded.frontmatter.items()}
        metadata.update(
            archived=True,
            archive_file=expanded.archive_file,
            archived_at=jsonable(expanded.archived_at),
            expansions=expanded.expansions,
        )
        return Retrieved(doc_id, expanded.stub_path, metadata, expanded.body, True)

    # --- index upkeep -----------------------------------------------------------------

    def _sizes(self) -> dict[str, int]:
        """The `[index]` sizes every walk of `indexers.sync` takes."""
        cfg = self.vault.config.index
        return {"max_bytes": cfg.max_file_bytes, "batch_size": cfg.batch_size}

    def index_paths(self, paths: Iterable[str | Path], *, force: bool = False) -> SyncReport:
        from indexers import sync

        rels = [self.vault.rel(p) if isinstance(p, Path) else p for p in paths]
        return sync.index_paths(self.index, self.vault.root, rels, force=force, **self._sizes())

    def index_docs(
        self,
        docs: Iterable[IndexDoc | Skipped],
        paths: Iterable[str] = (),
        *,
        then: Callable[[BaseException | None], None] | None = None,
    ) -> None:
        """Index rendered documents and `paths` read from disk in one commit.  With `then`, the
        batch is written behind and `then(error)` called on its thread when it ends."""
        from indexers import sync

        fill = partial(
            sync.upsert_rendered,
            root=self.vault.root,
            docs=list(docs),
            paths=list(paths),
            max_bytes=self.vault.config.index.max_file_bytes,
        )
        if then is not None:
            self.index.batch_behind(fill, then)
            return
        with self.index.batch() as batch:
            fill(batch)

    def reconcile(self, progress: Callable[[int], None] | None = None) -> SyncReport:
        from indexers import sync

        return sync.reconcile(self.index, self.vault.root, progress=progress, **self._sizes())

    def rebuild(
        self,
        *,
        user: str | None = None,
        progress: Callable[[int], None] | None = None,
        on_total: Callable[[int], None] | None = None,
        held: Callable[[str], bool] | None = None,
        barrier: Callable[[], None] | None = None,
    ) -> SyncReport:
        """The index rebuilt from the files (`indexers.sync.rebuild`: `held` and `barrier`
        split a whole rebuild in two passes)."""
        if user is not None:
            self.vault.require_user(user)
        from indexers import sync

        return sync.rebuild(
            self.index,
            self.vault.root,
            **self._sizes(),
            user=user,
            progress=progress,
            on_total=on_total,
            held=held,
            barrier=barrier,
        )


def check_ttl(hours: float, now: datetime, name: str) -> None:
    """A TTL is a positive, finite number of hours whose expiry stays in `TIME_RANGE`."""
    if not (math.isfinite(hours) and hours > 0):
        raise BadInput(f"{name} must be a positive number of hours, not {hours!r}")
    latest = (TIME_RANGE[1] - aware(now)) / timedelta(hours=1)
    if hours > latest:
        raise BadInput(f"{name} {hours:g} is too long: a memory must expire by {TIME_RANGE[1].year}")


def check_topic(topic: str) -> None:
    """A topic is dot-separated lowercase words: one a document can carry, so a filter
    with any other would match nothing, silently."""
    if not TOPIC_RE.fullmatch(topic):
        raise BadInput(f"bad topic {topic!r}: use dot-separated lowercase words, e.g. pet.hamster")
