"""The learning loop (reliability.learning): scheduled attempts that activate a better candidate
and refuse a worse one, the admins' pin, runs that escalate under their type's certified
threshold or as a kind not seen before, and likely-wrong labels found and re-checked blind."""

from __future__ import annotations

import random
from io import StringIO

import pytest
from django.core.management import call_command

from engine.pipeline import PRESETS
from reliability import learning, services, training
from reliability.learner import Example, Learner, Settings, label_issues
from reliability.models import LearningAttempt, LearningPin, Run, TrainedClassifierModel
from review.models import GroundTruth, SecondReview
from tests.reliability.test_trained_classifier import WORDS, document, records, text_for
from tests.review.conftest import page_panel  # noqa: F401 (a fixture: the packet page's form)

pytestmark = pytest.mark.django_db(transaction=True)


def ground_truth(data: list[training.Record], *, source=GroundTruth.Source.SME_VALIDATED) -> None:
    for r in data:
        GroundTruth.objects.create(
            document=document(*r.pages, key=r.key),
            source=source,
            dominant_type=r.label,
            classification={},
        )


def attempt_now() -> LearningAttempt:
    attempt = learning.learning_schedule(trigger=LearningAttempt.Trigger.MANUAL)
    assert attempt is not None
    attempt.refresh_from_db()
    return attempt


def test_the_scheduled_job_activates_a_better_candidate_and_refuses_a_worse_one(settings):
    settings.LEARNING = True
    ground_truth(records(20))
    assert learning.learning_due() == LearningAttempt.Trigger.SCHEDULE
    # The workers' recovery pass (inline here: the job runs when it is queued) schedules it.
    from config.recovery import recover

    queued = recover()["learning"]
    first = LearningAttempt.objects.get(pk=queued)
    assert first.trigger == LearningAttempt.Trigger.SCHEDULE
    assert first.status == LearningAttempt.Status.COMPLETED, first.error
    assert first.outcome == LearningAttempt.Outcome.ACTIVATED
    active = TrainedClassifierModel.objects.get(active=True)
    assert first.candidate_id == first.active_after_id == active.pk
    assert first.active_before_id is None
    assert first.figures["candidate"]["accuracy"] >= first.figures["active"]["accuracy"]
    assert first.thresholds and first.risk["documents"] == 80
    assert first.novelty["reference"] > 0 and first.novelty_reference
    assert first.clinician_labels == 80
    # Nothing is due until labels come in or the interval passes.
    assert learning.learning_due() == ""
    # A worse candidate: the training part of the ground truth mislabelled (the held-back
    # slice keeps the true types, as in test_trained_classifier).
    swap = {"pathology": "radiology", "radiology": "pathology"}
    for truth in GroundTruth.objects.all():
        if not training.held_back(str(truth.document_id)) and truth.dominant_type in swap:
            GroundTruth.objects.filter(pk=truth.pk).update(dominant_type=swap[truth.dominant_type])
    second = attempt_now()
    assert second.outcome == LearningAttempt.Outcome.REFUSED
    assert second.reason.startswith("Not activated: worse than")
    assert second.candidate is not None and not second.candidate.active
    assert TrainedClassifierModel.objects.get(active=True).pk == active.pk
    assert second.active_after_id == active.pk  # thresholds certified for the model kept
    out = StringIO()
    call_command("learn", "--list", stdout=out)
    assert "refused" in out.getvalue() and "activated" in out.getvalue()


def test_new_clinician_labels_make_an_attempt_due(settings):
    settings.LEARNING = True
    settings.LEARNING_EVERY_LABELS = 10
    ground_truth(records(5))
    LearningAttempt.objects.create(
        trigger="schedule", status=LearningAttempt.Status.COMPLETED, clinician_labels=20
    )
    assert learning.learning_due() == ""
    rng = random.Random(8)
    ground_truth(
        [training.Record(f"new-{i}", "radiology", [text_for("radiology", rng)]) for i in range(9)]
    )
    assert learning.learning_due() == ""
    # Accepted machine answers are not clinician labels.
    ground_truth(
        [training.Record("machine", "radiology", [text_for("radiology", rng)])],
        source=GroundTruth.Source.AUTO_ACCEPTED,
    )
    assert learning.learning_due() == ""
    ground_truth([training.Record("tenth", "radiology", [text_for("radiology", rng)])])
    assert learning.learning_due() == LearningAttempt.Trigger.LABELS
    settings.LEARNING = False
    assert learning.learning_due() == ""


