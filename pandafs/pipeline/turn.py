"""The orchestrator: one query, one user → one turn folder, phase by phase.

The turn folder is the only state: `next_step(view)` names the next phase from the events
so far, so a new turn and one resumed after a crash run the same loop (fold, run the phase,
append its events with one fsync) until `turn_completed`.  A phase that raises becomes a
`phase_failed` event and Save ends the turn as FAIL with an intervention note.  A completed
turn is projected and indexed while its log's lock is held, so one killed before that is
known dead and re-projected (`recovery`); projections are not fsynced (the events are the
record; `verify --repair` re-projects what a power cut lost)."""

import time
from collections.abc import Callable
from contextlib import suppress
from datetime import datetime
from typing import Any, NamedTuple

from events.clock import aware, out_of_range, utcnow
from events.layout import turn_name, validate_user_id
from events.log import EventWriter, read_log, repair_torn_tail
from events.projection import TurnView, project_turn
from events.schema import Event, Payload, PhaseFailed, PhaseMetrics, TornTailRepaired, TurnStarted

from ..assembly import open_memory
from ..errors import BadInput, PandaError, first_line
from ..learning.api import INDEX_QUEUE
from ..llm.base import Backend, make_backend
from ..memory.api import Memory
from ..memory.turn_records import RecordCache
from ..research.reliability import ReliabilityTable
from ..turns import TurnRef
from ..vault import Vault
from . import analyzer, context_synthesis, executor, gatherer, planner, save, synthesis
from .context import RECORD_CACHE, TurnContext
from .finish import Finisher
from .recovery import recover_recent
from .tools import FORGET_AFTER

__all__ = ["Pipeline", "TurnResult"]

MAX_QUERY_CHARS = 20_000
QUERY_SHARE = 8
"""A turn's context.md holds its query several times (title, §0, summary) beside its answer
and §2: a query larger than this share of `[index] max_file_bytes` is refused before
the turn exists."""


class TurnResult(NamedTuple):
    user: str
    turn: str
    answer: str
    outcome: str
    context_path: str
    seconds: float
    phase_ms: dict[str, float]
    steps_ms: dict[str, float]
    """For benchmarks, the time outside the phases: `start` (allocation, recovery), `append`
    (event writes), `fold` (re-projecting), `project` (projected files), `index` (the index
    commit, or handing a new turn's batch over: the commit is `Finisher.behind_ms`)."""
    failure: str | None = None
    """Why a phase failed (an LLM out of reach, a crashing tool), if one did: the turn is
    recorded as FAIL and the command that ran it reports an error.  An honest "I don't
    know" that validation judged is an answer, not a failure."""

    @property
    def doc_id(self) -> str:
        return f"{self.user}/{self.turn}"

    def as_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "user": self.user,
            "turn_id": self.turn,
            "doc_id": self.doc_id,
            "context_path": self.context_path,
            "outcome": self.outcome,
            "failure": self.failure,
            "seconds": round(self.seconds, 4),
        }


Step = tuple[str, int]


def next_step(view: TurnView, max_attempts: int) -> Step | None:
    """The phase to run next (with its attempt number), or None when the turn is complete."""
    if view.completed is not None:
        return None
    if view.failures:
        return ("save", 0)
    if view.analysis is None:
        return ("analyze", 0)
    if view.reflection is None:
        return ("reflect", 0)
    if view.reflection.decision == "CLARIFY":
        return ("save", 0)
    if view.retrieval is None:
        return ("retrieve", 0)
    if view.context is None:
        return ("synthesize_context", 0)
    if not view.attempts:
        return ("plan", 0)
    attempt = view.attempts[-1]
    n = attempt.number
    if attempt.plan is not None and attempt.plan.route == "coordinator":
        if not any(step.action == "done" for step in attempt.steps):
            return ("execute", n)
    if attempt.response is None:
        return ("answer", n)
    if attempt.validation is None:
        return ("validate", n)
    decision = attempt.validation.decision
    if decision in ("RETRY", "REVISE") and n + 1 < max_attempts:
        return ("plan" if decision == "RETRY" else "answer", n + 1)
    return ("save", n)


