"""The operators' memory pages: /memories (every token's memories, filters, pages, ranked answers with
the four components as a stacked bar, none of it reinforcing) and /memories/<id> (content, scope,
chain, access history, the decay outlook chart); pin and forget (CSRF, roles, rate limit, HTMX);
404s and escaping. The memories are told through ``memory_tell`` on the real model."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils import timezone

from apps.core.models import ApiToken
from apps.memory import charts, selectors, views
from apps.memory.models import Memory, MemoryAccess, MemorySettings
from apps.memory.selectors import BrowseFilters, OutlookPoint
from apps.memory.services import Scope, TellItem, memories_reinforce, memory_tell
from tests.conftest import make_user, role_client

pytestmark = pytest.mark.django_db

VIEW, CHANGE, DELETE = "memory.view_memory", "memory.change_memory", "memory.delete_memory"
HTMX = {"HX-Request": "true"}
UNKNOWN = "6b1f7c1e-5d0b-4a47-9f55-2f0c3f4b1a11"
XSS = "<script>alert(1)</script>"
QUESTION = "Where does the staging database run?"


def tell(token: ApiToken, content: str, *, agent: str = "", session: str = "", **options: Any) -> Memory:
    told = memory_tell(
        scope=Scope(token=token, agent=agent, session=session), items=[TellItem(content=content, **options)]
    )
    return Memory.objects.get(pk=told[0]["id"])


def aged(memory: Memory, minutes: int) -> Memory:
    """Told ``minutes`` ago: the list's order is then known."""
    Memory.objects.filter(pk=memory.pk).update(created_at=timezone.now() - timedelta(minutes=minutes))
    memory.refresh_from_db()
    return memory


@pytest.fixture
def tokens(make_token) -> dict[str, ApiToken]:
    return {
        "ops": make_token("read", "write", name="ops-agent")[0],
        "travel": make_token("read", "write", name="travel-agent")[0],
    }


@pytest.fixture
def memories(tokens) -> dict[str, Memory]:
    """Six memories of two tokens, newest first: bob, alice, frankfurt, deploys, rota, dublin (superseded
    by frankfurt)."""
    ops, travel = tokens["ops"], tokens["travel"]
    dublin = aged(tell(ops, "The staging database runs on Postgres 15 in Dublin.", domain="infra"), 60)
    frankfurt = tell(
        ops,
        "The staging database runs on Postgres 16 in Frankfurt, on the db-stg-2 host.",
        agent="planner",
        session="deploy-42",
        domain="infra",
        importance=0.9,
        metadata={"source": "runbook", "ticket": "OPS-1432"},
        ttl_seconds=20 * 86400,
        supersedes=dublin.pk,
    )
    return {
        "dublin": dublin,
        "rota": aged(tell(ops, "The on-call rota changes every Monday at 09:00 UTC.", domain="infra"), 40),
        "deploys": aged(
            tell(ops, "Deploys happen on Tuesdays after the stand-up.", agent="planner", type="long_term"), 30
        ),
        "frankfurt": aged(frankfurt, 20),
        "alice": aged(
            tell(
                travel,
                "Alice prefers window seats on long flights.",
                agent="concierge",
                domain="travel",
                pinned=True,
            ),
            10,
        ),
        "bob": aged(
            tell(travel, "Bob is allergic to peanuts; tell the airline.", domain="travel", session="s-7"), 5
        ),
    }


def listed(html: str) -> list[str]:
    return re.findall(r'<tr data-memory-id="([0-9a-f-]{36})"', html)


def ids(*names: str, memories: dict[str, Memory]) -> list[str]:
    return [str(memories[name].pk) for name in names]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


# --- Who may see and act -------------------------------------------------------------------------


def test_anonymous_visitors_go_to_the_login_and_staff_need_the_permission(memories) -> None:
    detail = f"/memories/{memories['alice'].pk}"
    for path in ("/memories", detail):
        response = Client().get(path)
        assert (response.status_code, response["Location"]) == (
            302,
            f"/admin/login/?{urlencode({'next': path})}",
        )
    htmx = Client().get("/memories", headers=HTMX)
    assert (htmx.status_code, htmx["HX-Redirect"]) == (204, "/admin/login/?next=%2Fmemories")

    staff = role_client(username="staff")
    not_staff = Client()
    not_staff.force_login(make_user("outsider", VIEW, CHANGE, DELETE, is_staff=False))
    remover = role_client(DELETE, username="remover")
    for client in (staff, not_staff, remover):
        assert client.get("/memories").status_code == 403
        assert client.get(detail).status_code == 403
    for perm in (VIEW, CHANGE):
        client = role_client(perm, username=f"with-{perm}")
        assert client.get("/memories").status_code == 200
        assert client.get(detail).status_code == 200


