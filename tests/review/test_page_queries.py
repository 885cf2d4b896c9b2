"""SQL per review page does not grow with the work: the queue and the packet page make the
same number of queries for a few packets or many, one page or twenty, one segment or three,
with or without a check open on the document (review.visibility answers with one query per
page, never one per row, section or check). bench_review measures the same at 100,000
documents; these tests keep it true between its runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from documents.models import Document, Page
from engine.schemas import DocType
from review.corrections import corrected_output, correction_build
from review.models import ReviewPacket, SecondReview
from review.queue import cursor_of
from review.services import decisions
from tests.review import check_states
from tests.review.conftest import escalate

pytestmark = pytest.mark.django_db

P, R, C = DocType.PATHOLOGY, DocType.RADIOLOGY, DocType.CLINICAL_NOTE
SMALL = (1, [(1, 1, R)])  # pages, segments
LARGE = (20, [(1, 5, R), (6, 12, P), (13, 20, C)])


def packet_of(number: int, pages: int, segments: list[tuple[int, int, DocType]]) -> ReviewPacket:
    """An escalated packet of ``pages`` pages classified as ``segments``, its fields
    extracted (one extraction per segment)."""
    texts = [
        f"CT CHEST {number} PAGE {n}\n\nFINDINGS\n\nNo nodules are seen on page {n}."
        for n in range(1, pages + 1)
    ]
    document = Document.objects.create(
        original_filename=f"queries-{number}.pdf",
        sha256=f"{number:064d}",
        mime_type=Document.MIME_PDF,
        size_bytes=1,
        page_count=pages,
        status=Document.Status.READY,
    )
    Page.objects.bulk_create(
        Page(document=document, number=n, text=t, paragraphs=t.split("\n\n"))
        for n, t in enumerate(texts, start=1)
    )
    output = corrected_output(correction_build(segments=segments))
    return escalate(document, texts, output, extract=True)


def corrected(packet: ReviewPacket, user: Any, segments: list[tuple[int, int, DocType]]) -> None:
    decisions.packet_open(packet=packet, user=user)
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=user,
        correction=correction_build(segments=segments),
        notes="",
    )


TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE SAVEPOINT")


def queries(user: Any, url: str, **headers: str) -> int:
    """The SQL statements of ``url`` for ``user`` (transaction control left out: a test runs
    inside a transaction, so a commit is a savepoint here), as most requests find it: after
    a first request (which computes the queue's cached counts and takes the packet's lock)."""
    client = Client()
    client.force_login(user)
    assert client.get(url, headers=headers).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, headers=headers)
    assert response.status_code == 200, url
    return sum(1 for q in captured if not q["sql"].upper().startswith(TRANSACTION))


def packet_url(packet: ReviewPacket) -> str:
    return reverse("review:packet", args=[packet.pk])


@pytest.fixture
def states(django_user_model, roles, settings) -> Iterator[check_states.States]:
    from core import events

    built = check_states.build(django_user_model, roles, settings)
    yield built
    events.published.disconnect(built.heard)


def test_an_open_packet_takes_the_same_queries_for_one_page_or_twenty(reviewer, other_reviewer):
    small, large = packet_of(1, *SMALL), packet_of(2, *LARGE)
    assert large.document.pages.count() == 20 and len(large.classification["segments"]) == 3
    # The reviewer who holds the lock, and a reader who finds it held.
    holding = [queries(reviewer, packet_url(p)) for p in (small, large)]
    reading = [queries(other_reviewer, packet_url(p)) for p in (small, large)]
    assert holding[0] == holding[1], holding
    assert reading[0] == reading[1], reading
    # A page that asks once for each of its parts: session, user, permissions (2), the packet,
    # the view's audit record and the lock (one commit), pages with their boxes, decisions,
    # visibility, attempts, extractions, and the reviewer's progress (2).
    assert holding[0] <= 14, holding


def test_a_decided_packet_takes_the_same_queries_in_every_state_of_its_check(states, settings):
    """Decided packets with no check (one page and twenty), under an open second review and
    under adjudication: for each role, the same number of queries (the visibility rule asks
    once, whichever answers it hides)."""
    settings.SECOND_REVIEW_ON_CORRECTION = False
    decider = states.users["first_decider"]
    plain = []
    for number, (pages, segments) in ((11, SMALL), (12, LARGE)):
        packet = packet_of(number, pages, segments)
        corrected(packet, decider, [(1, pages, P)])
        plain.append(packet)
    assert not SecondReview.objects.filter(packet__in=plain).exists()
    checked = [states.packets["second_open"], states.packets["adjudication"]]
    assert [s.status for s in (states.seconds["second_open"], states.seconds["adjudication"])] == [
        SecondReview.Status.AWAITING,
        SecondReview.Status.ADJUDICATION,
    ]
    for role, user in states.users.items():
        counts = [queries(user, packet_url(p)) for p in plain + checked]
        assert len(set(counts)) == 1, (role, counts)


def test_the_queue_takes_the_same_queries_for_three_packets_or_forty(
    states, reviewer, other_reviewer
):
    """First page, a page after a cursor, a type filter and the counts' refresh, for a queue
    of three packets and one of forty (more than a page, some held by another reviewer, some
    decided, decisions under a check among them)."""
    packets = [packet_of(n, *SMALL) for n in range(20, 23)]
    pages = {
        "first": (reverse("review:queue"), {}),
        "after": (f"{reverse('review:queue')}?after={cursor_of(packets[0])}", {}),
        "type": (f"{reverse('review:queue')}?type={R.value}", {}),
        "decided": (f"{reverse('review:queue')}?status=completed", {}),
        "counts": (reverse("review:queue"), {"HX-Request": "true", "HX-Target": "queue-counts"}),
    }
    few = {name: queries(reviewer, url, **headers) for name, (url, headers) in pages.items()}
    more = [packet_of(n, *(LARGE if n % 2 else SMALL)) for n in range(23, 60)]
    for packet in more[:5]:
        decisions.packet_open(packet=packet, user=other_reviewer)
    corrected(more[5], other_reviewer, [(1, 1, P)])
    corrected(more[6], reviewer, [(1, 20, P)])
    assert ReviewPacket.objects.filter(status__in=ReviewPacket.OPEN_STATUSES).count() > 30
    many = {name: queries(reviewer, url, **headers) for name, (url, headers) in pages.items()}
    assert few == many
    assert many["first"] <= 9, many
