"""Runs of the reliability engine: each run has attempts, each attempt has issues."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from core import jobs
from engine.schemas import Decision, Severity
from reliability.learning_models import LearningAttempt, LearningPin, SourceCertification

# The learning loop's tables, registered here.
__all__ = ["LearningAttempt", "LearningPin", "SourceCertification"]

# The engine's enums are the one source; these are their labels for forms and the admin.
FINAL_DECISIONS = [
    (Decision.AUTO_ACCEPT.value, "Auto-accepted"),
    (Decision.ESCALATE_TO_SME.value, "Escalated to a clinician"),
]
SEVERITIES = [(s.value, s.value.title()) for s in Severity]


class LLMSpend(models.Model):
    """What language-model calls cost: calls made, HTTP requests (tries), answers from the
    cache, tokens in, out and thinking, dollars. Runs and evaluations both spend."""

    llm_calls = models.PositiveIntegerField(default=0)
    llm_requests = models.PositiveIntegerField(default=0)
    llm_cache_hits = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    tokens_thinking = models.PositiveIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=0)

    class Meta:
        abstract = True


class Run(LLMSpend):
    QUEUE_UNREACHABLE = jobs.QUEUE_UNREACHABLE  # error_code: the run never reached a worker

    class ErrorCode(models.TextChoices):
        """Why a run failed, for what counts and branches on it (messages are for people)."""

        LLM_FAILED = "llm_failed", "The language model call failed"
        LLM_UNAVAILABLE_TOO_LONG = "llm_unavailable", "The language model was away too long"
        CRASHED = "crashed", "The run failed unexpectedly"

    class WaitCode(models.TextChoices):
        """Why a run waits (wait_reason says it in words)."""

        LLM_UNAVAILABLE = "llm_unavailable", "The language model is unavailable"
        BUDGET = "budget", "The daily language-model budget is spent"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        # Transient trouble (rate limits, outages, a spent daily budget): the run resumes by
        # itself at retry_at (the recovery pass sends it then), and wait_reason says why.
        WAITING = "waiting", "Waiting for the language model"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"

    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="runs"
    )
    preset = models.CharField(max_length=16)
    config = models.JSONField(default=dict)
    classifier = models.CharField(max_length=32)
    model = models.CharField(max_length=64, blank=True)
    prompt_version = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    final_decision = models.CharField(max_length=20, choices=FINAL_DECISIONS, blank=True)
    attempts_count = models.PositiveIntegerField(default=0)
    best_attempt_number = models.PositiveIntegerField(null=True, blank=True)
    stopped_reason = models.CharField(max_length=200, blank=True)
    # LLM accounting (LLMSpend's fields too), summed over every execution of the run (a run
    # that waited and resumed keeps what it spent before).
    llm_seconds = models.FloatField(default=0.0)
    llm_log = models.JSONField(default=list, blank=True)  # per call: operation, tokens, latency
    # The independent gate's view: second classifier, its type, agreement, confirmation.
    gate = models.JSONField(default=dict, blank=True)
    # When the run is next to be tried: a waiting run's next try; a pending run's moment it
    # was queued (core.jobs: it is due from then on). None once it finished or failed.
    retry_at = models.DateTimeField(null=True, blank=True)
    wait_reason = models.CharField(max_length=300, blank=True)
    wait_code = models.CharField(max_length=16, choices=WaitCode.choices, blank=True)
    waits = models.PositiveIntegerField(default=0)
    waiting_since = models.DateTimeField(null=True, blank=True)
    skipped_checks = models.JSONField(default=list, blank=True)
    # Ground-truth ids of the SME-corrected documents shown to the LLM as examples.
    few_shot_ids = models.JSONField(default=list, blank=True)
    # The learning loop's view of the run (reliability.learning): novelty, the acceptance
    # score and the threshold it met or missed, and how much its label would teach the model.
    learning = models.JSONField(default=dict, blank=True)
    duration_seconds = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Why it failed, for machines (core.jobs codes: queue_unreachable failures are resumed by
    # the recovery pass; worker_lost ones are not).
    error_code = models.CharField(max_length=32, blank=True)
    job_tries = models.PositiveIntegerField(default=0)  # claims since it was started or waited
    claimed_at = models.DateTimeField(null=True, blank=True)  # the heartbeat while it runs
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "claimed_at"]),
            models.Index(fields=["status", "retry_at"]),
            models.Index(fields=["document", "-created_at"]),
            models.Index(fields=["started_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    status__in=["pending", "running", "waiting", "completed", "failed"]
                ),
                name="run_status_valid",
            ),
            # An accepted or escalated run is a completed run, and only a completed run.
            models.CheckConstraint(
                condition=models.Q(
                    status="completed", final_decision__in=[v for v, _ in FINAL_DECISIONS]
                )
                | (~models.Q(status="completed") & models.Q(final_decision="")),
                name="run_decision_only_when_completed",
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} of {self.document_id} ({self.status})"


class LLMResponse(models.Model):
    """The response cache: a validated answer by the hash of everything that shaped it (model,
    system prompt and its version, the prompt with the page texts, the schema, generation
    settings). The same text asked the same way is answered from here, at no cost."""

    key = models.CharField(max_length=64, unique=True)
    operation = models.CharField(max_length=32)
    model = models.CharField(max_length=64)
    prompt_version = models.CharField(max_length=64)
    response = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = "LLM response (cache)"
        verbose_name_plural = "LLM responses (cache)"

    def __str__(self) -> str:
        return f"{self.operation} {self.prompt_version} ({self.created_at:%Y-%m-%d})"


class Evaluation(LLMSpend):
    """One POST /api/v1/evaluate/ request: who asked, what, and what it cost. Its spend counts
    against the daily budget beside the runs' (reliability.llm_runtime.spent_today)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    operation = models.CharField(max_length=32)
    documents = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)  # documents answered with an error
    model = models.CharField(max_length=64, blank=True)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    def __str__(self) -> str:
        return f"{self.operation} over {self.documents} document(s) ({self.created_at:%Y-%m-%d})"


