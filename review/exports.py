"""Ground truth in every export format, from one selection of records.

- ``jsonl``, ``csv``: serializers.export_ground_truth (unchanged bytes);
- ``fhir``: a FHIR R4 Bundle (review.fhir);
- ``parquet``: the JSONL columns as one Parquet file (pyarrow, the ``datasets`` extra);
- ``hf``: a Hugging Face ``datasets`` folder: data/{train,validation,test}-00000-of-00001.parquet
  (a split by document, ``dataset_split``) plus a README.md dataset card (label set, splits,
  counts per type, source and state, the export filter). Downloads zip it.

On request (``deidentify``) every text of every row is de-identified with consistent surrogates
and each row names the method (review.deidentify).

Every row carries its version's state (``provisional`` while a check on it is open, ``final``
once the process is done; FHIR: ``docStatus``). What an export holds by default depends on who
reads it (``export_state``): JSONL, CSV and FHIR hand over every state, marked, so a consumer
sees what is still under a check; Parquet and the dataset are training sets and hold final
labels only, since a provisional label may still change.

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
from review.deidentify import DEID_FIELD, ExportScrub
from review.models import GroundTruth
from review.selectors import ground_truth_selection
from review.serializers import (
    EXPORT_FIELDS,
    TEXT_FIELD,
    deid_row,
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
# The dataset's splits and the share of documents (percent) each gets: see dataset_split.
HF_SPLITS = {"train": 80, "validation": 10, "test": 10}
# The state filter: the page, the API and the command take "all", "final" or "provisional";
# nothing (or empty) asks for the format's default. ExportFilter.state holds the outcome:
# "final", "provisional", or "" for every state.
STATE_ALL = "all"
STATE_CODES = (STATE_ALL, *GroundTruth.State.values)
DATASET_FORMATS = ("parquet", "hf")  # training sets: final labels only unless asked otherwise
STATE_DEFAULTS = (
    "By default JSON Lines, CSV and FHIR hold every state, each row marked provisional or "
    "final; Parquet and the Hugging Face dataset hold final labels only (they are training "
    "sets, and a provisional label can still change)."
)
END_BEFORE_START = "The end date is before the start date."
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


def export_state(requested: str | None, *, fmt: str) -> str:
    """The state filter of an export in ``fmt`` (ExportFilter.state) for what was asked:
    ``final`` or ``provisional`` as asked, every state ("") for ``all``, and when nothing was
    asked the format's default (``STATE_DEFAULTS``): final for the training sets (Parquet,
    the dataset), every state for the rest. Raises Refused (400) for anything else."""
    if not requested:
        return GroundTruth.State.FINAL if fmt in DATASET_FORMATS else ""
    if requested == STATE_ALL:
        return ""
    if requested in GroundTruth.State.values:
        return requested
    raise Refused(
        f"Unknown state {requested!r}; use one of {', '.join(STATE_CODES)}, or leave it out "
        "for the format's default.",
        code="unknown_state",
    )


@dataclass
class ExportFilter:
    """The filter that chose the records; the dataset card states it. ``state`` is
    ``final``, ``provisional`` or "" (every state). Raises Refused (400) when the end date is
    before the start date: such a filter would give an empty file that looks like a result."""

    start: Any = None
    end: Any = None
    source: str = ""
    doc_type: str = ""
    all_versions: bool = False
    state: str = ""

    def __post_init__(self) -> None:
        if self.start and self.end and self.end < self.start:
            raise Refused(END_BEFORE_START, code="end_before_start")
        if self.state not in ("", *GroundTruth.State.values):
            raise ValueError(f"unknown state {self.state!r}")

    def selection(self) -> QuerySet[GroundTruth]:
        """The records this filter chooses, in export order."""
        return ground_truth_selection(
            start=self.start,
            end=self.end,
            source=self.source,
            doc_type=self.doc_type,
            state=self.state,
            all_versions=self.all_versions,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "source": self.source or None,
            "type": self.doc_type or None,
            "state": self.state or STATE_ALL,
            "all_versions": self.all_versions,
        }


# -- Parquet ------------------------------------------------------------------------------------


def _columns(*, hf: bool, with_text: bool = False, deid: bool = False) -> list[tuple[str, Any]]:
    pa = _pyarrow()
    types = {
        "document_id": pa.string(),
        "document_sha256": pa.string(),
        "filename": pa.string(),
        "version": pa.int32(),
        "source": pa.string(),
        "state": pa.string(),
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
        DEID_FIELD: pa.string(),  # the de-identification method, only on request
    }
    names = list(EXPORT_FIELDS) + ([TEXT_FIELD] if with_text else [])
    names += [DEID_FIELD] if deid else []
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
    documents: int = 0
    num_bytes: int = 0  # the rows' Arrow size (the card's splits.num_bytes)
    per_type: Counter[str] = field(default_factory=Counter)
    per_source: Counter[str] = field(default_factory=Counter)
    per_state: Counter[str] = field(default_factory=Counter)
    last_document: str = ""

    def count(self, record: dict[str, Any]) -> None:
        self.rows += 1
        # Records come in export order (document, then version): a document's versions are
        # next to each other, so a new id is a new document.
        if record["document_id"] != self.last_document:
            self.documents += 1
            self.last_document = record["document_id"]
        self.per_type[record["dominant_type"]] += 1
        self.per_source[record["source"]] += 1
        self.per_state[record["state"]] += 1

    def __add__(self, other: Summary) -> Summary:
        return Summary(
            rows=self.rows + other.rows,
            documents=self.documents + other.documents,
            num_bytes=self.num_bytes + other.num_bytes,
            per_type=self.per_type + other.per_type,
            per_source=self.per_source + other.per_source,
            per_state=self.per_state + other.per_state,
        )


class _ParquetFile:
    """One Parquet file written BATCH_ROWS records at a time (each batch's page texts in one
    query): nothing is written, not even the file, until the first record or ``close``."""

    def __init__(
        self,
        sink: str | Path | IO[bytes],
        *,
        hf: bool,
        with_text: bool,
        schema: Any,
        deid: ExportScrub | None = None,
    ) -> None:
        self.sink = sink
        self.hf = hf
        self.with_text = with_text
        self.deid = deid
        self.schema = schema
        self.writer: Any = None
        self.batch: list[GroundTruth] = []
        self.summary = Summary()

    def add(self, truth: GroundTruth) -> None:
        self.batch.append(truth)
        if len(self.batch) >= BATCH_ROWS:
            self.flush()

    def flush(self) -> None:
        pa = _pyarrow()
        texts = page_texts(self.batch) if self.with_text or self.deid else {}
        rows = []
        for truth in self.batch:
            record = ground_truth_as_dict(truth)
            if self.with_text:
                record[TEXT_FIELD] = texts.get(record["document_id"], [])
            if self.deid:
                record = deid_row(self.deid, record, texts, with_text=self.with_text)
            self.summary.count(record)
            rows.append(_row(record, hf=self.hf))
        if self.writer is None:
            self.writer = pa.parquet.ParquetWriter(self.sink, self.schema, compression="zstd")
        table = pa.Table.from_pylist(rows, schema=self.schema)
        self.summary.num_bytes += table.nbytes  # the split's size in memory, as datasets counts
        self.writer.write_table(table)
        self.batch.clear()

    def finish(self) -> None:
        """Write what is left; a file with no record yet gets its schema and no row."""
        if self.batch or self.writer is None:
            self.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


def _schema(*, hf: bool, with_text: bool, deid: bool = False) -> Any:
    pa = _pyarrow()
    columns = _columns(hf=hf, with_text=with_text, deid=deid)
    metadata = {}
    if hf:
        # datasets reads the features (the class label) from this schema metadata.
        metadata[b"huggingface"] = json.dumps(
            {"info": {"features": _hf_features(columns)}}
        ).encode()
    return pa.schema(columns, metadata=metadata or None)


def parquet_write(
    records: Iterable[GroundTruth],
    sink: str | Path | IO[bytes],
    *,
    hf: bool = False,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> Summary:
    """Write the records to one Parquet file in batches; return what was written."""
    schema = _schema(hf=hf, with_text=with_text, deid=deid is not None)
    out = _ParquetFile(sink, hf=hf, with_text=with_text, schema=schema, deid=deid)
    try:
        for truth in records:
            out.add(truth)
        out.finish()
    finally:
        out.close()
    return out.summary


# -- Hugging Face dataset folder ------------------------------------------------------------------


def dataset_split(document_id: object) -> str:
    """The split of a document's rows: the first 8 bytes of the SHA-256 of its id (the
    ``document_id`` column, as text), big-endian, modulo 100: below 80 train, below 90
    validation, else test. Every version of a document falls in the same split, a document
    never changes split between exports, and anyone can recompute it from the rows."""
    digest = hashlib.sha256(str(document_id).encode()).digest()
    bucket = int.from_bytes(digest[:8], "big") % 100
    threshold = 0
    for split, share in HF_SPLITS.items():
        threshold += share
        if bucket < threshold:
            return split
    raise AssertionError("HF_SPLITS shares must add up to 100")


def hf_data_file(split: str) -> str:
    return f"data/{split}-00000-of-00001.parquet"


def hf_split_write(
    records: Iterable[GroundTruth],
    open_sink: Callable[[str], str | Path | IO[bytes]],
    *,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> dict[str, Summary]:
    """Write the dataset's rows, each to its document's split (``dataset_split``), reading
    the records once; return what each split holds. A split with no row gets no file (the
    datasets library refuses an empty Parquet file), except train when nothing matched, so
    the folder still has its schema. ``open_sink(split)`` gives where a split's file goes."""
    schema = _schema(hf=True, with_text=with_text, deid=deid is not None)
    files: dict[str, _ParquetFile] = {}

    def file_of(split: str) -> _ParquetFile:
        if split not in files:
            files[split] = _ParquetFile(
                open_sink(split), hf=True, with_text=with_text, schema=schema, deid=deid
            )
        return files[split]

    try:
        for truth in records:
            file_of(dataset_split(truth.document_id)).add(truth)
        if not files:
            file_of("train")
        for out in files.values():
            out.finish()
    finally:
        for out in files.values():
            out.close()
    return {split: files[split].summary for split in HF_SPLITS if split in files}


