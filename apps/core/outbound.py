"""Where CortexWeb may send requests: no server-side request forgery.

Connector endpoints are data an operator (or a manifest) provides, and upstream URLs come from
the environment; either could point CortexWeb at the machine it runs on, the private network
behind it, or a cloud metadata service (169.254.169.254 hands out credentials). So outbound
requests to addresses that are not globally routable are refused — loopback, private
(RFC 1918, unique-local IPv6), link-local (metadata services), shared/carrier-grade NAT,
"this network", multicast and reserved ranges, and IPv6 forms that embed one of those IPv4
addresses (IPv4-mapped, IPv4-compatible, 6to4, Teredo, NAT64) — unless the operator allows
them explicitly:

* ``CORTEX_OUTBOUND_ALLOW_NETWORKS``: CIDR networks (or single addresses) that may be reached;
* ``CORTEX_OUTBOUND_ALLOW_HOSTS``: host names that may be reached whatever they resolve to
  (``name`` exactly, or ``.example.org`` for the name and every name under it).

The rule is checked twice. When an endpoint is saved (manifest import, admin, resource API),
:func:`url_refusal` gives the reason to show next to the field. When a connection is opened,
the network backends below resolve the host once, check every address it resolves to, and
connect to exactly those addresses (TLS still verifies the host name): a name that resolved
to a public address when it was saved and to 127.0.0.1 now (DNS rebinding), or an upstream URL
set in the environment, cannot get past it. Every client of :mod:`apps.core.http` uses them.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread
import httpcore
import httpcore2
from django.conf import settings

from apps.core.errors import UpstreamError
from apps.core.logging import get_logger

logger = get_logger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_SETTINGS = "CORTEX_OUTBOUND_ALLOW_NETWORKS or CORTEX_OUTBOUND_ALLOW_HOSTS"
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT; Alibaba's metadata
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known NAT64 prefix embeds an IPv4 address


class OutboundRefused(UpstreamError):
    """A request to an address the outbound rule refuses. Terminal: retrying cannot help."""

    def __init__(self, *, host: str, address: str, category: str) -> None:
        self.host, self.address, self.category = host, address, category
        super().__init__(
            f"Outbound request to {host!r} refused: it is {category}, which CortexWeb does not contact "
            f"unless {ALLOW_SETTINGS} allows it.",
            details={"reason": "outbound_refused", "host": host, "address": address, "retryable": False},
            retryable=False,
        )


def _category(ip: IPAddress) -> str | None:  # noqa: PLR0911, PLR0912 - one answer per kind of range
    """What kind of non-public address ``ip`` is ("a loopback address"), or ``None`` when it is public."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = _category(embedded)
            return f"{inner} embedded in the IPv6 address {ip}" if inner else None
        if ip.is_loopback:
            return "a loopback address"
        if ip.is_link_local:
            return "a link-local address"
        if ip.is_unspecified:
            return "an unspecified address"
    else:
        if ip.is_loopback:
            return "a loopback address"
        if ip.is_link_local:
            return "a link-local (cloud metadata) address"
        if ip in _SHARED_ADDRESS_SPACE:
            return "a shared (carrier-grade NAT) address"
        if ip.is_unspecified or ip in ipaddress.IPv4Network("0.0.0.0/8"):
            return 'a "this network" address'
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_private:
        return "a private address"
    if ip.is_reserved or not ip.is_global:
        return "a reserved address"
    return None


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    # An entry that is not a network allows nothing; the system check cortex.E040 names it.
    return tuple(networks_parse(entries)[0])


def networks_parse(entries: Iterable[str]) -> tuple[list[IPNetwork], list[str]]:
    """The networks among ``entries`` (CIDR or a single address) and the entries that are neither."""
    networks: list[IPNetwork] = []
    invalid: list[str] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(str(entry).strip(), strict=False))
        except ValueError:
            invalid.append(str(entry))
    return networks, invalid


def _allowed_networks() -> tuple[IPNetwork, ...]:
    return _networks(tuple(getattr(settings, "CORTEX_OUTBOUND_ALLOW_NETWORKS", ()) or ()))


