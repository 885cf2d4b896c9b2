"""Gathered hard negatives for issue 32: public patient-education pages about diseases, tests
and genes, which talk about biopsies, pathology, scans and variants without reporting on any
patient (a report type's vocabulary, paperwork's purpose). Bench tooling: the documents are read
at run time from a clone of their source and written to a folder outside the repository, never
committed.

Source: MedQuAD (Ben Abacha and Demner-Fushman, BMC Bioinformatics 2019;
github.com/abachaa/MedQuAD, licence CC BY 4.0), question-answer pairs taken from NIH websites
(cancer.gov's PDQ patient summaries, Genetics Home Reference, NIDDK, NHLBI, NINDS, CDC,
NIHSeniorHealth). One page of a website is one XML file; it becomes one document as its reader
met it: the topic as a title, then each question as a heading over its answer. The subsets
whose answers MedQuAD removed (MedlinePlus's A.D.A.M., drugs, herbs) are skipped.

Every document is labelled ``other``: a leaflet is paperwork about reports, whatever it says.
The split is the project's frozen rule (``benchmarks.splits.split_of``, by the hash of the
written file), fixed before any figure was taken.

Pure: no Django.
"""

from __future__ import annotations

import csv
import hashlib
import re
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

# Subset folder -> how many of its pages to take (None: all), chosen before any measurement:
# the subsets whose pages explain tests, biopsies, scans and genes whole, and a sample of the two
# largest (by the hash of the file's name, so the sample is the same in every run).
SUBSETS: dict[str, int | None] = {
    "1_CancerGov_QA": None,
    "3_GHR_QA": 120,
    "5_NIDDK_QA": None,
    "6_NINDS_QA": 60,
    "7_SeniorHealth_QA": None,
    "8_NHLBI_QA_XML": None,
    "9_CDC_QA": None,
}
SOURCE = "medquad"
LABEL = "other"
MIN_CHARS = 400  # a page with less than this of answers is a stub, not a leaflet
MAX_CHARS = 30000  # the longest PDQ summaries are cut here, at a paragraph
_SPACE = re.compile(r"[ \t]+")
_BULLET = re.compile(r"\s{2,}-\s+")  # the websites' bullets, as the XML keeps them


@dataclass(frozen=True)
class Negative:
    doc_id: str
    subset: str
    url: str
    text: str


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def _paragraphs(answer: str) -> list[str]:
    """An answer as its reader sees it: one paragraph a line, bullets on lines of their own."""
    out = []
    for raw in answer.splitlines():
        for part in _BULLET.split(raw):
            part = _SPACE.sub(" ", part).strip().removeprefix("- ").strip()
            if part:
                out.append(part)
    return out


def page_text(xml: str) -> tuple[str, str, str]:
    """(MedQuAD's id, url, text) of one XML page."""
    root = ET.fromstring(xml)
    focus = (root.findtext("Focus") or "").strip()
    lines = [focus, ""] if focus else []
    for pair in root.iter("QAPair"):
        question = _SPACE.sub(" ", (pair.findtext("Question") or "")).strip()
        answer = _paragraphs(pair.findtext("Answer") or "")
        if not answer:
            continue
        lines += [question, *answer, ""]
    text = "\n".join(lines).strip() + "\n"
    if len(text) > MAX_CHARS:
        text = text[: text.rfind("\n", 0, MAX_CHARS) + 1]
    return root.get("id", ""), root.get("url", ""), text


def gather(git_dir: Path, commit: str = "HEAD") -> list[Negative]:
    """The negatives of a MedQuAD clone (its git directory), in a fixed order."""
    out = []
    for subset, take in SUBSETS.items():
        names = sorted(_git(git_dir, "ls-tree", "--name-only", commit, f"{subset}/").split())
        if take is not None:
            names = sorted(names, key=lambda n: hashlib.sha256(n.encode()).hexdigest())[:take]
            names.sort()
        for name in names:
            _, url, text = page_text(_git(git_dir, "show", f"{commit}:{name}"))
            body = len(text) - len(text.split("\n", 1)[0])
            if body < MIN_CHARS:
                continue
            stem = Path(name).stem.replace("-", "_")
            out.append(Negative(f"medquad_{subset.split('_')[0]}_{stem}", subset, url, text))
    return out


def write(negatives: list[Negative], folder: Path) -> None:
    """A labelled folder (``labels.csv``: doc_id,label,source,path; the texts under docs/), the
    shape every corpus command reads."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    with (folder / "labels.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["doc_id", "label", "source", "path"])
        for n in negatives:
            path = f"docs/{n.doc_id}.txt"
            (folder / path).write_text(n.text, encoding="utf-8")
            writer.writerow([n.doc_id, LABEL, f"{SOURCE}:{n.subset}", path])