def _yaml(value: Any) -> str:
    # JSON scalars are valid YAML flow scalars; quoting every string keeps the card safe.
    return json.dumps(value, ensure_ascii=False)


def _state_line(export_filter: ExportFilter) -> str:
    if export_filter.state == GroundTruth.State.FINAL:
        return (
            "Final labels only: versions still under a check (a blind audit, a second review "
            "or an adjudication) are left out, since they may still change. A document whose "
            "current version is provisional is left out, not exported at an older version."
        )
    if export_filter.state == GroundTruth.State.PROVISIONAL:
        return (
            "Provisional labels only: versions still under a check, which may change. Not for "
            "training."
        )
    return (
        "Every state: the `state` column marks the provisional rows (still under a check; "
        "they may change) and the final ones."
    )


def dataset_card(
    splits: dict[str, Summary],
    export_filter: ExportFilter,
    *,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> str:
    """README.md for the folder: YAML metadata datasets understands (configs, features,
    splits) and Vetted's own (the filter, the split rule, the counts, the de-identification
    method), then a readable description."""
    columns = _columns(hf=True, with_text=with_text, deid=deid is not None)
    summary = sum(splits.values(), Summary())
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
    ]
    for split in splits:
        lines += [f"  - split: {split}", f"    path: {hf_data_file(split)}"]
    lines += ["dataset_info:", "  features:"]
    for name, arrow_type in columns:
        lines.append(f"  - name: {name}")
        if name == "label":
            lines += ["    dtype:", "      class_label:", "        names:"]
            lines += [f"          '{i}': {label}" for i, label in enumerate(LABELS)]
        else:
            lines.append(f"    dtype: {_yaml(_hf_dtype(arrow_type))}")
    lines.append("  splits:")
    for split, counted in splits.items():
        lines += [
            f"  - name: {split}",
            f"    num_bytes: {counted.num_bytes}",
            f"    num_examples: {counted.rows}",
        ]
    split_rule = "sha256(document_id) first 8 bytes, big-endian, mod 100: " + ", ".join(
        f"{split} {low}-{low + share - 1}" for split, share, low in _split_ranges()
    )
    lines += [
        "vetted:",
        "  export_filter:",
        *[f"    {key}: {_yaml(value)}" for key, value in export_filter.as_dict().items()],
        f"  split_by: {_yaml(split_rule)}",
        "  counts_per_split:",
        *[
            f"    {split}: {{rows: {splits[split].rows if split in splits else 0}, documents: "
            f"{splits[split].documents if split in splits else 0}}}"
            for split in HF_SPLITS
        ],
        "  counts_per_type:",
        *[f"    {label}: {summary.per_type.get(label, 0)}" for label in LABELS],
        "  counts_per_source:",
        *[
            f"    {source}: {summary.per_source.get(source, 0)}"
            for source in GroundTruth.Source.values
        ],
        "  counts_per_state:",
        *[f"    {state}: {summary.per_state.get(state, 0)}" for state in GroundTruth.State.values],
        f"  deidentification: {_yaml(deid.method if deid else None)}",
        "---",
        "",
        "# Vetted ground truth",
        "",
        "Document-type labels decided in Vetted: accepted by the verifier chain "
        "(AUTO_ACCEPTED) or validated or corrected by a clinician (SME_VALIDATED, "
        "SME_CORRECTED). One row per ground-truth record"
        + (" version." if export_filter.all_versions else " (the current version only)."),
        "",
        _state_line(export_filter),
        "",
        "## Splits",
        "",
        "By document, not by row: every version of one document is in the same split, so no "
        "document is in two. A document's split is fixed by its id (the first 8 bytes of the "
        "SHA-256 of `document_id`, big-endian, modulo 100: "
        + ", ".join(f"{low}-{low + share - 1} {split}" for split, share, low in _split_ranges())
        + "), so re-exports put it in the same split. A split with no row has no file.",
        "",
        "| split | documents | rows | file |",
        "|---|---|---|---|",
        *[
            f"| {split} | {splits[split].documents if split in splits else 0} | "
            f"{splits[split].rows if split in splits else 0} | "
            + (f"`{hf_data_file(split)}`" if split in splits else "none")
            + " |"
            for split in HF_SPLITS
        ],
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
        "`state` is `final` (the process is done) or `provisional` (a check on the version "
        "is still open). "
        "`classification` (the full classification: segments, mixture, evidence) and "
        "`fields` (extracted fields per segment) are JSON strings. `run_id`, `model` and "
        "`prompt_version` give each label's provenance; `reviewer` is the clinician who "
        "decided, if any. The original filename is left out: filenames may name the patient. "
        "Join on `document_id` or `document_sha256` if you need it.",
        "",
        *(_deid_lines(deid) if deid else []),
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        'ds = load_dataset("path/to/this/folder")  # a DatasetDict, one entry per split',
        'train = load_dataset("path/to/this/folder", split="train")',
        'train.features["label"].int2str(train[0]["label"])',
        "```",
        "",
    ]
    return "\n".join(lines)


