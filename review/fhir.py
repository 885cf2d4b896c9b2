"""Ground truth as FHIR R4: a DocumentReference per record, a Provenance naming who decided
(the model and prompt version, or the clinician), Observations for extracted fields that
have a standard code, and a Device per model; together a Bundle of type "collection".

Why "collection": a "document" Bundle is one attested clinical document that must start with
a Composition, a "transaction" would order the receiver to write, and a "searchset" answers a
search. An export is a set of resources handed over with no further obligation: a collection.

Every resource is checked against fhir.resources' R4B models before it is written. R4B
(4.3.0) leaves DocumentReference, Provenance, Observation, Device and Bundle as they are in R4
(4.0.1), and fhir.resources 7+ ships R4B and R5 but no separate R4 package.

A record's state shows as FHIR's status of the content: ``docStatus`` on the
DocumentReference and ``status`` on its Observations are ``preliminary`` while a check on the
version is open and ``final`` once it is done (``doc_status``).

Identifiers are stable: resource ids are UUIDv5 of this site's URL and the record, so the
same ground truth exports to the same bytes, and a correction can point at the id the
consumer received for the version it replaces. The bundle is written entry by entry from any
iterable of records, so it can be streamed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from functools import cache
from typing import Any

from engine.schemas import DISPLAY_NAMES, DocType
from review.deidentify import ExportScrub
from review.models import GroundTruth

LOINC = "http://loinc.org"
RFC3986 = "urn:ietf:rfc:3986"
UCUM = "http://unitsofmeasure.org"
PARTICIPANT_TYPE = "http://terminology.hl7.org/CodeSystem/provenance-participant-type"
DATA_OPERATION = "http://terminology.hl7.org/CodeSystem/v3-DataOperation"
OBSERVATION_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
OBSERVATION_VALUE = "http://terminology.hl7.org/CodeSystem/v3-ObservationValue"
# A de-identified export: its resources are labelled pseudonymized, and every Provenance names
# the de-identifier (a Device, its method and version) as the assembler that transformed it.
PSEUDONYMIZED = {"system": OBSERVATION_VALUE, "code": "PSEUDED", "display": "pseudonymized"}

# LOINC Document Ontology codes for Vetted's five types.
DOCUMENT_TYPE_CODES: dict[str, tuple[str, str]] = {
    DocType.PATHOLOGY.value: ("11526-1", "Pathology study"),
    DocType.RADIOLOGY.value: ("18748-4", "Diagnostic imaging study"),
    DocType.GENOMIC.value: ("51969-4", "Genetic analysis report"),
    DocType.CLINICAL_NOTE.value: ("11506-3", "Progress note"),
    # "other" is what is left when the four report types are ruled out: fax covers, forms,
    # requisitions, referral letters. 51851-4 "Administrative note" is the Document
    # Ontology's kind for administrative paperwork; a clinical code would claim more than
    # Vetted knows about the document.
    DocType.OTHER.value: ("51851-4", "Administrative note"),
}

# Extracted fields with a standard LOINC observation code. Sources: the HL7 Breast Cancer
# Data IG value sets (ER 16112-5, PR 16113-3 "[Interpretation] in Tissue"), the ICHOM breast
# cancer IG (HER2 48676-1), and the HL7 Genomics Reporting IG / mCODE (MSI 81695-9, TMB
# 94076-7 with UCUM 1/1000000{Base}). Fields without an agreed code (histology, grade,
# margins, Ki-67, dates, free-text findings) stay in the JSON exports only.
FIELD_CODES: dict[str, tuple[str, str]] = {
    "er_status": ("16112-5", "Estrogen receptor [Interpretation] in Tissue"),
    "pr_status": ("16113-3", "Progesterone receptor [Interpretation] in Tissue"),
    "her2_status": ("48676-1", "HER2 [Interpretation] in Tissue"),
    "msi_status": (
        "81695-9",
        "Microsatellite instability [Interpretation] in Cancer specimen Qualitative",
    ),
    "tmb": ("94076-7", "Mutations/Megabase [# Ratio] in Tumor"),
}
# LOINC answer codes, used only when the extracted value says exactly one of them.
ANSWERS = {
    "positive": ("LA6576-8", "Positive"),
    "negative": ("LA6577-6", "Negative"),
}
MSI_STABLE = ("LA14122-8", "Stable")


def _instant(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


class Ids:
    """Stable UUIDs for one site's resources (UUIDv5 under the site's URL)."""

    def __init__(self, site_url: str) -> None:
        self.site_url = site_url.rstrip("/")
        self.namespace = uuid.uuid5(uuid.NAMESPACE_URL, self.site_url)

    def of(self, *parts: object) -> str:
        return str(uuid.uuid5(self.namespace, "/".join(str(p) for p in parts)))

    def document_reference(self, truth_id: int) -> str:
        return self.of("DocumentReference", truth_id)

    def system(self, name: str) -> str:
        return f"{self.site_url}/fhir/{name}"


def _urn(resource_id: str) -> str:
    return f"urn:uuid:{resource_id}"


def _coding(system: str, code: str, display: str) -> dict[str, str]:
    return {"system": system, "code": code, "display": display}


def device_resource(ids: Ids, *, classifier: str, model: str, prompt_version: str) -> dict:
    """The classifier that produced a record: its model and prompt version."""
    names = [{"name": f"Vetted {classifier or 'classifier'}", "type": "user-friendly-name"}]
    if model:
        names.append({"name": model, "type": "model-name"})
    resource: dict[str, Any] = {
        "resourceType": "Device",
        "id": ids.of("Device", classifier, model, prompt_version),
        "status": "active",
        "deviceName": names,
        "type": {"text": "Document classifier (Vetted)"},
    }
    if prompt_version:
        resource["version"] = [{"type": {"text": "prompt version"}, "value": prompt_version}]
    return resource


def _reviewer_reference(ids: Ids, truth: GroundTruth) -> dict[str, Any]:
    reviewer = truth.reviewer
    assert reviewer is not None
    return {
        "type": "Practitioner",
        "identifier": {"system": ids.system("sid/user"), "value": reviewer.get_username()},
        "display": reviewer.get_full_name() or reviewer.get_username(),
    }


def _replaced_reference(ids: Ids, truth: GroundTruth, *, in_bundle: bool) -> dict[str, Any]:
    previous = ids.document_reference(truth.supersedes_id)  # type: ignore[arg-type]
    reference: dict[str, Any] = {
        "type": "DocumentReference",
        "identifier": {"system": RFC3986, "value": _urn(previous)},
    }
    if in_bundle:
        reference["reference"] = _urn(previous)
    return reference


def doc_status(truth: GroundTruth) -> str:
    """FHIR's status of the content (``docStatus``, and an Observation's ``status``), from
    the version's state: ``preliminary`` while a check on it is open (it may still change),
    ``final`` once the process is done. ``status`` (current or superseded) says something
    else: whether a later version replaced this one."""
    return "final" if truth.state == GroundTruth.State.FINAL else "preliminary"


def document_reference(
    ids: Ids, truth: GroundTruth, *, current: bool, previous_in_bundle: bool
) -> dict[str, Any]:
    document = truth.document
    code, display = DOCUMENT_TYPE_CODES[truth.dominant_type]
    name = DISPLAY_NAMES.get(DocType(truth.dominant_type), truth.dominant_type)
    resource_id = ids.document_reference(truth.pk)
    resource: dict[str, Any] = {
        "resourceType": "DocumentReference",
        "id": resource_id,
        "masterIdentifier": {"system": RFC3986, "value": _urn(resource_id)},
        "identifier": [{"system": RFC3986, "value": _urn(str(document.pk))}],
        "status": "current" if current else "superseded",
        "docStatus": doc_status(truth),
        "type": {
            "coding": [
                _coding(LOINC, code, display),
                _coding(ids.system("CodeSystem/document-type"), truth.dominant_type, name),
            ],
            "text": name,
        },
        "date": _instant(truth.created_at),
        "description": f"{name}: {truth.get_source_display()}, version {truth.version}",
        "content": [
            {
                "attachment": {
                    # A link to the file in Vetted (login required), never the bytes.
                    "contentType": document.mime_type,
                    "url": f"{ids.site_url}/documents/{document.pk}/file/",
                    "size": document.size_bytes,
                    "creation": _instant(document.created_at),
                }
            }
        ],
    }
    if document.is_deleted:
        # Deleted under the retention policy: no file to link to, no hash of it.
        resource["content"][0]["attachment"] = {
            "contentType": document.mime_type,
            "title": "Deleted under the retention policy",
            "creation": _instant(document.created_at),
        }
    else:
        resource["identifier"].append(
            {"system": ids.system("sid/document-sha256"), "value": document.sha256}
        )
    if truth.supersedes_id:
        resource["relatesTo"] = [
            {
                "code": "replaces",
                "target": _replaced_reference(ids, truth, in_bundle=previous_in_bundle),
            }
        ]
    return resource


def provenance(
    ids: Ids, truth: GroundTruth, *, device_id: str | None, previous_in_bundle: bool
) -> dict[str, Any]:
    """Who decided: the model (author) for an auto-accepted record; the model (author) and
    the clinician (verifier) for a validated one; the clinician (author) for a correction,
    informed by the model's answer."""
    device = {"reference": _urn(device_id)} if device_id else None
    agents: list[dict[str, Any]] = []

    def agent(role: str, display: str, who: dict[str, Any]) -> None:
        agents.append({"type": {"coding": [_coding(PARTICIPANT_TYPE, role, display)]}, "who": who})

    corrected = truth.source == GroundTruth.Source.SME_CORRECTED
    if truth.reviewer_id and corrected:
        agent("author", "Author", _reviewer_reference(ids, truth))
        if device:
            agent("informant", "Informant", device)
    else:
        if device:
            agent("author", "Author", device)
        if truth.reviewer_id:
            agent("verifier", "Verifier", _reviewer_reference(ids, truth))
    if not agents:  # a record with neither a run nor a reviewer (an import): Vetted itself
        agent("custodian", "Custodian", {"display": "Vetted"})
    docref = ids.document_reference(truth.pk)
    resource: dict[str, Any] = {
        "resourceType": "Provenance",
        "id": ids.of("Provenance", truth.pk),
        "target": [{"reference": _urn(docref)}],
        "recorded": _instant(truth.created_at),
        "activity": {
            "coding": [
                _coding(DATA_OPERATION, "UPDATE", "revise")
                if truth.supersedes_id
                else _coding(DATA_OPERATION, "CREATE", "create")
            ]
        },
        "agent": agents,
    }
    if truth.supersedes_id:
        resource["entity"] = [
            {
                "role": "revision",
                "what": _replaced_reference(ids, truth, in_bundle=previous_in_bundle),
            }
        ]
    return resource


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(str(v) for v in value if v not in (None, ""))
    return "" if value is None else str(value).strip()


