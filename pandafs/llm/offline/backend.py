"""The offline backend: each task answered by its rule, the result validated against the task's output."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from ...tokens import count_tokens
from ..usage import Usage
from .answering import answer, validate
from .gather import plan_retrieval, synthesize_context
from .planning import call_tools, plan
from .summary import summarize_turn
from .understand import analyze_query, reflect

RULES: dict[str, Callable[[Any], BaseModel]] = {
    "call_tools": call_tools,
    "analyze_query": analyze_query,
    "reflect": reflect,
    "plan_retrieval": plan_retrieval,
    "synthesize_context": synthesize_context,
    "plan": plan,
    "answer": answer,
    "validate": validate,
    "summarize_turn": summarize_turn,
}


@lru_cache(maxsize=64)
def _prompt_tokens(prompt: str) -> int:
    """A task's instructions are the same on every call: counted once."""
    return count_tokens(prompt)


class OfflineBackend:
    """Deterministic rules; `run` validates the result against the task's output model.  Its
    usage counts the tokens a model would have been sent and returned, so runs compare."""

    name = "offline"

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        result = task.output.model_validate(RULES[task.name](data).model_dump())
        sent = _prompt_tokens(task.prompt()) + count_tokens(data.model_dump_json())
        return result, Usage(tokens_in=sent, tokens_out=count_tokens(result.model_dump_json()), calls=1)

    def close(self) -> None:
        return None
