"""De-identified exports (``--deidentify``; the export page's and the API's option).

One ``ExportScrub`` per export: every text field of a row (each page's text with
``--with-text``, the classification's snippets and reasoning, the extracted field values,
the filename, the reason and the note) goes through engine.deid with the row's document's
PHI learnt from its pages, so a name labelled on page 1 is replaced in a snippet quoting
page 3. Surrogates come from a keyed hash of the value (reliability.deid's key): the same
value gets the same surrogate in every row, and the same export gives the same bytes again.
Labels, versions, states, ids, hashes, reviewers and timestamps are left as they are; each
row says how it was de-identified (``deidentification``: the method and its version).
"""

from __future__ import annotations

from typing import Any

from engine.deid import DocumentScrub, Pseudonyms, describe
from reliability.deid import surrogates

DEID_FIELD = "deidentification"  # the method and version, on every de-identified row
# Keys whose values are codes, not text: never rewritten.
CODE_KEYS = frozenset(
    {
        "type",
        "dominant_type",
        "dominant_type_overall",
        "presence_level",
        "doc_type",
        "status",
        "source",
        "state",
        "code",
        "severity",
        "kind",
    }
)
TEXT_KEYS = ("filename", "reason", "note")


class ExportScrub:
    """The de-identification of one export, row by row (rows of a document come together,
    so its PHI is learnt once per document)."""

    def __init__(self) -> None:
        self.pseudonyms = Pseudonyms(surrogates())
        self.method = describe()
        self._document_id: str | None = None
        self._scrub: DocumentScrub | None = None

    def document(self, document_id: str, pages: list[str]) -> DocumentScrub:
        if self._scrub is None or document_id != self._document_id:
            self._document_id = document_id
            self._scrub = DocumentScrub.of(pages, self.pseudonyms)
        return self._scrub

    def text(self, value: str) -> str:
        """A free text with no document behind it (a FHIR field value)."""
        return DocumentScrub(self.pseudonyms).scrub(value)

    def record(
        self, record: dict[str, Any], pages: list[dict[str, Any]], *, with_text: str | None
    ) -> dict[str, Any]:
        """The row de-identified; ``pages`` (number and text) teach the document's PHI, and
        with ``with_text`` (the column's name) the row's page texts are de-identified too."""
        scrub = self.document(record["document_id"], [p["text"] for p in pages])
        row = dict(record)
        for key in TEXT_KEYS:
            if isinstance(row.get(key), str):
                row[key] = scrub.filename(row[key]) if key == "filename" else scrub.scrub(row[key])
        row["classification"] = scrub_json(row.get("classification"), scrub)
        row["fields"] = scrub_json(row.get("fields"), scrub)
        if with_text and with_text in row:
            row[with_text] = [
                {"number": p["number"], "text": scrub.scrub(p["text"])} for p in row[with_text]
            ]
        row[DEID_FIELD] = self.method
        return row


def scrub_json(value: Any, scrub: DocumentScrub, key: str = "") -> Any:
    """Every string in a JSON value de-identified, except the values of code keys."""
    if isinstance(value, str):
        return value if key in CODE_KEYS else scrub.scrub(value)
    if isinstance(value, list):
        return [scrub_json(v, scrub, key) for v in value]
    if isinstance(value, dict):
        return {k: scrub_json(v, scrub, k) for k, v in value.items()}
    return value
