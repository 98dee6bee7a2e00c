"""The claim folders of `inbox/.processing/`: taking a file into one, planning what it becomes
(`ClaimPlan`: a restart finishes the same plan), publishing it under the planned names without
ever overwriting one, and clearing the folder away."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from events.clock import utcnow
from events.fsio import (
    CheckedFolders,
    atomic_write,
    checked_folders,
    is_temp_name,
    read_vault_bytes,
    unlink_in_vault,
    vault_folder,
)

from ..vault import Vault, file_lock
from ._parse import Rejection, validate_query

PROCESSING = ".processing"
LOCK_NAME = ".lock"
PLAN = "plan.json"
ANSWER = "answer.md"
ERROR = "error.md"
QUERY_DIR = "query"

Log = Callable[[str], None]


class ClaimPlan(BaseModel):
    """What will become of one claimed file; written before any of it happens."""

    model_config = ConfigDict(extra="ignore")

    v: int = 1
    claim: str
    source: str
    """Where the file was dropped (vault-relative), e.g. `inbox/alice/q.md`."""
    claimed: str
    """Its path inside the claim folder's `query/`, e.g. `alice/q.md`."""
    planned_at: datetime
    planned_fs_ns: int | None = None
    """`time.time_ns()` when planned: folder mtimes are compared with it (`planned_at` follows
    the PandaFS clock, which may be shifted)."""
    decision: Literal["answer", "reject"]
    user: str | None = None
    query_file: str | None = None
    """Where the query ends up (`inbox/processed/NAME`)."""
    turn_key: str | None = None
    """The turn's `turn_started.inbox_file`: the first planned `query_file`, never changed."""
    answer: str | None = None
    """Where the answer goes (`outbox/{user}/NAME.md`)."""
    after: int = 0
    """Every turn of `user` numbered above this was allocated after the plan."""
    reason: str | None = None
    message: str | None = None
    hint: str | None = None
    rejected: str | None = None
    """`inbox/rejected/NAME` (the query)."""
    error_file: str | None = None
    """Its explanation, `NAME.error.md` (planned with `rejected`, moved with it)."""
    keep: bool = True
    """False: only the inbox's name for the entry is removed (`_parse.Rejection.keep`)."""


class Stuck(Exception):
    """A claim that cannot go on now; it stays in `.processing/` and is retried."""


def rejected_name(name: str) -> str:
    """A rejected file keeps its bytes, not a name Obsidian would parse: `x.md` → `x.md.rejected`."""
    return f"{name}.rejected" if name.lower().endswith(".md") else name


def free_name(
    folder: Path, name: str, reserved: Iterable[str] = (), *, companions: tuple[str, ...] = ()
) -> Path:
    """`folder/name`, or `folder/stem-2.ext`, `-3`... : the first name not taken."""
    taken = set(reserved)
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        stem, ext = name, ""
    n = 1
    while True:
        candidate = name if n == 1 else (f"{stem}-{n}.{ext}" if ext else f"{stem}-{n}")
        path = folder / candidate
        paths = [path, *(Path(f"{path}{c}") for c in companions)]
        if not any(p.exists() or str(p) in taken for p in paths):
            return path
        n += 1


def link_no_replace(root: Path, src: Path, dest: Path) -> bool:
    """Make `dest` name the file `src` names; False if `dest` is another file already.  A hard
    link never replaces a name; without hard links (or for a folder): check, then rename, under
    the inbox lock.  Both folders are checked from `root`: one swapped for a link is refused."""
    vault_folder(root, dest.parent)
    with checked_folders(root) as folders:
        src_fd = folders.fd(src.parent, target=src)
        dest_fd = folders.fd(dest.parent, target=dest)
        try:
            os.link(src.name, dest.name, src_dir_fd=src_fd, dst_dir_fd=dest_fd, follow_symlinks=False)
        except FileExistsError:
            return bool(_same_file(folders, src, dest))
        except OSError:
            same = _same_file(folders, src, dest)
            if same is not None:
                return same
            folders.rename(src, dest)
        return True


