"""Reads of stored arXiv runs and papers."""

from __future__ import annotations

import re
from datetime import date
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
