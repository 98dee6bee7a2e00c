"""The full-text index's folder: its layout, its writer lock, and the tantivy index it holds.

    indexes/fulltext/        the live index: tantivy/ (segments), state.jsonl, schema.json
    indexes/fulltext.lock    writer lock (flock; holds the writer's pid)
    indexes/fulltext.new/    a rebuild in progress (swapped in when complete)

Writers hold the lock for one batch (and its merges: `behind`); a second writer waits
up to `wait_s`, then gets `IndexBusy`.  A reader reopens the index when a rebuild swapped
it, and finishes a swap a killed rebuild left half done."""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import tantivy

from events.errors import NotInVault
from events.fsio import (
    atomic_write,
    check_folders,
    checked_folders,
    held_lock,
    open_to_read,
    read_vault_file,
    vault_folder,
)

from .behind import WrittenBehind
from .errors import (
    REBUILD,
    IndexBusy,
    IndexDamaged,
    IndexIncompatible,
    IndexingError,
    IndexIOError,
    read_only_refusal,
    tantivy_error,
)
from .schema import READABLE_VERSIONS, SCHEMA_VERSION, build_schema

__all__ = ["IndexFolder"]

SEGMENT_FILES = ("idx", "term", "pos", "store", "fast", "fieldnorm")
"""The files tantivy writes for every segment (`{segment id}.{ext}`; deletes go in
`{segment id}.{opstamp}.del`), each ending in a footer: a JSON object holding the CRC32 of
the bytes before it, the object's length (u32, little-endian) and the magic number."""
FOOTER_MAGIC = 1337
CHUNK = 1 << 20


def _read_json(root: Path, path: Path, shape: type) -> tuple[Any, str | None]:
    """The JSON value at `path`, and why it does not read as a `shape` (an object, a list) or None."""
    try:
        data, _ = read_vault_file(root, path.relative_to(root).as_posix())
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None, "not JSON"
    return value, None if isinstance(value, shape) else f"not a JSON {shape.__name__}"


