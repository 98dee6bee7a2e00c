"""The inbox's front: which files wait and when each has settled; each claim carried from
whatever state it is in to answered, rejected or failed (its turn started exactly once);
what the user reads: the answer in `outbox/{user}/` or the explanation beside a rejected file."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from events.clock import utcnow
from events.documents import render_document
from events.errors import LogBusyError
from events.fsio import atomic_write, is_real_dir
from events.layout import turn_name
from events.log import EventWriter, read_log, repair_torn_tail
from events.schema import TornTailRepaired, TurnStarted

from ..assembly import open_memory
from ..checks import frontmatter_of
from ..errors import Busy
from ..memory.api import Memory
from ..pipeline import Pipeline, TurnResult
from ..pipeline.recovery import recover
from ..turns import EVENTS_FILE, read_metadata
from ..vault import Vault
from ._claims import ANSWER, ERROR, PROCESSING, ClaimFolders, ClaimPlan, Log, Stuck
from ._parse import QUERY_SUFFIXES, RESERVED_FOLDERS, Query, Rejection, is_query_candidate, validate_query

ADOPT_PROBE_MISSES = 16
"""`_find_turn` stops probing after this many missing turn folders in a row."""


class Inbox:
    """Claims, answers and files away the query files of `inbox/`, starting each claim's turn
    exactly once (one `Inbox` per thread)."""

    def __init__(
        self,
        vault: Vault,
        *,
        memory: Memory | None = None,
        pipeline: Pipeline | None = None,
        settle_s: float = 1.0,
        empty_grace_s: float = 30.0,
        lock_wait_s: float = 30.0,
        log: Log | None = None,
    ) -> None:
        self.vault = vault
        self.root = vault.root
        self.dir = vault.layout.inbox
        self.memory = memory or (pipeline.memory if pipeline is not None else open_memory(vault))
        self._pipeline = pipeline
        self._owns_pipeline = pipeline is None
        self.settle_s = settle_s
        self.empty_grace_s = empty_grace_s
        self._log = log or (lambda line: None)
        self._seen: dict[str, tuple[int, int, int, float]] = {}
        self._retry_at: dict[str, tuple[int, float]] = {}
        # each step tells `_checkpoint` (looked up when called: tests replace it) what is durable
        self.claims = ClaimFolders(
            vault, lock_wait_s=lock_wait_s, log=self._log, checkpoint=lambda step: self._checkpoint(step)
        )

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

    def pending(self) -> list[str]:
        """Vault-relative paths of files waiting in the inbox, oldest first."""
        found: list[tuple[int, str]] = []
        for entry in _listed(self.dir):  # every entry, whatever it is: what cannot be read is rejected
            rel = f"inbox/{entry.name}"
            if not entry.is_dir(follow_symlinks=False):
                if is_query_candidate(rel):
                    found.append((_mtime(entry), rel))
            elif not entry.name.startswith(".") and entry.name not in RESERVED_FOLDERS:
                for sub in _listed(entry.path):
                    if sub.is_dir(follow_symlinks=False) and not sub.name.lower().endswith(QUERY_SUFFIXES):
                        continue  # a folder of the user's own; one named as a query is rejected
                    if is_query_candidate(f"{rel}/{sub.name}"):
                        found.append((_mtime(sub), f"{rel}/{sub.name}"))
        return [rel for _, rel in sorted(found)]

    def readiness(self, rel: str, *, final: bool = False) -> float | None:
        """Seconds until `rel` may be claimed (0.0 = now); None if it is gone.  Settled: not
        written for `settle_s`, by its mtime (one in the future: the same size and mtime that long)."""
        try:
            st = os.stat(self.root / rel, follow_symlinks=False)
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

    def process_pending(
        self,
        *,
        final: bool = True,
        on_result: Callable[[InboxResult], None] | None = None,
    ) -> InboxReport:
        """Finish orphaned claims, then handle every waiting file, oldest first.  `final=True`
        (`watch --once`) waits up to 3 × `settle_s` (at least 5 s) for young files to settle and
        rejects an empty file once settled.  What is still unsettled is `deferred`, and so is
        everything when another process holds the inbox past `lock_wait_s`."""
        report = InboxReport()
        notify = on_result or (lambda result: None)

        def add(results: list[InboxResult]) -> None:
            report.results.extend(results)
            for result in results:
                notify(result)

        deadline = time.monotonic() + (max(5.0, 3 * self.settle_s) if final else 0.0)
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
        young = "still being written (or empty and young); left for later"
        unsettled = [rel for rel in self.pending() if self.readiness(rel, final=final)]
        add([InboxResult(rel, "deferred", reason="unsettled", message=young) for rel in unsettled])
        return report

    def process(self, rel: str, *, final: bool = False) -> list[InboxResult]:
        """Claim and handle one waiting file (after any orphaned claims); [] if gone or unsettled.
        `Busy` if another process holds the inbox longer than `lock_wait_s`."""
        if not is_query_candidate(rel):
            raise ValueError(f"{rel} is not a place for query files")
        wait = self.readiness(rel, final=final)
        if wait is None or wait > 0:
            return []
        with self.claims.locked():
            results = self._recover_locked()
            claim = self.claims.claim(rel)
            self._seen.pop(rel, None)
            if claim is not None:
                results += self._finish(claim, recovered=False)
        return results

    def recover(self) -> list[InboxResult]:
        """Finish every claim a dead process left in `inbox/.processing/`."""
        if not self.claims.claim_dirs():  # (looked at before the inbox's lock is taken)
            return []
        with self.claims.locked():
            return self._recover_locked()

    def _recover_locked(self) -> list[InboxResult]:
        results: list[InboxResult] = []
        for claim in self.claims.claim_dirs():
            retry = self._retry_at.get(claim.name)
            if retry is None or time.monotonic() >= retry[1]:
                results += self._finish(claim, recovered=True)
        return results

    def _finish(self, claim: Path, *, recovered: bool) -> list[InboxResult]:
        """What became of the file of `claim` (nothing, if the claim held none)."""
        started = time.perf_counter()
        try:
            result = self._advance(claim, recovered)
        except Stuck as exc:
            result = self._failed(claim, str(exc), recovered)
        except Exception as exc:  # kept in .processing and retried with a backoff
            result = self._failed(claim, f"{type(exc).__name__}: {exc}", recovered)
        else:
            self._retry_at.pop(claim.name, None)
        return [] if result is None else [replace(result, seconds=time.perf_counter() - started)]

    def _failed(self, claim: Path, message: str, recovered: bool) -> InboxResult:
        count = self._retry_at.get(claim.name, (0, 0.0))[0] + 1
        delay = min(600.0, 5.0 * 2 ** (count - 1))
        self._retry_at[claim.name] = (count, time.monotonic() + delay)
        try:
            plan = self.claims.read_plan(claim)
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
        plan = self.claims.read_plan(claim)
        query_path = self.claims.claimed_file(claim, plan)
        if plan is None:
            if query_path is None:  # died between creating the folder and the rename
                self.claims.cleanup(claim)
                return None
            plan = self.claims.plan(claim, query_path)
        if plan.decision == "reject":
            return self._reject(claim, plan, query_path, recovered)
        if query_path is None:  # answered and moved: the index commit and the cleanup were left
            result = self._answered_earlier(plan, recovered)
            self.claims.cleanup(claim)
            return result
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
        turn, _ = self._find_turn(plan)
        return InboxResult.of(
            plan, "answered", recovered, turn=turn, outcome=self._indexed_again(plan.user, turn)
        )

    def _indexed_again(self, user: str, turn: str | None) -> str | None:
        """The outcome of a turn answered before, indexed again (its commit may have died with the run)."""
        if turn is None:
            return None
        recover(self.pipeline, user, turn, by="watch")
        outcome = (read_metadata(self.root, self.vault.layout.turn_dir(user, turn)) or {}).get("outcome")
        return outcome if isinstance(outcome, str) else None

    def _reject(self, claim: Path, plan: ClaimPlan, query_path: Path | None, recovered: bool) -> InboxResult:
        """Move the query to `inbox/rejected/NAME`, then explain it in `NAME.error.md`."""
        if query_path is not None:
            if plan.keep:  # (a folder is renamed: it has no second name to take)
                plan = self.claims.publish_planned(claim, plan, query_path, "rejected")
            self.claims.drop(query_path)  # not kept: the inbox's own name goes, no other
            self._checkpoint("moved")
        if plan.error_file is None:  # planned by a version that did not record it
            plan = plan.model_copy(update={"error_file": f"{plan.rejected}.error.md"})
        assert plan.error_file is not None
        error_tmp = claim / ERROR
        if (frontmatter_of(self.vault, plan.error_file) or {}).get("claim") != plan.claim:  # not published
            if not error_tmp.exists():
                atomic_write(error_tmp, render_error(plan), root=self.root)
                self._checkpoint("error_written")
            plan = self.claims.publish_planned(claim, plan, error_tmp, "error_file")
            self.claims.drop(error_tmp)
        self.claims.cleanup(claim)
        return InboxResult.of(plan, "rejected", recovered, rejected=plan.rejected if plan.keep else None)

    def _answer(self, claim: Path, plan: ClaimPlan, query_path: Path, recovered: bool) -> InboxResult:
        assert plan.user is not None and plan.answer is not None
        user = plan.user
        answer_tmp = claim / ANSWER
        turn, empties = self._find_turn(plan)
        published = (
            turn is not None
            and not answer_tmp.exists()
            and (frontmatter_of(self.vault, plan.answer) or {}).get("doc_id") == f"{user}/{turn}"
        )
        if not published:
            if turn is None:
                turn = self._start_turn(plan, query_path, empties)
            result = self.pipeline.resume(user, turn, behind=True)  # its index commit lands meanwhile
            self._checkpoint("turn_done")
            if not answer_tmp.exists():
                atomic_write(
                    answer_tmp,
                    render_answer(plan, result, self._read_query(plan, query_path).text),
                    root=self.root,
                )
            plan = self.claims.publish_planned(claim, plan, answer_tmp, "answer")
            self.claims.drop(answer_tmp)
            self._checkpoint("answer_published")
            outcome: str | None = result.outcome
        else:
            outcome = self._indexed_again(user, turn)
        plan = self.claims.publish_planned(claim, plan, query_path, "query_file")
        self.claims.drop(query_path)
        self._checkpoint("moved")
        # the index commit before the claim goes: killed meanwhile, the claim's next run indexes again
        self._settle_index(user, turn)
        self.claims.cleanup(claim)
        return InboxResult.of(plan, "answered", recovered, turn=turn, outcome=outcome)

    def _read_query(self, plan: ClaimPlan, query_path: Path) -> Query:
        verdict = validate_query(self.vault, plan.source, query_path)
        if isinstance(verdict, Rejection):  # the claimed copy is ours alone: cannot happen
            raise Stuck(f"{plan.source} no longer reads as a query: {verdict.message}")
        return verdict

    def _find_turn(self, plan: ClaimPlan) -> tuple[str | None, list[tuple[str, Path]]]:
        """The turn started for this plan, else (None, the empty turn folders that may be ours,
        probed above `plan.after`: one a dead process allocated, or another writer is to fill)."""
        assert plan.user is not None
        turns = self.vault.layout.turns_dir(plan.user)
        empties: list[tuple[str, Path]] = []
        number, misses = plan.after + 1, 0
        while misses < ADOPT_PROBE_MISSES:
            name = turn_name(number)
            folder = turns / name
            number += 1
            if not is_real_dir(folder):  # a linked folder is nobody's turn to adopt
                misses += 1
                continue
            misses = 0
            log = read_log(folder / EVENTS_FILE, root=self.root)
            if log.records:
                first = log.records[0]
                data = first.get("data") or {}
                if first.get("type") == "turn_started" and data.get("inbox_file") == plan.turn_key:
                    return name, []
            else:
                empties.append((name, folder))
        return None, empties

    def _start_turn(self, plan: ClaimPlan, query_path: Path, empties: list[tuple[str, Path]]) -> str:
        """Start the turn: adopt the empty folder a dead run allocated, or allocate one."""
        assert plan.user is not None
        user = plan.user
        query = self._read_query(plan, query_path)
        planned_ns = (plan.planned_fs_ns or int(plan.planned_at.timestamp() * 1e9)) - 1_000_000_000
        for turn, folder in empties:
            try:
                mtime = folder.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if mtime < planned_ns:
                continue
            with self.vault.held_turn(user, turn) as held:  # not held: its allocator died
                if held and self._begin(user, turn, plan, query):
                    self._log(f"adopted {user}/{turn}, allocated for {plan.source} before a crash")
                    return turn
        with self.vault.new_turn(user) as turn:  # held until its first event: never taken for dead
            self._checkpoint("allocated")
            if not self._begin(user, turn, plan, query):
                raise Stuck(f"{user}/{turn} was taken by another writer")
        return turn

    def _begin(self, user: str, turn: str, plan: ClaimPlan, query: Query) -> bool:
        """Write `turn_started` into an empty turn folder; False if another writer has it."""
        path = self.vault.layout.turn_dir(user, turn) / EVENTS_FILE
        started = TurnStarted(
            query=query.text,
            source="inbox",
            occurred_at=query.now or self.pipeline.clock(),
            asked_at=query.now,
            inbox_file=plan.turn_key,
            backend=self.pipeline.backend.name,
        )
        try:
            new, moved = not path.exists(), 0
            if not new:
                log = read_log(path, root=self.root)
                if log.records:
                    return False
                moved = repair_torn_tail(path, root=self.root) if log.torn_tail is not None else 0
            with EventWriter(path, user=user, turn=turn, new=new, root=self.root) as writer:
                if writer.next_seq:  # decided again under the lock: another writer started it
                    return False
                writer.append(started)
                if moved:
                    writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))
        except (FileExistsError, LogBusyError):
            return False
        self._checkpoint("started")
        return True

    def _settle_index(self, user: str, turn: str | None) -> None:
        """Wait for the index commit behind the answer; a failure is logged (upkeep indexes it again)."""
        try:
            self.pipeline.finisher.settle()
        except Exception as exc:  # any failure of the commit is logged the same way
            self._log(f"{user}/{turn} answered, its index commit failed ({exc}); upkeep indexes it again")

    def _checkpoint(self, step: str) -> None:
        """A named point between two steps (tests make a process die here)."""


def _listed(folder: str | Path) -> list[os.DirEntry[str]]:
    """The entries of `folder`; none if it is gone (or no folder)."""
    try:
        return list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _mtime(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_mtime_ns
    except FileNotFoundError:
        return 0


_SHOWN = {
    "answered": ("user", "turn_id", "doc_id", "outcome", "answer", "query_file"),
    "rejected": ("rejected", "error_file", "reason", "message"),
}


_PLANNED = ("user", "answer", "query_file", "rejected", "error_file", "reason", "message")
"""The fields of a result that a claim's plan decides."""


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

    @classmethod
    def of(
        cls, plan: ClaimPlan, status: Literal["answered", "rejected"], recovered: bool, **more: Any
    ) -> InboxResult:
        """The result of a claim carried out as `plan` planned it."""
        planned = {name: getattr(plan, name) for name in _PLANNED}
        return cls(plan.source, status, recovered=recovered, **{**planned, **more})

    def as_json(self) -> dict[str, Any]:
        """The fields its status has (an answer's turn, a rejection's files, else why)."""
        values = {**asdict(self), "turn_id": self.turn, "doc_id": f"{self.user}/{self.turn}"}
        values["seconds"] = round(self.seconds, 4)
        shown = _SHOWN.get(self.status, ("reason", "message"))
        return {k: values[k] for k in ("source", "status", *shown, "recovered", "seconds")}

    def describe(self) -> str:
        """One log line."""
        again = " (resumed after a crash)" if self.recovered else ""
        if self.status == "answered":
            return (
                f"answered {self.source} → {self.answer} "
                f"[{self.outcome}] {self.user}/{self.turn} in {self.seconds:.2f} s{again}"
            )
        if self.status == "rejected":
            return f"rejected {self.source} → {self.rejected or self.error_file}: {self.message}{again}"
        return f"{self.status} {self.source}: {self.message}"


