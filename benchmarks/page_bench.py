"""What `bench_pages` measures: how soon a packet page shows its first screen (the page and
the page images in view), in Chromium, and how long one page image takes, with the page images
drawn ahead (the render job) and without (drawn on first request).

Shared by the command and its test: both give a base URL of a server that serves this
database and this MEDIA_ROOT (the command starts `runserver`, as the quick start does; the test
uses pytest-django's live server).

First paint here is the later of the first contentful paint and the moment the last page image
in the first screen (1280x800) has arrived: the page as a clinician first sees it whole. Each
measurement is a fresh browser context (nothing cached), logged in beforehand.
"""

from __future__ import annotations

import os
import statistics
import time
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connections

from documents.models import Document, Page
from documents.services import page_images_delete, page_images_render

VIEWPORT = {"width": 1280, "height": 800}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# A 7-page bundle as a fax brings it (fictional patient written for Vetted): a cover sheet, a
# referral letter, a two-page pathology report, a CT report and a two-page genomic report.
HEADER = "Lakeside Demo Clinic · Patient: DEMO, Jordan · MRN DEMO-0007 · DOB 02/02/1962"
BUNDLE_PAGES = [
    [
        "FAX COVER SHEET",
        "To: Thoracic Oncology Intake, Lakeside Demo Clinic. Fax: (555) 010-4400",
        "From: Demo Community Hospital, Health Information Management. Fax: (555) 010-5500",
        "Pages: 7 including cover. Re: records for DEMO, Jordan, new patient referral.",
        "CONFIDENTIALITY NOTICE",
        "This facsimile contains confidential health information intended only for the named "
        "recipient. If you received it in error, notify the sender and destroy all copies.",
    ],
    [
        "REFERRAL LETTER",
        HEADER,
        "Dear colleague,",
        "Thank you for seeing Jordan Demo, a 63-year-old former smoker (40 pack-years) with a "
        "right upper lobe mass found on a CT done for persistent cough. Bronchoscopic biopsy "
        "confirmed adenocarcinoma; molecular testing is enclosed. He remains active, ECOG 1, "
        "and would like to discuss treatment options close to home.",
        "Medications: atorvastatin 20 mg daily, tiotropium inhaler. Allergies: penicillin (rash).",
        "Kind regards, Demo Community Hospital, Pulmonary Medicine",
    ],
    [
        "SURGICAL PATHOLOGY REPORT",
        HEADER,
        "Specimen received: Right upper lobe, endobronchial ultrasound-guided biopsy; station 4R "
        "lymph node, fine needle aspiration.",
        "CLINICAL HISTORY",
        "Right upper lobe mass, 3.4 cm, with enlarged right paratracheal node on CT.",
        "FINAL DIAGNOSIS",
        "A. Right upper lobe, biopsy: invasive adenocarcinoma, acinar predominant, with a "
        "solid component.\nB. Lymph node, station 4R, FNA: metastatic adenocarcinoma, "
        "consistent with lung primary.",
        "GROSS DESCRIPTION",
        "A. Received in formalin are four tan cores, 0.3 to 0.9 cm, entirely submitted in "
        "cassette A1. B. Received are two cytology slides and a cell block.",
    ],
    [
        "MICROSCOPIC DESCRIPTION",
        "The cores show malignant glands in an acinar pattern with areas of solid growth. The "
        "node aspirate shows cohesive clusters of malignant epithelial cells.",
        "IMMUNOHISTOCHEMISTRY",
        "- TTF-1: positive in tumour cells.\n- Napsin A: positive.\n- p40: negative.\n"
        "- PD-L1 (22C3): tumour proportion score 60%.",
        "COMMENT",
        "The findings support a lung adenocarcinoma with nodal metastasis. Tissue was sent for "
        "comprehensive genomic profiling.",
        "Electronically signed by: Demo Pathologist, MD. Date: 05/02/2025.",
    ],
    [
        "CT CHEST WITH CONTRAST",
        HEADER,
        "CLINICAL INDICATION",
        "Staging of newly diagnosed lung adenocarcinoma.",
        "TECHNIQUE",
        "Axial images of the chest and upper abdomen after intravenous contrast, with coronal "
        "and sagittal reformats.",
        "FINDINGS",
        "Lungs: Spiculated 3.4 cm mass in the right upper lobe abutting the minor fissure. No "
        "other nodules.\nMediastinum: Right paratracheal node 1.6 cm in short axis. No "
        "pericardial effusion.\nUpper abdomen: Adrenal glands normal. No liver lesion.",
        "IMPRESSION",
        "1. Right upper lobe mass with right paratracheal adenopathy, at least cT2aN2.\n"
        "2. No evidence of distant metastasis within the imaged field.",
        "Dictated by: Demo Radiologist, MD.",
    ],
    [
        "COMPREHENSIVE GENOMIC PROFILING REPORT",
        HEADER,
        "Specimen: Right upper lobe biopsy, tumour content 40%. Test: targeted NGS panel, 500 "
        "genes, DNA and RNA.",
        "SUMMARY OF FINDINGS",
        "Microsatellite status: MSS (microsatellite stable).\nTumor mutational burden (TMB): "
        "9 mutations/Mb.",
        "GENOMIC ALTERATIONS",
        "EGFR L858R, variant allele frequency (VAF) 31%: pathogenic.\nTP53 R273H, VAF 36%: "
        "pathogenic.",
    ],
    [
        "THERAPY ASSOCIATIONS",
        "EGFR L858R: osimertinib (FDA approved, first line for EGFR-mutated non-small cell lung "
        "cancer).",
        "VARIANTS OF UNKNOWN SIGNIFICANCE",
        "BRCA2 V2466A, VAF 49% (possibly germline; consider germline testing).",
        "METHODS",
        "Hybrid capture sequencing to a median depth of 700x; RNA fusion panel. Limit of "
        "detection 5% VAF. No fusions detected.",
    ],
]

