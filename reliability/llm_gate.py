"""The regression gate for the language model (the configured provider's): a new prompt
version or model name against the active one,
on the held-back ground truth (reliability.training.split) of clinician-given types.

The candidate is the chain as a run executes it now (this code's prompt, the configured or a
given model name, the gate, V1-V5, re-asks). The active one is what the documents' runs
recorded (their final decision and type, with the model and prompt version on the run), or,
when the candidate differs only by its model name, the configured model run the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from django.conf import settings

from documents.models import Document
from engine import llm, pipeline
from engine.document import DocumentContext, SecondOpinion
from engine.llm.client import Price
from engine.schemas import Decision
from reliability import deid, llm_runtime, training
from reliability.fields import classification_templates
from reliability.models import Attempt, Run
from reliability.services import build_classifiers

FAILED = "(failed)"  # the predicted type of a document the model gave no answer for


@dataclass
class Side:
    """One side of the comparison: its answers and the model/prompt versions behind them."""

    results: list[tuple[str, str, str]] = field(default_factory=list)
    versions: Counter[tuple[str, str]] = field(default_factory=Counter)
    failures: int = 0

    def describe(self) -> str:
        parts = [
            f"{model} prompt {version} ({n} documents)"
            for (model, version), n in self.versions.items()
        ]
        text = "; ".join(parts) or "no answers"
        return text + (f"; {self.failures} failed" if self.failures else "")


def client_for(model: str) -> llm.LLMClientBase:
    client = llm_runtime.client_for_run(model=model, price=_price(model))
    if client is None:
        reason = llm.not_configured_reason(settings)
        raise llm.LLMError(f"No language model is configured ({reason}).")
    return client


def _price(model: str) -> Price | None:
    entry = (getattr(settings, "LLM_PRICES", {}) or {}).get(model)
    return Price(float(entry["input"]), float(entry["output"])) if entry else None


def run_chain(
    document: Document, pages: list[str], model: str, preset: pipeline.Preset
) -> tuple[str, str, str, str]:
    """(model, prompt version, predicted type, decision) of the LLM chain for one document, as
    a run executes it (the corrected examples, the gate, the checks, re-asks), without storing
    anything. A document the model gives no answer for is a failure: escalated, no type."""
    client = deid.llm_client(client_for(model), pages=pages)
    examples = training.few_shot_examples(pages, exclude_document=document.pk)
    primary, gate, _client = build_classifiers(
        client, templates=classification_templates(document), examples=examples
    )
    version = getattr(primary, "prompt_version", "")
    context = DocumentContext(
        pages=pages,
        llm=client,
        min_dominant_confidence=pipeline.confidence_threshold(preset, primary),
        second=SecondOpinion(gate.name, gate.classify(pages)) if gate is not None else None,
        gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
    )
    try:
        outcome = pipeline.orchestrate(
            classify=lambda feedback: (primary.classify(pages, feedback), 0),
            context=context,
            preset=preset,
            can_reask=True,
        )
    except llm.LLMError:
        return model, version, FAILED, Decision.ESCALATE_TO_SME.value
    decision = outcome.decision
    if decision == Decision.AUTO_ACCEPT and document.quality == Document.Quality.LOW_OCR:
        decision = Decision.ESCALATE_TO_SME
    return model, version, outcome.best.output.dominant_type_overall.value, decision.value


def recorded(document_id: str) -> tuple[str, str, str, str] | None:
    """(model, prompt version, type, decision) of the document's latest completed run by the
    configured provider's model."""
    run = (
        Run.objects.filter(
            document_id=document_id,
            status=Run.Status.COMPLETED,
            classifier=llm.provider(settings),
        )
        .exclude(final_decision="")
        .order_by("-finished_at", "-pk")
        .first()
    )
    if run is None:
        return None
    attempt = (
        Attempt.objects.filter(run=run, number=run.best_attempt_number).first()
        if run.best_attempt_number is not None
        else None
    )
    if attempt is None:
        return None
    predicted = (attempt.classification or {}).get("dominant_type_overall", "")
    return run.model, run.prompt_version, predicted, run.final_decision


@dataclass
class Comparison:
    candidate: Side
    active: Side
    mode: str  # "recorded" or "live"
    skipped: int  # held-back documents without a recorded answer (recorded mode)


def compare_llm(
    records: Sequence[training.Record],
    *,
    candidate_model: str,
    preset: pipeline.Preset,
    progress: Callable[[str], None] | None = None,
) -> Comparison:
    active_model = llm.model_name(settings)
    live = candidate_model != active_model
    candidate, active = Side(), Side()
    skipped = 0
    documents = {str(pk): d for pk, d in Document.objects.in_bulk([r.key for r in records]).items()}
    for index, record in enumerate(records, start=1):
        document = documents.get(record.key)
        if document is None:
            skipped += 1
            continue
        if live:
            before = run_chain(document, record.pages, active_model, preset)
        else:
            found = recorded(record.key)
            if found is None:
                skipped += 1
                continue
            before = found
        after = run_chain(document, record.pages, candidate_model, preset)
        for side, (model, version, predicted, decision) in ((active, before), (candidate, after)):
            side.results.append((record.label, predicted, decision))
            side.versions[(model, version)] += 1
            side.failures += predicted == FAILED
        if progress:
            progress(f"{index}/{len(records)}")
    return Comparison(candidate, active, "live" if live else "recorded", skipped)
