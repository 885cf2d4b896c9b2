"""Review packets for clinicians and the ground truth every decision produces."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

# Packets still in the queue (ReviewPacket.OPEN_STATUSES), for the partial indexes.
_OPEN_PACKET = models.Q(status__in=["pending", "in_review"])


class ReviewPacket(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IN_REVIEW = "in_review", "In review"
        COMPLETED = "completed", "Completed"

    OPEN_STATUSES = (Status.PENDING, Status.IN_REVIEW)

    run = models.OneToOneField("reliability.Run", on_delete=models.CASCADE, related_name="packet")
    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="packets"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    priority = models.PositiveSmallIntegerField(default=2)  # 0 BLOCKER, 1 MAJOR, 2 MINOR/none
    dominant_type = models.CharField(max_length=32)
    worst_severity = models.CharField(max_length=8, blank=True)
    issue_count = models.PositiveIntegerField(default=0)
    classification = models.JSONField()  # the attempt shown to the reviewer (the best one)
    issues = models.JSONField(default=list)  # sorted BLOCKER -> MAJOR -> MINOR
    # The issues' codes, space-separated with a space at each end (" a b "), so the queue can
    # filter by code with a plain substring match on any database.
    issue_codes = models.CharField(max_length=500, blank=True, default="")
    grounding = models.JSONField(default=list)
    comparison = models.JSONField(default=dict)  # the second classifier's answer and agreement
    comparison_agrees = models.BooleanField(null=True)
    history = models.JSONField(default=list)  # every attempt: decision, rule, fixes, issues
    # Within a severity, with QUEUE_ORDER=learning: lower first (0 teaches the model most;
    # from the run's learning value, reliability.learner.learning_value).
    learning_rank = models.PositiveSmallIntegerField(default=1000)
    field_corrections = models.JSONField(default=dict, blank=True)  # reviewer's field edits
    # The last correction previewed by the lock holder and its re-extracted fields, reused
    # when the same correction is saved (an LLM extractor is not asked twice).
    correction_preview = models.JSONField(default=dict, blank=True)
    locked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lock_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["priority", "created_at"]
        # The queue's order (BLOCKER first, then oldest, id to break ties) for each status, and
        # for open packets alone and by each filter, so a page is a range of one index.
        indexes = [
            models.Index(
                fields=["status", "priority", "created_at", "id"], name="packet_status_order"
            ),
            models.Index(
                fields=["priority", "created_at", "id"],
                condition=_OPEN_PACKET,
                name="packet_open_order",
            ),
            # The same queue with QUEUE_ORDER=learning.
            models.Index(
                fields=["priority", "learning_rank", "created_at", "id"],
                condition=_OPEN_PACKET,
                name="packet_open_learning_order",
            ),
            models.Index(
                fields=["dominant_type", "priority", "created_at", "id"],
                condition=_OPEN_PACKET,
                name="packet_open_type_order",
            ),
            models.Index(
                fields=["worst_severity", "priority", "created_at", "id"],
                condition=_OPEN_PACKET,
                name="packet_open_severity_order",
            ),
            # The queue's counts: issue codes on offer, and packets decided today.
            models.Index(
                fields=["issue_codes"],
                condition=_OPEN_PACKET,
                name="packet_open_codes",
            ),
            models.Index(
                fields=["updated_at"],
                condition=models.Q(status="completed"),
                name="packet_completed_at",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "in_review", "completed"]),
                name="packet_status_valid",
            )
        ]

    def __str__(self) -> str:
        return f"Packet {self.pk} ({self.status})"

    @staticmethod
    def codes_of(issues: list[dict[str, object]]) -> str:
        codes = sorted({str(i.get("code", "")) for i in issues if i.get("code")})
        return f" {' '.join(codes)} " if codes else ""


class ReviewSkip(models.Model):
    """A reviewer put this packet aside: it comes after their other work in "Next"."""

    packet = models.ForeignKey(ReviewPacket, on_delete=models.CASCADE, related_name="skips")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    skipped_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["packet", "reviewer"], name="skip_once_per_reviewer")
        ]

    def __str__(self) -> str:
        return f"Packet {self.packet_id} skipped by {self.reviewer_id}"


class GroundTruthQuerySet(models.QuerySet["GroundTruth"]):
    def latest_locked(self, document: Any) -> GroundTruth | None:
        """The document's newest version, its row locked until the transaction ends (call
        inside one): whoever appends the next version does so from the version it saw."""
        return self.select_for_update().filter(document=document).order_by("-version").first()


class GroundTruth(models.Model):
    class Source(models.TextChoices):
        AUTO_ACCEPTED = "AUTO_ACCEPTED", "Auto-accepted"
        SME_VALIDATED = "SME_VALIDATED", "Validated by a clinician"
        SME_CORRECTED = "SME_CORRECTED", "Corrected by a clinician"
        # A decision taken back (undone by its reviewer, or reopened by an admin) with no
        # earlier version to return to: the document has no ground truth until decided again.
        WITHDRAWN = "WITHDRAWN", "Decision withdrawn"

    class State(models.TextChoices):
        # A check is still open on this version (a blind audit of an accepted answer, the
        # second review or adjudication of a clinician's decision): it may change.
        PROVISIONAL = "provisional", "Provisional"
        # The process is done: no check is open, or every check that was asked for ended.
        FINAL = "final", "Final"

    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="ground_truth"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    state = models.CharField(max_length=12, choices=State.choices, default=State.FINAL)
    dominant_type = models.CharField(max_length=32)
    classification = models.JSONField()
    fields = models.JSONField(default=list, blank=True)  # extracted fields, per segment
    reason = models.TextField(blank=True)  # what a correction changed, or why it was withdrawn
    note = models.TextField(blank=True)  # the reviewer's own words
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    run = models.ForeignKey(
        "reliability.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="ground_truth",
    )
    model = models.CharField(max_length=64, blank=True)
    prompt_version = models.CharField(max_length=64, blank=True)
    version = models.PositiveIntegerField(default=1)
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = GroundTruthQuerySet.as_manager()

    class Meta:
        ordering = ["document", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "version"], name="ground_truth_unique_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.document_id} v{self.version} {self.dominant_type} ({self.source})"


class Review(models.Model):
    """A clinician's decision on a packet. One standing decision per packet (the database
    enforces it); a decision undone or reopened is kept, marked withdrawn."""

    class Outcome(models.TextChoices):
        VALIDATED = "validated", "Validated"
        CORRECTED = "corrected", "Corrected"

    packet = models.ForeignKey(ReviewPacket, on_delete=models.PROTECT, related_name="reviews")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    corrected_dominant_type = models.CharField(max_length=32, blank=True)
    corrected_segments = models.JSONField(default=list, blank=True)
    corrected_mixture = models.JSONField(default=dict, blank=True)
    notes = models.TextField(blank=True)
    reason = models.TextField(blank=True)  # what the correction changed, in words
    ground_truth = models.OneToOneField(
        GroundTruth, on_delete=models.PROTECT, related_name="review"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(auto_now_add=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withdrawn_how = models.CharField(max_length=16, blank=True)  # "undone" or "reopened"
    # The packet as it was decided: its claimed type and when it was escalated. Kept here so
    # the metrics (agreement by type, turnaround) read this table alone, not a join with every
    # packet.
    claimed_type = models.CharField(max_length=32, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-finished_at"]
        permissions = [
            ("review_packets", "Can review escalated packets"),
            ("export_ground_truth", "Can export ground truth"),
            ("view_metrics", "Can view review metrics"),
            ("reopen_packets", "Can reopen decided packets"),
            ("audit_runs", "Can audit auto-accepted runs"),
            ("adjudicate_reviews", "Can adjudicate disagreeing reviews"),
            # Blind checks are blind for everyone else (review.visibility).
            ("see_all_labels", "Can see every label, while blind checks are open too"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["packet"],
                condition=models.Q(withdrawn_at__isnull=True),
                name="one_standing_review_per_packet",
            )
        ]
        # A reviewer's day and last decision (the queue's counts, undo).
        indexes = [models.Index(fields=["reviewer", "-finished_at"], name="review_by_reviewer")]

    def __str__(self) -> str:
        return f"{self.get_outcome_display()} packet {self.packet_id}"


class AuditEvent(models.Model):
    """Who looked at or decided what, and when. Never holds document text."""

    class Action(models.TextChoices):
        VIEWED_PACKET = "viewed_packet", "Viewed packet"
        DECIDED = "decided", "Decided"
        EXPORTED = "exported", "Exported ground truth"
        LOCKED = "locked", "Locked packet"
        SKIPPED = "skipped", "Skipped packet"
        UNDONE = "undone", "Undid a decision"
        REOPENED = "reopened", "Reopened packet"
        AUDIT_SAMPLED = "audit_sampled", "Sampled a run for audit"
        AUDITED = "audited", "Audited an accepted run"
        SECOND_REVIEWED = "second_reviewed", "Second review"
        ADJUDICATED = "adjudicated", "Adjudicated a disagreement"
        # By the system (documents.retention): the document's file, pages and processing
        # deleted, its ground truth kept de-identified.
        DELETED = "deleted", "Deleted a document (retention)"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150)  # kept if the account is removed
    action = models.CharField(max_length=24, choices=Action.choices)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at"]
        indexes = [
            models.Index(fields=["action", "-at"]),
            models.Index(fields=["object_type", "object_id"]),
        ]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.username} {self.action} {self.object_type}"


class AuditSample(models.Model):
    """An auto-accepted run drawn for a blind audit (see engine.quality.audit_decision).
    The machine's answer is kept here to compare with, never shown before the audit."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for audit"
        COMPLETED = "completed", "Audited"

    class Verdict(models.TextChoices):
        """What the audit found, once every check on it ended: the accepted-error rate counts
        ERROR (the auditor's different answer was confirmed by a second review or an
        adjudication); a disagreement the checks overturned is not an error."""

        NONE = "", "Not audited yet"
        AGREES = "agrees", "The auditor agreed with the machine"
        DISPUTED = "disputed", "The auditor disagreed: waiting for a second review"
        ERROR = "error", "The machine was wrong (confirmed)"
        OVERTURNED = "overturned", "The auditor's disagreement was overturned"

    run = models.OneToOneField(
        "reliability.Run", on_delete=models.CASCADE, related_name="audit_sample"
    )
    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="audit_samples"
    )
    accepted_truth = models.ForeignKey(
        GroundTruth, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    machine_type = models.CharField(max_length=32)
    confidence = models.FloatField()
    band = models.CharField(max_length=16)
    rate = models.FloatField()
    reason = models.CharField(max_length=16)  # "sampled" or "daily_minimum"
    sampled_on = models.DateField(db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    auditor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    audited_type = models.CharField(max_length=32, blank=True)
    # The auditor's segmentation: [[first page, last page, type], ...] (one row for a
    # single document).
    audited_segments = models.JSONField(default=list, blank=True)
    agrees = models.BooleanField(null=True)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, blank=True)
    correction = models.ForeignKey(
        GroundTruth, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    audited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [models.Index(fields=["machine_type", "sampled_on"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status="pending") | ~models.Q(audited_type=""),
                name="audit_completed_has_answer",
            )
        ]

    def __str__(self) -> str:
        return f"Audit of run {self.run_id} ({self.status})"


class SecondReview(models.Model):
    """A second, independent answer to a first one, by a different person who does not see
    it: the first is a clinician's decision on a packet (``review``), or an auditor's answer
    that disagreed with an accepted run (``audit``). Both answers are segmentations (where
    each document starts, and its type); they agree when the segmentations are the same.
    Agreement makes the ground truth final; a disagreement goes to adjudication by a third
    person, who sees both."""

    class Kind(models.TextChoices):
        DECISION = "decision", "A clinician's decision"
        AUDIT = "audit", "An audit that disagreed with the machine"

    class Rule(models.TextChoices):
        CORRECTION = "correction", "Every correction"
        BLOCKER = "blocker", "Every BLOCKER packet"
        RANDOM = "random", "Random share"
        AUDIT = "audit", "Every audit disagreement"
        LABEL_ISSUE = "label_issue", "A label the learning loop found likely wrong"
        # A decision taken back by an admin after a check confirmed it (or while one was
        # checking it): the new decision is checked again (review.services.ground_truth).
        REOPENED = "reopened", "A decision reopened after a check"

    class Status(models.TextChoices):
        AWAITING = "awaiting", "Waiting for a second reviewer"
        AGREED = "agreed", "Agreed"
        ADJUDICATION = "adjudication", "Waiting for adjudication"
        ADJUDICATED = "adjudicated", "Adjudicated"
        CANCELLED = "cancelled", "Cancelled (first decision withdrawn)"

    OPEN_STATUSES = (Status.AWAITING, Status.ADJUDICATION)

    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.DECISION)
    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="second_reviews"
    )
    packet = models.ForeignKey(
        ReviewPacket, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    first_review = models.OneToOneField(
        Review, null=True, blank=True, on_delete=models.PROTECT, related_name="second_review"
    )
    audit = models.OneToOneField(
        AuditSample, null=True, blank=True, on_delete=models.CASCADE, related_name="second_review"
    )
    first_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+"
    )
    rule = models.CharField(max_length=16, choices=Rule.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.AWAITING)
    first_type = models.CharField(max_length=32)
    # Segmentations: [[first page, last page, type], ...], in page order.
    first_segments = models.JSONField(default=list, blank=True)
    second_reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    second_type = models.CharField(max_length=32, blank=True)
    second_segments = models.JSONField(default=list, blank=True)
    second_note = models.TextField(blank=True)
    second_at = models.DateTimeField(null=True, blank=True)
    adjudicator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    final_type = models.CharField(max_length=32, blank=True)
    final_segments = models.JSONField(default=list, blank=True)
    adjudication_note = models.TextField(blank=True)
    adjudicated_at = models.DateTimeField(null=True, blank=True)
    final_truth = models.ForeignKey(
        GroundTruth, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]
        indexes = [
            models.Index(fields=["status", "created_at"]),
            models.Index(fields=["document", "status"], name="second_review_document"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(kind="decision", first_review__isnull=False)
                    | models.Q(kind="audit", audit__isnull=False)
                ),
                name="second_review_has_its_first_answer",
            )
        ]

    def __str__(self) -> str:
        return f"Second review of document {self.document_id} ({self.status})"


class RunComparison(models.Model):
    """A run of a document whose label a clinician already decided (or whose packet is still
    open): its answer is compared with the standing one and recorded here, and nothing else
    changes: a machine label never replaces a clinician's decision, and no second packet is
    opened."""

    run = models.OneToOneField(
        "reliability.Run", on_delete=models.CASCADE, related_name="comparison_with_standing"
    )
    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="run_comparisons"
    )
    standing_truth = models.ForeignKey(
        GroundTruth, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    open_packet = models.ForeignKey(
        ReviewPacket, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision = models.CharField(max_length=20)  # the run's own decision (accept or escalate)
    machine_type = models.CharField(max_length=32)
    standing_type = models.CharField(max_length=32, blank=True)
    agrees = models.BooleanField(null=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Run {self.run_id} compared with the standing label of {self.document_id}"
