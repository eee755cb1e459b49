"""The arXiv admin: papers and search runs are read-only provenance, with filters and search."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from apps.arxiv.models import Paper, PaperVersion, RunStatus, SearchRun, SearchRunPaper

pytestmark = pytest.mark.django_db

PAPERS = "/admin/arxiv/paper/"
RUNS = "/admin/arxiv/searchrun/"


@pytest.fixture
def paper() -> Paper:
    paper = Paper.objects.create(
        arxiv_id="2401.12345",
        latest_version=2,
        title="Attention is <em>enough</em>",
        summary="We show attention suffices.",
        authors=["Ada Lovelace", "Charles Babbage"],
        author_details=[
            {"name": "Ada Lovelace", "affiliations": ["Analytical Society"]},
            {"name": "Charles Babbage", "affiliations": []},
        ],
        published=datetime(2024, 1, 20, 8, 0, tzinfo=UTC),
        updated=datetime(2024, 2, 1, 9, 30, tzinfo=UTC),
        url="https://arxiv.org/abs/2401.12345v2",
        categories=["cs.CL", "cs.LG"],
        primary_category="cs.CL",
        doi="10.1000/xyz.123",
    )
    PaperVersion.objects.create(paper=paper, version=1, updated=datetime(2024, 1, 20, 8, 0, tzinfo=UTC))
    PaperVersion.objects.create(paper=paper, version=2, updated=datetime(2024, 2, 1, 9, 30, tzinfo=UTC))
    return paper


@pytest.fixture
def runs(paper: Paper) -> dict[str, SearchRun]:
    source = SearchRun.objects.create(
        kind="search",
        cache_key="a" * 64,
        parameters={"query": "attention", "maxResults": 1},
        arxiv_params=[["search_query", "(ti:attention OR abs:attention)"], ["max_results", "1"]],
        status=RunStatus.SUCCEEDED,
        attempts=2,
        rate_limit_waits=1,
        waited_seconds=2.5,
        duration_ms=3120.0,
        correlation_id="corr-source",
        result={
            "items": [{"id": "2401.12345"}],
            "totalResults": 7,
            "start": 0,
            "itemsPerPage": 1,
            "nextStart": 1,
        },
    )
    SearchRunPaper.objects.create(run=source, paper=paper, rank=1)
    cached = SearchRun.objects.create(
        kind="search",
        cache_key="a" * 64,
        parameters={"query": "attention", "maxResults": 1},
        arxiv_params=source.arxiv_params,
        status=RunStatus.SUCCEEDED,
        cached_from=source,
        correlation_id="corr-cached",
    )
    failed = SearchRun.objects.create(
        kind="lookup",
        cache_key="b" * 64,
        parameters={"ids": ["2401.99999"]},
        arxiv_params=[["id_list", "2401.99999"]],
        status=RunStatus.FAILED,
        attempts=1,
        error="arXiv: <b>incorrect id format</b>",
        error_type="terminal",
        correlation_id="corr-failed",
    )
    return {"source": source, "cached": cached, "failed": failed}


@pytest.fixture
def viewer() -> Client:
    """A staff member with only the view permissions (what an analyst would get)."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(codename__in=["view_paper", "view_searchrun", "view_paperversion"])
    )
    client = Client()
    client.force_login(user)
    return client


def test_paper_list_and_detail_are_read_only(admin_client: Client, paper: Paper) -> None:
    response = admin_client.get(PAPERS)
    assert response.status_code == 200
    content = response.content.decode()
    assert "Attention is &lt;em&gt;enough&lt;/em&gt;" in content
    assert 'href="/admin/arxiv/paper/add/"' not in content
    assert "delete_selected" not in content

    response = admin_client.get(f"{PAPERS}{paper.pk}/change/")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="_save"' not in content and "Delete" not in content
    assert '<div class="readonly">Ada Lovelace (Analytical Society), Charles Babbage</div>' in content
    assert '<a href="/papers/2401.12345">/papers/2401.12345</a>' in content
    # Versions inline, read-only.
    assert re.findall(r'<td class="field-version">\s*<p>(\d+)</p>', content) == ["1", "2"]
    assert admin_client.get(f"{PAPERS}add/").status_code == 403
    assert admin_client.post(f"{PAPERS}{paper.pk}/change/", {"title": "x"}).status_code == 403
    assert admin_client.post(f"{PAPERS}{paper.pk}/delete/", {"post": "yes"}).status_code == 403
    paper.refresh_from_db()
    assert paper.title == "Attention is <em>enough</em>"


