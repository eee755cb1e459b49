"""A local stand-in for export.arxiv.org: replays recorded feeds and records every request.

It runs in a thread of the test process and records, per request, the arrival
time and the query parameters, and the largest number of connections open at
once — so tests can check the spacing and single-connection rules from the
upstream's side, whichever process sent the requests.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).parents[1] / "fixtures" / "arxiv"
DEFAULT_FEED = "query_search_testing_start0_max10.xml"


@dataclass
class Reply:
    status: int = 200
    feed: str = DEFAULT_FEED
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Arrival:
    at: float
    params: dict[str, list[str]]
    user_agent: str


class ReplayArxiv:
    """``ReplayArxiv().start()``; ``url`` is the API endpoint; ``script`` queues special replies."""

    def __init__(self, *, delay: float = 0.0) -> None:
        self.arrivals: list[Arrival] = []
        self.script: deque[Reply] = deque()
        self.default = Reply(delay=delay)
        self.open_connections = 0
        self.max_open_connections = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/api/query"

    def start(self) -> ReplayArxiv:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def gaps(self) -> list[float]:
        times = sorted(arrival.at for arrival in self.arrivals)
        return [later - earlier for earlier, later in itertools.pairwise(times)]

    def _next_reply(self) -> Reply:
        with self._lock:
            return self.script.popleft() if self.script else self.default

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one request per connection, closed after the reply

            def setup(self) -> None:
                super().setup()
                with replay._lock:
                    replay.open_connections += 1
                    replay.max_open_connections = max(replay.max_open_connections, replay.open_connections)

            def finish(self) -> None:
                try:
                    super().finish()
                finally:
                    with replay._lock:
                        replay.open_connections -= 1

            def do_GET(self) -> None:
                arrival = Arrival(
                    at=time.time(),
                    params=parse_qs(urlsplit(self.path).query, keep_blank_values=True),
                    user_agent=self.headers.get("User-Agent", ""),
                )
                with replay._lock:
                    replay.arrivals.append(arrival)
                reply = replay._next_reply()
                if reply.delay:
                    time.sleep(reply.delay)
                body = (FIXTURES / reply.feed).read_bytes() if reply.feed else b""
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/atom+xml; charset=UTF-8")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
