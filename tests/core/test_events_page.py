"""The /events page: staff only, the latest 100 events, prefix filter, HTMX polling, escaping."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.core.models import Event
from apps.core.services import event_emit

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
T0 = datetime(2026, 5, 1, 12, 0, 0, tzinfo=UTC)


def names(content: str) -> list[str]:
    return re.findall(r'<th scope="row"><code>([^<]*)</code></th>', content)


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("operator", password="pw", is_staff=True))
    return client


@pytest.fixture
def events() -> list[Event]:
    rows = [
        ("arxiv.tool.started", "corr-1", {"runId": "r1", "kind": "search", "parameters": {"query": "llm"}}),
        ("tool.call.completed", "corr-2", {"tool": "wikidata.sparql", "durationMs": 12.5}),
        ("arxiv.tool.completed", "corr-1", {"runId": "r1", "status": "succeeded", "results": 3}),
        ("arxiv.rate_limited", "corr-3", {"runId": "r2", "retryAfter": 4.5}),
    ]
    return [
        Event.objects.create(
            name=name, correlation_id=corr, payload=payload, created_at=T0 + timedelta(seconds=i)
        )
        for i, (name, corr, payload) in enumerate(rows)
    ]


def test_anonymous_go_to_the_admin_login_and_non_staff_are_refused(client: Client) -> None:
    response = client.get("/events", {"prefix": "arxiv."})
    assert response.status_code == 302
    assert response["Location"] == "/admin/login/?next=%2Fevents%3Fprefix%3Darxiv."

    # A poll whose session ended sends the whole page to the login, not the login into the list.
    response = client.get(
        "/events", headers={**HTMX, "HX-Current-URL": "http://testserver/events?prefix=tool."}
    )
    assert response.status_code == 204
    assert response["HX-Redirect"] == "/admin/login/?next=%2Fevents%3Fprefix%3Dtool."

    client.force_login(User.objects.create_user("analyst", password="pw"))
    assert client.get("/events").status_code == 403  # signed in, not staff (pages.permission_page)


def test_full_page_lists_the_latest_events_and_polls(staff: Client, events: list[Event]) -> None:
    response = staff.get("/events")
    assert response.status_code == 200
    assert "no-cache" in response["Cache-Control"]
    content = response.content.decode()
    assert content.startswith("<!doctype html>")
    assert '<a href="/events" aria-current="page">Events</a>' in content
    assert names(content) == [
        "arxiv.rate_limited",
        "arxiv.tool.completed",
        "tool.call.completed",
        "arxiv.tool.started",
    ]
    assert (
        '<div id="events" class="events" hx-get="/events" '
        'hx-trigger="every 2s" hx-swap="outerHTML">'
        in content
    )
    assert '<time datetime="2026-05-01T12:00:03+00:00">2026-05-01 12:00:03</time>' in content
    assert re.findall(r'data-prefix="([^"]+)"', content) == ["arxiv.", "tool."]
    # Payload summary: key=value, nested values as compact JSON; the full payload on demand.
    assert (
        '<summary class="event-summary">kind=search runId=r1 parameters={&quot;query&quot;: &quot;llm&quot;}'
        "</summary>" in content
    )
    assert '<summary class="event-summary">runId=r2 retryAfter=4.5</summary>' in content
    assert "&quot;retryAfter&quot;: 4.5,\n  &quot;runId&quot;: &quot;r2&quot;" in content
    assert "4 events." in content


def test_htmx_poll_returns_only_the_list_with_the_same_filter(staff: Client, events: list[Event]) -> None:
    response = staff.get("/events", {"prefix": "arxiv."}, headers=HTMX)
    assert response.status_code == 200
    assert response["Vary"] == "HX-Request, Cookie"
    content = response.content.decode()
    assert content.startswith('<div id="events" class="events" hx-get="/events?prefix=arxiv."')
    assert "<html" not in content and "<form" not in content
    assert names(content) == ["arxiv.rate_limited", "arxiv.tool.completed", "arxiv.tool.started"]
    assert "3 events named <code>arxiv.…</code>." in content

    # A new event shows up on the next poll.
    event_emit(name="arxiv.tool.failed", payload={"runId": "r3", "error": "boom"})
    content = staff.get("/events", {"prefix": "arxiv."}, headers=HTMX).content.decode()
    assert names(content)[0] == "arxiv.tool.failed"


def test_correlation_filter_and_empty_result(staff: Client, events: list[Event]) -> None:
    content = staff.get("/events", {"correlation": "corr-1"}, headers=HTMX).content.decode()
    assert names(content) == ["arxiv.tool.completed", "arxiv.tool.started"]
    assert 'hx-get="/events?correlation=corr-1"' in content
    content = staff.get("/events", {"prefix": "memory."}, headers=HTMX).content.decode()
    assert names(content) == []
    assert "No event matches these filters." in content


def test_only_the_latest_hundred(staff: Client) -> None:
    Event.objects.bulk_create(
        [Event(name=f"bulk.{i:03d}", created_at=T0 + timedelta(seconds=i)) for i in range(105)]
    )
    content = staff.get("/events", headers=HTMX).content.decode()
    shown = names(content)
    assert len(shown) == 100
    assert (shown[0], shown[-1]) == ("bulk.104", "bulk.005")
    assert "100 events (the latest 100)." in content


def test_names_payloads_and_filters_are_escaped(staff: Client) -> None:
    Event.objects.create(
        name="<b>evil</b>.event",
        correlation_id='"><script>c()</script>',
        payload={"query": "<script>alert(1)</script>"},
    )
    content = staff.get("/events", {"prefix": "<b>"}).content.decode()
    assert "<script>" not in content and "<b>evil" not in content
    assert names(content) == ["&lt;b&gt;evil&lt;/b&gt;.event"]
    assert "query=&lt;script&gt;alert(1)&lt;/script&gt;" in content
    assert "&quot;&gt;&lt;script&gt;c()&lt;/script&gt;" in content
    assert 'value="&lt;b&gt;"' in content