def _value(name: str, text: str) -> dict[str, Any] | None:
    """The Observation's value[x], or None when the value cannot be expressed faithfully."""
    if name == "tmb":
        try:
            number = float(text.split()[0])
        except (ValueError, IndexError):
            return None
        return {
            "valueQuantity": {
                "value": number,
                "unit": "mutations/Mb",
                "system": UCUM,
                "code": "1/1000000{Base}",
            }
        }
    lowered = text.lower()
    concept: dict[str, Any] = {"text": text}
    said = [word for word in ANSWERS if word in lowered]
    if name != "msi_status" and len(said) == 1 and "equivocal" not in lowered:
        concept["coding"] = [_coding(LOINC, *ANSWERS[said[0]])]
    if name == "msi_status" and lowered in {"mss", "microsatellite stable"}:
        concept["coding"] = [_coding(LOINC, *MSI_STABLE)]
    return {"valueCodeableConcept": concept}


def deidentifier_device(ids: Ids, deid: ExportScrub) -> dict[str, Any]:
    """The de-identification method of a de-identified export, as a Device."""
    return {
        "resourceType": "Device",
        "id": ids.of("Device", "deidentifier", deid.method),
        "status": "active",
        "deviceName": [{"name": "Vetted de-identifier", "type": "user-friendly-name"}],
        "type": {"text": "De-identification (Vetted)"},
        "version": [{"type": {"text": "method"}, "value": deid.method}],
    }


