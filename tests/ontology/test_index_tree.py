"""The ontology index (issue 26 item 6): a collapsible tree by domain (a ``<details>`` per domain, each
subclass under its parent) with a filter, instead of a wall of 211 links; the filter works without
script (``?filter=``) and with it (static/js/cortex.js, tests/browser/test_ontology_pages.py)."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from tests.ontology.test_query_and_propose import ontology  # noqa: F401 - a fixture used below

pytestmark = pytest.mark.django_db

FILTER_INPUT = (
    '<input type="search" name="filter" id="ontology-filter" maxlength="100" value=""\n'
    '               placeholder="e.g. tls" autocomplete="off" aria-controls="ontology-tree">'
)


def _domains(html: str) -> list[tuple[str, str]]:
    """(domain, "open" or "") of each domain's <details>, in order."""
    return re.findall(
        r'<details class="ontology-domain" data-initially-open="(?:true|false)"( open)?>\s*'
        r"<summary><h3>([a-z]+)</h3>",
        html,
    )


def _item(html: str, local_name: str) -> str:
    """The <li> of ``local_name`` up to its end (its subtree included), by counting nested <li>s."""
    start = html.rindex("<li ", 0, html.index(f'href="/ontology/{local_name}"'))
    depth, index = 0, start
    for match in re.finditer(r"<li |</li>", html[start:]):
        depth += 1 if match.group() == "<li " else -1
        if depth == 0:
            index = start + match.end()
            break
    return html[start:index]


def test_the_index_is_a_folded_tree_by_domain_with_a_filter(ontology: None) -> None:  # noqa: F811
    html = Client().get("/ontology").content.decode()
    assert FILTER_INPUT in html
    assert _domains(html) == [
        ("", "compliance"),
        ("", "cortexweb"),
        ("", "performance"),
        ("", "security"),
        ("", "technology"),
    ]
    assert (
        "211 classes in 5 domains: open a domain to see its classes, each subclass under its parent." in html
    )
    assert '<small class="help">54 classes</small>' in html
    # CWE-89 sits under CWE-943, which sits under CWE-74's branch: subclasses nest in their parent's <li>.
    parent = _item(html, "CWE943ImproperNeutralizationInDataQueryLogic")
    assert 'href="/ontology/CWE89SqlInjection"' in parent
    assert 'href="/ontology/CWE943ImproperNeutralizationInDataQueryLogic"' in _item(html, "CWE74Injection")
    assert html.count('href="/ontology/CWE89SqlInjection"') == 1
    main = html.split('<main id="main">')[1]
    assert "style=" not in main and "<script" not in main


def test_the_filter_without_script_keeps_the_matches_and_their_branches(ontology: None) -> None:  # noqa: F811
    html = Client().get("/ontology", {"filter": "sql"}).content.decode()
    assert _domains(html) == [(" open", "security")]
    assert "1 class matches “sql”." in html
    tree = html.split('id="ontology-tree"')[1]
    assert 'href="/ontology/CWE89SqlInjection"' in tree
    assert 'href="/ontology/CWE943ImproperNeutralizationInDataQueryLogic"' in tree  # its branch
    assert 'href="/ontology/PasswordHashing"' not in tree
    assert '<a href="/ontology">Clear</a>' in html


def test_a_filter_that_finds_nothing_says_so(ontology: None) -> None:  # noqa: F811
    html = Client().get("/ontology", {"filter": "<zzq>"}).content.decode()
    assert _domains(html) == []
    assert "0 classes match “&lt;zzq&gt;”." in html
    assert "No class name or term id contains <q>&lt;zzq&gt;</q>." in html
