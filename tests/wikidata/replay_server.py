"""A local stand-in for the three Wikidata upstreams the fact workflow calls, in one HTTP server:

* ``/w/api.php`` — the Action API. ``wbgetentities`` answers from a pool of entities taken
  from the recorded responses in ``tests/fixtures/wikidata`` (each entity's JSON exactly as
  recorded, filtered to the requested ``props`` as the real API does); an id that no
  recording holds is answered the way Wikidata answers an unknown id, ``{"id", "missing"}``.
  ``wbsearchentities`` answers with an empty result unless a test scripts a reply.
* ``/item/query/``, ``/property/query/`` — the vector database;
* ``/sparql`` — the Query Service.

Every request is recorded (path, parameters). ``script(path_prefix, Reply)`` queues a special
reply for the next request to that path (a status, headers, a fixture or a body); unscripted
vector and SPARQL requests get ``default_vector`` / ``default_sparql``. It runs in a thread of
the test process, so the test's Celery worker threads and a benchmark reach it over loopback.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Recordings whose entities make up the wbgetentities pool (later files win for the same id).
ENTITY_RECORDINGS = (
    "wikidata/wbgetentities_Q42196_info_labels_descriptions.json",
    "wikidata/wbgetentities_sites_enwiki_titles_Oliver_Kahn_Q131261.json",
    "wikidata/wbgetentities_formatversion2_P31_Q5_labels_only.json",
    "wikidata/wbgetentities_Q42_labels_descriptions_aliases_claims_2025.json",
)
ENTITY_KEYS = {"id", "type", "datatype", "redirects", "lastrevid", "modified", "pageid", "ns", "title"}


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> Any:
    return json.loads(fixture_bytes(name))


@dataclass
class Reply:
    status: int = 200
    fixture: str | None = None
    body: Any = None  # JSON-serialisable, or bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    def payload(self) -> bytes:
        if self.fixture is not None:
            return fixture_bytes(self.fixture)
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body if self.body is not None else {}).encode()


@dataclass
class Request:
    path: str
    params: dict[str, str]
    at: float


class ReplayWikidata:
    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.default_vector = Reply(fixture="vectordb/item_query_albert_einstein_lang_en.json")
        self.default_sparql = Reply(fixture="wdqs/sparql_entity_label_year_integer.json")
        self.entities: dict[str, dict[str, Any]] = {}
        for name in ENTITY_RECORDINGS:
            self.entities.update(fixture_json(name)["entities"])
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- lifecycle and URLs

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/w/api.php"

    @property
    def sparql_url(self) -> str:
        return f"{self.base}/sparql"

    @property
    def vector_url(self) -> str:
        return self.base

    def start(self) -> ReplayWikidata:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def configure(self, settings: Any) -> None:
        """Point a Django ``settings`` (fixture) at this server, with the limiter barely spacing."""
        settings.WIKIDATA_API_URL = self.api_url
        settings.WIKIDATA_SPARQL_URL = self.sparql_url
        settings.WIKIDATA_VECTOR_URL = self.vector_url
        settings.WIKIDATA_API_INTERVAL_SECONDS = 0.001
        settings.WIKIDATA_VECTOR_INTERVAL_SECONDS = 0.001
        settings.WIKIDATA_SPARQL_INTERVAL_SECONDS = 0.001
        settings.WIKIDATA_BACKOFF_BASE_SECONDS = 0.01

    # -- scripting and inspection

    def script(self, path: str, *replies: Reply) -> None:
        with self._lock:
            self.scripts[path].extend(replies)

    def made(self, path: str, **params: str) -> list[Request]:
        """The requests to ``path`` whose parameters include ``params``."""
        return [
            r
            for r in self.requests
            if r.path == path and all(r.params.get(k) == v for k, v in params.items())
        ]

    # -- answering

    def _scripted(self, path: str) -> Reply | None:
        with self._lock:
            queue = self.scripts.get(path)
            return queue.popleft() if queue else None

    def _entities_reply(self, params: dict[str, str]) -> Reply:
        props = set((params.get("props") or "info|sitelinks|aliases|labels|descriptions|claims").split("|"))
        languages = set(filter(None, params.get("languages", "").split("|")))
        entities: dict[str, Any] = {}
        for entity_id in params.get("ids", "").split("|"):
            recorded = self.entities.get(entity_id)
            if recorded is None:
                entities[entity_id] = {"id": entity_id, "missing": ""}
                continue
            entity = {k: v for k, v in recorded.items() if k in props or k in ENTITY_KEYS}
            if languages:  # terms filtered to the requested languages, as the API does
                for term in ("labels", "descriptions", "aliases"):
                    if isinstance(entity.get(term), dict):
                        entity[term] = {lang: v for lang, v in entity[term].items() if lang in languages}
            entities[entity_id] = entity
        return Reply(body={"entities": entities, "success": 1})

    def _answer(self, path: str, params: dict[str, str]) -> Reply:
        scripted = self._scripted(path)
        if scripted is not None:
            return scripted
        if path == "/w/api.php":
            return self._action_reply(params)
        if path in ("/item/query/", "/property/query/"):
            return self.default_vector
        if path == "/sparql":
            return self.default_sparql
        return Reply(status=404, body={"detail": "Not Found"})

    def _action_reply(self, params: dict[str, str]) -> Reply:
        action = params.get("action")
        if action == "wbgetentities":
            return self._entities_reply(params)
        if action == "wbsearchentities":
            searchinfo = {"search": params.get("search", "")}
            return Reply(body={"searchinfo": searchinfo, "search": [], "success": 1})
        return Reply(status=400, body={"error": {"code": "badvalue", "info": f"unknown action {action}"}})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"
            disable_nagle_algorithm = True  # answer at once: headers and body leave without a delayed ACK

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self, params: dict[str, str]) -> None:
                path = urlsplit(self.path).path
                replay.requests.append(Request(path=path, params=params, at=time.monotonic()))
                reply = replay._answer(path, params)
                if reply.delay:
                    time.sleep(reply.delay)
                payload = reply.payload()
                self.send_response(reply.status)
                content_type = "application/sparql-results+json" if path == "/sparql" else "application/json"
                headers = {"Content-Type": content_type, **reply.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
                self._serve({k: v[-1] for k, v in query.items()})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode(), keep_blank_values=True)
                self._serve({k: v[-1] for k, v in form.items()})

        return Handler
