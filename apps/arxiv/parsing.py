"""Parse arXiv API Atom feeds into CortexWeb's normalised paper records.

Elements are found by namespace URI, never by prefix or position: the 2026
serialisation declares the namespaces once on ``<feed>`` and orders entry
children differently from the classic one, which declares ``xmlns:`` inline
on every ``opensearch:``/``arxiv:`` element. The XML parser is defusedxml's
with DTDs refused outright: an arXiv feed never has a DOCTYPE, so a body that
declares one (entity expansion, external entities) is rejected before any
entity is read.

One entry becomes (optional keys are absent, never ``null``)::

    {
      "id": "1605.08386",               # base id, no prefix, no version
      "versionedId": "1605.08386v1",    # absent if arXiv sent an unversioned id
      "version": 1,                     # absent likewise
      "title": "...", "summary": "...", # whitespace collapsed to single spaces
      "published": "2016-05-26T17:59:46Z",   # v1 date, UTC, second precision
      "updated": "2016-05-26T17:59:46Z",     # this version's date
      "authors": ["Caprice Stanley", ...],   # names in author order (seed contract)
      "authorDetails": [{"name": "Caprice Stanley", "affiliations": []}, ...],
      "url": "https://arxiv.org/abs/1605.08386v1",   # arxiv.org links always https
      "pdfUrl": "https://arxiv.org/pdf/1605.08386v1",
      "categories": ["math.CO", "math.ST"],  # every <category> term, in order, verbatim
      "primaryCategory": "math.CO",
      "doi": "10.1103/PhysRevB.85.115117",   # bare DOI (first one if several)
      "journalRef": "...", "comment": "...",
    }

``categories`` keeps non-arXiv classification terms (MSC such as
``03B70, 68Q99``, ACM such as ``F.4.1; F.4.m``) as arXiv sent them. The page
is :class:`ArxivPage`; its ``nextStart`` is absent on the last page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict
from xml.etree.ElementTree import Element

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import ParseError
from defusedxml.ElementTree import fromstring as _defused_fromstring

from apps.arxiv.query import MAX_OFFSET, split_version
from apps.core.errors import UpstreamError

ATOM = "http://www.w3.org/2005/Atom"
OPENSEARCH = "http://a9.com/-/spec/opensearch/1.1/"
ARXIV = "http://arxiv.org/schemas/atom"

_A = f"{{{ATOM}}}"
_OS = f"{{{OPENSEARCH}}}"
_X = f"{{{ARXIV}}}"

_ABS_PREFIX = re.compile(r"^https?://(?:export\.|www\.)?arxiv\.org/abs/", re.IGNORECASE)
_ERROR_ID = re.compile(r"^https?://(?:export\.|www\.)?arxiv\.org/api/errors(?:#(?P<slug>.*))?$")
_ARXIV_HTTP = re.compile(r"^http://((?:export\.|www\.)?arxiv\.org/)", re.IGNORECASE)
_DOI_RESOLVER = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:)", re.IGNORECASE)
_FEED_TITLE = re.compile(r"^arxiv query:\s*", re.IGNORECASE)


class ArxivFeedError(UpstreamError):
    """arXiv's body is not a usable Atom feed (malformed, unsafe or incomplete): terminal."""

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details, retryable=False)


class ArxivApiError(UpstreamError):
    """arXiv answered with an error feed (``…/api/errors#…``): terminal, carries arXiv's message."""

    def __init__(self, arxiv_message: str, *, slug: str = "", details: dict[str, Any] | None = None) -> None:
        self.arxiv_message = arxiv_message
        self.slug = slug
        super().__init__(
            f"arXiv rejected the request: {arxiv_message}",
            details={"arxivMessage": arxiv_message, "arxivError": slug, **(details or {})},
            retryable=False,
        )


class ArxivAuthor(TypedDict):
    name: str
    affiliations: list[str]


class ArxivEntry(TypedDict):
    id: str
    versionedId: NotRequired[str]
    version: NotRequired[int]
    title: str
    summary: str
    published: str
    updated: str
    authors: list[str]
    authorDetails: list[ArxivAuthor]
    url: str
    pdfUrl: NotRequired[str]
    categories: list[str]
    primaryCategory: NotRequired[str]
    doi: NotRequired[str]
    journalRef: NotRequired[str]
    comment: NotRequired[str]


@dataclass(frozen=True)
class ArxivPage:
    """One page of results with arXiv's OpenSearch counters.

    ``next_start`` is ``None`` — and ``nextStart`` absent from :meth:`as_dict`
    — when this page is empty, reaches ``total_results``, or the next offset
    would pass arXiv's hard limit of 30000.
    """

    items: tuple[ArxivEntry, ...]
    total_results: int
    start: int
    items_per_page: int
    feed_query: str = field(default="", compare=False)  # arXiv's canonicalised query (feed title)

    @property
    def next_start(self) -> int | None:
        end = self.start + len(self.items)
        if not self.items or end >= self.total_results or end >= MAX_OFFSET:
            return None
        return end

    def as_dict(self) -> dict[str, Any]:
        page: dict[str, Any] = {
            "items": [dict(item) for item in self.items],
            "totalResults": self.total_results,
            "start": self.start,
            "itemsPerPage": self.items_per_page,
        }
        if self.next_start is not None:
            page["nextStart"] = self.next_start
        return page


