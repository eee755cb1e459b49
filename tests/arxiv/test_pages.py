"""The /papers pages: stored papers (filters, full text, HTMX, pagination), one paper, runs, and
the live arXiv search answered from a cached run, still running, or failing without a 500."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.arxiv import views as arxiv_views
from apps.arxiv.models import Paper, PaperVersion, RunStatus, SearchRun, SearchRunPaper
from apps.arxiv.schemas import SearchIn
from apps.arxiv.services import search_submit
from tests.conftest import role_client

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


def make_paper(arxiv_id: str, title: str, *, published: str = "2024-01-15", **fields) -> Paper:
    when = datetime.fromisoformat(published).replace(tzinfo=UTC)
    defaults = {
        "latest_version": 1,
        "summary": f"Abstract of {title}.",
        "authors": ["Ada Lovelace"],
        "author_details": [{"name": "Ada Lovelace", "affiliations": []}],
        "published": when,
        "updated": when,
        "url": f"https://arxiv.org/abs/{arxiv_id}v1",
        "pdf_url": f"https://arxiv.org/pdf/{arxiv_id}v1",
        "categories": ["cs.CL"],
        "primary_category": "cs.CL",
    }
    defaults.update(fields)
    return Paper.objects.create(arxiv_id=arxiv_id, title=title, **defaults)


@pytest.fixture
def client() -> Client:
    """Signed in as staff who may search arXiv live (and so read runs): docs/security.md."""
    return role_client("arxiv.add_searchrun", username="searcher")


def listed(content: str) -> list[str]:
    return re.findall(r'<article class="paper" data-arxiv-id="([^"]+)">', content)


@pytest.fixture
def papers() -> dict[str, Paper]:
    return {
        "llm": make_paper(
            "2401.00001",
            "Large language models as retrievers",
            published="2024-01-02",
            summary="We study retrieval with transformers.",
            authors=["Grace Hopper", "Alan Turing"],
            categories=["cs.CL", "cs.IR"],
        ),
        "graph": make_paper(
            "2402.00002",
            "Graph neural networks for molecules",
            published="2024-02-10",
            summary="Message passing over molecular graphs.",
            authors=["Marie Curie"],
            categories=["cs.LG", "q-bio.BM"],
            primary_category="cs.LG",
        ),
        "old": make_paper(
            "hep-th/9901001",
            "Strings and branes",
            published="1999-01-05",
            summary="A classic about string theory.",
            authors=["Edward Witten"],
            categories=["hep-th"],
            primary_category="hep-th",
        ),
    }


# --- The list ------------------------------------------------------------------------------


def test_full_page_lists_stored_papers_newest_first(client: Client, papers: dict) -> None:
    response = client.get("/papers")
    assert response.status_code == 200
    assert response["Vary"] == "HX-Request, Cookie"
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert '<a href="/papers" aria-current="page">Papers</a>' in content
    assert '<a href="/events">Events</a>' in content
    assert listed(content) == ["2402.00002", "2401.00001", "hep-th/9901001"]
    assert "3 papers stored." in content
    assert '<a href="/papers/hep-th/9901001">Strings and branes</a>' in content
    assert "<code>2401.00001v1</code>" in content
    assert '<p class="paper-authors">Grace Hopper, Alan Turing</p>' in content
    # Category choices are every stored category, sorted.
    category_select = re.search(r'<select name="category" id="id_category">(.*?)</select>', content, re.S)
    assert re.findall(r'<option value="([^"]*)"', category_select.group(1)) == [
        "",
        "cs.CL",
        "cs.IR",
        "cs.LG",
        "hep-th",
        "q-bio.BM",
    ]
    # The filter form drives the results fragment with HTMX, debounced, and pushes the URL.
    assert (
        'hx-get="/papers" hx-target="#paper-results" hx-swap="outerHTML" hx-push-url="true"\n'
        '        hx-trigger="submit, input changed delay:400ms" hx-sync="this:replace"' in content
    )
    # The live search form posts with the CSRF token.
    assert re.search(r'<input type="hidden" name="csrfmiddlewaretoken" value="[A-Za-z0-9]{64}">', content)
    assert 'hx-post="/papers/live" hx-target="#live-search" hx-swap="outerHTML"' in content


def test_htmx_request_gets_only_the_results_fragment(client: Client, papers: dict) -> None:
    response = client.get("/papers", {"category": "cs.LG"}, headers=HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith('<div id="paper-results" class="paper-results" aria-live="polite"')
    assert "<html" not in content and "<form" not in content
    assert listed(content) == ["2402.00002"]
    assert "1 paper matches these filters." in content
    # It refreshes itself when a live search stored new papers.
    assert 'hx-get="/papers?category=cs.LG" hx-trigger="papers-changed from:body"' in content


def test_category_filter_matches_any_listed_category(client: Client, papers: dict) -> None:
    assert listed(client.get("/papers", {"category": "cs.IR"}).content.decode()) == ["2401.00001"]
    assert listed(client.get("/papers", {"category": "cs.CL"}).content.decode()) == ["2401.00001"]
    content = client.get("/papers", {"category": "math.AG"}).content.decode()
    assert listed(content) == []
    assert "No stored paper matches these filters." in content
    # An unknown category stays selectable so the form shows what is applied.
    assert '<option value="math.AG" selected>math.AG</option>' in content


def test_published_date_range_is_inclusive(client: Client, papers: dict) -> None:
    content = client.get("/papers", {"published_from": "2024-01-02", "published_to": "2024-02-10"}).content
    assert listed(content.decode()) == ["2402.00002", "2401.00001"]
    content = client.get("/papers", {"published_to": "2024-01-01"}).content
    assert listed(content.decode()) == ["hep-th/9901001"]


def test_bad_dates_are_reported_and_the_other_filters_still_apply(client: Client, papers: dict) -> None:
    response = client.get("/papers", {"category": "cs.LG", "published_from": "yesterday"})
    assert response.status_code == 200
    content = response.content.decode()
    assert "<li>published_from: Enter a valid date.</li>" in content
    assert listed(content) == ["2402.00002"]

    content = client.get(
        "/papers", {"published_from": "2024-02-01", "published_to": "2024-01-01"}, headers=HTMX
    ).content.decode()
    assert "<li>published_to: Must not be before the start date.</li>" in content
    assert listed(content) == ["2402.00002"]  # the valid start date still applies


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("language model", ["2401.00001"]),  # English stemming: "models" matches "model"
        ("transformer", ["2401.00001"]),  # in the abstract
        ("Witten", ["hep-th/9901001"]),  # an author
        ('"graph neural"', ["2402.00002"]),  # a phrase
        ("molecules OR strings", ["hep-th/9901001", "2402.00002"]),  # the shorter title ranks higher
        ("retrieval -graph", ["2401.00001"]),
        ("2402.00002v3", ["2402.00002"]),  # an arXiv id, version ignored
        ("hep-th/9901001", ["hep-th/9901001"]),
        ("quantum", []),
    ],
)
def test_text_search_over_title_authors_and_abstract(
    client: Client, papers: dict, text: str, expected: list[str]
) -> None:
    content = client.get("/papers", {"q": text}, headers=HTMX).content.decode()
    assert listed(content) == expected


def test_title_matches_rank_above_abstract_matches(client: Client) -> None:
    make_paper("2403.00003", "Notes", published="2024-03-01", summary="Protein folding, briefly.")
    make_paper("2401.00004", "Protein folding", published="2024-01-01", summary="Structures.")
    content = client.get("/papers", {"q": "protein"}).content.decode()
    assert listed(content) == ["2401.00004", "2403.00003"]


def test_pagination_keeps_the_filters(client: Client) -> None:
    for number in range(1, 24):
        make_paper(f"2401.{number:05d}", f"Paper {number}", published=f"2024-01-{number:02d}")
    content = client.get("/papers", {"category": "cs.CL"}).content.decode()
    assert len(listed(content)) == 20
    assert listed(content)[0] == "2401.00023"
    assert "Page 1 of 2" in content
    assert (
        '<a rel="next" href="?category=cs.CL&amp;page=2" hx-get="?category=cs.CL&amp;page=2" '
        'hx-target="#paper-results" hx-swap="outerHTML" hx-push-url="true">Next</a>' in content
    )
    content = client.get("/papers", {"category": "cs.CL", "page": "2"}, headers=HTMX).content.decode()
    assert listed(content) == ["2401.00003", "2401.00002", "2401.00001"]
    assert '<a rel="prev" href="?category=cs.CL&amp;page=1"' in content
    # Out-of-range pages show the last page rather than failing.
    assert listed(client.get("/papers", {"page": "99"}).content.decode())[0] == "2401.00003"


def test_titles_and_abstracts_are_escaped(client: Client) -> None:
    make_paper(
        "2405.66666",
        "<script>alert('x')</script> Attacks",
        summary="<img src=x onerror=alert(1)>",
        authors=["<b>Mallory</b>"],
        author_details=[{"name": "<b>Mallory</b>", "affiliations": ["<i>Evil</i> Corp"]}],
        comment="<script>c()</script>",
        url="javascript:alert(1)",
    )
    for url in ("/papers", "/papers/2405.66666"):
        content = client.get(url).content.decode()
        assert "<script>alert" not in content and "<img src=x" not in content and "<b>Mallory" not in content
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Attacks" in content
        assert "&lt;b&gt;Mallory&lt;/b&gt;" in content
    assert "&lt;img src=x onerror=alert(1)&gt;" in content
    assert "(&lt;i&gt;Evil&lt;/i&gt; Corp)" in content
    assert "&lt;script&gt;c()&lt;/script&gt;" in content
    assert "javascript:" not in content  # a non-http link from a feed is not rendered


# --- One paper -------------------------------------------------------------------------------


def test_detail_shows_metadata_versions_links_and_runs(client: Client) -> None:
    paper = make_paper(
        "2401.12345",
        "Attention is enough",
        published="2024-01-20",
        summary="We show attention suffices.",
        authors=["Ada Lovelace", "Charles Babbage"],
        author_details=[
            {"name": "Ada Lovelace", "affiliations": ["Analytical Society", "Royal Society"]},
            {"name": "Charles Babbage", "affiliations": []},
        ],
        categories=["cs.CL", "cs.LG", "I.2.7"],
        doi="10.1000/xyz.123",
        journal_ref="J. Attn. 1 (2024) 1-10",
        comment="12 pages, 3 figures",
        latest_version=2,
        updated=datetime(2024, 2, 1, 9, 30, tzinfo=UTC),
        url="https://arxiv.org/abs/2401.12345v2",
        pdf_url="https://arxiv.org/pdf/2401.12345v2",
    )
    PaperVersion.objects.create(paper=paper, version=1, updated=datetime(2024, 1, 20, 8, 0, tzinfo=UTC))
    PaperVersion.objects.create(paper=paper, version=2, updated=datetime(2024, 2, 1, 9, 30, tzinfo=UTC))
    run = SearchRun.objects.create(
        kind="search",
        cache_key="k",
        parameters={"query": "attention"},
        arxiv_params=[],
        status=RunStatus.SUCCEEDED,
    )
    SearchRun.objects.filter(pk=run.pk).update(created_at=datetime(2024, 3, 1, 12, 0, tzinfo=UTC))
    SearchRunPaper.objects.create(run=run, paper=paper, rank=3)

    response = client.get("/papers/2401.12345v2")  # a version suffix finds the paper
    assert response.status_code == 200
    content = response.content.decode()
    assert "<h1>Attention is enough</h1>" in content
    assert (
        '<li>Ada Lovelace <span class="affiliation">(Analytical Society; Royal Society)</span></li>'
        in content
    )
    assert "<li>Charles Babbage</li>" in content
    assert '<p class="abstract">We show attention suffices.</p>' in content
    assert '<dt>Primary category</dt><dd><span class="tag">cs.CL</span></dd>' in content
    assert re.findall(r'<a class="tag" href="/papers\?category=([^"]+)">', content) == [
        "cs.CL",
        "cs.LG",
        "I.2.7",
    ]
    assert (
        '<a href="https://doi.org/10.1000/xyz.123" rel="noopener noreferrer">10.1000/xyz.123</a>' in content
    )
    assert "<dt>Journal reference</dt><dd>J. Attn. 1 (2024) 1-10</dd>" in content
    assert "<dt>Comment</dt><dd>12 pages, 3 figures</dd>" in content
    assert "(latest version v2)" in content
    assert re.findall(r'<li><a href="([^"]+)" rel="noopener noreferrer">([^<]+)</a></li>', content) == [
        ("https://arxiv.org/abs/2401.12345v2", "Abstract on arXiv"),
        ("https://arxiv.org/pdf/2401.12345v2", "PDF"),
        ("https://doi.org/10.1000/xyz.123", "DOI 10.1000/xyz.123"),
    ]
    assert re.findall(r'<tr><th scope="row">(v\d)</th>\s*<td><time[^>]*>([^<]+)</time>', content) == [
        ("v1", "2024-01-20 08:00"),
        ("v2", "2024-02-01 09:30"),
    ]
    assert (
        f'<a href="/papers/runs/{run.pk}"><code>{run.pk}</code></a> '
        f'<a href="/admin/arxiv/searchrun/{run.pk}/change/">admin</a></th>'  # the admin link: staff
    ) in content
    assert re.search(
        r"<td>attention</td>\s*<td>3</td>\s*<td><time[^>]*>2024-03-01 12:00</time></td>", content
    )

    # The runs carry agents' queries: without a page role the page leaves them out.
    content = Client().get("/papers/2401.12345").content.decode()
    assert "<h1>Attention is enough</h1>" in content
    assert "Found by" not in content and "/papers/runs/" not in content and "attention</td>" not in content


def test_unknown_paper_is_a_404_page(client: Client) -> None:
    response = client.get("/papers/2401.99999")
    assert response.status_code == 404
    content = response.content.decode()
    assert "<h1>Paper not found</h1>" in content
    assert "No stored paper has the arXiv id <code>2401.99999</code>." in content

    response = client.get("/papers/<script>x</script>")
    assert response.status_code == 404
    assert "<code>&lt;script&gt;x&lt;/script&gt;</code>" in response.content.decode()


# --- Live search -----------------------------------------------------------------------------

PAGE = {
    "items": [
        {
            "id": "2401.00001",
            "title": "Large language models as retrievers",
            "summary": "We study retrieval with transformers.",
            "published": "2024-01-02T00:00:00+00:00",
            "updated": "2024-01-02T00:00:00+00:00",
            "authors": ["Grace Hopper", "Alan Turing"],
            "url": "https://arxiv.org/abs/2401.00001v1",
            "categories": ["cs.CL"],
            "primaryCategory": "cs.CL",
        }
    ],
    "totalResults": 41,
    "start": 0,
    "itemsPerPage": 1,
    "nextStart": 1,
}
FORM = {"query": "language models", "categories": "cs.CL", "max_results": "1", "sort_by": "relevance"}


def _answered_run(query: str, **fields) -> SearchRun:
    """A finished run for this search, as a worker would leave it (the cache the page hits)."""
    run = search_submit(payload=SearchIn(query=query, **fields))  # queued; never sent: nothing commits
    run.status, run.result, run.finished_at = RunStatus.SUCCEEDED, PAGE, timezone.now()
    run.save()
    return run


def test_live_search_answered_from_a_cached_run(client: Client, papers: dict) -> None:
    source = _answered_run("language models", categories=["cs.CL"], maxResults=1, sortBy="relevance")
    response = client.post("/papers/live", FORM, headers=HTMX)
    assert response.status_code == 200
    assert response["HX-Trigger"] == "papers-changed"
    content = response.content.decode()
    assert content.startswith('<div id="live-search" class="live-search">')
    run = SearchRun.objects.exclude(pk=source.pk).get()
    assert run.cached_from_id == source.pk
    assert run.parameters["query"] == "language models"
    assert (
        "41 results on arXiv; showing 1 (from a recent identical search).\n"
        f'      Run <a href="/papers/runs/{run.pk}"><code>{run.pk}</code></a>.' in content
    )
    assert '<a href="/papers/2401.00001">Large language models as retrievers</a>' in content
    assert "<code>2401.00001</code> · 2024-01-02 · cs.CL" in content
    assert '<span class="paper-authors">Grace Hopper, Alan Turing</span>' in content

    # Without HTMX the same POST renders the whole live search page.
    response = client.post("/papers/live", FORM)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert "<h1>Search arXiv</h1>" in content
    assert 'value="language models"' in content  # the form keeps what was asked


def test_live_search_still_running_shows_the_run_to_follow(client: Client, settings) -> None:
    settings.ARXIV_WAIT_SECONDS = 0.1  # nothing commits in this test, so no worker ever takes it
    response = client.post("/papers/live", {**FORM, "query": "slow search"}, headers=HTMX)
    assert response.status_code == 200
    run = SearchRun.objects.get()
    assert run.status == RunStatus.QUEUED
    content = response.content.decode()
    assert f"Still running on arXiv (it may be waiting for its turn): run <code>{run.pk}</code>." in content
    assert (
        f'hx-get="/papers/runs/{run.pk}" hx-trigger="every 2s" hx-target="this" hx-swap="outerHTML"'
        in content
    )
    assert "HX-Trigger" not in response

    # The run's page shows it queued; its fragment is what the poll swaps in.
    page = client.get(f"/papers/runs/{run.pk}")
    assert page.status_code == 200
    assert "<dt>Query</dt><dd>slow search</dd>" in page.content.decode()
    fragment = client.get(f"/papers/runs/{run.pk}", headers=HTMX)
    assert fragment.status_code == 200
    assert fragment.content.decode().startswith('<div id="live-results" class="live-results live-running"')

    run.status, run.result, run.finished_at = RunStatus.SUCCEEDED, PAGE, timezone.now()
    run.save()
    fragment = client.get(f"/papers/runs/{run.pk}", headers=HTMX).content.decode()
    assert fragment.startswith('<div id="live-results" class="live-results live-results" aria-live="polite">')
    assert "41 results on arXiv; showing 1." in fragment
    assert "every 2s" not in fragment


def _finish_as(monkeypatch, **fields) -> None:
    """The worker's verdict, applied while the page waits for the run."""

    def wait(*, run: SearchRun, timeout: float) -> SearchRun:
        for name, value in fields.items():
            setattr(run, name, value)
        run.finished_at = timezone.now()
        run.save()
        return run

    monkeypatch.setattr(arxiv_views.services, "search_run_wait", wait)