def test_the_buttons_follow_the_roles(memories) -> None:
    alice = memories["alice"].pk
    reader = role_client(VIEW, username="reader").get("/memories").content.decode()
    assert f"/memories/{alice}/pin" not in reader and f"/memories/{alice}/forget" not in reader
    assert "pinned</span>" in reader  # the state is still shown

    editor = role_client(CHANGE, username="editor").get("/memories").content.decode()
    assert f'hx-post="/memories/{alice}/pin"' in editor
    assert 'name="mode" value="fade"' in editor and 'name="mode" value="remove"' not in editor

    operator = role_client(CHANGE, DELETE, username="operator").get("/memories").content.decode()
    assert 'name="mode" value="remove"' in operator


def test_pin_and_forget_need_their_permission(memories) -> None:
    alice, bob = memories["alice"], memories["bob"]
    reader = role_client(VIEW, username="reader")
    assert reader.post(f"/memories/{alice.pk}/pin", {"pinned": "false"}).status_code == 403
    assert reader.post(f"/memories/{alice.pk}/forget", {"mode": "fade"}).status_code == 403
    editor = role_client(VIEW, CHANGE, username="editor")
    assert editor.post(f"/memories/{bob.pk}/forget", {"mode": "remove"}).status_code == 403
    remover = role_client(DELETE, username="remover")
    assert remover.post(f"/memories/{alice.pk}/pin", {"pinned": "false"}).status_code == 403
    assert remover.post(f"/memories/{alice.pk}/forget", {"mode": "fade"}).status_code == 403
    alice.refresh_from_db()
    assert (alice.pinned, alice.decay_factor, Memory.objects.filter(pk=bob.pk).exists()) == (True, 1.0, True)

    removed = remover.post(f"/memories/{bob.pk}/forget", {"mode": "remove", "next": "/memories"})
    assert (removed.status_code, removed["Location"]) == (303, "/memories")
    assert not Memory.objects.filter(pk=bob.pk).exists()


# --- The list and its filters --------------------------------------------------------------------


def test_the_list_shows_every_tokens_memories_newest_first_with_their_scope(memories, tokens) -> None:
    response = role_client(VIEW).get("/memories")
    html = response.content.decode()
    assert listed(html) == ids("bob", "alice", "frankfurt", "deploys", "rota", "dublin", memories=memories)
    assert "6 memories, newest first." in html
    frankfurt_row = html.split(f'<tr data-memory-id="{memories["frankfurt"].pk}"')[1].split("</tr>")[0]
    assert f"ops-agent <code>{tokens['ops'].prefix}…</code>" in frankfurt_row
    assert "agent <code>planner</code>" in frankfurt_row and "session <code>deploy-42</code>" in frankfurt_row
    dublin_row = html.split(f'<tr data-memory-id="{memories["dublin"].pk}"')[1].split("</tr>")[0]
    assert 'class="superseded"' in html and '<span class="badge">superseded</span>' in dublin_row
    assert "Asking here does not reinforce what it finds" in html
    # The filters offer what there is.
    assert '<option value="infra">infra</option>' in html and '<option value="travel">travel</option>' in html
    assert '<option value="planner">planner</option>' in html
    assert f'<option value="{tokens["travel"].pk}">travel-agent ({tokens["travel"].prefix}…)</option>' in html
    assert 'aria-current="page">Memories</a>' in html  # linked from the site navigation


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"domain": "travel"}, ["bob", "alice"]),
        ({"type": "long_term"}, ["deploys"]),
        ({"agent": "planner"}, ["frankfurt", "deploys"]),
        ({"pinned": "yes"}, ["alice"]),
        ({"pinned": "no"}, ["bob", "frankfurt", "deploys", "rota", "dublin"]),
        ({"domain": "infra", "agent": "planner"}, ["frankfurt"]),
        ({"domain": "nowhere"}, []),
    ],
)
def test_the_filters(memories, query, expected) -> None:
    html = role_client(VIEW).get("/memories", query).content.decode()
    assert listed(html) == ids(*expected, memories=memories)
    if not expected:
        assert "No memory matches these filters." in html


