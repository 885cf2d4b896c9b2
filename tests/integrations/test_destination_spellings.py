"""Every spelling of an address that is not globally routable unicast is refused as a webhook
destination, and public addresses are allowed: a generator over addresses and their spellings
(IPv4 as inet_aton reads it: decimal, octal, hex, short forms; IPv6 compressed, expanded, upper
case, with a dotted tail; IPv4 carried inside IPv6 in every transition form), not a list of
examples. Nothing here connects anywhere: literal addresses are never resolved, names are
answered by a patched ``socket.getaddrinfo``."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from integrations import destinations

V4_NOT_GLOBAL: list[Any] = [ipaddress.IPv4Network(n) for n, _ in destinations._IPV4_NOT_GLOBAL]
V6_NOT_GLOBAL: list[Any] = [
    ipaddress.IPv6Network(n) for n in ("fec0::/10", "fe80::/10", "fc00::/7", "ff00::/8")
] + [ipaddress.IPv6Network(n) for n, _ in destinations._IPV6_NOT_GLOBAL]


def _in(network: Any) -> st.SearchStrategy[Any]:
    first, last = int(network.network_address), int(network.broadcast_address)
    cls = ipaddress.IPv4Address if network.version == 4 else ipaddress.IPv6Address
    return st.integers(first, last).map(cls)


non_public_v4 = st.sampled_from(V4_NOT_GLOBAL).flatmap(_in)
non_public_v6 = st.sampled_from(V6_NOT_GLOBAL).flatmap(_in)


def _part(value: int, style: str) -> str:
    if style == "hex":
        return hex(value)
    if style == "HEX":
        return "0X" + format(value, "X")
    if style == "octal":
        return "0" + format(value, "o")
    if style == "padded":  # leading zeros of hex: inet_aton reads 0x00007f as 127
        return "0x" + format(value, "06x")
    return str(value)


@st.composite
def ipv4_spelling(draw: st.DrawFn, address: ipaddress.IPv4Address) -> str:
    """One of the ways inet_aton (and so a resolver) reads ``address``."""
    a, b, c, d = address.packed
    style = st.sampled_from(["decimal", "hex", "HEX", "octal", "padded"])
    form = draw(st.sampled_from(["dotted", "one", "two", "three"]))
    if form == "one":  # 2130706433
        parts = [int(address)]
    elif form == "two":  # 127.1
        parts = [a, (b << 16) | (c << 8) | d]
    elif form == "three":  # 127.0.1
        parts = [a, b, (c << 8) | d]
    else:
        parts = [a, b, c, d]
    spelled = ".".join(_part(p, draw(style)) for p in parts)
    if draw(st.booleans()):
        spelled += "."  # a fully qualified name: the trailing dot is dropped
    return spelled


def _v6_spelling(draw: st.DrawFn, address: ipaddress.IPv6Address) -> str:
    form = draw(st.sampled_from(["compressed", "exploded", "short", "dotted", "upper"]))
    if form == "exploded":
        return address.exploded
    if form == "short":  # every group, no leading zeros: 0:0:0:0:0:0:7f00:1
        return ":".join(format(int(g, 16), "x") for g in address.exploded.split(":"))
    if form == "dotted":  # the last 32 bits as an IPv4 address: 0:0:0:0:0:0:127.0.0.1
        groups = [format(int(g, 16), "x") for g in address.exploded.split(":")[:6]]
        return ":".join(groups) + ":" + str(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
    if form == "upper":
        return address.compressed.upper()
    return address.compressed


@st.composite
def v4_in_v6(draw: st.DrawFn) -> ipaddress.IPv6Address:
    """A non-public IPv4 address carried in one of the IPv6 transition forms."""
    v4 = int(draw(non_public_v4))
    form = draw(
        st.sampled_from(
            ["mapped", "compatible", "translated", "nat64", "nat64-local", "6to4", "teredo"]
        )
    )
    low = draw(st.integers(0, 2**80 - 1))
    prefix = {
        "mapped": 0xFFFF << 32,
        "compatible": 0,
        "translated": 0xFFFF << 48,
        "nat64": int(ipaddress.IPv6Address("64:ff9b::")),
        "nat64-local": int(ipaddress.IPv6Address("64:ff9b:1::")) | ((low % 2**48) << 32),
    }
    if form == "6to4":
        return ipaddress.IPv6Address((0x2002 << 112) | (v4 << 80) | low)
    if form == "teredo":  # server at bits 64-95, client obfuscated (inverted) in the low 32
        server = draw(st.integers(0, 2**32 - 1))
        flags = draw(st.integers(0, 2**32 - 1))
        return ipaddress.IPv6Address(
            (0x20010000 << 96) | (server << 64) | (flags << 32) | (v4 ^ 0xFFFFFFFF)
        )
    return ipaddress.IPv6Address(prefix[form] | v4)


@st.composite
def non_public_host(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["v4", "v6", "v4-in-v6"]))
    if kind == "v4":
        return draw(ipv4_spelling(draw(non_public_v4)))
    address = draw(non_public_v6 if kind == "v6" else v4_in_v6())
    return f"[{_v6_spelling(draw, address)}]"


def _url(draw: st.DrawFn, host: str) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP"]))
    port = draw(st.sampled_from(["", ":80", ":8443", ":443"]))
    return f"{scheme}://{host}{port}/hooks"


@given(st.data())
def test_every_spelling_of_a_non_public_address_is_refused(data):
    url = _url(data.draw, data.draw(non_public_host()))
    with pytest.raises(destinations.DestinationRefused) as refused:
        destinations.resolve(url)
    assert refused.value.code == destinations.REFUSED, url


def _answering(name: str, address: str) -> Any:
    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        assert host == name, f"an unexpected lookup of {host}"
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    return mock.patch.object(socket, "getaddrinfo", getaddrinfo)


@given(st.one_of(non_public_v4, non_public_v6, v4_in_v6()))
def test_a_name_resolving_to_a_non_public_address_is_refused(address):
    with (
        _answering("hooks.example.org", str(address)),
        pytest.raises(destinations.DestinationRefused) as refused,
    ):
        destinations.resolve("https://hooks.example.org/vetted")
    assert refused.value.code == destinations.REFUSED
    assert str(address) not in refused.value.message  # no internal address shown


def _public(address: Any) -> bool:
    return not any(address in n for n in (*V4_NOT_GLOBAL, *V6_NOT_GLOBAL)) and address.is_global


public_v4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address).filter(_public)
public_v6 = (
    st.integers(int(ipaddress.IPv6Address("2000::")), int(ipaddress.IPv6Address("3fff::")) - 1)
    .map(ipaddress.IPv6Address)
    .filter(_public)
)


@given(st.data())
def test_a_public_address_is_allowed_in_any_spelling(data):
    if data.draw(st.booleans()):
        address: Any = data.draw(public_v4)
        host = data.draw(ipv4_spelling(address))
        if data.draw(st.booleans()):  # the same host through a mapped or NAT64 IPv6 address
            prefix = data.draw(st.sampled_from(["::ffff:", "64:ff9b::"]))
            host = f"[{prefix}{address}]"
    else:
        address = data.draw(public_v6)
        host = f"[{_v6_spelling(data.draw, address)}]"
    destination = destinations.resolve(_url(data.draw, host))
    assert [int(a) & 0xFFFFFFFF for a in destination.addresses] == [int(address) & 0xFFFFFFFF]


@given(st.one_of(public_v4, public_v6))
def test_a_name_resolving_to_a_public_address_is_allowed(address):
    with _answering("hooks.example.org", str(address)):
        destination = destinations.resolve("https://hooks.example.org/vetted")
    assert destination.addresses == (address,)


@pytest.mark.parametrize(
    "host",
    [
        "[::127.0.0.1]",
        "[0:0:0:0:0:0:127.0.0.1]",
        "[::a9fe:a9fe]",
        "[::ffff:0:7f00:1]",
        "[64:ff9b:1::a9fe:a9fe]",
        "[fec0::1]",
        "[2001:db8::5]",
        "[2001:2::1]",
        "[3fff::1]",
        "[2002:c0a8:0101::1]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1
        "198.18.0.1",
        "203.0.113.9",
        "192.0.0.8",
        "240.0.0.1",
        "255.255.255.255",
        "\uff11\uff12\uff17\uff0e\uff10\uff0e\uff10\uff0e\uff11",  # full-width 127.0.0.1
    ],
)
def test_the_forms_named_in_the_issue_are_refused(host):
    with pytest.raises(destinations.DestinationRefused) as refused:
        destinations.resolve(f"http://{host}/hooks")
    assert refused.value.code == destinations.REFUSED
