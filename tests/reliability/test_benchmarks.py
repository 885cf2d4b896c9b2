"""The benchmark commands run end to end on a tiny corpus: bench_verify with the faults an LLM
really makes, bench_llm with a stub Gemini server and a real RQ worker."""

from __future__ import annotations

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import hiddengen
from benchmarks.splits import split_of
from documents.models import Document
from documents.ocr import tesseract_available
from engine.fields.offline_extractor import ExtractedField
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
    # The clean outputs by frozen split: each document counted in the split its hash gives.
    splits = Counter(split_of(path) for path in sorted((corpus / "docs").iterdir()))
    assert figures["clean"].pop("by_split") == {
        split: {"outputs": splits[split], "escalated": 0, "false_escalation_rate": 0.0}
        for split in ("dev", "test")
    }
    assert figures["clean"] == {
        "outputs": 2,
        "escalated": 0,
        "false_escalation_rate": 0.0,
        "escalated_by_gate": 0,
        "decisions": {"AUTO_ACCEPT": 2},
        "gate": {"confirmed": 2},
        "escalated_by": {},
    }
    # Hidden text: one fault kind per hiding method (benchmarks.hiddengen), each document
    # drawn into a PDF read by the ingestion code; the lying ToUnicode map on every fourth
    # document only (its glyph check is an OCR call), when tesseract is installed.
    for method in hiddengen.METHODS:
        fault = figures["faults"][f"hidden text: {method.replace('_', ' ')}"]
        if method == "tounicode_lie":
            assert fault["applied"] == (1 if tesseract_available() else 0)
        else:
            assert fault["applied"] == 2
        assert fault["applied"] == 0 or fault["escalated"] == 1.0, method
    assert figures["documents_with_hidden_text"] == 0
    # The verification's CPU time beside its wall time: a thread's CPU time within a call is
    # at most the call's wall time, up to the two clocks' disagreement (they come from
    # different sources: on this 2-core VM a thread's CPU clock read 2.43 ms where the wall
    # clock read 2.31 ms for the same calls, in a fresh-clone CI run).
    wall, cpu = figures["verification_ms"], figures["verification_cpu_ms"]
    for figure in ("median", "p95"):
        assert 0 < cpu[figure] <= wall[figure] * 1.1 + 0.1, figure
    text = out.getvalue()
    assert "keyword stuffing with a fooled model" in text
    assert "Hidden text: drawing and reading" in text
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
    folder = Path(__file__).resolve().parents[2] / "demo" / "documents"
    texts = corpus_texts(folder)
    assert len(texts) == len([p for p in folder.iterdir() if p.suffix in {".pdf", ".txt"}]) > 6
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


# -- field ground truth as a regression set --------------------------------------------------------

BREAST_REPORT = (
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS:\nLeft breast, core biopsy: invasive ductal "
    "carcinoma, Nottingham grade 2.\nEstrogen receptor (ER): Positive (95%).\n"
    "HER2 (IHC): See addendum.\n"
)


def _truth_with_corrections(document, source):
    from review.models import GroundTruth

    fields = {
        "histology": {
            "value": "invasive ductal carcinoma",
            "status": "found",
            "corrected": True,
            "extracted": "carcinoma",
        },
        "grade": {"value": "Nottingham grade 2", "status": "found"},
        # The machine read "See addendum" as HER2's value; the reviewer cleared it.
        "her2_status": {
            "value": None,
            "status": "not_present",
            "corrected": True,
            "extracted": "See addendum",
        },
        "ki67": {"value": None, "status": "not_present"},  # no one read it: not truth
    }
    return GroundTruth.objects.create(
        document=document,
        source=source,
        dominant_type="pathology",
        classification={},
        fields=[{"segment": 0, "doc_type": "pathology", "pages": [1, 1], "fields": fields}],
    )


def test_reviewers_field_corrections_are_a_regression_set():
    from benchmarks.evaluation import field_cases_from_ground_truth

    record = {
        "document_id": "d1",
        "source": "SME_CORRECTED",
        "pages": [{"number": 1, "text": BREAST_REPORT}],
        "fields": [
            {
                "segment": 0,
                "doc_type": "pathology",
                "pages": [1, 1],
                "fields": {
                    "histology": {"value": "IDC", "status": "found", "corrected": True},
                    "grade": {"value": "grade 2", "status": "found"},
                    "her2_status": {"value": None, "status": "not_present", "corrected": True},
                    "ki67": {"value": None, "status": "not_present"},
                },
            }
        ],
    }
    machine = dict(record, source="AUTO_ACCEPTED", document_id="d2")
    [case] = field_cases_from_ground_truth([record, machine])
    assert case.key == "d1:0" and case.doc_type == "pathology" and case.pages == [BREAST_REPORT]
    assert case.expected == {"histology": "IDC", "grade": "grade 2", "her2_status": None}
    [only] = field_cases_from_ground_truth([record], corrected_only=True)
    assert only.expected == {"histology": "IDC", "her2_status": None}


