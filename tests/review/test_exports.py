"""Ground truth as FHIR R4, Parquet and a Hugging Face dataset, beside JSONL and CSV: from the
export page, the API and the command; the same filter gives the same rows in every format."""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import sys
import uuid
import zipfile
from collections import Counter

import pyarrow.parquet as pq
import pytest
import yaml
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from fhir.resources.R4B.bundle import Bundle

from benchmarks.faults import clean_output
from documents.models import Document
from engine.schemas import ClassificationOutput, DocType
from reliability.models import Extraction, Run
from reliability.services import api_token_create
from review import fhir
from review.corrections import Correction, corrected_output, correction_build
from review.exports import (
    HF_SPLITS,
    LABELS,
    ExportFilter,
    dataset_split,
    export_bytes,
    export_digest,
    export_write,
)
from review.models import AuditEvent, GroundTruth, Review, SecondReview
from review.selectors import ground_truth_selection
from review.serializers import EXPORT_FIELDS
from review.services import audits
from review.services.decisions import packet_open, review_submit
from review.services.ground_truth import ground_truth_record
from tests.conftest import ready_document
from tests.review.conftest import make_packet

SITE = "https://vetted.example.org"
PAGE = {
    "pathology": "SURGICAL PATHOLOGY REPORT\n\nInvasive ductal carcinoma of the breast, grade 2.",
    "radiology": "CT CHEST\n\nA six millimetre nodule sits in the right upper lobe today.",
    "genomic": "GENOMIC PROFILE\n\nKRAS G12D was detected with a tumour mutational burden of 12.",
    "clinical_note": "ONCOLOGY CLINIC NOTE\n\nThe patient is tolerating the treatment well so far.",
    "other": "FAX COVER SHEET\n\nThree pages follow this cover sheet for the clinic today.",
}
PATHOLOGY_FIELDS = {
    "er_status": {"value": "positive (95%)", "status": "found", "confidence": 0.9},
    "pr_status": {"value": "negative", "status": "found", "confidence": 0.9},
    "her2_status": {"value": "equivocal (2+)", "status": "found", "confidence": 0.8},
    "grade": {"value": "2", "status": "found", "confidence": 0.9},
    "ki67": {"value": None, "status": "not_present", "confidence": 0.0},
}
GENOMIC_FIELDS = {
    "msi_status": {"value": "MSS", "status": "found", "confidence": 0.9},
    "tmb": {"value": "12", "status": "found", "confidence": 0.9},
}


PROVISIONAL, FINAL = GroundTruth.State.PROVISIONAL, GroundTruth.State.FINAL


def id_in(split: str, nth: int = 0) -> uuid.UUID:
    """A document id whose rows fall in ``split`` (the ``nth`` such id, counting from 1)."""
    ids = (uuid.UUID(int=i) for i in itertools.count(1))
    return next(itertools.islice((i for i in ids if dataset_split(i) == split), nth, None))


def accepted(
    doc_type: str,
    *,
    sha: str,
    fields: dict | None = None,
    state: str = FINAL,
    document_id: uuid.UUID | None = None,
) -> GroundTruth:
    """An auto-accepted record from a completed run (with extracted fields)."""
    extra = {"id": document_id} if document_id else {}
    document = ready_document(PAGE[doc_type], sha=sha, **extra)
    Document.objects.filter(pk=document.pk).update(original_filename="Jane_Roe_report.pdf")
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="gemini",
        model="gemini-2.5-flash",
        prompt_version="classify-v7",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
    )
    if fields:
        Extraction.objects.create(
            document=document,
            run=run,
            doc_type=doc_type,
            status=Extraction.Status.COMPLETED,
            fields=fields,
        )
    output = clean_output([PAGE[doc_type]], doc_type)
    assert output is not None
    return ground_truth_record(
        document=document,
        run=run,
        output=output,
        source=GroundTruth.Source.AUTO_ACCEPTED,
        state=state,
    )


def corrected(previous: GroundTruth, reviewer, doc_type: str, *, state: str = FINAL) -> GroundTruth:
    """A clinician's correction of an earlier record (a new version that supersedes it)."""
    output = corrected_output(
        Correction(
            dominant_type=DocType(doc_type),
            segments=((1, 1, DocType(doc_type)),),
            mixture={DocType(doc_type): 1.0},
        )
    )
    return ground_truth_record(
        document=previous.document,
        run=previous.run,
        output=output,
        source=GroundTruth.Source.SME_CORRECTED,
        state=state,
        reviewer=reviewer,
    )


def audited(truth: GroundTruth, settings) -> GroundTruth:
    """The accepted record drawn for a blind audit, as decisions.run_outcome_record draws it:
    provisional, and its document blind, until the audit ends."""
    settings.AUDIT_SAMPLE_RATE = 1.0
    output = ClassificationOutput.model_validate(truth.classification)
    assert truth.run is not None
    assert audits.audit_sample_consider(run=truth.run, truth=truth, output=output)
    truth.refresh_from_db()
    return truth


def correct(packet, reviewer, to: DocType = DocType.RADIOLOGY) -> Review:
    """A clinician's correction through the review service (with the default rules, it waits
    for a second review: provisional, blind to everyone but its decider and Admins)."""
    packet_open(packet=packet, user=reviewer)
    correction = correction_build(segments=[(1, packet.document.page_count, to)])
    return review_submit(packet_id=packet.pk, reviewer=reviewer, correction=correction, notes="")


