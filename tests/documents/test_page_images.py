"""Page images: drawn ahead by a job after ingestion (every page, both sizes), one drawing per
page at a time whoever asks, and a page that cannot be drawn is remembered."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.db import connections
from django.urls import reverse
from django.utils import timezone

from benchmarks.pdfgen import text_pdf
from core import jobs
from documents import services, storage, tasks, untrusted
from documents.models import Document, ImageRender, Page
from tests.conftest import ready_document, run_burst_worker

# Real commits: the render job is queued with transaction.on_commit, as in production, and the
# threads below see what the test wrote.
pytestmark = pytest.mark.django_db(transaction=True)

THREE_PAGES = [["SURGICAL PATHOLOGY REPORT", "Invasive ductal carcinoma."], ["GROSS"], ["ADDENDUM"]]


@pytest.fixture
def prerender(settings: Any) -> Iterator[Any]:
    settings.PAGE_IMAGES_PRERENDER = True
    yield settings
    assert jobs.drain_background(60)  # nothing left running past the test


def stored(pages: list[list[str]] = THREE_PAGES, *, sha: str = "e") -> Document:
    """A ready document with its PDF stored and no page image yet."""
    document = ready_document(*["\n\n".join(p) for p in pages], sha=sha)
    document.file.save("doc.pdf", ContentFile(text_pdf(pages)))
    return document


def cached(document: Document) -> list[str]:
    from django.conf import settings

    folder = Path(settings.MEDIA_ROOT) / "page-images" / str(document.pk)
    return sorted(p.name for p in folder.glob("*.png"))


def png_width(path: Path) -> int:
    return int.from_bytes(path.read_bytes()[16:20], "big")


class Drawings:
    """Counts the sandboxed drawings this process starts; each takes at least ``delay``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, delay: float = 0.0) -> None:
        self.count = 0
        self.lock = threading.Lock()
        real_run = services.run_sandboxed

        def counted(*args: Any, **kwargs: Any) -> Any:
            with self.lock:
                self.count += 1
            return real_run(*args, **kwargs)

        def slow(data: bytes, number: int, **kwargs: Any) -> list[bytes]:
            time.sleep(delay)  # in the sandboxed child
            return untrusted.render_checked(data, number, **kwargs)

        monkeypatch.setattr(services, "run_sandboxed", counted)
        monkeypatch.setattr(services, "render_checked", slow)


def in_threads(count: int, work: Any) -> list[Any]:
    """``work(i)`` in ``count`` threads started together; their results in order."""
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:  # reported below
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


# -- the render job ----------------------------------------------------------------------------


def test_an_upload_gets_every_page_drawn_at_both_sizes_by_the_render_job(prerender, pathology_pdf):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)

    assert jobs.drain_background(60)
    render = ImageRender.objects.get(document=document)
    assert render.status == ImageRender.Status.DONE
    assert (render.pages_drawn, render.pages_failed, render.attempts) == (3, 0, 1)
    assert render.error_code == "" and render.seconds is not None
    assert cached(document) == [f"{n}-{dpi}.png" for n in (1, 2, 3) for dpi in (150, 18)]
    folder = Path(prerender.MEDIA_ROOT) / "page-images" / str(document.pk)
    assert png_width(folder / "1-150.png") == round(8.5 * 150)  # a letter page
    assert png_width(folder / "1-18.png") == round(8.5 * 18)


def test_the_upload_does_not_wait_for_the_drawing(prerender, pathology_pdf, monkeypatch):
    """Without Redis the job runs in a background thread: the upload answers once the file is
    read into pages, while the pages are still being drawn."""
    started, release = threading.Event(), threading.Event()
    real = services.page_images_render

    def held(*, document: Document) -> tuple[int, int]:
        started.set()
        release.wait(30)
        return real(document=document)

    monkeypatch.setattr(services, "page_images_render", held)
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)

    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert started.wait(10)
    assert ImageRender.objects.get(document=document).status == ImageRender.Status.RUNNING
    release.set()
    assert jobs.drain_background(60)
    assert ImageRender.objects.get(document=document).status == ImageRender.Status.DONE


def test_the_render_job_skips_what_is_drawn_and_runs_once_per_queueing(prerender, monkeypatch):
    document = stored()
    drawings = Drawings(monkeypatch)
    # A reviewer opened page 2 before the job came.
    assert services.page_image(document=document, number=2).name is not None
    services.page_images_queue(document_ids=[document.pk])
    assert jobs.drain_background(60)

    render = ImageRender.objects.get(document=document)
    assert (render.status, render.pages_drawn) == (ImageRender.Status.DONE, 2)
    assert drawings.count == 3  # one per page, both sizes each
    assert tasks.render_page_images(str(document.pk)) == "skipped"  # a duplicate delivery
    services.page_images_queue(document_ids=[document.pk])  # queued again: nothing to draw
    assert jobs.drain_background(60)
    assert ImageRender.objects.get(document=document).pages_drawn == 0
    assert drawings.count == 3


