"""The benchmark commands run end to end on a tiny corpus: bench_verify with the faults an LLM
really makes, bench_llm with a stub Gemini server and a real RQ worker."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from documents.models import Document
from reliability.models import LLMResponse

TEXTS = {
    "path": (
        "pathology",
        "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nLeft breast, core biopsy: invasive "
        "ductal carcinoma, Nottingham grade 2.\n\nMICROSCOPIC DESCRIPTION\n\nNests of malignant "
        "epithelial cells infiltrate a desmoplastic stroma.",
    ),
    "ct": (
        "radiology",
        "CT CHEST WITH CONTRAST\n\nFINDINGS\n\nA 4 mm nodule in the right upper lobe. No "
        "consolidation, effusion or pneumothorax on axial images.\n\nIMPRESSION\n\nNo acute "
        "cardiopulmonary abnormality.",
    ),
}


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "docs").mkdir()
    rows = ["doc_id,label,source,path"]
    for name, (label, text) in TEXTS.items():
        (tmp_path / "docs" / f"{name}.txt").write_text(text)
        rows.append(f"{name},{label},tiny,docs/{name}.txt")
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    return tmp_path


@pytest.mark.django_db
def test_bench_verify_reports_the_llm_faults_and_false_escalation(corpus, tmp_path):
    out = StringIO()
    call_command("bench_verify", str(corpus), "--json", str(tmp_path / "v.json"), stdout=out)
    figures = json.loads((tmp_path / "v.json").read_text())
    for name in (
        "wrong type with verbatim evidence",
        "injection obeyed",
        "keyword stuffing with a fooled model",
    ):
        fault = figures["faults"][name]
        assert fault["applied"] == 2 * 4  # every document, every wrong type
        assert fault["detected"] == 1.0 and fault["escalated"] == 1.0
    assert figures["clean"] == {
        "outputs": 2,
        "escalated": 0,
        "false_escalation_rate": 0.0,
        "escalated_by_gate": 0,
        "decisions": {"AUTO_ACCEPT": 2},
        "gate": {"confirmed": 2},
        "escalated_by": {},
    }
    text = out.getvalue()
    assert "keyword stuffing with a fooled model" in text
    assert "Clean false-escalation rate: 0.00% (0/2)" in text


@pytest.mark.django_db(transaction=True)
def test_bench_llm_runs_every_mix_through_a_real_worker(corpus, tmp_path, redis_url):
    out = StringIO()
    call_command(
        "bench_llm",
        "--corpus",
        str(corpus),
        "--latency",
        "0",
        "--workers",
        "1",
        "--per-worker",
        "2",
        "--reask-documents",
        "1",
        "--storm-documents",
        "2",
        "--storm-seconds",
        "2",
        "--storm-retry-after",
        "1",
        "--storm-workers",
        "1",
        "--timeout",
        "90",
        "--json",
        str(tmp_path / "llm.json"),
        stdout=out,
    )
    figures = json.loads((tmp_path / "llm.json").read_text())
    assert figures["clean"]["calls_per_document"] == 1.0
    assert figures["clean"]["documents_per_hour_per_worker"] > 0
    assert figures["rerun"]["calls_per_document"] == 0.0
    assert figures["reask"]["calls_per_document"] == 2.0
    assert (figures["storm"]["documents"], figures["storm"]["failed"]) == (2, 0)
    assert figures["storm"]["completed"] == 2 and figures["storm"]["waits_per_document"] >= 0
    assert figures["scaling"]["speedup_1_workers"] == 1.0
    assert "Clean path: 1.00 call(s)/document" in out.getvalue()
    # It leaves nothing behind.
    assert not Document.objects.exists() and not LLMResponse.objects.exists()


def test_the_stub_answers_every_demo_document_within_the_response_schema():
    """The bench's careful model answers as a model bound by the response schema would: the
    demo pathology report has a field the offline extractor calls "missing" (its date is
    stated but not read), which no real model can answer; sent verbatim, it failed that run."""
    from pathlib import Path

    from benchmarks.llm_answers import answer_json, classification
    from benchmarks.llm_bench import corpus_texts
    from engine.classifiers.gemini import ClassificationWithFields
    from engine.fields.library import load_packs

    templates = load_packs(("clinical",))["clinical"].templates
    texts = corpus_texts(Path(__file__).resolve().parents[2] / "demo" / "documents")
    assert len(texts) == 6
    statuses = set()
    for pages in texts:
        answer = ClassificationWithFields.model_validate_json(
            answer_json(classification(pages), pages, templates)
        )
        statuses |= {f.status for group in answer.segment_fields for f in group.fields}
    assert statuses <= {"found", "not_present", "ambiguous"} and "found" in statuses


@pytest.mark.django_db
def test_a_failed_bench_run_is_reported_with_its_document_and_reason():
    from benchmarks.llm_bench import failures
    from reliability.models import Run
    from tests.conftest import ready_document

    failed = Run.objects.create(
        document=ready_document("SURGICAL PATHOLOGY REPORT\n\nFinal diagnosis.", sha="f"),
        status=Run.Status.FAILED,
        error="The language model call failed: the response did not fit the schema",
    )
    done = Run.objects.create(
        document=ready_document("CT CHEST\n\nNo nodule.", sha="g"), status=Run.Status.PENDING
    )
    assert failures([failed.pk, done.pk]) == [
        {
            "document": "doc-f.pdf (SURGICAL PATHOLOGY REPORT)",
            "error": "The language model call failed: the response did not fit the schema",
        }
    ]
