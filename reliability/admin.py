from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.utils import timezone

from core.admin import ReadOnlyAdmin
from reliability import training
from reliability.models import (
    ApiToken,
    Attempt,
    Evaluation,
    Extraction,
    ExtractionTemplate,
    Issue,
    LearningAttempt,
    LearningPin,
    LLMResponse,
    Revocation,
    Run,
    TrainedClassifierModel,
)


class AttemptInline(admin.TabularInline):
    model = Attempt
    fields = ("number", "source", "decision", "decision_rule", "quality_score", "llm_calls")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "pk",
        "document",
        "status",
        "final_decision",
        "classifier",
        "preset",
        "attempts_count",
        "llm_calls",
        "cost_usd",
        "retry_at",
        "created_at",
    )
    list_filter = ("status", "final_decision", "classifier", "preset")
    search_fields = ("document__original_filename",)
    list_select_related = ("document",)
    inlines = [AttemptInline]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = (
        "created_at",
        "user",
        "operation",
        "documents",
        "failed",
        "llm_calls",
        "cost_usd",
    )
    list_filter = ("operation",)


@admin.register(Attempt)
class AttemptAdmin(ReadOnlyAdmin):
    list_display = ("run", "number", "source", "decision", "decision_rule")
    list_filter = ("decision", "source")


@admin.register(Issue)
class IssueAdmin(ReadOnlyAdmin):
    list_display = ("issue_id", "severity", "code", "agent", "attempt")
    list_filter = ("severity", "agent", "code")
    search_fields = ("message",)


@admin.register(Extraction)
class ExtractionAdmin(ReadOnlyAdmin):
    list_display = (
        "document",
        "doc_type",
        "status",
        "final_score",
        "iterations_count",
        "stopped_reason",
        "created_at",
    )
    list_filter = ("status", "doc_type", "stopped_reason")
    list_select_related = ("document",)


@admin.register(ExtractionTemplate)
class ExtractionTemplateAdmin(ReadOnlyAdmin):
    """The template packs in force (edit the JSON files; they are validated at start-up)."""

    list_display = ("pack", "doc_type", "title", "field_count", "pack_version", "synced_at")
    list_filter = ("pack",)


class ExpiredFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "Not expired"), ("expired", "Expired")]

    def queryset(self, request: Any, queryset: QuerySet[ApiToken]) -> QuerySet[ApiToken]:
        now = timezone.now()
        if self.value() == "live":
            return queryset.filter(expires_at__gt=now)
        if self.value() == "expired":
            return queryset.filter(expires_at__lte=now)
        return queryset


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "user",
        "prefix",
        "created_at",
        "last_used_at",
        "expires_at",
        "state",
        "revoked",
    )
    list_filter = ("revoked", "revoked_by", ExpiredFilter)
    readonly_fields = (
        "user",
        "name",
        "key_hash",
        "prefix",
        "created_at",
        "last_used_at",
        "expires_at",
        "state",
    )
    fields = (
        "user",
        "name",
        "prefix",
        "created_at",
        "last_used_at",
        "expires_at",
        "state",
        "revoked",
    )

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        fields = tuple(super().get_readonly_fields(request, obj))
        if obj is not None and obj.revoked and not request.user.is_superuser:
            # Ended access stays ended: only a superuser restores a revoked token (a read-only
            # field, so a forged POST is ignored too); the state says who ended it.
            return (*fields, "revoked")
        return fields

    def save_model(self, request: Any, obj: ApiToken, form: Any, change: bool) -> None:
        if "revoked" in form.changed_data:
            obj.revoked_by = Revocation.ADMIN if obj.revoked else ""
        super().save_model(request, obj, form, change)

    @admin.display(description="State")
    def state(self, obj: ApiToken) -> str:
        if obj.revoked:
            why = Revocation(obj.revoked_by).label if obj.revoked_by else "revoked"
            return f"revoked: {why}. Only a superuser can restore it."
        if obj.expired():
            return "expired"
        if not obj.user.is_active:
            return "user deactivated"
        return "live"

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False  # create tokens with manage.py create_api_token: the key is shown once