def test_the_token_filter_and_a_bad_filter_value(memories, tokens) -> None:
    client = role_client(VIEW)
    html = client.get("/memories", {"token": tokens["travel"].pk}).content.decode()
    assert listed(html) == ids("bob", "alice", memories=memories)
    html = client.get("/memories", {"token": "abc", "domain": "travel"}).content.decode()
    assert "<li>token: Enter a whole number.</li>" in html
    assert listed(html) == ids("bob", "alice", memories=memories)  # the valid filter still applies


def test_pages_of_memories_and_the_htmx_fragment(memories, monkeypatch) -> None:
    monkeypatch.setattr(views, "PAGE_SIZE", 4)
    client = role_client(VIEW)
    first = client.get("/memories").content.decode()
    assert listed(first) == ids("bob", "alice", "frankfurt", "deploys", memories=memories)
    assert "Page 1 of 2" in first and 'href="?page=2"' in first
    fragment = client.get("/memories", {"page": 2}, headers=HTMX)
    html = fragment.content.decode()
    assert html.startswith('<div id="memory-results"') and "<html" not in html
    assert "HX-Request" in fragment["Vary"]
    assert listed(html) == ids("rota", "dublin", memories=memories)


# --- Ranked for a question -------------------------------------------------------------------------


def test_a_question_ranks_with_the_four_components_and_reinforces_nothing(memories) -> None:
    before = {m.pk: (m.access_count, m.decay_factor, m.last_accessed_at) for m in Memory.objects.all()}
    client = role_client(VIEW)
    html = client.get("/memories", {"q": QUESTION}).content.decode()

    # The order is the selector's: current, unexpired memories of every token, the admin's weights.
    config = MemorySettings.current()
    expected = selectors.memories_rank(
        memories=selectors.memories_browse(filters=BrowseFilters()).current().live(),
        question=QUESTION,
        domain=None,
        limit=views.RANKED_LIMIT,
        threshold=config.relevance_threshold,
        weights=config.weights,
        config=config,
    )
    assert listed(html) == [str(hit.memory.pk) for hit in expected]
    assert listed(html)[0] == str(memories["frankfurt"].pk)
    assert str(memories["dublin"].pk) not in listed(html)  # superseded: not what an agent is shown
    assert f"{len(expected)} memories at or above relevance 0.10 for “{QUESTION}”" in html

    # Each result: a bar of four segments in the legend's order, with the relevance beside it.
    top = html.split(f'<tr data-memory-id="{memories["frankfurt"].pk}"')[1].split("</tr>")[0]
    rects = re.findall(r'<rect class="c-(\w+)" x="([\d.]+)" y="0" width="([\d.]+)"', top)
    assert [name for name, _, _ in rects] == ["domain", "temporal", "semantic", "frequency"]
    hit = expected[0]
    widths = [float(width) for _, _, width in rects]
    assert widths == pytest.approx(
        [config.weights[name] * hit.components[name] * charts.BAR_WIDTH for name in selectors.COMPONENTS],
        abs=0.01,
    )
    assert float(rects[1][1]) == pytest.approx(
        widths[0], abs=0.01
    )  # stacked: each starts where the last ended
    assert f'<strong class="relevance-value">{hit.relevance:.3f}</strong>' in top
    assert f"semantic: {hit.components['semantic']:.3f} × 0.30 = " in top
    for name in ("domain", "temporal", "semantic", "frequency"):
        assert (
            f'<span class="swatch c-{name}" aria-hidden="true"></span><strong>{name}</strong>' in html
        )  # legend

    # Browsing changed nothing an agent's ask depends on.
    after = {m.pk: (m.access_count, m.decay_factor, m.last_accessed_at) for m in Memory.objects.all()}
    assert after == before
    assert MemoryAccess.objects.count() == 0


