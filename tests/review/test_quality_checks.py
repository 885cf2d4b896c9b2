"""Audits of auto-accepted runs, second reviews and adjudication: sampling, blindness, the
ground truth they correct, who may do what, and the audit log."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from benchmarks.faults import clean_output
from documents.models import Document, Page
from engine import quality
from engine.schemas import DISPLAY_NAMES, DocType
from reliability.models import Run
from review.models import AuditEvent, AuditSample, GroundTruth, Review, SecondReview
from review.services import ReviewRefused, audits, decisions, ground_truth, second_review
from tests.review.conftest import PAGES, make_packet

pytestmark = pytest.mark.django_db

RADIOLOGY = [
    "CT CHEST WITH CONTRAST\n\nIndication: cough.\n\nFINDINGS\n\n"
    "No pulmonary embolism. Lungs are clear.\n\nIMPRESSION\n\nNo acute abnormality."
]


def document(n: int, pages: list[str] | None = None) -> Document:
    pages = pages or PAGES
    doc = Document.objects.create(
        original_filename=f"accepted-{n}.pdf",
        sha256=f"{n:064x}",
        mime_type=Document.MIME_PDF,
        size_bytes=1,
        page_count=len(pages),
        status=Document.Status.READY,
    )
    for number, text in enumerate(pages, start=1):
        Page.objects.create(document=doc, number=number, text=text, paragraphs=text.split("\n\n"))
    return doc


def accept(n: int, *, label: str = "pathology", pages: list[str] | None = None) -> Run:
    """An auto-accepted run as the reliability services record it."""
    pages = pages or PAGES
    doc = document(n, pages)
    output = clean_output(pages, label)
    assert output is not None
    run = Run.objects.create(
        document=doc,
        preset="clinical",
        classifier="offline",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
        attempts_count=1,
    )
    with transaction.atomic():  # as decisions.run_outcome_record records an accepted run
        truth = ground_truth.ground_truth_record(
            document=doc, run=run, output=output, source=GroundTruth.Source.AUTO_ACCEPTED
        )
        audits.audit_sample_consider(run=run, truth=truth, output=output)
    return run


# -- sampling ------------------------------------------------------------------------------------


def test_the_audited_share_of_accepted_runs_is_the_configured_rate(settings):
    settings.AUDIT_SAMPLE_RATE = 0.2
    n = 300
    for i in range(n):
        accept(i)
    sampled = AuditSample.objects.count()
    # Binomial tolerance (four standard deviations), plus the day's first run (always sampled).
    assert abs(sampled / n - 0.2) < 4 * (0.2 * 0.8 / n) ** 0.5 + 1 / n
    reasons = set(AuditSample.objects.values_list("reason", flat=True))
    assert reasons <= {"sampled", "daily_minimum"}


def test_every_type_is_audited_at_least_once_a_day_even_at_rate_zero(settings):
    settings.AUDIT_SAMPLE_RATE = 0.0
    settings.AUDIT_DAILY_MINIMUM = True
    for i in range(5):
        accept(i, label="pathology")
    for i in range(5, 8):
        accept(i, label="radiology", pages=RADIOLOGY)
    samples = list(AuditSample.objects.order_by("pk"))
    assert [(s.machine_type, s.reason) for s in samples] == [
        ("pathology", "daily_minimum"),
        ("radiology", "daily_minimum"),
    ]
    # The next day, each type is sampled again.
    AuditSample.objects.update(sampled_on=timezone.localdate() - timedelta(days=1))
    accept(9, label="pathology")
    assert AuditSample.objects.filter(sampled_on=timezone.localdate()).count() == 1


def test_sampling_is_decided_once_per_run_and_is_deterministic(settings):
    settings.AUDIT_SAMPLE_RATE = 0.5
    settings.AUDIT_DAILY_MINIMUM = False
    runs = [accept(i) for i in range(40)]
    first = set(AuditSample.objects.values_list("run_id", flat=True))
    AuditSample.objects.all().delete()
    for run in runs:
        truth = GroundTruth.objects.get(run=run)
        audits.audit_sample_consider(run=run, truth=truth, output=clean_output(PAGES, "pathology"))
    assert set(AuditSample.objects.values_list("run_id", flat=True)) == first
    assert 0 < len(first) < 40


def test_a_rate_per_type_and_band_overrides_the_default(settings):
    settings.AUDIT_SAMPLE_RATE = 0.0
    settings.AUDIT_DAILY_MINIMUM = False
    output = clean_output(PAGES, "pathology")
    band = quality.confidence_band(
        audits.dominant_confidence(output), settings.AUDIT_CONFIDENCE_BANDS
    )
    settings.AUDIT_SAMPLE_RATES = {f"pathology/{band}": 1.0}
    accept(1)
    accept(2, label="radiology", pages=RADIOLOGY)
    sample = AuditSample.objects.get()
    assert (sample.machine_type, sample.band, sample.rate) == ("pathology", band, 1.0)


def test_sampling_is_in_the_audit_log(settings):
    settings.AUDIT_SAMPLE_RATE = 1.0
    run = accept(1)
    event = AuditEvent.objects.get(action=AuditEvent.Action.AUDIT_SAMPLED)
    assert event.detail["run"] == run.pk and event.username == "system"


# -- blind audits ---------------------------------------------------------------------------------


def whole(sample_id: int, doc_type: DocType) -> list[tuple[int, int, DocType]]:
    """An answer that reads the audited document as one document of ``doc_type``."""
    pages = AuditSample.objects.get(pk=sample_id).document.page_count
    return [(1, pages, doc_type)]


def whole_of(second: SecondReview, doc_type: DocType) -> list[tuple[int, int, DocType]]:
    return [(1, second.document.page_count, doc_type)]


@pytest.fixture
def sample(settings) -> AuditSample:
    settings.AUDIT_SAMPLE_RATE = 1.0
    accept(1)
    return AuditSample.objects.get()


def test_the_audit_page_does_not_show_the_machines_answer_before_the_audit(
    client, reviewer, sample
):
    sample.confidence = 0.8765
    sample.save()
    client.force_login(reviewer)
    response = client.get(reverse("review:audit", args=[sample.pk]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Invasive ductal carcinoma" in html or "invasive ductal carcinoma" in html
    # Every type is offered as an answer (a key and an option each); none is named more than
    # the others, and none is chosen: the panel starts from "Choose its type".
    names = [html.count(DISPLAY_NAMES[t]) for t in DocType]
    assert len(set(names)) == 1, names
    assert 'value="pathology" selected' not in html and "Choose its type" in html
    assert "0.88" not in html and "0.8765" not in html
    assert "confidence" not in html.lower()
    assert "machine (" not in html.lower() and 'data-answer="theirs"' not in html


def test_the_audit_queue_does_not_show_the_machines_answer(client, reviewer, sample):
    client.force_login(reviewer)
    html = client.get(reverse("review:checks")).content.decode()
    assert sample.document.original_filename in html
    assert "Pathology" not in html and "pathology" not in html


def test_an_agreeing_audit_shows_the_comparison_and_keeps_the_ground_truth(
    client, reviewer, sample
):
    client.force_login(reviewer)
    response = client.post(
        reverse("review:audit_submit", args=[sample.pk]), {"start": "1", "type": "pathology"}
    )
    assert response.status_code == 302
    sample.refresh_from_db()
    assert sample.agrees is True and sample.auditor == reviewer and sample.correction is None
    assert GroundTruth.objects.filter(document=sample.document).count() == 1
    html = client.get(reverse("review:audit", args=[sample.pk])).content.decode()
    assert 'data-agrees="yes"' in html and "The machine (the built-in rules classifier)" in html
    assert 'id="decision-form"' not in html
    truth = GroundTruth.objects.get(document=sample.document)
    assert truth.state == GroundTruth.State.FINAL  # the audit agreed: the answer is settled
    event = AuditEvent.objects.get(action=AuditEvent.Action.AUDITED)
    assert event.detail["agrees"] is True and event.user == reviewer


def test_a_disagreeing_audit_goes_to_a_second_review_before_it_corrects_the_ground_truth(
    client, reviewer, other_reviewer, admin_user, sample
):
    client.force_login(reviewer)
    client.post(
        reverse("review:audit_submit", args=[sample.pk]), {"start": "1", "type": "radiology"}
    )
    sample.refresh_from_db()
    assert sample.agrees is False and sample.verdict == AuditSample.Verdict.DISPUTED
    # Nothing changes yet: the accepted label stays current, provisional.
    standing = GroundTruth.objects.get(document=sample.document)
    assert standing == sample.accepted_truth and standing.state == GroundTruth.State.PROVISIONAL
    second = SecondReview.objects.get()
    assert (second.kind, second.rule, second.first_by, second.first_type) == (
        "audit",
        "audit",
        reviewer,
        "radiology",
    )
    # Admins see the disagreement.
    client.force_login(admin_user)
    assert 'id="audit-disputes"' in client.get(reverse("review:checks")).content.decode()
    # A second reviewer, blind, agrees with the auditor: now the ground truth is corrected.
    client.force_login(other_reviewer)
    client.post(
        reverse("review:second_submit", args=[second.pk]), {"start": "1", "type": "radiology"}
    )
    sample.refresh_from_db()
    latest = GroundTruth.objects.filter(document=sample.document).order_by("-version").first()
    assert latest == sample.correction and sample.verdict == AuditSample.Verdict.ERROR
    assert (latest.source, latest.dominant_type, latest.version, latest.state) == (
        "SME_CORRECTED",
        "radiology",
        2,
        "final",
    )
    assert latest.supersedes == sample.accepted_truth and latest.reviewer == reviewer
    assert "Audit" in latest.reason
    client.force_login(reviewer)
    html = client.get(reverse("review:audit", args=[sample.pk])).content.decode()
    assert 'data-agrees="no"' in html


def test_a_run_is_audited_once(client, reviewer, other_reviewer, sample):
    audits.audit_submit(
        sample_id=sample.pk, auditor=reviewer, segments=whole(sample.pk, DocType.PATHOLOGY)
    )
    with pytest.raises(ReviewRefused):
        audits.audit_submit(
            sample_id=sample.pk,
            auditor=other_reviewer,
            segments=whole(sample.pk, DocType.RADIOLOGY),
        )
    assert GroundTruth.objects.filter(document=sample.document).count() == 1


def test_only_auditors_may_audit(client, outsider, sample):
    client.force_login(outsider)
    assert client.get(reverse("review:audit", args=[sample.pk])).status_code == 403
    response = client.post(
        reverse("review:audit_submit", args=[sample.pk]), {"start": "1", "type": "radiology"}
    )
    assert response.status_code == 403
    sample.refresh_from_db()
    assert sample.status == AuditSample.Status.PENDING


def test_audit_submit_is_post_only(client, reviewer, sample):
    client.force_login(reviewer)
    assert client.get(reverse("review:audit_submit", args=[sample.pk])).status_code == 405


def test_metrics_warn_above_the_limit_only_on_evidence(client, admin_user, reviewer, settings):
    settings.AUDIT_SAMPLE_RATE = 1.0
    settings.AUDIT_ERROR_LIMIT = 0.5
    settings.METRICS_MAX_AGE_SECONDS = 0  # the limit changes between the loads below
    for i in range(20):
        accept(i)
    for sample in AuditSample.objects.all():
        audits.audit_submit(
            sample_id=sample.pk, auditor=reviewer, segments=whole(sample.pk, DocType.PATHOLOGY)
        )
    client.force_login(admin_user)
    html = client.get(reverse("review:metrics")).content.decode()
    assert "0.000 \N{EN DASH} 0.161" in html
    assert 'id="audit-alert"' not in html
    # 20 clean audits cannot show the rate is below 0.1 (the upper bound is 0.161), but they
    # are no evidence that it is above: no warning, "not enough audits yet".
    settings.AUDIT_ERROR_LIMIT = 0.1
    html = client.get(reverse("review:metrics")).content.decode()
    assert 'id="audit-alert"' not in html and "above limit" not in html
    assert "not enough audits yet" in html
    # Six confirmed errors in twenty: the one-sided lower bound (0.15) is above 0.1.
    confirmed = AuditSample.objects.order_by("pk").values_list("pk", flat=True)[:6]
    AuditSample.objects.filter(pk__in=list(confirmed)).update(
        agrees=False, verdict=AuditSample.Verdict.ERROR
    )
    html = client.get(reverse("review:metrics")).content.decode()
    assert 'id="audit-alert"' in html and "above limit" in html


# -- second review and adjudication -------------------------------------------------------------


def correct(packet: Any, reviewer: Any, to: DocType = DocType.RADIOLOGY) -> Review:
    from review.corrections import correction_build

    decisions.packet_open(packet=packet, user=reviewer)
    correction = correction_build(segments=[(1, packet.document.page_count, to)])
    return decisions.review_submit(
        packet_id=packet.pk, reviewer=reviewer, correction=correction, notes=""
    )


def validate(packet: Any, reviewer: Any) -> Review:
    decisions.packet_open(packet=packet, user=reviewer)
    return decisions.review_submit(
        packet_id=packet.pk, reviewer=reviewer, correction=None, notes=""
    )


def test_every_correction_asks_for_a_second_review(reviewer, settings):
    settings.SECOND_REVIEW_ON_CORRECTION = True
    review = correct(make_packet(sha="e"), reviewer)
    second = SecondReview.objects.get()
    assert (second.first_review, second.rule, second.first_type) == (
        review,
        "correction",
        "radiology",
    )


def test_rules_can_be_switched_off_or_ask_for_blocker_packets(reviewer, settings):
    settings.SECOND_REVIEW_ON_CORRECTION = False
    settings.SECOND_REVIEW_ON_BLOCKER = False
    settings.SECOND_REVIEW_RATE = 0.0
    correct(make_packet(sha="e"), reviewer)
    assert not SecondReview.objects.exists()
    settings.SECOND_REVIEW_ON_BLOCKER = True
    packet = make_packet(sha="f")
    assert packet.worst_severity == "BLOCKER"
    validate(packet, reviewer)
    assert SecondReview.objects.get().rule == "blocker"


def test_a_random_share_of_decisions_gets_a_second_review(reviewer, settings):
    settings.SECOND_REVIEW_ON_CORRECTION = False
    settings.SECOND_REVIEW_RATE = 1.0
    validate(make_packet(sha="e", fabricate=False), reviewer)
    assert SecondReview.objects.get().rule == "random"


def test_the_second_reviewer_does_not_see_the_first_decision(client, reviewer, other_reviewer):
    packet = make_packet(sha="e")
    correct(packet, reviewer)
    second = SecondReview.objects.get()
    client.force_login(other_reviewer)
    blind = client.get(reverse("review:second", args=[second.pk])).content.decode()
    assert 'id="decision-form"' in blind and 'id="comparison"' not in blind
    assert "Rita" not in blind and "rita" not in blind
    names = [blind.count(DISPLAY_NAMES[t]) for t in DocType]
    assert len(set(names)) == 1, names  # each type only as a key and an option
    # The packet page hides the decision too until the second review is in.
    page = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert 'id="decided"' not in page and "Corrected by" not in page
    # The first reviewer still sees their own decision, marked not final.
    client.force_login(reviewer)
    own = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert 'id="second-review-note"' in own


def test_the_first_reviewer_may_not_review_twice(client, reviewer):
    correct(make_packet(sha="e"), reviewer)
    second = SecondReview.objects.get()
    client.force_login(reviewer)
    client.post(
        reverse("review:second_submit", args=[second.pk]), {"start": "1", "type": "radiology"}
    )
    second.refresh_from_db()
    assert second.status == SecondReview.Status.AWAITING and second.second_reviewer is None
    assert second not in services_second_reviews_for(reviewer)


def services_second_reviews_for(user: Any) -> list[SecondReview]:
    from review.selectors import second_reviews_for

    return second_reviews_for(user)


def test_agreement_makes_the_decision_final(client, reviewer, other_reviewer):
    correct(make_packet(sha="e"), reviewer)
    second = SecondReview.objects.get()
    client.force_login(other_reviewer)
    client.post(
        reverse("review:second_submit", args=[second.pk]), {"start": "1", "type": "radiology"}
    )
    second.refresh_from_db()
    assert second.status == SecondReview.Status.AGREED and second.second_reviewer == other_reviewer
    event = AuditEvent.objects.get(action=AuditEvent.Action.SECOND_REVIEWED)
    assert event.detail["agrees"] is True


def test_a_disagreement_is_adjudicated_by_a_third_person(
    client, reviewer, other_reviewer, admin_user
):
    packet = make_packet(sha="e")
    correct(packet, reviewer)  # says radiology
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=whole_of(second, DocType.PATHOLOGY)
    )
    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATION
    # Neither reviewer may adjudicate, and a reviewer without the Admins role may not either.
    client.force_login(other_reviewer)
    response = client.post(
        reverse("review:adjudicate", args=[second.pk]), {"start": "1", "type": "pathology"}
    )
    assert response.status_code == 403
    with pytest.raises(ReviewRefused):
        second_review.adjudicate(
            second_id=second.pk, user=reviewer, segments=whole_of(second, DocType.PATHOLOGY)
        )
    client.force_login(admin_user)
    page = client.get(reverse("review:second", args=[second.pk])).content.decode()
    assert "Adjudicate" in page and 'data-answer-index="1"' in page
    client.post(reverse("review:adjudicate", args=[second.pk]), {"start": "1", "type": "pathology"})
    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATED and second.adjudicator == admin_user
    latest = GroundTruth.objects.filter(document=packet.document).order_by("-version").first()
    assert second.final_truth == latest
    assert (latest.dominant_type, latest.source, latest.reviewer) == (
        "pathology",
        "SME_CORRECTED",
        admin_user,
    )
    event = AuditEvent.objects.get(action=AuditEvent.Action.ADJUDICATED)
    assert event.detail["final"] == [[1, packet.document.page_count, "pathology"]]
    assert event.user == admin_user


def test_an_adjudicator_who_made_a_decision_is_refused(reviewer, other_reviewer, admin_user):
    correct(make_packet(sha="e"), admin_user)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=whole_of(second, DocType.PATHOLOGY)
    )
    with pytest.raises(ReviewRefused):
        second_review.adjudicate(
            second_id=second.pk, user=admin_user, segments=whole_of(second, DocType.PATHOLOGY)
        )


def test_withdrawing_the_first_decision_cancels_its_second_review(reviewer):
    correct(make_packet(sha="e"), reviewer)
    decisions.review_undo(reviewer=reviewer)
    assert SecondReview.objects.get().status == SecondReview.Status.CANCELLED


def test_metrics_show_kappa_between_reviewers(client, reviewer, other_reviewer, admin_user):
    for n, (first, second_type) in enumerate(
        [(DocType.RADIOLOGY, DocType.RADIOLOGY), (DocType.GENOMIC, DocType.GENOMIC)]
    ):
        correct(make_packet(sha="ef"[n]), reviewer, to=first)
        second = SecondReview.objects.get(first_type=first.value)
        second_review.second_review_submit(
            second_id=second.pk, reviewer=other_reviewer, segments=whole_of(second, second_type)
        )
    client.force_login(admin_user)
    html = client.get(reverse("review:metrics")).content.decode()
    assert 'data-kappa="overall">1.000<' in html
    assert "Reviewer agreement with the primary classifier" in html


def test_a_third_reviewer_adjudicates_only_when_reviewers_may(
    client, reviewer, other_reviewer, django_user_model, roles, settings
):
    from review.roles import REVIEWERS
    from tests.conftest import make_user

    third = make_user(django_user_model, roles, "tess", REVIEWERS)
    correct(make_packet(sha="e"), reviewer)
    second = SecondReview.objects.get()
    second_review.second_review_submit(
        second_id=second.pk, reviewer=other_reviewer, segments=whole_of(second, DocType.PATHOLOGY)
    )
    client.force_login(third)
    url = reverse("review:adjudicate", args=[second.pk])
    settings.ADJUDICATION_BY_REVIEWERS = False
    assert client.post(url, {"start": "1", "type": "radiology"}).status_code == 403
    assert 'id="adjudication-queue"' not in client.get(reverse("review:checks")).content.decode()
    settings.ADJUDICATION_BY_REVIEWERS = True
    assert (
        f'data-adjudication="{second.pk}"' in client.get(reverse("review:checks")).content.decode()
    )
    assert client.post(url, {"start": "1", "type": "radiology"}).status_code == 302
    second.refresh_from_db()
    assert (second.status, second.final_type, second.adjudicator) == (
        "adjudicated",
        "radiology",
        third,
    )
    # The first decision stands: no new ground-truth version.
    assert second.final_truth.version == 1 and second.final_truth.dominant_type == "radiology"


def test_outsiders_see_no_quality_checks(client, outsider):
    client.force_login(outsider)
    assert client.get(reverse("review:checks")).status_code == 403


def test_the_audit_page_shows_the_pages_as_images_to_auditors_only(
    client, reviewer, outsider, sample
):
    from django.core.files.base import ContentFile

    from benchmarks.pdfgen import text_pdf

    sample.document.file.save("doc.pdf", ContentFile(text_pdf([["SURGICAL PATHOLOGY"], ["GROSS"]])))
    url = reverse("review:audit_page_image", args=[sample.pk, 1])
    client.force_login(outsider)
    assert client.get(url).status_code == 403
    client.force_login(reviewer)
    assert f'src="{url}"' in client.get(reverse("review:audit", args=[sample.pk])).content.decode()
    response = client.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content).startswith(
        b"\x89PNG"
    )
    assert client.get(reverse("review:audit_page_image", args=[sample.pk, 9])).status_code == 404
