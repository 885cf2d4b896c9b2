"""A run's decision in one call: what the run needs, gathered by the caller into one value
(``RunInputs``), goes in; the whole decision (classification and its verification, the
independent gate, the fields, the risk score, novelty) comes out as one value (``RunDecision``).
Pure: no Django; the caller loads the inputs and stores the decision."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine import pipeline, schemas
from engine.classifiers.gemini import FewShotExample, GeminiClassifier
from engine.comparison import compare
from engine.document import DocumentContext, HiddenText, SecondOpinion
from engine.exemplars import ExemplarVote
from engine.novelty import Novelty, NoveltyIndex
from engine.protocols import Classifier, LLMClient
from engine.risk import ThresholdTable, acceptance_score
from engine.schemas import ClassificationOutput, Decision

LOW_OCR_REASON = "document has low OCR confidence: a clinician must confirm"
FORM_ISSUE_REASON = "the form has an ERROR issue (such as a wrong tax year): a person must confirm"

# Fields already given by the classification call, by (start page, end page, type).
Prefilled = Mapping[tuple[int, int, str], Mapping[str, Mapping[str, Any]]]


class FieldRow(Protocol):
    """A segment's extraction as the caller records it: the engine reads its form issues."""

    segment_index: int
    issues: list[dict[str, str]]


class FieldExtractor(Protocol):
    """Extracts every segment's fields of a classification (computing only, no storage).
    LLMUnavailable propagates: the run waits."""

    def __call__(
        self,
        *,
        output: ClassificationOutput,
        client: LLMClient | None,
        prefilled: Prefilled,
        single_pass: bool,
    ) -> Sequence[FieldRow]: ...


@dataclass(frozen=True)
class RunInputs:
    """Everything a run decides on, gathered before the decision."""

    pages: tuple[str, ...]
    hidden: tuple[HiddenText, ...]  # text a reader cannot see, by page (kinds and counts)
    preset: pipeline.Preset
    primary: Classifier
    gate: Classifier | None  # the independent classifier; None when the rules are the primary
    client: LLMClient | None  # the language model's client; None offline
    examples: tuple[FewShotExample, ...]  # corrected documents shown to the LLM as data
    # The learning loop's checks: risk-controlled thresholds (replacing the preset's), the
    # novelty index of the active model's training documents, the document's source and the
    # exemplar memory's vote; None: not checked.
    thresholds: ThresholdTable | None
    novelty_index: NoveltyIndex | None
    source: str
    exemplar: ExemplarVote | None
    gate_confirm_confidence: float
    low_ocr: bool  # the document's OCR confidence is low: a clinician must confirm
    extract_fields: FieldExtractor | None  # None: fields are not extracted
    # The learned waivers in force for this run's source (reliability.waivers): given the
    # orchestrator's outcome, the codes whose waiver turns its escalation into an acceptance
    # (empty: the decision stands). None: no waivers.
    waive: Callable[[pipeline.Outcome], list[str]] | None = None


@dataclass(frozen=True)
class RunDecision:
    """The whole decision of a run."""

    outcome: pipeline.Outcome  # every attempt, the best one, the orchestrator's decision
    decision: Decision  # the final one (a low-OCR document or a form error escalates)
    stopped_reason: str
    second: SecondOpinion | None
    comparison: dict[str, Any]  # what the second classifier says, for reviewers
    gate: dict[str, Any]  # the gate's summary; empty without a gate
    novelty: Novelty | None
    fields: list[Any]  # the caller's rows from extract_fields
    form_issues: list[schemas.Issue] = field(default_factory=list)  # blockers for the review packet
    score: float = 0.0  # the acceptance (risk) score of the best attempt
    codes: list[str] = field(default_factory=list)  # the best attempt's issue codes
    gate_agrees: bool = True
    waived: list[str] = field(default_factory=list)  # codes set aside by learned waivers

    @property
    def best(self) -> pipeline.AttemptRecord:
        return self.outcome.best