def split_files(body: bytes) -> dict[str, list[dict]]:
    """The rows of each split file in a dataset zip, by split name."""
    with zipfile.ZipFile(io.BytesIO(body)) as zipped:
        return {
            name.split("/")[-1].split("-")[0]: pq.read_table(
                io.BytesIO(zipped.read(name))
            ).to_pylist()
            for name in sorted(zipped.namelist())
            if name.endswith(".parquet")
        }


def resources(body: bytes) -> list[dict]:
    bundle = json.loads(body)
    Bundle.model_validate(bundle)  # the whole Bundle, every resource in it, by R4B models
    assert bundle["type"] == "collection"
    return [entry["resource"] for entry in bundle["entry"]]


def of_type(found: list[dict], kind: str) -> list[dict]:
    return [r for r in found if r["resourceType"] == kind]


def fhir_export(**selection) -> bytes:
    return fhir.bundle_bytes(ground_truth_selection(**selection), site_url=SITE)


@pytest.mark.django_db
def test_each_type_is_a_document_reference_with_its_loinc_code_and_a_link_not_the_bytes():
    truths = {t: accepted(t, sha=str(i)) for i, t in enumerate(PAGE)}
    found = resources(fhir_export())
    references = {r["id"]: r for r in of_type(found, "DocumentReference")}
    assert len(references) == 5
    ids = fhir.Ids(SITE)
    expected = {
        "pathology": "11526-1",
        "radiology": "18748-4",
        "genomic": "51969-4",
        "clinical_note": "11506-3",
        "other": "51851-4",
    }
    for doc_type, truth in truths.items():
        reference = references[ids.document_reference(truth.pk)]
        loinc, vetted = reference["type"]["coding"]
        assert (loinc["system"], loinc["code"]) == ("http://loinc.org", expected[doc_type])
        assert vetted["code"] == doc_type
        assert reference["status"] == "current"
        assert reference["date"] == truth.created_at.isoformat()
        [content] = reference["content"]
        assert content["attachment"] == {
            "contentType": "application/pdf",
            "url": f"{SITE}/documents/{truth.document_id}/file/",
            "size": 1,
            "creation": truth.document.created_at.isoformat(),
        }
        assert "data" not in content["attachment"]
        assert reference["identifier"][0]["value"] == f"urn:uuid:{truth.document_id}"
    assert b"Jane_Roe" not in fhir_export()  # the filename never leaves in the bundle


@pytest.mark.django_db
def test_provenance_names_the_model_and_prompt_version_or_the_clinician(reviewer):
    auto = accepted("radiology", sha="a")
    packet = make_packet(sha="b")
    review = review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
    found = resources(fhir_export())
    ids = fhir.Ids(SITE)
    devices = {f"urn:uuid:{d['id']}": d for d in of_type(found, "Device")}
    provenance = {p["target"][0]["reference"]: p for p in of_type(found, "Provenance")}

    auto_prov = provenance[f"urn:uuid:{ids.document_reference(auto.pk)}"]
    [author] = auto_prov["agent"]
    assert author["type"]["coding"][0]["code"] == "author"
    device = devices[author["who"]["reference"]]
    assert {"name": "gemini-2.5-flash", "type": "model-name"} in device["deviceName"]
    assert device["version"] == [{"type": {"text": "prompt version"}, "value": "classify-v7"}]
    assert auto_prov["activity"]["coding"][0]["code"] == "CREATE"

    validated = provenance[f"urn:uuid:{ids.document_reference(review.ground_truth_id)}"]
    roles = {a["type"]["coding"][0]["code"]: a["who"] for a in validated["agent"]}
    assert set(roles) == {"author", "verifier"}
    assert roles["verifier"]["identifier"]["value"] == "rita"
    assert roles["verifier"]["type"] == "Practitioner"
    assert devices[roles["author"]["reference"]]["version"][0]["value"] == "test"


@pytest.mark.django_db
def test_a_correction_replaces_the_version_before_it(reviewer):
    first = accepted("pathology", sha="c")
    second = corrected(first, reviewer, "genomic")
    ids = fhir.Ids(SITE)

    current = resources(fhir_export())
    [reference] = of_type(current, "DocumentReference")
    assert reference["id"] == ids.document_reference(second.pk)
    assert reference["type"]["coding"][0]["code"] == "51969-4"
    [relation] = reference["relatesTo"]
    assert relation["code"] == "replaces"
    # The replaced version is not in this export: a logical reference by its identifier.
    assert (
        relation["target"]["identifier"]["value"] == f"urn:uuid:{ids.document_reference(first.pk)}"
    )
    assert "reference" not in relation["target"]
    [prov] = of_type(current, "Provenance")
    assert [a["type"]["coding"][0]["code"] for a in prov["agent"]] == ["author", "informant"]
    assert prov["agent"][0]["who"]["identifier"]["value"] == "rita"
    assert prov["activity"]["coding"][0]["code"] == "UPDATE"
    assert prov["entity"][0]["role"] == "revision"

    history = resources(fhir_export(all_versions=True))
    statuses = {r["id"]: r["status"] for r in of_type(history, "DocumentReference")}
    assert statuses == {
        ids.document_reference(first.pk): "superseded",
        ids.document_reference(second.pk): "current",
    }
    [later] = [r for r in of_type(history, "DocumentReference") if "relatesTo" in r]
    # Both versions are in this export: the reference resolves inside the bundle.
    target = later["relatesTo"][0]["target"]["reference"]
    assert target in {f"urn:uuid:{r['id']}" for r in of_type(history, "DocumentReference")}