def parse_xml(content: bytes | str) -> Element:
    """The document element, parsed with DTDs, entities and external references refused."""
    try:
        return _defused_fromstring(content, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise ArxivFeedError(
            "arXiv's response declares a DTD or entities; refused as unsafe",
            details={"reason": "unsafe_xml", "detail": type(exc).__name__},
        ) from exc
    except ParseError as exc:
        raise ArxivFeedError(
            f"arXiv's response is not well-formed XML ({exc})", details={"reason": "malformed_xml"}
        ) from exc


def parse_feed(content: bytes | str) -> ArxivPage:
    """Parse one API response body.

    Raises :class:`ArxivApiError` for an error feed and :class:`ArxivFeedError`
    for anything that is not an arXiv Atom feed. An empty feed is a page
    with no items.
    """
    root = parse_xml(content)
    if root.tag != f"{_A}feed":
        raise ArxivFeedError(
            f"arXiv's response is not an Atom feed (root element {root.tag!r})",
            details={"reason": "not_atom"},
        )
    entries = root.findall(f"{_A}entry")
    for entry in entries:
        _raise_if_error(entry)
    items = tuple(parse_entry(entry) for entry in entries)
    return ArxivPage(
        items=items,
        total_results=_counter(root, "totalResults", default=len(items)),
        start=_counter(root, "startIndex", default=0),
        items_per_page=_counter(root, "itemsPerPage", default=len(items)),
        feed_query=_FEED_TITLE.sub("", _text(root.find(f"{_A}title"))),
    )


def parse_entry(entry: Element) -> ArxivEntry:
    raw_id = _text(entry.find(f"{_A}id"))
    if not raw_id:
        raise ArxivFeedError("an arXiv entry has no <id>", details={"reason": "missing_id"})
    versioned = _ABS_PREFIX.sub("", raw_id)
    base, version = split_version(versioned)
    links = _links(entry)
    item: dict[str, Any] = {"id": base}
    if version is not None:
        item["versionedId"] = versioned
        item["version"] = version
    authors = [_author(node) for node in entry.findall(f"{_A}author")]
    item.update(
        title=_text(entry.find(f"{_A}title")),
        summary=_text(entry.find(f"{_A}summary")),
        published=_timestamp(entry, "published", raw_id),
        updated=_timestamp(entry, "updated", raw_id),
        authors=[author["name"] for author in authors],
        authorDetails=authors,
        url=links.get("alternate") or f"https://arxiv.org/abs/{versioned}",
    )
    if "pdf" in links:
        item["pdfUrl"] = links["pdf"]
    categories = _unique(_collapse(node.get("term", "")) for node in entry.findall(f"{_A}category"))
    item["categories"] = categories
    primary = entry.find(f"{_X}primary_category")
    primary_term = _collapse(primary.get("term", "")) if primary is not None else ""
    if primary_term or categories:
        item["primaryCategory"] = primary_term or categories[0]
    doi = _doi(_text(entry.find(f"{_X}doi")) or links.get("doi", ""))
    optional = {
        "doi": doi,
        "journalRef": _text(entry.find(f"{_X}journal_ref")),
        "comment": _text(entry.find(f"{_X}comment")),
    }
    item.update({key: value for key, value in optional.items() if value})
    return item  # type: ignore[return-value]  # built key by key to keep absent keys absent


# --- helpers ----------------------------------------------------------------------------


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _text(node: Element | None) -> str:
    return _collapse("".join(node.itertext())) if node is not None else ""


def _unique(values: Any) -> list[str]:
    result: list[str] = []
    for value in values:
        if value and value not in result:
            result.append(value)
    return result


def _raise_if_error(entry: Element) -> None:
    match = _ERROR_ID.match(_text(entry.find(f"{_A}id")))
    if match is not None:
        message = _text(entry.find(f"{_A}summary")) or _text(entry.find(f"{_A}title")) or "unknown error"
        raise ArxivApiError(message, slug=match.group("slug") or "")


def _counter(root: Element, name: str, *, default: int) -> int:
    node = root.find(f"{_OS}{name}")
    if node is None:
        return default
    text = _text(node)
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ArxivFeedError(
            f"arXiv's opensearch:{name} is not a count: {text!r}", details={"reason": "bad_counter"}
        )
    return value


def _timestamp(entry: Element, name: str, raw_id: str) -> str:
    text = _text(entry.find(f"{_A}{name}"))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ArxivFeedError(
            f"arXiv entry {raw_id} has no valid <{name}> ({text!r})", details={"reason": "bad_date"}
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # arXiv's times are GMT
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _https(url: str) -> str:
    return _ARXIV_HTTP.sub(r"https://\1", url.strip())


def _links(entry: Element) -> dict[str, str]:
    """``alternate`` (abstract page), ``pdf`` and ``doi`` hrefs; the first of each wins."""
    found: dict[str, str] = {}
    for link in entry.findall(f"{_A}link"):
        href = link.get("href", "").strip()
        if not href:
            continue
        rel, title, kind = link.get("rel", "alternate"), link.get("title", ""), link.get("type", "")
        if title == "doi":
            found.setdefault("doi", href)
        elif title == "pdf" or kind == "application/pdf":
            found.setdefault("pdf", _https(href))
        elif rel == "alternate":
            found.setdefault("alternate", _https(href))
    return found


def _doi(text: str) -> str:
    parts = text.split(maxsplit=1)
    first = parts[0] if parts else ""
    return _DOI_RESOLVER.sub("", first)


def _author(node: Element) -> ArxivAuthor:
    return {
        "name": _text(node.find(f"{_A}name")),
        "affiliations": _unique(_text(aff) for aff in node.findall(f"{_X}affiliation")),
    }
