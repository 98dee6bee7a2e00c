"""The OpenAI-compatible backend: chat completions over httpx (vLLM, Ollama, llama.cpp
server differ only in `[llm] base_url`).

Transient failures (connection, timeout, 429, 5xx) are retried with backoff.  Structured
output is asked for as `response_format` json_schema; a server that refuses the mode is
asked again with the next one (json_schema → json_object → none), kept from then on and
said once on stderr.  The schema is also in the system prompt, and an invalid reply is
corrected once by telling the model what was wrong.  A request never carries both `tools`
and `response_format`.  httpx and pydantic errors are translated here, and only here."""

from __future__ import annotations

import functools
import json
import logging
import os
import time
from importlib.metadata import version
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from pandafs.config import LLMConfig, RoleConfig

from .errors import LLMError, LLMOutputError, LLMRejected, LLMTimeout, LLMUnavailable
from .replies import THINK, ToolCall, parse_reply, tool_call
from .server import check_base_url, hint_for, refuses_format, retry_after, server_message
from .usage import Usage

__all__ = ["OpenAIChat", "inline_schema"]

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("pandafs.llm")
_LOWER = {"json_schema": "json_object", "json_object": "none"}


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
        check_base_url(self.base_url)
        key = api_key if api_key is not None else os.environ.get(config.api_key_env)
        headers = {"User-Agent": f"pandafs/{version('pandafs')}"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(timeout=config.timeout_s, headers=headers, transport=transport)
        self.structured_output: str = config.structured_output
        self.fallbacks: list[str] = []

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
        response_format: dict[str, Any] | None = None,
    ) -> tuple[str, Usage]:
        """One completion for `role`; returns the reply text and what it cost."""
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
            "max_tokens": self._config.max_tokens,
            "stream": False,
            **extra,
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

    def response_format(self, output: type[BaseModel]) -> dict[str, Any] | None:
        """What `[llm] structured_output` asks the server for."""
        mode = self.structured_output
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
        text, usage = self._chat_structured(role, messages, output)
        try:
            return parse_reply(text, output), usage
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
        text, more = self._chat_structured(role, messages, output)
        usage += more
        try:
            return parse_reply(text, output), usage
        except ValueError as exc:
            raise LLMOutputError(
                role=role,
                model=self.model_for(role),
                schema=output.__name__,
                raw=text,
                validation=str(exc),
                usage=usage,
            ) from exc

    def _chat_structured(
        self, role: str, messages: list[dict[str, Any]], output: type[BaseModel]
    ) -> tuple[str, Usage]:
        """`chat` with the structured-output mode in force, falling back to the next lower
        mode when the server refuses this one."""
        while True:
            mode = self.structured_output
            try:
                return self.chat(role, messages, response_format=self.response_format(output))
            except LLMRejected as exc:
                lower = _LOWER.get(mode)
                if lower is None or not refuses_format(exc.status, exc.detail):
                    raise
                note = (
                    f"the LLM server at {self.base_url} refused {mode} output (HTTP {exc.status}: "
                    f"{exc.detail}); using {lower} from now on (set [llm] structured_output = "
                    f'"{lower}" in pandafs.toml to skip this)'
                )
                log.warning("%s", note)
                self.fallbacks.append(note)
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
            if (
                status >= 500
                and "response_format" in payload
                and refuses_format(status, server_message(response))
            ):
                status = 400  # not transient: the format asked for is refused, every time
            if status == 429 or status >= 500:
                error = LLMUnavailable(
                    self.base_url, server_message(response), attempts=attempt + 1, status=status
                )
                cause = None
                asked = retry_after(response)
                if asked is not None:
                    delay = asked
                continue
            if response.is_error:
                detail = server_message(response)
                structured = self.structured_output if "response_format" in payload else ""
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
