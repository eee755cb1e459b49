"""arXiv feed parsing: CortexWeb's hardened parser vs feedparser, time per entry, same feeds, same run.

Ours is the whole path to normalised records (defusedxml parse with DTDs
refused, namespace lookups, id/version split, whitespace and date
normalisation). feedparser's is ``feedparser.parse`` on the same bytes (its
own lenient parser and sanitiser; no arXiv normalisation). Each sample is one
parse of one feed divided by its number of entries. Feeds: the two recorded
10-entry search pages (2026 format), the classic single-entry feeds, and a
100-entry page built from the recorded entries (the largest page size
worth planning for).
"""

from __future__ import annotations

import re
from pathlib import Path

from apps.arxiv.parsing import parse_feed
from bench import timed

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "arxiv"
RECORDED = [
    "query_search_testing_start0_max10.xml",
    "query_search_testing_start10_max10.xml",
    "classic2016_idlist_1111.2011v2_doi_journal_ref.xml",
    "classic2016_search_au_del_maestro_AND_ti_checkerboard.xml",
]
REPEAT = 200


def _hundred_entry_feed() -> bytes:
    pages = [(FIXTURES / name).read_text(encoding="utf-8") for name in RECORDED[:2]]
    entries = [entry for page in pages for entry in re.findall(r"<entry>.*?</entry>", page, re.DOTALL)]
    head, _, _ = pages[0].partition("<entry>")
    head = head.replace("<opensearch:itemsPerPage>10<", "<opensearch:itemsPerPage>100<")
    return (head + "\n".join(entries * 5) + "\n</feed>\n").encode("utf-8")


def _feeds() -> dict[str, bytes]:
    feeds = {name: (FIXTURES / name).read_bytes() for name in RECORDED}
    feeds["synthetic_100_entries"] = _hundred_entry_feed()
    return feeds


def _per_entry(parse, feeds: dict[str, bytes], counts: dict[str, int]) -> list[float]:
    samples: list[float] = []
    for name, body in feeds.items():
        parse(body)  # warm caches
        samples += [seconds / counts[name] for seconds in timed(lambda body=body: parse(body), REPEAT)]
    return samples


def run(report) -> None:
    feeds = _feeds()
    counts = {name: len(parse_feed(body).items) for name, body in feeds.items()}
    report("arxiv.parse.cortex_per_entry", _per_entry(parse_feed, feeds, counts))
    big = {"synthetic_100_entries": feeds["synthetic_100_entries"]}
    report("arxiv.parse.cortex_per_entry_100_page", _per_entry(parse_feed, big, counts))
    try:
        import feedparser
    except ImportError:
        print("arxiv.parse.feedparser: skipped (pip install feedparser to compare)", flush=True)
        return
    for name, body in feeds.items():  # same feeds, same entry counts
        assert len(feedparser.parse(body).entries) == counts[name], name
    report("arxiv.parse.feedparser_per_entry", _per_entry(feedparser.parse, feeds, counts))
    report("arxiv.parse.feedparser_per_entry_100_page", _per_entry(feedparser.parse, big, counts))