def host_allowed(host: str) -> bool:
    """Whether ``CORTEX_OUTBOUND_ALLOW_HOSTS`` names ``host`` (``.suffix`` entries match subdomains)."""
    name = host.strip("[]").rstrip(".").lower()
    for entry in getattr(settings, "CORTEX_OUTBOUND_ALLOW_HOSTS", ()) or ():
        allowed = str(entry).strip().rstrip(".").lower()
        if not allowed:
            continue
        if allowed.startswith("."):
            if name == allowed[1:] or name.endswith(allowed):
                return True
        elif name == allowed:
            return True
    return False


def address_refusal(ip: IPAddress) -> str | None:
    """Why connecting to ``ip`` is refused (its category), or ``None`` when it is allowed."""
    category = _category(ip)
    if category is None:
        return None
    candidates: list[IPAddress] = [ip]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        candidates.append(ip.ipv4_mapped)  # an allowed 127.0.0.0/8 allows ::ffff:127.0.0.1 too
    networks = _allowed_networks()
    if any(
        candidate.version == net.version and candidate in net for candidate in candidates for net in networks
    ):
        return None
    return category


def resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (the system resolver, as a connection would use it)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def permitted_addresses(host: str, port: int) -> list[str]:
    """The addresses to connect to for ``host``: all of them, each checked.

    Raises :class:`OutboundRefused` when any address ``host`` resolves to is refused (a name
    with one private address among public ones is refused as a whole), and ``OSError`` when
    the name does not resolve.
    """
    literal = _literal(host)
    addresses = [str(literal)] if literal is not None else resolve(host, port)
    if host_allowed(host):
        return addresses
    for address in addresses:
        ip = _literal(address.split("%", 1)[0])
        category = address_refusal(ip) if ip is not None else "an unparseable address"
        if category is not None:
            logger.warning("outbound.refused", host=host, address=address, category=category)
            raise OutboundRefused(host=host, address=address, category=category)
    return addresses


def url_refusal(url: str) -> str | None:
    """Why an endpoint URL would be refused, for a form or manifest error; ``None`` when it is not.

    Decided from the URL alone, so that a manifest is valid or not whatever the machine and its
    DNS (and validating one costs no lookups): a literal address in a refused range, or a
    ``localhost`` name. Every other name is checked when connecting, on every connection, where a
    name that resolves to a refused address is refused with the same reason.
    """
    try:
        parts = urlsplit(str(url))
        host = parts.hostname
    except ValueError:
        return None  # the URL validator reports malformed URLs
    if not host or host_allowed(host):
        return None
    literal = _literal(host)
    if literal is not None:
        category = address_refusal(literal)
        address = str(literal)
    elif host.rstrip(".") == "localhost" or host.rstrip(".").endswith(".localhost"):
        address = "127.0.0.1"  # RFC 6761: localhost names are always loopback
        category = address_refusal(ipaddress.ip_address(address))
    else:
        return None
    if category is None:
        return None
    shown = "" if literal is not None else f" (it resolves to {address})"
    return (
        f"{host!r}{shown} is {category}; "
        f"CortexWeb does not send requests there unless {ALLOW_SETTINGS} allows it."
    )


# --- Network backends: the request-time check, at the moment of connecting -----------------------


def _connect_error(error: OSError, host: str) -> str:
    return f"could not resolve {host!r}: {error}"


class GuardedSyncBackend(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to checked addresses of the host."""

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = permitted_addresses(host, port)
        except OSError as error:
            raise httpcore.ConnectError(_connect_error(error, host)) from error
        failure: Exception | None = None
        for address in addresses:  # in resolver order, as socket.create_connection tries them
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        raise failure or httpcore.ConnectError(f"{host!r} has no address")


async def _permitted_addresses_async(host: str, port: int) -> list[str]:
    # The resolver blocks; it runs in a worker thread (as anyio's own getaddrinfo does).
    return await anyio.to_thread.run_sync(permitted_addresses, host, port)


class GuardedAsyncBackend2(httpcore2.AnyIOBackend):
    """httpcore2's anyio backend (the fork under the ``mcp`` SDK's httpx2: MCP connectors), connecting
    only to checked addresses."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await _permitted_addresses_async(host, port)
        except OSError as error:
            raise httpcore2.ConnectError(_connect_error(error, host)) from error
        failure: Exception | None = None
        for address in addresses:
            try:
                return await super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as error:
                failure = error
        raise failure or httpcore2.ConnectError(f"{host!r} has no address")
