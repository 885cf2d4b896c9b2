"""What the page shows is what is classified (issue 25, finding 2): text a reader cannot see is
found at ingestion, each way it can be hidden, and left out of the page's text, paragraphs and
word boxes; the page keeps a record of it. Text a reader does see, however it is drawn, is
kept. A searchable scan's invisible layer is kept where OCR reads it on the page, and is hidden
where it does not."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pypdfium2 as pdfium
import pytest

from benchmarks.pdfgen import HIDDEN_KINDS, hidden_text_pdf
from documents import pages as reader
from documents.ocr import make_tesseract_engine, tesseract_available
from tests.documents.conftest import drawn_pdf

VISIBLE = "Visible words of the report"
SECRET = "Coding note document type surgical pathology report"


def read(content: Callable[[Any], None]) -> reader.PageContent:
    [page] = reader.extract_pdf(drawn_pdf(content), ocr=None)
    return page


def with_visible(draw: Callable[[Any], None]) -> Callable[[Any], None]:
    def content(pdf: Any) -> None:
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 720, VISIBLE)
        pdf.drawString(72, 700, "and a second line of the report that anyone reads")
        draw(pdf)

    return content


def assert_hidden(page: reader.PageContent, kind: str) -> None:
    assert VISIBLE in page.text
    assert "pathology" not in page.text
    assert all("pathology" not in p for p in page.paragraphs)
    assert [h["kind"] for h in page.hidden] == [kind]
    assert page.hidden[0]["words"] == len(SECRET.split())
    assert page.hidden_text == SECRET
    for x0, top, x1, bottom in page.hidden[0]["boxes"]:
        assert 0 <= x0 <= x1 <= 1 and 0 <= top <= bottom <= 1
    # Word boxes are those of the visible text only.
    assert len(page.boxes) == len(page.text.split())


def render_mode(mode: int) -> Callable[[Any], None]:
    def draw(pdf: Any) -> None:
        text = pdf.beginText(72, 600)
        text.setFont("Helvetica", 11)
        text.setTextRenderMode(mode)
        text.textLine(SECRET)
        pdf.drawText(text)

    return draw


def white(pdf: Any) -> None:
    pdf.setFillColorRGB(1, 1, 1)
    pdf.drawString(72, 600, SECRET)


def transparent(pdf: Any) -> None:
    pdf.setFillColorRGB(0, 0, 0, alpha=0)
    pdf.drawString(72, 600, SECRET)


def on_its_own_colour(pdf: Any) -> None:
    pdf.setFillColorRGB(0.2, 0.3, 0.6)
    pdf.rect(60, 590, 480, 24, fill=1, stroke=0)
    pdf.drawString(72, 600, SECRET)  # the same blue on the blue box


def below_the_page(pdf: Any) -> None:
    pdf.drawString(72, -60, SECRET)


def tiny(pdf: Any) -> None:
    pdf.setFont("Helvetica", 1)
    pdf.drawString(72, 600, SECRET)


def squeezed(pdf: Any) -> None:
    text = pdf.beginText(72, 600)
    text.setFont("Helvetica", 11)
    text.setHorizScale(5)  # 5% wide: 0.55 pt glyphs
    text.textLine(SECRET)
    pdf.drawText(text)


def under_an_image(pdf: Any) -> None:
    from PIL import Image
    from reportlab.lib.utils import ImageReader

    pdf.drawString(72, 600, SECRET)
    pdf.drawImage(ImageReader(Image.new("RGB", (8, 8), "white")), 60, 580, width=480, height=40)


def under_a_box(pdf: Any) -> None:
    pdf.drawString(72, 600, SECRET)
    pdf.setFillColorRGB(0, 0, 0)
    pdf.rect(60, 590, 480, 24, fill=1, stroke=0)  # a redaction bar drawn over it


@pytest.mark.parametrize(
    ("draw", "kind"),
    [
        (render_mode(3), "render_mode"),
        (render_mode(7), "render_mode"),
        (white, "background"),
        (transparent, "background"),
        (on_its_own_colour, "background"),
        (below_the_page, "outside_crop"),
        (tiny, "tiny"),
        (squeezed, "tiny"),
        (under_an_image, "under_image"),
        (under_a_box, "under_image"),
    ],
    ids=lambda value: value if isinstance(value, str) else getattr(value, "__name__", "mode"),
)
def test_text_a_reader_cannot_see_is_left_out_and_recorded(draw, kind):
    assert_hidden(read(with_visible(draw)), kind)


def test_text_outside_the_crop_box_is_hidden_though_inside_the_media_box():
    def draw(pdf: Any) -> None:
        pdf.drawString(72, 40, SECRET)  # in the margin the crop box cuts off
        pdf.setCropBox((0, 100, 612, 792))

    assert_hidden(read(with_visible(draw)), "outside_crop")


def grey(pdf: Any) -> None:
    pdf.setFillColorRGB(0.6, 0.6, 0.6)
    pdf.drawString(72, 600, "A grey footer line that anyone reads")


def white_on_a_banner(pdf: Any) -> None:
    pdf.setFillColorRGB(0.1, 0.2, 0.5)
    pdf.rect(60, 590, 480, 24, fill=1, stroke=0)
    pdf.setFillColorRGB(1, 1, 1)
    pdf.drawString(72, 600, "A white heading on a dark banner")


def on_a_shaded_row(pdf: Any) -> None:
    pdf.setFillColorRGB(0.93, 0.93, 0.93)
    pdf.rect(60, 590, 480, 24, fill=1, stroke=0)
    pdf.setFillColorRGB(0, 0, 0)
    pdf.drawString(72, 600, "Black text on a shaded table row")


def faint_watermark(pdf: Any) -> None:
    pdf.saveState()
    pdf.setFillColorRGB(0.67, 0.67, 0.67, alpha=0.5)
    pdf.setFont("Helvetica", 30)
    pdf.translate(150, 300)
    pdf.rotate(35)
    pdf.drawString(0, 0, "SAMPLE NOT FOR CLINICAL USE")
    pdf.restoreState()


def over_a_photo(pdf: Any) -> None:
    from PIL import Image
    from reportlab.lib.utils import ImageReader

    pdf.drawImage(ImageReader(Image.new("RGB", (8, 8), (200, 230, 255))), 60, 580, 480, 40)
    pdf.drawString(72, 600, "Black text printed over a pale picture")


def fake_bold(pdf: Any) -> None:
    for shift in (0, 0.3, 0.6):  # the same words drawn three times, a little apart
        pdf.drawString(72 + shift, 600, "Fake bold heading drawn three times")


def underlined(pdf: Any) -> None:
    pdf.drawString(72, 600, "Underlined words with a rule drawn after them")
    pdf.rect(72, 597, 250, 0.8, fill=1, stroke=0)


@pytest.mark.parametrize(
    "draw",
    [
        grey,
        white_on_a_banner,
        on_a_shaded_row,
        faint_watermark,
        over_a_photo,
        fake_bold,
        underlined,
    ],
)
def test_text_a_reader_sees_is_kept_however_it_is_drawn(draw):
    page = read(with_visible(draw))
    assert page.hidden == [] and page.hidden_text == ""
    assert VISIBLE in page.text


def test_stray_hidden_glyphs_are_boxed_but_not_counted_as_words():
    # Checkbox glyphs of a symbol font, drawn in white inside their boxes: no words.
    def boxes(pdf: Any) -> None:
        pdf.setFillColorRGB(1, 1, 1)
        for n, letter in enumerate("pre"):
            pdf.drawString(72 + 40 * n, 600, letter)

    page = read(with_visible(boxes))
    assert [(h["kind"], h["words"], len(h["boxes"])) for h in page.hidden] == [("background", 0, 3)]


@pytest.mark.parametrize("kind", HIDDEN_KINDS)
def test_the_benchmarks_hidden_stuffing_is_found_each_way(kind):
    lines = [SECRET, "Index terms adenocarcinoma margins lymphovascular invasion"]
    [page] = reader.extract_pdf(
        hidden_text_pdf(["CT ABDOMEN\n\nIMPRESSION: appendicitis."], lines, kind=kind), ocr=None
    )
    assert "appendicitis" in page.text and "adenocarcinoma" not in page.text
    assert [h["kind"] for h in page.hidden] == [kind]
    assert page.hidden[0]["words"] == 13


# -- searchable scans ---------------------------------------------------------------------------

SCAN_LINES = [
    "SURGICAL PATHOLOGY REPORT",
    "Specimen: left breast core biopsy at two o'clock.",
    "Final diagnosis: fibroadenoma, no atypia and no malignancy.",
    "Electronically signed by the pathologist on review.",
]


def _write(pdf: Any, lines: list[str], *, top: float = 700, mode: int = 0) -> None:
    text = pdf.beginText(72, top)
    text.setFont("Helvetica", 14, 22)
    text.setTextRenderMode(mode)
    for line in lines:
        text.textLine(line)
    pdf.drawText(text)


def searchable_scan(layer: list[str], *, extra: list[str] | None = None) -> bytes:
    """A page image of SCAN_LINES, with an invisible text layer of ``layer`` drawn where the
    scan's lines are (and ``extra`` lines lower down, over blank paper)."""
    from reportlab.lib.utils import ImageReader

    image_page = drawn_pdf(lambda pdf: _write(pdf, SCAN_LINES))
    document = pdfium.PdfDocument(image_page)
    picture = document[0].render(scale=200 / 72).to_pil().convert("L")
    document.close()
    png = io.BytesIO()
    picture.save(png, "PNG")

    def content(pdf: Any) -> None:
        pdf.drawImage(ImageReader(io.BytesIO(png.getvalue())), 0, 0, 612, 792)
        _write(pdf, layer, mode=3)
        if extra:
            _write(pdf, extra, top=300, mode=3)

    return drawn_pdf(content)


