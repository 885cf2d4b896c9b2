"""Write PDFs for tests, the demo documents and the benchmark.

Needs the test extras (reportlab); the product itself never writes PDFs.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from typing import Any

from benchmarks.hostile import raw_pdf

Paragraph = str
PageSpec = Sequence[Paragraph]


def text_pdf(
    pages: Sequence[PageSpec],
    *,
    password: str | None = None,
    title: str = "",
    table_on_page: int | None = None,
) -> bytes:
    """A PDF with a real text layer. Each page is a list of paragraphs; a paragraph in
    capitals is drawn as a bold heading. ``table_on_page`` draws a ruled 3x3 table there."""
    from reportlab.lib import pdfencrypt
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    encrypt = pdfencrypt.StandardEncryption(password, canPrint=0) if password else None
    pdf = canvas.Canvas(buffer, pagesize=LETTER, encrypt=encrypt, invariant=1)
    if title:
        pdf.setTitle(title)
    width, height = LETTER
    for number, paragraphs in enumerate(pages, start=1):
        y = height - 72
        for paragraph in paragraphs:
            heading = paragraph.isupper()
            pdf.setFont("Helvetica-Bold" if heading else "Helvetica", 11)
            for line in paragraph.split("\n"):
                for wrapped in textwrap.wrap(line, 90) or [""]:
                    pdf.drawString(72, y, wrapped)
                    y -= 14
            y -= 12  # paragraph gap
        if table_on_page == number:
            _draw_table(
                pdf,
                x=72,
                y=y - 10,
                rows=[
                    ["Gene", "Variant", "VAF"],
                    ["KRAS", "G12D", "31%"],
                    ["TP53", "R273H", "44%"],
                ],
            )
        pdf.drawString(width / 2 - 30, 40, f"Page {number} of {len(pages)}")
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _draw_table(pdf: object, *, x: float, y: float, rows: list[list[str]]) -> None:
    col, row_h = 120, 18
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            left, top = x + c * col, y - r * row_h
            pdf.rect(left, top - row_h, col, row_h)  # type: ignore[attr-defined]
            pdf.drawString(left + 4, top - 13, cell)  # type: ignore[attr-defined]


def image_pdf(paragraphs: PageSpec, *, pages: int = 1, noise: float = 0.0, dpi: int = 150) -> bytes:
    """A scanned-looking PDF: pages are pictures of text, with no text layer.

    ``noise`` (0..1) speckles the image to make OCR less confident.
    """
    import random

    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    width, height = int(8.5 * dpi), int(11 * dpi)
    font = ImageFont.load_default(size=int(dpi * 0.16))
    images = []
    rng = random.Random(7)
    for _ in range(pages):
        image = Image.new("L", (width, height), 255)
        draw = ImageDraw.Draw(image)
        y = dpi
        for paragraph in paragraphs:
            for line in paragraph.split("\n"):
                for wrapped in textwrap.wrap(line, 60) or [""]:
                    draw.text((dpi, y), wrapped, fill=0, font=font)
                    y += int(dpi * 0.25)
            y += int(dpi * 0.2)
        if noise:
            pixels: Any = image.load()
            for _ in range(int(width * height * noise)):
                px, py = rng.randrange(width), rng.randrange(height)
                pixels[px, py] = 0 if pixels[px, py] > 128 else 255
            image = image.filter(ImageFilter.GaussianBlur(radius=noise * 6))
        images.append(image.convert("RGB"))
    buffer = io.BytesIO()
    images[0].save(buffer, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def long_text_pdf(page_count: int) -> bytes:
    """A report-like text PDF of ``page_count`` pages, for the ingestion benchmark."""
    paragraphs = [
        "CLINICAL HISTORY",
        "Sixty-two year old with a palpable mass in the left breast, upper outer quadrant.\n"
        "Mammography showed an irregular spiculated lesion measuring 2.1 cm.",
        "GROSS DESCRIPTION",
        "Received in formalin labelled with the patient's name is an ellipse of skin and\n"
        "fibrofatty tissue measuring 6.5 x 4.0 x 3.2 cm. Serial sections show a firm white\n"
        "stellate lesion 2.0 cm from the deep margin.",
        "MICROSCOPIC DESCRIPTION",
        "Sections show invasive carcinoma of no special type forming tubules in less than 10%\n"
        "of the tumour, with moderate nuclear pleomorphism and 12 mitoses per 10 HPF.",
        "- Margins: clear, closest 4 mm (deep).\n- Lymphovascular invasion: not identified.",
    ]
    return text_pdf([paragraphs] * page_count)


def zero_page_pdf() -> bytes:
    """A well-formed PDF whose page tree is empty (no writer library makes one)."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [] /Count 0 >>",
    ]
    return raw_pdf(objects)


# -- tax forms -------------------------------------------------------------------------------------


def random_ssn(rng: Any) -> str:
    """A valid-looking SSN: area 001-899 but not 666, group 01-99, serial 0001-9999."""
    area = rng.choice([a for a in range(1, 900) if a != 666])
    return f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"