def test_an_attempt_is_due_when_the_labels_first_reach_the_count_a_certificate_needs(settings):
    """Nothing is certified below 1/alpha - 1 labels (crc): the attempt that can certify the
    first threshold is due as the labels reach that count, not at the next
    LEARNING_EVERY_LABELS."""
    settings.LEARNING = True
    settings.LEARNING_EVERY_LABELS = 1_000
    settings.RISK_METHOD = "crc"
    ground_truth(records(5))
    labels = learning.clinician_labels()
    settings.TARGET_ACCEPTED_ERROR = 1 / (labels + 1) + 1e-9  # certifiable from ``labels``
    assert learning.certifiable_from() == labels
    attempt = LearningAttempt.objects.create(
        trigger="schedule", status=LearningAttempt.Status.COMPLETED, clinician_labels=labels - 1
    )
    assert learning.learning_due() == LearningAttempt.Trigger.LABELS
    attempt.clinician_labels = labels  # the last attempt had them already: once only
    attempt.save(update_fields=["clinician_labels"])
    assert learning.learning_due() == ""
    attempt.clinician_labels = labels - 1
    attempt.save(update_fields=["clinician_labels"])
    settings.TARGET_ACCEPTED_ERROR = 1 / (labels + 2) + 1e-9  # one label short
    assert learning.learning_due() == ""


def test_a_pinned_model_stays_active_and_a_rollback_is_certified_again(settings, admin_user):
    ground_truth(records(20))
    first = attempt_now()
    pinned = TrainedClassifierModel.objects.get(pk=first.active_after_id)
    learning.model_activate(row=pinned, user=admin_user, pin=True)
    assert LearningPin.objects.get().model_id == pinned.pk
    rng = random.Random(4)
    ground_truth(
        [
            training.Record(f"more-{label}-{i}", label, [text_for(label, rng)])
            for label in WORDS
            for i in range(5)
        ]
    )
    latest = attempt_now()
    assert latest.outcome == LearningAttempt.Outcome.PINNED
    assert TrainedClassifierModel.objects.get(active=True).pk == pinned.pk
    assert latest.active_after_id == pinned.pk and latest.thresholds
    assert learning.model_unpin(user=admin_user) and not LearningPin.objects.exists()


def test_a_run_under_its_types_certified_threshold_escalates_with_the_reason(settings):
    ground_truth(records(20))
    attempt = attempt_now()
    assert attempt.outcome == LearningAttempt.Outcome.ACTIVATED
    # Certified thresholds that nothing meets: every run of the type is escalated, saying why.
    rows = attempt.thresholds
    for row in rows:
        row.update(threshold=1.01, reason="test")
    LearningAttempt.objects.filter(pk=attempt.pk).update(thresholds=rows)
    learning._forget()
    doc = document(text_for("radiology", random.Random(77)), key="fresh-radiology")
    run = services.run_start(document=doc)
    run.refresh_from_db()
    assert run.status == Run.Status.COMPLETED and run.final_decision == "ESCALATE_TO_SME"
    issues = run.attempts.get(number=run.best_attempt_number).issues.values_list("code", flat=True)
    assert "below_risk_threshold" in issues
    assert run.learning["threshold"] == 1.01 and run.learning["risk_control"]
    assert run.packet.learning_rank < 1000  # ranked for QUEUE_ORDER=learning


def test_a_document_from_a_source_absent_from_training_is_escalated_as_novel(settings):
    ground_truth(records(20))
    attempt_now()
    icu = (
        "ICU NURSING FLOWSHEET 0700-1900. Neuro: RASS -1, pupils equal reactive. Resp: vent AC "
        "FiO2 40% PEEP 8, suctioned moderate secretions. CV: norepinephrine titrated to MAP > "
        "65. GI: tube feeds at goal. Skin: turned q2h, sacral dressing intact. Lines: R IJ CVC."
    )
    run = services.run_start(document=document(icu, key="icu-flowsheet"))
    run.refresh_from_db()
    assert run.final_decision == "ESCALATE_TO_SME"
    # Less similar than every one of the 64 training documents: the least p-value, 1 / 65.
    assert run.learning["novel"] and run.learning["novelty"]["p_value"] < 0.02
    issue = run.attempts.get(number=run.best_attempt_number).issues.get(code="novel_document")
    assert issue.message.startswith("A kind of document not seen before")
    # One like the training documents is not.
    seen = services.run_start(document=document(text_for("pathology", random.Random(3)), key="p"))
    seen.refresh_from_db()
    assert not seen.learning["novel"]


