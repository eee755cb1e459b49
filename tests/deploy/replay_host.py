"""The deployment test's replay host: the recorded Wikidata and arXiv upstreams on a private address.

Run inside the ``replay`` network namespace as ``python -m tests.deploy.replay_host ADDRESS``. It
serves the same replays the other tests use (tests/wikidata/replay_server.py on port 8080,
tests/arxiv/replay_server.py on 8081), bound to ADDRESS instead of loopback so the worker hosts
reach them over the bridge, and records the client address of every request so the test can tell
which worker host sent it. A control port (8090) lets the test read the records and make the
vector search hang for requests from one host (a worker killed mid-request).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import tests.arxiv.replay_server as arxiv_replay
import tests.wikidata.replay_server as wikidata_replay

WIKIDATA_PORT, ARXIV_PORT, CONTROL_PORT = 8080, 8081, 8090
# The fact run's vector search finds Douglas Adams (as tests/wikidata/test_facts.py's Q42_VECTOR_HIT).
Q42_VECTOR_HIT = [{"QID": "Q42", "similarity_score": 0.87, "rrf_score": 0.02, "source": "Vector Search"}]


def _bound_server(address: str, port: int) -> type[ThreadingHTTPServer]:
    """The replays bind 127.0.0.1:0; here they must listen on the namespace's bridge address."""

    class Bound(ThreadingHTTPServer):
        daemon_threads = True

        def __init__(self, _address: object, handler: type[BaseHTTPRequestHandler]) -> None:
            super().__init__((address, port), handler)

    return Bound


class ReplayHost:
    def __init__(self, address: str) -> None:
        self.lock = threading.Lock()
        self.arxiv_clients: list[dict[str, Any]] = []  # {at, client, query}, time.time() at arrival
        self.wikidata_clients: list[dict[str, Any]] = []  # {at, client, path}
        self.hang: dict[str, Any] = {}  # {"client", "path", "seconds"}: sleep before answering those

        arxiv_replay.ThreadingHTTPServer = _bound_server(address, ARXIV_PORT)  # type: ignore[misc]
        self.arxiv = arxiv_replay.ReplayArxiv(delay=0.05)
        wikidata_replay.ThreadingHTTPServer = _bound_server(address, WIKIDATA_PORT)  # type: ignore[misc]
        self.wikidata = wikidata_replay.ReplayWikidata()
        self.wikidata.default_vector = wikidata_replay.Reply(body=Q42_VECTOR_HIT)
        self._record_clients()
        self.control = ThreadingHTTPServer((address, CONTROL_PORT), self._control_handler())

    def _record_clients(self) -> None:
        host = self
        arxiv_handler = self.arxiv._server.RequestHandlerClass

        class ArxivHandler(arxiv_handler):  # type: ignore[misc,valid-type]
            def do_GET(self) -> None:
                query = arxiv_replay.parse_qs(arxiv_replay.urlsplit(self.path).query)
                with host.lock:
                    host.arxiv_clients.append(
                        {"at": time.time(), "client": self.client_address[0], "query": query}
                    )
                super().do_GET()

        self.arxiv._server.RequestHandlerClass = ArxivHandler
        wikidata_handler = self.wikidata._server.RequestHandlerClass

        class WikidataHandler(wikidata_handler):  # type: ignore[misc,valid-type]
            def _serve(self, params: dict[str, str]) -> None:
                path = wikidata_replay.urlsplit(self.path).path
                client = self.client_address[0]
                with host.lock:
                    host.wikidata_clients.append({"at": time.time(), "client": client, "path": path})
                    hang = dict(host.hang)
                if hang and hang["client"] == client and hang["path"] == path:
                    time.sleep(hang["seconds"])  # the worker is killed while it waits here
                super()._serve(params)

        self.wikidata._server.RequestHandlerClass = WikidataHandler

    def _control_handler(self) -> type[BaseHTTPRequestHandler]:
        host = self

        class Control(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, body: Any) -> None:
                payload = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                with host.lock:
                    body = {
                        "arxiv": list(host.arxiv_clients),
                        "arxivMaxOpenConnections": host.arxiv.max_open_connections,
                        "wikidata": list(host.wikidata_clients),
                    }
                self._reply(body)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                with host.lock:
                    if self.path == "/hang":
                        host.hang = request
                    elif self.path == "/reset":
                        host.arxiv_clients.clear()
                        host.wikidata_clients.clear()
                        host.arxiv.max_open_connections = 0
                self._reply({"ok": True})

        return Control

    def serve(self) -> None:
        self.arxiv.start()
        self.wikidata.start()
        print("replay host ready", flush=True)
        self.control.serve_forever()


if __name__ == "__main__":
    ReplayHost(sys.argv[1]).serve()