def _same_file(folders: CheckedFolders, src: Path, dest: Path) -> bool | None:
    """Whether `dest` is `src`'s file (neither followed if a link); None if `dest` is not there."""
    try:
        there = os.stat(dest.name, dir_fd=folders.fd(dest.parent, target=dest), follow_symlinks=False)
    except FileNotFoundError:
        return None
    here = os.stat(src.name, dir_fd=folders.fd(src.parent, target=src), follow_symlinks=False)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def remove_empty_tree(folders: CheckedFolders, top: Path) -> str | None:
    """Remove `top` if it holds only empty folders, else name a file it holds (never through a link)."""
    try:
        top_fd = folders.fd(top)
    except FileNotFoundError:
        return None
    for dirpath, dirnames, filenames, fd in os.fwalk(".", topdown=False, dir_fd=top_fd):
        here = top / dirpath
        if filenames:
            return str(here / filenames[0])
        for name in dirnames:
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                return str(here / name)
    try:
        os.rmdir(top.name, dir_fd=folders.fd(top.parent, target=top))
    except FileNotFoundError:
        pass
    except OSError:
        return str(top)
    return None


class ClaimFolders:
    """The claim folders `inbox/.processing/{claim}/`; `checkpoint(step)` hears each durable step."""

    def __init__(
        self, vault: Vault, *, lock_wait_s: float, log: Log, checkpoint: Callable[[str], None]
    ) -> None:
        self.vault = vault
        self.root = vault.root
        self.dir = vault.layout.inbox
        self.processing = self.dir / PROCESSING
        self.lock_wait_s = lock_wait_s
        self._log = log
        self._checkpoint = checkpoint
        self._claims = 0  # claims made by this process, in each new claim's id

    def locked(self) -> AbstractContextManager[None]:
        vault_folder(self.root, self.processing)  # claims move queries here: never through a link
        return file_lock(
            self.processing / LOCK_NAME, wait_s=self.lock_wait_s, what="the inbox", root=self.root
        )

    def claim_dirs(self) -> list[Path]:
        try:
            return sorted(
                Path(e.path)
                for e in os.scandir(self.processing)
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            )
        except FileNotFoundError:
            return []

    def new_claim_id(self) -> str:
        self._claims += 1
        return f"{time.time_ns():020d}-{os.getpid()}-{self._claims}"

    def claim(self, rel: str) -> Path | None:
        """Move `rel` into a fresh claim folder; None if it vanished (or a rival took it).  All
        through folders checked from the vault root: one swapped for a link would receive another
        user's query, or hand over a file from outside."""
        # a name's bytes that are not UTF-8 become U+FFFD: every record of it after is UTF-8
        inner = os.fsencode(rel.removeprefix("inbox/")).decode("utf-8", "replace")
        claim = self.processing / self.new_claim_id()
        target = claim / QUERY_DIR / inner
        src = self.root / rel
        try:
            with checked_folders(self.root) as checked:
                checked.fd(src.parent, target=src)
                checked.fd(self.processing, target=target)
                for folder in reversed(target.relative_to(self.processing).parents[:-1]):
                    checked.make(self.processing / folder)  # fresh: no one else writes in .processing
                checked.rename(src, target)
        except FileNotFoundError:  # the file (or its folder) is gone
            with checked_folders(self.root, durable=False) as checked:
                remove_empty_tree(checked, claim)
            return None
        self._checkpoint("claimed")
        return claim

    def claimed_file(self, claim: Path, plan: ClaimPlan | None) -> Path | None:
        """The entry the claim holds (the planned one, else the one found), None if none:
        `query/NAME` or `query/FOLDER/NAME`, never followed, through folders checked from the root."""
        base = claim / QUERY_DIR
        with checked_folders(self.root, durable=False) as checked:
            try:
                if plan is not None:
                    path = base / plan.claimed
                    mode = os.stat(path.name, dir_fd=checked.fd(path.parent), follow_symlinks=False).st_mode
                    return None if stat.S_ISDIR(mode) and plan.decision == "answer" else path
                top = checked.fd(base)
            except FileNotFoundError:
                return None
            for name in sorted(os.listdir(top)):
                if not stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
                    return base / name
                with suppress(FileNotFoundError):
                    inner = sorted(os.listdir(checked.fd(base / name)))
                    if inner:
                        return base / name / inner[0]
        return None

    def read_plan(self, claim: Path) -> ClaimPlan | None:
        data = read_vault_bytes(self.root, claim / PLAN)  # a link is not a plan of ours
        return None if data is None else ClaimPlan.model_validate_json(data)

    def write_plan(self, claim: Path, plan: ClaimPlan) -> None:
        atomic_write(claim / PLAN, plan.model_dump_json(indent=1, exclude_none=True), root=self.root)

    def plan(self, claim: Path, query_path: Path) -> ClaimPlan:
        claimed = query_path.relative_to(claim / QUERY_DIR).as_posix()
        source = f"inbox/{claimed}"
        verdict = validate_query(self.vault, source, query_path)
        reserved = self.reserved(claim)
        name = query_path.name
        common = {
            "claim": claim.name,
            "source": source,
            "claimed": claimed,
            "planned_at": utcnow(),
            "planned_fs_ns": time.time_ns(),
        }
        if isinstance(verdict, Rejection):
            kept_as = rejected_name(name) if verdict.keep else name  # (not kept: only NAME.error.md)
            rejected = free_name(self.dir / "rejected", kept_as, reserved, companions=(".error.md",))
            plan = ClaimPlan(
                decision="reject",
                reason=verdict.reason,
                message=verdict.message,
                hint=verdict.hint,
                rejected=self.vault.rel(rejected),
                error_file=self.vault.rel(rejected) + ".error.md",
                keep=verdict.keep,
                **common,
            )
        else:
            stem = name.rsplit(".", 1)[0] if "." in name else name
            processed = free_name(self.dir / "processed", name, reserved)
            answer = free_name(self.vault.layout.outbox / verdict.user, f"{stem}.md", reserved)
            plan = ClaimPlan(
                decision="answer",
                user=verdict.user,
                query_file=self.vault.rel(processed),
                turn_key=self.vault.rel(processed),
                answer=self.vault.rel(answer),
                after=max(0, self.vault.layout.highest_turn(verdict.user)),
                **common,
            )
        self.write_plan(claim, plan)
        self._checkpoint("planned")
        return plan

    def reserved(self, own: Path) -> set[str]:
        """Names other claims in flight have planned to take."""
        taken: set[str] = set()
        for claim in self.claim_dirs():
            if claim == own:
                continue
            plan = self.read_plan(claim)
            if plan is None:
                continue
            for rel in (plan.query_file, plan.turn_key, plan.answer, plan.rejected, plan.error_file):
                if rel:
                    taken.add(str(self.root / rel))
        return taken

    def publish_planned(
        self,
        claim: Path,
        plan: ClaimPlan,
        src: Path,
        field_name: Literal["answer", "query_file", "rejected", "error_file"],
    ) -> ClaimPlan:
        """Hard-link `src` to the planned name; if a stranger took it, plan another name."""
        while True:
            planned = getattr(plan, field_name)
            assert planned is not None
            dest = self.root / planned
            if link_no_replace(self.root, src, dest):
                return plan
            fresh = free_name(
                dest.parent,
                dest.name,
                self.reserved(claim),
                companions=(".error.md",) if field_name == "rejected" else (),
            )
            self._log(f"{planned} appeared meanwhile; using {self.vault.rel(fresh)} instead")
            update: dict[str, Any] = {field_name: self.vault.rel(fresh)}
            if field_name == "rejected":  # its explanation goes beside it
                update["error_file"] = update["rejected"] + ".error.md"
            plan = plan.model_copy(update=update)
            self.write_plan(claim, plan)

    def drop(self, path: Path) -> None:
        """Remove `path`, a file of a claim folder (gone is fine), never through a link."""
        unlink_in_vault(self.root, path, durable=False)

    def cleanup(self, claim: Path) -> None:
        """Remove our own bookkeeping (never through a link); anything unexpected stays, reported."""
        with checked_folders(self.root, durable=False) as checked:
            top = checked.fd(claim)
            for name in (ANSWER, ERROR):
                with suppress(FileNotFoundError):
                    os.stat(name, dir_fd=top)
                    return  # not published yet: keep (cannot happen after a finished claim)
            for _, _, filenames, fd in os.fwalk(".", dir_fd=top):
                for name in filenames:
                    if is_temp_name(name):
                        os.unlink(name, dir_fd=fd)
            with suppress(FileNotFoundError):
                os.unlink(PLAN, dir_fd=top)
            leftover = remove_empty_tree(checked, claim)
        if leftover:
            self._log(f"left {self.vault.rel(claim)} in place: it still holds {leftover}")
        self._checkpoint("cleaned")
