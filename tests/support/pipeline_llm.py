"""An OpenAI-compatible test server whose "model" is the offline rules.

The responder reads the task name from the system prompt and the task input from
the first user message, runs the offline rule for that task and answers with its
JSON — so a turn on the `openai` backend must produce the same turn folder as on
the offline backend, while every byte goes over real HTTP.  A request that carries
`tools` is answered the way OpenAI-compatible servers do: `message.tool_calls`, one
per call, arguments as a JSON string.
"""

from __future__ import annotations

import json
import re
from typing import Any, get_type_hints

from pandafs.llm.offline import RULES
from pandafs.tasks.prompts import TASKS

from .openai_stub import StubReply

__all__ = ["offline_responder", "task_of", "tool_call"]


def task_of(request: dict[str, Any]) -> str:
    system = next(m["content"] for m in request["messages"] if m["role"] == "system")
    match = re.search(r"TASK: (\w+)", system)
    assert match, system[:200]
    return match.group(1)


def tool_call(number: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One `tool_calls` entry exactly as chat-completions servers send it."""
    return {
        "id": f"call_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def offline_responder(request: dict[str, Any]) -> str | StubReply:
    task = TASKS[task_of(request)]
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    rule = RULES[task.name]
    result = rule(get_type_hints(rule)["data"].model_validate_json(user))
    if task.tool_calls:
        calls = [tool_call(i, r.tool, r.args) for i, r in enumerate(result.tool_requests, 1)]
        return StubReply(content="", tool_calls=calls)
    return result.model_dump_json()