@pytest.mark.django_db
def test_coded_fields_become_observations_and_uncoded_ones_do_not():
    pathology = accepted("pathology", sha="d", fields=PATHOLOGY_FIELDS, state=PROVISIONAL)
    genomic = accepted("genomic", sha="e", fields=GENOMIC_FIELDS)
    found = resources(fhir_export())
    observations = {o["code"]["coding"][0]["code"]: o for o in of_type(found, "Observation")}
    assert set(observations) == {"16112-5", "16113-3", "48676-1", "81695-9", "94076-7"}
    er = observations["16112-5"]
    assert er["valueCodeableConcept"] == {
        "text": "positive (95%)",
        "coding": [{"system": "http://loinc.org", "code": "LA6576-8", "display": "Positive"}],
    }
    assert observations["16113-3"]["valueCodeableConcept"]["coding"][0]["code"] == "LA6577-6"
    # Equivocal is not forced into positive or negative: text only.
    assert "coding" not in observations["48676-1"]["valueCodeableConcept"]
    assert observations["81695-9"]["valueCodeableConcept"]["coding"][0]["code"] == "LA14122-8"
    assert observations["94076-7"]["valueQuantity"] == {
        "value": 12.0,
        "unit": "mutations/Mb",
        "system": "http://unitsofmeasure.org",
        "code": "1/1000000{Base}",
    }
    ids = fhir.Ids(SITE)
    assert er["derivedFrom"] == [{"reference": f"urn:uuid:{ids.document_reference(pathology.pk)}"}]
    assert observations["94076-7"]["derivedFrom"][0]["reference"].endswith(
        ids.document_reference(genomic.pk)
    )
    # The version's state, not its source: values under an open audit may change; a final
    # auto-accepted answer is final by policy.
    assert {code: o["status"] for code, o in observations.items()} == {
        "16112-5": "preliminary",
        "16113-3": "preliminary",
        "48676-1": "preliminary",
        "81695-9": "final",
        "94076-7": "final",
    }


@pytest.mark.django_db
def test_a_validated_records_observations_are_final_and_the_bundle_is_byte_identical(reviewer):
    packet = make_packet(sha="f")
    Extraction.objects.create(
        document=packet.document,
        run=packet.run,
        doc_type="pathology",
        status=Extraction.Status.COMPLETED,
        fields=PATHOLOGY_FIELDS,
    )
    packet.field_corrections = {"0:her2_status": "negative (1+)"}
    packet.save()
    review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
    body = fhir_export()
    observations = of_type(resources(body), "Observation")
    assert {o["status"] for o in observations} == {"final"}
    [her2] = [o for o in observations if o["code"]["coding"][0]["code"] == "48676-1"]
    assert her2["valueCodeableConcept"]["coding"][0]["code"] == "LA6577-6"
    assert her2["note"] == [{"text": "Value corrected by a clinician in Vetted."}]
    assert fhir_export() == body


@pytest.mark.django_db
def test_the_same_filter_gives_the_same_rows_in_every_format(reviewer, tmp_path):
    first = accepted("pathology", sha="1")
    corrected(first, reviewer, "genomic", state=PROVISIONAL)
    accepted("pathology", sha="2")
    accepted("radiology", sha="3")
    accepted("genomic", sha="4")
    keys = {(str(t.document_id), t.version): t.pk for t in GroundTruth.objects.all()}
    ids = fhir.Ids(SITE)
    by_docref = {ids.document_reference(pk): pk for pk in keys.values()}

    def rows(fmt: str, body: bytes, expected: list[int]) -> list[int]:
        if fmt == "jsonl":
            return [
                keys[(r["document_id"], r["version"])] for r in map(json.loads, body.splitlines())
            ]
        if fmt == "csv":
            reader = csv.DictReader(io.StringIO(body.decode()))
            return [keys[(r["document_id"], int(r["version"]))] for r in reader]
        if fmt == "fhir":
            return [by_docref[r["id"]] for r in of_type(resources(body), "DocumentReference")]
        if fmt == "parquet":
            table = pq.read_table(io.BytesIO(body)).to_pylist()
            return [keys[(r["document_id"], r["version"])] for r in table]
        # The dataset's rows are split by document: in export order within each split.
        found: list[int] = []
        for split, table in split_files(body).items():
            assert {dataset_split(r["document_id"]) for r in table} <= {split}
            in_split = [keys[(r["document_id"], r["version"])] for r in table]
            assert in_split == sorted(in_split, key=expected.index)
            found += in_split
        return sorted(found, key=expected.index)

    filters = [
        {},
        {"doc_type": "pathology"},
        {"doc_type": "genomic", "all_versions": True},
        {"source": "SME_CORRECTED"},
        {"all_versions": True},
        {"state": "final"},
        {"state": "provisional", "all_versions": True},
    ]
    for selection in filters:
        expected = list(ground_truth_selection(**selection).values_list("pk", flat=True))
        assert expected, selection
        for fmt in ("jsonl", "csv", "fhir", "parquet", "hf"):
            body = export_bytes(
                ground_truth_selection(**selection),
                fmt=fmt,
                export_filter=ExportFilter(**selection),
                site_url=SITE,
            )
            assert rows(fmt, body, expected) == expected, (fmt, selection)
            again = export_bytes(
                ground_truth_selection(**selection),
                fmt=fmt,
                export_filter=ExportFilter(**selection),
                site_url=SITE,
            )
            assert again == body, f"{fmt} is not reproducible"