def _deid_lines(deid: ExportScrub) -> list[str]:
    return [
        "## De-identification",
        "",
        f"De-identified with {deid.method}. Names, dates (the year kept), record and other "
        "numbers, phone numbers, addresses, e-mail and web addresses and ages over 89 in "
        "every text column (page text, the classification's snippets and reasoning, field "
        "values, the reason and the note) are replaced by surrogates of the same shape; the "
        "same value has the same surrogate in every row. Labels, versions, states and ids are "
        "unchanged. The `deidentification` column names the method on every row.",
        "",
    ]


def _split_ranges() -> list[tuple[str, int, int]]:
    ranges, low = [], 0
    for split, share in HF_SPLITS.items():
        ranges.append((split, share, low))
        low += share
    return ranges


def hf_write(
    records: Iterable[GroundTruth],
    folder: str | Path,
    *,
    export_filter: ExportFilter,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> dict[str, Summary]:
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    splits = hf_split_write(
        records, lambda split: folder / hf_data_file(split), with_text=with_text, deid=deid
    )
    card = dataset_card(splits, export_filter, with_text=with_text, deid=deid)
    (folder / "README.md").write_text(card, encoding="utf-8")
    return splits


def _hf_zip(
    records: Iterable[GroundTruth],
    *,
    export_filter: ExportFilter,
    with_text: bool = False,
    deid: ExportScrub | None = None,
) -> bytes:
    buffers: dict[str, io.BytesIO] = {}

    def open_sink(split: str) -> io.BytesIO:
        buffers[split] = io.BytesIO()
        return buffers[split]

    splits = hf_split_write(records, open_sink, with_text=with_text, deid=deid)
    files = {hf_data_file(split): buffers[split].getvalue() for split in splits}
    card = dataset_card(splits, export_filter, with_text=with_text, deid=deid)
    files["README.md"] = card.encode()
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
    deidentify: bool = False,
) -> bytes:
    """The whole export as one download (the export page and the API). ``with_text`` adds
    each page's text to the tabular formats; FHIR references the file instead.
    ``deidentify``: PHI in every text replaced by consistent surrogates (review.deidentify)."""
    deid = ExportScrub() if deidentify else None
    if fmt in ("jsonl", "csv"):
        return export_ground_truth(records, fmt=fmt, with_text=with_text, deid=deid)
    if fmt == "fhir":
        return fhir.bundle_bytes(records, site_url=site_url, deid=deid)
    if fmt == "parquet":
        buffer = io.BytesIO()
        parquet_write(records, buffer, with_text=with_text, deid=deid)
        return buffer.getvalue()
    if fmt == "hf":
        return _hf_zip(records, export_filter=export_filter, with_text=with_text, deid=deid)
    raise ValueError(f"unknown export format {fmt!r}")