def test_live_search_rate_limited_shows_retry_after(client: Client, monkeypatch) -> None:
    _finish_as(
        monkeypatch,
        status=RunStatus.RATE_LIMITED,
        error="arXiv's queue is 40.0 s long, past this run's deadline; retry later.",
        error_type="rate_limited",
        retry_after=40.2,
    )
    response = client.post("/papers/live", FORM)
    assert response.status_code == 429
    run = SearchRun.objects.get()
    assert (
        "Rate limited: [brAInwav] arXiv&#x27;s queue is 40.0 s long, past this run&#x27;s deadline; "
        "retry later. "
        f"Retry after 41 s. Run <code>{run.pk}</code>." in response.content.decode()
    )
    fragment = client.post("/papers/live", FORM, headers=HTMX)
    assert fragment.status_code == 200  # htmx swaps only 2xx
    assert "Retry after 41 s." in fragment.content.decode()


def test_live_search_while_arxiv_is_down_shows_stored_papers_and_why(client: Client, monkeypatch) -> None:
    reason = (
        "[brAInwav] arXiv is unavailable (arXiv is busy (HTTP 503); retry later); no stored paper matches."
    )
    _finish_as(
        monkeypatch,
        status=RunStatus.DEGRADED,
        error="arXiv is busy (HTTP 503); retry later",
        error_type="retryable",
        retryable=True,
        result={
            "degraded": True,
            "reason": reason,
            "items": [],
            "totalResults": 0,
            "start": 0,
            "itemsPerPage": 10,
        },
    )
    response = client.post("/papers/live", FORM, headers=HTMX)
    assert response.status_code == 200
    content = response.content.decode()
    assert f'<p class="notice notice-warn" role="status">{reason}</p>' in content
    assert "0 results among the stored papers; showing 0." in content
    assert "arXiv failed" not in content


