"""Ground truth in every export format, from one selection of records.

- ``jsonl``, ``csv``: serializers.export_ground_truth (unchanged bytes);
- ``fhir``: a FHIR R4 Bundle (review.fhir);
- ``parquet``: the JSONL columns as one Parquet file (pyarrow, the ``datasets`` extra);
- ``hf``: a Hugging Face ``datasets`` folder: data/train-00000-of-00001.parquet plus a README.md
  dataset card (label set, counts per type and source, the export filter). Downloads zip it.

Every writer consumes an iterable of records once, in order, so the same filter gives the
same rows in every format. JSONL, CSV and FHIR stream (``export_stream``): records come from
a database cursor in batches, bytes go out as they are made and are hashed on the way, so
memory stays flat however many records there are. Parquet and the dataset are built in
memory (the page and the API hand them over as one file).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase

from core.errors import Refused
from engine.schemas import DISPLAY_NAMES, DOC_TYPES
from review import fhir
from review.models import GroundTruth
from review.selectors import ground_truth_selection
from review.serializers import (
    EXPORT_FIELDS,
    TEXT_FIELD,
    export_ground_truth,
    ground_truth_as_dict,
    ground_truth_chunks,
    page_texts,
)
from review.services.audit_log import export_audit

FORMATS: dict[str, str] = {
    "jsonl": "JSON Lines",
    "csv": "CSV",
    "fhir": "FHIR R4 Bundle (JSON)",
    "parquet": "Parquet",
    "hf": "Hugging Face dataset (zip)",
}
CONTENT_TYPES = {
    "jsonl": "application/x-ndjson",
    "csv": "text/csv",
    "fhir": "application/fhir+json",
    "parquet": "application/vnd.apache.parquet",
    "hf": "application/zip",
}
FILENAMES = {
    "jsonl": "ground-truth.jsonl",
    "csv": "ground-truth.csv",
    "fhir": "ground-truth.fhir.json",
    "parquet": "ground-truth.parquet",
    "hf": "ground-truth-hf.zip",
}
LABELS = [t.value for t in DOC_TYPES]  # the class-label order, fixed across exports
HF_DATA_FILE = "data/train-00000-of-00001.parquet"
BATCH_ROWS = 1000
STREAMED = ("jsonl", "csv", "fhir")  # formats that stream from the database
STREAM_CHUNK = 500  # records fetched per round trip (and kept in memory at once)
TEXT_CHUNK = 100  # with page text, fewer records per batch (their pages are in memory)
OUT_BYTES = 1 << 16  # streamed output is handed over in pieces of about this size
# The related columns a JSONL or CSV row is made of (serializers.ground_truth_as_dict).
TABULAR_RELATED = ("document__sha256", "document__original_filename", "reviewer__username")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed, so the same export zips to the same bytes


class ExportUnavailable(Refused):
    status = 501


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ExportUnavailable(
            "Parquet and Hugging Face exports need pyarrow: pip install 'vetted[datasets]'.",
            code="pyarrow_missing",
        ) from None
    return pyarrow


@dataclass
class ExportFilter:
    """The filter that chose the records; the dataset card states it."""

    start: Any = None
    end: Any = None
    source: str = ""
    doc_type: str = ""
    all_versions: bool = False

    def selection(self) -> QuerySet[GroundTruth]:
        """The records this filter chooses, in export order."""
        return ground_truth_selection(
            start=self.start,
            end=self.end,
            source=self.source,
            doc_type=self.doc_type,
            all_versions=self.all_versions,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "source": self.source or None,
            "type": self.doc_type or None,
            "all_versions": self.all_versions,
        }


# -- Parquet ------------------------------------------------------------------------------------


def _columns(*, hf: bool, with_text: bool = False) -> list[tuple[str, Any]]:
    pa = _pyarrow()
    types = {
        "document_id": pa.string(),
        "document_sha256": pa.string(),
        "filename": pa.string(),
        "version": pa.int32(),
        "source": pa.string(),
        "dominant_type": pa.string(),
        "run_id": pa.int64(),
        "model": pa.string(),
        "prompt_version": pa.string(),
        "reviewer": pa.string(),
        "decided_at": pa.timestamp("us", tz="UTC"),
        "classification": pa.string(),  # JSON, as in the CSV
        "fields": pa.string(),
        "reason": pa.string(),
        "note": pa.string(),
        TEXT_FIELD: pa.string(),  # JSON list of {number, text}, only on request
    }
    names = list(EXPORT_FIELDS) + ([TEXT_FIELD] if with_text else [])
    if not hf:
        return [(name, types[name]) for name in names]
    # The dataset leaves the filename out (it may name the patient) and adds the class label.
    names = [n for n in names if n != "filename"]
    return [(name, types[name]) for name in names] + [("label", pa.int64())]


def _hf_features(columns: list[tuple[str, Any]]) -> dict[str, Any]:
    features: dict[str, Any] = {}
    for name, arrow_type in columns:
        if name == "label":
            features[name] = {"names": LABELS, "_type": "ClassLabel"}
        else:
            features[name] = {"dtype": _hf_dtype(arrow_type), "_type": "Value"}
    return features


def _hf_dtype(arrow_type: Any) -> str:
    text = str(arrow_type)
    return "timestamp[us, tz=UTC]" if text.startswith("timestamp") else text


def _row(record: dict[str, Any], *, hf: bool) -> dict[str, Any]:
    row = dict(record)
    row["decided_at"] = datetime.fromisoformat(row["decided_at"])
    row["classification"] = json.dumps(row["classification"], sort_keys=True)
    row["fields"] = json.dumps(row["fields"], sort_keys=True)
    if TEXT_FIELD in row:
        row[TEXT_FIELD] = json.dumps(row[TEXT_FIELD], sort_keys=True, ensure_ascii=False)
    if hf:
        row.pop("filename")
        row["label"] = LABELS.index(row["dominant_type"])
    return row


@dataclass
class Summary:
    rows: int = 0
    per_type: Counter[str] = field(default_factory=Counter)
    per_source: Counter[str] = field(default_factory=Counter)


def parquet_write(
    records: Iterable[GroundTruth],
    sink: str | Path | IO[bytes],
    *,
    hf: bool = False,
    with_text: bool = False,
) -> Summary:
    """Write the records to one Parquet file in batches; return what was written."""
    pa = _pyarrow()
    columns = _columns(hf=hf, with_text=with_text)
    metadata = {}
    if hf:
        # datasets reads the features (the class label) from this schema metadata.
        metadata[b"huggingface"] = json.dumps(
            {"info": {"features": _hf_features(columns)}}
        ).encode()
    schema = pa.schema(columns, metadata=metadata or None)
    summary = Summary()
    writer = pa.parquet.ParquetWriter(sink, schema, compression="zstd")
    try:
        batch: list[GroundTruth] = []

        def flush() -> None:
            texts = page_texts(batch) if with_text else {}
            rows = []
            for truth in batch:
                record = ground_truth_as_dict(truth)
                if with_text:
                    record[TEXT_FIELD] = texts.get(record["document_id"], [])
                summary.per_type[record["dominant_type"]] += 1
                summary.per_source[record["source"]] += 1
                rows.append(_row(record, hf=hf))
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
            batch.clear()

        for truth in records:
            summary.rows += 1
            batch.append(truth)
            if len(batch) >= BATCH_ROWS:
                flush()
        if batch or summary.rows == 0:
            flush()
    finally:
        writer.close()
    return summary


# -- Hugging Face dataset folder ------------------------------------------------------------------


def _yaml(value: Any) -> str:
    # JSON scalars are valid YAML flow scalars; quoting every string keeps the card safe.
    return json.dumps(value, ensure_ascii=False)


def dataset_card(summary: Summary, export_filter: ExportFilter, *, with_text: bool = False) -> str:
    """README.md for the folder: YAML metadata datasets understands (configs, features,
    splits) and Vetted's own (the filter, the counts), then a readable description."""
    columns = _columns(hf=True, with_text=with_text)
    lines = [
        "---",
        "pretty_name: Vetted ground truth",
        "license: other",
        "task_categories:",
        "- text-classification",
        "tags:",
        "- clinical-documents",
        "- document-classification",
        "- vetted",
        "configs:",
        "- config_name: default",
        "  data_files:",
        "  - split: train",
        f"    path: {HF_DATA_FILE}",
        "dataset_info:",
        "  features:",
    ]
    for name, arrow_type in columns:
        lines.append(f"  - name: {name}")
        if name == "label":
            lines += ["    dtype:", "      class_label:", "        names:"]
            lines += [f"          '{i}': {label}" for i, label in enumerate(LABELS)]
        else:
            lines.append(f"    dtype: {_yaml(_hf_dtype(arrow_type))}")
    lines += [
        "  splits:",
        "  - name: train",
        f"    num_examples: {summary.rows}",
        "vetted:",
        "  export_filter:",
        *[f"    {key}: {_yaml(value)}" for key, value in export_filter.as_dict().items()],
        "  counts_per_type:",
        *[f"    {label}: {summary.per_type.get(label, 0)}" for label in LABELS],
        "  counts_per_source:",
        *[
            f"    {source}: {summary.per_source.get(source, 0)}"
            for source in GroundTruth.Source.values
        ],
        "---",
        "",
        "# Vetted ground truth",
        "",
        "Document-type labels decided in Vetted: accepted by the verifier chain "
        "(AUTO_ACCEPTED) or validated or corrected by a clinician (SME_VALIDATED, "
        "SME_CORRECTED). One row per ground-truth record"
        + (" version." if export_filter.all_versions else " (the current version only)."),
        "",
        "## Label set and counts",
        "",
        "| label | id | name | rows |",
        "|---|---|---|---|",
        *[
            f"| {label} | {i} | {DISPLAY_NAMES[DOC_TYPES[i]]} | {summary.per_type.get(label, 0)} |"
            for i, label in enumerate(LABELS)
        ],
        f"| **total** | | | **{summary.rows}** |",
        "",
        "## Export filter",
        "",
        *[f"- {key}: {value}" for key, value in export_filter.as_dict().items()],
        "",
        "## Columns",
        "",
        "`classification` (the full classification: segments, mixture, evidence) and "
        "`fields` (extracted fields per segment) are JSON strings. `run_id`, `model` and "
        "`prompt_version` give each label's provenance; `reviewer` is the clinician who "
        "decided, if any. The original filename is left out: filenames may name the patient. "
        "Join on `document_id` or `document_sha256` if you need it.",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("path/to/this/folder", split="train")',
        'ds.features["label"].int2str(ds[0]["label"])',
        "```",
        "",
    ]
    return "\n".join(lines)


