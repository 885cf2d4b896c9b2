"""Review packets for clinicians and the ground truth every decision produces."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ReviewPacket(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IN_REVIEW = "in_review", "In review"
        COMPLETED = "completed", "Completed"

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
    grounding = models.JSONField(default=list)
    comparison = models.JSONField(default=dict)  # the second classifier's answer and agreement
    comparison_agrees = models.BooleanField(null=True)
    history = models.JSONField(default=list)  # every attempt: decision, rule, fixes, issues
    locked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lock_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["priority", "created_at"]
        indexes = [models.Index(fields=["status", "priority", "created_at"])]

    def __str__(self) -> str:
        return f"Packet {self.pk} ({self.status})"


class GroundTruth(models.Model):
    class Source(models.TextChoices):
        AUTO_ACCEPTED = "AUTO_ACCEPTED", "Auto-accepted"
        SME_VALIDATED = "SME_VALIDATED", "Validated by a clinician"
        SME_CORRECTED = "SME_CORRECTED", "Corrected by a clinician"

    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="ground_truth"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    dominant_type = models.CharField(max_length=32)
    classification = models.JSONField()
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

    class Meta:
        ordering = ["document", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "version"], name="ground_truth_unique_version"
            )
        ]

    def __str__(self) -> str:
        return f"{self.document_id} v{self.version} {self.dominant_type} ({self.source})"
