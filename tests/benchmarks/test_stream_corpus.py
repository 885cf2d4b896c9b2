import csv
from pathlib import Path

from benchmarks.stream_corpus import MANIFEST, SOURCES, render

DOCUMENT = b"""<?xml version="1.0"?>
<ClinicalDocument xmlns="urn:hl7-org:v3">
  <title>Discharge Summary</title>
  <recordTarget><patientRole><patient>
    <name>
      <given>Test</given>
      <family>Person</family>
    </name>
    <administrativeGenderCode code="F"/><birthTime value="19700101"/>
  </patient></patientRole></recordTarget>
  <component><structuredBody>
    <component><section><title>Hospital Course</title>
      <text><paragraph>Admitted with   chest pain.</paragraph>
      <paragraph>Discharged home.</paragraph>
      </text>
      <component><section><title>Labs</title>
        <text><table><thead><tr><th>Test</th><th>Value</th></tr></thead>
        <tbody><tr><td>Na</td><td>140 mmol/L</td></tr></tbody></table></text>
      </section></component>
    </section></component>
  </structuredBody></component>
</ClinicalDocument>"""


def test_render_shows_what_the_rendered_document_shows() -> None:
    assert render(DOCUMENT) == (
        "Discharge Summary\nPatient: Test Person\nDOB: 19700101  Sex: F\n\nHOSPITAL COURSE\n"
        "Admitted with chest pain.\nDischarged home.\n\nLabs\nTest Value\nNa 140 mmol/L\n"
    )


def test_a_fragment_with_an_undeclared_prefix_is_read() -> None:
    fragment = (
        b'<section><title>Results</title><text>CO2 27 mmol/L</text><entry xsi:type="x"/></section>'
    )
    assert render(fragment) == "RESULTS\nCO2 27 mmol/L\n"


def test_the_manifest_names_pinned_sources_and_known_labels() -> None:
    with Path(MANIFEST).open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 87
    assert len({r["doc_id"] for r in rows}) == len(rows)
    assert {r["repository"] for r in rows} <= set(SOURCES)
    assert {r["label"] for r in rows} <= {
        "clinical_note",
        "pathology",
        "genomic",
        "radiology",
        "other",
    }
