"""Hostile files for tests and ``bench_hostile``: small PDFs that make naive parsers loop,
balloon or flood the log. Written as raw PDF bytes (no library), so each keeps its defect.

Every generator returns ``bytes``; ``hostile_set()`` names the whole set. Sizes are parameters
so tests can use smaller bombs than the benchmark (the shape of the attack is the same).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def raw_pdf(objects: list[bytes], *, root: int = 1) -> bytes:
    """A classic PDF: ``objects[i]`` is the body of object i + 1; xref table and trailer."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        root,
        xref,
    )
    return bytes(out)


def _stream(data: bytes, *, extra: bytes = b"", flate: bool = False) -> bytes:
    if flate:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def _deflate_repeated(chunk: bytes, total: int) -> bytes:
    """``chunk`` repeated to ``total`` bytes, deflated without ever holding the expansion."""
    compressor = zlib.compressobj(9)
    block = chunk * max(1, (1 << 20) // len(chunk))
    parts, written = [], 0
    while written < total:
        piece = block[: total - written]
        parts.append(compressor.compress(piece))
        written += len(piece)
    parts.append(compressor.flush())
    return b"".join(parts)


def _text_content(lines: Iterable[str], *, size: float = 11, top: float = 720) -> bytes:
    ops = [b"BT /F1 %g Tf %g TL 72 %g Td" % (size, size * 1.2, top)]
    for line in lines:
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        ops.append(b"(" + escaped.encode("latin-1") + b") Tj T*")
    ops.append(b"ET")
    return b"\n".join(ops)


def one_page_pdf(
    *, content: bytes = b"", media_box: bytes = b"[0 0 612 792]", flate: bool = False
) -> bytes:
    """One page with ``content`` drawn in Helvetica as /F1 (the building block)."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox "
            + media_box
            + b" /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            _stream(content, flate=flate),
            _FONT,
        ]
    )


def self_referencing_media_box(*, ruled: bool = False) -> bytes:
    """The page's MediaBox is an object that refers to itself: resolving it never ends.
    ``ruled`` also draws a 2 x 2 ruled table (for a reader that asks a table finder about
    ruled pages)."""
    content = _text_content(["A page whose MediaBox refers to itself."])
    if ruled:
        content += b"\n72 500 100 40 re 172 500 100 40 re 72 540 100 40 re 172 540 100 40 re S"
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox 6 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
            _stream(content),
            _FONT,
            b"6 0 R",
        ]
    )


def object_stream_bomb(*, expanded_bytes: int = 2 << 30) -> bytes:
    """The catalog, page tree and page live in a compressed object stream that expands to
    ``expanded_bytes`` (2 GiB by default, from about 2 MB): opening the file inflates it."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
    ]
    header, body = b"", b""
    for number, obj in enumerate(objects, start=1):
        header += b"%d %d " % (number, len(body))
        body += obj + b"\n"
    head = header + body
    packed = zlib.compressobj(9)
    data = packed.compress(head)
    rest = max(0, expanded_bytes - len(head))
    block = b" " * (1 << 20)
    while rest > 0:
        data += packed.compress(block[:rest])
        rest -= min(rest, len(block))
    data += packed.flush()

    out = bytearray(b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    offsets[4] = len(out)
    out += b"4 0 obj\n" + _stream(b"BT ET") + b"\nendobj\n"
    offsets[5] = len(out)
    out += (
        b"5 0 obj\n<< /Type /ObjStm /N 3 /First %d /Length %d /Filter /FlateDecode >>\nstream\n"
        % (len(header), len(data))
        + data
        + b"\nendstream\nendobj\n"
    )
    offsets[6] = len(out)
    rows = [struct.pack(">BIH", 0, 0, 65535)]
    rows += [struct.pack(">BIH", 2, 5, index) for index in range(3)]
    rows += [struct.pack(">BIH", 1, offsets[n], 0) for n in (4, 5, 6)]
    table = b"".join(rows)
    out += (
        b"6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n"
        % len(table)
        + table
        + b"\nendstream\nendobj\n"
    )
    out += b"startxref\n%d\n%%%%EOF\n" % offsets[6]
    return bytes(out)


def content_stream_bomb(*, expanded_bytes: int = 1 << 30) -> bytes:
    """A page whose content stream inflates to ``expanded_bytes`` of drawing operators."""
    data = _deflate_repeated(b"1 0 0 1 0 0 cm\n", expanded_bytes)
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream",
        ]
    )


def huge_media_box(*, points: int = 14_400, text: bool = True) -> bytes:
    """A ``points`` x ``points`` page (14,400 pt = 200 inches, the PDF maximum). With
    ``text=False`` the page has no text layer, so it goes to OCR."""
    content = _text_content(["A page two hundred inches wide."]) if text else b""
    return one_page_pdf(content=content, media_box=b"[0 0 %d %d]" % (points, points))


def many_pages(*, count: int = 100_000) -> bytes:
    """``count`` pages (about 16 MB for 100,000), all sharing one content stream."""
    first_page = 4
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(count))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count,
        _stream(_text_content(["One of very many pages."])),
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
        b" /Resources << /Font << /F1 %d 0 R >> >> >>" % (first_page + count)
    )
    objects += [page] * count
    objects.append(_FONT)
    return raw_pdf(objects)