def _pseudonymized(resource: dict[str, Any]) -> dict[str, Any]:
    resource["meta"] = {"security": [dict(PSEUDONYMIZED)]}
    return resource


def observations(
    ids: Ids, truth: GroundTruth, *, deid: ExportScrub | None = None
) -> list[dict[str, Any]]:
    """Coded fields found in the record (reviewer corrections included), ``preliminary`` or
    ``final`` as the version's state is (``doc_status``). Not by the source: an auto-accepted
    answer is final by policy once no audit of it is open (the verifier chain accepted it and
    the audit sample is what checks that policy), and a clinician's decision is preliminary
    while its second review or adjudication is open."""
    status = doc_status(truth)
    docref = _urn(ids.document_reference(truth.pk))
    found = []
    for segment in truth.fields or []:
        for name, data in sorted((segment.get("fields") or {}).items()):
            if name not in FIELD_CODES or data.get("status") != "found":
                continue
            text = _text(data.get("value"))
            if deid and text:
                text = deid.text(text)
            value = _value(name, text) if text else None
            if value is None:
                continue
            code, display = FIELD_CODES[name]
            resource: dict[str, Any] = {
                "resourceType": "Observation",
                "id": ids.of("Observation", truth.pk, segment.get("segment", 0), name),
                "status": status,
                "category": [
                    {"coding": [_coding(OBSERVATION_CATEGORY, "laboratory", "Laboratory")]}
                ],
                "code": {"coding": [_coding(LOINC, code, display)], "text": display},
                "issued": _instant(truth.created_at),
                "derivedFrom": [{"reference": docref}],
                **value,
            }
            if data.get("corrected"):
                resource["note"] = [{"text": "Value corrected by a clinician in Vetted."}]
            found.append(resource)
    return found


