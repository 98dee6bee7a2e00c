"""What an OpenAI-compatible server's HTTP answer says when it is not a completion: its
error message, a hint at the setting to fix, the wait a 429 / 503 asks for."""

from __future__ import annotations

import email.utils
import re
from datetime import UTC

import httpx

from events.clock import utcnow

from .errors import LLMError

__all__ = ["check_base_url", "hint_for", "refuses_format", "retry_after", "server_message"]

_MAX_RETRY_AFTER_S = 30.0  # a longer Retry-After is ignored in favour of our own backoff
_MAX_DETAIL_CHARS = 200
_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|schema|grammar|structured", re.I)


def check_base_url(base_url: str) -> None:
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


def refuses_format(status: int, detail: str) -> bool:
    """Does a refusal say the server cannot give the structured output asked for?  (Some
    answer 500 to a response_format they do not know.)"""
    return status in (400, 422, 500, 501) and bool(_FORMAT_WORDS.search(detail))


def hint_for(status: int, detail: str = "", structured: str = "") -> str:
    """What to change in pandafs.toml, from the status and the server's words (`structured`:
    the `[llm] structured_output` mode the request used)."""
    if structured and refuses_format(status, detail):
        lower = "json_object" if structured == "json_schema" else "none"
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
    if not message:
        message = response.text or response.reason_phrase or "no message"
    text = " ".join(str(message).split())
    if len(text) > _MAX_DETAIL_CHARS:
        text = text[: _MAX_DETAIL_CHARS - 1] + "…"
    return text


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
    if not 0 <= seconds <= _MAX_RETRY_AFTER_S:
        return None
    return seconds
