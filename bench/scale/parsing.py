"""arXiv Atom parsing against the ``arxiv`` package 4.x and ``feedparser`` (issue 27 item 4):
``python -m bench scale``, part ``parsing``.

Three parsers, the same bytes, the same process:

- ours: ``apps.arxiv.parsing.parse_feed``, the whole path to normalised records (defusedxml with
  DTDs refused, id/version split, whitespace and date normalisation, error feeds raised);
- ``arxiv`` 4.0.2: ``arxiv._feed.parse``, exactly what ``arxiv.Client`` runs on a response body
  (``Client._Client__try_parse_feed`` calls it on ``resp.content``): lxml with ``recover=True``, each
  ``<entry>`` made into an ``arxiv.Result``. Only the network and the client's sleeping are left out;
- ``feedparser.parse``: its own lenient parser and sanitiser, no arXiv normalisation.

Feeds: the recorded pages of ``bench/arxiv_parse.py`` (the two 10-entry 2026 search pages, the two
classic single-entry feeds) and synthetic pages of ``BENCH_SCALE_PARSING_SIZES`` entries (default
``100,1000``) made of the recorded search pages' 20 entries over and over (the 100-entry page is
``bench/arxiv_parse.py``'s own). Per feed size the three take turns within each round, one parse
each, until ``BENCH_SCALE_PARSING_REPEAT`` rounds (default 200) or ``BENCH_SCALE_PARSING_SECONDS``
seconds (default 6) are spent, at least 5 rounds; a sample is one parse divided by the feed's entries.

Then whether they agree, entry by entry, on every recorded feed and page: the id (versioned where
arXiv sent a version, without the ``arxiv.org/abs/`` prefix), the title (whitespace collapsed: all
three keep the same words; the raw differences are counted apart) and the number of authors. The
error feeds are listed with what each parser makes of them. Needs no database; writes nothing.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from typing import Any

import feedparser
from arxiv import _feed as arxiv_feed

from apps.arxiv.parsing import ArxivApiError, ArxivFeedError, parse_feed
from bench.__main__ import percentile
from bench.arxiv_parse import FIXTURES, _feeds
from bench.scale.table import ms, print_table, ratio

SIZES = [int(size) for size in os.environ.get("BENCH_SCALE_PARSING_SIZES", "100,1000").split(",") if size]
REPEAT = int(os.environ.get("BENCH_SCALE_PARSING_REPEAT", "200"))
SECONDS = float(os.environ.get("BENCH_SCALE_PARSING_SECONDS", "6"))
MIN_ROUNDS = 5

PARSERS: dict[str, Callable[[bytes], Any]] = {
    "CortexWeb": parse_feed,
    "arxiv 4.0.2": arxiv_feed.parse,
    "feedparser": feedparser.parse,
}
_ENTRY = re.compile(r"<entry>.*?</entry>", re.DOTALL)
_ABS = re.compile(r"^https?://(?:export\.|www\.)?arxiv\.org/abs/")


def us(seconds: float) -> str:
    """Per-entry times are microseconds on a quiet machine; milliseconds when they are not."""
    return f"{seconds * 1e6:.3g} µs" if seconds < 1e-3 else ms(seconds)


def _page(size: int, hundred: bytes) -> bytes:
    """A page of ``size`` entries cut from the 100-entry page (its head, its entries in turn)."""
    text = hundred.decode("utf-8")
    entries = _ENTRY.findall(text)
    head = text.partition("<entry>")[0].replace(
        "<opensearch:itemsPerPage>100<", f"<opensearch:itemsPerPage>{size}<"
    )
    chosen = [entries[index % len(entries)] for index in range(size)]
    return (head + "\n".join(chosen) + "\n</feed>\n").encode("utf-8")


def _feeds_by_size() -> dict[int, dict[str, bytes]]:
    recorded = _feeds()
    hundred = recorded.pop("synthetic_100_entries")
    grouped: dict[int, dict[str, bytes]] = {}
    for name, body in recorded.items():
        grouped.setdefault(len(parse_feed(body).items), {})[name] = body
    for size in SIZES:
        grouped.setdefault(size, {})[f"synthetic_{size}_entries"] = (
            hundred if size == 100 else _page(size, hundred)
        )
    return dict(sorted(grouped.items()))


def _timed_rounds(feeds: dict[str, bytes], entries: int) -> dict[str, list[float]]:
    """Per-entry seconds for each parser, the parsers taking turns within each round."""
    samples: dict[str, list[float]] = {name: [] for name in PARSERS}
    for parse in PARSERS.values():  # warm caches and lazy imports
        for body in feeds.values():
            parse(body)
    began = time.perf_counter()
    rounds = 0
    while rounds < MIN_ROUNDS or (rounds < REPEAT and time.perf_counter() - began < SECONDS):
        for name, parse in PARSERS.items():
            for body in feeds.values():
                started = time.perf_counter()
                parse(body)
                samples[name].append((time.perf_counter() - started) / entries)
        rounds += 1
    return samples


def _timing_table(by_size: dict[int, dict[str, bytes]]) -> None:
    rows = []
    for entries, feeds in by_size.items():
        samples = _timed_rounds(feeds, entries)
        ours = percentile(samples["CortexWeb"], 0.5)
        row: list[object] = [entries, ", ".join(feeds), len(samples["CortexWeb"])]
        for name in PARSERS:
            row.append(f"{us(percentile(samples[name], 0.5))} / {us(percentile(samples[name], 0.95))}")
        row += [ratio(percentile(samples[name], 0.5), ours) for name in list(PARSERS)[1:]]
        rows.append(row)
    print_table(
        "scale: parsing — arXiv Atom feeds, time per entry",
        [
            "entries",
            "feeds",
            "n",
            "CortexWeb p50 / p95",
            "arxiv 4.0.2 p50 / p95",
            "feedparser p50 / p95",
            "arxiv ÷ ours (p50)",
            "feedparser ÷ ours (p50)",
        ],
        rows,
        f"Each sample: one parse of one feed divided by its entries; the three parsers take turns "
        f"within each round (n parses each; at most {REPEAT} rounds or {SECONDS:g} s a size). Ours is "
        "`apps.arxiv.parsing.parse_feed`; arxiv 4.0.2 is `arxiv._feed.parse`, what `arxiv.Client` runs "
        "on each response body (lxml, `Result` objects); feedparser is `feedparser.parse`. The 1- and "
        "10-entry feeds are recorded arXiv responses; larger pages repeat the recorded search pages' "
        "20 entries (synthetic). A ratio above 1× means the peer is slower than ours.",
    )


def _fields(parser: str, page: Any) -> list[tuple[str, str, str, int]]:
    """(id, title collapsed, title raw, author count) of each entry, as ``parser`` gives them."""
    if parser == "CortexWeb":
        return [
            (item.get("versionedId", item["id"]), item["title"], item["title"], len(item["authors"]))
            for item in page.items
        ]
    if parser == "arxiv 4.0.2":
        return [
            (result.get_short_id(), " ".join(result.title.split()), result.title, len(result.authors))
            for result in page.results
        ]
    return [
        (_ABS.sub("", entry.id), " ".join(entry.title.split()), entry.title, len(entry.get("authors", [])))
        for entry in page.entries
    ]


def _outcome(parser: str, body: bytes) -> list[tuple[str, str, str, int]] | str:
    try:
        return _fields(parser, PARSERS[parser](body))
    except (ArxivApiError, ArxivFeedError) as refusal:
        return f"{type(refusal).__name__}: {refusal.message}"


def _agreement_table() -> None:
    recorded = sorted(FIXTURES.glob("*.xml"))
    recorded_bodies = {path.name: path.read_bytes() for path in recorded}
    hundred = _feeds()["synthetic_100_entries"]
    bodies = {**recorded_bodies, **{f"synthetic_{size}_entries": _page(size, hundred) for size in SIZES}}
    rows = []
    arxiv_logger = logging.getLogger("arxiv")
    level = arxiv_logger.level
    arxiv_logger.setLevel(logging.ERROR)  # its warning for each error entry it skips
    try:
        for name, body in bodies.items():
            rows.append(_agreement_row(name, body))
    finally:
        arxiv_logger.setLevel(level)
    print_table(
        "scale: parsing — do the three agree?",
        ["feed", "entries (ours / arxiv / feedparser)", "ids", "titles", "author counts", "disagreements"],
        rows,
        "Entry by entry, every recorded feed in tests/fixtures/arxiv and the synthetic pages: id "
        "(versioned where arXiv sent a version, no `arxiv.org/abs/` prefix), title with whitespace "
        'collapsed ("raw": the titles equal to ours as the parser returns them; feedparser keeps '
        "arXiv's line breaks, arxiv 4.0.2 turns them into spaces, ours collapses them), number of "
        "authors. A cell counts the (entry, peer) pairs that agree with ours, out of entries × 2 peers. An "
        "error feed is what arXiv answers a bad request with: arxiv 4.0.2 skips its entry with a logged "
        "warning (the refused search looks like an empty result), feedparser returns it as a paper.",
    )


def _entries(count: int) -> str:
    return f"{count} entry" if count == 1 else f"{count} entries"


def _agreement_row(name: str, body: bytes) -> list[object]:
    outcomes = {parser: _outcome(parser, body) for parser in PARSERS}
    counts = " / ".join(
        str(len(outcome)) if isinstance(outcome, list) else "refused" for outcome in outcomes.values()
    )
    ours = outcomes["CortexWeb"]
    if isinstance(ours, str):
        peers = ", ".join(
            f"{parser}: {_entries(len(outcome))}"
            for parser, outcome in outcomes.items()
            if parser != "CortexWeb"
        )
        return [name, counts, "—", "—", "—", f"error feed: ours raises {ours}; {peers}"]
    disagreements: list[str] = []
    agree = {"ids": 0, "titles": 0, "authors": 0}
    raw_titles = 0
    for parser, outcome in outcomes.items():
        if parser == "CortexWeb":
            continue
        if isinstance(outcome, str) or len(outcome) != len(ours):
            disagreements.append(f"{parser} has {_entries(len(outcome))}")
            continue
        for index, (mine, theirs) in enumerate(zip(ours, outcome, strict=True)):
            for position, field in ((0, "ids"), (1, "titles"), (3, "authors")):
                if mine[position] == theirs[position]:
                    agree[field] += 1
                else:
                    disagreements.append(f"{parser} entry {index} {field}: {theirs[position]!r}")
            raw_titles += mine[2] != theirs[2]
    compared = 2 * len(ours)
    cells = [f"{agree[field]}/{compared}" for field in ("ids", "titles", "authors")]
    cells[1] += f" (raw: {compared - raw_titles}/{compared})"
    shown = "; ".join(disagreements[:3]) + (
        f" … {len(disagreements) - 3} more" if len(disagreements) > 3 else ""
    )
    return [name, counts, *cells, shown or "none"]


def run() -> None:
    _timing_table(_feeds_by_size())
    _agreement_table()