def test_a_question_within_a_domain_matches_the_domain_exactly(memories) -> None:
    html = role_client(VIEW).get("/memories", {"q": QUESTION, "domain": "infra"}).content.decode()
    assert listed(html) == ids("frankfurt", "rota", memories=memories)  # deploys has no domain
    top = html.split(f'<tr data-memory-id="{memories["frankfurt"].pk}"')[1].split("</tr>")[0]
    # Domain match 1 × weight 0.35 of a 240-wide bar; never retrieved: frequency 0.
    assert '<rect class="c-domain" x="0" y="0" width="84"' in top
    assert re.search(r'<rect class="c-frequency" x="[\d.]+" y="0" width="0"', top)


def test_a_question_too_short_is_refused_and_the_list_is_shown(memories) -> None:
    html = role_client(VIEW).get("/memories", {"q": "x"}).content.decode()
    assert "<li>q: Ask with at least 2 characters.</li>" in html
    assert len(listed(html)) == 6


def test_the_ranked_results_as_an_htmx_fragment(memories) -> None:
    response = role_client(VIEW).get("/memories", {"q": QUESTION, "agent": "planner"}, headers=HTMX)
    html = response.content.decode()
    assert html.startswith('<div id="memory-results"')
    assert listed(html) == ids("frankfurt", "deploys", memories=memories)


# --- Pin and forget ----------------------------------------------------------------------------------


def test_pin_and_unpin_with_csrf(memories) -> None:
    bob = memories["bob"]
    client = role_client(VIEW, CHANGE, enforce_csrf_checks=True)
    detail = f"/memories/{bob.pk}"
    assert client.post(f"{detail}/pin", {"pinned": "true"}).status_code == 403  # no CSRF token
    bob.refresh_from_db()
    assert bob.pinned is False

    token = csrf_of(client.get(detail).content.decode())
    pinned = client.post(f"{detail}/pin", {"pinned": "true", "csrfmiddlewaretoken": token, "next": detail})
    assert (pinned.status_code, pinned["Location"]) == (303, detail)
    bob.refresh_from_db()
    assert bob.pinned is True
    assert "pinned</span>" in client.get(detail).content.decode()

    # HTMX: the actions block comes back in place, with what happened.
    fragment = client.post(f"{detail}/pin", {"pinned": "false", "csrfmiddlewaretoken": token}, headers=HTMX)
    html = fragment.content.decode()
    assert fragment.status_code == 200
    assert html.startswith(f'<div id="memory-actions-{bob.pk}"')
    assert '<p class="notice" role="status">Unpinned.</p>' in html and ">Pin</button>" in html
    bob.refresh_from_db()
    assert bob.pinned is False


def test_fade_and_remove(memories) -> None:
    alice, bob, dublin = memories["alice"], memories["bob"], memories["dublin"]
    client = role_client(VIEW, CHANGE, DELETE)
    faded = client.post(f"/memories/{alice.pk}/forget", {"mode": "fade"})
    assert (faded.status_code, faded["Location"]) == (303, f"/memories/{alice.pk}")
    alice.refresh_from_db()
    assert (alice.decay_factor, alice.pinned) == (MemorySettings.current().decay_floor, False)

    # Removing from its own page goes back to the list; the memory it superseded keeps its closed validity.
    frankfurt = memories["frankfurt"]
    removed = client.post(
        f"/memories/{frankfurt.pk}/forget", {"mode": "remove", "next": f"/memories/{frankfurt.pk}"}
    )
    assert (removed.status_code, removed["Location"]) == (303, "/memories")
    dublin.refresh_from_db()
    assert not Memory.objects.filter(pk=frankfurt.pk).exists()
    assert dublin.valid_until is not None and dublin.superseded_by_id is None

    fragment = client.post(f"/memories/{bob.pk}/forget", {"mode": "remove"}, headers=HTMX).content.decode()
    assert fragment.startswith(f'<div id="memory-actions-{bob.pk}"')
    assert "Removed." in fragment and '<span class="badge badge-error">removed</span>' in fragment
    assert not Memory.objects.filter(pk=bob.pk).exists()


def test_bad_submissions_and_a_foreign_next_are_refused(memories) -> None:
    alice = memories["alice"]
    client = role_client(VIEW, CHANGE, DELETE)
    bad = client.post(f"/memories/{alice.pk}/pin", {"pinned": "maybe"})
    assert bad.status_code == 400
    assert "pinned: Select a valid choice. maybe is not one of the available choices." in bad.content.decode()
    assert client.post(f"/memories/{alice.pk}/forget", {"mode": "erase"}).status_code == 400
    alice.refresh_from_db()
    assert (alice.pinned, alice.decay_factor) == (True, 1.0)
    away = client.post(f"/memories/{alice.pk}/pin", {"pinned": "false", "next": "https://evil.example/"})
    assert away["Location"] == f"/memories/{alice.pk}"
    assert client.get(f"/memories/{alice.pk}/pin").status_code == 405