def test_paper_search_and_filter(admin_client: Client, paper: Paper) -> None:
    assert "2401.12345" in admin_client.get(PAPERS, {"q": "2401.12345"}).content.decode()
    content = admin_client.get(PAPERS, {"q": "nothing-like-this"}).content.decode()
    assert "0 papers" in content
    content = admin_client.get(PAPERS, {"primary_category": "cs.LG"}).content.decode()
    assert "0 papers" in content


def test_run_list_shows_status_attempts_waits_and_filters(admin_client: Client, runs: dict) -> None:
    response = admin_client.get(RUNS)
    assert response.status_code == 200
    content = response.content.decode()
    for column in ("kind", "query", "status", "attempts_short", "waits_short", "duration_ms", "is_cached"):
        assert re.search(rf'<th scope="col" class="(sortable )?column-{column}[ "]', content)
    assert "3 search runs" in content
    assert '<td class="field-attempts_short">2</td><td class="field-waits_short">1</td>' in content
    assert '<td class="field-duration_ms">3120.0</td>' in content
    assert 'href="/admin/arxiv/searchrun/add/"' not in content

    assert "1 search run" in admin_client.get(RUNS, {"status__exact": "failed"}).content.decode()
    assert "1 search run" in admin_client.get(RUNS, {"kind__exact": "lookup"}).content.decode()
    content = admin_client.get(RUNS, {"cached": "yes"}).content.decode()
    assert "1 search run" in content and str(runs["cached"].pk) in content
    assert "2 search runs" in admin_client.get(RUNS, {"cached": "no"}).content.decode()


def test_run_search_by_id_or_correlation_id(admin_client: Client, runs: dict) -> None:
    content = admin_client.get(RUNS, {"q": str(runs["failed"].pk)}).content.decode()
    assert "1 search run" in content and str(runs["failed"].pk) in content
    content = admin_client.get(RUNS, {"q": "corr-cached"}).content.decode()
    assert "1 search run" in content and str(runs["cached"].pk) in content
    response = admin_client.get(RUNS, {"q": "not-a-uuid-or-id"})
    assert response.status_code == 200
    assert "0 search runs" in response.content.decode()


def test_run_detail_shows_parameters_result_papers_and_error(admin_client: Client, runs: dict) -> None:
    source, cached, failed = runs["source"], runs["cached"], runs["failed"]
    content = admin_client.get(f"{RUNS}{source.pk}/change/").content.decode()
    assert 'name="_save"' not in content
    assert "&quot;query&quot;: &quot;attention&quot;" in content  # parameters, pretty JSON
    assert "(ti:attention OR abs:attention)" in content
    assert "1 item(s) of 7 total; start 0, next start 1" in content
    assert '<li><a href="/admin/arxiv/paper/' in content
    assert "2401.12345</a> Attention is &lt;em&gt;enough&lt;/em&gt;</li>" in content
    assert f'<a href="/papers/runs/{source.pk}">' in content

    content = admin_client.get(f"{RUNS}{cached.pk}/change/").content.decode()
    assert f'<a href="/admin/arxiv/searchrun/{source.pk}/change/">{source.pk}</a>' in content
    assert "1 item(s) of 7 total" in content  # the page it was answered with

    content = admin_client.get(f"{RUNS}{failed.pk}/change/").content.decode()
    assert "arXiv: &lt;b&gt;incorrect id format&lt;/b&gt;" in content
    assert "2401.99999" in content

    assert admin_client.post(f"{RUNS}{failed.pk}/change/", {"status": "queued"}).status_code == 403
    assert admin_client.post(f"{RUNS}{failed.pk}/delete/", {"post": "yes"}).status_code == 403
    failed.refresh_from_db()
    assert failed.status == RunStatus.FAILED


def test_staff_with_view_permission_only_can_read(viewer: Client, runs: dict, paper: Paper) -> None:
    assert viewer.get(RUNS).status_code == 200
    assert viewer.get(f"{RUNS}{runs['source'].pk}/change/").status_code == 200
    assert viewer.get(f"{PAPERS}{paper.pk}/change/").status_code == 200


def test_anonymous_is_sent_to_login(client: Client) -> None:
    response = client.get(RUNS)
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=/admin/arxiv/searchrun/"