def test_live_search_upstream_failure_shows_arxiv_message(client: Client, monkeypatch) -> None:
    _finish_as(
        monkeypatch,
        status=RunStatus.FAILED,
        error="arXiv rejected the query: <b>malformed</b> id",
        error_type="terminal",
    )
    response = client.post("/papers/live", FORM, headers=HTMX)
    assert response.status_code == 200
    run = SearchRun.objects.get()
    assert (
        '<p class="notice notice-error" role="alert">arXiv failed: [brAInwav] arXiv rejected the query: '
        f"&lt;b&gt;malformed&lt;/b&gt; id Run <code>{run.pk}</code>.</p>" in response.content.decode()
    )
    assert client.post("/papers/live", FORM).status_code == 502


def test_live_search_with_the_feature_off(client: Client, settings, papers: dict) -> None:
    settings.FEATURE_ARXIV = False
    message = "[brAInwav] arXiv search is switched off (FEATURE_ARXIV is false); use local knowledge instead."
    response = client.post("/papers/live", FORM, headers=HTMX)
    assert response.status_code == 200
    assert f'<p class="notice notice-warn" role="alert">{message}</p>' in response.content.decode()
    assert SearchRun.objects.count() == 0
    assert client.post("/papers/live", FORM).status_code == 503
    # The form says so before anyone tries; stored papers stay browsable.
    content = client.get("/papers/live").content.decode()
    assert message in content
    assert '<button type="submit" disabled>Search arXiv</button>' in content
    content = client.get("/papers").content.decode()
    assert listed(content) == ["2402.00002", "2401.00001", "hep-th/9901001"]
    assert '<button type="submit" disabled>Search arXiv</button>' in content
    assert f'<p class="notice notice-warn" role="alert">{message}</p>' in content


