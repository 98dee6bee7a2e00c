"""The OpenAI-compatible backend: chat completions over httpx (vLLM, Ollama, llama.cpp
server differ only in `[llm] base_url`).  `OpenAIBackend` sends a task's prompt and input
as JSON and validates the JSON reply; a tool-calling task sends `tools` and reads the
reply's `tool_calls`.

Transient failures (connection, timeout, 429, 5xx) are retried with backoff.  Structured
output is asked for as `response_format` json_schema; a server that refuses a mode gets the
next (json_schema → json_object → none) from then on, said once on stderr.  The schema is
also in the system prompt, and an invalid reply is corrected once.  A request never carries
both `tools` and `response_format`.  httpx and pydantic errors are translated here only."""

from __future__ import annotations

import email.utils
import functools
import json
import logging
import os
import re
import time
from contextlib import suppress
from datetime import UTC
from importlib.metadata import version
from itertools import islice
from typing import Any, NamedTuple, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from events.clock import utcnow
from events.documents import shorten
from pandafs.config import LLMConfig, RoleConfig

from .errors import LLMError, LLMOutputError, LLMRejected, LLMTimeout, LLMUnavailable
from .usage import Usage

__all__ = ["OpenAIBackend", "inline_schema"]

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("pandafs.llm")
_LOWER = {"json_schema": "json_object", "json_object": "none"}


# --- reading a reply ---------------------------------------------------------------------

_MAX_JSON_STARTS = 200  # bounds the scan for an object in a long, brace-heavy reply
THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


class ToolCall(NamedTuple):
    """One `tool_calls` entry of a reply: the function name and its parsed arguments."""

    name: str
    args: dict[str, Any]


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
    return ToolCall(name=name, args=args)


def parse_reply(text: str, output: type[T]) -> T:
    """Validate the first JSON value found in a reply; ValueError says what was wrong."""
    try:
        return output.model_validate(_extract_json(text))
    except ValidationError as exc:
        raise ValueError(_describe(exc)) from exc


def _extract_json(text: str) -> object:
    """The reply as JSON, tolerating ``` fences and prose around one object (`complete` has
    taken off a leading <think> block)."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        with suppress(ValueError):
            return json.loads(candidate)
        for brace in islice(re.finditer("{", candidate), _MAX_JSON_STARTS):
            with suppress(ValueError):
                value, _ = decoder.raw_decode(candidate, brace.start())
                if isinstance(value, dict):
                    return value
    if not text.strip():
        raise ValueError("the reply was empty")
    raise ValueError("no JSON object found in the reply")


def _describe(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    parts = [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in errors[:5]]
    more = [f"and {len(errors) - 5} more"] if len(errors) > 5 else []
    return "; ".join(parts + more)


# --- what a server's error answer says ------------------------------------------------------

_MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is ignored in favour of our own backoff
_MAX_DETAIL_CHARS = 200
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar|structured", re.I)


def check_base_url(base_url: str) -> None:
    try:
        url = httpx.URL(base_url)
        valid = url.scheme in ("http", "https") and bool(url.host)
    except httpx.InvalidURL:
        valid = False
    if not valid:
        raise LLMError(
            f"[llm] base_url {base_url!r} is not an http(s) URL: set it in pandafs.toml, "
            "e.g. http://127.0.0.1:8000/v1"
        )


def refuses_format(status: int, detail: str) -> bool:
    """Does a refusal say the server cannot give the structured output asked for?  (Some
    answer 500 to a response_format they do not know.)"""
    return status in (400, 422, 500, 501) and bool(_FORMAT_WORDS.search(detail))


def hint_for(status: int, detail: str = "", structured: str = "") -> str:
    """What to change in pandafs.toml, from the status and the server's words (`structured`:
    the `[llm] structured_output` mode the request used)."""
    if (lower := _LOWER.get(structured)) and refuses_format(status, detail):
        return f'the server does not accept {structured} output: set [llm] structured_output = "{lower}"'
    if status in (401, 403):
        return "put the API key in the environment variable named by [llm] api_key_env"
    if status == 404:
        return "check [llm] base_url (it usually ends in /v1) and the model names in pandafs.toml"
    return "check [llm] model and [llm.roles] in pandafs.toml against what the server serves"


def server_message(response: httpx.Response) -> str:
    """The server's own words: OpenAI, vLLM and Ollama each nest them differently."""
    message: object = None
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            message = error.get("message")
        elif isinstance(error, str):
            message = error
        if message is None:
            message = body.get("message") or body.get("detail")
    return shorten(str(message or response.text or response.reason_phrase or "no message"), _MAX_DETAIL_CHARS)


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait, if it asked and the wait is short."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - utcnow()).total_seconds()
    return seconds if 0 <= seconds <= _MAX_RETRY_AFTER_S else None


