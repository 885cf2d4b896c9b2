from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.forms.renderers import Jinja2

from engine.schemas import DISPLAY_NAMES, DOC_TYPES, ClassificationOutput, DocType
from review.corrections import Correction, correction_build
from review.exports import END_BEFORE_START, FORMATS, STATE_ALL, STATE_DEFAULTS
from review.models import GroundTruth

TYPE_CHOICES = [(t.value, DISPLAY_NAMES[t]) for t in DOC_TYPES]
TYPE_KEYS = [(str(n), t.value, DISPLAY_NAMES[t]) for n, t in enumerate(DOC_TYPES, start=1)]


class ValidateForm(forms.Form):
    notes = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Note (optional)"
    )


def posted_rows(data: Any) -> list[tuple[str, str]]:
    """The segment rows of a posted panel: parallel ``start`` and ``type`` lists."""
    starts = data.getlist("start") if hasattr(data, "getlist") else []
    types = data.getlist("type") if hasattr(data, "getlist") else []
    return [
        (start.strip(), kind.strip())
        for start, kind in zip(starts, types, strict=False)
        if start.strip() or kind.strip()
    ]


def segments_from_rows(
    rows: list[tuple[str, str]], *, page_count: int
) -> list[tuple[int, int, DocType]]:
    """Segments from posted rows (the page each starts on, its type): each runs to the page
    before the next one starts. Raises ValidationError with what to mend."""
    if not rows:
        raise forms.ValidationError("Give at least one segment.")
    parsed: list[tuple[int, DocType]] = []
    for number, (start, kind) in enumerate(rows, start=1):
        if kind not in DocType._value2member_map_:
            raise forms.ValidationError(f"Segment {number}: choose its type.")
        try:
            first = int(start) if number > 1 else 1
        except ValueError:
            raise forms.ValidationError(f"Segment {number}: give the page it starts on.") from None
        if not 1 <= first <= page_count:
            raise forms.ValidationError(
                f"Segment {number} starts on page {first}, outside the document "
                f"(pages 1-{page_count})."
            )
        parsed.append((first, DocType(kind)))
    parsed.sort(key=lambda r: r[0])
    starts = [start for start, _ in parsed]
    repeated = sorted({s for s in starts if starts.count(s) > 1})
    if repeated:
        raise forms.ValidationError(
            f"Two segments start on page {repeated[0]}: remove one of them."
        )
    if starts[0] != 1:
        raise forms.ValidationError("The first segment must start on page 1.")
    ends = [s - 1 for s in starts[1:]] + [page_count]
    return [(start, end, kind) for (start, kind), end in zip(parsed, ends, strict=True)]


