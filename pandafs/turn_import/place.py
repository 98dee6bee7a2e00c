"""Write imported turn folders durably in staging, then rename each into place whole.

Each turn is built in `users/{u}/turns/.staging/` by I/O threads (every file and the
folder fsynced), then renamed into place (`Vault.place_turns`), so a reader or a crash
never sees a half-written turn folder.  The next import removes a killed one's staging."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson

from events.clock import utcnow
from events.fsio import make_folder_at, open_folder, remove_tree_in_vault, vault_folder
from events.ledger import Anchor, record_turns
from indexers.documents import IndexDoc, Skipped, index_doc_from_parts

from ..turns import EVENTS_FILE
from ..vault import STAGING_DIR, Vault
from .lines import ImportLine
from .render import Threads, turn_files

__all__ = ["Placer"]

# Threads writing and fsyncing files wait on the disk (GIL released); their fsyncs share journal commits
IO_THREADS = 8


@dataclass(frozen=True)
class Placed:
    """A turn now in place, with the index document of the context.md just written."""

    user: str
    turn: str
    line: ImportLine
    doc: IndexDoc | Skipped


@dataclass
class _Staged:
    turn: str
    line: ImportLine
    context: bytes
    front: dict[str, Any]
    body: str
    written: Future[int]  # mtime_ns of context.md once the folder is durable
    staging_fd: int  # the staging folder as opened and checked, shared by the user's batch
    end: Anchor  # what its log ends with, for the user's ledger


def _write_folder(staging_fd: int, name: str, files: list[tuple[str, bytes]]) -> int:
    """Make the folder `name` in the checked staging folder `staging_fd`, by name and never
    through a link, holding `files`, each and the folder fsynced; the first file's mtime_ns."""
    dir_fd = make_folder_at(staging_fd, name)
    fds: list[int] = []
    try:
        for file_name, data in files:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fds.append(fd := os.open(file_name, flags, 0o644, dir_fd=dir_fd))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        stamp = os.fstat(fds[0]).st_mtime_ns
        for fd in fds:
            os.fsync(fd)
        os.fsync(dir_fd)
    finally:
        for fd in [*fds, dir_fd]:
            os.close(fd)
    return stamp


Batch = dict[str, list[_Staged]]  # user → turns staged for them


def _settle(batch: Batch) -> BaseException | None:
    """Wait for every folder of `batch`, close its staging descriptors; the first failure, if any."""
    errors = [item.written.exception() for staged in batch.values() for item in staged]
    for fd in {item.staging_fd for staged in batch.values() for item in staged}:
        os.close(fd)
    return next((e for e in errors if e is not None), None)


class Placer:
    """Stage a batch of turns, then `place` it once on disk; the next may be staged meanwhile."""

    def __init__(self, vault: Vault, before: Callable[[str, str], str | None] | None = None) -> None:
        self.vault = vault
        self.max_bytes = vault.config.index.max_file_bytes  # as rebuild
        self.threads = Threads()
        self._before = before or (lambda user, key: None)  # a conversation's last turn, earlier imports
        self.refused: list[tuple[ImportLine, int]] = []  # rendered larger than the index takes
        self._pool = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="pandafs-import-io")
        self._unplaced: list[Batch] = []
        self.seconds = {"render": 0.0, "disk wait": 0.0, "place": 0.0}  # on the caller's thread

    def close(self) -> None:
        """Wait for the I/O threads (what they were writing stays in staging)."""
        for batch in self._unplaced:
            _settle(batch)
        self._unplaced = []
        self._pool.shutdown()

    def stage(self, by_user: dict[str, list[ImportLine]]) -> Batch:
        """Reserve numbers for each user's lines, render each turn and hand it to the I/O threads."""
        batch: Batch = {}
        self._unplaced.append(batch)
        for user, lines in by_user.items():
            batch[user] = self._stage_user(user, lines)
        return batch

    def _stage_user(self, user: str, lines: list[ImportLine]) -> list[_Staged]:
        staging = vault_folder(self.vault.root, self.vault.layout.turns_dir(user) / STAGING_DIR)
        names = self.vault.reserve_turns(user, len(lines))
        blocks = self.threads.blocks(user, names, lines, lambda key: self._before(user, key))
        # opened and checked once here (NotInVault if swapped for a link), before any folder is made
        staging_fd = open_folder(staging, self.vault.root)
        staged: list[_Staged] = []
        clock = time.perf_counter
        try:
            for name, line, block in zip(names, lines, blocks, strict=True):
                start = clock()
                log, files, front, body = turn_files(user, name, line, ts=utcnow(), thread=block)
                self.seconds["render"] += clock() - start
                context = files.pop("context.md")
                if len(context) > self.max_bytes:  # `size_bound` let it through: still refused
                    self.refused.append((line, len(context)))
                    continue
                files_in_order = [("context.md", context), (EVENTS_FILE, log), *files.items()]
                written = self._pool.submit(_write_folder, staging_fd, name, files_in_order)
                end = Anchor(name, log.count(b"\n"), orjson.loads(log.rsplit(b"\n", 2)[-2])["hash"])
                staged.append(_Staged(name, line, context, front, body, written, staging_fd, end))
        except BaseException:
            if staged:
                _settle({user: staged})  # the folders written so far, then the descriptor
            else:
                os.close(staging_fd)
            raise
        if not staged:
            os.close(staging_fd)
        return staged

    def place(self, batch: Batch) -> list[Placed]:
        """Rename `batch`'s durable folders into place; a number taken meanwhile is staged again."""
        placed: list[Placed] = []
        while batch:
            start = time.perf_counter()
            self._unplaced.remove(batch)  # settled once: its descriptors are closed here
            failure = _settle(batch)
            if failure is not None:
                raise failure
            waited = time.perf_counter()
            self.seconds["disk wait"] += waited - start
            again: dict[str, list[ImportLine]] = {}
            for user, staged in batch.items():
                placed += self._place_user(user, staged, again)
            self.seconds["place"] += time.perf_counter() - waited
            batch = self.stage(again) if again else {}
        return placed

    def _place_user(
        self, user: str, staged: list[_Staged], again: dict[str, list[ImportLine]]
    ) -> list[Placed]:
        staging = self.vault.layout.turns_dir(user) / STAGING_DIR
        taken = set(self.vault.place_turns(user, [(item.turn, staging / item.turn) for item in staged]))
        placed: list[Placed] = []
        for item in staged:
            if item.turn in taken:
                remove_tree_in_vault(self.vault.root, staging / item.turn)
                again.setdefault(user, []).append(item.line)
                continue
            rel = f"users/{user}/turns/{item.turn}/context.md"
            doc = index_doc_from_parts(
                rel, item.context, item.front, item.body, item.written.result(), max_bytes=self.max_bytes
            )
            placed.append(Placed(user, item.turn, item.line, doc))
        ends = [item.end for item in staged if item.turn not in taken]
        record_turns(self.vault.layout.turns_dir(user), ends, root=self.vault.root)  # one append a batch
        return placed
