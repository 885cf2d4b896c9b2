"""Webhook endpoints and their deliveries; the identity-provider subject of SSO users; the
accounts and groups the identity provider provisions through SCIM."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from core.events import Event
from integrations import signing

SUBSCRIBABLE = [(value, label) for value, label in Event.choices if value != Event.PING]


def new_secret() -> str:
    """A Standard Webhooks secret: whsec_ and the base64 of 32 random bytes."""
    return signing.new_secret()


class WebhookEndpoint(models.Model):
    """A receiver registered by an admin: where to POST, the shared secret that signs each
    delivery, and the events it wants."""

    name = models.CharField(max_length=100)
    url = models.URLField(
        max_length=500,
        help_text="http(s) URL that receives the POSTs: a public address, or one in a network "
        "allowed by WEBHOOK_ALLOWED_NETWORKS.",
    )
    secret = models.CharField(
        max_length=255,
        default=new_secret,
        help_text="The Standard Webhooks signing secret (whsec_ and base64). Give it to the "
        "receiver; change it here to rotate it.",
    )
    events = models.JSONField(default=list, help_text="Event types this endpoint receives.")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def wants(self, kind: str) -> bool:
        return self.active and (kind == Event.PING or kind in self.events)


class WebhookDelivery(models.Model):
    """One event for one endpoint. The body is fixed when the event happens, so every retry
    sends the same bytes; only the timestamp and signature are renewed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        RETRYING = "retrying", "Waiting to retry"
        SUCCEEDED = "succeeded", "Delivered"
        FAILED = "failed", "Failed (gave up)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    event_id = models.UUIDField(db_index=True)  # shared by the deliveries of one event
    event = models.CharField(max_length=32, choices=Event.choices)
    body = models.TextField()  # the JSON sent: ids and types only, never document text
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    # The last try's time from connecting to the answer's status line, in milliseconds.
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    # A short reason of our own; never the receiver's answer (it could be an internal page).
    last_error = models.TextField(blank=True)
    # For machines. The last try's: http_status, timeout, connect_timeout, connection_failed,
    # tls_failed, request_failed, destination_refused, dns_failed, endpoint_off. Or core.jobs':
    # queue_unreachable while a pending delivery waits for Redis to answer again; worker_lost
    # when it was given up because its workers died.
    error_code = models.CharField(max_length=32, blank=True)
    # When the next try is due (a retry's backoff; now, for a pending delivery).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)  # the heartbeat while it is sent
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "webhook deliveries"
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    status__in=["pending", "sending", "retrying", "succeeded", "failed"]
                ),
                name="webhook_delivery_status_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.event} to {self.endpoint_id} ({self.status})"


class SsoIdentity(models.Model):
    """The identity provider's stable subject for a user: email addresses change, `sub`
    does not."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    last_login_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SSO identity"
        verbose_name_plural = "SSO identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} @ {self.issuer}"


def new_scim_id() -> str:
    return uuid.uuid4().hex


class ScimUser(models.Model):
    """An account the identity provider provisions through SCIM 2.0: the id Vetted gave it
    (``scim_id``), the provider's own id for the person (``external_id``) and its userName.
    The account itself is the Django user; an account SCIM deletes keeps its user (the audit
    log names it) and loses this row."""

    scim_id = models.CharField(max_length=32, unique=True, default=new_scim_id, editable=False)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scim_user"
    )
    external_id = models.CharField(max_length=255, blank=True, db_index=True)
    user_name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM user"
        ordering = ["user_name"]

    def __str__(self) -> str:
        return self.user_name


class ScimGroup(models.Model):
    """A group the identity provider pushes through SCIM, with its members. Its name decides
    the role it gives (OIDC_REVIEWERS_GROUPS, OIDC_ADMINS_GROUPS: integrations.identity); it
    is not a Django group and carries no permission of its own."""

    scim_id = models.CharField(max_length=32, unique=True, default=new_scim_id, editable=False)
    external_id = models.CharField(max_length=255, blank=True, db_index=True)
    display_name = models.CharField(max_length=255, unique=True)
    members = models.ManyToManyField(ScimUser, related_name="groups", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SCIM group"
        ordering = ["display_name"]

    def __str__(self) -> str:
        return self.display_name
