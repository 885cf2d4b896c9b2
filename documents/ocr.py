"""Tesseract OCR for pages without a text layer (pytesseract)."""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from typing import Any

from documents.boxes import Word, fraction
from documents.pages import OcrResult, split_heading_lines


def tesseract_available() -> bool:
    return shutil.which("tesseract") is not None


def make_tesseract_engine(*, language: str = "eng") -> Any:
    """Return an OCR engine, or None when the tesseract binary is not installed."""
    if not tesseract_available():
        return None
    import pytesseract

    # One OpenMP thread per page: parallelism comes from running several workers.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")

    def engine(image: Any) -> OcrResult:
        data = pytesseract.image_to_data(
            image.convert("L"), lang=language, output_type=pytesseract.Output.DICT
        )
        width, height = image.size
        # (block, paragraph) -> line number -> words, in tesseract's reading order.
        paragraphs: dict[tuple[int, int], dict[int, list[Word]]] = defaultdict(
            lambda: defaultdict(list)
        )
        confidences: list[float] = []
        for i, word in enumerate(data["text"]):
            word = word.strip()
            confidence = float(data["conf"][i])
            if not word or confidence < 0:
                continue
            confidences.append(confidence)
            key = (data["block_num"][i], data["par_num"][i])
            left, top = data["left"][i], data["top"][i]
            paragraphs[key][data["line_num"][i]].append(
                (
                    word,
                    fraction(left, width),
                    fraction(top, height),
                    fraction(left + data["width"][i], width),
                    fraction(top + data["height"][i], height),
                )
            )
        texts: list[str] = []
        words: list[Word] = []  # the boxes, kept in the order the words enter the text
        for _, lines in sorted(paragraphs.items()):
            ordered = [line for _, line in sorted(lines.items())]
            texts.extend(split_heading_lines([" ".join(w[0] for w in line) for line in ordered]))
            words.extend(w for line in ordered for w in line)
        mean = sum(confidences) / len(confidences) / 100 if confidences else 0.0
        return OcrResult(
            paragraphs=texts,
            confidence=round(mean, 4),
            word_count=len(confidences),
            words=tuple(words),
        )

    return engine
