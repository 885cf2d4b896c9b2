"""Ground truth exports: every format of the export page, with the same filter, the same rows
and the same audit (review.exports.export_response)."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from ninja import Router

from api.access import may_read_all, own_document, processing_status
from api.documents import HELD_BACK
from api.schemas import DocumentType, IsoDate, JsonBool, TruthSource, errors
from core.errors import Refused
from review.exports import (
    CONTENT_TYPES,
    FORMATS,
    STATE_DEFAULTS,
    ExportFilter,
    export_response,
    export_state,
)
from review.models import GroundTruth
from review.selectors import ground_truth_selection
from review.visibility import label_view, visible_truth

router = Router(tags=["ground truth"])

ExportFormat = Literal["jsonl", "csv", "fhir", "parquet", "hf"]
assert set(ExportFormat.__args__) == set(FORMATS)  # type: ignore[attr-defined]
ExportState = Literal["all", "final", "provisional"]
# A FHIR Bundle is a JSON object; the other formats are files.
FILE_RESPONSE = {
    "description": "The export file (a zip of the dataset folder for hf; a FHIR Bundle for fhir).",
    "content": {
        CONTENT_TYPES[f]: {
            "schema": {"type": "object"} if f == "fhir" else {"type": "string", "format": "binary"}
        }
        for f in FORMATS
    },
}


def _export(
    request: HttpRequest,
    records: QuerySet[GroundTruth],
    *,
    fmt: str,
    export_filter: ExportFilter,
    deidentify: bool = False,
) -> HttpResponseBase:
    return export_response(
        user=request.user,
        records=records,
        fmt=fmt,
        export_filter=export_filter,
        audit_filters={
            "via": "api",
            "format": fmt,
            **export_filter.as_dict(),
            "deidentify": deidentify,
        },
        deidentify=deidentify,
    )


@router.get(
    "/ground-truth/",
    url_name="ground_truth",
    operation_id="export_ground_truth",
    summary="Export ground truth: jsonl, csv, fhir (R4 Bundle), parquet or hf (zip)",
    description="A token whose user may read every document (the Admins role's export "
    "permission) sees every record; any other token sees the records of the documents it "
    "submitted, less those of a document under a blind check its user takes no part in. "
    "`state`: `all`, `final` or `provisional`; left out (or empty), the format's default. "
    + STATE_DEFAULTS
    + " `deidentify=true` "
    "replaces names, dates, record and phone numbers, addresses and other PHI in every text "
    "by consistent surrogates, and each row (FHIR: each Provenance) names the method. `start` "
    "and `end` are a range in either order. 501 "
    "(code `pyarrow_missing`): parquet or hf without pyarrow installed on the server.",
    response={200: None, **errors(501)},
    openapi_extra={"responses": {"200": FILE_RESPONSE}},
)
def ground_truth_export(
    request: HttpRequest,
    format: ExportFormat = "fhir",
    type: DocumentType | None = None,
    source: TruthSource | None = None,
    start: IsoDate | None = None,
    end: IsoDate | None = None,
    all_versions: JsonBool = False,
    state: ExportState | None = None,
    deidentify: JsonBool = False,
) -> HttpResponseBase:
    if start and end and end < start:  # a range, in either order
        start, end = end, start
    export_filter = ExportFilter(
        start=start,
        end=end,
        source=source or "",
        doc_type=type or "",
        state=export_state(state or "", fmt=format),
        all_versions=all_versions,
    )
    records = export_filter.selection()
    if not may_read_all(request.user):
        records = records.filter(document__uploaded_by_id=request.user.pk)
    return _export(
        request,
        visible_truth(request.user, records),
        fmt=format,
        export_filter=export_filter,
        deidentify=deidentify,
    )


@router.get(
    "/documents/{uuid:document_id}/fhir/",
    url_name="document_fhir",
    operation_id="document_fhir",
    summary="The document's ground truth as a FHIR R4 Bundle",
    response={200: None, **errors(404, 409)},
    openapi_extra={
        "responses": {
            "200": {
                "description": "A Bundle of type collection.",
                "content": {"application/fhir+json": {"schema": {"type": "object"}}},
            }
        }
    },
)
def document_fhir(
    request: HttpRequest, document_id: UUID, all_versions: JsonBool = False
) -> HttpResponseBase:
    document = own_document(request, document_id)
    if not label_view(request.user, document).everything:
        raise Refused(
            status=409, message=HELD_BACK, code="labels_hidden", extra={"state": "checking"}
        )
    records = ground_truth_selection(all_versions=all_versions).filter(document=document)
    if not records.exists():
        state = processing_status(document)[0]
        raise Refused(
            status=409,
            message=f"No ground truth yet: the document is {state}.",
            code="no_ground_truth",
            extra={"state": state},
        )
    records = visible_truth(request.user, records)
    if not records.exists():
        raise Refused(
            status=409,
            message="Its labels are hidden while a blind check of it is open; ask again "
            "when the check ends.",
            code="labels_hidden",
        )
    export_filter = ExportFilter(all_versions=all_versions)
    return _export(request, records, fmt="fhir", export_filter=export_filter)