def many_characters(*, count: int = 500_000, size: float = 1, per_line: int = 1000) -> bytes:
    """``count`` characters of text on one page, ``per_line`` a line, in ``size``-point type
    (compressed: a few KB). At 1 point the text is too small to read: ingestion leaves it out
    as hidden (documents.hidden), and the page is read as an image."""
    line = ("ab " * per_line)[:per_line]
    lines = [line] * max(1, count // per_line)
    content = _text_content(lines, size=size, top=780)
    return one_page_pdf(content=content, flate=True)


@dataclass(frozen=True)
class HostileFile:
    name: str
    make: Callable[[], bytes]
    attack: str


def hostile_set(*, scale: float = 1.0) -> list[HostileFile]:
    """The benchmark's set. ``scale`` shrinks the bombs (tests use a small scale)."""

    def sized(value: int) -> int:
        return max(1, int(value * scale))

    return [
        HostileFile(
            "self_ref_mediabox.pdf", self_referencing_media_box, "MediaBox refers to itself"
        ),
        HostileFile(
            "objstm_bomb.pdf",
            lambda: object_stream_bomb(expanded_bytes=sized(2 << 30)),
            "object stream inflating to 2 GiB",
        ),
        HostileFile(
            "content_bomb.pdf",
            lambda: content_stream_bomb(expanded_bytes=sized(1 << 30)),
            "content stream inflating to 1 GiB",
        ),
        HostileFile("huge_mediabox.pdf", huge_media_box, "14,400 x 14,400 pt page"),
        HostileFile(
            "ocr_5000pt.pdf",
            lambda: huge_media_box(points=5000, text=False),
            "5,000 pt page with no text layer (goes to OCR)",
        ),
        HostileFile("100k_pages.pdf", lambda: many_pages(count=sized(100_000)), "100,000 pages"),
        HostileFile(
            "500k_chars.pdf",
            lambda: many_characters(count=sized(500_000)),
            "500,000 characters on one page",
        ),
    ]


# -- malformed structures (issue 25, finding 9) ------------------------------------------------
#
# Files a reader must refuse, not crash on: page trees that loop, kids that point back at an
# ancestor, dictionaries without their /Type, counts that lie, cross-reference tables that point
# nowhere, files cut short. Each keeps "%PDF-" and "%%EOF" so that only a parser sees the fault.

_CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
_PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>"


def _content() -> bytes:
    return _stream(_text_content(["PATHOLOGY REPORT", "Specimen: core biopsy, benign."]))


def malformed_set(*, seed: int = 25, mutations: int = 12) -> dict[str, bytes]:
    """Malformed PDFs by name, and ``mutations`` byte-level corruptions of a valid one
    (seeded: the same files on every run)."""
    import random

    content = _content()
    font = b"<< /Font << /F1 " + _FONT + b" >> >>"
    page = _PAGE[:-3] + b" /Resources " + font + b" >>"
    files = {
        "pages_kids_itself": raw_pdf([_CATALOG, b"<< /Type /Pages /Kids [2 0 R] /Count 1 >>"]),
        "kids_point_at_ancestor": raw_pdf(
            [
                _CATALOG,
                b"<< /Type /Pages /Kids [3 0 R] /Count 2 >>",
                b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R 4 0 R] /Count 2 >>",
                b"<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] >>",
            ]
        ),
        "page_with_kids_loop": raw_pdf(
            [
                _CATALOG,
                b"<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>",
                b"<< /Type /Page /Parent 2 0 R /Kids [2 0 R] /MediaBox [0 0 612 792] >>",
            ]
        ),
        "missing_type": raw_pdf(
            [
                b"<< /Pages 2 0 R >>",
                b"<< /Kids [3 0 R] /Count 1 >>",
                b"<< /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                content,
            ]
        ),
        "count_too_large": raw_pdf(
            [_CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 7 >>", page, content]
        ),
        "count_huge": raw_pdf(
            [_CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 2147483647 >>", page, content]
        ),
        "count_negative": raw_pdf(
            [_CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count -3 >>", page, content]
        ),
        "kids_not_an_array": raw_pdf(
            [_CATALOG, b"<< /Type /Pages /Kids 3 0 R /Count 1 >>", page, content]
        ),
        "kids_null": raw_pdf([_CATALOG, b"<< /Type /Pages /Kids [null 9 0 R] /Count 2 >>"]),
        "parent_loop": raw_pdf(
            [
                _CATALOG,
                b"<< /Type /Pages /Parent 2 0 R /Kids [3 0 R] /Count 1 >>",
                page,
                content,
            ]
        ),
        "root_not_a_dictionary": raw_pdf([b"[1 0 R]", b"<< /Type /Pages /Kids [] /Count 0 >>"]),
        "media_box_not_numbers": raw_pdf(
            [
                _CATALOG,
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [a b (c) 1 0 R] /Contents 4 0 R >>",
                content,
            ]
        ),
        "resources_loop": raw_pdf(
            [
                _CATALOG,
                b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                b"/Resources 5 0 R >>",
                content,
                b"<< /Font 5 0 R /XObject << /X1 5 0 R >> >>",
            ]
        ),
    }
    valid = raw_pdf([_CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page, content])
    xref = valid.rindex(b"xref")
    files["xref_offsets_wrong"] = valid[:xref] + valid[xref:].replace(b" 00000 n", b"9 00000 n")
    files["startxref_past_the_end"] = valid.replace(
        b"startxref\n%d" % xref, b"startxref\n%d" % (len(valid) * 10)
    )
    files["xref_missing"] = valid[:xref] + b"startxref\n%d\n%%%%EOF\n" % xref
    files["body_cut_short"] = valid[: len(valid) // 2] + b"\n%%EOF\n"
    files["stream_length_lies"] = valid.replace(b"<< /Length ", b"<< /Length 9", 1)
    rng = random.Random(seed)
    for number in range(mutations):
        body = bytearray(valid)
        for _ in range(rng.randint(1, 12)):
            # Anywhere between the header and the end-of-file marker.
            at = rng.randrange(9, len(body) - 8)
            body[at] = rng.choice(b"0123456789 /<>[]()RobjendstreamKidsPages\x00\xff")
        files[f"mutated_{number}"] = bytes(body)
    return files