needs_tesseract = pytest.mark.skipif(not tesseract_available(), reason="tesseract missing")


@needs_tesseract
def test_a_searchable_scan_whose_layer_matches_the_page_keeps_its_layer():
    [page] = reader.extract_pdf(searchable_scan(SCAN_LINES), ocr=make_tesseract_engine())
    assert page.method == reader.TEXT_LAYER
    assert page.hidden == []
    assert "Final diagnosis: fibroadenoma" in page.text


@needs_tesseract
def test_a_searchable_scan_whose_layer_says_something_else_is_read_by_ocr():
    layer = [
        "CT CHEST WITHOUT CONTRAST",
        "Findings: a spiculated nodule in the right upper lobe.",
        "Impression: suspicious for primary lung malignancy.",
        "Recommend tissue sampling and a PET examination.",
    ]
    [page] = reader.extract_pdf(searchable_scan(layer), ocr=make_tesseract_engine())
    assert page.method == reader.OCR
    assert "fibroadenoma" in page.text and "nodule" not in page.text
    assert [h["kind"] for h in page.hidden] == ["disagrees"]
    assert "spiculated nodule" in page.hidden_text


@needs_tesseract
def test_stuffing_added_to_a_scans_layer_over_blank_paper_is_hidden_and_the_rest_kept():
    stuffing = [
        "Coding note: document type = radiology report",
        "Index terms: CT, MRI, ultrasound, axial, coronal, contrast",
    ]
    [page] = reader.extract_pdf(
        searchable_scan(SCAN_LINES, extra=stuffing), ocr=make_tesseract_engine()
    )
    assert page.method == reader.TEXT_LAYER
    assert "fibroadenoma" in page.text and "radiology" not in page.text
    assert [h["kind"] for h in page.hidden] == ["disagrees"]
    assert page.hidden[0]["words"] >= 10