def _footer_damage(path: Path) -> str | None:
    """Why a segment file at `path` fails its own footer's checksum, or None.  Opened by the
    one read rule (a link, a FIFO or a file with other names here is damage, never read)."""
    try:
        fd, st = open_to_read(os.fspath(path))
    except FileNotFoundError:
        return "missing"
    except NotInVault as exc:
        return exc.reason
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    with os.fdopen(fd, "rb") as handle:
        size = st.st_size
        if size < 8:
            return f"truncated to {size} bytes"
        handle.seek(size - 8)
        length, magic = struct.unpack("<II", handle.read(8))
        if magic != FOOTER_MAGIC or length + 8 > size:
            return "its footer is gone (truncated or overwritten)"
        body = size - 8 - length
        handle.seek(body)
        try:
            footer = orjson.loads(handle.read(length))
            crc = int(footer["crc"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return "its footer does not read"
        handle.seek(0)
        found, left = 0, body
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                return "shorter than its footer says"
            found = zlib.crc32(chunk, found)
            left -= len(chunk)
    return None if found == crc else "its bytes do not match their checksum (corrupt)"


class _Busy(Exception):
    """The index lock is held by someone else."""


class IndexFolder:
    """One index folder of a vault and the tantivy index opened from it (lazily)."""

    def __init__(self, indexes_dir: Path, *, wait_s: float = 30.0, read_only: bool = False) -> None:
        """`read_only`: open the index for searching only, as on a vault that cannot be
        written (which `open` also finds out by itself: `_open_read_only`)."""
        self.indexes_dir = indexes_dir
        self.read_only = read_only
        self._shadow: str | None = None  # a read-only vault's index, opened through links
        self.root = indexes_dir.parent  # the vault
        self.dir = indexes_dir / "fulltext"
        self.tantivy_dir = self.dir / "tantivy"
        self.state_path = self.dir / "state.jsonl"
        self.where = self.rel(self.dir)  # as the vault names it (`indexes/fulltext`), for messages
        self.lock_path = indexes_dir / "fulltext.lock"
        self.wait_s = wait_s
        self.schema = build_schema()
        self.index: tantivy.Index | None = None
        self.ino: int | None = None  # the inode of the folder `index` was opened from
        self.merges = WrittenBehind("pandafs-index-merges")  # the last commit's, ended on their own thread
        self.behind = WrittenBehind.of(self.dir)  # a batch committed after its caller moved on

    def tantivy_error(self, exc: ValueError, *, writing: bool) -> IndexingError:
        """`tantivy_error` for this index."""
        return tantivy_error(exc, self.where, writing=writing, root=str(self.root))

    # --- opening ------------------------------------------------------------------

    def exists(self, *, locked: bool = False) -> bool:
        self.behind.settle()  # what this process wrote behind is there once it has ended
        if self.index is not None and self._same_folder():  # one stat on every search
            return True
        self._recover_swap(locked=locked)
        return (self.dir / "schema.json").is_file()

    def _same_folder(self) -> bool:
        """The live folder is still the one this object opened (no rebuild swapped it
        since; a swap's leftovers were cleared when it was opened)."""
        try:
            return os.stat(self.dir).st_ino == self.ino
        except FileNotFoundError:
            return False

    def _recover_swap(self, *, locked: bool = False) -> None:
        """Finish a rebuild swap a killed rebuild left between its two renames.  Only under the
        index lock: one seen half done while the lock is held is in progress."""
        new, old = self.dir.with_name(self.dir.name + ".new"), self.dir.with_name(self.dir.name + ".old")
        live = self.dir.exists()
        if not ((not live and (new / "complete").exists()) or (live and old.exists())):
            return
        if not locked:
            try:
                with held_lock(self.lock_path, wait_s=0.0, on_busy=_Busy, root=self.root):
                    self._recover_swap(locked=True)
            except _Busy:
                pass  # a writer holds the index: the swap is its own, in progress
            return
        with checked_folders(self.root) as folders:  # by name, never through a link
            if not live and (new / "complete").exists():
                folders.rename(new, self.dir)
            if self.dir.exists() and old.exists():
                folders.remove_tree(old)

    def create(self, directory: Path) -> tantivy.Index:
        """A new, empty index in `directory` (the live folder, or a rebuild's beside it)."""
        vault_folder(self.root, directory / "tantivy")
        try:
            index = tantivy.Index(self.schema, path=str(directory / "tantivy"))
        except ValueError as exc:  # the disk's refusal (full, read-only): one line, not a bug
            raise self.tantivy_error(exc, writing=True) from exc
        version = orjson.dumps({"schema_version": SCHEMA_VERSION})
        atomic_write(directory / "schema.json", version, root=self.root)
        return index

    def open(self) -> tantivy.Index:
        """The live tantivy index, reopened if a rebuild replaced the folder."""
        if self.index is not None and self._same_folder():
            return self.index
        if not self.exists():
            self.indexes_dir.mkdir(parents=True, exist_ok=True)
            with self.lock():
                if not self.exists(locked=True):
                    self.create(self.dir)
        ino = os.stat(self.dir).st_ino
        if self.index is None or ino != self.ino:
            # tantivy opens its folder by path: none of them a link
            check_folders(self.root, self.indexes_dir, self.dir, self.tantivy_dir)
            schema = (self.dir / "schema.json").relative_to(self.root).as_posix()
            try:
                info = orjson.loads(read_vault_file(self.root, schema)[0])
            except orjson.JSONDecodeError:
                info = None
            if not isinstance(info, dict):
                raise IndexDamaged(
                    f"the index {self.where} cannot be read ({schema} is not a JSON object); {REBUILD}"
                )
            if info.get("schema_version") not in READABLE_VERSIONS:
                raise IndexIncompatible(
                    f"the index {self.where} was built by another PandaFS version; {REBUILD}"
                )
            try:
                if self.read_only:
                    self.index = self._open_read_only()
                else:
                    self.index = tantivy.Index.open(str(self.tantivy_dir))
            except ValueError as exc:  # a corrupt or missing file of it, or the disk's refusal
                if read_only_refusal(exc) is None:
                    raise self.tantivy_error(exc, writing=False) from exc
                self.index = self._open_read_only()
            self.ino = ino
        return self.index

    def _open_read_only(self) -> tantivy.Index:
        """The index of a vault that cannot be written, opened for searching.  A tantivy reader
        takes the meta lock by opening `.tantivy-meta.lock` for writing, so the index is opened
        in a private temporary folder of links to its files; nothing of the vault is written."""
        import shutil
        import tempfile
        import weakref

        self.read_only = True
        self._shadow = tempfile.mkdtemp(prefix="pandafs-ro-")
        weakref.finalize(self, shutil.rmtree, self._shadow, True)  # removed with the folder object
        for entry in os.scandir(self.tantivy_dir):
            if not entry.name.startswith(".tantivy-") and entry.is_file(follow_symlinks=False):
                os.symlink(entry.path, os.path.join(self._shadow, entry.name))
        return tantivy.Index.open(self._shadow)

    def damaged_file(self) -> tuple[str, str] | None:
        """(vault-relative path, why) of the first index file that does not read as tantivy
        wrote it, or None: every byte of the JSON files, `meta.json` and each segment file,
        against its footer's CRC32 (opening reads only the footers)."""
        meta = self.tantivy_dir / "meta.json"
        for path, shape in (
            (self.dir / "schema.json", dict),
            (self.tantivy_dir / ".managed.json", list),
            (meta, dict),
        ):
            data, why = _read_json(self.root, path, shape)
            if why is not None:
                return self.rel(path), why
        segments = data.get("segments")  # (`data`: meta.json's object)
        if not isinstance(segments, list):
            return self.rel(meta), "names no segments"
        for segment in segments:
            try:
                stem = str(segment["segment_id"]).replace("-", "")
                deletes = segment.get("deletes")
                names = [f"{stem}.{ext}" for ext in SEGMENT_FILES]
                if deletes:
                    names.append(f"{stem}.{deletes['opstamp']}.del")
            except (KeyError, TypeError, AttributeError):
                return self.rel(meta), "names a segment it does not describe"
            for name in names:
                why = _footer_damage(self.tantivy_dir / name)
                if why is not None:
                    return self.rel(self.tantivy_dir / name), why
        return None

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # --- the writer lock ------------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the writer lock, after this process's own writing has ended."""

        def busy(holder: str) -> Exception:
            return IndexBusy(
                f"index is busy, held by pid {holder} for more than {self.wait_s:g} s; "
                "try again when it finishes"
            )

        self.behind.settle()  # (at once on the job's own thread: it is taking this lock)
        try:
            self.merges.settle()  # this process's last commit holds the lock until its merges end
        except ValueError as exc:
            self.raise_io_error(exc)
            raise
        vault_folder(self.root, self.indexes_dir)  # the vault's own `indexes/`, not a link
        check_folders(self.root, self.dir)
        with held_lock(self.lock_path, wait_s=self.wait_s, on_busy=busy, root=self.root):
            yield

    def raise_io_error(self, exc: BaseException) -> None:
        """Raise the `IndexIOError` of tantivy's I/O failure `exc`, if it is one (any
        other error is ours, or tantivy's refusal of what we asked: it goes on as it is)."""
        if isinstance(exc, ValueError):
            error = self.tantivy_error(exc, writing=True)
            if isinstance(error, IndexIOError):
                raise error from exc