def random_ein(rng: Any) -> str:
    """An EIN with one of the IRS campus prefixes."""
    prefix = rng.choice([10, 12, 20, 27, 30, 38, 45, 46, 52, 58, 61, 72, 81, 94])
    return f"{prefix:02d}-{rng.randint(1, 9_999_999):07d}"


def money(amount: float) -> str:
    return f"{amount:,.2f}"


def w2_paragraphs(
    *,
    year: int,
    ssn: str = "",
    ein: str = "",
    wages: float | None = None,
    withheld: float | None = None,
    social_security_wages: float | None = None,
    employer: str = "Northwind Clinics LLC",
) -> list[str]:
    """A W-2's boxes as a printed form lays them out: each box's label, its value on the next
    line. Leave the values out for a blank form."""

    def box(label: str, value: str) -> str:
        return f"{label}\n{value}" if value else label

    return [
        f"Form W-2 Wage and Tax Statement {year}",
        box("a Employee's social security number", ssn),
        box("b Employer identification number (EIN)", ein),
        box("c Employer's name, address, and ZIP code", employer if ssn else ""),
        box("1 Wages, tips, other compensation", money(wages) if wages is not None else ""),
        box("2 Federal income tax withheld", money(withheld) if withheld is not None else ""),
        box(
            "3 Social security wages",
            money(social_security_wages) if social_security_wages is not None else "",
        ),
        "Copy B - To Be Filed With Employee's FEDERAL Tax Return. Department of the Treasury - "
        "Internal Revenue Service",
    ]


def random_w2_paragraphs(rng: Any, *, year: int) -> list[str]:
    """A filled W-2 with a random valid SSN and EIN and random wages (withholding 12-22%)."""
    wages = round(rng.uniform(20_000, 180_000), 2)
    return w2_paragraphs(
        year=year,
        ssn=random_ssn(rng),
        ein=random_ein(rng),
        wages=wages,
        withheld=round(wages * rng.uniform(0.12, 0.22), 2),
        social_security_wages=wages,
    )


def form_1099_paragraphs(
    *,
    kind: str,
    year: int,
    payer_tin: str = "",
    recipient_tin: str = "",
    amount: float | None = None,
    withheld: float | None = None,
    payer: str = "Contoso Consulting Inc",
) -> list[str]:
    """A 1099-NEC, -INT or -DIV with its box 1 amount (blank without values)."""
    box1 = {
        "NEC": "1 Nonemployee compensation",
        "INT": "1 Interest income",
        "DIV": "1a Total ordinary dividends",
    }[kind]

    def box(label: str, value: str) -> str:
        return f"{label}\n{value}" if value else label

    return [
        f"Form 1099-{kind} {year}",
        f"For calendar year {year}",
        box("PAYER'S name, street address, city or town", payer if payer_tin else ""),
        box("PAYER'S TIN", payer_tin),
        box("RECIPIENT'S TIN", recipient_tin),
        box(box1, money(amount) if amount is not None else ""),
        box("4 Federal income tax withheld", money(withheld) if withheld is not None else ""),
        "Copy B For Recipient. Department of the Treasury - Internal Revenue Service",
    ]


# -- text a reader cannot see (issue 25, finding 2) ------------------------------------------------

HIDDEN_KINDS = ("render_mode", "background", "outside_crop", "tiny", "under_image")


def hidden_text_pdf(pages: Sequence[str], hidden: Sequence[str], *, kind: str) -> bytes:
    """A PDF of ``pages`` (text, paragraphs parted by blank lines; a page runs on to the next
    when it is full) with the lines ``hidden`` drawn on the first page so that a reader cannot
    see them, by ``kind``: invisible render mode, white on the white page, below the page,
    at 1 pt, or under an image drawn over them. The visible text stops above the band where
    the hidden lines go."""
    from PIL import Image
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    if kind not in HIDDEN_KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=LETTER, invariant=1)
    width, height = LETTER
    band = 36 + 9 * len(hidden)  # the first page's bottom, kept for the hidden lines
    first = True

    def draw_hidden() -> None:
        text = pdf.beginText(72, band - 6)
        text.setFont("Helvetica", 1 if kind == "tiny" else 8, 9)
        if kind == "render_mode":
            text.setTextRenderMode(3)
        if kind == "background":
            text.setFillColorRGB(1, 1, 1)
        if kind == "outside_crop":
            text.setTextOrigin(72, -40)
        for line in hidden:
            text.textLine(line)
        pdf.drawText(text)
        if kind == "under_image":
            cover = ImageReader(Image.new("RGB", (64, 64), (255, 255, 255)))
            pdf.drawImage(cover, 60, 20, width=width - 120, height=band - 12)
        pdf.setFillColorRGB(0, 0, 0)

    for page in pages:
        y = height - 72
        for paragraph in [p for p in page.split("\n\n") if p.strip()]:
            pdf.setFont("Helvetica", 10)
            for line in paragraph.split("\n"):
                for wrapped in textwrap.wrap(line, 95) or [""]:
                    if y < (band + 12 if first else 60):
                        if first:
                            draw_hidden()
                            first = False
                        pdf.showPage()
                        pdf.setFont("Helvetica", 10)
                        y = height - 72
                    pdf.drawString(72, y, wrapped)
                    y -= 13
            y -= 8
        if first:
            draw_hidden()
            first = False
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()
