"""A local HTTP server that replays recorded (or documented-shape) answers and records every request.

Clients of upstream JSON APIs (the LLM client, the grounding judges) are tested against it: each
fixture file is one reply, as ``{"status", "headers", "body"}`` (a JSON body) or ``{"status",
"headers", "text"}`` (a raw body). Replies are served in ``script`` order, then ``default``;
``delay`` seconds are slept before each reply (for timeout tests).
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Received:
    at: float
    path: str
    headers: dict[str, str]
    body: Any


class ReplayServer:
    """An endpoint on 127.0.0.1 serving ``fixtures``' files in ``script`` order (then ``default``)."""

    def __init__(self, fixtures: Path, *, default: str) -> None:
        self.fixtures = fixtures
        self.default = default
        self.script: deque[str] = deque()
        self.delay = 0.0
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self) -> dict[str, Any]:
        with self._lock:
            name = self.script.popleft() if self.script else self.default
        return json.loads((self.fixtures / name).read_text(encoding="utf-8"))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with replay._lock:
                    replay.received.append(
                        Received(time.monotonic(), self.path, dict(self.headers.items()), json.loads(raw))
                    )
                reply = replay._next()
                if replay.delay:
                    time.sleep(replay.delay)
                body = reply["text"].encode() if "text" in reply else json.dumps(reply["body"]).encode()
                try:
                    self.send_response(reply["status"])
                    for name, value in reply["headers"].items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left: what the timeout tests want

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