def hf_write(
    records: Iterable[GroundTruth],
    folder: str | Path,
    *,
    export_filter: ExportFilter,
    with_text: bool = False,
) -> Summary:
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    summary = parquet_write(records, folder / HF_DATA_FILE, hf=True, with_text=with_text)
    card = dataset_card(summary, export_filter, with_text=with_text)
    (folder / "README.md").write_text(card, encoding="utf-8")
    return summary


def _hf_zip(
    records: Iterable[GroundTruth], *, export_filter: ExportFilter, with_text: bool = False
) -> bytes:
    data = io.BytesIO()
    summary = parquet_write(records, data, hf=True, with_text=with_text)
    files = {
        "README.md": dataset_card(summary, export_filter, with_text=with_text).encode(),
        HF_DATA_FILE: data.getvalue(),
    }
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name in sorted(files):
            zipped.writestr(zipfile.ZipInfo(f"ground-truth/{name}", _ZIP_TIME), files[name])
    return archive.getvalue()


# -- one entry point per destination --------------------------------------------------------------


def export_bytes(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    export_filter: ExportFilter,
    site_url: str,
    with_text: bool = False,
) -> bytes:
    """The whole export as one download (the export page and the API). ``with_text`` adds
    each page's text to the tabular formats; FHIR references the file instead."""
    if fmt in ("jsonl", "csv"):
        return export_ground_truth(records, fmt=fmt, with_text=with_text)
    if fmt == "fhir":
        return fhir.bundle_bytes(records, site_url=site_url)
    if fmt == "parquet":
        buffer = io.BytesIO()
        parquet_write(records, buffer, with_text=with_text)
        return buffer.getvalue()
    if fmt == "hf":
        return _hf_zip(records, export_filter=export_filter, with_text=with_text)
    raise ValueError(f"unknown export format {fmt!r}")