@pytest.mark.django_db
def test_parquet_keeps_the_jsonl_columns_with_types(reviewer):
    truth = accepted("pathology", sha="p", fields=PATHOLOGY_FIELDS)
    body = export_bytes(
        ground_truth_selection(), fmt="parquet", export_filter=ExportFilter(), site_url=SITE
    )
    table = pq.read_table(io.BytesIO(body))
    assert table.schema.names == EXPORT_FIELDS  # the JSONL/CSV columns, in order
    assert str(table.schema.field("decided_at").type) == "timestamp[us, tz=UTC]"
    [row] = table.to_pylist()
    [line] = export_bytes(
        ground_truth_selection(), fmt="jsonl", export_filter=ExportFilter(), site_url=SITE
    ).splitlines()
    record = json.loads(line)
    assert row["decided_at"].isoformat() == record["decided_at"]
    assert json.loads(row["classification"]) == record["classification"]
    assert json.loads(row["fields"])[0]["fields"]["er_status"]["value"] == "positive (95%)"
    assert (row["run_id"], row["reviewer"], row["version"]) == (truth.run_id, None, 1)


@pytest.mark.django_db
def test_the_hugging_face_folder_loads_with_datasets_and_its_card_says_what_is_in_it(
    reviewer, tmp_path, monkeypatch
):
    accepted("pathology", sha="1", document_id=id_in("train"))
    accepted("pathology", sha="2", document_id=id_in("validation"))
    accepted("radiology", sha="3", document_id=id_in("test"))
    packet = make_packet(sha="4")
    review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
    accepted("genomic", sha="5", state=PROVISIONAL)  # under a check: not in a training set
    folder = tmp_path / "dataset"
    call_command("export_ground_truth", "--format", "hf", "--out", str(folder))

    card = (folder / "README.md").read_text()
    meta = yaml.safe_load(card.split("---")[1])
    assert meta["vetted"]["counts_per_type"] == {
        "clinical_note": 0,
        "pathology": 3,
        "genomic": 0,
        "radiology": 1,
        "other": 0,
    }
    assert meta["vetted"]["counts_per_source"]["SME_VALIDATED"] == 1
    assert meta["vetted"]["counts_per_state"] == {"provisional": 0, "final": 4}
    assert meta["vetted"]["export_filter"] == {
        "start": None,
        "end": None,
        "source": None,
        "type": None,
        "state": "final",  # the dataset's default, stated
        "all_versions": False,
    }
    assert "Final labels only" in card
    names = meta["dataset_info"]["features"][-1]["dtype"]["class_label"]["names"]
    assert names == {str(i): label for i, label in enumerate(LABELS)}
    per_split = Counter(dataset_split(t.document_id) for t in ground_truth_selection(state=FINAL))
    assert set(per_split) == set(HF_SPLITS)  # the packet's document lands in one of them
    # num_bytes too (the datasets library warns without it): the rows' Arrow size.
    assert all(split["num_bytes"] > 0 for split in meta["dataset_info"]["splits"])
    assert [
        {k: v for k, v in split.items() if k != "num_bytes"}
        for split in meta["dataset_info"]["splits"]
    ] == [{"name": split, "num_examples": per_split[split]} for split in HF_SPLITS]
    assert meta["configs"][0]["data_files"] == [
        {"split": split, "path": f"data/{split}-00000-of-00001.parquet"} for split in HF_SPLITS
    ]
    assert {s: c["rows"] for s, c in meta["vetted"]["counts_per_split"].items()} == per_split
    assert "| pathology | 1 | Pathology Report | 3 |" in card

    # No network: the datasets library reads the local folder (its card and Parquet files).
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    import datasets

    splits = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "c0"))
    assert {name: len(rows) for name, rows in splits.items()} == per_split
    dataset = datasets.load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "c"))
    assert dataset.num_rows == per_split["train"]
    assert dataset.features["label"].names == LABELS
    assert "filename" not in dataset.column_names
    everything = datasets.concatenate_datasets(list(splits.values()))
    assert [everything.features["label"].int2str(r["label"]) for r in everything] == [
        r["dominant_type"] for r in everything
    ]
    assert sorted(r["dominant_type"] for r in everything) == ["pathology"] * 3 + ["radiology"]
    assert {r["state"] for r in everything} == {"final"}
    # The Parquet file alone also carries the label set.
    parquet = datasets.load_dataset(
        "parquet",
        data_files=str(folder / "data" / "train-00000-of-00001.parquet"),
        split="train",
        cache_dir=str(tmp_path / "c2"),
    )
    assert parquet.features["label"].names == LABELS


