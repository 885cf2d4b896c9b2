"""Extraction inside runs: per segment, options and presets, poor scans, review, export."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from benchmarks.evaluation import evaluate_fields, value_matches
from documents.models import Document
from engine import llm
from reliability import services
from reliability.fields import POOR_OCR_REASON, templates_sync
from reliability.models import Extraction, ExtractionTemplate
from review.models import GroundTruth
from review.roles import REVIEWERS, ensure_roles
from tests.conftest import pathology_field_names, ready_document
from tests.reliability.gemini_stub import GeminiStub
from tests.review.conftest import (
    make_packet,
    page_panel,  # noqa: F401 (a fixture: the packet page's form)
)

pytestmark = pytest.mark.django_db(transaction=True)

PATHOLOGY = (
    "SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS\n\nInvasive ductal carcinoma of the "
    "left breast.\n\nNottingham grade 2.\n\nMargins: negative.\n\nKi-67: 20%.\n\n"
    "Microscopic: sections show invasive carcinoma, tumor cells in nests, margins "
    "free, lymphovascular invasion absent, specimen in formalin."
)
RADIOLOGY = (
    "CT CHEST WITH CONTRAST\n\nFINDINGS\n\nA 4 mm nodule in the right upper lobe. "
    "No consolidation, effusion or pneumothorax on axial images.\n\nIMPRESSION\n\n"
    "No acute cardiopulmonary abnormality."
)


def test_templates_are_mirrored_for_the_admin():
    assert templates_sync() == 5
    row = ExtractionTemplate.objects.get(pack="clinical", doc_type="genomic")
    assert row.field_count == 5 and row.pack_version == "clinical-2026.12.2"


def test_each_segment_of_a_composite_document_is_extracted_with_its_template():
    doc = ready_document(PATHOLOGY, RADIOLOGY)
    run = services.run_start(document=doc)
    extractions = list(Extraction.objects.filter(run=run).order_by("segment_index"))
    assert [(e.doc_type, e.start_page, e.end_page) for e in extractions] == [
        ("pathology", 1, 1),
        ("radiology", 2, 2),
    ]
    assert extractions[0].fields["grade"]["value"] == "Nottingham grade 2"
    assert extractions[1].fields["impression"]["page"] == 2  # pages are document pages


def test_a_poor_scan_is_refused_before_looping():
    doc = ready_document(PATHOLOGY, quality=Document.Quality.LOW_OCR, quality_message="blurry")
    run = services.run_start(document=doc)
    extraction = Extraction.objects.get(run=run)
    assert extraction.status == "refused" and extraction.refused_reason == POOR_OCR_REASON
    assert extraction.iterations_count == 0


def test_options_override_the_type_and_the_loop_and_presets_cap_it():
    doc = ready_document(RADIOLOGY, options={"type_override": "pathology", "max_iterations": 1})
    run = services.run_start(document=doc)
    extraction = Extraction.objects.get(run=run)
    assert extraction.doc_type == "pathology" and extraction.iterations_count == 1
    realtime = ready_document(PATHOLOGY, sha="f", options={"preset": "real-time"})
    run = services.run_start(document=realtime)
    assert run.preset == "real-time"
    assert Extraction.objects.get(run=run).iterations_count == 1  # the preset's own limit


def test_accepted_ground_truth_carries_the_extracted_fields():
    doc = ready_document(PATHOLOGY)
    services.run_start(document=doc)
    truth = GroundTruth.objects.get(document=doc, source="AUTO_ACCEPTED")
    [segment] = truth.fields
    assert segment["doc_type"] == "pathology" and segment["fields"]["ki67"]["value"] == "20%"


@pytest.mark.usefixtures("page_panel")
def test_a_reviewer_corrects_a_field_and_the_ground_truth_and_export_carry_it(django_user_model):
    roles = ensure_roles()
    reviewer = django_user_model.objects.create_user("rita", password="x")
    reviewer.groups.add(roles[REVIEWERS])
    packet = make_packet()
    from engine.schemas import ClassificationOutput
    from reliability.fields import fields_record

    fields_record(run=packet.run, output=ClassificationOutput.model_validate(packet.classification))
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert 'id="extracted-fields"' in page and 'name="field-0:grade"' in page
    response = client.post(
        reverse("review:fields", args=[packet.pk]), {"field-0:grade": "3", "field-0:ki67": ""}
    )
    assert response.status_code == 302
    packet.refresh_from_db()
    assert packet.field_corrections == {"0:grade": "3"}
    client.post(reverse("review:validate", args=[packet.pk]))
    truth = GroundTruth.objects.get(document=packet.document)
    grade = truth.fields[0]["fields"]["grade"]
    assert (grade["value"], grade["corrected"]) == ("3", True)
    out = packet.document.sha256
    from io import StringIO

    buffer = StringIO()
    call_command("export_ground_truth", stdout=buffer)
    record = json.loads(buffer.getvalue().splitlines()[0])
    assert (
        record["document_sha256"] == out and record["fields"][0]["fields"]["grade"]["value"] == "3"
    )


def test_only_the_lock_holder_corrects_fields(django_user_model):
    roles = ensure_roles()
    rita = django_user_model.objects.create_user("rita", password="x", first_name="Rita")
    omar = django_user_model.objects.create_user("omar", password="x")
    for user in (rita, omar):
        user.groups.add(roles[REVIEWERS])
    packet = make_packet()
    first, second = Client(), Client()
    first.force_login(rita)
    second.force_login(omar)
    first.get(reverse("review:packet", args=[packet.pk]))
    assert (
        second.post(reverse("review:fields", args=[packet.pk]), {"field-0:grade": "1"}).status_code
        == 409
    )
    assert second.get(reverse("review:fields", args=[packet.pk])).status_code == 405


def test_the_gemini_extractor_uses_extract_fields_through_the_stub(settings):
    settings.GEMINI_API_KEY = "k"
    with GeminiStub() as stub:
        answer = {
            name: {"value": None, "status": "not_present", "confidence": 0.9, "snippet": ""}
            for name in pathology_field_names()
        }
        answer["histology"] = {
            "value": "Invasive ductal carcinoma",
            "status": "found",
            "confidence": 0.95,
            "snippet": "Invasive ductal carcinoma of the left breast.",
        }
        stub.reply(json.dumps(answer))  # a carcinoma without its grade: inconsistent
        answer["grade"] = {
            "value": "2",
            "status": "found",
            "confidence": 0.95,
            "snippet": "Nottingham grade 2.",
        }
        stub.reply(json.dumps(answer))
        client = llm.GeminiClient(
            model="m", api_key="k", base_url=stub.url, max_transport_retries=0
        )
        from engine.fields.extractors import gemini_extractor
        from engine.fields.library import find_template, load_packs
        from engine.fields.loop import LoopConfig, run_loop

        template = find_template(load_packs(("clinical",)), "pathology")
        result = run_loop(
            template=template,
            pages=[PATHOLOGY],
            extractor=gemini_extractor(client, template, [PATHOLOGY]),
            config=LoopConfig(quality_threshold=0.99, max_iterations=2),
        )
        assert [round(i.evaluation.consistency, 2) for i in result.iterations] == [0.5, 1.0]
        assert result.best.fields["grade"].value == "2"
        assert result.best.fields["grade"].page == 1
        assert "--- EXTRACTION FEEDBACK ---" in stub.prompt(1)
        assert client.calls[0].operation == "extract_fields"


@pytest.mark.parametrize(
    "expected,predicted,matches",
    [
        ("No acute disease.", "no acute disease", True),
        ("2", "3", False),
        ("ab", "abc", False),
        ("High grade", "High-grade urothelial carcinoma", True),
        ("G3", "Grade: G3", True),
        ("2", "Nottingham grade 2 (tubules 3, nuclei 2, mitoses 1)", True),
        ("2", "grade 2 of 3", False),  # states two short values: neither is certain
        ("KRAS G12D", "KRAS p.G12D", True),
        ("1 x 1 x 2.5 cm", "1 x 1 x 2.5cm", True),
        ("Positive (95%, strong)", "positive, 95%, strong", True),
        ("free of tumor", "Surgical margins are tumor free.", False),
    ],
)
def test_value_matching_ignores_formatting_not_meaning(expected, predicted, matches):
    assert value_matches(expected, predicted) is matches


def test_field_figures_on_a_tiny_corpus(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "r.txt").write_text(RADIOLOGY)
    (tmp_path / "labels.csv").write_text("doc_id,label,source,path\nr,radiology,t,docs/r.txt\n")
    fields = tmp_path / "fields.jsonl"
    fields.write_text(
        json.dumps(
            {
                "doc_id": "r",
                "fields": {
                    "impression": "No acute cardiopulmonary abnormality.",
                    "exam_date": None,
                },
            }
        )
        + "\n"
    )

    def extract(path):
        return [path.read_text()]

    def run(doc_type, pages, loop):
        values = {
            "impression": "No acute cardiopulmonary abnormality." if loop else None,
            "exam_date": "01/01/2024",
        }
        return {"values": values, "iterations": 2 if loop else 1, "score": 0.96 if loop else 0.9}

    modes = evaluate_fields(tmp_path, fields, extract=extract, run=run)
    single, loop = modes["single_pass"], modes["loop"]
    assert (single["tp"], single["fp"], single["fn"]) == (0, 1, 1)
    assert loop["recall"] == 1.0 and loop["precision"] == 0.5
    # The loop's score against what was really found, by band of score.
    assert loop["score_bands"][0] == {
        "band": ">= 0.95",
        "documents": 1,
        "precision": 0.5,
        "recall": 1.0,
    }
    assert single["recall_at_high_score"] is None  # no document scored 0.95 or more
    assert loop["recall_at_high_score"] == 1.0