class Attempt(models.Model):
    class Source(models.TextChoices):
        CLASSIFIER = "classifier", "Classifier"
        AUTOFIX = "autofix", "Auto-fix"
        REASK = "reask", "Re-ask with feedback"
        FALLBACK = "fallback", "Independent classifier (the model gave no answer)"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    source = models.CharField(max_length=16, choices=Source.choices)
    classification = models.JSONField()
    fingerprint = models.CharField(max_length=32)
    fixes_applied = models.JSONField(default=list, blank=True)
    decision = models.CharField(max_length=20)
    decision_rule = models.CharField(max_length=64)
    decision_trace = models.JSONField(default=list)
    feedback = models.TextField(blank=True)
    grounding = models.JSONField(default=list, blank=True)  # V4 spans per evidence snippet
    quality_score = models.FloatField(default=1.0)
    llm_calls = models.PositiveIntegerField(default=0)
    duration_seconds = models.FloatField(default=0.0)
    verification_seconds = models.FloatField(default=0.0)
    note = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="attempt_unique_number")
        ]

    def __str__(self) -> str:
        return f"Attempt {self.number} of run {self.run_id}"


class Issue(models.Model):
    attempt = models.ForeignKey(Attempt, on_delete=models.CASCADE, related_name="issues")
    issue_id = models.CharField(max_length=16)  # V1-0001
    agent = models.CharField(max_length=4)
    severity = models.CharField(max_length=8, choices=SEVERITIES)
    severity_rank = models.PositiveSmallIntegerField()  # 0 BLOCKER, 1 MAJOR, 2 MINOR
    code = models.CharField(max_length=48)
    message = models.TextField()
    location = models.CharField(max_length=200, blank=True)
    suggested_fix = models.TextField(blank=True)
    auto_fixable = models.BooleanField(default=False)
    llm_fixable = models.BooleanField(default=False)

    class Meta:
        ordering = ["attempt", "severity_rank", "issue_id"]

    def __str__(self) -> str:
        return f"{self.issue_id} {self.severity}: {self.message[:60]}"


class ExtractionTemplate(models.Model):
    """The loaded template packs, mirrored here so admins can read them (the files rule)."""

    pack = models.CharField(max_length=32)
    pack_version = models.CharField(max_length=64)
    doc_type = models.CharField(max_length=32)
    title = models.CharField(max_length=100)
    field_count = models.PositiveIntegerField()
    definition = models.JSONField()
    synced_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pack", "doc_type"]
        constraints = [
            models.UniqueConstraint(fields=["pack", "doc_type"], name="template_unique_per_pack")
        ]

    def __str__(self) -> str:
        return f"{self.pack}/{self.doc_type} ({self.pack_version})"