@pytest.mark.django_db
def test_the_export_command_writes_every_format_and_refuses_what_it_cannot(reviewer, tmp_path):
    accepted("genomic", sha="g", fields=GENOMIC_FIELDS)
    call_command("export_ground_truth", "--format", "fhir", "--out", str(tmp_path / "b.json"))
    found = resources((tmp_path / "b.json").read_bytes())
    assert len(of_type(found, "Observation")) == 2
    call_command("export_ground_truth", "--format", "parquet", "--out", str(tmp_path / "g.pq"))
    assert pq.read_table(tmp_path / "g.pq").num_rows == 1
    with pytest.raises(CommandError, match="give --out"):
        call_command("export_ground_truth", "--format", "parquet")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me")
    with pytest.raises(CommandError, match="not empty"):
        call_command("export_ground_truth", "--format", "hf", "--out", str(tmp_path / "full"))
    with pytest.raises(CommandError, match="No ground truth"):
        call_command("export_ground_truth", "--format", "fhir", "--type", "radiology")


@pytest.mark.django_db
def test_the_export_page_offers_every_format(admin_user, settings):
    settings.SITE_URL = SITE
    accepted("pathology", sha="h", fields=PATHOLOGY_FIELDS, document_id=id_in("train"))
    client = Client()
    client.force_login(admin_user)
    page = client.get(reverse("review:export"))
    for fmt in ("jsonl", "csv", "fhir", "parquet", "hf"):
        assert f'value="{fmt}"' in page.content.decode()
    fhir_response = client.get(reverse("review:export"), {"format": "fhir"})
    assert fhir_response["Content-Type"] == "application/fhir+json"
    assert 'filename="ground-truth.fhir.json"' in fhir_response["Content-Disposition"]
    assert len(of_type(resources(fhir_response.getvalue()), "DocumentReference")) == 1
    parquet = client.get(reverse("review:export"), {"format": "parquet"})
    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == 1
    hf = client.get(reverse("review:export"), {"format": "hf", "type": "pathology"})
    with zipfile.ZipFile(io.BytesIO(hf.content)) as zipped:
        assert sorted(zipped.namelist()) == [
            "ground-truth/README.md",
            "ground-truth/data/train-00000-of-00001.parquet",
        ]
        assert '    type: "pathology"' in zipped.read("ground-truth/README.md").decode()


@pytest.mark.django_db
def test_without_pyarrow_the_page_says_how_to_get_parquet(admin_user, monkeypatch):
    accepted("pathology", sha="i")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    client = Client()
    client.force_login(admin_user)
    response = client.get(reverse("review:export"), {"format": "parquet"})
    assert response.status_code == 501
    assert "vetted[datasets]" in response.content.decode()
    assert client.get(reverse("review:export"), {"format": "jsonl"}).status_code == 200


@pytest.mark.django_db
def test_the_api_exports_to_each_token_only_its_own_documents_unless_it_may_export_all(
    reviewer, admin_user, settings
):
    settings.SITE_URL = SITE
    mine = accepted("pathology", sha="m", fields=PATHOLOGY_FIELDS)
    Document.objects.filter(pk=mine.document_id).update(uploaded_by=reviewer)
    theirs = accepted("radiology", sha="t")
    _, lims_key = api_token_create(user=reviewer, name="lims")
    _, ml_key = api_token_create(user=admin_user, name="ml team")
    lims = Client(HTTP_AUTHORIZATION=f"Bearer {lims_key}")
    ml = Client(HTTP_AUTHORIZATION=f"Bearer {ml_key}")
    url = reverse("api:ground_truth")

    own = lims.get(url, {"format": "jsonl"})
    assert own.status_code == 200
    assert [json.loads(line)["document_id"] for line in own.getvalue().splitlines()] == [
        str(mine.document_id)
    ]
    everything = ml.get(url, {"format": "csv"})
    assert everything.getvalue().decode().count("\n") == 3  # header and two records
    bundle = lims.get(url)  # FHIR by default
    assert bundle["Content-Type"] == "application/fhir+json"
    assert len(of_type(resources(bundle.getvalue()), "DocumentReference")) == 1
    assert lims.get(url, {"type": "x-ray"}).status_code == 400
    assert lims.get(url, {"format": "pdf"}).status_code == 400
    assert Client().get(url).status_code == 401

    document = reverse("api:document_fhir", args=[mine.document_id])
    found = resources(lims.get(document).getvalue())
    assert {r["resourceType"] for r in found} == {
        "Device",
        "DocumentReference",
        "Provenance",
        "Observation",
    }
    assert lims.get(reverse("api:document_fhir", args=[theirs.document_id])).status_code == 404
    assert ml.get(reverse("api:document_fhir", args=[theirs.document_id])).status_code == 200
    waiting = ready_document("text", sha="w", uploaded_by=reviewer)
    refused = lims.get(reverse("api:document_fhir", args=[waiting.pk]))
    assert refused.status_code == 409 and "No ground truth yet" in refused.json()["error"]


