"""The one small Protocol every LLM backend implements: `Backend.run(task, input)`
returns the task's output model and the tokens spent; `make_backend` picks one by
`[llm] backend`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pydantic import BaseModel

from ..config import LLMConfig
from .usage import Usage

if TYPE_CHECKING:  # httpx: imported only by a backend that talks to a server
    from .openai_compat import OpenAIChat

__all__ = ["Backend", "OpenAIBackend", "make_backend"]

O = TypeVar("O", bound=BaseModel)  # noqa: E741


class Backend(Protocol):
    name: str

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]: ...

    def close(self) -> None: ...


class OpenAIBackend:
    """Sends the task's prompt and input as JSON and validates the JSON reply; a tool-calling
    task sends `tools` and reads the reply's `tool_calls`."""

    name = "openai"

    def __init__(self, config: LLMConfig, *, chat: OpenAIChat | None = None) -> None:
        if chat is None:
            from .openai_compat import OpenAIChat

            chat = OpenAIChat(config)
        self.chat = chat

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        if task.tool_calls:
            return self._call_tools(task, data)
        return self.chat.structured(task.role, task.prompt(), data.model_dump_json(), task.output)

    def _call_tools(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        messages = [
            {"role": "system", "content": task.prompt()},
            {"role": "user", "content": data.model_dump_json()},
        ]
        calls, text, usage = self.chat.tool_calls(task.role, messages, getattr(data, "tools", []))
        requests = [{"tool": c.name, "args": c.args, "reason": "called by the model"} for c in calls]
        return task.output.model_validate(
            {"tool_requests": requests, "reasoning": text[:500] or f"{len(calls)} tool call(s)"}
        ), usage

    def close(self) -> None:
        self.chat.close()


def make_backend(config: LLMConfig) -> Backend:
    if config.backend == "openai":
        return OpenAIBackend(config)
    from .offline import OfflineBackend

    return OfflineBackend()
