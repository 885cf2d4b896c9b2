"""Ground truth in every export format, from one selection of records.

- ``jsonl``, ``csv``: serializers.export_ground_truth (unchanged bytes);
- ``fhir``: a FHIR R4 Bundle (review.fhir);
- ``parquet``: the JSONL columns as one Parquet file (pyarrow, the ``datasets`` extra);
- ``hf``: a Hugging Face ``datasets`` folder: data/train-00000-of-00001.parquet plus a README.md
  dataset card (label set, counts per type and source, the export filter). Downloads zip it.

Every writer consumes an iterable of records once, in order, so the same filter gives the
same rows in every format and a later change can stream records from the database.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from django.db.models import QuerySet

from config.errors import Refused
from engine.schemas import DISPLAY_NAMES, DOC_TYPES
from review import fhir
from review.models import GroundTruth
from review.selectors import ground_truth_selection
from review.serializers import EXPORT_FIELDS, export_ground_truth, ground_truth_as_dict

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


def _columns(*, hf: bool) -> list[tuple[str, Any]]:
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
    }
    if not hf:
        return [(name, types[name]) for name in EXPORT_FIELDS]
    # The dataset leaves the filename out (it may name the patient) and adds the class label.
    names = [n for n in EXPORT_FIELDS if n != "filename"]
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
    records: Iterable[GroundTruth], sink: str | Path | IO[bytes], *, hf: bool = False
) -> Summary:
    """Write the records to one Parquet file in batches; return what was written."""
    pa = _pyarrow()
    columns = _columns(hf=hf)
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
        batch: list[dict[str, Any]] = []
        for truth in records:
            record = ground_truth_as_dict(truth)
            summary.rows += 1
            summary.per_type[record["dominant_type"]] += 1
            summary.per_source[record["source"]] += 1
            batch.append(_row(record, hf=hf))
            if len(batch) >= BATCH_ROWS:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or summary.rows == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    finally:
        writer.close()
    return summary


# -- Hugging Face dataset folder ------------------------------------------------------------------


def _yaml(value: Any) -> str:
    # JSON scalars are valid YAML flow scalars; quoting every string keeps the card safe.
    return json.dumps(value, ensure_ascii=False)


def dataset_card(summary: Summary, export_filter: ExportFilter) -> str:
    """README.md for the folder: YAML metadata datasets understands (configs, features,
    splits) and Vetted's own (the filter, the counts), then a readable description."""
    columns = _columns(hf=True)
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
    records: Iterable[GroundTruth], folder: str | Path, *, export_filter: ExportFilter
) -> Summary:
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    summary = parquet_write(records, folder / HF_DATA_FILE, hf=True)
    (folder / "README.md").write_text(dataset_card(summary, export_filter), encoding="utf-8")
    return summary


def _hf_zip(records: Iterable[GroundTruth], *, export_filter: ExportFilter) -> bytes:
    data = io.BytesIO()
    summary = parquet_write(records, data, hf=True)
    files = {
        "README.md": dataset_card(summary, export_filter).encode(),
        HF_DATA_FILE: data.getvalue(),
    }
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name in sorted(files):
            zipped.writestr(zipfile.ZipInfo(f"ground-truth/{name}", _ZIP_TIME), files[name])
    return archive.getvalue()


# -- one entry point per destination --------------------------------------------------------------


def export_bytes(
    records: Iterable[GroundTruth], *, fmt: str, export_filter: ExportFilter, site_url: str
) -> bytes:
    """The whole export as one download (the export page and the API)."""
    if fmt in ("jsonl", "csv"):
        return export_ground_truth(records, fmt=fmt)
    if fmt == "fhir":
        return fhir.bundle_bytes(records, site_url=site_url)
    if fmt == "parquet":
        buffer = io.BytesIO()
        parquet_write(records, buffer)
        return buffer.getvalue()
    if fmt == "hf":
        return _hf_zip(records, export_filter=export_filter)
    raise ValueError(f"unknown export format {fmt!r}")


def export_write(
    records: Iterable[GroundTruth],
    *,
    fmt: str,
    out: Path,
    export_filter: ExportFilter,
    site_url: str,
) -> None:
    """Write an export to ``out``: a file, or for ``hf`` a folder (created if missing)."""
    if fmt == "hf":
        hf_write(records, out, export_filter=export_filter)
    elif fmt == "fhir":
        with out.open("wb") as handle:
            for chunk in fhir.bundle_chunks(records, site_url=site_url):
                handle.write(chunk)
    elif fmt == "parquet":
        parquet_write(records, out)
    else:
        out.write_bytes(export_bytes(records, fmt=fmt, export_filter=export_filter, site_url=""))
