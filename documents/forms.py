from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that accepts several files; each is checked by the upload service."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".pdf,.txt"}))
        # Empty files are refused by the service with its own, clearer message.
        kwargs.setdefault("allow_empty_file", True)
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, list | tuple) and data:
            return [single(item, initial) for item in data]
        return [single(data or None, initial)]  # None runs the "required" check


class UploadForm(forms.Form):
    documents = MultipleFileField(
        label="Documents",
        help_text="PDF or plain-text files; you can choose several at once.",
        error_messages={"required": "Choose at least one file to upload."},
    )

    expected_tax_year = forms.IntegerField(
        label="Expected tax year",
        required=False,
        min_value=1950,
        max_value=2100,
        help_text="For tax forms (W-2, 1099, K-1): a form for another year is flagged for "
        "review. Leave empty for clinical documents.",
    )

    def __init__(self, *args: Any, tax_forms: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not tax_forms:  # only deployments with a form pack read tax forms
            del self.fields["expected_tax_year"]

    def options(self) -> dict[str, Any]:
        """Processing options for the uploaded documents."""
        year = self.cleaned_data.get("expected_tax_year")
        return {"expected_tax_year": year} if year else {}

    def clean_documents(self) -> list[Any]:
        files: list[Any] = self.cleaned_data["documents"]
        if len(files) > settings.UPLOAD_MAX_FILES:
            raise forms.ValidationError(
                f"You chose {len(files)} files; upload at most {settings.UPLOAD_MAX_FILES} "
                "at a time."
            )
        return files