def test_pin_and_forget_count_against_the_page_submission_limit(memories, settings) -> None:
    settings.CORTEX_PAGE_SUBMISSIONS_PER_MINUTE = 1
    settings.CORTEX_PAGE_SUBMISSION_BURST = 1
    alice = memories["alice"]
    client = role_client(VIEW, CHANGE)
    assert client.post(f"/memories/{alice.pk}/pin", {"pinned": "false"}).status_code == 303
    refused = client.post(f"/memories/{alice.pk}/forget", {"mode": "fade"})
    assert refused.status_code == 429
    assert 55 <= int(refused["Retry-After"]) <= 60
    assert "Too many searches and questions from this account" in refused.content.decode()
    fragment = client.post(f"/memories/{alice.pk}/pin", {"pinned": "true"}, headers=HTMX)
    assert fragment.status_code == 200 and fragment["Retry-After"]
    assert 'role="alert">Too many searches and questions from this account' in fragment.content.decode()
    alice.refresh_from_db()
    assert (alice.pinned, alice.decay_factor) == (False, 1.0)


def test_unknown_ids_are_the_sites_404(memories) -> None:
    client = role_client(VIEW, CHANGE, DELETE)
    assert client.get(f"/memories/{UNKNOWN}").status_code == 404
    assert client.post(f"/memories/{UNKNOWN}/pin", {"pinned": "true"}).status_code == 404
    assert client.post(f"/memories/{UNKNOWN}/forget", {"mode": "remove"}).status_code == 404
    assert client.get("/memories/not-a-uuid").status_code == 404


# --- One memory ---------------------------------------------------------------------------------------


def test_a_memorys_page(memories, tokens) -> None:
    frankfurt, dublin = memories["frankfurt"], memories["dublin"]
    memories_reinforce(hits=[(frankfurt.pk, 0.71)])
    MemoryAccess.objects.filter(memory=frankfurt).update(accessed_at=timezone.now() - timedelta(hours=1))
    memories_reinforce(hits=[(frankfurt.pk, 0.64)])
    html = role_client(VIEW).get(f"/memories/{frankfurt.pk}").content.decode()

    assert "The staging database runs on Postgres 16 in Frankfurt, on the db-stg-2 host." in html
    assert f"<dt>Token</dt><dd>ops-agent <code>{tokens['ops'].prefix}…</code>" in html
    assert "<dt>Agent</dt><dd><code>planner</code></dd>" in html
    assert "<dt>Session</dt><dd><code>deploy-42</code></dd>" in html
    assert "<dt>Domain</dt><dd>infra</dd>" in html and "<dt>Type</dt><dd>Short-term</dd>" in html
    assert "<dt>Importance</dt><dd>0.90</dd>" in html
    assert "<dt>Accesses</dt><dd>2, last " in html
    assert "<dt>Decay factor</dt><dd>1.0000</dd>" in html
    assert '<li class="tag">frankfurt</li>' in html and '<li class="tag">postgres</li>' in html
    metadata = "{\n  &quot;source&quot;: &quot;runbook&quot;,\n  &quot;ticket&quot;: &quot;OPS-1432&quot;\n}"
    assert f'<pre class="json">{metadata}</pre>' in html
    assert f"{frankfurt.expires_at:%Y-%m-%d %H:%M:%S} UTC" in html
    assert '<span class="badge">not pinned</span>' in html

    # The chain, oldest first, links the other memories.
    chain = html.split('<ol class="supersession-chain">')[1].split("</ol>")[0]
    assert f'<a href="/memories/{dublin.pk}">The staging database runs on Postgres 15 in Dublin.</a>' in chain
    assert chain.index(str(dublin.pk)) < chain.index("<strong>this memory</strong>")
    dublin_page = role_client(VIEW, username="reader2").get(f"/memories/{dublin.pk}").content.decode()
    assert (
        f'<a href="/memories/{frankfurt.pk}">' in dublin_page
        and 'badge-warn">superseded</span>' in dublin_page
    )

    # The access history, latest first.
    rows = re.findall(r"<tr><td><time[^>]*>[^<]*</time></td><td>([\d.]+)</td></tr>", html)
    assert rows == ["0.640", "0.710"]

    # The decay outlook: two curves, labelled axes, and the expiry in 20 days.
    chart = html.split('<figure class="decay-chart">')[1].split("</figure>")[0]
    assert chart.count("<polyline") == 2
    assert ">days from now</text>" in chart and ">temporal component</text>" in chart
    assert re.findall(r'text-anchor="middle">(\d+)</text>', chart) == [
        "0",
        "5",
        "10",
        "15",
        "20",
        "25",
        "30",
    ]
    assert ">expires</text>" in chart
    assert re.search(r'<line class="expiry" x1="(380|379\.\d+)"', chart)  # 52 + 492 · 20/30 = 380