def export_write(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    out: Path,
    export_filter: ExportFilter,
    site_url: str,
    with_text: bool = False,
) -> None:
    """Write an export to ``out``: a file, or for ``hf`` a folder (created if missing)."""
    if fmt == "hf":
        hf_write(records, out, export_filter=export_filter, with_text=with_text)
    elif fmt == "fhir":
        with out.open("wb") as handle:
            for chunk in fhir.bundle_chunks(records, site_url=site_url):
                handle.write(chunk)
    elif fmt == "parquet":
        parquet_write(records, out, with_text=with_text)
    else:
        size = TEXT_CHUNK if with_text else STREAM_CHUNK
        with out.open("wb") as handle:
            for chunk in ground_truth_chunks(
                stream_records(records, fmt=fmt, chunk_size=size),
                fmt=fmt,
                with_text=with_text,
                chunk_size=size,
            ):
                handle.write(chunk)


@dataclass
class Streamed:
    """What a streamed export handed over: the SHA-256 of its bytes, the records read, and
    whether it ran to the end (a download the client broke off did not)."""

    digest: str
    records: int
    complete: bool


class _Counted:
    def __init__(self, records: Iterable[GroundTruth]) -> None:
        self.records = records
        self.count = 0

    def __iter__(self) -> Iterator[GroundTruth]:
        for truth in self.records:
            self.count += 1
            yield truth