VISIBLE_IMAGES_JS = """() => {
  const inView = (el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0
      && r.top < innerHeight && r.left < innerWidth;
  };
  if (document.readyState === 'loading') return null;
  const images = [...document.images].filter(inView);
  if (!images.length || !images.every((i) => i.complete)) return null;
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  if (!fcp) return null;
  const ends = images.map((i) => {
    const entry = performance.getEntriesByName(i.currentSrc || i.src)[0];
    return entry ? entry.responseEnd : performance.now();
  });
  return {
    html_ms: nav.responseEnd,
    fcp_ms: fcp.startTime,
    images_ms: Math.max(...ends),
    images: images.length,
    broken: images.filter((i) => !i.naturalWidth).length,
  };
}"""


def bundle_pdf() -> bytes:
    from benchmarks.pdfgen import text_pdf

    return text_pdf(BUNDLE_PAGES, title="Vetted bench_pages 7-page bundle (fictional)")


def p95(values: list[float]) -> float:
    return (
        statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]
    )


def summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(p95(values), 1),
        "max_ms": round(max(values), 1),
        "n": len(values),
    }


def clear_images(documents: Iterable[Document]) -> None:
    """Forget the drawn page images of ``documents`` (files and remembered failures): the state
    of a page no job has drawn."""
    for document in documents:
        page_images_delete(document=document)
        Page.objects.filter(document=document).exclude(image_error="").update(image_error="")


def prerender(documents: Iterable[Document]) -> float:
    """Draw every page image of ``documents`` now, as the render job does; seconds taken."""
    started = time.perf_counter()
    for document in documents:
        page_images_render(document=document)
    return time.perf_counter() - started


@dataclass
class Browser:
    """Chromium (Playwright) logged in as one user; each ``first_paint`` in a fresh context."""

    base: str
    username: str
    password: str
    playwright: Any = None
    browser: Any = None
    state: Any = None
    _async_unsafe: str | None = None

    def __enter__(self) -> Browser:
        from playwright.sync_api import sync_playwright

        # Playwright's sync API keeps an event loop open in this thread, beside which Django
        # refuses the ORM unless told it is safe (it is: the thread never awaits).
        self._async_unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        chromium = getattr(settings, "CHROMIUM_PATH", "") or "/usr/bin/chromium"
        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        context = self.browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(f"{self.base}/accounts/login/")
        page.fill("#id_username", self.username)
        page.fill("#id_password", self.password)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        if "/accounts/login/" in page.url:
            raise RuntimeError(f"could not log in to {self.base} as {self.username}")
        self.state = context.storage_state()
        context.close()
        return self

    def __exit__(self, *exc: object) -> None:
        self.browser.close()
        # While the loop runs, Django keeps this thread's connections in a context variable:
        # closed before the loop stops, or they outlive it.
        connections.close_all()
        self.playwright.stop()
        if self._async_unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = self._async_unsafe

    def cookie_header(self) -> str:
        return "; ".join(f"{c['name']}={c['value']}" for c in self.state["cookies"])

    def first_paint(self, path: str) -> dict[str, Any]:
        context = self.browser.new_context(viewport=VIEWPORT, storage_state=self.state)
        try:
            page = context.new_page()
            page.goto(self.base + path, wait_until="commit")
            handle = page.wait_for_function(VISIBLE_IMAGES_JS, polling=10, timeout=60_000)
            found: dict[str, Any] = handle.json_value()
        finally:
            context.close()
        found["first_paint_ms"] = max(found["fcp_ms"], found["images_ms"])
        return {k: round(v, 1) if isinstance(v, float) else v for k, v in found.items()}


