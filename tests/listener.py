"""A real HTTP listener on 127.0.0.1 that records every connection: the witness of SSRF tests.

A test points something that must not fetch (a ``$ref``, a ``SERVICE`` clause, an endpoint the
outbound rule refuses) at :attr:`Listener.url` and asserts afterwards that ``connections`` is 0.
It answers every request ``200 {}`` so that a test of what *is* allowed can see it arrive.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Handler(BaseHTTPRequestHandler):
    server: _RecordingServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.server.requests.append(f"{self.command} {self.path}")
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer  # http.server's naming

    def log_message(self, format: str, *args: Any) -> None:  # the base class's argument names
        return


class _RecordingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests: list[str] = []

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.connections += 1  # counted on accept, before anything is read
        return True


class Listener:
    def __init__(self) -> None:
        self._server = _RecordingServer()
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def connections(self) -> int:
        return self._server.connections

    @property
    def requests(self) -> list[str]:
        return self._server.requests

    def start(self) -> Listener:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
