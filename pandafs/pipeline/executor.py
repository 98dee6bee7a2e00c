"""Phases 4-5: the Executor runs the plan loop; the Coordinator executes each tool.

The backend picks the tools to call (`call_tools`); when it calls none the plan's
requests stand.  Names and arguments are put in their registered spelling before they
run.  The loop is bounded by `executor_max_steps`; each decision is an `executor_stepped`
event, each call a `tool_executed` event.  A tool that raises fails the phase; one
unavailable or given bad arguments is reported and the plan goes on."""

from __future__ import annotations

import time

from events.projection import TurnView
from events.schema import ExecutorStepped, MemoryStaged, Payload, PhaseFailed, ToolExecuted

from ..tasks.schemas import ToolCallsIn, ToolCallsOut
from .context import TurnContext, context_text
from .planner import is_transient
from .tools import ToolOutcome, canonical_request, run_tool, tool_schemas

__all__ = ["run"]


def run(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    plan = view.attempts[-1].plan if view.attempts else None
    assert plan is not None
    done = {s.step for s in view.attempts[-1].steps}
    events: list[Payload] = []
    limit = ctx.config.pipeline.executor_max_steps
    context = view.context
    chosen: ToolCallsOut = ctx.think(
        "call_tools",
        ToolCallsIn(
            query=view.query,
            resolved_query=view.analysis.resolved_query if view.analysis else view.query,
            todos=[t.text for t in plan.todos],
            planned=plan.tool_requests,
            context_text=context_text(context.blocks if context else [])[:4000],
            tools=tool_schemas("planner", ctx) if ctx.backend.sends_tools else [],
        ),
    )
    wanted = chosen.tool_requests or plan.tool_requests
    requests = [
        r.model_copy(update=dict(zip(("tool", "args"), canonical_request(r.tool, r.args), strict=True)))
        for r in wanted[:limit]
    ]
    for step, request in enumerate(requests, 1):
        if step in done:
            continue
        events.append(
            ExecutorStepped(
                attempt=attempt, step=step, action="call_tool", request=request, reasoning=request.reason
            )
        )
        started = time.perf_counter()
        crash: Exception | None = None
        try:
            outcome = run_tool(ctx, request.tool, request.args)
        except Exception as exc:  # a tool that crashes ends the turn, recorded
            crash = exc
            outcome = ToolOutcome(False, "", error=f"{type(exc).__name__}: {exc}")
        events.append(
            ToolExecuted(
                attempt=attempt,
                tool=request.tool,
                args=request.args,
                ok=outcome.ok,
                summary=outcome.summary,
                result=outcome.result,
                error=outcome.error,
                duration_ms=round((time.perf_counter() - started) * 1000.0, 3),
            )
        )
        if crash is not None:
            kind, message = type(crash).__name__, f"{request.tool} failed: {crash}"
            events.append(PhaseFailed(phase="coordinator", error_type=kind, message=message, attempt=attempt))
            return events
        events.extend(outcome.events)
        if outcome.staged is not None and not is_transient(outcome.staged.content):
            staged = outcome.staged.model_copy(update={"candidate_id": f"a{attempt}-t{step}"})
            events.append(MemoryStaged(candidate=staged))
    skipped = len(wanted) - len(requests)
    note = f"; {skipped} request(s) over the step limit skipped" if skipped else ""
    done_step = len(requests) + 1
    reasoning = f"{len(requests)} tool call(s){note}"
    events.append(ExecutorStepped(attempt=attempt, step=done_step, action="done", reasoning=reasoning))
    return events
