"""Query building: free text, prefixes, operators, phrases, filters, ids, and the exact URL."""

from __future__ import annotations

from datetime import date, datetime

import httpx
import pytest

from apps.arxiv.query import (
    build_id_params,
    build_search_params,
    build_search_query,
    compile_query,
    normalize_arxiv_id,
    normalize_id_list,
    split_version,
    submitted_date_range,
)
from apps.core.errors import ValidationFailed

API = "https://export.arxiv.org/api/query"


def url_of(params: list[tuple[str, str]]) -> str:
    return str(httpx.Request("GET", API, params=params).url)


def failure(call, *args, **kwargs) -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        call(*args, **kwargs)
    return caught.value


# --- free text ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "compiled"),
    [
        ("transformers", "(ti:transformers OR abs:transformers)"),
        ("graph  neural", "(ti:graph OR abs:graph) AND (ti:neural OR abs:neural)"),
        ('"quantum criticality"', '(ti:"quantum criticality" OR abs:"quantum criticality")'),
        ('au:del_maestro AND ti:"quantum criticality"', 'au:del_maestro AND ti:"quantum criticality"'),
        (
            "au:del_maestro ANDNOT (ti:checkerboard OR ti:Pyrochlore)",
            "au:del_maestro ANDNOT (ti:checkerboard OR ti:Pyrochlore)",
        ),
        (
            "ti:a au:b abs:c co:d jr:e cat:cs.LG rn:f all:g",
            "ti:a AND au:b AND abs:c AND co:d AND jr:e AND cat:cs.LG AND rn:f AND all:g",
        ),
        ("AU:Smith OR Ti:Jones", "au:Smith OR ti:Jones"),
        ("COVID-19: impact!", "(ti:COVID-19 OR abs:COVID-19) AND (ti:impact OR abs:impact)"),
        ("foo:bar", "(ti:foo OR abs:foo) AND (ti:bar OR abs:bar)"),  # unknown prefix is text
        ("cats and dogs", "(ti:cats OR abs:cats) AND (ti:and OR abs:and) AND (ti:dogs OR abs:dogs)"),
        ("x (y OR z)", "(ti:x OR abs:x) AND ((ti:y OR abs:y) OR (ti:z OR abs:z))"),
        ('ti:"  deep \n learning "', 'ti:"deep learning"'),
        ("ti:C++", "ti:C"),
        (
            "ti:graph submittedDate:[202301010000 TO 202312312359]",
            "ti:graph AND submittedDate:[202301010000 TO 202312312359]",
        ),
        ("!!! ***", ""),
        ('""', ""),
    ],
)
def test_compile_query(text: str, compiled: str) -> None:
    assert compile_query(text) == compiled


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("AND graph", "query: AND must stand between two search terms"),
        ("graph OR", "query: OR must stand between two search terms"),
        ("graph AND OR nets", "query: OR must stand between two search terms"),
        ("(graph", "query: an opening parenthesis is not closed"),
        ("graph)", "query: a closing parenthesis has no opening one"),
        ("graph ()", "query: parentheses must contain a search term"),
        ('ti:"unclosed phrase', "query: a double quote is not closed"),
        ("ti: graph", "query: 'ti:' names a field but no word to search for"),
    ],
)
def test_compile_query_rejects_broken_expressions(text: str, message: str) -> None:
    error = failure(compile_query, text)
    assert error.message == message
    assert error.details["fields"][0]["path"] == "query"


# --- filters ----------------------------------------------------------------------------------


def test_search_query_combines_text_categories_and_dates() -> None:
    assert (
        build_search_query(
            "graph neural",
            categories=["cs.LG", "stat.ML", "cs.LG"],
            date_from="2023-01-01",
            date_to="2023-12-31",
        )
        == "((ti:graph OR abs:graph) AND (ti:neural OR abs:neural)) AND (cat:cs.LG OR cat:stat.ML)"
        " AND submittedDate:[202301010000 TO 202312312359]"
    )
    assert build_search_query("ti:graph", categories=["hep-th"]) == "ti:graph AND cat:hep-th"
    assert build_search_query("ti:graph") == "ti:graph"
    assert build_search_query("graph") == "(ti:graph OR abs:graph)"
    assert build_search_query("graph", categories=["hep-th"]) == "(ti:graph OR abs:graph) AND cat:hep-th"
    assert (
        build_search_query("(ti:a) OR (ti:b)", categories=["hep-th"]) == "((ti:a) OR (ti:b)) AND cat:hep-th"
    )
    assert (
        build_search_query(categories=["cond-mat.str-el", "math.CO"])
        == "(cat:cond-mat.str-el OR cat:math.CO)"
    )
    assert build_search_query() == ""


