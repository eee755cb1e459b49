"""Reads of stored arXiv runs and papers."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any
from uuid import UUID

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db.models import F, Func, Q, QuerySet, TextField
from django.db.models.functions import Cast

from apps.arxiv.models import Paper, SearchRun, SearchRunPaper
from apps.core.errors import NotFound

_VERSION_SUFFIX = re.compile(r"v\d+$")


def search_run_get(*, run_id: UUID | str) -> SearchRun:
    run = SearchRun.objects.select_related("cached_from").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No arXiv run has the id {run_id}.", details={"runId": str(run_id)})
    return run


RECENT_RUNS = 20


def search_runs_recent(*, status: str | None = None, limit: int = RECENT_RUNS) -> list[SearchRun]:
    """The newest runs (of one status, when given), each with the run it was answered from."""
    runs = SearchRun.objects.select_related("cached_from")
    if status:
        runs = runs.filter(status=status)
    return list(runs[:limit])


# --- Pages (/papers) ---------------------------------------------------------------------


def paper_search(
    *,
    text: str = "",
    category: str = "",
    published_from: date | None = None,
    published_to: date | None = None,
) -> QuerySet[Paper]:
    """Stored papers matching the page's filters, best match first when there is search text.

    Text is Postgres full text (``websearch_to_tsquery``: quoted phrases, ``OR``, ``-word``)
    over the title (weight A, English stemming), authors (B, no stemming: names are not
    English words) and abstract (C); an exact arXiv id (with or without version) matches
    that paper too. The vectors are computed per query: fine for the thousands of papers
    runs store; a stored generated column with a GIN index is the step up if that grows.
    Dates are inclusive days of ``published`` (version 1) in the current time zone.
    """
    papers = Paper.objects.all()
    if category:
        papers = papers.filter(categories__contains=[category])
    if published_from:
        papers = papers.filter(published__date__gte=published_from)
    if published_to:
        papers = papers.filter(published__date__lte=published_to)
    text = text.strip()
    if not text:
        return papers.order_by("-published", "arxiv_id")
    vector = (
        SearchVector("title", weight="A", config="english")
        + SearchVector(Cast("authors", TextField()), weight="B", config="simple")
        + SearchVector("summary", weight="C", config="english")
    )
    english = SearchQuery(text, search_type="websearch", config="english")
    simple = SearchQuery(text, search_type="websearch", config="simple")
    base_id = _VERSION_SUFFIX.sub("", text)
    return (
        papers.annotate(search=vector, rank=SearchRank(vector, english | simple))
        .filter(Q(search=english) | Q(search=simple) | Q(arxiv_id__iexact=base_id))
        .order_by("-rank", "-published", "arxiv_id")
    )


def paper_item(paper: Paper) -> dict[str, Any]:
    """A stored paper as an item of an arXiv page (the keys ``apps.arxiv.parsing`` gives a live one)."""
    version = paper.latest_version
    item: dict[str, Any] = {"id": paper.arxiv_id}
    if version is not None:
        item |= {"versionedId": f"{paper.arxiv_id}v{version}", "version": version}
    return item | {
        "title": paper.title,
        "summary": paper.summary,
        "published": _iso(paper.published),
        "updated": _iso(paper.updated),
        "authors": list(paper.authors),
        "authorDetails": list(paper.author_details),
        "url": paper.url,
        "pdfUrl": paper.pdf_url,
        "categories": list(paper.categories),
        "primaryCategory": paper.primary_category,
        "doi": paper.doi,
        "journalRef": paper.journal_ref,
        "comment": paper.comment,
    }


def _iso(value: datetime) -> str:
    # arXiv's own form: UTC, second precision, "Z".
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stored_search_page(*, parameters: dict[str, Any]) -> dict[str, Any]:
    """A search's page from the stored papers alone (the answer while arXiv is down): the API's
    query as full text (:func:`paper_search`), its categories (any of them) and inclusive dates,
    paged by its ``start`` and ``maxResults``, best match first."""
    papers = paper_search(
        text=_as_websearch(str(parameters.get("query") or "")),
        published_from=_day(parameters.get("dateFrom")),
        published_to=_day(parameters.get("dateTo")),
    )
    categories = list(parameters.get("categories") or [])
    if categories:
        papers = papers.filter(categories__overlap=categories)
    start = int(parameters.get("start") or 0)
    size = int(parameters.get("maxResults") or 10)
    total = papers.count()
    page = [paper_item(paper) for paper in papers[start : start + size]]
    answer: dict[str, Any] = {"items": page, "totalResults": total, "start": start, "itemsPerPage": size}
    if start + size < total:
        answer["nextStart"] = start + size
    return answer


# arXiv's syntax (docs/api.md "arXiv") read as Postgres websearch text: field prefixes dropped (the
# stored search covers title, authors and abstract at once), ANDNOT as "-", AND implied; OR and
# quoted phrases mean the same in both.
_FIELD_PREFIX = re.compile(r"\b(?:ti|au|abs|co|jr|cat|rn|all):", re.IGNORECASE)
_ANDNOT = re.compile(r"\bANDNOT\s+")
_AND = re.compile(r"\bAND\b")


def _as_websearch(query: str) -> str:
    text = _ANDNOT.sub("-", _FIELD_PREFIX.sub("", query))
    return _AND.sub(" ", text).replace("(", " ").replace(")", " ").strip()


def _day(value: Any) -> date | None:
    return date.fromisoformat(value) if value else None


def paper_categories() -> list[str]:
    """Every category some stored paper is filed under, sorted."""
    return list(
        Paper.objects.annotate(category=Func(F("categories"), function="unnest"))
        .values_list("category", flat=True)
        .distinct()
        .order_by("category")
    )


def paper_get(*, arxiv_id: str) -> Paper:
    """A stored paper by its base id (a version suffix is ignored), with its versions."""
    base_id = _VERSION_SUFFIX.sub("", arxiv_id.strip())
    paper = Paper.objects.prefetch_related("versions").filter(arxiv_id=base_id).first()
    if paper is None:
        raise NotFound(f"No stored paper has the arXiv id {arxiv_id}.", details={"arxivId": arxiv_id})
    return paper


def paper_runs(*, paper: Paper, limit: int = 50) -> list[SearchRunPaper]:
    """The runs that found this paper (newest first) with the rank it had in each."""
    return list(
        SearchRunPaper.objects.filter(paper=paper).select_related("run").order_by("-run__created_at")[:limit]
    )
