"""The OpenAI-compatible backend: chat completions over httpx.

One client serves every OpenAI-compatible server (vLLM, Ollama, llama.cpp
server); they differ only in `[llm] base_url`.  Transient failures (connection
errors, timeouts, 429, 5xx) are retried with exponential backoff; anything else
fails at once.

Structured output is asked for the way local servers constrain decoding:
`response_format = {"type": "json_schema", "json_schema": {"name", "schema"}}`
(vLLM, Ollama ≥ 0.5 and llama.cpp server accept it; `[llm] structured_output =
"json_object"` falls back to JSON mode for older servers, "none" to the prompt
alone).  The schema is also stated in the system prompt, the reply is validated,
and corrected once by telling the model what was wrong, because small local models
often get it right on the second try.  Tool calls use the request's `tools` (OpenAI
function-calling format) and read `choices[0].message.tool_calls`; a request never
carries both `tools` and `response_format` (llama.cpp and vLLM cannot constrain
one reply to both).

httpx and pydantic errors are translated here, and only here, into the errors of
`pandafs.llm.errors`.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from events.clock import utcnow
from pandafs import __version__
from pandafs.config import LLMConfig, RoleConfig

from .errors import LLMError, LLMOutputError, LLMTimeout, LLMUnavailable

__all__ = ["OpenAIChat", "ToolCall", "Usage", "inline_schema"]

T = TypeVar("T", bound=BaseModel)

_MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is ignored in favour of our own backoff
_MAX_DETAIL_CHARS = 200
_MAX_JSON_STARTS = 200  # bounds the scan for an object in a long, brace-heavy reply
_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Usage:
    """Tokens spent; `calls` counts completions that returned an answer."""

    tokens_in: int = 0
    tokens_out: int = 0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.tokens_in + other.tokens_in,
            self.tokens_out + other.tokens_out,
            self.calls + other.calls,
        )


@dataclass(frozen=True)
class ToolCall:
    """One `tool_calls` entry of a reply: the function name and its parsed arguments."""

    name: str
    args: dict[str, Any]
    call_id: str = ""


def inline_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with `$defs` inlined: grammar converters of local servers
    (llama.cpp's json-schema-to-grammar, Ollama's) handle plain nested objects best."""
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


