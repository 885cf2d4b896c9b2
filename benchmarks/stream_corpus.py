"""Rebuild the public stream corpus of bench_learning (docs/learning.md, "A stream of public
documents dev does not have") from git clones of its sources, outside the repository.

    python -m benchmarks.stream_corpus --clones DIR --out ../stream-data

DIR holds one clone per source repository, named ``owner+name`` (``git clone
https://github.com/HL7/C-CDA-Examples DIR/HL7+C-CDA-Examples``); each file is read at the commit
pinned below with ``git show``, so the same commits give the same folder. The XML documents are
HL7 C-CDA: what is written is the text a reader sees in the rendered document (its title, the
patient line, every section's title and narrative block; tables row by row), the way the
development corpus keeps the text content of its XML and docx files. Nothing in the repository
holds a document's text; the labels below were given by reading each rendered document.
"""

from __future__ import annotations

import argparse
import csv
import random
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

# owner/name -> (commit, licence)
SOURCES: dict[str, tuple[str, str]] = {
    "HL7/C-CDA-Examples": ("ad5007abd912a45bbd04ce96e871c70954c2b2c2", "CC0 1.0"),
    "jmandel/sample_ccdas": ("39aab8a882cd166bbbeff7f79995c7f09eb588bc", "CC BY 4.0"),
}

# stream_corpus.csv: doc_id,label,source,repository,path (in the repository). Labels by reading
# each rendered document: EHR exports (summaries of care, CCDs, discharge, transfer and referral
# summaries), notes and operative reports are clinical notes; the results-section examples are
# routine lab results, `other` (DESIGN.md); the chest X-ray report and result are radiology.
# Left out: the unstructured documents (an embedded PDF or base64 text) and an empty export
# (Kinsights).
MANIFEST = Path(__file__).with_name("stream_corpus.csv")

SEED = 33

_WRAP = (
    b'<wrapper xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    b'xmlns:sdtc="urn:hl7-org:sdtc" xmlns:voc="urn:hl7-org:v3/voc">'
)


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _words(element: ET.Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _child(element: ET.Element, *names: str) -> ET.Element | None:
    for name in names:
        found = next((c for c in element if _local(c.tag) == name), None)
        if found is None:
            return None
        element = found
    return element


def _children(element: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in element if _local(c.tag) == name]


def narrative(text: ET.Element) -> str:
    """A CDA narrative block as lines: a table row per line, its cells separated by spaces."""
    out: list[str] = []

    def walk(e: ET.Element) -> None:
        tag = _local(e.tag)
        if tag == "tr":
            out.append("\n" + "  ".join(_words(c) for c in e if _local(c.tag) in ("td", "th")))
            out.append("\n" + (e.tail or ""))
            return
        if tag in ("paragraph", "item", "caption", "list", "table", "br"):
            out.append("\n")
        if e.text and tag != "table":
            out.append(e.text)
        for c in e:
            walk(c)
        if tag in ("paragraph", "item", "caption"):
            out.append("\n")
        if e.tail:
            out.append(e.tail)

    walk(text)
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    return "\n".join(line for line in lines if line)


def render(data: bytes) -> str:
    """The text of a C-CDA document or of a section fragment, as its rendering shows it. Every
    element's text is taken as written: a name whose parts have no whitespace between them runs
    together (one Kareo export), as the stream was built and measured."""
    try:
        root = ET.fromstring(data)
    except ET.ParseError:  # a fragment using a prefix it does not declare
        body = re.sub(rb"^\s*<\?xml[^>]*\?>", b"", data)
        root = ET.fromstring(_WRAP + body + b"</wrapper>")
    parts: list[str] = []
    title = _child(root, "title")
    if title is not None and _words(title) and _local(root.tag) != "section":
        parts.append(_words(title))
    patient = _child(root, "recordTarget", "patientRole", "patient")
    if patient is not None:
        name = _child(patient, "name")
        if name is not None:
            parts.append("Patient: " + _words(name))
        facts = []
        birth, sex = _child(patient, "birthTime"), _child(patient, "administrativeGenderCode")
        if birth is not None and birth.get("value"):
            facts.append(f"DOB: {birth.get('value')}")
        if sex is not None and sex.get("code"):
            facts.append(f"Sex: {sex.get('code')}")
        if facts:
            parts.append("  ".join(facts))

    def section(s: ET.Element, depth: int) -> None:
        heading = _child(s, "title")
        if heading is not None and _words(heading):
            words = _words(heading)
            parts.append("\n" + (words.upper() if depth == 0 else words))
        text = _child(s, "text")
        if text is not None:
            lines = narrative(text)
            if lines:
                parts.append(lines)
        for component in _children(s, "component"):
            for sub in _children(component, "section"):
                section(sub, depth + 1)

    structured = _child(root, "component", "structuredBody")
    if structured is not None:
        for component in _children(structured, "component"):
            for s in _children(component, "section"):
                section(s, 0)
    elif _local(root.tag) == "section":
        section(root, 0)
    else:
        for s in root.iter():
            if _local(s.tag) == "section":
                section(s, 0)
                break
    return "\n".join(parts).strip() + "\n"


def build(clones: Path, out: Path) -> int:
    (out / "docs").mkdir(parents=True, exist_ok=True)
    rows = []
    with MANIFEST.open(newline="", encoding="utf-8") as handle:
        manifest = list(csv.DictReader(handle))
    for entry in manifest:
        doc_id, repo, path = entry["doc_id"], entry["repository"], entry["path"]
        label, source = entry["label"], entry["source"]
        commit = SOURCES[repo][0]
        git_dir = clones / repo.replace("/", "+")
        data = subprocess.run(
            ["git", "-C", str(git_dir), "show", f"{commit}:{path}"],
            check=True,
            capture_output=True,
        ).stdout
        (out / "docs" / f"{doc_id}.txt").write_text(render(data), encoding="utf-8")
        rows.append(
            {"doc_id": doc_id, "label": label, "source": source, "path": f"docs/{doc_id}.txt"}
        )
    # The stream's order: shuffled once with a fixed seed, so sources and kinds interleave as
    # they would arrive; bench_learning --stream reads labels.csv in row order.
    random.Random(SEED).shuffle(rows)
    with (out / "labels.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["doc_id", "label", "source", "path"])
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clones", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    args = parser.parse_args()
    print(f"{build(args.clones, args.out)} documents written to {args.out}")


if __name__ == "__main__":
    main()
