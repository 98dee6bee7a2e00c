"""A real OpenAI-compatible HTTP server for tests, on 127.0.0.1 in a thread.

    with OpenAIStub(lambda request: "hello") as stub:
        config = LLMConfig(backend="openai", base_url=stub.base_url)
        ...
        assert stub.requests[0]["model"] == "qwen3"

Replies come first from the `script()` queue (FIFO), then from the responder; a
plain string is a 200 chat completion with that content.  Without a responder the
stub echoes the last user message.  A `StubReply` can also fail (`status`), stall
(`delay_s`, cut short by `stop()`), add headers, or send a raw `body`.  Clients
that hang up mid-reply are ignored quietly.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .loopback import LoopbackServer, QuietHandler

__all__ = ["OpenAIStub", "StubReply"]

STUB_MODEL = "stub-model"


@dataclass(frozen=True)
class StubReply:
    status: int = 200
    content: str | None = None
    delay_s: float = 0.0
    headers: dict[str, str] | None = None
    body: bytes | None = None
    tool_calls: list[dict[str, Any]] | None = None  # OpenAI shape: {id, type, function{name, arguments}}


Responder = Callable[[dict[str, Any]], StubReply | str]


def _echo(request: dict[str, Any]) -> str:
    users = [m.get("content", "") for m in request.get("messages", []) if m.get("role") == "user"]
    return users[-1] if users else ""


class OpenAIStub(LoopbackServer):
    def __init__(self, responder: Responder | None = None) -> None:
        super().__init__()
        self.responder: Responder = responder or _echo
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.errors: list[BaseException] = []  # exceptions raised by the responder
        self._script: deque[StubReply | str] = deque()
        self._lock = threading.Lock()
        self._count = 0

    @property
    def base_url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/v1"

    def script(self, *replies: StubReply | str) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self, request: dict[str, Any]) -> StubReply:
        with self._lock:
            self.requests.append(request)
            scripted = self._script.popleft() if self._script else None
        if scripted is None:
            try:
                scripted = self.responder(request)
            except Exception as exc:  # a test bug: record it and fail the request loudly
                with self._lock:
                    self.errors.append(exc)
                return StubReply(status=500, content=f"stub responder raised {exc!r}")
        return StubReply(content=scripted) if isinstance(scripted, str) else scripted

    def _completion(
        self, request: dict[str, Any], content: str, tool_calls: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        with self._lock:
            self._count += 1
            number = self._count
        prompt_chars = sum(len(m.get("content") or "") for m in request.get("messages", []))
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = max(1, len(content) // 4)
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if tool_calls:  # as OpenAI sends them: content null, finish_reason "tool_calls"
            message = {"role": "assistant", "content": content or None, "tool_calls": tool_calls}
        return {
            "id": f"chatcmpl-stub-{number}",
            "object": "chat.completion",
            "created": 1_700_000_000 + number,
            "model": request.get("model") or STUB_MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


class _Handler(QuietHandler):
    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            models = {
                "object": "list",
                "data": [{"id": STUB_MODEL, "object": "model", "created": 0, "owned_by": "stub"}],
            }
            self._send(200, json.dumps(models).encode())
        else:
            self._send_error(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"no route POST {self.path}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length))
        except ValueError as exc:
            self._send_error(400, f"request body is not JSON: {exc}")
            return
        stub = self.server.owner
        with stub._lock:
            stub.request_headers.append({k.lower(): v for k, v in self.headers.items()})
        reply = stub._next_reply(request)
        if reply.delay_s and stub.stopping.wait(reply.delay_s):
            return  # stopping: drop the connection instead of answering late
        if reply.body is not None:
            self._send(reply.status, reply.body, reply.headers)
        elif reply.status >= 400:
            self._send_error(reply.status, reply.content, reply.headers)
        else:
            body = stub._completion(request, reply.content or "", reply.tool_calls)
            self._send(reply.status, json.dumps(body).encode(), reply.headers)

    def _send_error(self, status: int, message: str | None, headers: dict[str, str] | None = None) -> None:
        error = {
            "error": {
                "message": message or f"stub error {status}",
                "type": "invalid_request_error" if status < 500 else "server_error",
                "code": status,
            }
        }
        self._send(status, json.dumps(error).encode(), headers)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client hung up (timed out); nothing to tell it


OpenAIStub.handler = _Handler