def export_write(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    out: Path,
    export_filter: ExportFilter,
    site_url: str,
    with_text: bool = False,
    deidentify: bool = False,
) -> None:
    """Write an export to ``out``: a file, or for ``hf`` a folder (created if missing)."""
    deid = ExportScrub() if deidentify else None
    if fmt == "hf":
        hf_write(records, out, export_filter=export_filter, with_text=with_text, deid=deid)
    elif fmt == "fhir":
        with out.open("wb") as handle:
            for chunk in fhir.bundle_chunks(records, site_url=site_url, deid=deid):
                handle.write(chunk)
    elif fmt == "parquet":
        parquet_write(records, out, with_text=with_text, deid=deid)
    else:
        size = TEXT_CHUNK if with_text or deid else STREAM_CHUNK
        with out.open("wb") as handle:
            for chunk in ground_truth_chunks(
                stream_records(records, fmt=fmt, chunk_size=size),
                fmt=fmt,
                with_text=with_text,
                chunk_size=size,
                deid=deid,
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
    deidentify: bool = False,
) -> Generator[bytes]:
    """A JSONL, CSV or FHIR export as it is made: the same bytes as ``export_bytes``.
    ``on_end`` gets the digest of every byte handed over and the record count once, when the
    stream ends, or is broken off (``complete`` False): one audit event per export."""
    if fmt not in STREAMED:
        raise ValueError(f"{fmt!r} exports are not streamed")
    deid = ExportScrub() if deidentify else None
    texts = (with_text or deid is not None) and fmt != "fhir"
    size = chunk_size or (TEXT_CHUNK if texts else STREAM_CHUNK)
    counted = _Counted(stream_records(records, fmt=fmt, chunk_size=size))
    if fmt == "fhir":
        chunks = fhir.bundle_chunks(counted, site_url=site_url, deid=deid)
    else:
        chunks = ground_truth_chunks(
            counted, fmt=fmt, with_text=with_text, chunk_size=size, deid=deid
        )
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
    deidentify: bool = False,
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
            records,
            fmt=fmt,
            site_url=settings.SITE_URL,
            with_text=with_text,
            on_end=audit,
            deidentify=deidentify,
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
        deidentify=deidentify,
    )
    export_audit(
        user=user, digest=export_digest(body), filters=audit_filters, records=records.count()
    )
    response = HttpResponse(body, content_type=CONTENT_TYPES[fmt])
    response["Content-Disposition"] = disposition
    return response