def flipped(n_per_type: int, flips: int, seed: int) -> tuple[list[Example], set[str]]:
    rng = random.Random(seed)
    data = [Example(r.key, r.label, r.pages, source="test") for r in records(n_per_type, seed=seed)]
    chosen = set(rng.sample([r.key for r in data], flips))
    labels = list(WORDS)
    out = []
    for r in data:
        if r.key in chosen:
            wrong = rng.choice([label for label in labels if label != r.label])
            out.append(Example(r.key, wrong, r.pages, source="test"))
        else:
            out.append(r)
    return out, chosen


@pytest.mark.django_db
def test_label_error_detection_finds_flips_injected_into_a_small_ground_truth():
    data, flips = flipped(15, 6, seed=2)
    learner = Learner(Settings(preset=PRESETS["clinical"], folds=5))
    found = {key for key, *_ in label_issues(learner.cross_fit(data))}
    true_positives = len(found & flips)
    assert true_positives >= 5  # recall >= 5/6
    assert true_positives / max(1, len(found)) >= 0.5  # precision


@pytest.mark.usefixtures("page_panel")
def test_likely_wrong_clinician_labels_go_to_a_blind_recheck(reviewer):
    from django.test import Client
    from django.urls import reverse

    from review.services.second_review import label_issue_recheck
    from tests.review.conftest import make_packet

    packet = make_packet(sha="r")
    client = Client()
    client.force_login(reviewer)
    client.get(reverse("review:packet", args=[packet.pk]))  # deciding holds the packet's lock
    assert client.post(reverse("review:validate", args=[packet.pk])).status_code == 302
    truth = GroundTruth.objects.get(document=packet.document)
    assert truth.state == GroundTruth.State.FINAL
    opened = label_issue_recheck([(str(packet.document_id), truth.dominant_type, "other", 0.01)])
    assert opened == 1
    second = SecondReview.objects.get(document=packet.document)
    assert second.rule == SecondReview.Rule.LABEL_ISSUE and second.first_by == reviewer
    truth.refresh_from_db()
    assert truth.state == GroundTruth.State.PROVISIONAL
    # Asked again: one re-check per decision.
    assert label_issue_recheck([(str(packet.document_id), truth.dominant_type, "other", 0.01)]) == 0


def test_the_metrics_page_shows_thresholds_novelty_and_attempts(admin_user, settings):
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from engine.risk import Calibration, ltt_threshold

    settings.NOVELTY_ALERT_RATE = 0.1
    model = TrainedClassifierModel.objects.create(
        version="abc123def456",
        data_hash="0" * 64,
        source="test",
        active=True,
        activated_at=timezone.now(),
        blob=b"-",
        blob_sha256="-",
    )
    certified = ltt_threshold(
        [Calibration("radiology", "a", 0.99, True, True) for _ in range(500)],
        alpha=0.005,
        delta=0.1,
        doc_type="radiology",
    )
    short = ltt_threshold(
        [Calibration("*", "a", 0.99, True, True) for _ in range(30)], alpha=0.005, delta=0.1
    )
    LearningAttempt.objects.create(
        trigger="schedule",
        status="completed",
        outcome="activated",
        reason="Activated: test.",
        candidate=model,
        active_after=model,
        finished_at=timezone.now(),
        thresholds=[short.as_dict(), certified.as_dict()],
        risk={"method": "ltt", "calibration": "cross-fitted", "candidates": 530, "errors": 0},
    )
    rng = random.Random(1)
    for i in range(25):
        doc = document(text_for("radiology", rng), key=f"m-{i}")
        Run.objects.create(
            document=doc,
            preset="clinical",
            classifier="offline",
            status="completed",
            final_decision="ESCALATE_TO_SME" if i < 5 else "AUTO_ACCEPT",
            finished_at=timezone.now(),
            learning={"novel": i < 5, "source": "hospital_b" if i < 10 else "hospital_a"},
        )
    client = Client()
    client.force_login(admin_user)
    html = client.get(reverse("review:metrics")).content.decode()
    assert 'id="learning"' in html and "trained-abc123def456" in html
    assert 'data-threshold-type="radiology"' in html and "none: escalate" in html
    assert 'id="novelty-alert"' in html and "hospital_b" in html
    assert 'data-chart="escalation-rate"' in html and "<polyline" in html
    assert 'data-attempt-outcome="activated"' in html


