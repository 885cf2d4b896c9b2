"""Ground-truth versions are provisional or final; blind checks hide labels from everyone
but the people they allow (review.visibility), webhooks included; re-runs never replace a
clinician's decision nor open a second packet."""

from __future__ import annotations

from typing import Any

import pytest

from core import events
from documents.models import Document
from engine.schemas import DocType
from reliability.models import Run
from reliability.services import run_start
from review.corrections import correction_build
from review.models import GroundTruth, ReviewPacket, RunComparison, SecondReview
from review.services import decisions, second_review
from review.visibility import label_view
from tests.conftest import ready_document
from tests.review.conftest import PAGES, make_packet

pytestmark = pytest.mark.django_db

CLEAN = (
    "SURGICAL PATHOLOGY REPORT\n\nSPECIMEN\n\nLeft breast, core biopsy.\n\nFINAL DIAGNOSIS\n\n"
    "Invasive ductal carcinoma, Nottingham grade 2.\n\nMICROSCOPIC DESCRIPTION\n\nNests of "
    "malignant epithelial cells infiltrate a desmoplastic stroma.\n\nElectronically signed out."
)


@pytest.fixture
def published() -> Any:
    """Every event published (what the webhooks would send), in order."""
    seen: list[tuple[str, dict[str, Any]]] = []

    def listen(kind: str, data: dict[str, Any]) -> None:
        seen.append((kind, data))

    events.published.connect(listen)
    yield seen
    events.published.disconnect(listen)


def correct(packet: ReviewPacket, user: Any, to: DocType = DocType.RADIOLOGY) -> Any:
    decisions.packet_open(packet=packet, user=user)
    return decisions.review_submit(
        packet_id=packet.pk,
        reviewer=user,
        correction=correction_build(segments=[(1, packet.document.page_count, to)]),
        notes="",
    )


def validate(packet: ReviewPacket, user: Any) -> Any:
    decisions.packet_open(packet=packet, user=user)
    return decisions.review_submit(packet_id=packet.pk, reviewer=user, correction=None, notes="")


# -- states --------------------------------------------------------------------------------------


def test_a_decision_without_a_second_review_is_final_and_one_with_it_provisional(
    reviewer, settings
):
    settings.SECOND_REVIEW_ON_CORRECTION = True
    settings.SECOND_REVIEW_ON_BLOCKER = False
    validated = validate(make_packet(sha="a"), reviewer)
    corrected = correct(make_packet(sha="b"), reviewer)
    assert validated.ground_truth.state == GroundTruth.State.FINAL
    assert corrected.ground_truth.state == GroundTruth.State.PROVISIONAL


def test_a_second_review_that_agrees_makes_the_decision_final(
    reviewer, other_reviewer, published, settings
):
    settings.SECOND_REVIEW_ON_BLOCKER = False
    packet = make_packet(sha="a")
    review = correct(packet, reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.RADIOLOGY)]
    )
    review.ground_truth.refresh_from_db()
    assert review.ground_truth.state == GroundTruth.State.FINAL
    # The webhooks learnt the type only once it was final.
    changes = [d for kind, d in published if kind == "ground_truth.changed"]
    assert [(d["state"], d.get("dominant_type")) for d in changes] == [
        ("provisional", None),
        ("final", "radiology"),
    ]
    decided = next(d for kind, d in published if kind == "packet.decided")
    assert decided["state"] == "provisional"
    assert "dominant_type" not in decided and "outcome" not in decided


def test_the_second_review_compares_segments_not_only_the_type(reviewer, other_reviewer):
    packet = make_packet(sha="a", pages=[PAGES[0], PAGES[1], PAGES[0]])
    decisions.packet_open(packet=packet, user=reviewer)
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=reviewer,
        correction=correction_build(
            segments=[(1, 1, DocType.RADIOLOGY), (2, 3, DocType.PATHOLOGY)]
        ),
        notes="",
    )
    second = SecondReview.objects.get()
    assert second.first_segments == [[1, 1, "radiology"], [2, 3, "pathology"]]
    # One type for the whole file, the dominant type of the first answer: not an agreement.
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 3, DocType.PATHOLOGY)]
    )
    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATION


# -- what each role sees ------------------------------------------------------------------------


def test_a_decision_under_a_second_review_is_hidden_from_everyone_but_its_decider(
    reviewer, other_reviewer, admin_user, outsider
):
    packet = make_packet(sha="a")
    correct(packet, reviewer)
    document = packet.document
    assert label_view(reviewer, document).everything  # the first decider
    assert label_view(admin_user, document).everything  # Admins
    for user in (other_reviewer, outsider):
        view = label_view(user, document)
        assert not view.human and view.machine and "second review" in view.why
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=[(1, 2, DocType.PATHOLOGY)]
    )
    # The second reviewer answered: they may see both; others still may not (adjudication).
    assert label_view(other_reviewer, document).everything
    assert not label_view(outsider, document).human


def test_an_open_audit_hides_the_machines_answer_from_everyone_but_admins(
    reviewer, admin_user, settings
):
    from review.models import AuditSample
    from tests.review.test_quality_checks import accept

    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    assert AuditSample.objects.filter(run=run).exists()
    truth = GroundTruth.objects.get(document=run.document)
    assert truth.state == GroundTruth.State.PROVISIONAL
    view = label_view(reviewer, run.document)
    assert not view.machine and not view.human
    assert label_view(admin_user, run.document).everything


# -- re-runs -------------------------------------------------------------------------------------


@pytest.fixture
def rerun(django_capture_on_commit_callbacks) -> Any:
    """Start a run and execute it (inline jobs run when the transaction commits)."""

    def start(document: Document) -> Run:
        with django_capture_on_commit_callbacks(execute=True):
            run = run_start(document=document)
        run.refresh_from_db()
        return run

    return start


def test_a_rerun_never_replaces_a_clinicians_decision_and_opens_no_packet(
    reviewer, published, settings, rerun
):
    settings.SECOND_REVIEW_ON_CORRECTION = False
    packet = make_packet(sha="f")
    validate(packet, reviewer)
    # The document whose label a clinician decided is re-run.
    clinician_doc = packet.document
    before = (GroundTruth.objects.count(), ReviewPacket.objects.count())
    again = rerun(clinician_doc)
    assert again.status == Run.Status.COMPLETED
    assert (GroundTruth.objects.count(), ReviewPacket.objects.count()) == before
    comparison = RunComparison.objects.get(run=again)
    assert comparison.standing_type == "pathology" and comparison.standing_truth is not None
    decided = [d for kind, d in published if kind == "run.decided" and d["run_id"] == again.pk]
    assert decided and decided[0]["standing_kept"] is True


def test_a_rerun_with_a_packet_still_open_opens_no_second_packet(rerun):
    packet = make_packet(sha="a")
    again = rerun(packet.document)
    assert ReviewPacket.objects.filter(document=packet.document).count() == 1
    assert RunComparison.objects.get(run=again).open_packet == packet


def test_an_accepted_rerun_over_a_machine_label_adds_a_version(rerun):
    document = ready_document(CLEAN, sha="e")
    assert rerun(document).final_decision == "AUTO_ACCEPT"
    rerun(document)
    versions = list(
        GroundTruth.objects.filter(document=document)
        .order_by("version")
        .values_list("version", "source")
    )
    assert versions == [(1, "AUTO_ACCEPTED"), (2, "AUTO_ACCEPTED")]
    assert not RunComparison.objects.exists()
    assert Document.objects.get(pk=document.pk).status == Document.Status.READY
