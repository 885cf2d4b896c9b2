"""`export_ground_truth --deidentify` on the document of every leak a privacy review found
(tests/deid_leaks.py): page text, an evidence snippet, a field value, the reviewer's note,
the reason and the file name hold none of them."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from benchmarks.faults import clean_output
from documents.models import Document
from engine.schemas import Evidence
from reliability.models import Extraction, Run
from review.models import GroundTruth
from review.services.ground_truth import ground_truth_record
from tests.conftest import ready_document
from tests.deid_leaks import EVIDENCE, FIELD_VALUE, FILENAME, KEPT, LEAKS, NOTE, PAGES

pytestmark = pytest.mark.django_db


@pytest.fixture
def leaky_truth():
    document = ready_document(*PAGES, sha="l")
    Document.objects.filter(pk=document.pk).update(original_filename=FILENAME)
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
    output = clean_output(PAGES, "clinical_note")
    assert output is not None
    first = output.segments[0].assessment("clinical_note")
    assert first is not None
    first.top_evidence.append(Evidence(snippet=EVIDENCE, page=1))
    first.reasoning = f"The header says {EVIDENCE}; the relative is ingrid."
    Extraction.objects.create(
        document=document,
        run=run,
        doc_type="clinical_note",
        status=Extraction.Status.COMPLETED,
        fields={"patient": {"value": FIELD_VALUE, "status": "found", "snippet": EVIDENCE}},
    )
    return ground_truth_record(
        document=document,
        run=run,
        output=output,
        source=GroundTruth.Source.AUTO_ACCEPTED,
        note=NOTE,
        reason="marisol's discharge",
    )


def test_every_listed_leak_is_gone_from_a_de_identified_export(leaky_truth, tmp_path):
    common = ("export_ground_truth", "--format", "jsonl", "--with-text", "--state", "all")
    plain, hidden = tmp_path / "plain.jsonl", tmp_path / "hidden.jsonl"
    call_command(*common, "--out", str(plain), stdout=io.StringIO())
    call_command(*common, "--deidentify", "--out", str(hidden), stdout=io.StringIO())
    before = plain.read_text(encoding="utf-8")
    assert "Quillen" in before and "王伟" in before and FIELD_VALUE in before  # the data holds them

    after = hidden.read_text(encoding="utf-8")
    row = json.loads(after.splitlines()[0])
    text = json.dumps(row, ensure_ascii=False)
    leaked = [value for value in LEAKS if value in text]
    assert not leaked
    for value in KEPT:
        assert value in text, value
    assert row["filename"].endswith(".pdf") and row["filename"] != FILENAME
