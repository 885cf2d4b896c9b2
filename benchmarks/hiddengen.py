"""Generated PDFs whose text layer says what the page does not show (issue 32, part 1).

Every ``METHODS`` entry hides lines of one document type's vocabulary on a page of another
type's text, the way an attacker steering a classifier would: drawn invisibly, in white, too
small, outside the crop box, under an image, a fill, a partial cover or a thick white stroke,
outside a clipping path, under an annotation (FreeText, Square, Stamp, a form field), in an
optional-content layer switched off, or drawn as benign glyphs through a font whose ToUnicode
map lies. Written as raw PDF bytes (no library), so each keeps exactly its defect; the lying
font embeds reportlab's own Vera.ttf with a CIDToGIDMap, so that any text can be drawn while
any other text is extracted.

``cases()`` enumerates templates x methods x variants x positions with a stable ``key``; the
held-out half (``held_out(key)``) is decided by the key's hash, fixed before the reading check
was built, and never looked at while building it.
"""

from __future__ import annotations

import hashlib
import os
import textwrap
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

PAGE_WIDTH, PAGE_HEIGHT = 612, 792
SIZE, LEADING, HIDDEN_SIZE = 10, 13, 8

# Each hiding method and how many variants it has (what a variant changes is in _hide).
METHODS: dict[str, int] = {
    "render_mode": 2,  # Tr 3 (invisible), Tr 7 (clip only)
    "background": 2,  # white, a near-white grey
    "tiny": 2,  # a 1 pt font; an 8 pt font under a 0.1 text matrix
    "outside_crop": 2,  # below the media box; in a margin the crop box cuts off
    "under_image": 2,  # a white image over it; a page-coloured one
    "under_fill": 2,  # a white rectangle over it; a shape in the page's colour
    "partial_cover": 3,  # white bars over 70, 80, 90 % of each line's height
    "white_stroke": 3,  # white strokes 6, 9, 12 pt wide along each line
    "clip": 3,  # a clip elsewhere; an empty clip; a clip keeping 15 % of the line
    "annotation": 4,  # FreeText, Square, Stamp, Widget drawn over it
    "optional_content": 2,  # in an OCG that is OFF; under an OCMD /AllOff of an ON group
    "tounicode_lie": 2,  # benign glyphs whose ToUnicode says the hidden lines; per-char CIDs
}


def held_out(key: str) -> bool:
    """Half the cases, chosen by their key's hash (fixed before building the check)."""
    return hashlib.sha256(("hidden-held-out:" + key).encode()).digest()[0] % 2 == 0


# -- templates: documents of one type, and hidden lines of another ---------------------------------

