"""Where a webhook may be sent: public addresses only, unless WEBHOOK_ALLOWED_NETWORKS allows a
network (a hospital's internal receiver, say).

A webhook URL is typed by an admin, and its answer used to be shown in the delivery log: a way to
make Vetted reach what only Vetted can reach (its own loopback, the cloud metadata service at
169.254.169.254, the hospital's internal network). So a destination is checked when it is saved
(Django admin) and again at every send, after resolving its name: every address the name resolves
to must be allowed, and the connection then goes to the address that was checked (``pinned``),
never to a second lookup's answer, so a name that changes its answer between the check and the
connection (DNS rebinding) cannot redirect a delivery.

How the connection is pinned: the request is made to ``http(s)://<checked address>:<port>/...``
with the ``Host`` header set to the URL's host; for https, urllib3's ``server_hostname`` (SNI)
and ``assert_hostname`` (certificate check) are set to the URL's host through requests'
``HTTPAdapter.build_connection_pool_key_attributes``, the method requests provides for this. The
certificate is verified against the name, as without pinning. Environment proxies are not used
(``trust_env`` off): a proxy would resolve the name again.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Refusal codes (WebhookDelivery.error_code and the admin form): programs branch on these.
REFUSED = "destination_refused"  # the scheme, credentials or an address is not allowed
UNRESOLVED = "dns_failed"  # the name does not resolve (may be temporary: retried)

NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # IPv4 addresses embedded in IPv6 (RFC 6052)
MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")  # IPv4-mapped: a dual-stack socket reaches it
COMPATIBLE = ipaddress.IPv6Network("::/96")  # IPv4-compatible (deprecated), holds :: and ::1 too
TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (SIIT)
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")

# What is not globally routable unicast, from IANA's special-purpose address registries, written
# out here rather than taken from ipaddress's is_private/is_global alone: those flags have changed
# between Python releases (3.11.7 calls ::127.0.0.1 and fec0::1 global) and the guard must not.
# The first matching entry gives the reason; ipaddress's flags are asked after, as a second net.
_IPV4_NOT_GLOBAL: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "the unspecified address"),  # "this network"
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address (cloud metadata services live there)"),
    ("10.0.0.0/8", "a private address"),
    ("172.16.0.0/12", "a private address"),
    ("192.168.0.0/16", "a private address"),
    ("100.64.0.0/10", "a private address"),  # shared address space (carrier-grade NAT)
    ("192.0.0.0/24", "a reserved address"),  # IETF protocol assignments
    ("192.0.2.0/24", "a documentation address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("192.88.99.0/24", "a reserved address"),  # 6to4 relay anycast (deprecated)
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),  # and the broadcast address
)
_IPV6_NOT_GLOBAL: tuple[tuple[str, str], ...] = (
    ("::/128", "the unspecified address"),
    ("::1/128", "a loopback address"),
    ("::/96", "an IPv4-compatible address (deprecated, not routed)"),
    ("::ffff:0:0:0/96", "an IPv4-translated address (not routed)"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("fe80::/10", "a link-local address (cloud metadata services live there)"),
    ("fec0::/10", "a site-local address"),
    ("fc00::/7", "a private address"),  # unique local
    ("ff00::/8", "a multicast address"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
    ("2001:2::/48", "a benchmarking address"),
    ("2001::/32", "a Teredo tunnel address"),
    ("2002::/16", "a 6to4 tunnel address"),
    ("2001::/23", "a reserved address"),  # IETF protocol assignments (ORCHID and others)
    ("5f00::/16", "a reserved address"),  # SRv6 segment identifiers
)
_NOT_GLOBAL: tuple[tuple[Network, str], ...] = tuple(
    (ipaddress.ip_network(net), why) for net, why in (*_IPV4_NOT_GLOBAL, *_IPV6_NOT_GLOBAL)
)

# Forms of an IPv4 address that inet_aton reads besides dotted decimal: 2130706433, 0x7f000001,
# 0177.0.0.1, 127.1. They name the same addresses, so they are read and checked as such.
NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")


class DestinationRefused(Exception):
    """A webhook URL or the address it resolves to is not allowed (``code``: REFUSED or
    UNRESOLVED). The message is for admins and names no resolved address."""

    def __init__(self, message: str, code: str = REFUSED) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Destination:
    """A checked URL: where it points (``addresses``, every one allowed) and how to ask for it
    at one of them."""

    url: str
    scheme: str
    host: str  # ASCII (IDNA), lower case, without brackets
    port: int
    addresses: tuple[Address, ...]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = {"http": 80, "https": 443}[self.scheme]
        return name if self.port == default else f"{name}:{self.port}"

    def url_at(self, address: Address) -> str:
        """The URL with ``address`` in place of the host: the request goes there."""
        parts = urlsplit(self.url)
        where = f"[{address}]" if address.version == 6 else str(address)
        return urlunsplit((self.scheme, f"{where}:{self.port}", parts.path or "/", parts.query, ""))


def allowed_networks() -> list[Network]:
    return [ipaddress.ip_network(n, strict=False) for n in settings.WEBHOOK_ALLOWED_NETWORKS]


def _kind(address: Address) -> str | None:
    """Why ``address`` is not globally routable unicast (a few words), or None when it is."""
    for network, why in _NOT_GLOBAL:
        if address.version == network.version and address in network:
            return why
    if isinstance(address, ipaddress.IPv6Address) and address not in GLOBAL_UNICAST:
        # Outside 2000::/3 only two forms name a public host: an IPv4-mapped address and the
        # well-known NAT64 prefix (an IPv6-only network's DNS64 answers with it); both are judged
        # by the IPv4 address they carry (refusal() asks that first).
        if address not in MAPPED and address not in NAT64:
            return "an address outside the global unicast range"
        return None
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address (cloud metadata services live there)"
    if address.is_unspecified:
        return "the unspecified address"
    if address.is_multicast:
        return "a multicast address"
    if address.is_private:
        return "a private address"
    if not address.is_global:
        return "a reserved address"
    return None


def _embedded(address: Address) -> list[Address]:
    """The address and the IPv4 addresses carried inside an IPv6 one (mapped, compatible,
    translated, 6to4, Teredo, NAT64): ``::ffff:127.0.0.1`` reaches 127.0.0.1 and is judged as
    that too, so the reason given is the clearer one."""
    found: list[Address] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if address.ipv4_mapped is not None:
            found.append(address.ipv4_mapped)
        elif address.sixtofour is not None:
            found.append(address.sixtofour)
        elif address.teredo is not None:
            found.extend(address.teredo)
        elif any(address in n for n in (NAT64, COMPATIBLE, TRANSLATED)) and int(address) > 1:
            found.append(low32)
    return found


def refusal(address: Address, networks: Sequence[Network] | None = None) -> str | None:
    """Why a connection to ``address`` is not allowed, or None: an address in an allowed
    network is allowed; any other must be globally routable unicast, as must every address
    carried inside it."""
    networks = allowed_networks() if networks is None else networks
    if any(address.version == n.version and address in n for n in networks):
        return None
    for each in reversed(_embedded(address)):  # the IPv4 inside first: the clearer reason
        if any(each.version == n.version and each in n for n in networks):
            continue
        kind = _kind(each)
        if kind is not None:
            return kind
    return None


def literal_address(host: str) -> Address | None:
    """The address a host written as one names (any form inet_aton reads), else None."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if NUMERIC_HOST.fullmatch(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _split(url: str) -> tuple[str, str, int]:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise DestinationRefused(f"The URL cannot be read ({exc}).") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise DestinationRefused("Use an http:// or https:// address.")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise DestinationRefused(
            "Put no user name or password in the URL: the receiver checks the signature."
        )
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise DestinationRefused("The URL has no host.")
    if "%" in host:
        raise DestinationRefused("An IPv6 zone (%…) is not allowed in a webhook URL.")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise DestinationRefused("The host is not a valid name.") from None
    return scheme, host.lower(), port or (443 if scheme == "https" else 80)


