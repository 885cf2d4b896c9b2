"""Admins register webhook endpoints here and read the delivery log."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from integrations import destinations, services, signing
from integrations.models import (
    SUBSCRIBABLE,
    ScimGroup,
    ScimUser,
    SsoIdentity,
    WebhookDelivery,
    WebhookEndpoint,
)


class WebhookEndpointForm(forms.ModelForm):
    # A plain field: the destination check below explains a refusal better than "Enter a valid
    # URL" (which the model's URLField still enforces for what the check lets through).
    url = forms.CharField(max_length=500, label="URL")
    events = forms.MultipleChoiceField(
        choices=SUBSCRIBABLE,
        widget=forms.CheckboxSelectMultiple,
        help_text="Payloads carry ids and types, never document text or filenames.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["name", "url", "secret", "events", "active"]

    def clean_url(self) -> str:
        """Checked now (the name resolved, every address allowed) and again at every send."""
        url: str = self.cleaned_data["url"]
        try:
            destinations.resolve(url)
        except destinations.DestinationRefused as refused:
            raise forms.ValidationError(refused.message, code=refused.code) from None
        return url

    def clean_secret(self) -> str:
        secret: str = self.cleaned_data["secret"].strip()
        if self.instance.pk and secret == self.instance.secret:
            # Kept as it was: a secret carried over from the first scheme may be shorter than
            # the standard's 24 bytes and still verifies at its receiver.
            problem = signing.secret_problem(secret, min_bytes=1)
        else:
            problem = signing.secret_problem(secret)
        if problem:
            raise forms.ValidationError(
                f'{problem} Leave the generated one, or make one with: python -c "import '
                "base64, secrets; print('whsec_' + base64.b64encode(secrets.token_bytes(32))"
                '.decode())"'
            )
        return secret


class DeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    fields = (
        "created_at",
        "event",
        "status",
        "attempts",
        "response_code",
        "duration_ms",
        "error_code",
        "last_error",
    )
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True
    ordering = ["-created_at"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[WebhookDelivery]:
        return super().get_queryset(request).order_by("-created_at")


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ("name", "url", "event_list", "active", "updated_at")
    list_filter = ("active",)
    search_fields = ("name", "url")
    actions = ["send_test_event"]
    inlines = [DeliveryInline]

    @admin.display(description="Events")
    def event_list(self, obj: WebhookEndpoint) -> str:
        return ", ".join(obj.events)

    @admin.action(description="Send a test event (ping)")
    def send_test_event(self, request: HttpRequest, queryset: QuerySet[WebhookEndpoint]) -> None:
        for endpoint in queryset:
            services.endpoint_ping(endpoint=endpoint)
        messages.info(request, f"Test event queued for {queryset.count()} endpoint(s).")


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """The delivery log: read-only, with "Send again" for failed or waiting deliveries."""

    list_display = (
        "created_at",
        "endpoint",
        "event",
        "status",
        "attempts",
        "response_code",
        "duration_ms",
        "error_code",
        "last_error",
        "next_attempt_at",
    )
    list_filter = ("status", "event", "error_code", "endpoint")
    list_select_related = ("endpoint",)
    search_fields = ("=id", "=event_id")
    date_hierarchy = "created_at"
    actions = ["send_again"]
    readonly_fields = [f.name for f in WebhookDelivery._meta.fields]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description="Send again now", permissions=["view"])
    def send_again(self, request: HttpRequest, queryset: QuerySet[WebhookDelivery]) -> None:
        sent = sum(services.delivery_retry_now(delivery=d) for d in queryset)
        messages.info(request, f"{sent} delivery(ies) queued again.")


@admin.register(SsoIdentity)
class SsoIdentityAdmin(admin.ModelAdmin):
    list_display = ("user", "subject", "issuer", "last_login_at")
    search_fields = ("user__username", "subject")
    list_select_related = ("user",)
    readonly_fields = ("user", "issuer", "subject", "last_login_at")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScimUser)
class ScimUserAdmin(admin.ModelAdmin):
    """What the identity provider provisioned (read-only: the provider changes it)."""

    list_display = ("user_name", "user", "external_id", "active", "updated_at")
    search_fields = ("user_name", "external_id", "=scim_id")
    list_select_related = ("user",)
    readonly_fields = ("scim_id", "user", "user_name", "external_id", "created_at", "updated_at")

    @admin.display(boolean=True)
    def active(self, obj: ScimUser) -> bool:
        return bool(obj.user.is_active)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ScimGroup)
class ScimGroupAdmin(admin.ModelAdmin):
    """Groups the identity provider pushes; their names give roles (OIDC_*_GROUPS)."""

    list_display = ("display_name", "external_id", "member_count", "updated_at")
    search_fields = ("display_name", "external_id")
    readonly_fields = ("scim_id", "display_name", "external_id", "members", "created_at")

    @admin.display(description="Members")
    def member_count(self, obj: ScimGroup) -> int:
        return obj.members.count()

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