def test_live_search_bad_input_names_the_field_and_sends_nothing(client: Client) -> None:
    response = client.post(
        "/papers/live", {"query": "x", "max_results": "51", "sort_by": "relevance"}, headers=HTMX
    )
    assert response.status_code == 200
    content = response.content.decode()
    assert "Ensure this value has at least 2 characters (it has 1)." in content
    assert "Ensure this value is less than or equal to 50." in content
    assert "Check the search form: nothing was sent to arXiv." in content
    response = client.post("/papers/live", {**FORM, "date_from": "2024-02-01", "date_to": "2024-01-01"})
    assert response.status_code == 422
    assert "<li>dateFrom must not be after dateTo</li>" in response.content.decode()
    assert SearchRun.objects.count() == 0


def test_live_search_requires_csrf(papers: dict) -> None:
    client = role_client("arxiv.add_searchrun", enforce_csrf_checks=True)
    assert client.post("/papers/live", FORM).status_code == 403
    page = client.get("/papers")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    _answered_run("language models", categories=["cs.CL"], maxResults=1, sortBy="relevance")
    response = client.post("/papers/live", FORM, headers={**HTMX, "X-CSRFToken": token})
    assert response.status_code == 200
    assert "41 results on arXiv" in response.content.decode()


def test_unknown_run_is_a_404_page(client: Client) -> None:
    response = client.get("/papers/runs/00000000-0000-0000-0000-000000000000")
    assert response.status_code == 404
    assert "No arXiv run has the id <code>00000000-0000-0000-0000-000000000000</code>." in (
        response.content.decode()
    )


def test_runs_older_than_the_cache_window_are_not_reused(client: Client, settings) -> None:
    settings.ARXIV_WAIT_SECONDS = 0.05
    source = _answered_run("language models", categories=["cs.CL"], maxResults=1, sortBy="relevance")
    SearchRun.objects.filter(pk=source.pk).update(finished_at=timezone.now() - timedelta(hours=2))
    content = client.post("/papers/live", FORM, headers=HTMX).content.decode()
    assert "Still running on arXiv" in content
