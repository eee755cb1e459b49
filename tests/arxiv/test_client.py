"""ArxivClient: the request it sends and how it classifies every kind of answer (respx, no network)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
import respx

from apps.arxiv.clients import ArxivClient, ArxivEmptyPageError, arxiv_api_url, parse_retry_after
from apps.arxiv.parsing import ArxivApiError, ArxivFeedError
from apps.arxiv.query import build_search_params
from apps.core.errors import UpstreamError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "arxiv"
HOST, PATH = "export.arxiv.org", "/api/query"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def atom(status: int, name: str, **headers: str) -> httpx.Response:
    headers.setdefault("Content-Type", "application/atom+xml; charset=utf-8")
    return httpx.Response(status, content=fixture(name), headers=headers)


# An empty page whose counters say it should hold results: arXiv's known flakiness.
SUSPECT_EMPTY = fixture("idlist_0000.0000_empty_feed.xml").replace(
    b"<opensearch:totalResults>0<", b"<opensearch:totalResults>214881<"
)


@pytest.fixture
def arxiv() -> Iterator[respx.Route]:
    with respx.mock(assert_all_mocked=True, assert_all_called=False) as mock:
        yield mock.get(host=HOST, path=PATH)


def raised(call, *args) -> UpstreamError:
    with pytest.raises(UpstreamError) as caught:
        call(*args)
    return caught.value


# --- success ----------------------------------------------------------------------------------


def test_search_sends_the_encoded_query_and_parses_the_page(arxiv: respx.Route, settings) -> None:
    settings.CORTEX_USER_AGENT = "CortexWeb/test (ops@example.org)"
    arxiv.mock(return_value=atom(200, "query_search_testing_start0_max10.xml"))
    params = build_search_params(
        query='testing "deep learning"', date_from="2020-01-01", date_to="2024-12-31", max_results=10
    )
    page = ArxivClient().search(params)
    assert arxiv.call_count == 1
    request = arxiv.calls.last.request
    assert str(request.url) == (
        "https://export.arxiv.org/api/query?search_query=%28%28ti%3Atesting+OR+abs%3Atesting%29+AND+%28ti%3A"
        "%22deep+learning%22+OR+abs%3A%22deep+learning%22%29%29+AND+submittedDate%3A%5B202001010000+TO+"
        "202412312359%5D&start=0&max_results=10&sortBy=submittedDate&sortOrder=descending"
    )
    assert request.headers["User-Agent"] == "CortexWeb/test (ops@example.org)"
    assert [item["versionedId"] for item in page.items][:3] == [
        "2202.12139v1",
        "2405.13786v1",
        "2005.14124v2",
    ]
    assert page.next_start == 10


def test_fetch_sends_an_id_list_for_every_id(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=atom(200, "idlist_quant-ph_0201082v1_oldstyle_versioned.xml"))
    page = ArxivClient().fetch(["arXiv:quant-ph/0201082v1"])
    assert str(arxiv.calls.last.request.url) == (
        "https://export.arxiv.org/api/query?id_list=quant-ph%2F0201082v1&start=0&max_results=1"
    )
    assert [item["versionedId"] for item in page.items] == ["quant-ph/0201082v1"]


def test_unknown_id_is_an_empty_page_without_retry(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=atom(200, "idlist_0000.0000_empty_feed.xml"))
    page = ArxivClient().fetch(["0000.0000"])
    assert page.items == () and page.total_results == 0
    assert arxiv.call_count == 1


def test_base_url_comes_from_settings(settings) -> None:
    settings.ARXIV_API_URL = "http://arxiv.test:8080/replay/query"
    assert arxiv_api_url() == "http://arxiv.test:8080/replay/query"
    with respx.mock(assert_all_mocked=True) as mock:
        route = mock.get("http://arxiv.test:8080/replay/query", params={"id_list": "1605.08386"}).mock(
            return_value=atom(200, "idlist_1605.08386.xml")
        )
        assert ArxivClient().fetch(["1605.08386"]).items[0]["id"] == "1605.08386"
    assert route.call_count == 1


def test_default_base_url_is_the_public_api(settings) -> None:
    del settings.ARXIV_API_URL  # may or may not exist yet; the helper falls back
    assert arxiv_api_url() == "https://export.arxiv.org/api/query"


# --- retryable failures -------------------------------------------------------------------------


def test_429_is_retryable_with_retry_after_seconds(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=httpx.Response(429, headers={"Retry-After": "2"}, text="Rate exceeded."))
    error = raised(ArxivClient().search, [("search_query", "all:testing")])
    assert type(error) is UpstreamError
    assert error.retryable is True
    assert error.retry_after == 2.0
    assert error.message == "arXiv is busy (HTTP 429); retry later"
    assert error.details == {
        "status": 429,
        "url": "https://export.arxiv.org/api/query?search_query=all%3Atesting",
        "retryAfter": 2.0,
    }
    assert arxiv.call_count == 1  # the client never retries these itself


def test_503_is_retryable_with_http_date_retry_after(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}))
    error = raised(ArxivClient().search, [("search_query", "all:testing")])
    assert error.retryable is True
    assert error.retry_after is not None and error.retry_after > 10**9
    assert error.details["status"] == 503


def test_503_without_retry_after(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=httpx.Response(503))
    error = raised(ArxivClient().search, [("search_query", "all:testing")])
    assert (error.retryable, error.retry_after) == (True, None)
    assert "retryAfter" not in error.details


@pytest.mark.parametrize(
    ("exception", "reason", "message"),
    [
        (httpx.ReadTimeout("read timed out"), "timeout", "arXiv did not answer in time (ReadTimeout)"),
        (
            httpx.ConnectTimeout("connect timed out"),
            "timeout",
            "arXiv did not answer in time (ConnectTimeout)",
        ),
        (
            httpx.ConnectError("connection refused"),
            "connection",
            "could not reach arXiv (ConnectError: connection refused)",
        ),
        (
            httpx.RemoteProtocolError("peer closed"),
            "connection",
            "could not reach arXiv (RemoteProtocolError: peer closed)",
        ),
    ],
)
def test_transport_failures_are_retryable(
    arxiv: respx.Route, exception: Exception, reason: str, message: str
) -> None:
    arxiv.mock(side_effect=exception)
    error = raised(ArxivClient().search, [("search_query", "all:testing")])
    assert error.retryable is True
    assert error.message == message
    assert error.details == {"reason": reason, "url": "https://export.arxiv.org/api/query"}


# --- terminal failures ----------------------------------------------------------------------


def test_400_error_feed_is_terminal_with_arxivs_message(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=atom(400, "constructed_2026_error_feed_http400.xml"))
    with pytest.raises(ArxivApiError) as caught:
        ArxivClient().search([("id_list", "1706.0376")])  # arXiv, not us, refuses the id here
    error = caught.value
    assert error.retryable is False
    assert error.arxiv_message == "incorrect id format for 1706.0376"
    assert error.message == "arXiv rejected the request: incorrect id format for 1706.0376"
    assert error.details == {
        "arxivMessage": "incorrect id format for 1706.0376",
        "arxivError": "incorrect_id_format_for_1706.0376",
        "status": 400,
        "url": "https://export.arxiv.org/api/query?id_list=1706.0376",
    }
    assert arxiv.call_count == 1


def test_error_feed_with_200_is_terminal_too(arxiv: respx.Route) -> None:
    arxiv.mock(return_value=atom(200, "manual_error_feed_incorrect_id_format.xml"))
    with pytest.raises(ArxivApiError) as caught:
        ArxivClient().search([("id_list", "1234.12345")])
    assert caught.value.arxiv_message == "incorrect id format for 1234.12345"
    assert caught.value.details["status"] == 200


@pytest.mark.parametrize(
    ("response", "message", "extra"),
    [
        (
            httpx.Response(500, text="<html>Internal Server Error</html>"),
            "arXiv answered HTTP 500",
            {"body": "<html>Internal Server Error</html>"},
        ),
        (httpx.Response(404, text="not here"), "arXiv answered HTTP 404", {"body": "not here"}),
        (httpx.Response(400, text="bad request"), "arXiv answered HTTP 400", {"body": "bad request"}),
        (
            httpx.Response(301, headers={"Location": "https://arxiv.org/api/query"}),
            "arXiv redirected (HTTP 301) to 'https://arxiv.org/api/query';"
            " set ARXIV_API_URL to the final address",
            {"location": "https://arxiv.org/api/query"},
        ),
    ],
)
def test_other_statuses_are_terminal(
    arxiv: respx.Route, response: httpx.Response, message: str, extra
) -> None:
    arxiv.mock(return_value=response)
    error = raised(ArxivClient().search, [("search_query", "all:x")])
    assert type(error) is UpstreamError
    assert error.retryable is False
    assert error.message == message
    assert error.details == {
        "status": response.status_code,
        "url": "https://export.arxiv.org/api/query?search_query=all%3Ax",
        **extra,
    }


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><body>Service temporarily unavailable</body></html>", "not_atom"),
        (b"<feed xmlns='http://www.w3.org/2005/Atom'><entry>", "malformed_xml"),
        (b'<!DOCTYPE feed [<!ENTITY x SYSTEM "file:///etc/passwd">]><feed>&x;</feed>', "unsafe_xml"),
    ],
)
def test_unusable_200_body_is_terminal(arxiv: respx.Route, body: bytes, reason: str) -> None:
    arxiv.mock(return_value=httpx.Response(200, content=body))
    with pytest.raises(ArxivFeedError) as caught:
        ArxivClient().search([("search_query", "all:x")])
    assert caught.value.retryable is False
    assert caught.value.details["reason"] == reason
    assert caught.value.details["status"] == 200


def test_non_http_base_url_is_a_configuration_error() -> None:
    error = raised(ArxivClient(api_url="ftp://arxiv.test/api/query").search, [("search_query", "all:x")])
    assert error.retryable is False
    assert error.details == {"reason": "configuration", "url": "ftp://arxiv.test/api/query"}


# --- the suspect empty first page -----------------------------------------------------------------


def test_empty_first_page_with_results_is_requested_once_more(arxiv: respx.Route) -> None:
    arxiv.mock(
        side_effect=[
            httpx.Response(200, content=SUSPECT_EMPTY),
            atom(200, "query_search_testing_start0_max10.xml"),
        ]
    )
    page = ArxivClient().search([("search_query", "all:testing"), ("start", "0"), ("max_results", "10")])
    assert arxiv.call_count == 2
    assert len(page.items) == 10
    assert [str(call.request.url) for call in arxiv.calls] == [
        "https://export.arxiv.org/api/query?search_query=all%3Atesting&start=0&max_results=10"
    ] * 2


def test_empty_first_page_twice_is_an_error_not_no_results(arxiv: respx.Route) -> None:
    arxiv.mock(side_effect=[httpx.Response(200, content=SUSPECT_EMPTY)] * 3)
    with pytest.raises(ArxivEmptyPageError) as caught:
        ArxivClient().search([("search_query", "all:testing")])
    assert arxiv.call_count == 2  # one retry, no more
    assert caught.value.retryable is False
    assert caught.value.message == "arXiv returned an empty page twice although it reports 214881 results"
    assert caught.value.details == {"reason": "empty_page", "totalResults": 214881, "start": 0}


def test_request_page_is_exactly_one_request_inside_the_gate(arxiv: respx.Route) -> None:
    arxiv.mock(
        side_effect=[
            httpx.Response(200, content=SUSPECT_EMPTY),
            atom(200, "query_search_testing_start0_max10.xml"),
        ]
    )
    events: list[str] = []

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        events.append("enter")
        yield
        events.append("exit")

    client = ArxivClient(gate=gate)
    first = client.request_page([("search_query", "all:testing")])
    # The seam does not retry: the suspect page comes back as it is.
    assert (first.items, first.total_results) == ((), 214881)
    assert events == ["enter", "exit"]
    assert client.request_page([("search_query", "all:testing")]).items
    assert events == ["enter", "exit"] * 2
    assert arxiv.call_count == 2


def test_the_suspect_page_retry_also_passes_the_gate(arxiv: respx.Route) -> None:
    arxiv.mock(
        side_effect=[
            httpx.Response(200, content=SUSPECT_EMPTY),
            atom(200, "query_search_testing_start0_max10.xml"),
        ]
    )
    entered: list[int] = []

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        entered.append(arxiv.call_count)
        yield

    ArxivClient(gate=gate).search([("search_query", "all:testing")])
    assert entered == [0, 1]


# --- Retry-After ----------------------------------------------------------------------------------

NOW = datetime(2026, 4, 12, 22, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("2", 2.0),
        (" 120 ", 120.0),
        ("1.5", 1.5),
        ("-5", 0.0),
        ("Sun, 12 Apr 2026 22:10:30 GMT", 30.0),
        ("Sun, 12 Apr 2026 22:09:00 GMT", 0.0),
        ("soon", None),
        ("nan", None),
        ("inf", None),
        ("", None),
        (None, None),
    ],
)
def test_parse_retry_after(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds
