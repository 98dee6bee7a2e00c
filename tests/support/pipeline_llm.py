"""An OpenAI-compatible test server whose "model" is the offline rules.

The responder reads the task name from the system prompt and the task input from
the first user message, runs the offline rule for that task and answers with its
JSON — so a turn on the `openai` backend must produce the same turn folder as on
the offline backend, while every byte goes over real HTTP.
"""

from __future__ import annotations

import re
from typing import Any

from pandafs.llm.offline import RULES
from pandafs.pipeline.tasks import TASKS

__all__ = ["offline_responder", "task_of"]


def task_of(request: dict[str, Any]) -> str:
    system = next(m["content"] for m in request["messages"] if m["role"] == "system")
    match = re.search(r"TASK: (\w+)", system)
    assert match, system[:200]
    return match.group(1)


def offline_responder(request: dict[str, Any]) -> str:
    task = TASKS[task_of(request)]
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    result = RULES[task.name](task.input.model_validate_json(user))
    return result.model_dump_json()
