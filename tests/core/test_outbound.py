"""The outbound rule (apps/core/outbound.py) and where upstream errors show upstream locations.

Every client of the httpx factory connects through the checking network backends: tests point
them at a real listener on 127.0.0.1 and assert it saw no connection when the rule refuses.
Names resolve from the ``fake_dns`` table (tests make no DNS queries).
"""

from __future__ import annotations

import asyncio
import ipaddress

import httpx
import pytest
from django.core.checks import Error
from django.test import RequestFactory

from apps.arxiv.clients import ArxivClient
from apps.core import outbound
from apps.core.checks import cortex_configuration_check
from apps.core.errors import (
    NotFound,
    UpstreamError,
    drf_exception_handler,
    error_response,
    sees_upstream_locations,
    visible_details,
)
from apps.core.http import build_client, build_mcp_async_client
from apps.core.models import TokenScope
from apps.core.outbound import OutboundRefused, address_refusal, url_refusal
from apps.embeddings.backends import HttpEmbeddingBackend
from apps.wikidata.action_api import ActionApiClient
from apps.wikidata.sparql import SparqlClient
from apps.wikidata.vectordb import VectorDbClient

HINT = (
    "CortexWeb does not send requests there unless CORTEX_OUTBOUND_ALLOW_NETWORKS or "
    "CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
)


@pytest.fixture
def no_allow_list(settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []


@pytest.mark.usefixtures("no_allow_list")
@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("169.254.169.254", "a link-local (cloud metadata) address"),
        ("fe80::1", "a link-local address"),
        ("fd00:ec2::254", "a private address"),  # AWS's IPv6 metadata service
        ("100.100.100.200", "a shared (carrier-grade NAT) address"),  # Alibaba's metadata service
        ("0.0.0.0", 'a "this network" address'),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("255.255.255.255", "a private address"),
        ("::ffff:127.0.0.1", "a loopback address embedded in the IPv6 address ::ffff:7f00:1"),
        (
            "::ffff:169.254.169.254",
            "a link-local (cloud metadata) address embedded in the IPv6 address ::ffff:a9fe:a9fe",
        ),
        ("2002:a00:1::", "a private address embedded in the IPv6 address 2002:a00:1::"),  # 6to4 of 10.0.0.1
        (
            "64:ff9b::a9fe:a9fe",
            "a link-local (cloud metadata) address embedded in the IPv6 address 64:ff9b::a9fe:a9fe",
        ),
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("::ffff:8.8.8.8", None),
    ],
)
def test_address_categories(address: str, category: str | None) -> None:
    assert address_refusal(ipaddress.ip_address(address)) == category