# --- the client ------------------------------------------------------------------------------


@functools.cache
def schema_text(model: type[BaseModel]) -> str:
    """The model's JSON schema as the prompt quotes it (built once per model)."""
    return json.dumps(model.model_json_schema(), ensure_ascii=False)


@functools.cache
def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with `$defs` inlined, which local servers' grammar converters
    handle best; built once per model (callers must not change it)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def resolve(node: Any, depth: int = 0) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 8:
                target = dict(defs[ref.removeprefix("#/$defs/")])
                extra = {k: v for k, v in node.items() if k != "$ref"}
                return resolve({**target, **extra}, depth + 1)
            return {k: resolve(v, depth) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(v, depth) for v in node]
        return node

    return resolve(schema)


class OpenAIBackend:
    """The backend, and the chat-completions client of any OpenAI-compatible server."""

    name = "openai"
    sends_tools = True

    def __init__(self, config: LLMConfig, *, api_key: str | None = None) -> None:
        self._config = config
        self.base_url = config.base_url.rstrip("/")
        check_base_url(self.base_url)
        key = api_key if api_key is not None else os.environ.get(config.api_key_env)
        headers = {"User-Agent": f"pandafs/{version('pandafs')}"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers)
        self.structured_output: str = config.structured_output

    def close(self) -> None:
        self._client.close()

    def run(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        if task.tool_calls:
            return self._call_tools(task, data)
        return self.structured(task.role, task.prompt(), data.model_dump_json(), task.output)

    def _call_tools(self, task: Any, data: BaseModel) -> tuple[Any, Usage]:
        messages = [
            {"role": "system", "content": task.prompt()},
            {"role": "user", "content": data.model_dump_json()},
        ]
        tools = getattr(data, "tools", [])  # OpenAI function-calling schemas
        extra = {"tools": tools, "tool_choice": "auto"} if tools else {}
        text, calls, usage = self.complete(task.role, messages, extra)
        requests = [{"tool": c.name, "args": c.args, "reason": "called by the model"} for c in calls]
        return task.output.model_validate(
            {"tool_requests": requests, "reasoning": text[:500] or f"{len(calls)} tool call(s)"}
        ), usage

    def complete(
        self, role: str, messages: list[dict[str, Any]], extra: dict[str, Any] | None = None
    ) -> tuple[str, list[ToolCall], Usage]:
        """One completion for `role` with `extra` request fields (`tools`, `response_format`):
        the reply text, its tool calls and what it cost."""
        settings = self._role(role)
        payload: dict[str, Any] = {
            "model": settings.model or self._config.model,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": self._config.max_tokens,
            "stream": False,
            **(extra or {}),
        }
        data = self._post(payload)
        text, calls, reported = self._read_completion(data)
        text = THINK.sub("", text, count=1)
        prompt_chars = sum(len(m.get("content") or "") for m in messages)
        usage = Usage(
            tokens_in=_int_or(reported.get("prompt_tokens"), prompt_chars // 4),
            tokens_out=_int_or(reported.get("completion_tokens"), len(text) // 4),
            calls=1,
        )
        return text, calls, usage

    def response_format(self, output: type[BaseModel]) -> dict[str, Any]:
        """The request fields `[llm] structured_output` asks the server for."""
        mode = self.structured_output
        if mode == "json_schema":
            schema = {"name": output.__name__, "schema": inline_schema(output)}
            return {"response_format": {"type": "json_schema", "json_schema": schema}}
        if mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    def structured(self, role: str, system: str, user: str, output: type[T]) -> tuple[T, Usage]:
        """Ask for JSON matching `output`, validate it, and correct it once if needed."""
        schema = schema_text(output)
        messages = [
            {
                "role": "system",
                "content": (
                    f"{system}\n\nAnswer with one JSON object and nothing else "
                    f"(no prose, no code fences). It must match this JSON schema:\n{schema}"
                ),
            },
            {"role": "user", "content": user},
        ]
        usage = Usage()
        for _ in range(2):
            text, _, more = self._chat_structured(role, messages, output)
            usage += more
            try:
                return parse_reply(text, output), usage
            except ValueError as exc:
                problem = str(exc)
            correction = (
                f"Your reply was not valid: {problem}. Reply again with only the "
                "corrected JSON object matching the schema, no prose and no code fences."
            )
            messages += [{"role": "assistant", "content": text}, {"role": "user", "content": correction}]
        raise LLMOutputError(
            role=role,
            model=self._role(role).model or self._config.model,
            schema=output.__name__,
            raw=text,
            validation=problem,
            usage=usage,
        )

    def _chat_structured(
        self, role: str, messages: list[dict[str, Any]], output: type[BaseModel]
    ) -> tuple[str, list[ToolCall], Usage]:
        """`complete` with the structured-output mode in force, falling back to the next
        lower mode when the server refuses this one."""
        while True:
            mode = self.structured_output
            try:
                return self.complete(role, messages, self.response_format(output))
            except LLMRejected as exc:
                lower = _LOWER.get(mode)
                if lower is None or not refuses_format(exc.status, exc.detail):
                    raise
                log.warning(
                    f"the LLM server at {self.base_url} refused {mode} output (HTTP {exc.status}: "
                    f"{exc.detail}); using {lower} from now on (set [llm] structured_output = "
                    f'"{lower}" in pandafs.toml to skip this)'
                )
                self.structured_output = lower

    def _role(self, role: str) -> RoleConfig:
        try:
            return self._config.roles[role]
        except KeyError:
            known = ", ".join(sorted(self._config.roles)) or "none"
            raise LLMError(
                f"no settings for LLM role {role!r} (configured: {known}): "
                f"add [llm.roles.{role}] to pandafs.toml"
            ) from None

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}/chat/completions"
        attempts = max(1, self._config.max_retries + 1)
        error: LLMError = LLMError("no request was made")
        cause: BaseException | None = None
        delay = 0.0
        formatted = "response_format" in payload
        for attempt in range(attempts):
            tries = attempt + 1
            if attempt:
                time.sleep(delay)
            delay = self._config.backoff_s * 2**attempt
            try:
                response = self._client.post(url, json=payload)
            except httpx.TransportError as exc:
                cause = exc
                if isinstance(exc, httpx.ConnectTimeout):
                    error = LLMUnavailable(self.base_url, "connect timed out", attempts=tries)
                elif isinstance(exc, httpx.TimeoutException):
                    error = LLMTimeout(self.base_url, self._config.timeout_s, attempts=tries)
                else:
                    error = LLMUnavailable(self.base_url, str(exc) or type(exc).__name__, attempts=tries)
                continue
            status = response.status_code
            if status >= 500 and formatted and refuses_format(status, server_message(response)):
                status = 400  # not transient: the format asked for is refused, every time
            if status == 429 or status >= 500:
                error = LLMUnavailable(self.base_url, server_message(response), attempts=tries, status=status)
                cause = None
                if (asked := retry_after(response)) is not None:
                    delay = asked
                continue
            if response.is_error:
                detail = server_message(response)
                structured = self.structured_output if formatted else ""
                raise LLMRejected(
                    f"the LLM server at {self.base_url} rejected the request "
                    f"(HTTP {response.status_code}: {detail}): {hint_for(status, detail, structured)}",
                    status=status,
                    detail=detail,
                )
            try:
                data = response.json()
            except ValueError as exc:
                raise self._not_a_completion("the body is not JSON") from exc
            if not isinstance(data, dict):
                raise self._not_a_completion("the body is not a JSON object")
            return data
        raise error from cause

    def _read_completion(self, data: dict[str, Any]) -> tuple[str, list[ToolCall], dict[str, Any]]:
        try:
            message = data["choices"][0]["message"]
            content = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._not_a_completion("no choices[0].message.content") from exc
        if content is None:
            content = ""  # null when the model only "reasoned" or only called tools
        if not isinstance(content, str):
            raise self._not_a_completion("message content is not text")
        calls = [call for call in map(tool_call, message.get("tool_calls") or []) if call is not None]
        usage = data.get("usage")
        return content, calls, usage if isinstance(usage, dict) else {}

    def _not_a_completion(self, why: str) -> LLMError:
        return LLMError(
            f"the LLM server at {self.base_url} answered with something that is not a chat "
            f"completion ({why}): check that [llm] base_url points at an OpenAI-compatible "
            "/v1 endpoint"
        )


def _int_or(value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default
