"""Where webhooks may go: public addresses only (unless WEBHOOK_ALLOWED_NETWORKS allows a
network), checked when an admin saves an endpoint and again at every send after resolving the
name, and the connection made to the address that was checked (DNS rebinding).

No test here sends a packet beyond loopback: ``no_traffic_beyond_loopback`` makes any attempt
to connect elsewhere fail the test, so even a broken check cannot reach a private or public
address."""

from __future__ import annotations

import base64
import datetime as dt
import importlib
import ipaddress
import socket
import ssl
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse

from core.events import Event
from integrations import destinations, services, signing
from integrations.admin import WebhookEndpointForm
from integrations.models import WebhookDelivery, WebhookEndpoint
from tests.integrations.receiver import Receiver

REFUSED = [
    # loopback, in every spelling
    "http://127.0.0.1/hooks",
    "http://127.1.2.3:8080/hooks",
    "http://127.1/",  # short form
    "http://2130706433/",  # decimal
    "http://0x7f000001/",  # hex
    "http://0x7f.0x0.0x0.0x1/",  # hex, dotted
    "http://0177.0.0.1/",  # octal
    "http://localhost:8000/",  # a host name that resolves to loopback (/etc/hosts)
    "http://LocalHost./",
    "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]:8080/",
    "http://[::ffff:127.0.0.1]/",  # IPv4-mapped IPv6
    "http://[::ffff:7f00:1]/",
    "http://[2002:7f00:1::]/",  # 6to4 carrying 127.0.0.1
    "http://[64:ff9b::7f00:1]/",  # NAT64 carrying 127.0.0.1
    # unspecified ("this host")
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    # link-local: the cloud metadata service
    "http://169.254.169.254/latest/meta-data/",
    "http://2852039166/latest/meta-data/",  # 169.254.169.254, decimal
    "http://0xa9fea9fe/",  # and hex
    "http://[::ffff:169.254.169.254]/",
    "http://[fe80::1]/",
    # private ranges
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://192.168.1.10:8443/",
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://[fd00::1]/",  # unique local
    "http://[::ffff:10.0.0.5]/",
    "https://224.0.0.1/",  # multicast
]
NOT_HTTP = ["ftp://files.example.com/", "file:///etc/passwd", "gopher://127.0.0.1:25/"]
WITH_CREDENTIALS = ["https://user:pass@hooks.example.com/", "https://token@hooks.example.com/"]
PUBLIC = "93.184.215.14"  # looks public; never connected to here


@pytest.fixture(autouse=True)
def no_traffic_beyond_loopback(monkeypatch) -> None:
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if not ipaddress.ip_address(host).is_loopback:
            raise AssertionError(f"a test tried to connect to {host}")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def dns(monkeypatch) -> dict[str, list[str]]:
    """Names of our own: each lookup of a name takes the next answer of its list (the last one
    repeats; an empty list: no such name); every other name is resolved as usual.
    ``answers["_lookups"]`` counts the lookups."""
    answers: dict[str, list[str]] = {}
    lookups: dict[str, int] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name in answers:
            lookups[name] = lookups.get(name, 0) + 1
            if not answers[name]:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            address = answers[name][min(lookups[name], len(answers[name])) - 1]
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    answers["_lookups"] = lookups  # type: ignore[assignment]
    return answers


def form(url: str, secret: str | None = None) -> WebhookEndpointForm:
    return WebhookEndpointForm(
        data={
            "name": "LIS",
            "url": url,
            "secret": secret or signing.new_secret(),
            "events": ["run.decided"],
            "active": "on",
        }
    )


@pytest.mark.parametrize("url", REFUSED)
def test_a_destination_that_is_not_public_is_refused(url):
    with pytest.raises(destinations.DestinationRefused) as refused:
        destinations.resolve(url)
    assert refused.value.code == destinations.REFUSED
    assert "WEBHOOK_ALLOWED_NETWORKS" in refused.value.message


@pytest.mark.parametrize("url", NOT_HTTP + WITH_CREDENTIALS)
def test_other_schemes_and_credentials_in_the_url_are_refused(url):
    with pytest.raises(destinations.DestinationRefused, match=r"http|user name"):
        destinations.resolve(url)


