"""Reading a model's reply: the one JSON object it holds (``` fences, <think> blocks and
prose around it tolerated), and the tool calls it makes.  A validation error becomes one
short sentence, the text the correction prompt shows the model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["THINK", "ToolCall", "parse_reply", "tool_call"]

T = TypeVar("T", bound=BaseModel)

_MAX_JSON_STARTS = 200  # bounds the scan for an object in a long, brace-heavy reply
THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One `tool_calls` entry of a reply: the function name and its parsed arguments."""

    name: str
    args: dict[str, Any]
    call_id: str = ""


def tool_call(raw: object) -> ToolCall | None:
    """One `tool_calls` entry; arguments arrive as a JSON string (OpenAI, vLLM, llama.cpp)
    or an object (some Ollama versions).  An unreadable entry is dropped, not fatal."""
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        return None
    function = raw["function"]
    name, args = function.get("name"), function.get("arguments") or {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            return None
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    return ToolCall(name=name, args=args, call_id=str(raw.get("id") or ""))


def parse_reply(text: str, output: type[T]) -> T:
    """Validate the first JSON value found in a reply; ValueError says what was wrong."""
    value = _extract_json(text)
    try:
        return output.model_validate(value)
    except ValidationError as exc:
        raise ValueError(_describe(exc)) from exc


def _extract_json(text: str) -> object:
    """The reply as JSON, tolerating ``` fences, a <think> block and prose around one object."""
    text = THINK.sub("", text, count=1)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        start = candidate.find("{")
        for _ in range(_MAX_JSON_STARTS):
            if start == -1:
                break
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                pass
            else:
                if isinstance(value, dict):
                    return value
            start = candidate.find("{", start + 1)
    if not text.strip():
        raise ValueError("the reply was empty")
    raise ValueError("no JSON object found in the reply")


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = []
    for error in errors[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        parts.append(f"{where}: {error['msg']}")
    if len(errors) > 5:
        parts.append(f"and {len(errors) - 5} more")
    return "; ".join(parts)
