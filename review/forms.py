from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from django import forms

from engine.schemas import DISPLAY_NAMES, DOC_TYPES, ClassificationOutput, DocType
from review.exports import FORMATS
from review.models import GroundTruth
from review.services import Correction

TYPE_CHOICES = [(t.value, DISPLAY_NAMES[t]) for t in DOC_TYPES]
_SEGMENT_LINE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+))?\s*[:\s]\s*([a-z_]+)\s*$", re.IGNORECASE)


class ValidateForm(forms.Form):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Two forms share the packet page: distinct ids keep every label tied to its field.
        kwargs.setdefault("auto_id", "validate_%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)

    notes = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Notes (optional)"
    )


class CorrectionForm(forms.Form):
    """Change the dominant type, the segments (split/merge by page range, change a type), the
    mixture, or mark a missed type present. Notes are required."""

    dominant_type = forms.ChoiceField(choices=TYPE_CHOICES, label="Dominant type")
    segments = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        label="Segments",
        help_text="One per line: first-last page and type, e.g. “1-2 pathology”. "
        "Split or merge segments by editing the ranges.",
    )
    present = forms.MultipleChoiceField(
        choices=TYPE_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Also present (missed by the classifier)",
    )
    notes = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Notes",
        error_messages={"required": "Say why you corrected it."},
    )

    def __init__(self, *args: Any, page_count: int, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "correct_%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.page_count = page_count
        for t in DOC_TYPES:
            self.fields[f"share_{t.value}"] = forms.DecimalField(
                label=f"{DISPLAY_NAMES[t]} share",
                min_value=Decimal(0),
                max_value=Decimal(1),
                decimal_places=4,
                max_digits=5,
                initial=Decimal(0),
            )

    @property
    def share_fields(self) -> list[Any]:
        return [self[f"share_{t.value}"] for t in DOC_TYPES]

    @classmethod
    def initial_for(cls, output: ClassificationOutput) -> dict[str, Any]:
        initial: dict[str, Any] = {
            "dominant_type": output.dominant_type_overall.value,
            "segments": "\n".join(
                f"{s.start_page}-{s.end_page} {s.dominant_type.value}" for s in output.segments
            ),
        }
        for m in output.document_mixture:
            initial[f"share_{m.type.value}"] = round(m.overall_share, 4)
        return initial

    def clean_segments(self) -> list[tuple[int, int, DocType]]:
        parsed = []
        for number, line in enumerate(self.cleaned_data["segments"].splitlines(), start=1):
            if not line.strip():
                continue
            match = _SEGMENT_LINE.match(line)
            if not match or match.group(3).lower() not in DocType._value2member_map_:
                raise forms.ValidationError(
                    f"Line {number} should read like “1-3 pathology” (types: "
                    f"{', '.join(t.value for t in DOC_TYPES)})."
                )
            start = int(match.group(1))
            end = int(match.group(2) or start)
            if start > end:
                raise forms.ValidationError(f"Line {number}: the range {start}-{end} is reversed.")
            parsed.append((start, end, DocType(match.group(3).lower())))
        if not parsed:
            raise forms.ValidationError("Give at least one segment.")
        covered: dict[int, int] = {}
        for index, (start, end, _) in enumerate(parsed, start=1):
            for page in range(start, end + 1):
                if page < 1 or page > self.page_count:
                    raise forms.ValidationError(
                        f"Page {page} is outside the document (pages 1-{self.page_count})."
                    )
                if page in covered:
                    raise forms.ValidationError(
                        f"Page {page} is in segments {covered[page]} and {index}: segments "
                        "must not overlap."
                    )
                covered[page] = index
        missing = [p for p in range(1, self.page_count + 1) if p not in covered]
        if missing:
            raise forms.ValidationError(
                f"Page(s) {', '.join(map(str, missing))} belong to no segment: the segments "
                "must cover the whole document."
            )
        return sorted(parsed)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        shares = [data.get(f"share_{t.value}") for t in DOC_TYPES]
        if all(s is not None for s in shares):
            total = sum(shares)  # type: ignore[arg-type]
            if abs(total - 1) > Decimal("0.01"):
                self.add_error(
                    "share_other", f"The shares add up to {total:.2f}; they must add up to 1."
                )
        segments = data.get("segments")
        dominant = data.get("dominant_type")
        if segments and dominant and dominant not in {t.value for _, _, t in segments}:
            self.add_error(
                "dominant_type", "The dominant type must be the type of one of the segments."
            )
        return data

    def correction(self) -> Correction:
        data = self.cleaned_data
        return Correction(
            dominant_type=DocType(data["dominant_type"]),
            segments=data["segments"],
            mixture={t: float(data[f"share_{t.value}"]) for t in DOC_TYPES},
            present=[DocType(t) for t in data.get("present", [])],
        )


class ExportForm(forms.Form):
    start = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    end = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    source = forms.ChoiceField(
        required=False, choices=[("", "Any source"), *GroundTruth.Source.choices]
    )
    type = forms.ChoiceField(required=False, choices=[("", "Any type"), *TYPE_CHOICES])
    format = forms.ChoiceField(choices=list(FORMATS.items()))
    all_versions = forms.BooleanField(required=False, label="Include superseded versions")