TEMPLATES: dict[str, tuple[str, tuple[str, ...]]] = {
    "clinic_followup": (
        "clinical_note",
        (
            "FAMILY MEDICINE CLINIC - OFFICE VISIT",
            "Patient: Jordan Ellis   DOB: 03/14/1961   Visit date: 02/11/2025",
            "CHIEF COMPLAINT: Follow-up of hypertension and type 2 diabetes.",
            "HISTORY OF PRESENT ILLNESS: The patient is a 63-year-old man who presents for "
            "routine follow-up. He reports good adherence to lisinopril and metformin and denies "
            "chest pain, shortness of breath or dizziness.",
            "PHYSICAL EXAM: BP 132/78, pulse 72, afebrile. Lungs clear. Heart regular rate.",
            "ASSESSMENT AND PLAN: Hypertension, controlled. Diabetes, A1c 6.9. Continue current "
            "medications, recheck labs in three months. Return to clinic in 3 months.",
            "Electronically signed by Maria Chen, MD",
        ),
    ),
    "er_note": (
        "clinical_note",
        (
            "EMERGENCY DEPARTMENT PHYSICIAN NOTE",
            "Name: Priya Raman   MRN: 448120   Date of service: 09/02/2024",
            "HPI: 41-year-old woman with two days of right lower quadrant pain, nausea and low "
            "grade fever. No vomiting. Last menstrual period two weeks ago.",
            "EXAM: Tender at McBurney point with guarding. Abdomen otherwise soft.",
            "MEDICAL DECISION MAKING: Concern for appendicitis. Surgery consulted, IV fluids "
            "and analgesia given. Patient admitted to the surgical service.",
            "Disposition: admitted. Condition: stable.",
        ),
    ),
    "discharge_summary": (
        "clinical_note",
        (
            "DISCHARGE SUMMARY",
            "Admission date: 05/03/2024   Discharge date: 05/07/2024",
            "Hospital course: admitted with community acquired pneumonia, treated with "
            "ceftriaxone and azithromycin, improved on day three, weaned to room air.",
            "Discharge medications: amoxicillin-clavulanate for five days, albuterol as needed.",
            "Follow-up: primary care in one week. Return for fever or shortness of breath.",
            "Attending physician: Samuel Okafor, MD",
        ),
    ),
    "surgical_pathology": (
        "pathology",
        (
            "SURGICAL PATHOLOGY REPORT",
            "Patient: Helen Marsh   Accession: S24-01872   Collected: 01/22/2024",
            "SPECIMEN: Right breast, core needle biopsy, 12 o'clock.",
            "GROSS DESCRIPTION: Received in formalin are three tan cores, 1.2 cm in aggregate, "
            "entirely submitted in one cassette.",
            "MICROSCOPIC DESCRIPTION: Sections show infiltrating ductal carcinoma with "
            "moderate nuclear pleomorphism and scattered mitoses.",
            "FINAL DIAGNOSIS: Invasive ductal carcinoma, Nottingham grade 2.",
            "Electronically signed out by Rafael Ortiz, MD, pathologist",
        ),
    ),
    "cytology": (
        "pathology",
        (
            "CYTOPATHOLOGY REPORT",
            "Patient: Omar Haddad   Case: C24-3391   Received: 07/18/2024",
            "SPECIMEN: Thyroid, left lobe nodule, fine needle aspiration.",
            "ADEQUACY: Satisfactory for evaluation.",
            "INTERPRETATION: Benign follicular nodule (Bethesda category II). Colloid and "
            "benign follicular cells in macrofollicular groups.",
            "Cytotechnologist: L. Park   Pathologist: Dana Whitfield, MD",
        ),
    ),
    "chest_ct": (
        "radiology",
        (
            "RADIOLOGY REPORT - CT CHEST WITH CONTRAST",
            "Patient: Grace Lin   Exam date: 11/05/2024   Accession: RAD-77812",
            "CLINICAL HISTORY: Cough for six weeks, former smoker.",
            "TECHNIQUE: Axial images of the chest after intravenous contrast, with coronal "
            "and sagittal reformats.",
            "FINDINGS: A 9 mm solid nodule in the right upper lobe. No consolidation, effusion "
            "or pneumothorax. Heart size normal. No mediastinal lymphadenopathy.",
            "IMPRESSION: Right upper lobe nodule, follow-up CT in three months recommended.",
            "Dictated by Victor Anand, MD, radiologist",
        ),
    ),
    "knee_mri": (
        "radiology",
        (
            "MRI LEFT KNEE WITHOUT CONTRAST",
            "Patient: Carlos Mendes   Date: 06/30/2024",
            "INDICATION: Twisting injury, medial joint line pain.",
            "FINDINGS: Oblique tear of the posterior horn of the medial meniscus. Anterior "
            "cruciate ligament intact. Small joint effusion. Mild chondral thinning.",
            "IMPRESSION: Medial meniscal tear. Small effusion.",
            "Radiologist: Nina Petrov, MD",
        ),
    ),
    "tumor_ngs": (
        "genomic",
        (
            "COMPREHENSIVE GENOMIC PROFILING REPORT",
            "Patient: Alan Brooks   Specimen: lung, left lower lobe   Report date: 03/09/2024",
            "Genomic findings: EGFR exon 19 deletion (VAF 34%), TP53 R273H (VAF 29%).",
            "Tumor mutational burden: 6 mutations per megabase. Microsatellite status: stable.",
            "Therapies with clinical benefit: osimertinib, erlotinib, gefitinib.",
            "Method: hybrid capture next-generation sequencing of 324 genes.",
            "Laboratory director: Irene Walsh, PhD",
        ),
    ),
    "germline_panel": (
        "genomic",
        (
            "HEREDITARY CANCER GERMLINE TESTING RESULTS",
            "Patient: Ruth Adams   DOB: 08/21/1975   Collected: 04/12/2024",
            "RESULT: POSITIVE. One pathogenic variant identified.",
            "Gene: BRCA2   Variant: c.5946delT (p.Ser1982fs)   Zygosity: heterozygous",
            "Interpretation: This variant is associated with hereditary breast and ovarian "
            "cancer syndrome. Genetic counseling is recommended for relatives.",
            "Genes analyzed: ATM, BRCA1, BRCA2, CHEK2, PALB2, PTEN, TP53.",
        ),
    ),
    "invoice": (
        "other",
        (
            "STATEMENT OF ACCOUNT",
            "Account number: 55-10293   Statement date: 10/01/2024",
            "Previous balance: $120.00   Payments received: $120.00",
            "New charges: office visit copay $25.00",
            "Amount due: $25.00 by 10/31/2024. Pay online or call the billing office.",
            "Thank you for choosing our practice.",
        ),
    ),
    "consent_form": (
        "other",
        (
            "CONSENT FOR TREATMENT AND FINANCIAL RESPONSIBILITY",
            "I consent to examination and treatment by the providers of this clinic.",
            "I authorize release of information to my insurer for payment of claims.",
            "I understand that I am responsible for charges not covered by insurance.",
            "Signature of patient or guardian: ____________   Date: ____________",
        ),
    ),
    "lab_panel": (
        "other",
        (
            "COMPREHENSIVE METABOLIC PANEL",
            "Collected: 02/02/2024 07:45   Reported: 02/02/2024 11:20",
            "Sodium 139 mmol/L (136-145)   Potassium 4.2 mmol/L (3.5-5.1)",
            "Chloride 101 mmol/L (98-107)   CO2 25 mmol/L (22-29)",
            "Glucose 98 mg/dL (70-99)   BUN 14 mg/dL (7-20)   Creatinine 0.9 mg/dL (0.6-1.2)",
            "Calcium 9.4 mg/dL (8.5-10.2)",
        ),
    ),
}

