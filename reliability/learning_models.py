"""The learning loop's tables (reliability.learning): every attempt, with its figures and why
its candidate was or was not activated, and the admins' pin. Kept apart from models.py so the
trained model's own table (TrainedClassifierModel) stays as it is; models.py imports these so
Django registers them with the app."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


def _trained_model(related_name: str = "+") -> models.ForeignKey[Any, Any]:
    """A link from an attempt to a trained model that outlives the model (SET_NULL): the
    candidate, the model active before and the one active after are the same kind of link."""
    return models.ForeignKey(
        "reliability.TrainedClassifierModel",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name=related_name,
    )


class LearningAttempt(models.Model):
    """One run of the loop: a candidate trained on the ground truth of the moment, the
    regression gate on held-back clinician labels, the per-type thresholds certified for the
    model left active, the novelty reference of its training documents, and the labels that
    look wrong. Background work (core.jobs): pending, running, completed or failed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule", "Scheduled"
        LABELS = "labels", "New clinician labels"
        MANUAL = "manual", "Started by an admin"

    class Outcome(models.TextChoices):
        """What became of the candidate (codes; ``reason`` says it in words)."""

        ACTIVATED = "activated", "Activated: not worse than the active model"
        REFUSED = "refused", "Not activated: worse than the active model"
        PINNED = "pinned", "Not activated: an admin pinned the active model"
        NO_DATA = "no_data", "Not trained: too little ground truth"

    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    reason = models.TextField(blank=True)
    clinician_labels = models.PositiveIntegerField(default=0)  # when the attempt was made
    ground_truth = models.PositiveIntegerField(default=0)
    candidate = _trained_model()
    active_before = _trained_model()
    # The model the thresholds and the novelty reference were computed for (the one active
    # after the attempt).
    active_after = _trained_model(related_name="learning_attempts")
    # The regression gate: {"candidate": figures, "active": figures, "reasons": [...]}.
    figures = models.JSONField(default=dict, blank=True)
    # engine.risk.RiskThreshold.as_dict() per stratum, and the method's parameters.
    thresholds = models.JSONField(default=list, blank=True)
    risk = models.JSONField(default=dict, blank=True)  # method, alpha, delta, calibration sums
    novelty = models.JSONField(default=dict, blank=True)  # reference size, alpha, rates
    # engine.novelty.NoveltyIndex.dump(): numpy arrays only (no pickle).
    novelty_reference = models.BinaryField(null=True, blank=True)
    label_issues = models.JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    error_code = models.CharField(max_length=32, blank=True)
    job_tries = models.PositiveIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)  # the heartbeat while it runs
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        app_label = "reliability"
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["status", "claimed_at"], name="learning_status_claimed"),
            models.Index(fields=["status", "-finished_at"], name="learning_status_finished"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "running", "completed", "failed"]),
                name="learning_status_valid",
            ),
            # One attempt queued or running at a time: the loop never trains twice at once.
            models.UniqueConstraint(
                fields=["status"],
                condition=models.Q(status__in=["pending", "running"]),
                name="one_open_learning_attempt",
            ),
        ]

    def __str__(self) -> str:
        outcome = f", {self.outcome}" if self.outcome else ""
        return f"Learning attempt {self.pk} ({self.status}{outcome})"


class LearningPin(models.Model):
    """An admin's pin: while a row exists, the loop keeps this model active (it still trains
    and records candidates, and certifies thresholds for the pinned model)."""

    model = models.ForeignKey(
        "reliability.TrainedClassifierModel", on_delete=models.CASCADE, related_name="pins"
    )
    pinned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pinned_at = models.DateTimeField(auto_now_add=True)
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        app_label = "reliability"
        constraints = [
            # At most one pin: the row with key 1.
            models.CheckConstraint(condition=models.Q(id=1), name="one_learning_pin")
        ]

    def __str__(self) -> str:
        return f"Pinned: {self.model}"


class SourceCertification(models.Model):
    """The clinician label whose confirmation made a source's exemplar memory trusted
    (engine.exemplars.CellTrust.certified_by): recorded when the source's record is computed
    again after a decision (reliability.learning.certifications_record), so the packet page of
    that decision can say it certified the source. A source that loses its trust (a
    contradiction) and earns it again has a second row, for the decision that did it then."""

    source = models.CharField(max_length=100)
    document_key = models.CharField(max_length=64)  # the certifying label's document (its pk)
    doc_type = models.CharField(max_length=32)  # the type the vote and the clinician agreed on
    confirmed = models.PositiveIntegerField()  # the source's confirmed votes then
    contradicted = models.PositiveIntegerField()
    bound = models.FloatField()  # upper bound of the votes' error rate (RISK_DELTA) then
    cell_min = models.PositiveIntegerField()  # LEARNING_MEMORY_CELL_MIN then
    model_version = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "reliability"
        constraints = [
            models.UniqueConstraint(
                fields=["source", "document_key"], name="one_certification_per_label"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} certified by {self.document_key}"
