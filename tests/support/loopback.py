"""The threaded HTTP server on 127.0.0.1 our test servers share.

A subclass sets `handler` (a `QuietHandler` subclass); handlers reach the owning
object as `self.server.owner`.  `stopping` is set by `stop()`, so a handler that
sleeps (a slow page, a delayed reply) can wake and drop the connection.  Handler
threads are joined on stop: nothing outlives the test.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

__all__ = ["LoopbackServer", "QuietHandler", "QuietServer"]


class QuietServer(ThreadingHTTPServer):
    daemon_threads = False  # so server_close() joins them: nothing outlives stop()
    block_on_close = True
    owner: Any

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hung up is not a test failure; no traceback on stderr


class QuietHandler(BaseHTTPRequestHandler):
    server: QuietServer
    protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive threads
    timeout = 5  # a connection that never sends its request does not block stop()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class LoopbackServer:
    handler: ClassVar[type[QuietHandler]]

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._server: QuietServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            raise RuntimeError(f"the {type(self).__name__} server is not started")
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        server = QuietServer(("127.0.0.1", 0), self.handler)
        server.owner = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None:
            return
        self.stopping.set()  # wakes handlers sleeping through a delay
        server.shutdown()
        server.server_close()  # joins the handler threads
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