HIDDEN_LINES: dict[str, tuple[str, ...]] = {
    "pathology": (
        "SURGICAL PATHOLOGY REPORT FINAL DIAGNOSIS",
        "Specimen: biopsy, gross description, microscopic description",
        "Diagnosis: invasive adenocarcinoma, margins involved, pathologist",
        "Immunohistochemistry: tumor cells positive, lymphovascular invasion",
    ),
    "radiology": (
        "RADIOLOGY REPORT IMPRESSION FINDINGS",
        "Technique: CT axial images with intravenous contrast, coronal reformats",
        "Findings: consolidation, pleural effusion, mediastinal lymphadenopathy",
        "Impression: pulmonary nodule, radiologist recommends follow-up imaging",
    ),
    "genomic": (
        "COMPREHENSIVE GENOMIC PROFILING REPORT",
        "Genomic findings: EGFR exon 19 deletion, KRAS G12C, TP53 mutation",
        "Tumor mutational burden high, microsatellite instability, VAF",
        "Next-generation sequencing, pathogenic variant, targeted therapy",
    ),
    "clinical_note": (
        "PROGRESS NOTE HISTORY OF PRESENT ILLNESS",
        "Chief complaint: patient presents with cough, denies fever",
        "Physical exam: lungs clear, heart regular, assessment and plan",
        "Follow-up in clinic, prescribed medications, return precautions",
    ),
    "other": (
        "INVOICE BILLING STATEMENT AMOUNT DUE",
        "Insurance claim form, patient registration, consent to treatment",
        "Payment received, account balance, remit to billing office",
        "Appointment reminder, fax cover sheet, requisition form",
    ),
}


@dataclass(frozen=True)
class Case:
    key: str
    template: str
    label: str  # the page's true type
    target: str  # the type whose vocabulary is hidden
    method: str
    variant: int
    position: int  # where the hidden band goes: before line ``position`` of the visible text

    def pdf(self) -> bytes:
        visible = list(TEMPLATES[self.template][1])
        return hidden_pdf(
            [visible],
            list(HIDDEN_LINES[self.target]),
            method=self.method,
            variant=self.variant,
            position=self.position,
        )

    @property
    def hidden(self) -> tuple[str, ...]:
        return HIDDEN_LINES[self.target]


