"""De-identified exports (--deidentify, the export page, the API): the demo patients' names,
record numbers and dates of birth are gone from every format, the same value has the same
surrogate in every row, the method is recorded, and the rows are otherwise the same."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from fhir.resources.R4B.bundle import Bundle

from benchmarks.faults import clean_output
from documents.models import Document
from engine.deid import Surrogates, describe
from engine.schemas import Evidence
from reliability.deid import deid_key
from reliability.models import Extraction, Run
from reliability.services import api_token_create
from review.deidentify import DEID_FIELD
from review.exports import ExportFilter, export_bytes
from review.models import AuditEvent, GroundTruth
from review.services.ground_truth import ground_truth_record
from tests.conftest import ready_document

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "documents"
SITE = "https://vetted.example.org"
HEADER_1 = "Riverside Demo Hospital · Patient: DEMO, Alex · MRN DEMO-0001 · DOB 01/01/1970"
HEADER_2 = "Lakeside Demo Medical Center · Patient: DEMO, Jordan · MRN DEMO-0002 · DOB 06/15/1962"
PATHOLOGY = (
    f"SURGICAL PATHOLOGY REPORT\n{HEADER_1}\n\nFINAL DIAGNOSIS\nLeft breast, core biopsy: "
    "invasive ductal carcinoma, Nottingham grade 2.\n\nElectronically signed by: Demo "
    "Pathologist, MD. Date: 03/14/2025."
)
COLON = (
    f"SURGICAL PATHOLOGY REPORT\n{HEADER_2}\n\nSpecimen: Sigmoid colon resection. Accession "
    "S25-DEMO-0412.\n\nFINAL DIAGNOSIS\nAdenocarcinoma, moderately differentiated."
)
# What the demo's patients must never be found by in a de-identified export.
FORBIDDEN = ("DEMO", "Alex", "Jordan", "DEMO-0001", "DEMO-0002", "01/01/1970", "06/15/1962")
TEXT_KEYS = {"pages", "classification", "fields", "filename", "reason", "note", DEID_FIELD}


def record(text: str, label: str, *, sha: str, filename: str, **extra) -> GroundTruth:
    document = ready_document(*text.split("\f"), sha=sha)
    Document.objects.filter(pk=document.pk).update(original_filename=filename)
    document.refresh_from_db()
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="gemini",
        model="gemini-2.5-flash",
        prompt_version="classify-v7",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
    )
    pages = text.split("\f")
    output = clean_output(pages, label)
    assert output is not None
    first = output.segments[0].assessment(label)
    assert first is not None
    line = next(line for line in pages[0].splitlines() if "DEMO" in line).strip()
    first.top_evidence.append(Evidence(snippet=line, page=1))
    first.reasoning = f"The header says: {line}"
    Extraction.objects.create(
        document=document,
        run=run,
        doc_type=label,
        status=Extraction.Status.COMPLETED,
        fields={
            "er_status": {"value": "positive (90%)", "status": "found", "confidence": 0.9},
            "patient": {"value": "DEMO, Alex", "status": "found", "snippet": "DEMO, Alex"},
        },
    )
    return ground_truth_record(
        document=document,
        run=run,
        output=output,
        source=GroundTruth.Source.AUTO_ACCEPTED,
        **extra,
    )


@pytest.fixture
def demo_truth():
    portal = (DEMO / "portal_message_demo.txt").read_text()
    note = (DEMO / "oncology_clinic_note_demo.txt").read_text()
    return [
        record(PATHOLOGY, "pathology", sha="a", filename="DEMO_Alex_pathology.pdf"),
        record(portal, "clinical_note", sha="b", filename="portal_message_demo.txt"),
        record(note, "clinical_note", sha="c", filename="oncology_clinic_note_demo.txt"),
        record(
            COLON,
            "pathology",
            sha="d",
            filename="DEMO-0002 Jordan.pdf",
            note="Called DEMO, Jordan on 06/15/2025 about MRN DEMO-0002.",
            reason="Jordan's colectomy",
        ),
    ]


def export(fmt: str, **options) -> bytes:
    return export_bytes(
        GroundTruth.objects.order_by("document_id", "version"),
        fmt=fmt,
        export_filter=ExportFilter(),
        site_url=SITE,
        **options,
    )


def assert_no_demo_phi(text: str) -> None:
    for value in FORBIDDEN:
        assert value not in text, value


def rows(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.decode().splitlines()]


def test_a_de_identified_jsonl_export_holds_no_demo_name_record_number_or_birth_date(demo_truth):
    plain = export("jsonl", with_text=True)
    assert "DEMO, Alex" in plain.decode()  # the test data does hold them

    hidden = export("jsonl", with_text=True, deidentify=True)

    assert_no_demo_phi(hidden.decode())
    assert "Alex" not in hidden.decode().replace("Alexa", "")


def test_de_identified_rows_are_otherwise_the_same(demo_truth):
    plain = rows(export("jsonl", with_text=True))
    hidden = rows(export("jsonl", with_text=True, deidentify=True))
    assert len(plain) == len(hidden) == 4
    for before, after in zip(plain, hidden, strict=True):
        assert {k: v for k, v in before.items() if k not in TEXT_KEYS} == {
            k: v for k, v in after.items() if k not in TEXT_KEYS
        }
        assert after[DEID_FIELD] == describe() and DEID_FIELD not in before
        assert [p["number"] for p in after["pages"]] == [p["number"] for p in before["pages"]]
        b, a = before["classification"], after["classification"]
        assert a["dominant_type_overall"] == b["dominant_type_overall"]
        assert [
            [(t["type"], t["presence_level"], t["confidence"]) for t in s["types"]]
            for s in a["segments"]
        ] == [
            [(t["type"], t["presence_level"], t["confidence"]) for t in s["types"]]
            for s in b["segments"]
        ]
        assert after["fields"][0]["fields"]["er_status"]["value"] == "positive (90%)"
        assert after["fields"][0]["fields"]["patient"]["value"] != "DEMO, Alex"


def test_the_same_value_has_the_same_surrogate_in_every_row(demo_truth):
    hidden = rows(export("jsonl", with_text=True, deidentify=True))
    mrn = Surrogates(deid_key()).of("ID", "DEMO-0001")
    holding = [r for r in hidden if any(mrn in p["text"] for p in r["pages"])]
    assert len(holding) == 3  # the pathology report, the portal message and the clinic note
    assert export("jsonl", with_text=True, deidentify=True) == export(
        "jsonl", with_text=True, deidentify=True
    )


def test_without_page_text_snippets_fields_filename_reason_and_note_are_still_scrubbed(
    demo_truth,
):
    hidden = export("csv", deidentify=True).decode()
    assert_no_demo_phi(hidden)
    header = hidden.splitlines()[0].split(",")
    assert header[-1] == DEID_FIELD and "pages" not in header


def test_parquet_and_the_dataset_are_de_identified_and_name_the_method(demo_truth):
    table = pq.read_table(io.BytesIO(export("parquet", with_text=True, deidentify=True)))
    assert DEID_FIELD in table.column_names
    assert_no_demo_phi(json.dumps(table.to_pylist(), default=str))

    archive = zipfile.ZipFile(io.BytesIO(export("hf", with_text=True, deidentify=True)))
    card = archive.read("ground-truth/README.md").decode()
    assert "## De-identification" in card and describe() in card
    for name in archive.namelist():
        if name.endswith(".parquet"):
            split = pq.read_table(io.BytesIO(archive.read(name)))
            assert_no_demo_phi(json.dumps(split.to_pylist(), default=str))


def test_fhir_names_the_de_identifier_in_every_provenance(demo_truth):
    body = export("fhir", deidentify=True)
    assert_no_demo_phi(body.decode())
    bundle = json.loads(body)
    Bundle.model_validate(bundle)
    resources = [e["resource"] for e in bundle["entry"]]
    device = resources[0]
    assert device["resourceType"] == "Device" and device["version"][0]["value"] == describe()
    provenances = [r for r in resources if r["resourceType"] == "Provenance"]
    assert len(provenances) == 4
    for provenance in provenances:
        assembler = [
            a for a in provenance["agent"] if a["type"]["coding"][0]["code"] == "assembler"
        ]
        assert assembler[0]["who"]["reference"] == f"urn:uuid:{device['id']}"
    for resource in resources:
        if resource["resourceType"] in ("DocumentReference", "Observation"):
            assert resource["meta"]["security"][0]["code"] == "PSEUDED"


def test_the_command_the_page_and_the_api_take_the_option(demo_truth, tmp_path, admin_user):
    out = tmp_path / "gt.jsonl"
    call_command(
        "export_ground_truth", "--format", "jsonl", "--with-text", "--deidentify", "--out", out
    )
    assert_no_demo_phi(out.read_text())
    assert AuditEvent.objects.filter(detail__deidentify="True").exists()

    page = Client()
    page.force_login(admin_user)
    response = page.get(reverse("review:export"), {"format": "csv", "deidentify": "on"})
    assert response.status_code == 200
    assert_no_demo_phi(b"".join(response.streaming_content).decode())
    assert 'name="deidentify"' in page.get(reverse("review:export")).content.decode()

    _, key = api_token_create(user=admin_user, name="ml team")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    answer = api.get(reverse("api:ground_truth"), {"format": "jsonl", "deidentify": "true"})
    assert answer.status_code == 200
    body = b"".join(answer.streaming_content).decode()
    assert_no_demo_phi(body)
    assert all(json.loads(line)[DEID_FIELD] == describe() for line in body.splitlines())


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_export_of_the_demo_data_holds_none_of_the_demo_patients_identifiers(tmp_path):
    call_command("load_demo", "--password", "demo-pass-123", stdout=io.StringIO())
    assert GroundTruth.objects.exists()
    plain, hidden = tmp_path / "plain.jsonl", tmp_path / "hidden.jsonl"
    common = ("export_ground_truth", "--format", "jsonl", "--with-text", "--state", "all")
    call_command(*common, "--out", plain)
    call_command(*common, "--deidentify", "--out", hidden)
    assert "DEMO, Alex" in plain.read_text()
    assert_no_demo_phi(hidden.read_text())
    before = [json.loads(line) for line in plain.read_text().splitlines()]
    after = [json.loads(line) for line in hidden.read_text().splitlines()]
    assert [{k: v for k, v in r.items() if k not in TEXT_KEYS} for r in before] == [
        {k: v for k, v in r.items() if k not in TEXT_KEYS} for r in after
    ]
