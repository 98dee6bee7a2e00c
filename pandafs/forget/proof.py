"""`pandafs verify --forgotten`: for every forgetting in a user's maintenance log, none of its
hashes is in the area's files (names too), archived and catalog rows, `indexes/`' derived
files, or the index's terms and stored documents.  A survivor names where, never the text."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from events.errors import EventsError, NotInVault
from events.fsio import read_vault_file

from ..vault import Vault
from ._area import Matcher, archived_rows, file_tainted, user_files

__all__ = ["scan_user"]


@dataclass(frozen=True)
class Survivor:
    where: str
    forget_id: str

    def describe(self) -> str:
        return f"{self.where} (forget {self.forget_id})"


def matchers_of(vault: Vault, user: str) -> list[tuple[str, Matcher]]:
    """(forget id, matcher) of every forgetting recorded for `user`."""
    from ..learning.maintenance import read_changes

    forgotten = [e.data for e in read_changes(vault, user)[0] if e.type == "forgotten" and e.data.salt]
    return [
        (d.forget_id, Matcher(d.salt, set(d.word_hashes), set(d.all_of_hashes), set(d.sentence_hashes)))
        for d in forgotten
    ]


def scan_user(vault: Vault, user: str) -> list[Survivor]:
    """Every place of `user`'s area that still holds something they made the vault forget."""
    matchers = matchers_of(vault, user)
    if not matchers:
        return []
    found: list[Survivor] = []

    def check(where: str, rel: str, data: bytes) -> None:
        for forget_id, matcher in matchers:
            if file_tainted(matcher, rel, data):
                found.append(Survivor(where, forget_id))

    for rel in user_files(vault, user):
        with contextlib.suppress(OSError, NotInVault, EventsError):
            check(rel, rel, read_vault_file(vault.root, rel)[0])
    for part, turn, path, data in archived_rows(vault, user):
        check(f"{vault.rel(part)}: {turn}/{path}", f"users/{user}/turns/{turn}/{path}", data)
    marks = (f"users/{user}/".encode(), f"stubs/{user}/".encode(), f'"{user}/'.encode(), f'"{user}"'.encode())
    for rel in _derived_files(vault):
        with contextlib.suppress(OSError, NotInVault, EventsError):
            data = read_vault_file(vault.root, rel)[0]
            if rel.endswith(".jsonl"):  # a log of every user's entries: this user's lines
                data = b"\n".join(line for line in data.split(b"\n") if any(m in line for m in marks))
            elif not any(m in data for m in marks):
                continue
            check(rel, rel, data)
    for where, text in _catalog_rows(vault, user):
        check(where, where, text.encode("utf-8"))
    found += _index_survivors(vault, user, matchers)
    return list(dict.fromkeys(found))


def _derived_files(vault: Vault) -> Iterator[str]:
    """Text files under `indexes/` other than tantivy's own (read through tantivy)."""
    base = vault.layout.indexes
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != "tantivy")
        for name in sorted(files):
            if name.endswith((".json", ".jsonl", ".md", ".txt")):
                yield os.path.relpath(os.path.join(folder, name), vault.root)


def _catalog_rows(vault: Vault, user: str) -> Iterator[tuple[str, str]]:
    """The string cells of `user`'s rows of the turn catalog (Parquet, decompressed)."""
    import pyarrow as pa

    from indexers.parquet import read_parquet

    base = vault.layout.observability / "catalog"
    for path in sorted(base.glob("month=*/*.parquet")) if base.is_dir() else []:
        try:
            table = read_parquet(vault.root, path, filters=[("user", "=", user)])
        except (OSError, pa.ArrowException, NotInVault):
            continue
        for name in table.column_names:
            for value in table.column(name).to_pylist():
                if isinstance(value, str):
                    yield vault.rel(path), value
                elif isinstance(value, list):
                    yield vault.rel(path), " | ".join(str(v) for v in value)


def _index_survivors(vault: Vault, user: str, matchers: list[tuple[str, Matcher]]) -> list[Survivor]:
    """Terms and stored documents of the index read through tantivy."""
    import tantivy

    from indexers.schema import TEXT_FIELDS

    folder = vault.layout.indexes / "fulltext" / "tantivy"
    if not (folder / "meta.json").is_file():
        return []
    index = tantivy.Index.open(str(folder))
    searcher = index.searcher()
    everyone = tantivy.Query.all_query()
    own = tantivy.Query.term_query(index.schema, "owner", user)
    found: list[Survivor] = []
    for name in TEXT_FIELDS:
        live = dict(searcher.terms_with_prefix(name, "", filter_query=everyone))
        mine = dict(searcher.terms_with_prefix(name, "", filter_query=own))
        for term, count in searcher.terms_with_prefix(name, ""):
            for forget_id, matcher in matchers:
                if matcher.hash(term) not in matcher.words:  # (an index term is a stem)
                    continue
                if mine.get(term):
                    found.append(Survivor(f"index term of a document of {user} ({name})", forget_id))
                if count > live.get(term, 0):
                    found.append(
                        Survivor(f"index term of a deleted document in a segment ({name})", forget_id)
                    )
    hits = searcher.search(own, limit=max(1, searcher.num_docs)).hits
    for _score, address in hits:
        doc = searcher.doc(address)
        path = str(doc.get_first("path") or "")
        for field_name in ("prose", "payload"):
            value = doc.get_first(field_name)
            if value is None:
                continue
            data = bytes(value) if not isinstance(value, str) else value.encode("utf-8")
            for forget_id, matcher in matchers:
                if file_tainted(matcher, f"{field_name}.json" if field_name == "payload" else "prose", data):
                    found.append(Survivor(f"index stored {field_name} of {path}", forget_id))
    return found