@admin.register(LLMResponse)
class LLMResponseAdmin(admin.ModelAdmin):
    """The response cache. Deleting an entry makes the next run with that text ask again."""

    list_display = ("operation", "model", "prompt_version", "created_at")
    list_filter = ("operation", "model", "prompt_version")
    fields = ("key", "operation", "model", "prompt_version", "created_at")
    readonly_fields = fields

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(TrainedClassifierModel)
class TrainedClassifierModelAdmin(ReadOnlyAdmin):
    """Trained classifiers (manage.py train_classifier): versions, held-back figures, and why
    each was or was not activated. The model itself is never shown or edited here."""

    list_display = (
        "pk",
        "version",
        "active",
        "source",
        "train_documents",
        "heldout_documents",
        "heldout_accuracy",
        "pinned",
        "signature",
        "trained_at",
    )
    list_filter = ("active", "source")
    actions = ["pin_model", "activate_model", "unpin", "learn_now"]
    fields = (
        "version",
        "data_hash",
        "source",
        "trained_at",
        "train_documents",
        "heldout_documents",
        "label_counts",
        "training_seconds",
        "metrics",
        "active",
        "activated_at",
        "decision",
        "blob_sha256",
        "signature",
    )
    readonly_fields = fields

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).defer("blob")

    @admin.display(description="held-back accuracy")
    def heldout_accuracy(self, obj: TrainedClassifierModel) -> str:
        figures = (obj.metrics or {}).get("candidate") or {}
        return f"{figures['accuracy']:.3f}" if "accuracy" in figures else "-"

    @admin.display(description="signature")
    def signature(self, obj: TrainedClassifierModel) -> str:
        # A refused model is said so here, not only in a log line: it is never used.
        return training.model_check(obj).message

    @admin.display(description="pinned", boolean=True)
    def pinned(self, obj: TrainedClassifierModel) -> bool:
        return LearningPin.objects.filter(model=obj).exists()

    # -- the learning loop: pin, roll back, start an attempt (reliability.learning) -------------

    def _may_change(self, request: Any) -> None:
        if not request.user.has_perm("reliability.change_trainedclassifiermodel"):
            raise PermissionDenied

    def _one(self, request: Any, queryset: Any) -> TrainedClassifierModel | None:
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one model.", messages.WARNING)
            return None
        return queryset.defer("blob").first()

    @admin.action(description="Activate the selected model and pin it (the loop keeps it)")
    def pin_model(self, request: Any, queryset: Any) -> None:
        from reliability.learning import model_activate

        self._may_change(request)
        row = self._one(request, queryset)
        if row is not None:
            model_activate(row=row, user=request.user, pin=True)
            self.message_user(
                request, f"{row} is active and pinned; its thresholds are being certified again."
            )

    @admin.action(description="Roll back to the selected model (not pinned)")
    def activate_model(self, request: Any, queryset: Any) -> None:
        from reliability.learning import model_activate

        self._may_change(request)
        row = self._one(request, queryset)
        if row is not None:
            model_activate(row=row, user=request.user, pin=False)
            self.message_user(request, f"{row} is active; the next attempt may replace it.")

    @admin.action(description="Unpin (the loop may activate better models again)")
    def unpin(self, request: Any, queryset: Any) -> None:
        from reliability.learning import model_unpin

        self._may_change(request)
        done = model_unpin(user=request.user)
        self.message_user(request, "Unpinned." if done else "No model was pinned.")

    @admin.action(description="Start a learning attempt now")
    def learn_now(self, request: Any, queryset: Any) -> None:
        from reliability.learning import learning_schedule

        self._may_change(request)
        attempt = learning_schedule(trigger=LearningAttempt.Trigger.MANUAL, user=request.user)
        self.message_user(
            request,
            f"Learning attempt {attempt.pk} queued." if attempt else "An attempt is already open.",
        )


@admin.register(LearningAttempt)
class LearningAttemptAdmin(ReadOnlyAdmin):
    """Every attempt of the learning loop: what triggered it, its candidate, the regression
    gate's figures, the thresholds certified, and why the candidate was or was not activated."""

    list_display = (
        "pk",
        "created_at",
        "trigger",
        "status",
        "outcome",
        "candidate",
        "active_after",
        "clinician_labels",
        "seconds",
    )
    list_filter = ("status", "outcome", "trigger")
    fields = (
        "status",
        "trigger",
        "outcome",
        "reason",
        "clinician_labels",
        "ground_truth",
        "candidate",
        "active_before",
        "active_after",
        "figures",
        "thresholds",
        "risk",
        "novelty",
        "label_issues",
        "seconds",
        "error",
        "error_code",
        "created_at",
        "started_at",
        "finished_at",
        "created_by",
    )
    readonly_fields = fields

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).defer("novelty_reference")