@pytest.mark.django_db
def test_page_text_on_request_reaches_parquet_and_the_dataset_too(tmp_path):
    accepted("pathology", sha="p", document_id=id_in("train"))
    plain = pq.read_table(
        io.BytesIO(
            export_bytes(
                ground_truth_selection(),
                fmt="parquet",
                export_filter=ExportFilter(),
                site_url=SITE,
            )
        )
    )
    assert "pages" not in plain.column_names
    table = pq.read_table(
        io.BytesIO(
            export_bytes(
                ground_truth_selection(),
                fmt="parquet",
                export_filter=ExportFilter(),
                site_url=SITE,
                with_text=True,
            )
        )
    )
    [pages] = table.column("pages").to_pylist()
    assert [p["number"] for p in json.loads(pages)] == [1]
    folder = tmp_path / "hf"
    export_write(
        ground_truth_selection(),
        fmt="hf",
        out=folder,
        export_filter=ExportFilter(),
        site_url=SITE,
        with_text=True,
    )
    dataset = pq.read_table(folder / "data" / "train-00000-of-00001.parquet")
    assert "pages" in dataset.column_names and "filename" not in dataset.column_names
    assert "name: pages" in (folder / "README.md").read_text()


# -- provisional and final versions ---------------------------------------------------------------


def document_ids(fmt: str, body: bytes) -> list[str]:
    """The document of each row (of each DocumentReference in FHIR), in the file's order."""
    if fmt == "jsonl":
        return [json.loads(line)["document_id"] for line in body.splitlines()]
    if fmt == "csv":
        return [r["document_id"] for r in csv.DictReader(io.StringIO(body.decode()))]
    if fmt == "fhir":
        return [
            r["identifier"][0]["value"].removeprefix("urn:uuid:")
            for r in of_type(resources(body), "DocumentReference")
        ]
    if fmt == "parquet":
        return [r["document_id"] for r in pq.read_table(io.BytesIO(body)).to_pylist()]
    return [r["document_id"] for rows in split_files(body).values() for r in rows]


@pytest.mark.django_db
def test_every_format_marks_each_versions_state(reviewer):
    settled = accepted("genomic", sha="1", fields=GENOMIC_FIELDS)
    under_audit = accepted("pathology", sha="2", fields=PATHOLOGY_FIELDS, state=PROVISIONAL)
    first = accepted("radiology", sha="3")
    waiting = corrected(first, reviewer, "pathology", state=PROVISIONAL)  # awaits 2nd review
    expected = {
        (str(t.document_id), t.version): t.state for t in (settled, under_audit, first, waiting)
    }
    assert set(expected.values()) == {"final", "provisional"}

    def export(fmt: str) -> bytes:
        selection = ground_truth_selection(all_versions=True)
        return export_bytes(selection, fmt=fmt, export_filter=ExportFilter(), site_url=SITE)

    lines = [json.loads(line) for line in export("jsonl").splitlines()]
    assert {(r["document_id"], r["version"]): r["state"] for r in lines} == expected
    table = list(csv.reader(io.StringIO(export("csv").decode())))
    assert table[0] == EXPORT_FIELDS
    # A new column beside the source it qualifies; every other column keeps its order.
    assert table[0][table[0].index("source") + 1] == "state"
    assert [c for c in table[0] if c != "state"] == [
        "document_id", "document_sha256", "filename", "version", "source", "dominant_type",
        "run_id", "model", "prompt_version", "reviewer", "decided_at", "classification",
        "fields", "reason", "note",
    ]  # fmt: skip
    rows = [dict(zip(table[0], r, strict=True)) for r in table[1:]]
    assert {(r["document_id"], int(r["version"])): r["state"] for r in rows} == expected
    parquet = pq.read_table(io.BytesIO(export("parquet")))
    assert str(parquet.schema.field("state").type) == "string"
    assert {(r["document_id"], r["version"]): r["state"] for r in parquet.to_pylist()} == expected
    dataset = [r for rows in split_files(export("hf")).values() for r in rows]
    assert {(r["document_id"], r["version"]): r["state"] for r in dataset} == expected

    found = resources(export("fhir"))
    ids = fhir.Ids(SITE)
    doc_status = {r["id"]: r["docStatus"] for r in of_type(found, "DocumentReference")}
    assert doc_status == {
        ids.document_reference(settled.pk): "final",
        ids.document_reference(under_audit.pk): "preliminary",
        ids.document_reference(first.pk): "final",
        ids.document_reference(waiting.pk): "preliminary",
    }
    observed = {
        o["derivedFrom"][0]["reference"].removeprefix("urn:uuid:"): o["status"]
        for o in of_type(found, "Observation")
    }
    assert observed == {
        ids.document_reference(settled.pk): "final",
        ids.document_reference(under_audit.pk): "preliminary",
    }
    # Settling a version changes its state, so its next export says final.
    GroundTruth.objects.filter(pk=under_audit.pk).update(state=FINAL)
    again = {
        r["id"]: r["docStatus"] for r in of_type(resources(export("fhir")), "DocumentReference")
    }
    assert again[ids.document_reference(under_audit.pk)] == "final"