def test_allowed_networks_allow_their_addresses_and_mapped_forms(settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8", "10.1.0.0/16", "not-a-network"]
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = []
    assert address_refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert address_refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert address_refusal(ipaddress.ip_address("10.1.2.3")) is None
    assert address_refusal(ipaddress.ip_address("10.2.0.1")) == "a private address"
    assert address_refusal(ipaddress.ip_address("::1")) == "a loopback address"  # only what is listed


@pytest.mark.usefixtures("no_allow_list")
def test_url_refusal_is_decided_from_the_url_alone(fake_dns, monkeypatch) -> None:
    fake_dns["mixed.example"] = ["93.184.215.14", "10.0.0.7"]
    fake_dns["public.example"] = ["93.184.215.14"]
    resolved: list[str] = []
    monkeypatch.setattr(outbound, "resolve", lambda host, port: resolved.append(host) or [])
    assert url_refusal("http://169.254.169.254/latest/") == (
        f"'169.254.169.254' is a link-local (cloud metadata) address; {HINT}"
    )
    assert url_refusal("http://localhost:8000/mcp") == (
        f"'localhost' (it resolves to 127.0.0.1) is a loopback address; {HINT}"
    )
    assert url_refusal("http://api.localhost/") == (
        f"'api.localhost' (it resolves to 127.0.0.1) is a loopback address; {HINT}"
    )
    # Names are checked when connecting (test_names_and_mapped_addresses_of_loopback_are_refused…),
    # so a manifest is valid or not whatever the machine's DNS says, and validating costs no lookup.
    assert url_refusal("https://mixed.example/") is None
    assert url_refusal("https://public.example/") is None
    assert url_refusal("https://unknown.example/") is None
    assert url_refusal("not a url") is None  # the URL validator's to report
    assert resolved == []


def test_a_listener_on_loopback_is_reached_only_when_allowed(listener, settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = []
    with build_client() as client, pytest.raises(OutboundRefused) as refused:
        client.get(listener.url)
    assert refused.value.retryable is False
    assert refused.value.status_code == 502
    assert refused.value.message == (
        "Outbound request to '127.0.0.1' refused: it is a loopback address, which CortexWeb does not "
        "contact unless CORTEX_OUTBOUND_ALLOW_NETWORKS or CORTEX_OUTBOUND_ALLOW_HOSTS allows it."
    )
    assert listener.connections == 0

    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ["127.0.0.0/8"]
    with build_client() as client:
        assert client.get(f"{listener.url}ok").status_code == 200
    assert listener.requests == ["GET /ok"]


@pytest.mark.usefixtures("no_allow_list")
@pytest.mark.parametrize("host", ["localhost", "rebound.example", "[::ffff:127.0.0.1]"])
def test_names_and_mapped_addresses_of_loopback_are_refused_when_connecting(listener, fake_dns, host) -> None:
    # DNS rebinding: the name was public when the endpoint was saved; it resolves to loopback now.
    fake_dns["rebound.example"] = ["127.0.0.1"]
    with build_client(follow_redirects=True) as client, pytest.raises(OutboundRefused):
        client.get(f"http://{host}:{listener.port}/")
    assert listener.connections == 0


@pytest.mark.usefixtures("no_allow_list")
def test_allowed_hosts_are_reached_whatever_they_resolve_to(listener, fake_dns, settings) -> None:
    fake_dns["replay.internal.test"] = ["127.0.0.1"]
    settings.CORTEX_OUTBOUND_ALLOW_HOSTS = [".internal.test"]
    with build_client() as client:
        assert client.get(f"http://replay.internal.test:{listener.port}/x").status_code == 200
    assert listener.requests == ["GET /x"]


@pytest.mark.usefixtures("no_allow_list")
def test_unresolvable_names_are_connection_errors(fake_dns) -> None:
    with build_client() as client, pytest.raises(httpx.ConnectError) as failed:
        client.get("http://nowhere.example/")
    assert str(failed.value) == "could not resolve 'nowhere.example': [Errno -2] Name or service not known"


@pytest.mark.usefixtures("no_allow_list")
def test_the_mcp_client_factory_checks_too(listener) -> None:
    async def get() -> None:
        async with build_mcp_async_client() as client:
            await client.get(listener.url)

    with pytest.raises(OutboundRefused):
        asyncio.run(get())
    assert listener.connections == 0


@pytest.mark.usefixtures("no_allow_list")
@pytest.mark.parametrize(
    "call",
    [
        lambda url: ActionApiClient(api_url=url).request({"action": "wbgetentities", "ids": "Q42"}),
        lambda url: SparqlClient(endpoint=url).select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1"),
        lambda url: VectorDbClient(base_url=url).search_items("Douglas Adams"),
        lambda url: ArxivClient(api_url=url).request_page([("search_query", "all:test")]),
        lambda url: HttpEmbeddingBackend(base_url=url, model="m").embed(["hello"]),
    ],
    ids=["WIKIDATA_API_URL", "WIKIDATA_SPARQL_URL", "WIKIDATA_VECTOR_URL", "ARXIV_API_URL", "EMBEDDINGS_URL"],
)
def test_upstream_urls_from_settings_are_checked_when_connecting(listener, call) -> None:
    with pytest.raises(UpstreamError) as refused:
        call(listener.url)
    error = refused.value
    cause = error if isinstance(error, OutboundRefused) else error.__cause__
    assert isinstance(cause, OutboundRefused)
    assert error.retryable is False
    assert listener.connections == 0


def test_the_system_check_names_bad_allow_list_entries(settings) -> None:
    settings.CORTEX_OUTBOUND_ALLOW_NETWORKS = ["10.0.0.0/8", "intranet"]
    errors = [message for message in cortex_configuration_check(None) if message.id == "cortex.E040"]
    assert errors == [
        Error(
            "CORTEX_OUTBOUND_ALLOW_NETWORKS has entries that are not networks: intranet.",
            hint="Comma-separated CIDR networks or addresses, e.g. '10.20.0.0/16,fd00:1::/64'.",
            id="cortex.E040",
        )
    ]


# --- Upstream locations in error details ---------------------------------------------------------

UPSTREAM_FAILURE = UpstreamError(
    "could not reach the Wikidata Action API (ConnectError: refused)",
    details={
        "upstream": "wikidata-action-api",
        "reason": "connection",
        "url": "http://10.0.0.5/w/api.php",
        "partial": {"endpoint": "http://10.0.0.5/sparql", "source": "https://example.org/x", "count": 2},
        "attempts": [{"address": "10.0.0.5", "status": 503}],
        "host": "wikidata.internal",
    },
    retryable=True,
)


def test_upstream_locations_are_withheld_unless_privileged() -> None:
    assert visible_details(UPSTREAM_FAILURE, privileged=False) == {
        "upstream": "wikidata-action-api",
        "reason": "connection",
        "partial": {"count": 2},
        "attempts": [{"status": 503}],
    }
    assert visible_details(UPSTREAM_FAILURE, privileged=True) == UPSTREAM_FAILURE.details
    not_upstream = NotFound("No such run.", details={"url": "/v1/facts/runs/1"})
    assert visible_details(not_upstream, privileged=False) == {"url": "/v1/facts/runs/1"}


def test_who_sees_upstream_locations(make_token, admin_user, django_user_model) -> None:
    request = RequestFactory().get("/")
    request.auth = make_token(*[scope for scope in TokenScope.values if scope != TokenScope.ADMIN])[0]
    assert sees_upstream_locations(request) is False
    request.auth = make_token(TokenScope.ADMIN, name="operator")[0]
    assert sees_upstream_locations(request) is True

    page = RequestFactory().get("/")
    page.user = django_user_model.objects.create_user("analyst")
    assert sees_upstream_locations(page) is False
    page.user = admin_user
    assert sees_upstream_locations(page) is True
    assert sees_upstream_locations(None) is False


def test_both_api_error_renderings_withhold_upstream_locations(make_token) -> None:
    assert "url" not in error_response(UPSTREAM_FAILURE).content.decode()
    request = RequestFactory().get("/api/facts/")
    request.auth = make_token("read")[0]
    response = drf_exception_handler(UPSTREAM_FAILURE, {"request": request})
    assert response.status_code == 502
    assert response.data["error"]["details"] == visible_details(UPSTREAM_FAILURE, privileged=False)
    request.auth = make_token(TokenScope.ADMIN, name="operator")[0]
    response = drf_exception_handler(UPSTREAM_FAILURE, {"request": request})
    assert response.data["error"]["details"] == UPSTREAM_FAILURE.details