def test_the_decay_outlook_has_exact_values(memories, settings) -> None:
    config = MemorySettings.current()
    assert config.decay_interval_hours == 24  # one decay cycle a day
    memory = Memory(created_at=timezone.now(), decay_factor=0.5)
    now = memory.created_at + timedelta(days=2)
    points = selectors.memory_decay_outlook(memory=memory, config=config, now=now, days=30, samples=31)
    assert [p.days for p in points] == [float(day) for day in range(31)]
    assert points[0].temporal == pytest.approx(0.5 * math.exp(-0.1 * 2))
    assert points[0].unretrieved == pytest.approx(0.5 * math.exp(-0.1 * 2))
    assert points[3].temporal == pytest.approx(0.5 * math.exp(-0.1 * 5))
    assert points[3].unretrieved == pytest.approx(0.5 * 0.9**3 * math.exp(-0.1 * 5))
    # 0.5 · 0.9^30 = 0.0212 is above the floor; a lower decay factor reaches the floor (0.001) and stays.
    assert points[30].unretrieved == pytest.approx(0.5 * 0.9**30 * math.exp(-0.1 * 32))
    low = Memory(created_at=memory.created_at, decay_factor=0.002)
    floor = selectors.memory_decay_outlook(memory=low, config=config, now=now, days=30, samples=31)
    assert floor[30].unretrieved == pytest.approx(0.001 * math.exp(-0.1 * 32))


def test_the_charts_geometry() -> None:
    bar = charts.relevance_bar(
        components={"domain": 1.0, "temporal": 0.5, "semantic": 0.8, "frequency": 0.0},
        weights={"domain": 0.35, "temporal": 0.20, "semantic": 0.30, "frequency": 0.15},
    )
    assert [(s.name, s.x, s.width) for s in bar.segments] == [
        ("domain", "0", "84"),
        ("temporal", "84", "24"),
        ("semantic", "108", "57.6"),
        ("frequency", "165.6", "0"),
    ]
    assert bar.relevance == pytest.approx(0.69)
    assert bar.label.startswith(
        "Relevance 0.690 = domain: 1.000 × 0.35 = 0.350, temporal: 0.500 × 0.20 = 0.100"
    )

    points = [OutlookPoint(days=0.0, temporal=1.0, unretrieved=1.0), OutlookPoint(30.0, 0.5, 0.0)]
    chart = charts.decay_chart(points=points, days=30, expires_in_days=45)
    # Plot: x from 52 to 544, y from 176 (0) up to 12 (1).
    assert (chart.temporal, chart.unretrieved) == ("52,12 544,94", "52,12 544,176")
    assert chart.expiry_x == ""  # beyond the chart
    assert [(t.at, t.label) for t in chart.y_ticks] == [
        ("176", "0"),
        ("135", "0.25"),
        ("94", "0.5"),
        ("53", "0.75"),
        ("12", "1"),
    ]


def test_html_in_a_memory_is_shown_as_text(tokens) -> None:
    memory = tell(tokens["ops"], XSS, domain="infra", metadata={"note": "</pre><script>alert(2)</script>"})
    client = role_client(VIEW)
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    for path, query in (
        ("/memories", {}),
        ("/memories", {"q": "alert script"}),
        (f"/memories/{memory.pk}", {}),
    ):
        html = client.get(path, query).content.decode()
        assert escaped in html, path
        assert XSS not in html and "<script>alert(2)" not in html, path
    detail = client.get(f"/memories/{memory.pk}").content.decode()
    assert "&lt;/pre&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in detail