def image_latencies(base: str, cookie: str, urls: list[str]) -> list[float]:
    """Milliseconds for each URL, requested one after another (each its own connection)."""
    values = []
    for url in urls:
        request = urllib.request.Request(base + url, headers={"Cookie": cookie})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
            if response.status != 200 or response.headers["Content-Type"] != "image/png":
                raise RuntimeError(f"{url}: {response.status} {response.headers['Content-Type']}")
        values.append((time.perf_counter() - started) * 1000)
    return values


@dataclass
class Subject:
    """One packet measured: its name in the figures, its page URL and page image URLs."""

    name: str
    document: Document
    packet_url: str
    image_urls: list[str] = field(default_factory=list)


def measure(
    *,
    browser: Browser,
    subjects: list[Subject],
    runs: int,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """First paint of each subject's packet page and the latency of every page image, without
    drawing ahead (every measurement starts from no image drawn) and with (all drawn first)."""
    documents = [s.document for s in subjects]
    figures: dict[str, Any] = {
        "runs": runs,
        "viewport": f"{VIEWPORT['width']}x{VIEWPORT['height']}",
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    pages_urls = [u for s in subjects for u in s.image_urls]
    thumb_urls = [f"{u}?size=thumb" for u in pages_urls]
    cookie = browser.cookie_header()
    for phase in ("without_prerender", "with_prerender"):
        paints: dict[str, list[dict[str, Any]]] = {s.name: [] for s in subjects}
        latency: dict[str, list[float]] = {"page": [], "thumb": []}
        drawing_s = 0.0
        for _ in range(runs):
            for subject in subjects:
                clear_images(documents)
                if phase == "with_prerender":
                    drawing_s += prerender(documents)
                paints[subject.name].append(browser.first_paint(subject.packet_url))
            for size, urls in (("page", pages_urls), ("thumb", thumb_urls)):
                clear_images(documents)
                if phase == "with_prerender":
                    prerender(documents)
                latency[size] += image_latencies(browser.base, cookie, urls)
        result: dict[str, Any] = {}
        for name, values in paints.items():
            result[name] = {
                "first_paint": summary([v["first_paint_ms"] for v in values]),
                "html_p50_ms": round(statistics.median(v["html_ms"] for v in values), 1),
                "fcp_p50_ms": round(statistics.median(v["fcp_ms"] for v in values), 1),
                "images_in_view": values[0]["images"],
                "broken_images": max(v["broken"] for v in values),
            }
        result["image_latency"] = {size: summary(values) for size, values in latency.items()}
        if phase == "with_prerender":
            result["prerender_seconds_per_run"] = round(drawing_s / runs, 3)
        figures[phase] = result
        log(_report(phase, result, subjects))
    figures["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    log(
        f"Load average before and after (1, 5, 15 min; {os.cpu_count()} CPUs): "
        f"{figures['load_average_before']}, {figures['load_average_after']}"
    )
    return figures


def _report(phase: str, result: dict[str, Any], subjects: list[Subject]) -> str:
    title = {
        "without_prerender": "Without pre-rendering (each image drawn on its first request)",
        "with_prerender": "With pre-rendering (the render job drew every page first)",
    }[phase]
    lines = [title + ":"]
    for s in subjects:
        r = result[s.name]
        fp = r["first_paint"]
        lines.append(
            f"  first paint, {s.name:<34} p50 {fp['p50_ms']:7.1f} ms  max {fp['max_ms']:7.1f} ms"
            f"  (HTML {r['html_p50_ms']:.0f} ms, first contentful paint {r['fcp_p50_ms']:.0f} ms,"
            f" {r['images_in_view']} images in view, n={fp['n']})"
        )
    for size, label in (("page", "viewer size"), ("thumb", "thumbnail")):
        lat = result["image_latency"][size]
        lines.append(
            f"  page image latency, {label:<23} p50 {lat['p50_ms']:7.1f} ms  p95 "
            f"{lat['p95_ms']:7.1f} ms  max {lat['max_ms']:7.1f} ms  (n={lat['n']})"
        )
    return "\n".join(lines)