Phase = Callable[[TurnContext, TurnView, int], list[Payload]]
STEPS: dict[str, tuple[str, Phase]] = {
    "analyze": ("query_analyzer", lambda ctx, view, _: analyzer.analyze(ctx, view)),
    "reflect": ("reflection", lambda ctx, view, _: analyzer.reflect(ctx, view)),
    "retrieve": ("context_gatherer", lambda ctx, view, _: gatherer.retrieve(ctx, view)),
    "synthesize_context": ("context_gatherer", lambda ctx, view, _: context_synthesis.synthesize(ctx, view)),
    "plan": ("planner", planner.run),
    "execute": ("executor", executor.run),
    "answer": ("synthesis", synthesis.answer),
    "validate": ("validation", synthesis.validate),
    "save": ("save", lambda ctx, view, _: save.run(ctx, view)),
}
"""Each step `next_step` names: the phase it belongs to, and what runs it (with the attempt)."""


def _with_metrics(payloads: list[Payload], metrics: PhaseMetrics) -> list[Payload]:
    for i, payload in enumerate(payloads):
        if "metrics" in type(payload).model_fields:
            payloads[i] = payload.model_copy(update={"metrics": metrics})
            break
    return payloads


class Pipeline:
    """Runs turns for one vault.  Holds services only; nothing about any turn."""

    def __init__(
        self,
        vault: Vault,
        *,
        backend: Backend | None = None,
        memory: Memory | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.vault = vault
        self.memory = memory or open_memory(vault)
        self.backend = backend or make_backend(vault.config.llm)
        self.clock = clock or (lambda: utcnow())
        self.reliability = ReliabilityTable(vault)
        self.extras = {
            "reliability": self.reliability.score,
            RECORD_CACHE: RecordCache(),  # past turns the tiers parsed, for the next turns
        }
        self.finisher = Finisher(vault, self.memory, self.reliability)

    def close(self) -> None:
        try:
            self.finisher.settle()
        finally:
            self.backend.close()

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.close()
            return
        with suppress(Exception):  # the error in flight is the one to tell (a failed commit's
            self.close()  # turn keeps its mark: the next ask indexes it)

    def ask(
        self,
        query: str,
        *,
        user: str,
        now: datetime | None = None,
    ) -> TurnResult:
        """Run one new turn for `user` and return its answer.  `now`: the time it is asked,
        which every phase reads as the present."""
        validate_user_id(user)
        if not query.strip():
            raise BadInput("the query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise BadInput(f"the query is {len(query):,} characters long (at most {MAX_QUERY_CHARS:,})")
        fits = self.vault.config.index.max_file_bytes // QUERY_SHARE
        if len(query.encode("utf-8")) > fits:  # a turn the index skips would be answered, then never found
            raise BadInput(
                f"the query is {len(query.encode('utf-8')):,} bytes: a turn's context.md must fit "
                f"[index] max_file_bytes, so a query may take at most 1/{QUERY_SHARE} of it ({fits:,} bytes)"
            )
        utcnow()  # a clock outside the range refuses the turn before its folder exists
        if now is not None:
            if (problem := out_of_range(now)) is not None:
                raise BadInput(f"now: {problem}")
            now = aware(now)
        begun = time.perf_counter()
        # turns an earlier process left open or unprojected, recovered before this one's
        # folder exists: a kill while recovering them leaves no new folder behind
        recover_recent(self, user, before=turn_name(self.vault.layout.newest_turn(user) + 1))
        with self.vault.new_turn(user) as turn:  # held until the turn ends: never taken for dead
            return self._drive(
                user,
                turn,
                started=begun,
                behind=True,
                start=TurnStarted(
                    query=query, occurred_at=now or self.clock(), asked_at=now, backend=self.backend.name
                ),
            )

    def resume(self, user: str, turn: str, *, behind: bool = False) -> TurnResult:
        """Finish a turn whose process died (or one the inbox started): repair a torn tail, then
        continue where it stopped.  `behind`: write its index batch behind the answer."""
        return self._drive(validate_user_id(user), turn, start=None, behind=behind)

    def _forget_after(self, ctx: TurnContext, view: TurnView) -> None:
        """The forgets the Planner confirmed, run after APPROVE once the turn's log is closed (the
        turn quotes what goes, so it is redacted too); one that cannot run now is left to the person."""
        requests = ctx.extras.get(FORGET_AFTER) or []
        if not requests or view.outcome != "APPROVE":
            return
        from ..forget import forget

        self.finisher.settle()  # the turn's indexing behind holds its log until it ends
        for query in requests:
            with suppress(PandaError):
                forget(self.vault, query, ctx.user, by=ctx.user)

    def _drive(
        self,
        user: str,
        turn: str,
        *,
        start: TurnStarted | None,
        behind: bool,
        started: float | None = None,
    ) -> TurnResult:
        entered = time.perf_counter()
        started = started or entered
        steps = {"start": entered - started, "append": 0.0, "fold": 0.0, "project": 0.0, "index": 0.0}
        ref = TurnRef(user, turn, self.vault.layout.turns_dir(user))
        path = ref.events_path
        moved = 0
        if start is None and read_log(path, root=self.vault.root).torn_tail is not None:
            moved = repair_torn_tail(path, root=self.vault.root)
        extras = {**self.extras, INDEX_QUEUE: []}
        ctx = TurnContext(self.vault, self.memory, self.backend, user, turn, self.clock, extras=extras)
        max_attempts = self.vault.config.pipeline.max_revisions + 1
        with EventWriter(path, user=user, turn=turn, new=start is not None, root=self.vault.root) as writer:
            events: list[Event] = writer.history()  # read under the lock as it opened (none if new)
            if start is not None:
                events.append(writer.append(start))
            elif not events:
                raise BadInput(f"{user}/{turn} has no turn_started event; it cannot be resumed")
            if moved:
                events.append(
                    writer.append(TornTailRepaired(bytes_moved=moved, moved_to="events.jsonl.torn"))
                )
            view = project_turn(events)
            if (asked := view.started.asked_at) is not None:
                ctx.clock = lambda: asked
            save_failures = 0
            while (step := next_step(view, max_attempts)) is not None:
                name, attempt = step
                ctx.extras["analysis"] = view.analysis
                begun = time.perf_counter()
                try:
                    payloads = STEPS[name][1](ctx, view, attempt)
                except Exception as exc:  # every failure is recorded, then Save ends the turn
                    if name == "save":
                        save_failures += 1
                        if save_failures > 1:
                            raise
                    phase, kind = STEPS[name][0], type(exc).__name__
                    payloads = [
                        PhaseFailed(phase=phase, error_type=kind, message=first_line(exc), attempt=attempt)
                    ]
                usage, unread = ctx.take()
                payloads = [*unread, *payloads]  # what a read cost, said before
                metrics = PhaseMetrics(
                    duration_ms=round((time.perf_counter() - begun) * 1000.0, 3),
                    llm_calls=usage.calls,
                    tokens_in=usage.tokens_in,
                    tokens_out=usage.tokens_out,
                    tool_calls=sum(1 for p in payloads if p.TYPE == "tool_executed"),
                )
                appended = time.perf_counter()
                events += writer.append_many(_with_metrics(payloads, metrics))
                folded = time.perf_counter()
                view = project_turn(events)
                steps["append"] += folded - appended
                steps["fold"] += time.perf_counter() - folded
            # projected while the log is still held: a complete turn that nobody holds and
            # whose projections are missing is certainly dead (recovery re-projects it)
            queued = list(ctx.extras.get(INDEX_QUEUE, []))
            self.finisher.finish(ref, view, queued, steps, writer if behind else None)
        self._forget_after(ctx, view)
        return TurnResult(
            user=user,
            turn=turn,
            answer=view.answer or "",
            outcome=view.outcome or "INCOMPLETE",
            context_path=self.vault.rel(ref.path / "context.md"),
            seconds=time.perf_counter() - started,
            phase_ms=dict(view.phase_ms),
            steps_ms={k: round(v * 1000.0, 3) for k, v in steps.items()},
            failure=save.outcome_of(view, max_attempts)[1] if view.failures else None,
        )