def test_a_render_job_whose_worker_died_is_queued_again_by_the_recovery_pass(prerender):
    document = stored()
    ImageRender.objects.create(
        document=document,
        status=ImageRender.Status.RUNNING,
        attempts=1,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
    )

    assert jobs.recover()["render"]["requeued"] == 1
    assert jobs.drain_background(60)
    render = ImageRender.objects.get(document=document)
    assert (render.status, render.attempts, render.pages_drawn) == ("done", 2, 3)


def test_with_redis_a_worker_draws_the_pages_after_ingesting_them(
    prerender, pathology_pdf, redis_url
):
    document = services.document_create(filename="path.pdf", content=pathology_pdf, user=None)

    run_burst_worker(redis_url)

    render = ImageRender.objects.get(document=document)
    assert (render.status, render.pages_drawn) == (ImageRender.Status.DONE, 3)
    assert len(cached(document)) == 6


def test_text_files_and_a_switched_off_prerender_queue_nothing(settings, pathology_pdf):
    settings.PAGE_IMAGES_PRERENDER = True
    services.document_create(filename="note.txt", content=b"Clinic note.\n", user=None)
    settings.PAGE_IMAGES_PRERENDER = False
    services.document_create(filename="path.pdf", content=pathology_pdf, user=None)
    assert Document.objects.filter(status=Document.Status.READY).count() == 2
    assert not ImageRender.objects.exists()


# -- one drawing per page ----------------------------------------------------------------------


# Eight threads taking a row lease at once: SQLite's in-memory test database (shared cache)
# answers concurrent writers "table is locked" at once instead of waiting, as a database file
# (busy timeout) or PostgreSQL does.
@pytest.mark.postgres
def test_concurrent_requests_for_a_page_draw_it_once(monkeypatch):
    document = stored()
    drawings = Drawings(monkeypatch, delay=0.5)

    sizes = ["page", "thumb"] * 4
    images = in_threads(
        8, lambda i: services.page_image(document=document, number=1, size=sizes[i], wait=30)
    )

    assert drawings.count == 1
    assert all(image.name is not None and storage.exists(image.name) for image in images)
    assert {image.name.rsplit("/", 1)[1] for image in images} == {"1-150.png", "1-18.png"}


@pytest.mark.postgres  # threads writing one row at once: see above
def test_requests_during_the_render_job_wait_for_its_drawing_of_their_page(monkeypatch):
    document = stored()
    ImageRender.objects.create(document=document)
    drawings = Drawings(monkeypatch, delay=0.3)

    def work(i: int) -> Any:
        if i == 0:
            return tasks.render_page_images(str(document.pk))
        time.sleep(0.1)  # the job has taken page 1
        return services.page_image(document=document, number=1 + i % 3, wait=30)

    results = in_threads(7, work)

    assert results[0] == "done"
    assert all(image.name is not None for image in results[1:])
    assert drawings.count == 3  # one drawing per page, by the job or by a request
    assert ImageRender.objects.get(document=document).status == ImageRender.Status.DONE


def test_a_request_waits_at_most_the_bound_then_hears_the_page_is_being_drawn(
    monkeypatch, settings, reviewer
):
    from django.test import Client

    from tests.review.conftest import make_packet

    packet = make_packet()
    packet.document.file.save("doc.pdf", ContentFile(text_pdf([["PATHOLOGY"], ["GROSS"]])))
    Drawings(monkeypatch, delay=2.0)
    settings.PAGE_IMAGE_WAIT_SECONDS = 0.2
    drawer = threading.Thread(
        target=lambda: (
            services.page_image(document=packet.document, number=1),
            connections.close_all(),
        )
    )
    drawer.start()
    time.sleep(0.3)  # the drawer holds page 1

    started = time.monotonic()
    client = Client()
    client.force_login(reviewer)
    response = client.get(reverse("review:page_image", args=[packet.pk, 1]))
    waited = time.monotonic() - started
    drawer.join(30)

    assert response.status_code == 503
    assert response["X-Page-Image"] == "pending" and response["Retry-After"] == "2"
    assert response["Content-Type"] == "image/svg+xml"
    assert "Page 1 is still being drawn." in response.content.decode()
    assert waited < 1.5  # not the drawing's 2 s
    assert cached(packet.document) == ["1-150.png", "1-18.png"]


# -- failures remembered -----------------------------------------------------------------------


