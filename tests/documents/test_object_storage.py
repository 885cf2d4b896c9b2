"""Uploads and page images in an S3-compatible bucket (STORAGE_URL), tested against moto's S3
in server mode on a local port: ingestion, page images, the review pages, the file, exports,
and a worker process that shares nothing with the web side but the database, Redis and the
bucket."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connections
from django.urls import reverse
from django.utils import timezone

from benchmarks.pdfgen import text_pdf
from config.env import storage_from_url
from documents import services, storage
from documents.models import Document, Page
from tests.conftest import run_burst_worker
from tests.documents.conftest import AWS_ENV, Bucket
from tests.review.conftest import PAGES as REVIEW_PAGES

PUBLIC_GROUPS = {
    "http://acs.amazonaws.com/groups/global/AllUsers",
    "http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
}


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file()) if Path(root).exists() else []


def is_private(bucket: Bucket, key: str) -> bool:
    grants = bucket.client.get_object_acl(Bucket=bucket.name, Key=key)["Grants"]
    return not any(g["Grantee"].get("URI") in PUBLIC_GROUPS for g in grants)


class Drawings:
    """Counts the sandboxed page drawings of this process; each takes at least ``delay``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, delay: float = 0.0) -> None:
        self.count = 0
        self.lock = threading.Lock()
        real_run = services.run_sandboxed

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.count += 1
            if delay:
                time.sleep(delay)
            return real_run(*args, **kwargs)

        monkeypatch.setattr(services, "run_sandboxed", counted)


# -- STORAGE_URL ---------------------------------------------------------------------------------


def test_no_storage_url_keeps_files_on_this_machines_disk():
    assert storage_from_url("") == {"BACKEND": "django.core.files.storage.FileSystemStorage"}


def test_a_storage_url_names_a_private_bucket_through_django_storages():
    entry = storage_from_url(
        "s3://hospital-docs/vetted/prod?endpoint_url=https://minio.internal:9000"
        "&region=eu-west-2&addressing_style=path"
    )
    assert entry == {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": "hospital-docs",
            "location": "vetted/prod",
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": True,
            "endpoint_url": "https://minio.internal:9000",
            "region_name": "eu-west-2",
            "addressing_style": "path",
        },
    }
    assert storage_from_url("s3://docs")["OPTIONS"]["location"] == ""


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("gs://bucket/prefix", "scheme 'gs' is not supported"),
        ("s3:///prefix", "names no bucket"),
        ("s3://AKIA:secret@bucket/prefix", "must not carry credentials"),
        ("s3://bucket/prefix?region=eu-west-1&acl=public-read", "parameter 'acl' is not known"),
        ("s3://bucket?endpoint_url=", "parameter 'endpoint_url' is empty"),
        ("s3://bucket?endpoint_url=minio:9000", "must be an http:// or https:// URL"),
        ("s3://bucket?addressing_style=sideways", "addressing_style 'sideways'"),
        ("s3://bucket/a/../b", "may not contain '..'"),
    ],
)
def test_a_bad_storage_url_stops_the_start(url, says):
    with pytest.raises(ImproperlyConfigured, match=says):
        storage_from_url(url)


def test_the_settings_read_storage_url_and_fail_loudly_on_a_bad_one():
    from tests.test_settings import run_manage

    show = "from django.conf import settings; print(settings.STORAGES['default']['BACKEND'])"
    good = run_manage("shell", "-c", show, env={"STORAGE_URL": "s3://bucket/prefix?region=x"})
    assert good.returncode == 0, good.stderr
    assert good.stdout.splitlines()[-1] == "storages.backends.s3.S3Storage"
    default = run_manage("shell", "-c", show, env={"STORAGE_URL": ""})
    assert default.stdout.splitlines()[-1] == "django.core.files.storage.FileSystemStorage"
    bad = run_manage("check", env={"STORAGE_URL": "s3://bucket?acl=public-read"})
    assert bad.returncode != 0 and "parameter 'acl' is not known" in bad.stderr


