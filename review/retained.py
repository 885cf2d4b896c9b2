"""What of a document's ground truth survives the document's deletion (documents.retention):
the label, and nothing that could name the patient. Pure functions (no Django), applied by
review.services.retention to every version.

The survivor is built by allow-list: only the keys named here are copied, so a field added to
the classification or to the extracted fields later is dropped until someone decides it may
stay.

- The classification keeps its structure and its numbers: the overall type, the segments
  (pages, type, and each type's presence, confidence and share), the mixture, the classifier's
  overall confidence, the boundary scores and cue codes. It loses every piece of text: the
  verbatim evidence snippets and their anchors, the model's reasoning and concerns, the vendor
  signals, the boundary cues' quotations and descriptions. It still reads as a
  ``ClassificationOutput``.
- The extracted fields keep, per segment, its type and pages, and per field its name, status,
  confidence and whether a clinician corrected it. A value stays only reduced to a code that
  cannot identify anyone: a receptor status (positive, negative, equivocal), a microsatellite
  status (MSS, MSI-H, MSI-L), a tumour grade (grade 1-3), a Ki-67 index or a tumour mutational
  burden (a number), and the year of a date (HIPAA's Safe Harbor keeps years). Every other
  value (free text such as a diagnosis, an impression or a plan, which may quote a name or a
  date; an institution; identifiers on forms) is removed and marked so (``"removed": true``):
  no de-identifier we trust sits in front of them, and a label without them is still a label.
  The machine's value before a correction, the snippet and its page go too.
"""

from __future__ import annotations

import re
from typing import Any

RECEPTOR_FIELDS = {"er_status", "pr_status", "her2_status"}
RECEPTOR_ANSWERS = ("positive", "negative", "equivocal")
MSI_FIELDS = {"msi_status"}
NUMBER_FIELDS = {"ki67": "%", "tmb": " mutations/Mb"}
GRADE_FIELDS = {"grade"}
YEAR_FIELDS = {"report_date", "exam_date", "visit_date", "tax_year"}

_NUMBER = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)(?![\d.])")
_GRADE = re.compile(r"\bgrade\s*(?::\s*)?([123]|iii|ii|i)\b", re.IGNORECASE)
_ROMAN = {"i": "1", "ii": "2", "iii": "3"}
_YEAR = re.compile(r"(?<!\d)(19\d{2}|20\d{2})(?!\d)")


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value if v not in (None, ""))
    return "" if value is None else str(value)


def coded_value(name: str, value: Any) -> str | None:
    """The code ``value`` of field ``name`` reduces to, or None when it does not reduce to
    exactly one code (the value is then removed)."""
    text = _text(value).strip()
    if not text:
        return None
    lowered = text.lower()
    if name in RECEPTOR_FIELDS:
        said = [answer for answer in RECEPTOR_ANSWERS if answer in lowered]
        return said[0] if len(said) == 1 else None
    if name in MSI_FIELDS:
        compact = re.sub(r"[\s_-]", "", lowered)
        if "msih" in compact or "instabilityhigh" in compact or "highinstability" in compact:
            return "MSI-H"
        if "msil" in compact or "instabilitylow" in compact or "lowinstability" in compact:
            return "MSI-L"
        if "mss" in compact or "stable" in compact:
            return "MSS"
        return None
    if name in NUMBER_FIELDS:
        numbers = _NUMBER.findall(text)
        return f"{numbers[0]}{NUMBER_FIELDS[name]}" if len(numbers) == 1 else None
    if name in GRADE_FIELDS:
        grades = {_ROMAN.get(g.lower(), g) for g in _GRADE.findall(text)}
        return f"grade {grades.pop()}" if len(grades) == 1 else None
    if name in YEAR_FIELDS:
        years = set(_YEAR.findall(text))
        return years.pop() if len(years) == 1 else None
    return None


def fields_retained(fields: Any) -> list[dict[str, Any]]:
    """The extracted fields of a ground-truth version as they survive (see the module)."""
    kept: list[dict[str, Any]] = []
    for segment in fields if isinstance(fields, list) else []:
        if not isinstance(segment, dict):
            continue
        values: dict[str, Any] = {}
        for name, data in (segment.get("fields") or {}).items():
            data = data if isinstance(data, dict) else {}
            code = coded_value(name, data.get("value"))
            field: dict[str, Any] = {
                "status": data.get("status"),
                "confidence": data.get("confidence"),
                "value": code,
            }
            if data.get("corrected"):
                field["corrected"] = True
            if code is None and _text(data.get("value")).strip():
                field["removed"] = True
            values[str(name)] = field
        kept.append(
            {
                "segment": segment.get("segment"),
                "doc_type": segment.get("doc_type"),
                "pages": segment.get("pages"),
                "fields": values,
            }
        )
    return kept


def _pick(data: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: data[key] for key in keys if isinstance(data, dict) and key in data}


def _items(data: Any, key: str) -> list[Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, list) else []


def classification_retained(classification: Any) -> dict[str, Any]:
    """A ground-truth version's classification as it survives (see the module)."""
    kept = _pick(classification, ("dominant_type_overall", "number_of_segments"))
    kept["segments"] = [
        {
            **_pick(segment, ("start_page", "end_page", "segment_page_count", "dominant_type")),
            "types": [
                {
                    **_pick(t, ("type", "presence_level", "confidence", "segment_share")),
                    "reasoning": "",
                    "top_evidence": [],
                }
                for t in _items(segment, "types")
            ],
        }
        for segment in _items(classification, "segments")
    ]
    kept["document_mixture"] = [
        _pick(entry, ("type", "overall_share", "presence_level"))
        for entry in _items(classification, "document_mixture")
    ]
    kept["vendor_signals"] = []
    evaluation = classification.get("self_evaluation") if isinstance(classification, dict) else {}
    kept["self_evaluation"] = {**_pick(evaluation, ("confidence",)), "concerns": []}
    kept["boundaries"] = [
        {
            **_pick(boundary, ("page", "score", "cut")),
            "cues": [_pick(cue, ("code", "weight")) for cue in _items(boundary, "cues")],
        }
        for boundary in _items(classification, "boundaries")
    ]
    return kept