def test_a_page_that_cannot_be_drawn_is_remembered_and_not_drawn_again(monkeypatch):
    document = stored()
    drawings = Drawings(monkeypatch)
    real = services.render_checked

    def damaged_page_2(data: bytes, number: int, **kwargs: Any) -> list[bytes]:
        if number == 2:
            raise ValueError("PDFium cannot load page 2")
        return real(data, number, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(services, "render_checked", damaged_page_2)
    ImageRender.objects.create(document=document)

    assert tasks.render_page_images(str(document.pk)) == "done"
    render = ImageRender.objects.get(document=document)
    assert (render.pages_drawn, render.pages_failed) == (2, 1)
    assert Page.objects.get(document=document, number=2).image_error == "damaged"
    assert cached(document) == ["1-150.png", "1-18.png", "3-150.png", "3-18.png"]
    assert drawings.count == 3

    for size in ("page", "thumb", "page"):
        image = services.page_image(document=document, number=2, size=size, wait=1)
        assert (image.name, image.error) == (None, "damaged")
    services.page_images_queue(document_ids=[document.pk])
    assert jobs.drain_background(60)
    assert ImageRender.objects.get(document=document).pages_failed == 1
    assert drawings.count == 3  # neither the requests nor the job drew it again


def test_a_page_over_the_memory_limit_is_remembered_with_its_code(settings):
    from benchmarks.hostile import content_stream_bomb

    settings.SANDBOX_RENDER_MEMORY_MB = 64
    settings.SANDBOX_RENDER_SECONDS = 3
    document = ready_document("A page that draws a bomb.", sha="f")
    document.file.save("doc.pdf", ContentFile(content_stream_bomb(expanded_bytes=256 << 20)))

    image = services.page_image(document=document, number=1)

    # PDFium either meets the limit (memory) or aborts under it (crashed).
    assert image.name is None and image.error in {"memory", "crashed", "cpu", "timeout"}
    assert Page.objects.get(document=document).image_error == image.error
    assert cached(document) == []


# -- the images --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=False)
def test_a_grey_page_is_kept_as_grey_and_a_coloured_one_in_colour():
    from documents.images import render_page_pngs
    from tests.documents.conftest import drawn_pdf

    def red_box(canvas: Any) -> None:
        canvas.setFillColorRGB(0.8, 0.1, 0.1)
        canvas.rect(100, 500, 200, 100, fill=1)

    grey = render_page_pngs(text_pdf([["PATHOLOGY REPORT"]]), 1, dpis=[150, 18])
    colour = render_page_pngs(drawn_pdf(red_box), 1, dpis=[18])
    # The PNG header's colour type: 0 is grey, 2 is RGB.
    assert [png[25] for png in grey] == [0, 0]
    assert colour[0][25] == 2
    assert [int.from_bytes(png[16:20], "big") for png in grey] == [1275, 153]


def test_render_pages_draws_what_older_documents_lack_and_retries_failures_when_asked(
    monkeypatch,
):
    from io import StringIO

    from django.core.management import call_command

    older = stored()  # ingested before the render job existed: no ImageRender row
    Page.objects.filter(document=older, number=3).update(image_error="timeout")
    drawings = Drawings(monkeypatch)

    out = StringIO()
    call_command("render_pages", stdout=out)
    assert "1 document(s) queued" in out.getvalue()
    assert ImageRender.objects.get(document=older).pages_failed == 1
    assert drawings.count == 2
    call_command("render_pages", stdout=StringIO())  # nothing missing now
    assert drawings.count == 2

    call_command("render_pages", "--retry-failed", stdout=out)
    assert "1 failed page(s) to draw again" in out.getvalue()
    assert drawings.count == 3
    assert Page.objects.get(document=older, number=3).image_error == ""
    assert len(cached(older)) == 6


def test_a_background_timeout_is_left_to_the_first_request_which_remembers_its_own(
    monkeypatch, settings
):
    """Drawing ahead runs niced: a page that runs out of wall-clock time there may have met the
    machine's load rather than its own weight, so only a request's timeout is remembered."""
    settings.SANDBOX_RENDER_SECONDS = 1
    document = stored([["ONE PAGE"]])
    Drawings(monkeypatch, delay=3)
    ImageRender.objects.create(document=document)

    assert tasks.render_page_images(str(document.pk)) == "done"
    render = ImageRender.objects.get(document=document)
    assert (render.pages_drawn, render.pages_failed) == (0, 0)
    assert Page.objects.get(document=document).image_error == ""

    image = services.page_image(document=document, number=1)
    assert image.error == "timeout"
    assert Page.objects.get(document=document).image_error == "timeout"