@pytest.mark.django_db
def test_the_state_filter_and_its_defaults_on_the_page_the_command_and_the_api(
    admin_user, tmp_path
):
    settled = str(accepted("pathology", sha="1", document_id=id_in("train")).document_id)
    provisional = str(
        accepted("radiology", sha="2", state=PROVISIONAL, document_id=id_in("train", 1)).document_id
    )
    page = Client()
    page.force_login(admin_user)
    _, key = api_token_create(user=admin_user, name="ml team")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def via_page(fmt: str, state: str | None) -> bytes:
        response = page.get(reverse("review:export"), {"format": fmt, "state": state or ""})
        assert response.status_code == 200, response.content
        return response.getvalue()

    def via_api(fmt: str, state: str | None) -> bytes:
        params = {"format": fmt, **({"state": state} if state is not None else {})}
        response = api.get(reverse("api:ground_truth"), params)
        assert response.status_code == 200, response.content
        return response.getvalue()

    def via_command(fmt: str, state: str | None) -> bytes:
        out = tmp_path / f"{fmt}-{state}-{len(list(tmp_path.iterdir()))}"
        flags = ["--format", fmt, "--out", str(out), *(["--state", state] if state else [])]
        call_command("export_ground_truth", *flags, stderr=io.StringIO())
        if fmt != "hf":
            return out.read_bytes()
        archive = io.BytesIO()  # the folder as the page's zip, to read it the same way
        with zipfile.ZipFile(archive, "w") as zipped:
            for path in sorted(out.rglob("*.parquet")):
                zipped.write(path, f"ground-truth/{path.relative_to(out)}")
        return archive.getvalue()

    both, final, only_provisional = {settled, provisional}, {settled}, {provisional}
    expected = {
        # Nothing asked: every state, marked, where a consumer reads it; final only where a
        # model is trained on it.
        None: {"jsonl": both, "csv": both, "fhir": both, "parquet": final, "hf": final},
        "all": dict.fromkeys(("jsonl", "csv", "fhir", "parquet", "hf"), both),
        "final": dict.fromkeys(("jsonl", "csv", "fhir", "parquet", "hf"), final),
        "provisional": dict.fromkeys(("jsonl", "csv", "fhir", "parquet", "hf"), only_provisional),
    }
    for state, per_format in expected.items():
        for fmt, documents in per_format.items():
            for how in (via_page, via_api, via_command):
                assert set(document_ids(fmt, how(fmt, state))) == documents, (how, fmt, state)

    # The audit log names the state the export used, the default resolved.
    AuditEvent.objects.filter(action="exported").delete()
    via_page("parquet", None)
    via_api("jsonl", None)
    assert sorted(e.detail["state"] for e in AuditEvent.objects.filter(action="exported")) == [
        "all",
        "final",
    ]
    # The page, the API and the command say what the default is.
    html = page.get(reverse("review:export")).content.decode()
    assert 'name="state"' in html and "Parquet and the Hugging Face dataset hold final" in html
    schema = api.get("/api/v1/openapi.json").json()
    export = schema["paths"]["/api/v1/ground-truth/"]["get"]
    assert "state" in {p["name"] for p in export["parameters"]}
    assert "final labels only" in export["description"]
    from review.management.commands.export_ground_truth import Command

    state_help = next(
        a.help for a in Command().create_parser("manage.py", "x")._actions if a.dest == "state"
    )
    assert "final labels only" in state_help

    refused = api.get(reverse("api:ground_truth"), {"state": "settled"})
    assert refused.status_code == 400
    # The API's schema lists the states: an unknown one is an invalid request that names them.
    assert refused.json()["code"] == "invalid_request"
    assert "'all', 'final' or 'provisional'" in refused.json()["error"]
    assert page.get(reverse("review:export"), {"format": "csv", "state": "x"}).status_code == 400
    with pytest.raises(CommandError, match="invalid choice"):
        call_command("export_ground_truth", "--state", "settled")


@pytest.mark.django_db
def test_the_dataset_splits_by_document_the_same_way_every_time(reviewer, tmp_path):
    for n, sha in enumerate("0123456789abcdef"):
        first = accepted("pathology" if n % 2 else "radiology", sha=sha)
        corrected(first, reviewer, "genomic")  # every document has two versions
    everything = ExportFilter(all_versions=True)

    def zipped(export_filter: ExportFilter) -> bytes:
        return export_bytes(
            export_filter.selection(), fmt="hf", export_filter=export_filter, site_url=SITE
        )

    body = zipped(everything)
    assert zipped(everything) == body  # the same records give the same bytes
    splits = split_files(body)
    where: dict[str, set[str]] = {}
    for split, rows in splits.items():
        for row in rows:
            where.setdefault(row["document_id"], set()).add(split)
    assert len(where) == 16 and sum(len(rows) for rows in splits.values()) == 32
    for document_id, found in where.items():
        # Both versions in one split, the one the documented rule names.
        digest = hashlib.sha256(document_id.encode()).digest()
        bucket = int.from_bytes(digest[:8], "big") % 100
        rule = "train" if bucket < 80 else "validation" if bucket < 90 else "test"
        assert found == {rule}
    # A document keeps its split when the rest of the export changes.
    some = ExportFilter(doc_type="genomic", all_versions=False)
    for split, rows in split_files(zipped(some)).items():
        assert all(where[r["document_id"]] == {split} for r in rows)

    # The folder holds the same files, and its card the splits with their counts.
    export_write(
        everything.selection(),
        fmt="hf",
        out=tmp_path / "a",
        export_filter=everything,
        site_url=SITE,
    )
    export_write(
        everything.selection(),
        fmt="hf",
        out=tmp_path / "b",
        export_filter=everything,
        site_url=SITE,
    )
    assert export_digest(tmp_path / "a") == export_digest(tmp_path / "b")
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        for split in splits:
            name = f"data/{split}-00000-of-00001.parquet"
            assert (tmp_path / "a" / name).read_bytes() == archive.read(f"ground-truth/{name}")
    meta = yaml.safe_load((tmp_path / "a" / "README.md").read_text().split("---")[1])
    assert meta["vetted"]["counts_per_split"] == {
        split: {
            "rows": len(splits.get(split, [])),
            "documents": len({r["document_id"] for r in splits.get(split, [])}),
        }
        for split in HF_SPLITS
    }
    assert [
        {k: v for k, v in split.items() if k != "num_bytes"}
        for split in meta["dataset_info"]["splits"]
    ] == [
        {"name": split, "num_examples": len(splits[split])}
        for split in HF_SPLITS
        if split in splits
    ]


