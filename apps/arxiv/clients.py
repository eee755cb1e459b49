"""The arXiv API client: one HTTP request in, one parsed page or one classified error out.

Failures become :class:`~apps.core.errors.UpstreamError` (or a subclass):

* retryable — HTTP 429 and 503 (``retry_after`` from ``Retry-After``, in
  seconds or as an HTTP date), timeouts, connection errors;
* terminal — an error feed (:class:`~apps.arxiv.parsing.ArxivApiError`,
  arXiv's message in ``arxiv_message``; the 2026 server sends it with HTTP
  400), any other 3xx/4xx/5xx, and a body that is not a safe, well-formed
  Atom feed (:class:`~apps.arxiv.parsing.ArxivFeedError`).

Retrying, spacing and the single-connection rule belong to the caller (the
service layer with the shared limiter). :meth:`ArxivClient.request_page` is
the seam: exactly one HTTP request, made inside ``gate()`` so a limiter slot
and connection lock can wrap every request, including the one re-request
:meth:`ArxivClient.search` makes for a suspect empty page.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

import httpx
from django.conf import settings

from apps.arxiv.parsing import ArxivApiError, ArxivFeedError, ArxivPage, parse_feed
from apps.arxiv.query import build_id_params
from apps.core.errors import UpstreamError
from apps.core.http import build_client, parse_retry_after, timeout_before
from apps.core.logging import get_logger

DEFAULT_API_URL = "https://export.arxiv.org/api/query"
RETRYABLE_STATUSES = frozenset({429, 503})

logger = get_logger(__name__)

Gate = Callable[[], AbstractContextManager[object]]


def arxiv_api_url() -> str:
    """``ARXIV_API_URL``, the full endpoint (…/api/query); the one place that reads it."""
    return str(getattr(settings, "ARXIV_API_URL", DEFAULT_API_URL))


def arxiv_timeout() -> float | None:
    """``ARXIV_TIMEOUT_SECONDS`` (read timeout) or ``None`` for the project default."""
    value = getattr(settings, "ARXIV_TIMEOUT_SECONDS", None)
    return float(value) if value is not None else None


class ArxivEmptyPageError(UpstreamError):
    """arXiv twice returned no entries for a page its own counters say is not empty."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details, retryable=False)


def page_from_response(response: httpx.Response) -> ArxivPage:
    """The parsed page of a 200 response; otherwise the classified :class:`UpstreamError`."""
    status = response.status_code
    context = {"status": status, "url": str(response.request.url)}
    if status == 200:
        try:
            return parse_feed(response.content)
        except UpstreamError as exc:
            exc.details.update(context)
            raise
    if status in RETRYABLE_STATUSES:
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        details = {**context, **({"retryAfter": retry_after} if retry_after is not None else {})}
        raise UpstreamError(
            f"arXiv is busy (HTTP {status}); retry later",
            details=details,
            retryable=True,
            retry_after=retry_after,
        )
    if 300 <= status < 400:
        location = response.headers.get("Location", "")
        raise UpstreamError(
            f"arXiv redirected (HTTP {status}) to {location!r}; set ARXIV_API_URL to the final address",
            details={**context, "location": location},
        )
    try:
        parse_feed(response.content)
    except ArxivApiError as exc:  # the error feed: arXiv's own explanation
        exc.details.update(context)
        raise
    except ArxivFeedError:
        pass
    raise UpstreamError(
        f"arXiv answered HTTP {status}",
        details={**context, "body": response.text[:500]},
    )


class ArxivClient:
    """Synchronous arXiv API client; cheap to create, holds no connection between requests.

    A fresh httpx client (from :func:`apps.core.http.build_client`) is made per
    request, so the correlation id of the current request is forwarded and no
    idle connection outlives the request (arXiv allows one at a time).
    """

    def __init__(
        self,
        *,
        api_url: str | None = None,
        timeout: float | None = None,
        gate: Gate | None = None,
        before_send: Callable[[], object] | None = None,
        deadline: float | None = None,
    ) -> None:
        self.api_url = api_url or arxiv_api_url()
        self.timeout = timeout if timeout is not None else arxiv_timeout()
        self.gate: Gate = gate or contextlib.nullcontext
        self.before_send: Callable[[], object] = before_send or (lambda: None)
        # A time.monotonic() instant no request may outlast (a run's deadline): each request is
        # refused after it and its timeouts are cut to what is left before it.
        self.deadline = deadline

    def request_page(self, params: Sequence[tuple[str, str]]) -> ArxivPage:
        """Exactly one HTTP GET with these (unencoded) parameters; see the module docstring."""
        started = time.perf_counter()
        try:
            # The connection lives inside the gate (one at a time); before_send runs as late as
            # possible, after the client's set-up, so spacing claimed there holds at arXiv's side.
            with self.gate(), build_client(timeout=self.timeout) as http:
                request = http.build_request("GET", self.api_url, params=list(params))
                self.before_send()
                # After the spacing's wait: what is left before the deadline bounds this request.
                timeout = timeout_before(self.deadline, read=self.timeout, upstream="arxiv", name="arXiv")
                request.extensions["timeout"] = timeout.as_dict()
                response = http.send(request)
                # Judged inside the gate, so that it records an error answer (a 503, a 429) as the
                # failure it is, not as a request that went well (the health and alerts read those).
                logger.info(
                    "arxiv.request",
                    status=response.status_code,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                    url=str(response.request.url),
                )
                return page_from_response(response)
        except httpx.TimeoutException as exc:
            raise UpstreamError(
                f"arXiv did not answer in time ({type(exc).__name__})",
                details={"reason": "timeout", "url": self.api_url},
                retryable=True,
            ) from exc
        except httpx.UnsupportedProtocol as exc:
            raise UpstreamError(
                f"ARXIV_API_URL is not an http(s) URL: {self.api_url!r}",
                details={"reason": "configuration", "url": self.api_url},
            ) from exc
        except httpx.TransportError as exc:
            raise UpstreamError(
                f"could not reach arXiv ({type(exc).__name__}: {exc})",
                details={"reason": "connection", "url": self.api_url},
                retryable=True,
            ) from exc

    def search(self, params: Sequence[tuple[str, str]]) -> ArxivPage:
        """One page for parameters from :func:`apps.arxiv.query.build_search_params`.

        arXiv sometimes answers with no entries although its ``totalResults``
        says the page has some; such a page is requested once more, then
        reported as :class:`ArxivEmptyPageError` rather than as "no results".
        """
        page = self.request_page(params)
        if not self._suspect(page):
            return page
        logger.warning("arxiv.empty_page_retry", total_results=page.total_results, start=page.start)
        page = self.request_page(params)
        if self._suspect(page):
            raise ArxivEmptyPageError(
                f"arXiv returned an empty page twice although it reports {page.total_results} results",
                details={"reason": "empty_page", "totalResults": page.total_results, "start": page.start},
            )
        return page

    def fetch(self, ids: Sequence[str]) -> ArxivPage:
        """The articles with these ids (latest version unless one is given), in arXiv's order.

        Unknown but well-formed ids are simply missing from the page.
        """
        return self.search(build_id_params(ids))

    @staticmethod
    def _suspect(page: ArxivPage) -> bool:
        return not page.items and page.total_results > page.start
