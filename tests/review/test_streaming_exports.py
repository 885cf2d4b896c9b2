"""JSONL, CSV and FHIR exports stream from the database: the same bytes as the in-memory
export they replace, for every filter; constant SQL per batch; one audit event per export
naming the streamed bytes; the page, the API and the command all stream."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.http import HttpResponse, StreamingHttpResponse
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from benchmarks.faults import clean_output
from documents.models import Document
from reliability.services import api_token_create
from review import exports
from review.exports import ExportFilter, export_bytes, export_stream
from review.models import AuditEvent, GroundTruth
from review.selectors import ground_truth_selection
from review.serializers import EXPORT_FIELDS, TEXT_FIELD, csv_cell, ground_truth_as_dict, page_texts
from review.services.audit_log import export_audit
from review.services.ground_truth import ground_truth_record
from tests.review.test_exports import (
    GENOMIC_FIELDS,
    PAGE,
    PATHOLOGY_FIELDS,
    SITE,
    accepted,
    corrected,
)


def in_memory_export(records: Iterable[GroundTruth], *, fmt: str, with_text: bool = False) -> bytes:
    """serializers.export_ground_truth as it was before exports streamed (main at d01dc45),
    kept verbatim as the reference the streamed bytes must equal."""
    truths = list(records)
    rows = [ground_truth_as_dict(t) for t in truths]
    columns = list(EXPORT_FIELDS)
    if with_text:
        texts = page_texts(truths)
        for row in rows:
            row[TEXT_FIELD] = texts.get(row["document_id"], [])
        columns.append(TEXT_FIELD)
    if fmt == "jsonl":
        return "".join(
            json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows
        ).encode()
    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for r in rows:
            r = dict(
                r,
                classification=json.dumps(r["classification"], sort_keys=True),
                fields=json.dumps(r["fields"], sort_keys=True),
            )
            if with_text:
                r[TEXT_FIELD] = json.dumps(r[TEXT_FIELD], sort_keys=True, ensure_ascii=False)
            writer.writerow([csv_cell(r[f]) for f in columns])
        return buffer.getvalue().encode()
    raise ValueError(f"unknown export format {fmt!r}")


FILTERS: list[dict[str, Any]] = [
    {},
    {"all_versions": True},
    {"doc_type": "pathology"},
    {"doc_type": "genomic", "all_versions": True},
    {"source": "SME_CORRECTED"},
    {"source": "WITHDRAWN", "all_versions": True},
    {"doc_type": "radiology"},  # nothing matches
]


def collect(**kwargs: Any) -> tuple[bytes, list[exports.Streamed]]:
    ended: list[exports.Streamed] = []
    body = b"".join(export_stream(on_end=ended.append, site_url=SITE, **kwargs))
    return body, ended


@pytest.fixture
def history(reviewer):
    """Records of every kind: auto-accepted with fields, corrected (two versions), withdrawn
    (a validated version, then WITHDRAWN), a formula filename, a note with quotes, a newline
    and non-ASCII text, pages with non-ASCII text."""
    first = accepted("pathology", sha="1", fields=PATHOLOGY_FIELDS)
    corrected(first, reviewer, "genomic")
    accepted("genomic", sha="2", fields=GENOMIC_FIELDS)
    odd = accepted("pathology", sha="3")
    Document.objects.filter(pk=odd.document_id).update(original_filename='=HYPERLINK("x")_Zoë.pdf')
    GroundTruth.objects.filter(pk=odd.pk).update(note='said "no",\nthen — Zoë', reason="@why")
    odd.document.pages.update(text="Zoë\u2019s report\n\nµg/L — 5")
    withdrawn = accepted("radiology", sha="4")
    GroundTruth.objects.filter(pk=withdrawn.pk).update(source=GroundTruth.Source.SME_VALIDATED)
    withdrawn.refresh_from_db()
    ground_truth_record(
        document=withdrawn.document,
        run=withdrawn.run,
        output=clean_output([PAGE["radiology"]], "radiology"),
        source=GroundTruth.Source.WITHDRAWN,
        reviewer=reviewer,
        reason="undone by its reviewer",
        transition="undo",  # the state machine's transition this version records
    )
    for sha in "56789":
        accepted("clinical_note", sha=sha)
    return GroundTruth.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_streamed_exports_are_byte_identical_to_the_in_memory_export(history, fmt):
    assert history == 11
    for selection in FILTERS:
        for with_text in (False, True):
            expected = in_memory_export(
                ground_truth_selection(**selection), fmt=fmt, with_text=with_text
            )
            for chunk_size in (1, 2, 3, None):
                body, [ended] = collect(
                    records=ground_truth_selection(**selection),
                    fmt=fmt,
                    with_text=with_text,
                    chunk_size=chunk_size,
                )
                assert body == expected, (selection, with_text, chunk_size)
                assert ended.complete and ended.digest == hashlib.sha256(expected).hexdigest()
                assert ended.records == ground_truth_selection(**selection).count()
            assert (
                export_bytes(
                    ground_truth_selection(**selection),
                    fmt=fmt,
                    export_filter=ExportFilter(**selection),
                    site_url=SITE,
                    with_text=with_text,
                )
                == expected
            )
    everything = in_memory_export(ground_truth_selection(all_versions=True), fmt="jsonl")
    sources = {json.loads(line)["source"] for line in everything.splitlines()}
    assert sources == {"AUTO_ACCEPTED", "SME_CORRECTED", "SME_VALIDATED", "WITHDRAWN"}
    assert "Zoë" in everything.decode() and "=HYPERLINK" in everything.decode()


@pytest.mark.django_db
def test_the_streamed_fhir_bundle_is_the_same_bundle(history):
    for selection in FILTERS[:5]:
        expected = export_bytes(
            ground_truth_selection(**selection),
            fmt="fhir",
            export_filter=ExportFilter(**selection),
            site_url=SITE,
        )
        body, [ended] = collect(
            records=ground_truth_selection(**selection), fmt="fhir", chunk_size=2
        )
        assert body == expected and ended.records == ground_truth_selection(**selection).count()


@pytest.mark.django_db
def test_sql_per_export_does_not_grow_with_the_records(reviewer):
    def queries(with_text: bool) -> int:
        with CaptureQueriesContext(connection) as captured:
            collect(records=ground_truth_selection(), fmt="csv", with_text=with_text)
        return len(captured)

    for sha in "12":
        accepted("pathology", sha=sha, fields=PATHOLOGY_FIELDS)
    few = (queries(False), queries(True))
    for sha in "3456789":
        truth = accepted("genomic", sha=sha, fields=GENOMIC_FIELDS)
        truth.reviewer = reviewer
        truth.save()
    assert (queries(False), queries(True)) == few
    # One page-text query per batch, however many documents the batch holds.
    with CaptureQueriesContext(connection) as captured:
        collect(records=ground_truth_selection(), fmt="jsonl", with_text=True, chunk_size=3)
    pages = [q for q in captured if "documents_page" in q["sql"]]
    assert len(pages) == 3  # 9 records in batches of 3


@pytest.mark.django_db
def test_the_page_and_the_api_stream_and_audit_once_what_they_sent(admin_user, history):
    client = Client()
    client.force_login(admin_user)
    _, key = api_token_create(user=admin_user, name="ml team")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    requests = [
        (client, reverse("review:export"), {"format": "jsonl", "with_text": "on"}),
        (client, reverse("review:export"), {"format": "csv", "all_versions": "on"}),
        (client, reverse("review:export"), {"format": "fhir"}),
        (api, reverse("api:ground_truth"), {"format": "jsonl"}),
        (api, reverse("api:ground_truth"), {"format": "csv", "type": "genomic"}),
        (api, reverse("api:ground_truth"), {"format": "fhir"}),
    ]
    for who, url, params in requests:
        AuditEvent.objects.filter(action="exported").delete()
        response = who.get(url, params)
        assert response.status_code == 200 and isinstance(response, StreamingHttpResponse)
        assert not AuditEvent.objects.filter(action="exported").exists()  # nothing sent yet
        body = response.getvalue()
        [event] = AuditEvent.objects.filter(action="exported")
        digest = hashlib.sha256(body).hexdigest()
        assert event.detail["sha256"] == digest and event.object_id == f"export:{digest[:16]}"
        assert "interrupted" not in event.detail
        selection = {
            "doc_type": params.get("type", ""),
            "all_versions": bool(params.get("all_versions")),
        }
        assert event.detail["records"] == ground_truth_selection(**selection).count()
        if params["format"] == "jsonl":
            expected = in_memory_export(
                ground_truth_selection(**selection),
                fmt="jsonl",
                with_text=bool(params.get("with_text")),
            )
            assert body == expected
    parquet = client.get(reverse("review:export"), {"format": "parquet"})
    assert isinstance(parquet, HttpResponse)  # Parquet and the dataset stay in memory


@pytest.mark.django_db
def test_a_download_broken_off_is_audited_as_interrupted(admin_user, history, monkeypatch):
    monkeypatch.setattr(exports, "OUT_BYTES", 1)  # every batch is handed over on its own

    def audit(result: exports.Streamed) -> None:
        export_audit(
            user=admin_user,
            digest=result.digest,
            filters={"format": "jsonl"},
            records=result.records,
            complete=result.complete,
        )

    stream = export_stream(
        ground_truth_selection(), fmt="jsonl", site_url=SITE, on_end=audit, chunk_size=1
    )
    first = next(stream)
    assert not AuditEvent.objects.filter(action="exported").exists()
    stream.close()  # what StreamingHttpResponse.close() does when the client goes away
    [event] = AuditEvent.objects.filter(action="exported")
    assert event.detail["interrupted"] is True
    assert event.detail["sha256"] == hashlib.sha256(first).hexdigest()
    assert event.detail["records"] == 1


@pytest.mark.django_db
def test_the_command_writes_as_it_reads_the_same_bytes(history, tmp_path):
    for fmt in ("jsonl", "csv"):
        for with_text in (False, True):
            flags = ["--format", fmt, "--all-versions", *(["--with-text"] if with_text else [])]
            expected = in_memory_export(
                ground_truth_selection(all_versions=True), fmt=fmt, with_text=with_text
            )
            out = tmp_path / f"gt.{fmt}"
            AuditEvent.objects.filter(action="exported").delete()
            call_command("export_ground_truth", *flags, "--out", str(out), stderr=StringIO())
            assert out.read_bytes() == expected
            [event] = AuditEvent.objects.filter(action="exported")
            assert event.detail["sha256"] == hashlib.sha256(expected).hexdigest()
            assert (event.detail["records"], event.detail["via"]) == (11, "command")
            printed = StringIO()
            call_command("export_ground_truth", *flags, stdout=printed)
            assert printed.getvalue().encode() == expected
            assert AuditEvent.objects.filter(action="exported").count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_export_benchmark_reports_memory_and_speed(tmp_path):
    figures = tmp_path / "bench.json"
    out = StringIO()
    call_command(
        "bench_export", "--records", "40", "--format", "csv", "--json", figures, stdout=out
    )
    result = json.loads(figures.read_text())
    assert result["records"] == 40 and result["format"] == "csv"
    assert result["records_per_second"] > 0 and result["seconds"] > 0
    assert 20 < result["baseline_rss_mib"] <= result["peak_rss_mib"] < 1024
    assert "records/s" in out.getvalue()
    assert not GroundTruth.objects.exists()  # seeded rows are removed without --keep