@dataclass
class InboxReport:
    results: list[InboxResult] = field(default_factory=list)

    def of(self, status: str) -> list[InboxResult]:
        return [r for r in self.results if r.status == status]

    def as_json(self) -> dict[str, Any]:
        shown = {s: [r.as_json() for r in self.of(s)] for s in ("answered", "rejected", "failed", "deferred")}
        return {**shown, "recovered": sum(1 for r in self.results if r.recovered)}


def _quote(text: str, limit: int = 2000) -> str:
    text = text if len(text) <= limit else text[:limit].rstrip() + " …"
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def render_answer(plan: ClaimPlan, result: TurnResult, query: str) -> str:
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
        "answered_at": utcnow(),
    }
    body = (
        f"# Answer to {Path(plan.source).name}\n\n"
        f"{_quote(query)}\n\n"
        f"{result.answer.strip()}\n\n"
        f"---\n"
        f"Outcome **{result.outcome}** · turn {link} · query {query_link}\n"
    )
    return render_document(front, body)


def render_error(plan: ClaimPlan) -> str:
    name = Path(plan.source).name
    front = {
        "rejected_file": plan.rejected,
        "source": plan.source,
        "reason": plan.reason,
        "claim": plan.claim,
        "rejected_at": utcnow(),
    }
    if not plan.keep:
        del front["rejected_file"]
    body = f"# `{name}` was not processed\n\n**Why:** {plan.message}.\n\n**What to do:** {plan.hint}\n\n" + (
        f"The file itself is kept, unchanged, as `{plan.rejected}`.\n"
        if plan.keep
        else "Nothing of it was read or kept: the inbox only removed its own name for it.\n"
    )
    return render_document(front, body)