# -- the web side --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)  # ingestion is queued on commit
def test_an_upload_is_kept_private_in_the_bucket_and_ingested_from_it(
    bucket, pathology_pdf, media_root, reviewer_client
):
    document = services.document_create(filename="Jane Doe.pdf", content=pathology_pdf, user=None)

    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert list(document.pages.values_list("number", flat=True)) == [1, 2, 3]
    key = f"hospital/documents/{timezone.now():%Y/%m}/{document.pk}.pdf"
    assert bucket.stored() == [key]  # the name carries no part of the filename
    assert is_private(bucket, key)
    assert files_under(media_root) == []  # nothing on this machine's disk

    response = reviewer_client.get(reverse("documents:file", args=[document.pk]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == pathology_pdf


@pytest.mark.django_db
def test_the_health_check_asks_the_bucket(bucket, client, settings):
    assert client.get(reverse("healthz")).json()["checks"]["media"] == "ok"
    missing = bucket.url.replace(bucket.name, "no-such-bucket-here")
    settings.STORAGES = {**settings.STORAGES, "default": storage_from_url(missing)}
    body = client.get(reverse("healthz")).json()
    assert body["status"] == "failed" and body["failed"] == ["media"]


@pytest.mark.django_db
def test_page_images_are_drawn_once_into_the_bucket_and_the_review_pages_read_them(
    bucket, media_root, reviewer_client, monkeypatch
):
    from tests.review.conftest import PATHOLOGY_REPORT, pdf_packet

    packet = pdf_packet(PATHOLOGY_REPORT, label="pathology")
    document = packet.document
    drawings = Drawings(monkeypatch)

    assert reviewer_client.get(reverse("review:packet", args=[packet.pk])).status_code == 200
    url = reverse("review:page_image", args=[packet.pk, 1])
    full = reviewer_client.get(url)
    thumb = reviewer_client.get(url, {"size": "thumb"})
    again = reviewer_client.get(url)

    for response in (full, thumb, again):
        assert response.status_code == 200 and response["Content-Type"] == "image/png"
        assert b"".join(response.streaming_content).startswith(b"\x89PNG")
    assert drawings.count == 1  # both sizes at once, then read from the bucket
    folder = f"hospital/page-images/{document.pk}"
    assert bucket.stored(folder) == [
        f"{folder}/1-150.png",
        f"{folder}/1-18.png",
    ]
    assert is_private(bucket, f"{folder}/1-150.png")

    # The render job draws the rest, from one listing of what is drawn already.
    assert services.page_images_render(document=document) == (2, 0)
    assert drawings.count == 3
    assert len(bucket.stored(folder)) == 6
    assert files_under(media_root) == []


@pytest.mark.postgres  # concurrent writers (see test_page_images)
@pytest.mark.django_db(transaction=True)
def test_one_drawing_per_page_holds_without_a_shared_disk(bucket, monkeypatch):
    """The lease is a row in the database, which every machine shares: concurrent requests
    for a page draw it once and the others read it from the bucket."""
    from benchmarks.pdfgen import text_pdf
    from tests.conftest import ready_document

    document = ready_document("PATHOLOGY", "GROSS", sha="a")
    document.file.save("doc.pdf", storage_content(text_pdf([["PATHOLOGY"], ["GROSS"]])))
    drawings = Drawings(monkeypatch, delay=0.5)
    results: list[Any] = [None] * 6
    barrier = threading.Barrier(6)

    def ask(i: int) -> None:
        try:
            barrier.wait()
            size = "thumb" if i % 2 else "page"
            results[i] = services.page_image(document=document, number=1, size=size, wait=30)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert drawings.count == 1
    assert all(r is not None and r.name and storage.exists(r.name) for r in results)
    assert Page.objects.get(document=document, number=1).drawing_until is None  # released


def storage_content(data: bytes) -> Any:
    from django.core.files.base import ContentFile

    return ContentFile(data)


@pytest.mark.django_db
def test_a_lease_whose_holder_died_runs_out_and_the_page_is_drawn(bucket, settings, monkeypatch):
    from benchmarks.pdfgen import text_pdf
    from tests.conftest import ready_document

    settings.SANDBOX_RENDER_SECONDS = 5
    document = ready_document("PATHOLOGY", sha="b")
    document.file.save("doc.pdf", storage_content(text_pdf([["PATHOLOGY"]])))
    page = Page.objects.get(document=document)
    # A process on another machine took the page and died.
    page.drawing_until = timezone.now() + timedelta(seconds=30)
    page.save(update_fields=["drawing_until"])
    drawings = Drawings(monkeypatch)

    assert services.page_image(document=document, number=1, wait=0.2) == services.PageImage()
    assert drawings.count == 0  # held: "still being drawn"
    Page.objects.filter(pk=page.pk).update(drawing_until=timezone.now() - timedelta(seconds=1))
    image = services.page_image(document=document, number=1, wait=0.2)
    assert image.name is not None and drawings.count == 1


@pytest.mark.django_db
def test_a_decision_and_the_ground_truth_exports_work_with_object_storage(
    bucket, reviewer, admin_user, client
):
    from review.services import decisions
    from tests.review.conftest import GENOMIC_REPORT, pdf_packet

    packet = pdf_packet(GENOMIC_REPORT, label="genomic")
    decisions.packet_open(packet=packet, user=reviewer)
    decisions.review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")

    out = StringIO()
    call_command("export_ground_truth", "--format", "jsonl", stdout=out, stderr=StringIO())
    (row,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (row["document_id"], row["dominant_type"]) == (str(packet.document_id), "genomic")
    client.force_login(admin_user)
    fhir = client.get(reverse("review:export"), {"format": "fhir"})
    assert fhir.status_code == 200
    bundle = json.loads(b"".join(fhir.streaming_content))
    (reference,) = [
        e["resource"]
        for e in bundle["entry"]
        if e["resource"]["resourceType"] == "DocumentReference"
    ]
    assert reference["content"][0]["attachment"]["url"].endswith(
        f"/documents/{packet.document_id}/file/"
    )


# A pathology report with a requisition's keyword on its second page: the offline classifier's
# answer is escalated to a clinician (tests.review.conftest.PAGES).
ESCALATED = text_pdf([p.split("\n\n") for p in REVIEW_PAGES])


# -- a worker on another machine -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_worker_sharing_only_the_database_redis_and_the_bucket_ingests_and_draws(
    bucket, redis_url, settings, tmp_path, media_root, monkeypatch, reviewer
):
    """The web side stores the upload in the bucket; a worker process with an empty media
    folder of its own ingests it from there, classifies it and draws its page images into the
    bucket; the web side then serves the review pages and the export from the bucket without
    drawing anything or reading any disk."""
    from django.test import Client

    from review.models import GroundTruth, ReviewPacket
    from review.services import decisions

    settings.PAGE_IMAGES_PRERENDER = True
    document = services.document_create(filename="path.pdf", content=ESCALATED, user=None)
    worker_media = tmp_path / "worker-media"
    worker_media.mkdir()

    run_burst_worker(
        redis_url,
        env={
            **AWS_ENV,
            "STORAGE_URL": bucket.url,
            "MEDIA_ROOT": str(worker_media),
            "AUDIT_SAMPLE_RATE": "0",
            "AUDIT_DAILY_MINIMUM": "0",
        },
    )

    document.refresh_from_db()
    assert document.status == Document.Status.READY and document.pages.count() == 2
    assert document.image_render.status == "done" and document.image_render.pages_drawn == 2
    assert len(bucket.stored(f"hospital/page-images/{document.pk}/")) == 4
    assert files_under(worker_media) == [] and files_under(media_root) == []

    # The web side: nothing is drawn here, everything is read from the bucket.
    def no_drawing(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the web side drew a page the worker had drawn")

    monkeypatch.setattr(services, "run_sandboxed", no_drawing)
    web = Client()
    web.force_login(reviewer)
    packet = ReviewPacket.objects.get(document=document)  # escalated to a clinician
    assert web.get(reverse("review:packet", args=[packet.pk])).status_code == 200
    for number in (1, 2):
        for size in ({}, {"size": "thumb"}):
            response = web.get(reverse("review:page_image", args=[packet.pk, number]), size)
            assert response.status_code == 200
            assert b"".join(response.streaming_content).startswith(b"\x89PNG")
    decisions.packet_open(packet=packet, user=reviewer)
    decisions.review_submit(packet_id=packet.pk, reviewer=reviewer, correction=None, notes="")
    assert GroundTruth.objects.filter(document=document).exists()
    out = StringIO()
    call_command("export_ground_truth", "--format", "jsonl", stdout=out, stderr=StringIO())
    assert json.loads(out.getvalue().splitlines()[0])["document_id"] == str(document.pk)
    response = web.get(reverse("documents:file", args=[document.pk]))
    assert b"".join(response.streaming_content) == ESCALATED
    assert files_under(worker_media) == [] and files_under(media_root) == []