def test_admins_pin_a_model_and_roll_back_in_django_admin(admin_user, reviewer):
    from django.test import Client
    from django.urls import reverse

    old, new = (
        TrainedClassifierModel.objects.create(
            version=v * 12, data_hash=v * 64, source="test", blob=b"-", blob_sha256="-"
        )
        for v in "ab"
    )
    TrainedClassifierModel.objects.filter(pk=new.pk).update(active=True)
    admin_user.is_staff = True
    admin_user.save()
    client = Client()
    client.force_login(admin_user)
    url = reverse("admin:reliability_trainedclassifiermodel_changelist")
    response = client.post(url, {"action": "pin_model", "_selected_action": [old.pk]})
    assert response.status_code == 302
    assert TrainedClassifierModel.objects.get(active=True).pk == old.pk
    assert LearningPin.objects.get().model_id == old.pk
    # An attempt was queued to certify the pinned model (here: no ground truth to train on).
    assert LearningAttempt.objects.get().outcome == LearningAttempt.Outcome.NO_DATA
    client.post(url, {"action": "activate_model", "_selected_action": [new.pk]})
    assert TrainedClassifierModel.objects.get(active=True).pk == new.pk
    assert not LearningPin.objects.exists()  # a rollback to another model ends the pin
    # A reviewer cannot.
    reviewer.is_staff = True
    reviewer.save()
    client.force_login(reviewer)
    response = client.post(url, {"action": "pin_model", "_selected_action": [old.pk]})
    assert response.status_code == 403
    assert TrainedClassifierModel.objects.get(active=True).pk == new.pk


def _from(source: str, *texts: str, key: str):
    """A document uploaded by ``source`` (a document's source is its uploader)."""
    from django.contrib.auth import get_user_model

    from documents.models import Document

    user, _ = get_user_model().objects.get_or_create(username=source)
    doc = document(*texts, key=key)
    Document.objects.filter(pk=doc.pk).update(uploaded_by=user)
    doc.refresh_from_db()
    return doc


def test_a_clinicians_label_reaches_the_next_look_alikes_run_without_a_retrain(settings):
    ground_truth(records(20))
    attempt_now()
    rng = random.Random(5)
    # Clinicians label radiology reports from a new sender; no attempt runs after.
    labelled = []
    for i in range(4):
        doc = _from("clinic-x", text_for("radiology", rng), key=f"x-{i}")
        GroundTruth.objects.create(
            document=doc,
            source=GroundTruth.Source.SME_VALIDATED,
            dominant_type="radiology",
            classification={},
        )
        labelled.append(str(doc.pk))
    attempts = LearningAttempt.objects.count()
    run = services.run_start(document=_from("clinic-x", text_for("radiology", rng), key="x-new"))
    run.refresh_from_db()
    assert LearningAttempt.objects.count() == attempts  # no retrain
    vote = run.learning["exemplar"]
    assert vote is not None and len(vote["neighbours"]) == 3
    assert {n[0] for n in vote["neighbours"]} <= set(labelled)
    assert {n[1] for n in vote["neighbours"]} == {"radiology"}
    assert vote["trusted"] is False  # four labels: the source's memory has not earned trust
    # Another sender's labels are not this one's neighbours.
    other = services.run_start(document=_from("clinic-y", text_for("radiology", rng), key="y-1"))
    other.refresh_from_db()
    assert other.learning["exemplar"]["neighbours"] == []