@pytest.mark.django_db
@pytest.mark.parametrize("url", [*REFUSED[::3], *WITH_CREDENTIALS[:1]])
def test_the_admin_form_refuses_such_a_destination_with_a_clear_error(url):
    endpoint_form = form(url)
    assert not endpoint_form.is_valid()
    [error] = endpoint_form.errors["url"]
    assert "WEBHOOK_ALLOWED_NETWORKS" in error or "user name" in error


@pytest.mark.django_db
def test_the_admin_page_shows_the_refusal_and_saves_nothing(admin_user):
    client = Client()
    client.force_login(admin_user)
    response = client.post(
        reverse("admin:integrations_webhookendpoint_add"),
        {
            "name": "metadata",
            "url": "http://169.254.169.254/latest/meta-data/",
            "secret": signing.new_secret(),
            "events": ["run.decided"],
            "active": "on",
            "deliveries-TOTAL_FORMS": "0",
            "deliveries-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 200
    assert "a link-local address" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.django_db
def test_a_public_destination_and_an_allowed_network_are_accepted(dns, settings):
    dns["hooks.example.org"] = [PUBLIC]
    assert form("https://hooks.example.org/vetted").is_valid()
    assert not form("http://10.20.1.5/hooks").is_valid()
    settings.WEBHOOK_ALLOWED_NETWORKS = ["10.20.0.0/16"]
    assert form("http://10.20.1.5/hooks").is_valid()
    assert not form("http://10.21.1.5/hooks").is_valid()  # only the allowed network
    assert not form("http://127.0.0.1/hooks").is_valid()


@pytest.mark.django_db
def test_a_name_must_resolve_and_every_address_it_has_must_be_allowed(dns, monkeypatch):
    dns["nowhere.example.org"] = []
    assert "does not resolve" in form("https://nowhere.example.org/").errors["url"][0]
    real = socket.getaddrinfo

    def two(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "split.example.org":
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", (PUBLIC, 443)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", 443)),
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", two)
    [error] = form("https://split.example.org/").errors["url"]
    assert error.startswith("split.example.org resolves to a private address")
    assert "10.0.0.7" not in error  # the log and the form name no internal address


@pytest.mark.django_db
def test_a_weak_or_malformed_secret_is_refused():
    url = "http://8.8.8.8/hooks"  # a literal address: nothing is resolved or sent
    assert form(url).is_valid()
    for secret, words in (
        ("whsec_test", "24 to 64 bytes"),
        ("whsec_not base64!", "base64"),
        ("plain-secret-without-prefix-0123456789", "starts with whsec_"),
    ):
        [error] = form(url, secret).errors["secret"]
        assert words in error


# -- at send time ----------------------------------------------------------------------------------


def emit_to(url: str) -> WebhookDelivery:
    WebhookEndpoint.objects.create(name="LIS", url=url, events=[Event.DOCUMENT_READY])
    with transaction.atomic():
        [delivery] = services.event_emit(kind=Event.DOCUMENT_READY, data={"document_id": "d"})
    delivery.refresh_from_db()
    return delivery


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("url", REFUSED[::2])
def test_a_delivery_to_a_refused_destination_fails_at_once_without_connecting(url):
    """An endpoint saved some other way (the ORM, an older version) is checked at send time."""
    delivery = emit_to(url)
    assert (delivery.status, delivery.attempts, delivery.error_code) == (
        "failed",
        1,
        "destination_refused",
    )
    assert delivery.response_code is None and "WEBHOOK_ALLOWED_NETWORKS" in delivery.last_error


@pytest.mark.django_db(transaction=True)
def test_a_name_that_resolves_to_loopback_at_send_time_is_refused(dns, settings):
    """Accepted when saved (a public answer), refused when it is sent (now loopback)."""
    dns["hooks.example.org"] = [PUBLIC, "127.0.0.1"]
    assert form("http://hooks.example.org/vetted").is_valid()
    delivery = emit_to("http://hooks.example.org/vetted")
    assert (delivery.status, delivery.error_code) == ("failed", "destination_refused")
    assert delivery.last_error.startswith("hooks.example.org resolves to a loopback address")


@pytest.mark.django_db(transaction=True)
def test_the_connection_goes_to_the_address_that_was_checked(dns, loopback_webhooks):
    """DNS rebinding: the name answers 127.0.0.1 to the check and 127.0.0.2 to any later
    lookup. The delivery reaches 127.0.0.1 (asked for by name: the Host header) and the trap
    on 127.0.0.2 hears nothing: the name was looked up once, and the address it gave used."""
    with Receiver() as receiver:
        try:
            trap = Receiver(host="127.0.0.2", port=receiver.port)
        except OSError:
            pytest.skip("127.0.0.2 cannot be bound here")
        with trap:
            dns["hooks.example.test"] = ["127.0.0.1", "127.0.0.2"]
            delivery = emit_to(f"http://hooks.example.test:{receiver.port}/hooks/vetted")
    assert (delivery.status, delivery.response_code) == ("succeeded", 200)
    [request] = receiver.received
    assert request.headers["Host"] == f"hooks.example.test:{receiver.port}"
    assert request.path == "/hooks/vetted"
    assert trap.received == []
    assert dns["_lookups"]["hooks.example.test"] == 1


def certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path, settings) -> Any:
    """An https receiver on 127.0.0.1 serving a certificate for ``name``, which Vetted trusts
    (WEBHOOK_CA_BUNDLE): only the name in it decides."""

    def start(name: str) -> Receiver:
        cert, key = certificate(tmp_path, name)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        settings.WEBHOOK_CA_BUNDLE = str(cert)
        return Receiver(tls=context)

    return start


