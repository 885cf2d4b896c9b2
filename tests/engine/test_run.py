"""The run's decision in one engine call (engine.run.decide) on a gathered RunInputs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pytest

from engine import pipeline
from engine import run as engine_run
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext, HiddenText
from engine.schemas import Decision, Severity
from tests.conftest import PATHOLOGY_PAGES


@dataclass
class Row:
    segment_index: int
    issues: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Extractor:
    """Records what the engine asked for and returns one row per segment."""

    issues: list[dict[str, str]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, *, output, client, prefilled, single_pass):
        self.calls.append({"client": client, "prefilled": prefilled, "single_pass": single_pass})
        return [Row(i, list(self.issues)) for i, _ in enumerate(output.segments)]


def inputs(**changes: Any) -> engine_run.RunInputs:
    base = engine_run.RunInputs(
        pages=tuple(PATHOLOGY_PAGES),
        hidden=(),
        preset=pipeline.PRESETS["clinical"],
        primary=OfflineClassifier(),
        gate=None,
        client=None,
        examples=(),
        thresholds=None,
        novelty_index=None,
        source="uploader:rita",
        exemplar=None,
        gate_confirm_confidence=0.5,
        low_ocr=False,
        extract_fields=Extractor(),
    )
    return dataclasses.replace(base, **changes)


def test_the_decision_is_the_orchestrators_on_the_same_context():
    gathered = inputs()
    decided = engine_run.decide(gathered)
    classifier = OfflineClassifier()
    direct = pipeline.orchestrate(
        classify=lambda feedback: (classifier.classify(list(PATHOLOGY_PAGES), feedback), 0),
        context=DocumentContext(
            pages=list(PATHOLOGY_PAGES),
            min_dominant_confidence=pipeline.confidence_threshold(gathered.preset, classifier),
        ),
        preset=gathered.preset,
        can_reask=False,
    )
    assert decided.decision == direct.decision == Decision.AUTO_ACCEPT
    assert decided.stopped_reason == direct.stopped_reason
    assert [a.fingerprint for a in decided.outcome.attempts] == [
        a.fingerprint for a in direct.attempts
    ]
    assert decided.best.output == direct.best.output
    assert decided.codes == sorted({i.code for i in direct.best.verification.issues})


def test_an_offline_run_has_no_second_opinion_and_its_fields_are_extracted_once():
    extractor = Extractor()
    decided = engine_run.decide(inputs(extract_fields=extractor))
    assert decided.second is None and decided.gate == {} and decided.gate_agrees
    assert decided.comparison["available"] is False
    assert decided.novelty is None
    assert 0.0 < decided.score <= 1.0
    assert extractor.calls == [{"client": None, "prefilled": {}, "single_pass": False}]
    assert [r.segment_index for r in decided.fields] == list(
        range(len(decided.best.output.segments))
    )
    assert decided.form_issues == []


def test_without_an_extractor_there_are_no_fields():
    decided = engine_run.decide(inputs(extract_fields=None))
    assert decided.fields == [] and decided.decision == Decision.AUTO_ACCEPT


def test_a_low_ocr_document_is_not_accepted_without_a_clinician():
    decided = engine_run.decide(inputs(low_ocr=True))
    assert decided.outcome.decision == Decision.AUTO_ACCEPT
    assert decided.decision == Decision.ESCALATE_TO_SME
    assert decided.stopped_reason == engine_run.LOW_OCR_REASON


def test_a_form_error_escalates_and_becomes_a_blocker_for_the_packet():
    error = {"severity": "ERROR", "code": "wrong_tax_year", "message": "2019, not 2023"}
    warning = {"severity": "WARNING", "code": "faint", "message": "faint"}
    decided = engine_run.decide(inputs(extract_fields=Extractor(issues=[error, warning])))
    assert decided.decision == Decision.ESCALATE_TO_SME
    assert decided.stopped_reason == engine_run.FORM_ISSUE_REASON
    segments = len(decided.best.output.segments)
    assert len(decided.form_issues) == segments
    first = decided.form_issues[0]
    assert (first.severity, first.code, first.location) == (
        Severity.BLOCKER,
        "wrong_tax_year",
        "segments[0]",
    )


def test_a_gate_gives_a_second_opinion_its_summary_and_the_comparison():
    decided = engine_run.decide(inputs(gate=OfflineClassifier()))
    assert decided.second is not None and decided.second.name == "offline"
    assert decided.comparison["available"] is True
    assert decided.comparison["agrees_on_type"] is True
    assert decided.gate["classifier"] == "offline"
    assert decided.gate["agrees"] is decided.gate_agrees is True


def test_hidden_text_reaches_the_verifiers():
    hidden = (HiddenText(page=1, kind="render_mode", words=40),)
    clean = engine_run.decide(inputs())
    decided = engine_run.decide(inputs(hidden=hidden))
    assert "hidden_text" not in clean.codes
    assert "hidden_text" in decided.codes
    assert decided.decision != Decision.AUTO_ACCEPT


def test_the_gathered_inputs_cannot_be_changed():
    gathered = inputs()
    with pytest.raises(dataclasses.FrozenInstanceError):
        gathered.low_ocr = True  # type: ignore[misc]
