"""Phases 4-5 — Executor runs the plan loop; the Coordinator executes each tool.

The loop is bounded by `[pipeline] executor_max_steps`.  Every decision is an
`executor_stepped` event and every tool call a `tool_executed` event.  A tool that
raises is a phase failure (the turn ends with a clear FAIL); a tool that is merely
unavailable or given bad arguments is reported in its event and the plan goes on.
"""

from __future__ import annotations

import time

from events import Payload, TurnView
from events.schema import ExecutorStepped, MemoryStaged, PhaseFailed, ToolExecuted

from .context import TurnContext, elapsed_ms
from .planner import is_transient
from .tools import run_tool

__all__ = ["run"]


def run(ctx: TurnContext, view: TurnView, attempt: int) -> list[Payload]:
    plan = view.attempts[-1].plan if view.attempts else None
    assert plan is not None
    done = {s.step for s in view.attempts[-1].steps}
    events: list[Payload] = []
    limit = ctx.config.pipeline.executor_max_steps
    requests = plan.tool_requests[:limit]
    for step, request in enumerate(requests, 1):
        if step in done:
            continue
        events.append(
            ExecutorStepped(
                attempt=attempt,
                step=step,
                action="call_tool",
                request=request,
                reasoning=request.reason,
            )
        )
        started = time.perf_counter()
        try:
            outcome = run_tool(ctx, request.tool, request.args)
        except Exception as exc:  # a tool that crashes ends the turn, recorded
            events.append(
                ToolExecuted(
                    attempt=attempt,
                    tool=request.tool,
                    args=request.args,
                    ok=False,
                    error=f"{type(exc).__name__}: {exc}",
                    duration_ms=elapsed_ms(started),
                )
            )
            events.append(
                PhaseFailed(
                    phase="coordinator",
                    error_type=type(exc).__name__,
                    message=f"{request.tool} failed: {exc}",
                    attempt=attempt,
                )
            )
            return events
        events.append(
            ToolExecuted(
                attempt=attempt,
                tool=request.tool,
                args=request.args,
                ok=outcome.ok,
                summary=outcome.summary,
                result=outcome.result,
                error=outcome.error,
                duration_ms=elapsed_ms(started),
            )
        )
        events.extend(outcome.events)
        if outcome.staged is not None and not is_transient(outcome.staged.content):
            events.append(
                MemoryStaged(
                    candidate=outcome.staged.model_copy(update={"candidate_id": f"a{attempt}-t{step}"})
                )
            )
    skipped = len(plan.tool_requests) - len(requests)
    note = f"; {skipped} request(s) over the step limit skipped" if skipped else ""
    events.append(
        ExecutorStepped(
            attempt=attempt,
            step=len(requests) + 1,
            action="done",
            reasoning=f"{len(requests)} tool call(s){note}",
        )
    )
    return events
