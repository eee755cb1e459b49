"""The id links of every page (apps.core.templatetags.cortex_links): where each id points, escaping,
and what is not an id staying text."""

from __future__ import annotations

from django.template import Context, Template

from apps.core.links import confidence_bar_geometry, wikidata_entity_url, wikidata_statement_url

GUID = "Q42$D8404CDA-25E4-4334-AF13-A3290BCD9C0F"
RUN = "86fa42b7-2133-405d-be1e-d854ef3c24b7"


def render(text: str, **context: object) -> str:
    return Template("{% load cortex_links %}" + text).render(Context(context))


def test_entry_ids_link_to_their_page() -> None:
    assert (
        render("{{ v|entry_link }}", v="SEC-031") == '<a href="/knowledge/SEC-031"><code>SEC-031</code></a>'
    )
    assert render("{{ v|entry_link }}", v="<b>SEC</b>") == "<code>&lt;b&gt;SEC&lt;/b&gt;</code>"
    assert render("{{ v|entry_link }}", v=None) == "<code></code>"
    # A verification's Wikidata source links to the statement.
    assert render("{{ v|entry_link }}", v=f"wikidata:{GUID}") == (
        f'<a href="https://www.wikidata.org/wiki/Q42#{GUID}" rel="noopener noreferrer">'
        f"<code>{GUID}</code></a>"
    )


def test_run_ids_link_to_the_run() -> None:
    assert render("{{ v|run_link }}", v=RUN) == f'<a href="/facts/runs/{RUN}"><code>{RUN}</code></a>'
    assert render("{{ v|run_link }}", v="../admin") == "<code>../admin</code>"


def test_wikidata_ids_link_to_wikidata() -> None:
    assert wikidata_entity_url("Q42") == "https://www.wikidata.org/wiki/Q42"
    assert wikidata_entity_url("P569") == "https://www.wikidata.org/wiki/Property:P569"
    assert wikidata_entity_url("L7") == "https://www.wikidata.org/wiki/Lexeme:L7"
    assert wikidata_entity_url("Q0") == "" and wikidata_entity_url("Q42 onclick=x") == ""
    assert render("{{ v|wikidata_link }}", v='Q1"x') == "<code>Q1&quot;x</code>"


def test_statement_guids_link_to_their_anchor_on_the_item_page() -> None:
    # Wikibase's statement HTML carries the GUID, "$" included, as its id.
    assert wikidata_statement_url(GUID) == f"https://www.wikidata.org/wiki/Q42#{GUID}"
    assert wikidata_statement_url("Q42-D8404CDA-25E4-4334-AF13-A3290BCD9C0F") == ""
    assert wikidata_statement_url("Q42$x") == ""
    assert render("{{ v|statement_link }}", v="Q42$<x>") == "<code>Q42$&lt;x&gt;</code>"


def test_the_confidence_bar_says_its_value_and_the_threshold_in_words() -> None:
    bar = confidence_bar_geometry(0.62, 0.7)
    assert bar is not None and bar.below and bar.fill == "99.2" and bar.mark == "112.0"
    assert bar.label == "Confidence 0.62, below the review threshold 0.70"
    assert confidence_bar_geometry(1.4, 0.7).fill == "160.0"  # clamped
    assert confidence_bar_geometry("n/a", 0.7) is None
    html = render("{% confidence_bar v t %}", v=0.9, t=0.7)
    assert 'role="img" aria-label="Confidence 0.90, at or above the review threshold 0.70"' in html
    assert "<strong>0.90</strong> <small>≥ review threshold 0.70</small>" in html
    assert render("{% confidence_bar v t %}", v=None, t=0.7) == "—"