@pytest.mark.django_db(transaction=True)
def test_https_to_a_checked_address_still_names_and_verifies_the_host(
    dns, loopback_webhooks, tls_receiver
):
    """Connected by address, TLS still asks for the URL's name (SNI) and checks the
    certificate against it."""
    with tls_receiver("hooks.example.test") as receiver:
        dns["hooks.example.test"] = ["127.0.0.1"]
        delivery = emit_to(f"https://hooks.example.test:{receiver.port}/hooks/vetted")
    assert (delivery.status, delivery.response_code) == ("succeeded", 200)
    assert receiver.sni == ["hooks.example.test"]
    assert receiver.received[0].headers["Host"] == f"hooks.example.test:{receiver.port}"


@pytest.mark.django_db(transaction=True)
def test_a_certificate_for_another_name_fails_the_delivery(dns, loopback_webhooks, tls_receiver):
    with tls_receiver("other.example.test") as receiver:
        dns["hooks.example.test"] = ["127.0.0.1"]
        delivery = emit_to(f"https://hooks.example.test:{receiver.port}/hooks/vetted")
    assert (delivery.status, delivery.error_code) == ("retrying", "tls_failed")
    assert receiver.received == []


# -- the upgrade -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_migration_keeps_old_receivers_verifying_and_forgets_kept_answers():
    from django.apps import apps

    migration = importlib.import_module(
        "integrations.migrations.0004_standard_webhooks_and_delivery_timings"
    )
    old = "whsec_Zm9v-bar_baz-0123456789abcdefghijklmnop"  # the first scheme's token_urlsafe
    endpoint = WebhookEndpoint.objects.create(name="old", url="http://8.8.8.8/", secret=old)
    failed = WebhookDelivery.objects.create(
        endpoint=endpoint,
        event_id="00000000-0000-0000-0000-000000000001",
        event=Event.PING,
        body="{}",
        status="failed",
        response_code=500,
        last_error="HTTP 500 Internal Server Error: <html>internal admin page, secrets</html>",
    )
    migration.forget_answers(apps, None)
    migration.standard_secrets(apps, None)
    endpoint.refresh_from_db()
    failed.refresh_from_db()
    assert endpoint.secret == "whsec_" + base64.b64encode(old.encode()).decode()
    assert signing.secret_key(endpoint.secret) == old.encode()  # the old HMAC key, unchanged
    assert (failed.last_error, failed.error_code) == ("HTTP 500", "http_status")