def cases(*, positions: Sequence[int] = (1, 3, 99)) -> Iterator[Case]:
    """Every template x method x variant x position, each against one other type (chosen by
    the template and method, so that every pair is met across the set)."""
    types = sorted(HIDDEN_LINES)
    for t_index, (template, (label, _lines)) in enumerate(sorted(TEMPLATES.items())):
        others = [t for t in types if t != label]
        for m_index, (method, variants) in enumerate(METHODS.items()):
            for variant in range(variants):
                for position in positions:
                    target = others[(t_index + m_index + variant + position) % len(others)]
                    key = f"{template}/{method}/{variant}/{position}"
                    yield Case(key, template, label, target, method, variant, position)


# -- the PDF ------------------------------------------------------------------------------------


def _escape(text: str) -> bytes:
    data = text.encode("cp1252", "replace")
    return data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def _stream(data: bytes, extra: bytes = b"") -> bytes:
    data = zlib.compress(data)
    return (
        b"<< /Length %d /Filter /FlateDecode%s >>\nstream\n" % (len(data), extra)
        + data
        + (b"\nendstream")
    )


class _Objects:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def add(self, body: bytes = b"") -> int:
        self.bodies.append(body)
        return len(self.bodies)

    def set(self, number: int, body: bytes) -> None:
        self.bodies[number - 1] = body

    def pdf(self, root: int) -> bytes:
        out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
        offsets = []
        for number, body in enumerate(self.bodies, start=1):
            offsets.append(len(out))
            out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
        xref = len(out)
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(self.bodies) + 1)
        for offset in offsets:
            out += b"%010d 00000 n \n" % offset
        out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
            len(self.bodies) + 1,
            root,
            xref,
        )
        return bytes(out)


def _vera() -> tuple[bytes, dict[int, int], dict[int, int], int]:
    """reportlab's Vera.ttf: its bytes, unicode -> glyph, glyph -> advance (1000 units)."""
    import reportlab
    from reportlab.pdfbase.ttfonts import TTFontFile

    path = os.path.join(os.path.dirname(reportlab.__file__), "fonts", "Vera.ttf")
    font = TTFontFile(path)
    with open(path, "rb") as handle:
        data = handle.read()
    widths: dict[int, int] = {}
    for char, glyph in font.charToGlyph.items():
        widths[glyph] = int(font.charWidths[char]) if char < len(font.charWidths) else 600
    return data, dict(font.charToGlyph), widths, int(font.defaultWidth or 600)