def stream_records(
    records: Iterable[GroundTruth], *, fmt: str, chunk_size: int
) -> Iterable[GroundTruth]:
    """A selection read through a server-side cursor, ``chunk_size`` rows at a time, instead
    of loaded whole; the tabular formats need only the document and the reviewer joined."""
    if not isinstance(records, QuerySet):
        return records
    if fmt != "fhir":
        # Only the columns a row is made of (serializers.ground_truth_as_dict): no other
        # document or user column is read, decoded or kept.
        own = [f.attname for f in GroundTruth._meta.concrete_fields]
        records = (
            records.select_related(None)
            .select_related("document", "reviewer")
            .only(*own, *TABULAR_RELATED)
        )
    return records.iterator(chunk_size=chunk_size)


def _pieces(chunks: Iterable[bytes]) -> Iterator[bytes]:
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        pending.append(chunk)
        size += len(chunk)
        if size >= OUT_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


def export_stream(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    site_url: str,
    on_end: Callable[[Streamed], None],
    with_text: bool = False,
    chunk_size: int | None = None,
) -> Generator[bytes]:
    """A JSONL, CSV or FHIR export as it is made: the same bytes as ``export_bytes``.
    ``on_end`` gets the digest of every byte handed over and the record count once, when the
    stream ends, or is broken off (``complete`` False): one audit event per export."""
    if fmt not in STREAMED:
        raise ValueError(f"{fmt!r} exports are not streamed")
    size = chunk_size or (TEXT_CHUNK if with_text and fmt != "fhir" else STREAM_CHUNK)
    counted = _Counted(stream_records(records, fmt=fmt, chunk_size=size))
    if fmt == "fhir":
        chunks = fhir.bundle_chunks(counted, site_url=site_url)
    else:
        chunks = ground_truth_chunks(counted, fmt=fmt, with_text=with_text, chunk_size=size)
    digest = hashlib.sha256()
    complete = False
    try:
        for piece in _pieces(chunks):
            digest.update(piece)
            yield piece
        complete = True
    finally:
        on_end(Streamed(digest=digest.hexdigest(), records=counted.count, complete=complete))


def export_digest(output: bytes | Path) -> str:
    """The SHA-256 that names an export in the audit log: of the bytes, of the file, or of a
    folder's files (their relative paths and contents, in order)."""
    digest = hashlib.sha256()
    if isinstance(output, bytes):
        digest.update(output)
        return digest.hexdigest()
    files = sorted(p for p in output.rglob("*") if p.is_file()) if output.is_dir() else [output]
    for path in files:
        if output.is_dir():
            digest.update(str(path.relative_to(output)).encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def export_response(
    *,
    user: Any,
    records: QuerySet[GroundTruth],
    fmt: str,
    export_filter: ExportFilter,
    audit_filters: dict[str, Any],
    with_text: bool = False,
) -> HttpResponseBase:
    """The download of an export, for the page and the API alike. JSONL, CSV and FHIR stream
    and are audited when the stream ends (``interrupted`` when it is broken off); Parquet and
    the dataset are built in memory and audited at once. Raises ExportUnavailable (without
    pyarrow) before anything is audited."""
    disposition = f'attachment; filename="{FILENAMES[fmt]}"'
    if fmt in STREAMED:

        def audit(result: Streamed) -> None:
            export_audit(
                user=user,
                digest=result.digest,
                filters=audit_filters,
                records=result.records,
                complete=result.complete,
            )

        stream = export_stream(
            records, fmt=fmt, site_url=settings.SITE_URL, with_text=with_text, on_end=audit
        )
        streaming = StreamingHttpResponse(stream, content_type=CONTENT_TYPES[fmt])
        streaming["Content-Disposition"] = disposition
        return streaming
    body = export_bytes(
        records,
        fmt=fmt,
        export_filter=export_filter,
        site_url=settings.SITE_URL,
        with_text=with_text,
    )
    export_audit(
        user=user, digest=export_digest(body), filters=audit_filters, records=records.count()
    )
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = disposition
    return response