@pytest.mark.parametrize(
    ("date_from", "date_to", "expected"),
    [
        ("2024-02-29", "2024-02-29", "submittedDate:[202402290000 TO 202402292359]"),
        (date(2017, 6, 12), datetime(2017, 6, 30, 15, 0), "submittedDate:[201706120000 TO 201706302359]"),
        ("2020-01-01", None, "submittedDate:[202001010000 TO 999912312359]"),
        (None, "2001-09-10", "submittedDate:[199101010000 TO 200109102359]"),
        (None, None, ""),
        ("", "", ""),
    ],
)
def test_submitted_date_range(date_from, date_to, expected: str) -> None:
    assert submitted_date_range(date_from, date_to) == expected


@pytest.mark.parametrize(
    ("date_from", "date_to", "path", "message"),
    [
        ("2023-13-01", None, "dateFrom", "dateFrom: '2023-13-01' is not a date (YYYY-MM-DD)"),
        (None, "01/02/2023", "dateTo", "dateTo: '01/02/2023' is not a date (YYYY-MM-DD)"),
        ("2023-1-1", None, "dateFrom", "dateFrom: '2023-1-1' is not a date (YYYY-MM-DD)"),
        (None, 20230101, "dateTo", "dateTo: 20230101 is not a date (YYYY-MM-DD)"),
        ("2024-01-02", "2024-01-01", "dateFrom", "dateFrom: dateFrom 2024-01-02 is after dateTo 2024-01-01"),
    ],
)
def test_bad_dates(date_from, date_to, path: str, message: str) -> None:
    error = failure(submitted_date_range, date_from, date_to)
    assert error.message == message
    assert error.details["fields"][0]["path"] == path


@pytest.mark.parametrize(("index", "bad"), [(1, "cs LG"), (0, ""), (1, "cs.LG;drop"), (1, 7)])
def test_bad_categories_are_named(index: int, bad) -> None:
    categories = ["cs.LG", bad] if index else [bad]
    error = failure(build_search_query, "graph", categories=categories)
    assert error.details["fields"][0]["path"] == f"categories.{index}"
    assert "is not an arXiv category" in error.message


# --- identifiers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("1706.03762", "1706.03762"),
        ("1706.03762v7", "1706.03762v7"),
        (" arXiv:1706.03762V7 ", "1706.03762v7"),
        ("https://arxiv.org/abs/1706.03762v2", "1706.03762v2"),
        ("http://arxiv.org/pdf/hep-ex/0307015v1", "hep-ex/0307015v1"),
        ("hep-ex/0307015", "hep-ex/0307015"),
        ("quant-ph/0201082v1", "quant-ph/0201082v1"),
        ("Math.gt/0309136", "math.GT/0309136"),
        ("0704.0001", "0704.0001"),
        ("1412.9999", "1412.9999"),
        ("1501.00001", "1501.00001"),
        ("0000.0000", "0000.0000"),  # well-formed, unknown: arXiv answers an empty feed
    ],
)
def test_normalize_arxiv_id(raw: str, normalised: str) -> None:
    assert normalize_arxiv_id(raw) == normalised


@pytest.mark.parametrize(
    "bad",
    ["1706.0376", "1501.0001", "1412.00001", "1706.03762v0", "1706.03762v", "cond—mat/0709123",
     "hep-ex/030701", "1706.03762,1", "", "hep_ex/0307015", "../../etc/passwd"],
)  # fmt: skip
def test_malformed_ids_are_refused_and_named(bad: str) -> None:
    error = failure(normalize_id_list, ["1605.08386", bad])
    assert error.details["fields"][0]["path"] == "ids.1"
    assert error.details["fields"][0]["value"] == bad
    assert error.message.startswith(f"ids.1: {bad!r} is not an arXiv id")


def test_id_list_is_deduplicated_in_order() -> None:
    assert normalize_id_list(["1706.03762", "arXiv:1706.03762", "hep-ex/0307015", "1706.03762v7"]) == [
        "1706.03762",
        "hep-ex/0307015",
        "1706.03762v7",
    ]
    assert normalize_id_list("1706.03762, quant-ph/0201082v1") == ["1706.03762", "quant-ph/0201082v1"]


