"""The one small Protocol every LLM backend implements: `Backend.run(task, input)`
returns the task's output model and the tokens spent; `make_backend` picks one by
`[llm] backend`."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from ..config import LLMConfig
from .usage import Usage

__all__ = ["Backend", "make_backend"]


class Backend(Protocol):
    name: str
    sends_tools: bool  # `call_tools` sends the tools' schemas to a model

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]: ...

    def close(self) -> None: ...


def make_backend(config: LLMConfig) -> Backend:
    if config.backend == "openai":  # httpx: imported only by a backend that talks to a server
        from .openai_compat import OpenAIBackend

        return OpenAIBackend(config)
    from .offline import OfflineBackend

    return OfflineBackend()