class Extraction(models.Model):
    class Status(models.TextChoices):
        COMPLETED = "completed", "Completed"
        REFUSED = "refused", "Refused"
        FAILED = "failed", "Failed"

    document = models.ForeignKey(
        "documents.Document", on_delete=models.CASCADE, related_name="extractions"
    )
    run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.CASCADE, related_name="extractions"
    )
    segment_index = models.PositiveIntegerField(default=0)
    start_page = models.PositiveIntegerField(default=1)
    end_page = models.PositiveIntegerField(default=1)
    doc_type = models.CharField(max_length=32)
    template_version = models.CharField(max_length=64, blank=True)
    extractor = models.CharField(max_length=32, blank=True)
    options = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices)
    refused_reason = models.TextField(blank=True)
    fields = models.JSONField(default=dict)
    final_score = models.FloatField(null=True, blank=True)
    first_score = models.FloatField(null=True, blank=True)  # the first iteration's score
    met_threshold = models.BooleanField(default=False)
    iterations_count = models.PositiveIntegerField(default=0)
    iterations = models.JSONField(default=list)
    stopped_reason = models.CharField(max_length=32, blank=True)
    warnings = models.JSONField(default=list)
    # Form filling (a form pack such as us_tax): the form this Other segment was filled as
    # ("w2", "1099_nec"; empty: none), the other templates partly filled, each attempt, and
    # issues such as a wrong tax year (severity ERROR).
    form_type = models.CharField(max_length=32, blank=True)
    alternatives = models.JSONField(default=list, blank=True)
    form_attempts = models.JSONField(default=list, blank=True)
    issues = models.JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["document", "run", "segment_index"]
        indexes = [models.Index(fields=["created_at"], name="extraction_created")]

    def __str__(self) -> str:
        return f"Extraction {self.pk} {self.doc_type} ({self.status})"


class Revocation(models.TextChoices):
    """Who ended a token: an ended token is restored only by a superuser (reliability.admin),
    whoever ended it, so an Admin cannot undo what the identity provider decided."""

    IDENTITY_PROVIDER = "identity_provider", "the identity provider ended the account's access"
    ADMIN = "admin", "an administrator revoked it"
    ACCOUNT_DEACTIVATED = "account_deactivated", "an administrator deactivated its account"


class ApiToken(models.Model):
    """A bearer token for the JSON API. Only its SHA-256 is stored; the key is shown once.
    Every token expires (``expires_at``, API_TOKEN_DAYS after it was made); it is revoked at
    once when its user is deactivated, and refused while its user holds no role."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    key_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=8)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()
    revoked = models.BooleanField(default=False)
    # Why it was revoked (a Revocation code; blank while live, or for tokens revoked before
    # reasons were kept).
    revoked_by = models.CharField(max_length=32, blank=True, choices=Revocation.choices)

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def expired(self, now: Any = None) -> bool:
        return self.expires_at <= (now or timezone.now())


class TrainedClassifierModel(models.Model):
    """A classifier trained on ground truth (engine.classifiers.trained): the signed model,
    what it was trained on, and how it did on the held-back slice next to the classifier that
    was active. At most one is active; it is the offline primary and the gate beside an LLM."""

    version = models.CharField(max_length=64)  # the training data's hash, shortened
    data_hash = models.CharField(max_length=64)
    source = models.CharField(max_length=300)  # "ground truth" or the corpus folder
    trained_at = models.DateTimeField(default=timezone.now)
    train_documents = models.PositiveIntegerField(default=0)
    heldout_documents = models.PositiveIntegerField(default=0)
    label_counts = models.JSONField(default=dict, blank=True)
    training_seconds = models.FloatField(default=0.0)
    # On the held-back slice: {"candidate": {...}, "active": {...}, "active_name": "..."}
    metrics = models.JSONField(default=dict, blank=True)
    active = models.BooleanField(default=False)
    activated_at = models.DateTimeField(null=True, blank=True)
    decision = models.TextField(blank=True)  # why it was or was not activated
    # engine.classifiers.trained.dump: JSON and numeric arrays (never a pickle), signed; loaded
    # only if ours
    blob = models.BinaryField()
    blob_sha256 = models.CharField(max_length=64)

    class Meta:
        ordering = ["-trained_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["active"],
                condition=models.Q(active=True),
                name="one_active_trained_classifier",
            )
        ]

    def __str__(self) -> str:
        return f"trained-{self.version}" + (" (active)" if self.active else "")