@pytest.mark.parametrize(
    ("versioned", "split"),
    [
        ("1605.08386v1", ("1605.08386", 1)),
        ("1706.03762v12", ("1706.03762", 12)),
        ("quant-ph/0201082v1", ("quant-ph/0201082", 1)),
        ("hep-ex/0307015", ("hep-ex/0307015", None)),
        ("not-an-id", ("not-an-id", None)),
    ],
)
def test_split_version(versioned: str, split: tuple) -> None:
    assert split_version(versioned) == split


# --- parameters and the URL httpx sends ------------------------------------------------------


def test_date_range_and_phrase_reach_arxiv_with_plus_for_spaces() -> None:
    params = build_search_params(
        query='au:del_maestro AND ti:"quantum criticality"',
        categories=["cond-mat.str-el", "cond-mat.stat-mech"],
        date_from="2011-01-01",
        date_to="2012-12-31",
        max_results=25,
        sort_by="relevance",
    )
    assert params == [
        (
            "search_query",
            '(au:del_maestro AND ti:"quantum criticality")'
            " AND (cat:cond-mat.str-el OR cat:cond-mat.stat-mech)"
            " AND submittedDate:[201101010000 TO 201212312359]",
        ),
        ("start", "0"),
        ("max_results", "25"),
        ("sortBy", "relevance"),
        ("sortOrder", "descending"),
    ]
    url = url_of(params)
    assert url == (
        "https://export.arxiv.org/api/query?search_query=%28au%3Adel_maestro+AND+ti%3A%22quantum+criticality"
        "%22%29+AND+%28cat%3Acond-mat.str-el+OR+cat%3Acond-mat.stat-mech%29+AND+submittedDate%3A%5B"
        "201101010000+TO+201212312359%5D&start=0&max_results=25&sortBy=relevance&sortOrder=descending"
    )
    assert "%2B" not in url  # a pre-encoded "+" would break the range


def test_defaults_follow_the_seed() -> None:
    assert build_search_params(query="graph") == [
        ("search_query", "(ti:graph OR abs:graph)"),
        ("start", "0"),
        ("max_results", "10"),
        ("sortBy", "submittedDate"),
        ("sortOrder", "descending"),
    ]


def test_ids_with_and_without_query_and_sorting_omitted() -> None:
    params = build_search_params(
        query="ti:graph", ids=["1706.03762v7", "hep-ex/0307015"], start=5, sort_by=None, sort_order=None
    )
    assert params == [
        ("search_query", "ti:graph"),
        ("id_list", "1706.03762v7,hep-ex/0307015"),
        ("start", "5"),
        ("max_results", "10"),
    ]
    assert url_of(params) == (
        "https://export.arxiv.org/api/query?search_query=ti%3Agraph&id_list=1706.03762v7%2Chep-ex%2F0307015"
        "&start=5&max_results=10"
    )


def test_id_params_fetch_every_id() -> None:
    params = build_id_params(["1605.08386", "quant-ph/0201082v1", "1605.08386"])
    assert params == [("id_list", "1605.08386,quant-ph/0201082v1"), ("start", "0"), ("max_results", "2")]
    assert failure(build_id_params, []).details["fields"][0]["path"] == "ids"


@pytest.mark.parametrize(
    ("kwargs", "path", "message"),
    [
        ({"query": "x", "start": -1}, "start", "start: must be between 0 and 29999"),
        ({"query": "x", "start": "0"}, "start", "start: must be an integer"),
        ({"query": "x", "max_results": 0}, "maxResults", "maxResults: must be between 1 and 2000"),
        ({"query": "x", "max_results": 2001}, "maxResults", "maxResults: must be between 1 and 2000"),
        ({"query": "x", "max_results": True}, "maxResults", "maxResults: must be an integer"),
        (
            {"query": "x", "start": 29990, "max_results": 20},
            "start",
            "start: start + maxResults must not exceed 30000 (arXiv's limit)",
        ),
        (
            {"query": "x", "sort_by": "date"},
            "sortBy",
            "sortBy: must be one of relevance, lastUpdatedDate, submittedDate",
        ),
        ({"query": "x", "sort_order": "up"}, "sortOrder", "sortOrder: must be one of ascending, descending"),
        ({"query": "!!!"}, "query", "query: give a search term, a category, a date range or an arXiv id"),
        ({}, "query", "query: give a search term, a category, a date range or an arXiv id"),
        ({"query": 42}, "query", "query: the query must be a string"),
    ],
)
def test_bad_parameters(kwargs: dict, path: str, message: str) -> None:
    error = failure(build_search_params, **kwargs)
    assert error.message == message
    assert error.details["fields"][0]["path"] == path
