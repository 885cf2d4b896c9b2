"""The verification chain and the retry orchestrator. Pure: no Django.

Verification runs the deterministic checks first (V1, the V2 and V3 rules, V4 grounding and the
independent gate), then the LLM checks (V2 label/text, V3 context) only where they can change
the outcome (see ``llm_checks``). Attempt 0 verifies the classifier's output. AUTO_RETRY applies
the auto-fix engine and verifies again, up to ``max_retries`` times; a fingerprint seen before
means the fix changed nothing, so the run escalates at once. When the issues are not
auto-fixable but a language model could address them, the preset may allow re-asking the
classifier with the issues as feedback before escalating; a re-ask that fails keeps the
attempts already made and escalates with the failure recorded. The best attempt is kept.

A language model that gives no usable answer at all (a block, an answer still empty or cut off
after one more try, one that never fits the schema, a request it rejects as invalid) does not
fail the run: the independent classifier's labels become attempt 0 with a BLOCKER saying what
the model did (``model_no_answer``), so a clinician decides, with a suggestion to start from.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from engine import acceptance, autofix
from engine.document import DocumentContext
from engine.llm.errors import LLMError, LLMNoAnswer, LLMRefused, LLMUnavailable
from engine.schemas import (
    ClassificationOutput,
    Decision,
    Issue,
    Severity,
    make_issue,
    number_issues,
    sort_issues,
)
from engine.verifiers import arbiter, gate, v1_schema, v2_consistency, v3_domain, v4_grounding

MODEL_NO_ANSWER = "model_no_answer"
FALLBACK_STOP = "the language model gave no usable answer; escalated with the independent labels"
FEEDBACK_HEADER = "--- FEEDBACK FROM PREVIOUS ATTEMPT ---"
FEEDBACK_LIMIT = 10


@dataclass(frozen=True)
class Preset:
    name: str
    max_retries: int  # auto-fix / re-ask attempts after attempt 0
    reask: bool  # may re-ask an LLM classifier with feedback
    min_dominant_confidence: float
    # For a classifier whose confidence is a calibrated probability (the trained one): the
    # least probability of being right at which its answer may be accepted. A self-reported
    # confidence (an LLM's rubric, the rules' score) is on another scale, hence two thresholds.
    min_calibrated_confidence: float = 0.8
    # An independent gate that agrees without confidence is an abstention: with this set, the
    # run needs the document's structure to confirm the labels, or it escalates, rather than
    # asking the model that gave the labels whether they are right (engine.verifiers.gate).
    require_independent_confirmation: bool = False


PRESETS: dict[str, Preset] = {
    "real-time": Preset(
        "real-time",
        max_retries=1,
        reask=False,
        min_dominant_confidence=0.45,
        min_calibrated_confidence=0.6,
    ),
    "batch": Preset(
        "batch",
        max_retries=2,
        reask=True,
        min_dominant_confidence=0.5,
        min_calibrated_confidence=0.7,
    ),
    "clinical": Preset(
        "clinical",
        max_retries=2,
        reask=True,
        min_dominant_confidence=0.6,
        min_calibrated_confidence=0.8,
        require_independent_confirmation=True,
    ),
}


def confidence_threshold(preset: Preset, classifier: object) -> float:
    """The preset's threshold on the scale of the classifier's confidence."""
    if getattr(classifier, "calibrated", False):
        return preset.min_calibrated_confidence
    return preset.min_dominant_confidence


@dataclass
class Verification:
    issues: list[Issue]
    verdict: arbiter.Verdict
    grounding: list[dict[str, Any]]
    quality_score: float
    skipped: list[str]
    seconds: float
    gate_result: gate.GateResult | None = None


GATE_PHASE = "Independent gate"
LLM_PHASES = (v2_consistency.LLM_PHASE, v3_domain.LLM_PHASE)


def _labels(output: ClassificationOutput) -> tuple[Any, ...]:
    """What the LLM checks look at: the document's type and each segment's pages and type."""
    return (
        output.dominant_type_overall.value,
        tuple((s.start_page, s.end_page, s.dominant_type.value) for s in output.segments),
    )


def llm_checks(
    output: ClassificationOutput,
    context: DocumentContext,
    *,
    decision: Decision,
    gate_result: gate.GateResult | None,
) -> list[Issue]:
    """The V2 and V3 LLM checks, only where they can change the outcome.

    They can only add MAJOR issues, so they run only when the deterministic checks would accept:
    * a deterministic escalation stays an escalation whatever they say;
    * a deterministic AUTO_RETRY is auto-fixed first, and the fix never changes a label, so the
      checks run once, on the fixed attempt, if that one would be accepted;
    * when the independent gate confirms the labels (it agrees on every segment's type and is
      confident, or it abstained and the document's structure confirms them), asking the model
      that gave the labels whether they are right adds nothing the gate did not: a clinician
      is not needed, and the checks are skipped.
    Results are kept by labels, so an attempt whose labels did not change is never re-checked.
    A transient failure (LLMUnavailable) propagates: the run waits rather than escalating.
    """
    llm = context.llm

    def skip(reason: str) -> list[Issue]:
        context.skipped.extend(f"{phase}: {reason}" for phase in LLM_PHASES)
        return []

    if llm is None:
        return skip("no LLM configured")
    if decision != Decision.AUTO_ACCEPT:
        return skip(f"the deterministic checks already decide ({decision.value})")
    if gate_result is not None and gate_result.confirmed:
        if gate_result.confirmed_by == gate.BY_STRUCTURE:
            return skip("the document's structure confirms the labels (the gate abstained)")
        return skip("the independent classifier confirms the labels")
    key = _labels(output)
    if key not in context.llm_memo:
        tasks: list[Callable[[], list[Issue]]] = [
            partial(v2_consistency.check_segment, i, output, context, llm)
            for i in range(len(output.segments))
        ]
        tasks.append(partial(v3_domain.verify_llm, output, context, llm))
        found = llm.concurrently(tasks)
        context.llm_memo[key] = [issue for issues in found for issue in issues]
    return [issue.model_copy() for issue in context.llm_memo[key]]


def verify(
    output: ClassificationOutput,
    context: DocumentContext,
    *,
    preset: Preset | None = None,
    known: list[Issue] | None = None,
) -> Verification:
    """Every check on one output. ``preset`` says whether an abstaining gate needs the
    structure's confirmation (``Preset.require_independent_confirmation``); ``known`` are
    issues found before verification (the model gave no answer)."""
    started = time.perf_counter()
    context.skipped = []
    issues = [issue.model_copy() for issue in known or []]
    issues += v1_schema.verify(output, context)
    issues += v2_consistency.verify_rules(output, context)
    issues += v3_domain.verify_rules(output, context)
    grounding = v4_grounding.verify(output, context)
    issues += grounding.issues
    gate_result = None
    if context.second is not None:
        gate_result = gate.check(
            output,
            context.second,
            context,
            confirm_confidence=context.gate_confirm_confidence,
            require_confirmation=preset is not None and preset.require_independent_confirmation,
        )
        issues += gate_result.issues
    else:
        context.skipped.append(f"{GATE_PHASE}: no second classifier (the primary is offline)")
    issues += acceptance.verify(output, context)
    issues += llm_checks(
        output, context, decision=arbiter.decide(issues).decision, gate_result=gate_result
    )
    issues = number_issues(sort_issues(issues))
    return Verification(
        issues=issues,
        verdict=arbiter.decide(issues),
        grounding=grounding.matches,
        quality_score=grounding.quality_score,
        skipped=list(context.skipped),
        seconds=time.perf_counter() - started,
        gate_result=gate_result,
    )


@dataclass
class AttemptRecord:
    number: int
    output: ClassificationOutput
    verification: Verification
    fingerprint: str
    fixes: list[str] = field(default_factory=list)
    feedback: str = ""
    source: str = "classifier"  # classifier | autofix | reask | fallback
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
    """The issues a re-ask should address. The gate's are left out: telling the model what the
    independent classifier said would teach it to agree, and the gate would lose its worth."""
    lines = [
        FEEDBACK_HEADER,
        "Your previous answer failed these checks. Correct them and answer again in full.",
    ]
    shown = [i for i in issues if i.agent != gate.AGENT]
    for issue in sort_issues(shown)[:FEEDBACK_LIMIT]:
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


def gave_no_answer(exc: LLMError) -> bool:
    """The model answered without a usable answer, or rejected this request as invalid (400:
    the document's prompt, not the configuration). A key, project or model the API refuses
    (401, 403, 404) is the operator's to fix: that run fails with the reason."""
    return isinstance(exc, LLMNoAnswer) or (isinstance(exc, LLMRefused) and exc.code == 400)


def no_answer_issue(exc: LLMError) -> Issue:
    reason = getattr(exc, "reason", "") or f"HTTP {getattr(exc, 'code', '')}".strip()
    return make_issue(
        "V1",
        Severity.BLOCKER,
        MODEL_NO_ANSWER,
        f"The language model gave no usable answer ({reason}): {exc}. The labels shown are "
        "the independent classifier's, for a clinician to decide.",
        "document",
        "Classify the document by reading it.",
    )


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
        known: list[Issue] | None = None,
    ) -> AttemptRecord:
        record = AttemptRecord(
            number=len(attempts),
            output=output,
            verification=verify(output, context, preset=preset, known=known),
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
    try:
        output, calls = classify(None)
    except LLMError as exc:
        if context.second is None or not gave_no_answer(exc):
            raise
        # No answer to verify: the independent classifier's labels go to a clinician, marked.
        reasks_left = 0
        current = run_attempt(
            context.second.output,
            source="fallback",
            calls=0,
            fixes=[],
            feedback="",
            started=started,
            known=[no_answer_issue(exc)],
        )
        current.note = f"{type(exc).__name__}: {exc}"[:200]
        return Outcome(
            decision=Decision.ESCALATE_TO_SME,
            stopped_reason=FALLBACK_STOP,
            attempts=attempts,
            best=current,
        )
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
        # Escalation. An LLM classifier may be asked once more with the issues as feedback,
        # unless the document's own text is untrusted (text addressed to a model, hidden
        # text): that escalates whatever the model answers, and it is the model the text
        # was written to steer.
        llm_fixable = [i for i in issues if i.llm_fixable or i.auto_fixable]
        untrusted = any(i.code in v3_domain.UNTRUSTED_TEXT_CODES for i in issues)
        if reasks_left and llm_fixable and not untrusted and retries_used < preset.max_retries:
            reasks_left -= 1
            feedback = build_feedback(issues)
            started = time.perf_counter()
            try:
                output, calls = classify(feedback)
            except LLMError as exc:
                # Keep what we have: the attempts made so far go to a clinician, with the
                # failure on record, rather than the run failing with nothing to show.
                kind = "unavailable" if isinstance(exc, LLMUnavailable) else "failed"
                current.note = f"re-ask {kind}: {exc}"[:200]
                stopped = f"re-ask {kind} ({exc}); escalated with the attempts made"[:200]
                break
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