def decide(inputs: RunInputs) -> RunDecision:
    """Classify, verify, orchestrate re-asks and fixes, extract the fields and decide.
    Raises LLMUnavailable (the run waits) and LLMError (the run fails) from the client."""
    pages = list(inputs.pages)
    client, primary, gate = inputs.client, inputs.primary, inputs.gate
    second = SecondOpinion(gate.name, gate.classify(pages)) if gate is not None else None
    index = inputs.novelty_index
    novelty = index.score("\n\n".join(pages)) if index is not None else None
    context = DocumentContext(
        pages=pages,
        llm=client,
        min_dominant_confidence=0.0
        if inputs.thresholds is not None
        else pipeline.confidence_threshold(inputs.preset, primary),
        second=second,
        gate_confirm_confidence=inputs.gate_confirm_confidence,
        novelty=novelty,
        acceptance=inputs.thresholds,
        source=inputs.source,
        exemplar=inputs.exemplar,
        hidden=list(inputs.hidden),
    )
    prefilled: dict[tuple[int, int, str], dict[str, Any]] = {}

    def classify(feedback: str | None) -> tuple[ClassificationOutput, int]:
        before = client.usage()["calls"] if client is not None else 0
        if isinstance(primary, GeminiClassifier):
            output, groups = primary.classify_with_fields(pages, feedback)
            for group in groups:  # a later answer (a re-ask) replaces an earlier one
                prefilled[(group.start_page, group.end_page, group.doc_type.value)] = {
                    f.name: f.model_dump() for f in group.fields
                }
        else:
            output = primary.classify(pages, feedback)
        return output, (client.usage()["calls"] - before) if client is not None else 0

    outcome = pipeline.orchestrate(
        classify=classify, context=context, preset=inputs.preset, can_reask=client is not None
    )
    best = outcome.best
    rows = (
        list(
            inputs.extract_fields(
                output=best.output,
                # A model that gave no answer is not asked for the fields either.
                client=None if best.source == "fallback" else client,
                prefilled=prefilled,
                # An escalated run's fields go to a clinician as they are: no more LLM calls.
                single_pass=client is not None and outcome.decision != Decision.AUTO_ACCEPT,
            )
        )
        if inputs.extract_fields is not None
        else []
    )
    decision, stopped = outcome.decision, outcome.stopped_reason
    waived = inputs.waive(outcome) if inputs.waive is not None else []
    if waived:  # codes clinicians overruled on this source, never upheld
        decision, stopped = Decision.AUTO_ACCEPT, f"accepted: learned waiver of {', '.join(waived)}"
    if decision == Decision.AUTO_ACCEPT and inputs.low_ocr:
        decision, stopped = Decision.ESCALATE_TO_SME, LOW_OCR_REASON
    blockers = form_blockers(rows)
    if blockers and decision == Decision.AUTO_ACCEPT:
        decision, stopped = Decision.ESCALATE_TO_SME, FORM_ISSUE_REASON
    gate_result = best.verification.gate_result
    return RunDecision(
        outcome=outcome,
        decision=decision,
        stopped_reason=stopped,
        second=second,
        comparison=compare(
            best.output, second.output if second else None, name=second.name if second else ""
        ),
        gate=gate_summary(second, gate, best),
        novelty=novelty,
        fields=rows,
        form_issues=blockers,
        score=acceptance_score(best.output),
        codes=sorted({i.code for i in best.verification.issues}),
        gate_agrees=gate_result is None or not gate_result.issues,
        waived=waived,
    )


def gate_summary(
    second: SecondOpinion | None, gate: Classifier | None, best: pipeline.AttemptRecord
) -> dict[str, Any]:
    """What the run keeps of the independent gate's verdict on the best attempt."""
    result = best.verification.gate_result
    if second is None or gate is None or result is None:
        return {}
    return {
        "classifier": second.name,
        "version": gate.model,
        "dominant_type": result.second_type,
        "confidence": round(result.second_confidence, 3),
        "agrees": not result.issues,
        "confirmed": result.confirmed,
    }


def form_issues(rows: Sequence[FieldRow]) -> list[tuple[int, dict[str, str]]]:
    """(segment, issue) for every ERROR a form raised (a wrong tax year): such a run is not
    accepted without a person."""
    return [
        (row.segment_index, issue)
        for row in rows
        for issue in row.issues
        if issue.get("severity") == "ERROR"
    ]


def form_blockers(rows: Sequence[FieldRow]) -> list[schemas.Issue]:
    """A form's ERROR issues (a wrong tax year) as blockers for the review packet."""
    return schemas.number_issues(
        [
            schemas.make_issue(
                "EX",
                schemas.Severity.BLOCKER,
                issue.get("code", "form_issue"),
                issue["message"],
                f"segments[{segment}]",
                "Check that the right form (and year) was uploaded.",
            )
            for segment, issue in form_issues(rows)
        ]
    )