class CorrectionForm(forms.Form):
    """A correction as segments: each starts at a page and has a type, and runs to the page
    before the next one starts (posted as parallel ``start`` and ``type`` lists). The mixture
    follows the page counts and the dominant type follows the mixture unless given. The note
    is optional: the reason is worked out from what changed."""

    # Drawn by Django's Jinja2 form renderer: the same markup as the default templates at about a
    # quarter of the cost (the packet page's widgets: 3.3 ms a request down to 0.9 ms, in
    # process, 2026-11-29). Only this form: the admin's widgets have no Jinja2 templates.
    default_renderer = Jinja2()

    dominant_type = forms.ChoiceField(
        choices=[("", "Largest share"), *TYPE_CHOICES], required=False, label="Dominant type"
    )
    present = forms.MultipleChoiceField(
        choices=TYPE_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Also present (missed by the classifier)",
    )
    notes = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Note (optional)"
    )

    def __init__(
        self,
        *args: Any,
        page_count: int,
        rows: list[tuple[int, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("auto_id", "correct_%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.page_count = page_count
        self.initial_rows = rows or [(1, DOC_TYPES[-1].value)]
        self._correction: Correction | None = None
        for t in DOC_TYPES:
            self.fields[f"share_{t.value}"] = forms.DecimalField(
                label=DISPLAY_NAMES[t],
                required=False,
                min_value=Decimal(0),
                max_value=Decimal(1),
                decimal_places=4,
                max_digits=5,
            )

    @classmethod
    def for_output(cls, output: ClassificationOutput, *, page_count: int) -> CorrectionForm:
        rows = [(s.start_page, s.dominant_type.value) for s in output.segments]
        return cls(page_count=page_count, rows=rows or None)

    @property
    def share_fields(self) -> list[Any]:
        return [self[f"share_{t.value}"] for t in DOC_TYPES]

    def posted_rows(self) -> list[tuple[str, str]]:
        return posted_rows(self.data)

    def rows(self) -> list[dict[str, Any]]:
        """The segment rows to show: as posted (to keep a refused edit) or as classified."""
        raw: list[tuple[Any, str]] = (
            list(self.posted_rows()) if self.is_bound else list(self.initial_rows)
        )
        numbered = []
        for start, kind in raw:
            try:
                numbered.append((int(start), kind))
            except (TypeError, ValueError):
                numbered.append((0, kind))
        numbered.sort(key=lambda r: r[0])
        shown = []
        for index, (start, kind) in enumerate(numbered):
            following = numbered[index + 1][0] if index + 1 < len(numbered) else None
            end = (following - 1) if following else self.page_count
            shown.append({"start": start or "", "end": end, "type": kind, "first": index == 0})
        return shown

    def _segments(self) -> list[tuple[int, int, DocType]]:
        return segments_from_rows(self.posted_rows(), page_count=self.page_count)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            segments = self._segments()
        except forms.ValidationError as error:
            self.add_error(None, error)
            return data
        shares = {t: data.get(f"share_{t.value}") for t in DOC_TYPES}
        given = any(v is not None for v in shares.values())
        self._correction = correction_build(
            segments=segments,
            shares={t: float(v or 0) for t, v in shares.items()} if given else None,
            dominant=DocType(data["dominant_type"]) if data.get("dominant_type") else None,
            present=[DocType(t) for t in data.get("present", [])],
        )
        return data

    def correction(self) -> Correction:
        assert self._correction is not None, "call is_valid() first"
        return self._correction


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
    # "" is the format's default (review.exports.export_state), so a page left as it is
    # gives what the API and the command give when no state is asked for.
    state = forms.ChoiceField(
        required=False,
        choices=[
            ("", "The format's default"),
            (STATE_ALL, "Every state (each row marked)"),
            (GroundTruth.State.FINAL, "Final only"),
            (GroundTruth.State.PROVISIONAL, "Provisional only (still under a check)"),
        ],
        help_text=STATE_DEFAULTS,
    )
    format = forms.ChoiceField(choices=list(FORMATS.items()))
    all_versions = forms.BooleanField(required=False, label="Include superseded versions")
    with_text = forms.BooleanField(
        required=False,
        label="Include each page's text (for training a model)",
        help_text="The export then holds patient text: keep it where patient data may be kept.",
    )
    deidentify = forms.BooleanField(
        required=False,
        label="De-identify",
        help_text="Names, dates, record and phone numbers, addresses and other identifiers in "
        "every text (page text, snippets, field values, filename, notes) are replaced by "
        "consistent surrogates; each row names the method.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if start and end and end < start:
            self.add_error("end", END_BEFORE_START)
        return data


class SegmentationForm(forms.Form):
    """A check's answer (an audit, a second review, an adjudication): where each document
    starts and its type, posted as the packet panel posts them, and an optional note."""

    note = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="Note (optional)"
    )

    def __init__(self, *args: Any, page_count: int, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "check_%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.page_count = page_count
        self._segments: list[tuple[int, int, DocType]] = []

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            self._segments = segments_from_rows(posted_rows(self.data), page_count=self.page_count)
        except forms.ValidationError as error:
            self.add_error(None, error)
        return data

    def segments(self) -> list[tuple[int, int, DocType]]:
        return self._segments

    def rows(self, initial: list[tuple[int, str]] | None = None) -> list[dict[str, Any]]:
        """The panel's rows: as posted, else ``initial``, else one document of no type yet
        (a blind answer starts from nothing)."""
        if self.is_bound:
            raw = [(int(a) if a.isdigit() else 0, t) for a, t in posted_rows(self.data)]
        else:
            raw = list(initial or [(1, "")])
        raw.sort(key=lambda r: r[0])
        shown = []
        for index, (start, kind) in enumerate(raw):
            following = raw[index + 1][0] if index + 1 < len(raw) else None
            end = (following - 1) if following else self.page_count
            shown.append({"start": start or "", "end": end, "type": kind, "first": index == 0})
        return shown