def resolve(url: str) -> Destination:
    """Check ``url`` and resolve its host now: a Destination whose every address is allowed,
    or DestinationRefused (REFUSED; UNRESOLVED when the name does not resolve)."""
    scheme, host, port = _split(url)
    literal = literal_address(host)
    if literal is not None:
        addresses: list[Address] = [literal]
    else:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise DestinationRefused(
                f"The host name {host} does not resolve ({exc}).", code=UNRESOLVED
            ) from None
        addresses = []
        for _family, _type, _proto, _name, sockaddr in found:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise DestinationRefused(f"The host name {host} has no address.", code=UNRESOLVED)
    networks = allowed_networks()
    for address in addresses:
        why = refusal(address, networks)
        if why is not None:
            shown = "It is" if literal is not None else f"{host} resolves to"
            raise DestinationRefused(
                f"{shown} {why}. Webhooks go to public addresses only, unless an "
                "administrator allows the network in WEBHOOK_ALLOWED_NETWORKS."
            )
    return Destination(url, scheme, host, port, tuple(addresses))


class PinnedAdapter(HTTPAdapter):
    """Connects to the address in the request's URL (one that was checked) while TLS names and
    verifies the URL's host: SNI and the certificate check use ``hostname``."""

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        super().__init__(max_retries=0)

    def build_connection_pool_key_attributes(
        self, request: requests.PreparedRequest, verify: bool | str, cert: Any = None
    ) -> Any:
        host_params, pool_kwargs = super().build_connection_pool_key_attributes(
            request, verify, cert
        )
        kwargs: dict[str, Any] = dict(pool_kwargs)
        if host_params["scheme"] == "https":
            kwargs["server_hostname"] = self.hostname
            kwargs["assert_hostname"] = self.hostname
        return host_params, kwargs


def pinned_session(destination: Destination) -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # no environment proxies: they would resolve the name again
    adapter = PinnedAdapter(destination.host)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