def test_a_senders_forms_that_are_not_look_alikes_get_the_sources_vote_on_the_run_path(settings):
    """Production's run path reads the same vote as bench_learning: forms of one sender that
    are not look-alikes of each other get the type its last labels all carry; one label of
    another type silences it; LEARNING_MEMORY_SOURCE_WINDOW=0 turns it off."""
    ground_truth(records(20))
    attempt_now()
    forms = [
        "Requisition for cytology: patient name, date of birth, insurance, ordering physician.",
        "Consent to release medical records, signature of patient or guardian, witness.",
        "Billing statement: amount due, account number, remit payment to the address below.",
        "Specimen tracking log: courier, received at, temperature, clerk initials.",
    ]
    for i, text in enumerate(forms[:3]):
        GroundTruth.objects.create(
            document=_from("lab-forms", text, key=f"f-{i}"),
            source=GroundTruth.Source.SME_VALIDATED,
            dominant_type="other",
            classification={},
        )

    def vote(key: str) -> dict:
        run = services.run_start(document=_from("lab-forms", forms[3], key=key))
        run.refresh_from_db()
        return run.learning["exemplar"]

    found = vote("f-new")
    assert found["scope"] == "source" and found["enough"] is True
    assert {n[1] for n in found["neighbours"]} == {"other"}
    assert found["trusted"] is False  # three labels: no confirmed vote yet
    settings.LEARNING_MEMORY_SOURCE_WINDOW = 0
    learning._memory.clear()  # the memory is rebuilt with the setting
    assert vote("f-off")["enough"] is False
    settings.LEARNING_MEMORY_SOURCE_WINDOW = 20
    learning._memory.clear()
    GroundTruth.objects.create(
        document=_from("lab-forms", "Fax cover sheet: to, from, pages.", key="f-odd"),
        source=GroundTruth.Source.SME_VALIDATED,
        dominant_type="pathology",
        classification={},
    )
    assert vote("f-mixed")["enough"] is False


def test_the_decision_that_certifies_a_source_is_recorded_and_shown_on_its_packet_page(
    settings, client, reviewer, other_reviewer, admin_user
):
    """A clinician's decision whose confirmation makes a source's memory trusted is recorded
    as it is made, and its packet page says so to those who may see the decision; a blind
    audit hides it with the decision; an earlier decision of the source says nothing."""
    from datetime import date

    from django.urls import reverse

    from benchmarks.faults import clean_output
    from reliability.models import SourceCertification
    from review.models import AuditSample
    from review.services import decisions
    from tests.review.conftest import escalate

    settings.LEARNING_MEMORY_CELL_MIN = 2
    settings.AUDIT_SAMPLE_RATE = 0.0
    settings.SECOND_REVIEW_ON_CORRECTION = False
    ground_truth(records(20))
    attempt_now()
    rng = random.Random(7)

    def decide(key: str):
        texts = [text_for("radiology", rng)]
        doc = _from("clinic-x", *texts, key=key)
        output = clean_output(texts, "radiology")
        assert output is not None
        packet = escalate(doc, texts, output)
        decisions.packet_open(packet=packet, user=reviewer)
        decisions.review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
        return packet

    packets = [decide(f"c-{i}") for i in range(4)]
    _, trust = learning.run_memory()
    record = trust["uploader:clinic-x"]
    # k = 3: the fourth label is the first with a vote; two confirmed votes are needed.
    assert record.confirmed == 1 and not record.trusted(2)
    certified = SourceCertification.objects.filter(source="uploader:clinic-x")
    assert not certified.exists()
    certifying = decide("c-4")  # the second confirmed vote: the source is trusted now
    row = certified.get()
    assert row.document_key == str(certifying.document_id)
    assert (row.source, row.doc_type, row.confirmed, row.contradicted) == (
        "uploader:clinic-x",
        "radiology",
        2,
        0,
    )
    decide("c-5")  # confirms again: no second record
    assert certified.count() == 1

    line = "This decision certified uploader:clinic-x for Radiology Report"
    client.force_login(reviewer)
    page = client.get(reverse("review:packet", args=[certifying.pk]))
    assert page.status_code == 200
    assert line in page.content.decode()
    assert line not in client.get(reverse("review:packet", args=[packets[0].pk])).content.decode()

    # A blind audit of the document hides the decision, and the line with it, from a reviewer.
    run = Run.objects.create(
        document=certifying.document,
        preset="clinical",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
    )
    AuditSample.objects.create(
        run=run,
        document=certifying.document,
        machine_type="radiology",
        confidence=0.9,
        band=">=0.95",
        rate=0.05,
        reason="sampled",
        sampled_on=date.today(),
    )
    client.force_login(other_reviewer)
    blind = client.get(reverse("review:packet", args=[certifying.pk]))
    assert blind.status_code == 200
    assert line not in blind.content.decode()
    client.force_login(admin_user)
    assert line in client.get(reverse("review:packet", args=[certifying.pk])).content.decode()