@pytest.mark.django_db
def test_evaluate_measures_the_fields_against_the_databases_field_ground_truth(tmp_path):
    from tests.conftest import ready_document

    _truth_with_corrections(ready_document(BREAST_REPORT, sha="a"), "SME_CORRECTED")
    _truth_with_corrections(ready_document(BREAST_REPORT, sha="b"), "AUTO_ACCEPTED")
    out = StringIO()
    call_command(
        "evaluate", "--ground-truth", "--fields", "--json", str(tmp_path / "f.json"), stdout=out
    )
    figures = json.loads((tmp_path / "f.json").read_text())["fields"]
    loop = figures["loop"]
    assert loop["documents"] == 1  # the machine-accepted record is not truth
    assert loop["per_field"]["her2_status"] == {
        "tp": 0,
        "fp": 0,
        "fn": 0,
        "precision": 0.0,
        "recall": 0.0,
    }  # "See addendum" is not reported any more: the cleared value holds
    assert loop["per_field"]["grade"]["tp"] == 1 and loop["per_field"]["histology"]["tp"] == 1
    assert "Field ground truth: 1 segments of 1 documents" in out.getvalue()
    assert "Reliability of the loop's score per template" in out.getvalue()


def test_generated_bundles_keep_every_document_whole_and_in_order(tmp_path):
    from benchmarks import bundles

    (tmp_path / "docs").mkdir()
    rows = []
    for index in range(6):
        label = "radiology" if index % 2 else "pathology"
        text = f"REPORT {index}\n" + ("line of findings text\n" * (150 if index == 0 else 5))
        (tmp_path / "docs" / f"d{index}.txt").write_text(text)
        rows.append({"doc_id": f"d{index}", "label": label, "path": f"docs/d{index}.txt"})

    def extract(path):
        return [path.read_text()]

    folder = bundles.build(tmp_path, tmp_path / "out", extract=extract, rows=rows, count=5, seed=3)
    specs = [json.loads(line) for line in (folder / "segments.jsonl").read_text().splitlines()]
    assert specs and {s["shape"] for s in specs} == {"mixed", "same_type"}
    for spec in specs:
        pages = (folder / spec["bundle"]).read_text().split("\f")
        assert len(pages) == spec["n_pages"] == spec["segments"][-1]["last_page"]
        for first, second in zip(spec["segments"], spec["segments"][1:], strict=False):
            assert second["first_page"] == first["last_page"] + 1
    long = [s for spec in specs for s in spec["segments"] if s["doc_id"] == "d0"]
    assert all(s["last_page"] > s["first_page"] for s in long)  # a long text is paginated
    again = bundles.build(tmp_path, tmp_path / "again", extract=extract, rows=rows, count=5, seed=3)
    assert (again / "segments.jsonl").read_text() == (folder / "segments.jsonl").read_text()


@given(
    sizes=st.lists(st.integers(min_value=2, max_value=40), min_size=2, max_size=4, unique=True),
    filler=st.sampled_from(
        [
            " No consolidation or effusion.",
            "\nMediastinum: No enlarged lymph nodes.\n",
            " The heart is normal in size. Bones: no suspicious lesion.",
        ]
    ),
)
def test_the_stubs_several_values_are_quoted_so_a_run_withdraws_none(sizes, filler):
    """Issue 32: one clean document in six cost a second call. The stub answered a field with
    several values (the CT's two lesion sizes) joined, as the one-string schema asks, but
    quoted only the first value's snippet; the run's screen withdrew the second, the score
    fell under the threshold and the loop asked again. Its quote now holds every value, and
    the bench's clean-path screen applies the run's screen, so the two cannot disagree."""
    from benchmarks.llm_answers import field_item
    from engine.fields.evaluator import screen
    from engine.fields.extractors import answer_fields
    from engine.fields.library import load_packs

    template = next(
        t for t in load_packs(("clinical",))["clinical"].templates if t.doc_type == "radiology"
    )
    lines = [f"Lesion {i + 1} measures {n} mm in the right lobe." for i, n in enumerate(sizes)]
    page = "CT CHEST WITH CONTRAST\n\nFINDINGS\n" + filler.join(lines) + "\n\nIMPRESSION\nStable."
    values = [f"{size} mm" for size in sizes]
    extracted = ExtractedField(
        "measurements", values, "found", 0.9, lines[0], 1, 0, snippets=list(lines)
    )
    item = field_item(extracted, [page])
    assert item["snippet"] in page and all(v in item["snippet"] for v in values)
    fields = screen(template, answer_fields(template, {"measurements": item}, [page]), [page])
    assert fields["measurements"].withdrawn in (None, [], ""), fields["measurements"]