def _lying_font(objects: _Objects, shown: str, said: str, *, per_char: bool) -> tuple[int, bytes]:
    """A Type0 font drawing ``shown`` (codes 1..n, one per character) while its ToUnicode
    map says ``said`` (cut into n pieces). ``per_char``: every position its own code, so a
    glyph drawn twice may say two things; otherwise one code per distinct shown character
    (a consistent substitution: the map says, for each shown glyph, one fixed other text).
    Returns the font object and the content string (hex codes)."""
    data, to_glyph, widths, _default = _vera()
    n = len(shown)
    pieces = [said[len(said) * i // n : len(said) * (i + 1) // n] for i in range(n)]
    codes: list[int] = []
    glyph_of: dict[int, int] = {}
    unicode_of: dict[int, str] = {}
    by_char: dict[str, int] = {}
    for i, char in enumerate(shown):
        if not per_char and char in by_char:
            code = by_char[char]
            unicode_of[code] += pieces[i]
        else:
            code = len(glyph_of) + 1
            by_char[char] = code
            glyph_of[code] = to_glyph.get(ord(char), 0)
            unicode_of[code] = pieces[i]
        codes.append(code)
    top = max(glyph_of) + 1
    gid_map = bytearray(2 * top)
    for code, glyph in glyph_of.items():
        gid_map[2 * code : 2 * code + 2] = glyph.to_bytes(2, "big")
    cid_map = objects.add(_stream(bytes(gid_map)))
    cmap = [
        b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        b"/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def",
        b"/CMapName /Lie def /CMapType 2 def",
        b"1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    entries = sorted(unicode_of.items())
    for start in range(0, len(entries), 100):
        chunk = entries[start : start + 100]
        cmap.append(b"%d beginbfchar" % len(chunk))
        for code, text in chunk:
            target = (text or " ").encode("utf-16-be").hex().upper().encode()
            cmap.append(b"<%04X> <%s>" % (code, target))
        cmap.append(b"endbfchar")
    cmap.append(b"endcmap CMapName currentdict /CMap defineresource pop end end")
    to_unicode = objects.add(_stream(b"\n".join(cmap)))
    file = objects.add(_stream(data, b" /Length1 %d" % len(data)))
    descriptor = objects.add(
        b"<< /Type /FontDescriptor /FontName /AAAAAA+Vera /Flags 32 /FontBBox [-183 -236 "
        b"1287 928] /ItalicAngle 0 /Ascent 928 /Descent -236 /CapHeight 729 /StemV 80 "
        b"/FontFile2 %d 0 R >>" % file
    )
    w = b" ".join(
        b"%d [%d]" % (code, widths.get(glyph, 600)) for code, glyph in sorted(glyph_of.items())
    )
    cid = objects.add(
        b"<< /Type /Font /Subtype /CIDFontType2 /BaseFont /AAAAAA+Vera /CIDSystemInfo "
        b"<< /Registry (Adobe) /Ordering (Identity) /Supplement 0 >> /FontDescriptor %d 0 R "
        b"/W [%s] /CIDToGIDMap %d 0 R >>" % (descriptor, w, cid_map)
    )
    font = objects.add(
        b"<< /Type /Font /Subtype /Type0 /BaseFont /AAAAAA+Vera /Encoding /Identity-H "
        b"/DescendantFonts [%d 0 R] /ToUnicode %d 0 R >>" % (cid, to_unicode)
    )
    return font, b"<" + b"".join(b"%04X" % c for c in codes) + b">"


def _wrap(lines: Sequence[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        out.extend(textwrap.wrap(line, 95) or [""])
    return out


def hidden_pdf(
    pages: Sequence[Sequence[str]],
    hidden: Sequence[str],
    *,
    method: str,
    variant: int = 0,
    position: int = 99,
) -> bytes:
    """A PDF of ``pages`` (each a list of lines, wrapped, in 10 pt Helvetica; a page runs on
    to the next when it is full) with ``hidden`` drawn on the first page before visible line
    ``position`` so that a reader cannot see it (or, ``tounicode_lie``, sees other text
    there), by ``method`` and its ``variant`` (``METHODS``)."""
    if method not in METHODS or not 0 <= variant < METHODS[method]:
        raise ValueError(f"unknown method {method!r} / variant {variant}")
    objects = _Objects()
    catalog = objects.add()
    tree = objects.add()
    helvetica = objects.add(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    white = objects.add(
        _stream(
            b"\xff\xff\xff" if variant == 0 else b"\xfd\xfd\xfd",
            b" /Type /XObject /Subtype /Image /Width 1 /Height 1 /ColorSpace /DeviceRGB "
            b"/BitsPerComponent 8",
        )
    )
    ocg = objects.add(b"<< /Type /OCG /Name (Layer) >>")
    # A membership dictionary whose policy hides its content while its group is ON.
    ocmd = objects.add(b"<< /Type /OCMD /OCGs [%d 0 R] /P /AllOff >>" % ocg)
    band_height = len(hidden) * 10 + 6
    kids: list[int] = []
    widgets: list[int] = []
    extra_fonts = b""
    lines_by_page: list[list[str]] = []
    for page in pages:
        wrapped = _wrap(page)
        room = int((PAGE_HEIGHT - 144 - (band_height if not lines_by_page else 0)) // LEADING)
        while len(wrapped) > room:
            lines_by_page.append(wrapped[:room])
            wrapped = wrapped[room:]
            room = int((PAGE_HEIGHT - 144) // LEADING)
        lines_by_page.append(wrapped)
    for number, lines in enumerate(lines_by_page):
        ops: list[bytes] = []
        annots: list[int] = []
        y = PAGE_HEIGHT - 72.0
        media = b"[0 0 %d %d]" % (PAGE_WIDTH, PAGE_HEIGHT)
        crop = media
        for index in range(len(lines) + 1):
            if number == 0 and index == min(position, len(lines)):
                band_top = y + SIZE
                drawn, fonts, crop_box = _hide(
                    objects, hidden, method, variant, band_top, lines, annots, widgets
                )
                ops.append(drawn)
                extra_fonts = b"".join(b" /FL%d %d 0 R" % (i, f) for i, f in enumerate(fonts))
                if crop_box:
                    crop = crop_box
                y -= band_height + 4
            if index < len(lines):
                ops.append(b"BT /F1 %d Tf 72 %.2f Td (%s) Tj ET" % (SIZE, y, _escape(lines[index])))
                y -= LEADING
        content = objects.add(_stream(b"\n".join(ops)))
        page_obj = objects.add(
            b"<< /Type /Page /Parent %d 0 R /MediaBox %s /CropBox %s /Contents %d 0 R "
            b"/Resources << /Font << /F1 %d 0 R%s >> /XObject << /Im1 %d 0 R >> "
            b"/Properties << /OC1 %d 0 R /OC2 %d 0 R >> >>%s >>"
            % (
                tree,
                media,
                crop,
                content,
                helvetica,
                extra_fonts,
                white,
                ocg,
                ocmd,
                b" /Annots [%s]" % b" ".join(b"%d 0 R" % a for a in annots) if annots else b"",
            )
        )
        for a in annots:  # the annotations' /P
            objects.set(a, objects.bodies[a - 1].replace(b"/P 0 0 R", b"/P %d 0 R" % page_obj))
        kids.append(page_obj)
    objects.set(
        tree,
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % k for k in kids), len(kids)),
    )
    oc_off = b"/OFF [%d 0 R]" % ocg if method == "optional_content" and variant == 0 else b""
    acroform = (
        b" /AcroForm << /Fields [%s] >>" % b" ".join(b"%d 0 R" % w for w in widgets)
        if widgets
        else b""
    )
    objects.set(
        catalog,
        b"<< /Type /Catalog /Pages %d 0 R /OCProperties << /OCGs [%d 0 R] /D << /Order [%d 0 R] "
        b"%s >> >>%s >>" % (tree, ocg, ocg, oc_off, acroform),
    )
    return objects.pdf(catalog)


def _hide(
    objects: _Objects,
    hidden: Sequence[str],
    method: str,
    variant: int,
    top: float,
    visible: Sequence[str],
    annots: list[int],
    widgets: list[int],
) -> tuple[bytes, list[int], bytes]:
    """The content drawing ``hidden`` from ``top`` down by ``method``; the font objects it
    needs (named /FL0, /FL1...) and a crop box (b"": the media box)."""
    size = HIDDEN_SIZE
    baselines = [top - size - 10 * i for i in range(len(hidden))]
    bottom = baselines[-1] - 3
    width = 480.0
    crop = b""

    def block(
        prefix: bytes = b"", font: bytes = b"/F1 %d Tf" % size, x: float = 72, dy: float = 0
    ) -> bytes:
        parts = [b"BT %s %s" % (font, prefix)]
        for i, line in enumerate(hidden):
            parts.append(b"1 0 0 1 %.2f %.2f Tm (%s) Tj" % (x, baselines[i] + dy, _escape(line)))
        parts.append(b"ET")
        return b" ".join(parts)

    if method == "render_mode":
        # In q/Q: the render mode is graphics state, kept by the text objects after it.
        return b"q " + block(b"%d Tr" % (3 if variant == 0 else 7)) + b" Q", [], b""
    if method == "background":
        grey = b"1 1 1 rg" if variant == 0 else b"0.985 0.985 0.985 rg"
        return b"q " + grey + b" " + block() + b" Q", [], b""
    if method == "tiny":
        if variant == 0:
            return block(font=b"/F1 1 Tf"), [], b""
        parts = [b"BT /F1 8 Tf"]
        for i, line in enumerate(hidden):
            parts.append(b"0.1 0 0 0.1 72 %.2f Tm (%s) Tj" % (baselines[i], _escape(line)))
        return b" ".join(parts) + b" ET", [], b""
    if method == "outside_crop":
        if variant == 0:
            return block(dy=-baselines[0] - 40), [], b""  # below the page
        crop = b"[0 0 %d %d]" % (PAGE_WIDTH - 36, PAGE_HEIGHT)
        return block(x=PAGE_WIDTH - 30), [], crop
    if method == "under_image":
        return (
            block() + b" q %.2f 0 0 %.2f 66 %.2f cm /Im1 Do Q" % (width + 12, top - bottom, bottom),
            [],
            b"",
        )
    if method == "under_fill":
        if variant == 0:
            cover = b" q 1 1 1 rg 66 %.2f %.2f %.2f re f Q" % (bottom, width + 12, top - bottom)
            return block() + cover, [], b""
        # An ellipse-ish shape (four curves) in the page's colour.
        cx, cy, rx, ry = 72 + width / 2, (top + bottom) / 2, width / 2 + 60, (top - bottom)
        k = 0.5523
        path = (
            b"%.2f %.2f m %.2f %.2f %.2f %.2f %.2f %.2f c %.2f %.2f %.2f %.2f %.2f %.2f c "
            b"%.2f %.2f %.2f %.2f %.2f %.2f c %.2f %.2f %.2f %.2f %.2f %.2f c f"
            % (
                cx + rx, cy,
                cx + rx, cy + k * ry, cx + k * rx, cy + ry, cx, cy + ry,
                cx - k * rx, cy + ry, cx - rx, cy + k * ry, cx - rx, cy,
                cx - rx, cy - k * ry, cx - k * rx, cy - ry, cx, cy - ry,
                cx + k * rx, cy - ry, cx + rx, cy - k * ry, cx + rx, cy,
            )
        )  # fmt: skip
        return block() + b" q 1 1 1 rg " + path + b" Q", [], b""
    if method == "partial_cover":
        share = (0.7, 0.8, 0.9)[variant]
        bars = b" ".join(
            b"66 %.2f %.2f %.2f re f" % (b - 2 + (1 - share) * (size + 2), width + 12, share * 10)
            for b in baselines
        )
        return block() + b" q 1 1 1 rg " + bars + b" Q", [], b""
    if method == "white_stroke":
        stroke = (6.0, 9.0, 12.0)[variant]
        lines = b" ".join(
            b"66 %.2f m %.2f %.2f l S" % (b + 3, 78 + width, b + 3) for b in baselines
        )
        return block() + b" q 1 1 1 RG %.1f w 0 J " % stroke + lines + b" Q", [], b""
    if method == "clip":
        if variant == 0:
            rect = b"300 20 100 10 re W n"
        elif variant == 1:
            rect = b"72 %.2f 0 0 re W n" % top
        else:
            rect = (
                b" ".join(b"66 %.2f %.2f 1.2 re" % (b - 2, width + 12) for b in baselines) + b" W n"
            )
        return b"q " + rect + b" " + block() + b" Q", [], b""
    if method == "annotation":
        subtype = (b"FreeText", b"Square", b"Stamp", b"Widget")[variant]
        box = (66.0, bottom, 78 + width, top)
        ap = objects.add(
            _stream(
                b"1 1 1 rg 0 0 %.2f %.2f re f" % (box[2] - box[0], box[3] - box[1]),
                b" /Type /XObject /Subtype /Form /BBox [0 0 %.2f %.2f]"
                % (box[2] - box[0], box[3] - box[1]),
            )
        )
        extra = b""
        if subtype == b"FreeText":
            extra = b" /DA (/Helv 9 Tf 0 g) /Contents ()"
        if subtype == b"Widget":
            extra = b" /FT /Tx /T (note) /F 4 /V ()"
        annot = objects.add(
            b"<< /Type /Annot /Subtype /%s /Rect [%.2f %.2f %.2f %.2f] /F 4 /P 0 0 R "
            b"/AP << /N %d 0 R >>%s >>" % (subtype, *box, ap, extra)
        )
        annots.append(annot)
        if subtype == b"Widget":
            widgets.append(annot)
        return block(), [], b""
    if method == "optional_content":
        if variant == 0:
            return b"/OC /OC1 BDC " + block() + b" EMC", [], b""
        return b"/OC /OC2 BDC " + block() + b" EMC", [], b""
    if method == "tounicode_lie":
        # Benign text from the page itself is what the glyphs show.
        benign = " ".join(visible)[:200] or "Patient seen today."
        ops, fonts = [], []
        for i, line in enumerate(hidden):
            shown = (benign * 3)[i * 37 : i * 37 + max(20, len(line))]
            font, codes = _lying_font(objects, shown, line, per_char=variant == 1)
            fonts.append(font)
            ops.append(
                b"BT /FL%d %d Tf 1 0 0 1 72 %.2f Tm %s Tj ET" % (i, size, baselines[i], codes)
            )
        return b" ".join(ops), fonts, b""
    raise ValueError(method)


def corpus_held_out(sha256: str) -> bool:
    """The frozen test half of a real corpus's PDFs (dev), by the file's sha256: the reading
    check was tuned on the other half only."""
    return hashlib.sha256(("reading-held-out:" + sha256).encode()).digest()[0] % 2 == 0