class OpenAIChat:
    """Chat-completions client for any OpenAI-compatible server (vLLM, Ollama, llama.cpp server)."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._config = config
        self.base_url = config.base_url.rstrip("/")
        _check_base_url(self.base_url)
        key = api_key if api_key is not None else os.environ.get(config.api_key_env)
        headers = {"User-Agent": f"pandafs/{__version__}"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers, transport=transport)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIChat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def model_for(self, role: str) -> str:
        return self._role(role).model or self._config.model

    def chat(
        self,
        role: str,
        messages: list[dict[str, Any]],
        *,
        json_mode: bool = False,
        response_format: dict[str, Any] | None = None,
    ) -> tuple[str, Usage]:
        """One completion for `role`; returns the reply text and what it cost."""
        if json_mode and response_format is None:
            response_format = {"type": "json_object"}
        extra = {"response_format": response_format} if response_format else {}
        text, _, usage = self._complete(role, messages, extra)
        return text, usage

    def tool_calls(
        self, role: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> tuple[list[ToolCall], str, Usage]:
        """One completion that may call `tools` (OpenAI function-calling schemas)."""
        extra = {"tools": tools, "tool_choice": "auto"} if tools else {}
        text, calls, usage = self._complete(role, messages, extra)
        return calls, text, usage

    def _complete(
        self, role: str, messages: list[dict[str, Any]], extra: dict[str, Any]
    ) -> tuple[str, list[ToolCall], Usage]:
        settings = self._role(role)
        payload: dict[str, Any] = {
            "model": settings.model or self._config.model,
            "messages": messages,
            "temperature": settings.temperature,
            "stream": False,
            **extra,
        }
        data = self._post(payload)
        text, calls, reported = self._read_completion(data)
        text = _THINK.sub("", text, count=1)
        prompt_chars = sum(len(m.get("content") or "") for m in messages)
        usage = Usage(
            tokens_in=_int_or(reported.get("prompt_tokens"), prompt_chars // 4),
            tokens_out=_int_or(reported.get("completion_tokens"), len(text) // 4),
            calls=1,
        )
        return text, calls, usage

    def response_format(self, output: type[BaseModel]) -> dict[str, Any] | None:
        """What `[llm] structured_output` asks the server for."""
        mode = self._config.structured_output
        if mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": output.__name__, "schema": inline_schema(output)},
            }
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def structured(self, role: str, system: str, user: str, output: type[T]) -> tuple[T, Usage]:
        """Ask for JSON matching `output`, validate it, and correct it once if needed."""
        schema = json.dumps(output.model_json_schema(), ensure_ascii=False)
        response_format = self.response_format(output)
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
        text, usage = self.chat(role, messages, response_format=response_format)
        try:
            return _parse_reply(text, output), usage
        except ValueError as exc:
            problem = str(exc)
        messages += [
            {"role": "assistant", "content": text},
            {
                "role": "user",
                "content": (
                    f"Your reply was not valid: {problem}. Reply again with only the "
                    "corrected JSON object matching the schema, no prose and no code fences."
                ),
            },
        ]
        text, more = self.chat(role, messages, response_format=response_format)
        usage += more
        try:
            return _parse_reply(text, output), usage
        except ValueError as exc:
            raise LLMOutputError(
                role=role,
                model=self.model_for(role),
                schema=output.__name__,
                raw=text,
                validation=str(exc),
                usage=usage,
            ) from exc

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
        for attempt in range(attempts):
            if attempt:
                time.sleep(delay)
            delay = self._config.backoff_s * 2**attempt
            try:
                response = self._client.post(url, json=payload)
            except httpx.ConnectTimeout as exc:
                error = LLMUnavailable(self.base_url, "connect timed out", attempts=attempt + 1)
                cause = exc
                continue
            except httpx.TimeoutException as exc:
                error = LLMTimeout(self.base_url, self._config.timeout_s, attempts=attempt + 1)
                cause = exc
                continue
            except httpx.TransportError as exc:
                reason = str(exc) or type(exc).__name__
                error = LLMUnavailable(self.base_url, reason, attempts=attempt + 1)
                cause = exc
                continue
            status = response.status_code
            if status == 429 or status >= 500:
                error = LLMUnavailable(
                    self.base_url, _server_message(response), attempts=attempt + 1, status=status
                )
                cause = None
                asked = _retry_after(response)
                if asked is not None:
                    delay = asked
                continue
            if response.is_error:
                raise LLMError(
                    f"the LLM server at {self.base_url} rejected the request "
                    f"(HTTP {status}: {_server_message(response)}): {_hint_for(status)}"
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
        calls = [call for call in map(_tool_call, message.get("tool_calls") or []) if call is not None]
        usage = data.get("usage")
        return content, calls, usage if isinstance(usage, dict) else {}

    def _not_a_completion(self, why: str) -> LLMError:
        return LLMError(
            f"the LLM server at {self.base_url} answered with something that is not a chat "
            f"completion ({why}): check that [llm] base_url points at an OpenAI-compatible "
            "/v1 endpoint"
        )


def _tool_call(raw: object) -> ToolCall | None:
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


def _check_base_url(base_url: str) -> None:
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as exc:
        raise LLMError(_bad_base_url(base_url)) from exc
    if url.scheme not in ("http", "https") or not url.host:
        raise LLMError(_bad_base_url(base_url))


def _bad_base_url(base_url: str) -> str:
    return (
        f"[llm] base_url {base_url!r} is not an http(s) URL: set it in pandafs.toml, "
        "e.g. http://127.0.0.1:8000/v1"
    )


def _hint_for(status: int) -> str:
    if status in (401, 403):
        return "put the API key in the environment variable named by [llm] api_key_env"
    if status == 404:
        return "check [llm] base_url (it usually ends in /v1) and the model names in pandafs.toml"
    return "check [llm] model and [llm.roles] in pandafs.toml against what the server serves"


def _server_message(response: httpx.Response) -> str:
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
    if not message:
        message = response.text or response.reason_phrase or "no message"
    text = " ".join(str(message).split())
    if len(text) > _MAX_DETAIL_CHARS:
        text = text[: _MAX_DETAIL_CHARS - 1] + "…"
    return text


def _retry_after(response: httpx.Response) -> float | None:
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
    if not 0 <= seconds <= _MAX_RETRY_AFTER_S:
        return None
    return seconds


def _int_or(value: object, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _parse_reply(text: str, output: type[T]) -> T:
    """Validate the first JSON value found in a reply; ValueError says what was wrong."""
    value = _extract_json(text)
    try:
        return output.model_validate(value)
    except ValidationError as exc:
        raise ValueError(_describe(exc)) from exc


def _extract_json(text: str) -> object:
    """The reply as JSON, tolerating ``` fences, a <think> block and prose around one object."""
    text = _THINK.sub("", text, count=1)
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