@cache
def _models() -> dict[str, Any]:
    # Imported on first use: the R4B package is large and only exports need it.
    from fhir.resources.R4B.bundle import Bundle
    from fhir.resources.R4B.device import Device
    from fhir.resources.R4B.documentreference import DocumentReference
    from fhir.resources.R4B.observation import Observation
    from fhir.resources.R4B.provenance import Provenance

    return {
        "Bundle": Bundle,
        "Device": Device,
        "DocumentReference": DocumentReference,
        "Observation": Observation,
        "Provenance": Provenance,
    }


def validate(resource: dict[str, Any]) -> dict[str, Any]:
    """The resource, once fhir.resources' model for its type accepts it (raises if not)."""
    _models()[resource["resourceType"]].model_validate(resource)
    return resource


def bundle_entries(
    records: Iterable[GroundTruth], *, site_url: str, deid: ExportScrub | None = None
) -> Iterator[dict]:
    """Bundle entries, record by record: a Device the first time a model appears, then the
    record's DocumentReference, Provenance and Observations. Records come in export order
    (document, then version), so a replaced version in the same export is already out.
    With ``deid``: the de-identifier's Device first, every Provenance naming it as assembler,
    the DocumentReferences and Observations labelled pseudonymized, field texts scrubbed."""
    ids = Ids(site_url)
    devices: set[str] = set()
    seen: set[int] = set()
    deidentifier = deidentifier_device(ids, deid) if deid else None
    if deidentifier:
        yield {"fullUrl": _urn(deidentifier["id"]), "resource": validate(deidentifier)}
    for truth in records:
        current = not _is_superseded(truth)
        device_id = None
        if truth.run_id or truth.model:
            run = truth.run
            device = device_resource(
                ids,
                classifier=run.classifier if run else "",
                model=truth.model,
                prompt_version=truth.prompt_version,
            )
            device_id = device["id"]
            if device_id not in devices:
                devices.add(device_id)
                yield {"fullUrl": _urn(device_id), "resource": validate(device)}
        previous_in_bundle = truth.supersedes_id in seen
        resources = [
            document_reference(ids, truth, current=current, previous_in_bundle=previous_in_bundle),
            provenance(ids, truth, device_id=device_id, previous_in_bundle=previous_in_bundle),
            *observations(ids, truth, deid=deid),
        ]
        if deidentifier:
            resources = [
                r if r["resourceType"] == "Provenance" else _pseudonymized(r) for r in resources
            ]
            resources[1]["agent"].append(
                {
                    "type": {"coding": [_coding(PARTICIPANT_TYPE, "assembler", "Assembler")]},
                    "who": {"reference": _urn(deidentifier["id"])},
                }
            )
        for resource in resources:
            yield {"fullUrl": _urn(resource["id"]), "resource": validate(resource)}
        seen.add(truth.pk)


def _is_superseded(truth: GroundTruth) -> bool:
    try:
        return truth.superseded_by is not None
    except GroundTruth.DoesNotExist:
        return False


def bundle_chunks(
    records: Iterable[GroundTruth], *, site_url: str, deid: ExportScrub | None = None
) -> Iterator[bytes]:
    """The Bundle as JSON, one entry per line, written as the records are read."""
    yield b'{"resourceType":"Bundle","type":"collection","entry":['
    separator = b"\n"
    for entry in bundle_entries(records, site_url=site_url, deid=deid):
        yield separator + json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()
        separator = b",\n"
    yield b"\n]}\n"


def bundle_bytes(
    records: Iterable[GroundTruth], *, site_url: str, deid: ExportScrub | None = None
) -> bytes:
    return b"".join(bundle_chunks(records, site_url=site_url, deid=deid))