# -- who sees what; filters that cannot match ------------------------------------------------------


@pytest.mark.django_db
def test_a_token_without_the_export_permission_gets_no_record_under_a_blind_check(
    reviewer, other_reviewer, admin_user, django_user_model, settings
):
    settings.SITE_URL = SITE
    settings.SECOND_REVIEW_ON_CORRECTION = True
    settled = accepted("pathology", sha="1").document
    under_audit = audited(accepted("radiology", sha="2"), settings).document
    theirs = make_packet(sha="3")
    correct(theirs, other_reviewer)  # awaits a second review: blind to all but its decider
    mine = make_packet(sha="4")
    correct(mine, reviewer)  # the token's own user decided it: it sees its decision
    assert SecondReview.objects.filter(status=SecondReview.Status.AWAITING).count() == 2
    documents = [settled.pk, under_audit.pk, theirs.document_id, mine.document_id]
    Document.objects.filter(pk__in=documents).update(uploaded_by=reviewer)
    _, lims_key = api_token_create(user=reviewer, name="lims")
    _, ml_key = api_token_create(user=admin_user, name="ml team")
    lims = Client(HTTP_AUTHORIZATION=f"Bearer {lims_key}")
    ml = Client(HTTP_AUTHORIZATION=f"Bearer {ml_key}")
    url = reverse("api:ground_truth")

    for fmt in ("jsonl", "csv", "fhir"):
        seen = lims.get(url, {"format": fmt, "state": "all"}).getvalue()
        assert set(document_ids(fmt, seen)) == {str(settled.pk), str(mine.document_id)}, fmt
        everything = ml.get(url, {"format": fmt}).getvalue()
        assert set(document_ids(fmt, everything)) == {str(d) for d in documents}, fmt
    rows = [json.loads(line) for line in lims.get(url, {"format": "jsonl"}).getvalue().splitlines()]
    assert {r["document_id"]: r["state"] for r in rows} == {
        str(settled.pk): "final",
        str(mine.document_id): "provisional",
    }
    parquet = lims.get(url, {"format": "parquet", "state": "all"}).getvalue()
    assert set(document_ids("parquet", parquet)) == {str(settled.pk), str(mine.document_id)}

    hidden = lims.get(reverse("api:document_fhir", args=[under_audit.pk]))
    assert hidden.status_code == 409 and hidden.json()["code"] == "labels_hidden"
    assert lims.get(reverse("api:document_fhir", args=[theirs.document_id])).status_code == 409
    assert lims.get(reverse("api:document_fhir", args=[mine.document_id])).status_code == 200
    assert ml.get(reverse("api:document_fhir", args=[under_audit.pk])).status_code == 200

    # The page asks review.visibility too: an exporter who is not an Admin gets no blind record.
    exporter = django_user_model.objects.create_user("exporter", password="x")
    exporter.user_permissions.add(Permission.objects.get(codename="export_ground_truth"))
    page = Client()
    page.force_login(exporter)
    body = page.get(reverse("review:export"), {"format": "jsonl"}).getvalue()
    assert set(document_ids("jsonl", body)) == {str(settled.pk)}
    page.force_login(admin_user)
    body = page.get(reverse("review:export"), {"format": "jsonl"}).getvalue()
    assert set(document_ids("jsonl", body)) == {str(d) for d in documents}


@pytest.mark.django_db
def test_an_end_date_before_the_start_date_is_refused_not_exported_empty(admin_user):
    accepted("pathology", sha="1")
    page = Client()
    page.force_login(admin_user)
    _, key = api_token_create(user=admin_user, name="ml team")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    backwards = {"format": "jsonl", "start": "2026-03-02", "end": "2026-03-01"}

    refused = page.get(reverse("review:export"), backwards)
    assert refused.status_code == 400
    assert "The end date is before the start date." in refused.content.decode()
    # The API reads the two dates as a range in either order: its schema cannot say that the
    # end comes after the start, and every request the schema allows is served.
    answer = api.get(reverse("api:ground_truth"), backwards)
    assert answer.status_code == 200
    forwards = api.get(
        reverse("api:ground_truth"), {**backwards, **{"start": "2026-03-01", "end": "2026-03-02"}}
    )
    assert b"".join(answer.streaming_content) == b"".join(forwards.streaming_content)
    AuditEvent.objects.filter(action="exported").delete()
    with pytest.raises(CommandError, match="end date is before the start date"):
        call_command("export_ground_truth", "--start", "2026-03-02", "--end", "2026-03-01")
    assert not AuditEvent.objects.filter(action="exported").exists()
    one_day = {"format": "jsonl", "start": "2026-03-01", "end": "2026-03-01"}
    assert page.get(reverse("review:export"), one_day).status_code == 200
    assert api.get(reverse("api:ground_truth"), one_day).status_code == 200
