"""What reliability hands on to the apps above it, and the ground truth it reads from them,
without importing them (config.wiring connects both)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.wiring import Hook
from engine import pipeline
from engine.schemas import Issue as EngineIssue
from reliability.models import Run


@dataclass(frozen=True)
class RunDecided:
    """A run's outcome, handed on inside the transaction that completes the run."""

    run: Run
    outcome: pipeline.Outcome
    accepted: bool  # AUTO_ACCEPT (ground truth) or escalated (a review packet)
    comparison: dict[str, Any]
    extra_issues: list[EngineIssue] = field(default_factory=list)


# Record the outcome downstream (ground truth or a review packet); each receiver answers
# with the ids it created ({"ground_truth_id": ...} or {"packet_id": ...}) for the event.
run_decided: Hook[[RunDecided], dict[str, Any]] = Hook("run decided")

# Ground truth, read from above. (document id, type, page texts) of every document's current
# ground truth, for training; ``sme_only`` leaves out auto-accepted answers.
training_ground_truth: Hook[[bool], list[tuple[str, str, list[str]]]] = Hook(
    "training ground truth"
)
# (ground-truth id, document id, corrected type, text) of the latest clinician corrections:
# the examples a language model is shown.
corrected_examples: Hook[[], list[tuple[int, Any, str, str]]] = Hook("corrected examples")

# The learning loop (reliability.learning), read from above: (document id, type, page texts,
# whether a clinician gave the label: a review, an audit, an adjudication) of every document's
# current ground truth; and how many current labels clinicians gave.
learning_ground_truth: Hook[[], list[tuple[str, str, list[str], bool]]] = Hook(
    "learning ground truth"
)
clinician_label_count: Hook[[], int] = Hook("clinician label count")
# (run id, type) of every current label a clinician gave on a run (a decision on the run's
# packet, an audit's correction): the learned waivers (reliability.waivers) count how often
# clinicians overruled or upheld each escalation code on a source.
clinician_run_labels: Hook[[], list[tuple[int, str]]] = Hook("clinician run labels")
# Labels the loop found likely wrong: (document id, given type, suggested type, the model's
# probability of the given type), most suspicious first. Receivers open blind re-checks and
# answer with how many they opened.
label_issues_found: Hook[[list[tuple[str, str, str, float]]], int] = Hook("label issues found")
