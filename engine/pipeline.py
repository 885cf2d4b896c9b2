"""The verification chain and the retry orchestrator. Pure: no Django.

Attempt 0 verifies the classifier's output. AUTO_RETRY applies the auto-fix engine and
verifies again, up to ``max_retries`` times; a fingerprint seen before means the fix changed
nothing, so the run escalates at once. When the issues are not auto-fixable but a language
model could address them, the preset may allow re-asking the classifier with the issues as
feedback before escalating. The best attempt is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine import autofix
from engine.document import DocumentContext
from engine.schemas import (
    ClassificationOutput,
    Decision,
    Issue,
    Severity,
    number_issues,
    sort_issues,
)
from engine.verifiers import arbiter, v1_schema, v2_consistency, v3_domain, v4_grounding

FEEDBACK_HEADER = "--- FEEDBACK FROM PREVIOUS ATTEMPT ---"
FEEDBACK_LIMIT = 10


@dataclass(frozen=True)
class Preset:
    name: str
    max_retries: int  # auto-fix / re-ask attempts after attempt 0
    reask: bool  # may re-ask an LLM classifier with feedback
    min_dominant_confidence: float


PRESETS: dict[str, Preset] = {
    "real-time": Preset("real-time", max_retries=1, reask=False, min_dominant_confidence=0.45),
    "batch": Preset("batch", max_retries=2, reask=True, min_dominant_confidence=0.5),
    "clinical": Preset("clinical", max_retries=2, reask=True, min_dominant_confidence=0.6),
}


@dataclass
class Verification:
    issues: list[Issue]
    verdict: arbiter.Verdict
    grounding: list[dict[str, Any]]
    quality_score: float
    skipped: list[str]
    seconds: float


def verify(output: ClassificationOutput, context: DocumentContext) -> Verification:
    started = time.perf_counter()
    context.skipped = []
    issues = v1_schema.verify(output, context)
    blocker = any(i.severity == Severity.BLOCKER for i in issues)
    issues += v2_consistency.verify(output, context, blocker_so_far=blocker)
    issues += v3_domain.verify(output, context)
    grounding = v4_grounding.verify(output, context)
    issues += grounding.issues
    issues = number_issues(sort_issues(issues))
    return Verification(
        issues=issues,
        verdict=arbiter.decide(issues),
        grounding=grounding.matches,
        quality_score=grounding.quality_score,
        skipped=list(context.skipped),
        seconds=time.perf_counter() - started,
    )


@dataclass
class AttemptRecord:
    number: int
    output: ClassificationOutput
    verification: Verification
    fingerprint: str
    fixes: list[str] = field(default_factory=list)
    feedback: str = ""
    source: str = "classifier"  # classifier | autofix | reask
    llm_calls: int = 0
    seconds: float = 0.0
    note: str = ""

    @property
    def decision(self) -> Decision:
        return self.verification.verdict.decision


@dataclass
class Outcome:
    decision: Decision
    stopped_reason: str
    attempts: list[AttemptRecord]
    best: AttemptRecord


def build_feedback(issues: list[Issue]) -> str:
    lines = [
        FEEDBACK_HEADER,
        "Your previous answer failed these checks. Correct them and answer again in full.",
    ]
    for issue in sort_issues(issues)[:FEEDBACK_LIMIT]:
        lines.append(
            f"- [{issue.severity.value}] {issue.location}: {issue.message}"
            + (f" Fix: {issue.suggested_fix}" if issue.suggested_fix else "")
        )
    return "\n".join(lines)


def _rank(record: AttemptRecord) -> tuple[int, int, int, int, float]:
    issues = record.verification.issues
    order = {Decision.AUTO_ACCEPT: 0, Decision.AUTO_RETRY: 1, Decision.ESCALATE_TO_SME: 2}
    return (
        order[record.decision],
        sum(1 for i in issues if i.severity == Severity.BLOCKER),
        sum(1 for i in issues if i.severity == Severity.MAJOR),
        sum(1 for i in issues if i.severity == Severity.MINOR),
        -record.verification.quality_score,
    )


Classify = Callable[[str | None], tuple[ClassificationOutput, int]]


def only_fixable_blockers(issues: list[Issue]) -> bool:
    """Escalation caused only by BLOCKERs that the auto-fix engine repairs (segment count,
    missing types): worth one repair before a clinician sees it."""
    blockers = [i for i in issues if i.severity == Severity.BLOCKER]
    others = [i for i in issues if i.severity == Severity.MAJOR and not i.auto_fixable]
    return bool(blockers) and all(i.auto_fixable for i in blockers) and not others


def orchestrate(
    *,
    classify: Classify,
    context: DocumentContext,
    preset: Preset,
    can_reask: bool,
) -> Outcome:
    """Run attempts until a decision. ``classify(feedback)`` returns (output, llm_calls)."""
    attempts: list[AttemptRecord] = []
    seen: set[str] = set()
    reasks_left = 1 if (preset.reask and can_reask) else 0

    def run_attempt(
        output: ClassificationOutput,
        *,
        source: str,
        calls: int,
        fixes: list[str],
        feedback: str,
        started: float,
    ) -> AttemptRecord:
        record = AttemptRecord(
            number=len(attempts),
            output=output,
            verification=verify(output, context),
            fingerprint=autofix.fingerprint(output),
            fixes=fixes,
            feedback=feedback,
            source=source,
            llm_calls=calls,
        )
        record.seconds = time.perf_counter() - started
        attempts.append(record)
        seen.add(record.fingerprint)
        return record

    started = time.perf_counter()
    output, calls = classify(None)
    current = run_attempt(
        output, source="classifier", calls=calls, fixes=[], feedback="", started=started
    )
    stopped = ""
    while True:
        decision = current.decision
        issues = current.verification.issues
        if decision == Decision.AUTO_ACCEPT:
            stopped = "accepted"
            break
        retries_used = len(attempts) - 1
        fixable_escalation = decision == Decision.ESCALATE_TO_SME and only_fixable_blockers(issues)
        if decision == Decision.AUTO_RETRY or fixable_escalation:
            if retries_used >= preset.max_retries:
                stopped = "retry limit reached"
                break
            started = time.perf_counter()
            fixed, applied = autofix.apply_fixes(current.output, issues)
            if autofix.fingerprint(fixed) in seen:
                current.note = "auto-fix changed nothing (fingerprint seen before)"
                stopped = "cycle detected"
                break
            current = run_attempt(
                fixed, source="autofix", calls=0, fixes=applied, feedback="", started=started
            )
            continue
        # Escalation. An LLM classifier may be asked once more with the issues as feedback.
        llm_fixable = [i for i in issues if i.llm_fixable or i.auto_fixable]
        if reasks_left and llm_fixable and retries_used < preset.max_retries:
            reasks_left -= 1
            feedback = build_feedback(issues)
            started = time.perf_counter()
            output, calls = classify(feedback)
            current = run_attempt(
                output, source="reask", calls=calls, fixes=[], feedback=feedback, started=started
            )
            continue
        stopped = "escalated by the arbiter"
        break

    best = min(attempts, key=_rank)
    decision = best.decision
    if decision == Decision.AUTO_RETRY:
        decision = Decision.ESCALATE_TO_SME  # still wanting a retry after the last attempt
    if decision == Decision.ESCALATE_TO_SME and stopped == "accepted":
        stopped = "escalated by the arbiter"
    return Outcome(decision=decision, stopped_reason=stopped, attempts=attempts, best=best)
