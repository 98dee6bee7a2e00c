"""The inbox: every query file dropped into `inbox/` becomes exactly one answered turn.

A `.md` or `.txt` file in `inbox/` (user `[inbox] default_user`) or `inbox/{user}/`
(or with frontmatter `user:`) is claimed, run through the pipeline, answered in
`outbox/{user}/{name}.md`, and moved to `inbox/processed/`.  A file that cannot be a
query (wrong extension, empty, binary, too large, unknown user, broken frontmatter) is
moved to `inbox/rejected/` next to a `NAME.error.md` saying why and what to do.
Nothing is deleted, nothing is overwritten.

Exactly once, whatever moment the process dies at.  Every step either is atomic or
leaves a state the next run recognises and finishes (`recover`), and the only
bookkeeping is one folder per claim, `inbox/.processing/{claim}/`, hidden from
Obsidian and from the watcher:

    inbox/alice/q.md                           dropped; waits until it has settled
      │ 1 claim: rename into .processing/C/query/alice/q.md      (atomic; a rival loses)
      ▼
    claimed                                    recover: plan it again (step 2)
      │ 2 plan.json: user, names it will get (inbox/processed/q.md, outbox/alice/q.md),
      │   or the rejection and its reason                          (atomic write)
      ▼
    planned                                    recover: find the turn whose turn_started
      │ 3 allocate users/alice/turns/T              has inbox_file == the plan's turn_key;
      │ 4 turn_started{inbox_file} (fsync)          else adopt the empty folder step 3
      ▼                                             left (numbered after the plan); else 3
    started                                    recover: Pipeline.resume(alice, T)
      │ 5 Pipeline.resume runs the phases (each appends its events)
      ▼
    answered (turn_completed)
      │ 6 answer written in the claim folder, then hard-linked to outbox/alice/q.md
      │   (a link never overwrites: a name taken meanwhile gets a suffix, plan updated)
      │ 7 query hard-linked to inbox/processed/q.md, then unlinked from the claim
      ▼
    done                                       recover: remove plan.json, the folder
      8 cleanup

So the turn itself (its `turn_started.inbox_file`) records which file it came from,
and a restart finds it rather than allocating another; the one window without such
a record — a turn folder allocated but still empty — is closed by adopting that
folder.  Only one process works on the inbox at a time (`inbox/.processing/.lock`,
held per file), so any claim folder found while holding the lock is an orphan.

Waiting files: a file is claimed only once it has not been written for `settle_s`
(an editor or a copy may still be writing it); an empty file gets `empty_grace_s`
(an editor creates the note before you type) unless the caller says this is the
final look (`watch --once`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict

from events import (
    EventWriter,
    atomic_write,
    is_temp_name,
    parse_document,
    read_log,
    render_document,
    repair_torn_tail,
    turn_name,
    validate_user_id,
)
from events.clock import utcnow
from events.errors import FrontmatterError, InvalidUserId, LogBusyError, NotInVault
from events.fsio import fsync_dir, open_vault_file
from events.layout import TURN_DIR_RE
from events.schema import TornTailRepaired, TurnStarted

from .assembly import open_memory
from .errors import Busy
from .memory import Memory
from .pipeline import Pipeline, TurnResult
from .pipeline.turn import MAX_QUERY_CHARS
from .turns import EVENTS_FILE
from .vault import Vault, file_lock

__all__ = [
    "ClaimPlan",
    "Inbox",
    "InboxReport",
    "InboxResult",
    "QUERY_SUFFIXES",
    "RESERVED_FOLDERS",
    "is_query_candidate",
]

QUERY_SUFFIXES = (".md", ".txt")
RESERVED_FOLDERS = frozenset({"processed", "rejected"})
"""Folders of `inbox/` that are not user folders (a user named so uses frontmatter)."""

PROCESSING = ".processing"
LOCK_NAME = ".lock"
PLAN = "plan.json"
ANSWER = "answer.md"
ERROR = "error.md"
QUERY_DIR = "query"
ADOPT_PROBE_MISSES = 16

Log = Callable[[str], None]


def is_query_candidate(rel_path: str) -> bool:
    """True if a vault-relative path is where a query file may be dropped.

    `inbox/NAME` and `inbox/FOLDER/NAME`, except `inbox/processed/`, `inbox/rejected/`,
    hidden files and folders, and temporary files (`*.tmp`, `.swp`, `~`, `.part`...).
    Any other extension is a candidate too: it is rejected with an explanation.
    """
    parts = rel_path.split("/")
    if parts[0] != "inbox" or len(parts) not in (2, 3):
        return False
    if len(parts) == 3 and parts[1] in RESERVED_FOLDERS:
        return False
    name = parts[-1]
    return not (
        any(p.startswith(".") for p in parts)
        or is_temp_name(name)
        or name.startswith("~$")
        or name.endswith(".crdownload")
    )


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
    """The file system's clock (`time.time_ns`) when planned: folder mtimes are compared
    with it, not with `planned_at`, which follows the (shiftable) PandaFS clock."""
    decision: Literal["answer", "reject"]
    user: str | None = None
    query_file: str | None = None
    """Where the query ends up (`inbox/processed/NAME`)."""
    turn_key: str | None = None
    """The turn's `turn_started.inbox_file`: the first planned `query_file`, never changed
    (if a stranger takes that name before the move, `query_file` changes, this does not)."""
    answer: str | None = None
    """Where the answer goes (`outbox/{user}/NAME.md`)."""
    after: int = 0
    """Every turn of `user` numbered above this was allocated after the plan."""
    reason: str | None = None
    message: str | None = None
    hint: str | None = None
    rejected: str | None = None
    """`inbox/rejected/NAME` (the query); its explanation is `NAME.error.md`."""


@dataclass(frozen=True)
class InboxResult:
    """What became of one file."""

    source: str
    status: Literal["answered", "rejected", "deferred", "failed"]
    user: str | None = None
    turn: str | None = None
    outcome: str | None = None
    answer: str | None = None
    query_file: str | None = None
    rejected: str | None = None
    error_file: str | None = None
    reason: str | None = None
    message: str | None = None
    recovered: bool = False
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"source": self.source, "status": self.status}
        if self.status == "answered":
            data.update(
                user=self.user,
                turn_id=self.turn,
                doc_id=f"{self.user}/{self.turn}",
                outcome=self.outcome,
                answer=self.answer,
                query_file=self.query_file,
            )
        elif self.status == "rejected":
            data.update(
                rejected=self.rejected,
                error_file=self.error_file,
                reason=self.reason,
                message=self.message,
            )
        else:
            data.update(reason=self.reason, message=self.message)
        data["recovered"] = self.recovered
        data["seconds"] = round(self.seconds, 4)
        return data

    def describe(self) -> str:
        """One log line."""
        again = " (resumed after a crash)" if self.recovered else ""
        if self.status == "answered":
            return (
                f"answered {self.source} → {self.answer} "
                f"[{self.outcome}] {self.user}/{self.turn} in {self.seconds:.2f} s{again}"
            )
        if self.status == "rejected":
            return f"rejected {self.source} → {self.rejected}: {self.message}{again}"
        return f"{self.status} {self.source}: {self.message}"


@dataclass
class InboxReport:
    results: list[InboxResult] = field(default_factory=list)

    def of(self, status: str) -> list[InboxResult]:
        return [r for r in self.results if r.status == status]

    def as_json(self) -> dict[str, Any]:
        return {
            "answered": [r.as_json() for r in self.of("answered")],
            "rejected": [r.as_json() for r in self.of("rejected")],
            "failed": [r.as_json() for r in self.of("failed")],
            "deferred": [r.as_json() for r in self.of("deferred")],
            "recovered": sum(1 for r in self.results if r.recovered),
        }


@dataclass(frozen=True)
class _Query:
    user: str
    text: str


@dataclass(frozen=True)
class _Rejection:
    reason: str
    message: str
    hint: str


class _Stuck(Exception):
    """A claim that cannot go on now; it stays in `.processing/` and is retried."""


def _now() -> datetime:
    return utcnow()


class Inbox:
    """Claims, answers and files away the query files of one vault's `inbox/`.

    `pending()` lists the files waiting (oldest first), `process(rel)` handles one,
    `process_pending()` all of them, `recover()` finishes what a dead process left.
    Not thread-safe: one `Inbox` per thread; processes coordinate through the lock.
    """

    def __init__(
        self,
        vault: Vault,
        *,
        memory: Memory | None = None,
        pipeline: Pipeline | None = None,
        settle_s: float = 1.0,
        empty_grace_s: float = 30.0,
        adopt_after_s: float = 5.0,
        lock_wait_s: float = 30.0,
        log: Log | None = None,
    ) -> None:
        self.vault = vault
        self.root = vault.root
        self.dir = vault.layout.inbox
        self.processing = self.dir / PROCESSING
        self.memory = memory or (pipeline.memory if pipeline is not None else open_memory(vault))
        self._pipeline = pipeline
        self._owns_pipeline = pipeline is None
        self.settle_s = settle_s
        self.empty_grace_s = empty_grace_s
        self.adopt_after_s = adopt_after_s
        self.lock_wait_s = lock_wait_s
        self._log = log or (lambda line: None)
        self._seen: dict[str, tuple[int, int, int, float]] = {}
        self._retry_at: dict[str, tuple[int, float]] = {}
        self._claims = 0

    # -- services --------------------------------------------------------------------

    @property
    def pipeline(self) -> Pipeline:
        if self._pipeline is None:
            self._pipeline = Pipeline(self.vault, memory=self.memory)
        return self._pipeline

    def close(self) -> None:
        if self._pipeline is not None and self._owns_pipeline:
            self._pipeline.close()
            self._pipeline = None

    def __enter__(self) -> Inbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what is waiting ---------------------------------------------------------------

    def pending(self) -> list[str]:
        """Vault-relative paths of files waiting in the inbox, oldest first."""
        found: list[tuple[int, str]] = []
        try:
            top = list(os.scandir(self.dir))
        except FileNotFoundError:
            return []
        for entry in top:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name in RESERVED_FOLDERS:
                    continue
                try:
                    inner = list(os.scandir(entry.path))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for sub in inner:
                    rel = f"inbox/{entry.name}/{sub.name}"
                    if sub.is_file(follow_symlinks=False) and is_query_candidate(rel):
                        found.append((_mtime(sub), rel))
            elif entry.is_file(follow_symlinks=False):
                rel = f"inbox/{entry.name}"
                if is_query_candidate(rel):
                    found.append((_mtime(entry), rel))
        return [rel for _, rel in sorted(found)]

    def readiness(self, rel: str, *, final: bool = False) -> float | None:
        """Seconds until `rel` may be claimed (0.0 = now); None if it is gone.

        Settled means not written for `settle_s` — judged by its mtime, or, for a file
        whose mtime is in the future, by seeing the same size and mtime that long.
        """
        try:
            st = os.stat(self.root / rel)
        except FileNotFoundError:
            self._seen.pop(rel, None)
            return None
        now_m = time.monotonic()
        key = (st.st_size, st.st_mtime_ns, st.st_ino)
        seen = self._seen.get(rel)
        if seen is None or seen[:3] != key:
            self._seen[rel] = (*key, now_m)
            first = now_m
        else:
            first = seen[3]
        quiet = max(time.time() - st.st_mtime, now_m - first)
        needed = self.settle_s
        if st.st_size == 0 and not final:
            needed = max(needed, self.empty_grace_s)
        return max(0.0, needed - quiet)

    # -- processing --------------------------------------------------------------------

    def process_pending(
        self,
        *,
        final: bool = True,
        max_wait_s: float | None = None,
        on_result: Callable[[InboxResult], None] | None = None,
    ) -> InboxReport:
        """Finish orphaned claims, then handle every waiting file, oldest first.

        `final=True` (what `watch --once` does) waits for young files to settle — for
        at most `max_wait_s` in all (default: the larger of 5 s and 3 × settle_s; no
        waiting when not final) — and rejects an empty file as soon as it has settled.
        Files still unsettled then are reported as `deferred`, and so is everything
        when another process holds the inbox past `lock_wait_s` (it is answering them).
        """
        report = InboxReport()
        notify = on_result or (lambda result: None)

        def add(results: list[InboxResult]) -> None:
            report.results.extend(results)
            for result in results:
                notify(result)

        if max_wait_s is None:
            max_wait_s = max(5.0, 3 * self.settle_s) if final else 0.0
        deadline = time.monotonic() + max_wait_s
        try:
            add(self.recover())
            while True:
                waits: list[float] = []
                progressed = False
                for rel in self.pending():
                    wait = self.readiness(rel, final=final)
                    if wait is None:
                        continue
                    if wait > 0:
                        waits.append(wait)
                        continue
                    results = self.process(rel, final=final)
                    add(results)
                    progressed = progressed or bool(results)
                if progressed:
                    continue
                remaining = deadline - time.monotonic()
                if not waits or remaining <= 0:
                    break
                time.sleep(min(min(waits), remaining, 0.5))
        except Busy as exc:
            add([InboxResult(rel, "deferred", reason="busy", message=str(exc)) for rel in self.pending()])
            return report
        add(
            [
                InboxResult(
                    rel,
                    "deferred",
                    reason="unsettled",
                    message="still being written (or empty and young); left for later",
                )
                for rel in self.pending()
                if self.readiness(rel, final=final)
            ]
        )
        return report

    def process(self, rel: str, *, final: bool = False) -> list[InboxResult]:
        """Claim and handle one waiting file (after any orphaned claims).

        Returns what became of them; empty if `rel` is gone or has not settled yet.
        Raises `Busy` if another process holds the inbox longer than `lock_wait_s`.
        """
        if not is_query_candidate(rel):
            raise ValueError(f"{rel} is not a place for query files")
        wait = self.readiness(rel, final=final)
        if wait is None or wait > 0:
            return []
        with self._locked():
            results = self._recover_locked()
            claim = self._claim(rel)
            self._seen.pop(rel, None)
            if claim is not None:
                result = self._finish(claim, recovered=False)
                if result is not None:
                    results.append(result)
        return results

    def recover(self) -> list[InboxResult]:
        """Finish every claim a dead process left in `inbox/.processing/`."""
        if not self.has_claims():
            return []
        with self._locked():
            return self._recover_locked()

    # -- locking and claims -----------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.processing.mkdir(parents=True, exist_ok=True)
        with file_lock(self.processing / LOCK_NAME, wait_s=self.lock_wait_s, what="the inbox"):
            yield

    def has_claims(self) -> bool:
        """True if `inbox/.processing/` holds claims (orphans, or ones waiting for a retry)."""
        try:
            with os.scandir(self.processing) as entries:
                return any(not e.name.startswith(".") for e in entries)
        except FileNotFoundError:
            return False

    def _claim_dirs(self) -> list[Path]:
        try:
            return sorted(
                Path(e.path)
                for e in os.scandir(self.processing)
                if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
            )
        except FileNotFoundError:
            return []

    def _recover_locked(self) -> list[InboxResult]:
        results: list[InboxResult] = []
        for claim in self._claim_dirs():
            retry = self._retry_at.get(claim.name)
            if retry is not None and time.monotonic() < retry[1]:
                continue
            result = self._finish(claim, recovered=True)
            if result is not None:
                results.append(result)
        return results

    def _new_claim_id(self) -> str:
        self._claims += 1
        return f"{time.time_ns():020d}-{os.getpid()}-{self._claims}"

    def _claim(self, rel: str) -> Path | None:
        """Move `rel` into a fresh claim folder; None if it vanished (or a rival took it)."""
        inner = rel.removeprefix("inbox/")
        claim = self.processing / self._new_claim_id()
        target = claim / QUERY_DIR / inner
        target.parent.mkdir(parents=True)
        try:
            os.rename(self.root / rel, target)
        except FileNotFoundError:
            _remove_empty_tree(claim)
            return None
        fsync_dir(target.parent)
        fsync_dir((self.root / rel).parent)
        self._checkpoint("claimed")
        return claim

    # -- one claim, from whatever state it is in ----------------------------------------

    def _finish(self, claim: Path, *, recovered: bool) -> InboxResult | None:
        started = time.perf_counter()
        try:
            result = self._advance(claim, recovered)
        except _Stuck as exc:
            result = self._failed(claim, str(exc), recovered)
        except Exception as exc:  # kept in .processing and retried with a backoff
            result = self._failed(claim, f"{type(exc).__name__}: {exc}", recovered)
        else:
            self._retry_at.pop(claim.name, None)
        if result is None:
            return None
        return replace(result, seconds=time.perf_counter() - started)

    def _failed(self, claim: Path, message: str, recovered: bool) -> InboxResult:
        count = self._retry_at.get(claim.name, (0, 0.0))[0] + 1
        delay = min(600.0, 5.0 * 2 ** (count - 1))
        self._retry_at[claim.name] = (count, time.monotonic() + delay)
        try:
            plan = self._read_plan(claim)
        except ValueError:
            plan = None
        source = plan.source if plan else f"inbox/{PROCESSING}/{claim.name}"
        return InboxResult(
            source,
            "failed",
            reason="error",
            message=f"{message} (kept in {self.vault.rel(claim)}; retried in {delay:g} s)",
            recovered=recovered,
        )

    def _advance(self, claim: Path, recovered: bool) -> InboxResult | None:
        plan = self._read_plan(claim)
        query_path = self._claimed_file(claim, plan)
        if plan is None:
            if query_path is None:  # died between creating the folder and the rename
                self._cleanup(claim)
                return None
            plan = self._plan(claim, query_path)
        if plan.decision == "reject":
            return self._reject(claim, plan, query_path, recovered)
        if query_path is None:  # answered and moved: only the cleanup was left
            self._cleanup(claim)
            return self._answered_earlier(plan, recovered)
        return self._answer(claim, plan, query_path, recovered)

    def _answered_earlier(self, plan: ClaimPlan, recovered: bool) -> InboxResult:
        assert plan.user is not None and plan.query_file is not None
        if not (self.root / plan.query_file).exists():
            return InboxResult(
                plan.source,
                "failed",
                reason="vanished",
                message=f"the claimed copy of {plan.source} was removed from inbox/.processing/ "
                "before it was answered (by hand?); nothing more can be done with it",
                recovered=recovered,
            )
        found = self._find_turn(plan)
        turn = found if isinstance(found, str) else None
        return InboxResult(
            plan.source,
            "answered",
            user=plan.user,
            turn=turn,
            outcome=_outcome_of(self.vault, plan.user, turn) if turn else None,
            answer=plan.answer,
            query_file=plan.query_file,
            recovered=recovered,
        )

    # -- step 2: read, validate, plan -------------------------------------------------

    def _claimed_file(self, claim: Path, plan: ClaimPlan | None) -> Path | None:
        base = claim / QUERY_DIR
        if plan is not None:
            path = base / plan.claimed
            return path if path.is_file() else None
        for dirpath, _, filenames in os.walk(base):
            for name in filenames:
                return Path(dirpath) / name
        return None

    def _read_plan(self, claim: Path) -> ClaimPlan | None:
        try:
            return ClaimPlan.model_validate_json((claim / PLAN).read_bytes())
        except FileNotFoundError:
            return None

    def _write_plan(self, claim: Path, plan: ClaimPlan) -> None:
        atomic_write(claim / PLAN, plan.model_dump_json(indent=1, exclude_none=True))

    def _plan(self, claim: Path, query_path: Path) -> ClaimPlan:
        claimed = query_path.relative_to(claim / QUERY_DIR).as_posix()
        source = f"inbox/{claimed}"
        verdict = self._validate(source, query_path)
        reserved = self._reserved(claim)
        name = query_path.name
        common = {
            "claim": claim.name,
            "source": source,
            "claimed": claimed,
            "planned_at": _now(),
            "planned_fs_ns": time.time_ns(),
        }
        if isinstance(verdict, _Rejection):
            rejected = _free_name(
                self.dir / "rejected", _rejected_name(name), reserved, companions=(".error.md",)
            )
            plan = ClaimPlan(
                decision="reject",
                reason=verdict.reason,
                message=verdict.message,
                hint=verdict.hint,
                rejected=self.vault.rel(rejected),
                **common,
            )
        else:
            stem = name.rsplit(".", 1)[0] if "." in name else name
            processed = _free_name(self.dir / "processed", name, reserved)
            answer = _free_name(self.vault.layout.outbox / verdict.user, f"{stem}.md", reserved)
            plan = ClaimPlan(
                decision="answer",
                user=verdict.user,
                query_file=self.vault.rel(processed),
                turn_key=self.vault.rel(processed),
                answer=self.vault.rel(answer),
                after=self._highest_turn(verdict.user),
                **common,
            )
        self._write_plan(claim, plan)
        self._checkpoint("planned")
        return plan

    def _reserved(self, own: Path) -> set[str]:
        """Names other claims in flight have planned to take."""
        taken: set[str] = set()
        for claim in self._claim_dirs():
            if claim == own:
                continue
            plan = self._read_plan(claim)
            if plan is None:
                continue
            for rel in (plan.query_file, plan.turn_key, plan.answer, plan.rejected):
                if rel:
                    taken.add(str(self.root / rel))
            if plan.rejected:
                taken.add(str(self.root / f"{plan.rejected}.error.md"))
        return taken

    def _validate(self, source: str, path: Path) -> _Query | _Rejection:
        cfg = self.vault.config.inbox
        name = path.name
        parts = source.split("/")
        if not name.lower().endswith(QUERY_SUFFIXES):
            return _Rejection(
                "wrong_extension",
                f"`{name}` is not a .md or .txt file; the inbox only reads text queries",
                "Save the question as a .md or .txt file and drop it into inbox/ again.",
            )
        try:  # the vault is the boundary: a link swapped in after the claim is never read
            with open_vault_file(self.root, path.relative_to(self.root).as_posix()) as handle:
                size = os.fstat(handle.fileno()).st_size
                raw = handle.read(cfg.max_bytes + 1)
        except NotInVault as exc:
            return _Rejection(
                "symlink",
                f"the file {exc.reason}: PandaFS never reads through links",
                "Copy the question into a plain file and drop it into inbox/ again.",
            )
        if size > cfg.max_bytes:
            return _Rejection(
                "too_large",
                f"the file is {size:,} bytes; query files may be at most {cfg.max_bytes:,} "
                "bytes (`[inbox] max_bytes` in pandafs.toml)",
                "Put only the question in the file (long material belongs in a document "
                "under knowledge/), or raise `[inbox] max_bytes`.",
            )
        if size == 0:
            return _Rejection(
                "empty",
                "the file is empty",
                "Write the question into the file, then drop it into inbox/ again.",
            )
        nul = raw.find(b"\0")
        if nul >= 0:
            return _Rejection(
                "binary",
                f"the file contains NUL bytes (the first at byte {nul:,}): it is not text",
                "Save the question as plain UTF-8 text (.md or .txt).",
            )
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return _Rejection(
                "binary",
                f"the file is not UTF-8 text (invalid byte at offset {exc.start:,})",
                "Save the question as plain UTF-8 text (.md or .txt).",
            )
        try:
            parsed = parse_document(text, source)
        except FrontmatterError as exc:
            return _Rejection(
                "bad_frontmatter",
                str(exc),
                "Fix the YAML between the `---` lines (or remove it) and drop the file again.",
            )
        folder_user = parts[1] if len(parts) == 3 else None
        fm_user = parsed.frontmatter.get("user")
        if folder_user is not None and fm_user is not None and fm_user != folder_user:
            return _Rejection(
                "user_conflict",
                f"the file is in inbox/{folder_user}/ but its frontmatter says user: {fm_user!r}",
                "Keep one of them: move the file or fix `user:` in the frontmatter.",
            )
        user = folder_user if folder_user is not None else fm_user
        if user is None:
            user = cfg.default_user
        hint = (
            "Put the file in inbox/<user>/ or set `user:` in its frontmatter to a valid user "
            "id (lowercase letters, digits, '-' and '_')."
        )
        try:
            validate_user_id(user)
        except InvalidUserId as exc:
            return _Rejection("unknown_user", f"unknown user: {exc}", hint)
        if cfg.allowed_users and user not in cfg.allowed_users:
            allowed = ", ".join(cfg.allowed_users)
            return _Rejection(
                "unknown_user",
                f"unknown user {user!r}: not in `[inbox] allowed_users` ({allowed})",
                hint.replace("a valid user id", "one of the allowed users")
                + " Or add the user to `[inbox] allowed_users`.",
            )
        query = parsed.body.strip()
        if not query:
            return _Rejection(
                "empty",
                "the file holds no question (only frontmatter or blank lines)",
                "Write the question below the frontmatter, then drop it into inbox/ again.",
            )
        if len(query) > MAX_QUERY_CHARS:
            return _Rejection(
                "too_long",
                f"the question is {len(query):,} characters long (at most {MAX_QUERY_CHARS:,})",
                "Shorten the question; long material belongs in a document under knowledge/.",
            )
        return _Query(user, query)

    def _highest_turn(self, user: str) -> int:
        """A number every turn of `user` allocated from now on will exceed."""
        turns = self.vault.layout.turns_dir(user)
        try:
            return max(0, int((turns / ".counter").read_text().strip()) - 1)
        except (FileNotFoundError, ValueError):
            pass
        highest = 0
        try:
            for entry in os.scandir(turns):
                match = TURN_DIR_RE.fullmatch(entry.name)
                if match:
                    highest = max(highest, int(match.group(1)))
        except FileNotFoundError:
            pass
        return highest

    # -- rejection --------------------------------------------------------------------

    def _reject(self, claim: Path, plan: ClaimPlan, query_path: Path | None, recovered: bool) -> InboxResult:
        """Move the query to `inbox/rejected/NAME`, then explain it in `NAME.error.md`."""
        if query_path is not None:
            plan = self._publish_planned(claim, plan, query_path, "rejected")
            query_path.unlink(missing_ok=True)
            self._checkpoint("moved")
        assert plan.rejected is not None
        error_tmp = claim / ERROR
        base = self.root / plan.rejected
        done = _explained(base, plan.claim)
        if done is None and not error_tmp.exists():
            atomic_write(error_tmp, _render_error(plan))
            self._checkpoint("error_written")
        if done is None:
            done = _publish_explanation(error_tmp, base, plan.claim)
            error_tmp.unlink(missing_ok=True)
        self._cleanup(claim)
        return InboxResult(
            plan.source,
            "rejected",
            rejected=plan.rejected,
            error_file=self.vault.rel(done),
            reason=plan.reason,
            message=plan.message,
            recovered=recovered,
        )

    # -- answering --------------------------------------------------------------------

    def _answer(self, claim: Path, plan: ClaimPlan, query_path: Path, recovered: bool) -> InboxResult:
        assert plan.user is not None and plan.answer is not None
        user = plan.user
        answer_tmp = claim / ANSWER
        found = self._find_turn(plan)
        turn = found if isinstance(found, str) else None
        published = (
            turn is not None
            and not answer_tmp.exists()
            and _answer_turn(self.root / plan.answer) == f"{user}/{turn}"
        )
        if not published:
            if turn is None:
                turn = self._start(plan, query_path, found)
            result = self.pipeline.resume(user, turn)
            self._checkpoint("turn_done")
            if not answer_tmp.exists():
                atomic_write(answer_tmp, _render_answer(plan, result, self._read_query(plan, query_path)))
            plan = self._publish_planned(claim, plan, answer_tmp, "answer")
            answer_tmp.unlink(missing_ok=True)
            self._checkpoint("answer_published")
            outcome: str | None = result.outcome
        else:
            outcome = _outcome_of(self.vault, user, turn) if turn else None
        plan = self._publish_planned(claim, plan, query_path, "query_file")
        query_path.unlink(missing_ok=True)
        self._checkpoint("moved")
        self._cleanup(claim)
        return InboxResult(
            plan.source,
            "answered",
            user=user,
            turn=turn,
            outcome=outcome,
            answer=plan.answer,
            query_file=plan.query_file,
            recovered=recovered,
        )

    def _read_query(self, plan: ClaimPlan, query_path: Path) -> str:
        verdict = self._validate(plan.source, query_path)
        if isinstance(verdict, _Rejection):  # the claimed copy is ours alone: cannot happen
            raise _Stuck(f"{plan.source} no longer reads as a query: {verdict.message}")
        return verdict.text

    def _find_turn(self, plan: ClaimPlan) -> str | list[tuple[str, Path]]:
        """The turn started for this plan, or the empty turn folders that may be ours.

        Probes the user's turn numbers above `plan.after` (allocation only goes up);
        a folder with no complete event is a candidate: it is the one a dead process
        allocated but never started, or one another writer is about to fill.
        """
        assert plan.user is not None
        turns = self.vault.layout.turns_dir(plan.user)
        empties: list[tuple[str, Path]] = []
        number, misses = plan.after + 1, 0
        while misses < ADOPT_PROBE_MISSES:
            name = turn_name(number)
            folder = turns / name
            number += 1
            if not folder.is_dir():
                misses += 1
                continue
            misses = 0
            log = read_log(folder / EVENTS_FILE)
            if log.records:
                first = log.records[0]
                data = first.get("data") or {}
                if first.get("type") == "turn_started" and data.get("inbox_file") == plan.turn_key:
                    return name
            else:
                empties.append((name, folder))
        return empties

    def _start(self, plan: ClaimPlan, query_path: Path, found: str | list[tuple[str, Path]]) -> str:
        """Start the turn: adopt the empty folder a dead run allocated, or allocate one."""
        assert plan.user is not None
        user = plan.user
        query = self._read_query(plan, query_path)
        candidates = found if isinstance(found, list) else []
        planned = plan.planned_fs_ns or int(plan.planned_at.timestamp() * 1e9)
        planned_ns = planned - 1_000_000_000
        for turn, folder in candidates:
            try:
                mtime = folder.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if mtime < planned_ns:
                continue
            age = time.time() - mtime / 1e9
            if age < self.adopt_after_s:  # maybe a live `ask` or import about to write
                time.sleep(self.adopt_after_s - age)
                if read_log(folder / EVENTS_FILE).records:
                    continue
            if self._begin(user, turn, plan, query):
                self._log(f"adopted {user}/{turn}, allocated for {plan.source} before a crash")
                return turn
        turn = self.vault.allocate_turns(user)[0]
        self._checkpoint("allocated")
        if not self._begin(user, turn, plan, query):
            raise _Stuck(f"{user}/{turn} was taken by another writer")
        return turn

    def _begin(self, user: str, turn: str, plan: ClaimPlan, query: str) -> bool:
        """Write `turn_started` into an empty turn folder; False if another writer has it."""
        path = self.vault.layout.turn_dir(user, turn) / EVENTS_FILE
        started = TurnStarted(
            query=query,
            source="inbox",
            occurred_at=self.pipeline.clock(),
            inbox_file=plan.turn_key,
            backend=self.pipeline.backend.name,
        )
        try:
            if not path.exists():
                with EventWriter(path, user=user, turn=turn, new=True) as writer:
                    writer.append(started)
            else:
                log = read_log(path)
                if log.records:
                    return False
                moved = repair_torn_tail(path) if log.torn_tail is not None else 0
                with EventWriter(path, user=user, turn=turn) as writer:
                    writer.append(started)
                    if moved:
                        writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))
        except (FileExistsError, LogBusyError):
            return False
        self._checkpoint("started")
        return True

    # -- moving files without ever overwriting -----------------------------------------

    def _publish_planned(
        self,
        claim: Path,
        plan: ClaimPlan,
        src: Path,
        field_name: Literal["answer", "query_file", "rejected"],
    ) -> ClaimPlan:
        """Hard-link `src` to the planned name; if a stranger took it, plan another name."""
        while True:
            planned = getattr(plan, field_name)
            assert planned is not None
            dest = self.root / planned
            if _link_no_replace(src, dest):
                return plan
            fresh = _free_name(
                dest.parent,
                dest.name,
                self._reserved(claim),
                companions=(".error.md",) if field_name == "rejected" else (),
            )
            self._log(f"{planned} appeared meanwhile; using {self.vault.rel(fresh)} instead")
            plan = plan.model_copy(update={field_name: self.vault.rel(fresh)})
            self._write_plan(claim, plan)

    def _cleanup(self, claim: Path) -> None:
        """Remove our own bookkeeping; anything unexpected stays (and is reported)."""
        for path in (claim / ANSWER, claim / ERROR):
            if path.exists():
                return  # not published yet: keep (cannot happen after a finished claim)
        for dirpath, _, filenames in os.walk(claim):
            for name in filenames:
                if is_temp_name(name):
                    os.unlink(os.path.join(dirpath, name))
        (claim / PLAN).unlink(missing_ok=True)
        leftover = _remove_empty_tree(claim)
        if leftover:
            self._log(f"left {self.vault.rel(claim)} in place: it still holds {leftover}")
        self._checkpoint("cleaned")

    def _checkpoint(self, step: str) -> None:
        """A named point between two steps (tests make a process die here)."""


# -- helpers --------------------------------------------------------------------------


def _mtime(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_mtime_ns
    except FileNotFoundError:
        return 0


def _rejected_name(name: str) -> str:
    """A rejected file keeps its bytes but not a name Obsidian would parse as a note
    (a binary `x.md` crashes vault tooling): `x.md` → `x.md.rejected`."""
    return f"{name}.rejected" if name.lower().endswith(".md") else name


def _free_name(
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


def _link_no_replace(src: Path, dest: Path) -> bool:
    """Make `dest` name the file `src` names; False if `dest` is another file already.

    A hard link never replaces an existing name, so nothing is ever overwritten.  On a
    filesystem without hard links we fall back to check-then-rename (we hold the inbox
    lock; only a person could race us there).
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except FileExistsError:
        return os.path.samefile(src, dest)
    except OSError:
        if dest.exists():
            return os.path.samefile(src, dest)
        os.rename(src, dest)
        fsync_dir(dest.parent)
        return True
    fsync_dir(dest.parent)
    return True


