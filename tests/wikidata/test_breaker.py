"""The breaker for unreachable upstreams (apps/core/breaker.py) on the Wikidata clients: connection
failures in a row open it, an open breaker refuses calls unsent and says until when, any answer closes
it (respx at the HTTP boundary; the breaker's state in the real Redis)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import httpx
import pytest
import redis
import respx
from redis.backoff import NoBackoff
from redis.retry import Retry

from apps.core import breaker
from apps.core.errors import UpstreamError, UpstreamUnreachable
from apps.core.models import UpstreamRequest
from apps.wikidata import action_api, clients, vectordb

pytestmark = pytest.mark.django_db

API_URL = "https://www.wikidata.org/w/api.php"
VECTOR_URL = "https://wd-vectordb.wmcloud.org"
SEARCH_ANSWER = {"search": [], "success": 1}
REFUSAL = re.compile(
    r"the Wikidata Action API could not be reached 3 times in a row "
    r"\(last: ConnectError: refused\); not tried again before (\d\d:\d\d:\d\d) UTC"
)


@pytest.fixture(autouse=True)
def _short_backoff(settings) -> None:
    settings.WIKIDATA_BACKOFF_BASE_SECONDS = 0.01


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as router:
        yield router


def _keyword_search() -> list[dict]:
    return clients.with_retries(
        lambda: clients.action_api_client().search_entities("abc", language="en"), what="keyword search"
    )


def _sent(upstream: str = action_api.UPSTREAM) -> int:
    return UpstreamRequest.objects.filter(upstream=upstream).count()


def test_three_connection_failures_in_a_row_refuse_the_next_call_unsent(mock, redis_client) -> None:
    route = mock.get(API_URL).mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(UpstreamError) as first:
        _keyword_search()  # tried, with its two retries
    assert type(first.value) is UpstreamError and first.value.retryable
    assert (route.call_count, _sent()) == (3, 3)

    started = time.monotonic()
    with pytest.raises(UpstreamUnreachable) as refused:
        _keyword_search()
    assert time.monotonic() - started < 0.5  # no backoff waited: the retry loop does not retry it
    assert (route.call_count, _sent()) == (3, 3)  # nothing sent, no request recorded
    match = REFUSAL.fullmatch(refused.value.message)
    assert match, refused.value.message
    assert refused.value.retryable is True and 25 < refused.value.retry_after <= 30
    assert refused.value.details["reason"] == "unreachable"
    assert refused.value.details["lastError"] == "ConnectError: refused"
    assert refused.value.details["retryAt"][11:19] == match.group(1)
    # Kept in Redis, so every web process and worker refuses too, for the window.
    assert 25_000 < redis_client.pttl(f"{breaker.KEY}open:{action_api.UPSTREAM}@www.wikidata.org") <= 30_000

    # Another upstream is judged on its own: the vector database is still asked.
    vector = mock.get(f"{VECTOR_URL}/item/query/").mock(return_value=httpx.Response(200, json=[]))
    assert clients.vector_db_client().search_items("abc") == []
    assert vector.call_count == 1


def test_after_the_window_one_call_is_sent_and_an_answer_closes_the_breaker(mock, settings) -> None:
    settings.CORTEX_UPSTREAM_UNREACHABLE_SECONDS = 0.3
    route = mock.get(API_URL).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(UpstreamError):
        _keyword_search()
    with pytest.raises(UpstreamUnreachable):
        _keyword_search()

    time.sleep(0.35)
    # Half-open: the call is sent; failing again reopens the breaker at once (the count stands).
    route.mock(side_effect=[httpx.ConnectError("refused")])
    with pytest.raises(UpstreamError):
        clients.action_api_client().search_entities("abc", language="en")
    assert route.call_count == 4
    with pytest.raises(UpstreamUnreachable):
        _keyword_search()

    time.sleep(0.35)
    route.mock(return_value=httpx.Response(200, json=SEARCH_ANSWER))
    assert _keyword_search() == []
    # Closed, and counting from nought: two failures and a success are not three in a row.
    route.mock(
        side_effect=[
            httpx.ConnectError("refused"),
            httpx.ConnectError("refused"),
            httpx.Response(200, json=SEARCH_ANSWER),
        ]
    )
    assert _keyword_search() == []
    assert route.call_count == 8


def test_an_upstream_that_answers_with_errors_is_never_cut_off(mock) -> None:
    route = mock.get(API_URL).mock(return_value=httpx.Response(503, json={}))
    for _ in range(3):
        with pytest.raises(UpstreamError) as failed:
            _keyword_search()
        assert type(failed.value) is UpstreamError
    assert route.call_count == 9  # three calls, each with its retries: all sent


def test_connect_timeouts_count_as_unreachable(mock) -> None:
    mock.get(API_URL).mock(side_effect=httpx.ConnectTimeout("no answer to SYN"))
    with pytest.raises(UpstreamError):
        _keyword_search()
    with pytest.raises(UpstreamUnreachable) as refused:
        _keyword_search()
    assert "(last: ConnectTimeout: no answer to SYN)" in refused.value.message


def test_without_redis_the_breaker_never_refuses(mock, monkeypatch) -> None:
    closed = redis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    monkeypatch.setattr(breaker, "get_redis", lambda: closed)
    route = mock.get(API_URL).mock(
        side_effect=[httpx.ConnectError("refused")] * 3 + [httpx.Response(200, json=SEARCH_ANSWER)]
    )
    with pytest.raises(UpstreamError):
        _keyword_search()
    assert _keyword_search() == []  # it only saves time: never why a call fails
    assert route.call_count == 4


def test_a_window_of_nought_turns_it_off(mock, settings) -> None:
    settings.CORTEX_UPSTREAM_UNREACHABLE_SECONDS = 0
    route = mock.get(API_URL).mock(side_effect=httpx.ConnectError("refused"))
    for _ in range(2):
        with pytest.raises(UpstreamError) as failed:
            _keyword_search()
        assert type(failed.value) is UpstreamError
    assert route.call_count == 6


def test_vector_database_connection_failures_open_its_own_breaker(mock) -> None:
    mock.get(f"{VECTOR_URL}/item/query/").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(UpstreamError):
        clients.with_retries(lambda: clients.vector_db_client().search_items("abc"), what="vector search")
    with pytest.raises(UpstreamUnreachable) as refused:
        clients.vector_db_client().search_items("abc")
    assert refused.value.message.startswith("the Wikidata vector database could not be reached 3 times")
    assert refused.value.details["upstream"] == vectordb.UPSTREAM


def test_an_upstream_pointed_elsewhere_starts_with_its_breaker_closed(mock, settings) -> None:
    mock.get(API_URL).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(UpstreamError):
        _keyword_search()
    with pytest.raises(UpstreamUnreachable):
        _keyword_search()

    # The operator points the setting at a mirror: it is asked at once, not refused for the old host.
    settings.WIKIDATA_API_URL = "https://wikidata-mirror.example.org/w/api.php"
    mirror = mock.get(settings.WIKIDATA_API_URL).mock(return_value=httpx.Response(200, json=SEARCH_ANSWER))
    assert _keyword_search() == []
    assert mirror.call_count == 1
