"""Test fixtures: real Postgres+pgvector, real Redis and a real Celery worker.

Settings start (or share) the embedded servers of CORTEX_DATA_DIR — `make test`
points it at `.cortex/test`, apart from `make run`'s — and pytest-django creates
the `test_cortexweb` database on that server.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import Permission, User
from django.db import connection, connections
from django.test import Client, override_settings

from apps.connectors.selectors import process_caches_clear
from apps.connectors.services import registry_changed
from apps.core import breaker, outbound
from apps.core.metrics import metric_files_clear_dead
from apps.core.models import ApiToken
from apps.core.redis import get_redis
from apps.core.services import api_token_create, api_token_limiter, page_submission_limiter
from cortexweb.celery import app as celery_app
from tests.listener import Listener


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker) -> Iterator[None]:
    """pytest-django's test database, dropped at the end without waiting: a connection some thread of
    the run still holds (a worker's, a live server's) would make Postgres wait 5 s before refusing to
    drop it, twice (10 s at the end of every run, and the database left behind)."""
    yield
    with django_db_blocker.unblock():
        connections.close_all()
        name = connection.settings_dict["NAME"]
        with connection._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                [name],
            )


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, django_db_blocker) -> Iterator[object]:
    """A real Celery worker (threads in this process) consuming the real Redis broker.

    Tests that need it must use ``transaction=True`` databases: the worker's
    threads have their own connections and see only committed rows.
    """
    celery_app.loader.import_module("celery.contrib.testing.tasks")  # the ping task start_worker checks
    celery_app.control.purge()
    with (
        django_db_blocker.unblock(),
        start_worker(
            celery_app,
            pool="threads",
            concurrency=2,
            perform_ping_check=True,
            shutdown_timeout=30,
            loglevel="WARNING",
            queues=settings.CELERY_WORKER_QUEUES,
        ) as worker,
    ):
        yield worker


class OneRoundPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """The product's hasher (PBKDF2-SHA256, same stored format) at one round: at the product's 1,000,000
    rounds each test user's password cost 0.23 s, minutes over the suite's few hundred users. A hash
    made here is still checked by the product's hasher, which reads the rounds from the hash."""

    iterations = 1


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing() -> Iterator[None]:
    """Test users' passwords hashed at one round (processes the tests start keep the product's)."""
    with override_settings(PASSWORD_HASHERS=["tests.conftest.OneRoundPBKDF2PasswordHasher"]):
        yield


# The local replay servers, the fake MCP servers and the test listeners are on loopback.
LOOPBACK_NETWORKS = ["127.0.0.0/8", "::1/128"]


@pytest.fixture(autouse=True)
def _outbound_allows_loopback(settings) -> None:
    """The outbound rule refuses loopback unless allowed; tests allow it as an operator would, with
    ``CORTEX_OUTBOUND_ALLOW_NETWORKS`` (subprocesses get it from ``subprocess_environment``)."""
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = LOOPBACK_NETWORKS
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []


@pytest.fixture(autouse=True)
def fake_dns(monkeypatch) -> dict[str, list[str]]:
    """No DNS queries from tests: the outbound rule resolves names from this table (a test may add
    names); any other name fails as unknown, as it would offline."""
    table = {"localhost": ["127.0.0.1"]}

    def resolve(host: str, port: int) -> list[str]:
        try:
            return list(table[host.lower().rstrip(".")])
        except KeyError:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None

    monkeypatch.setattr(outbound, "resolve", resolve)
    return table


@pytest.fixture
def listener() -> Iterator[Listener]:
    """A real HTTP server on 127.0.0.1 counting the connections it gets (see tests/listener.py)."""
    server = Listener().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _registry_caches_start_fresh() -> None:
    """Tests in rolled-back transactions never commit, so on-commit invalidation of the connector
    registry's caches never runs: start each test on a new registry version with empty caches."""
    registry_changed()
    process_caches_clear()


@pytest.fixture(autouse=True)
def _upstream_breakers_closed() -> None:
    """An earlier test's unreachable upstream (``apps.core.breaker``, kept in Redis) must not refuse
    this test's calls: every test starts with every breaker closed."""
    try:
        breaker.forget_all()
    except redis.RedisError:
        pass  # a test that stopped Redis left nothing to forget that anyone could read


@pytest.fixture(scope="session")
def cortex_server(django_db_setup: None, django_db_blocker) -> Iterator[object]:
    """CortexWeb's ASGI app (Django and ``/mcp``) under a real uvicorn (tests/mcp_server/conftest.py's
    ``LiveServer``), one for the whole session and every test directory: the MCP app's session
    manager runs only once per process."""
    from tests.mcp_server.conftest import LiveServer

    with django_db_blocker.unblock():
        server = LiveServer()
        yield server
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def _page_limiters_start_empty() -> None:
    """User ids restart with each test database while Redis keeps an earlier session's per-user page
    limiters (``services.page_submission_limiter``) for up to a minute: forget them once."""
    redis = get_redis()
    keys = list(redis.scan_iter("cortex:ratelimit:page:user:*"))
    if keys:
        redis.delete(*keys)


@pytest.fixture(scope="session", autouse=True)
def _metric_files_of_dead_processes_cleared() -> None:
    """Start the session as `make run` starts: earlier sessions' processes are dead, their metric
    files go (each /metrics scrape of this session would otherwise fold them in)."""
    metric_files_clear_dead()


@pytest.fixture
def redis_client():
    return get_redis()


@pytest.fixture
def make_token(db: None):
    """Create a token with the given scopes (default ``read``: the scopes are in docs/security.md);
    returns (row, raw token)."""

    def _make(*scopes: str, name: str = "test") -> tuple[ApiToken, str]:
        row, raw = api_token_create(name=name, scopes=scopes or ("read",))
        # Ids restart with each test database while Redis keeps the limiter of an earlier run's token.
        api_token_limiter(token=row).reset()
        return row, raw

    return _make


def make_user(username: str, *perms: str, is_staff: bool = True, is_superuser: bool = False) -> User:
    """A user holding ``perms`` (``app_label.codename``: the page roles of docs/security.md), with a
    fresh page-submission limiter (ids restart with each test database while Redis keeps limiters)."""
    user = User.objects.create_user(username, password="pw", is_staff=is_staff, is_superuser=is_superuser)
    for perm in perms:
        app_label, codename = perm.split(".")
        permission = Permission.objects.get(content_type__app_label=app_label, codename=codename)
        user.user_permissions.add(permission)
    page_submission_limiter(user=user).reset()
    return User.objects.get(pk=user.pk)  # without the permission cache of the row above


def role_client(*perms: str, username: str = "analyst", **client_options: object) -> Client:
    """A test client signed in as staff holding ``perms``."""
    client = Client(**client_options)
    client.force_login(make_user(username, *perms))
    return client


@pytest.fixture
def read_client(make_token) -> Client:
    _, raw = make_token("read")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def upstream_client(make_token) -> Client:
    """A token that may start upstream work (fact queries, arXiv, tool calls) and read what it started."""
    _, raw = make_token("read", "upstream")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def verify_client(make_token) -> Client:
    """A token that may verify claims and ground messages (docs/security.md)."""
    _, raw = make_token("read", "verify")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def admin_client_token(make_token) -> Client:
    _, raw = make_token("admin")
    return Client(headers={"Authorization": f"Bearer {raw}"})
