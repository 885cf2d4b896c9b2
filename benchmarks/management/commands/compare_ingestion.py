from __future__ import annotations

import io
import json
import re
import time
from pathlib import Path
from typing import Any

import pdfplumber
from django.core.management.base import BaseCommand, CommandError, CommandParser

from documents.pages import PageContent, UnreadableDocument, extract_pdf, layout_page
from documents.pdftext import Line, PageGeometry
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext
from engine.verifiers import v4_grounding

_SPACE = re.compile(r"\s+")


def normalised_paragraphs(page: PageContent) -> list[str]:
    return [_SPACE.sub(" ", p).strip() for p in page.paragraphs]


def plumber_pages(data: bytes) -> list[PageContent]:
    """The reference: every page read by pdfplumber alone (pdfminer's characters, grouped by
    pdfplumber's ``extract_text_lines``, its ruled tables), laid out into paragraphs by the
    same rules as the reader's pages (documents.pages.layout_page). No OCR, no word boxes."""
    pages = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
            lines = [
                Line(text=item["text"], x0=item["x0"], top=item["top"], bottom=item["bottom"])
                for item in page.extract_text_lines(strip=True)
            ]
            tables = [t.bbox for t in page.find_tables()] if (page.lines or page.rects) else []
            geometry = PageGeometry(bbox=page.bbox, width=page.width, height=page.height)
            pages.append(layout_page(number, lines, tables, geometry))
            page.close()
    return pages


def _timed(read: Any, data: bytes) -> tuple[list[PageContent], float]:
    started = time.perf_counter()
    pages = read(data)
    return pages, time.perf_counter() - started


class Command(BaseCommand):
    help = (
        "Read every PDF below a folder with Vetted's PDF reader (PDFium) and with pdfplumber "
        "alone, and print how many pages give the same paragraphs (after whitespace "
        "normalisation), the same block types, and whether V4 grounds the same evidence on both."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder")
        parser.add_argument("--json", dest="json_out", help="also write the figures here")
        parser.add_argument("--verbose-diff", action="store_true", help="print differing pages")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = Path(options["folder"])
        files = sorted(p for p in folder.rglob("*") if p.suffix.lower() == ".pdf")
        if not files:
            raise CommandError(f"No PDF below {folder}.")
        classifier = OfflineClassifier()
        pages_total = same_paragraphs = same_types = same_text = 0
        snippets = grounded_old = grounded_new = 0
        v4_issues_old = v4_issues_new = 0
        seconds = {"pdfplumber": 0.0, "pdfium": 0.0}
        differing: list[str] = []
        for path in files:
            data = path.read_bytes()
            try:
                old, old_s = _timed(plumber_pages, data)
                new, new_s = _timed(lambda d: extract_pdf(d, ocr=None, min_text_chars=0), data)
            except UnreadableDocument as exc:
                self.stderr.write(f"{path.name}: {exc.message}")
                continue
            seconds["pdfplumber"] += old_s
            seconds["pdfium"] += new_s
            for a, b in zip(old, new, strict=False):
                pages_total += 1
                same = normalised_paragraphs(a) == normalised_paragraphs(b)
                same_paragraphs += same
                same_types += same and a.block_types == b.block_types
                same_text += _SPACE.sub(" ", a.text).strip() == _SPACE.sub(" ", b.text).strip()
                if not same:
                    differing.append(f"{path.name} p.{a.number}")
            pages_total += abs(len(old) - len(new))
            # V4: the evidence the classifier quotes from the pdfplumber text, grounded on both.
            old_texts, new_texts = [p.text for p in old], [p.text for p in new]
            if not any(t.strip() for t in old_texts):
                continue
            output = classifier.classify(old_texts)
            on_old = v4_grounding.verify(output, DocumentContext(pages=old_texts))
            on_new = v4_grounding.verify(output, DocumentContext(pages=new_texts))
            snippets += len(on_old.matches)
            grounded_old += sum(1 for m in on_old.matches if m["found"])
            grounded_new += sum(1 for m in on_new.matches if m["found"])
            v4_issues_old += len(on_old.issues)
            new_output = classifier.classify(new_texts)
            v4_issues_new += len(
                v4_grounding.verify(new_output, DocumentContext(pages=new_texts)).issues
            )
        share = same_paragraphs / pages_total if pages_total else 0.0
        figures = {
            "files": len(files),
            "pages": pages_total,
            "same_paragraphs": same_paragraphs,
            "same_paragraphs_share": round(share, 4),
            "same_paragraphs_and_block_types": same_types,
            "same_text": same_text,
            "v4_snippets": snippets,
            "v4_grounded_on_pdfplumber_text": grounded_old,
            "v4_grounded_on_pdfium_text": grounded_new,
            "v4_issues_pdfplumber": v4_issues_old,
            "v4_issues_pdfium": v4_issues_new,
            "seconds_pdfplumber": round(seconds["pdfplumber"], 2),
            "seconds_pdfium": round(seconds["pdfium"], 2),
        }
        self.stdout.write(f"{len(files)} PDF file(s), {pages_total} page(s)")
        self.stdout.write(
            f"same paragraphs (whitespace-normalised): {same_paragraphs}/{pages_total} "
            f"= {share:.1%}; with the same block types: {same_types}"
        )
        self.stdout.write(f"same page text: {same_text}/{pages_total}")
        self.stdout.write(
            f"V4: {snippets} evidence snippet(s) quoted from the pdfplumber text; grounded on "
            f"pdfplumber text {grounded_old}, on PDFium text {grounded_new}; V4 issues when each "
            f"reader's pages are classified and verified: pdfplumber {v4_issues_old}, "
            f"PDFium {v4_issues_new}"
        )
        self.stdout.write(
            f"reading time: pdfplumber {seconds['pdfplumber']:.1f} s, "
            f"PDFium {seconds['pdfium']:.1f} s (PDFium includes pdfplumber finding the ruled "
            "tables of pages with vector paths)"
        )
        if options["verbose_diff"]:
            for item in differing:
                self.stdout.write(f"differs: {item}")
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(figures, indent=2) + "\n")