def _remove_empty_tree(top: Path) -> str | None:
    """Remove `top` if it holds only empty folders; else name one file it still holds."""
    for dirpath, dirnames, filenames in os.walk(top, topdown=False):
        if filenames:
            return os.path.join(dirpath, filenames[0])
        for name in dirnames:
            try:
                os.rmdir(os.path.join(dirpath, name))
            except OSError:
                return os.path.join(dirpath, name)
    try:
        os.rmdir(top)
    except FileNotFoundError:
        pass
    except OSError:
        return str(top)
    return None


def _front(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
        return parse_document(head if "\n---" in head[3:] else "", path).frontmatter
    except (OSError, FrontmatterError):
        return {}


def _answer_turn(path: Path) -> str | None:
    """The `doc_id` an answer file in the outbox names, if it is one of ours."""
    value = _front(path).get("doc_id")
    return value if isinstance(value, str) else None


def _names_claim(path: Path, claim: str) -> bool:
    return _front(path).get("claim") == claim


def _explanations(base: Path) -> Iterator[Path]:
    """`NAME.error.md`, then `NAME.error-2.md`, ... (the second only if a stranger took
    the first in the instant between our two moves)."""
    yield Path(f"{base}.error.md")
    n = 2
    while True:
        yield Path(f"{base}.error-{n}.md")
        n += 1


def _explained(base: Path, claim: str) -> Path | None:
    """The explanation of this claim, if it is already published."""
    for path in _explanations(base):
        if not path.exists():
            return None
        if _names_claim(path, claim):
            return path


def _publish_explanation(src: Path, base: Path, claim: str) -> Path:
    for path in _explanations(base):
        if _link_no_replace(src, path) or _names_claim(path, claim):
            return path
    raise AssertionError("unreachable")


def _outcome_of(vault: Vault, user: str, turn: str) -> str | None:
    try:
        meta = orjson.loads((vault.layout.turn_dir(user, turn) / "metadata.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    value = meta.get("outcome")
    return value if isinstance(value, str) else None


def _quote(text: str, limit: int = 2000) -> str:
    text = text if len(text) <= limit else text[:limit].rstrip() + " …"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def _render_answer(plan: ClaimPlan, result: TurnResult, query: str) -> str:
    context = result.context_path.removesuffix(".md")
    link = f"[[{context}|{result.doc_id}]]"
    query_link = f"[[{plan.query_file}|{Path(plan.query_file or '').name}]]"
    front = {
        "doc_id": result.doc_id,
        "turn_id": result.turn,
        "user": result.user,
        "outcome": result.outcome,
        "context": link,
        "context_path": result.context_path,
        "query_file": plan.query_file,
        "source": plan.source,
        "claim": plan.claim,
        "answered_at": _now(),
    }
    body = (
        f"# Answer to {Path(plan.source).name}\n\n"
        f"{_quote(query)}\n\n"
        f"{result.answer.strip()}\n\n"
        f"---\n"
        f"Outcome **{result.outcome}** · turn {link} · query {query_link}\n"
    )
    return render_document(front, body)


def _render_error(plan: ClaimPlan) -> str:
    name = Path(plan.source).name
    front = {
        "rejected_file": plan.rejected,
        "source": plan.source,
        "reason": plan.reason,
        "claim": plan.claim,
        "rejected_at": _now(),
    }
    body = (
        f"# `{name}` was not processed\n\n"
        f"**Why:** {plan.message}.\n\n"
        f"**What to do:** {plan.hint}\n\n"
        f"The file itself is kept, unchanged, as `{plan.rejected}`.\n"
    )
    return render_document(front, body)
