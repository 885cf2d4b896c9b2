"""The gathered negatives (benchmarks.negatives): a page of a public question-answer collection
becomes one labelled document as its reader met it, from a git clone, in a fixed order."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from benchmarks import negatives

ANSWER = "A biopsy takes a small piece of tissue. " * 12


def page(doc_id: str, focus: str, pairs: list[tuple[str, str]]) -> str:
    qa = "".join(
        f'<QAPair pid="{i}"><Question qid="{doc_id}-{i}">{q}</Question>'
        f"<Answer>{a}</Answer></QAPair>"
        for i, (q, a) in enumerate(pairs, start=1)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><Document id="{doc_id}" source="Test" '
        f'url="https://example.org/{doc_id}"><Focus>{focus}</Focus><QAPairs>{qa}</QAPairs>'
        "</Document>"
    )


@pytest.fixture
def clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "src"
    files = {
        "1_CancerGov_QA/0000001_1.xml": page(
            "0000001_1",
            "Breast Cancer",
            [
                (
                    "What is (are) Breast Cancer ?",
                    f"Key Points\n    - Cells grow.    - Tests find it.\n  {ANSWER}",
                ),
                ("Who is at risk?", ""),  # no answer: the heading is left out
            ],
        ),
        "1_CancerGov_QA/0000002_1.xml": page("0000002_1", "Stub", [("What?", "Short.")]),
        "3_GHR_QA/0000003-1.xml": page("0000003-1", "BRCA1 gene", [("What is it?", ANSWER)]),
        "3_GHR_QA/0000004-1.xml": page("0000004-1", "TP53 gene", [("What is it?", ANSWER)]),
    }
    for name, xml in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(xml)
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "pages"], check=True)
    monkeypatch.setattr(negatives, "SUBSETS", {"1_CancerGov_QA": None, "3_GHR_QA": 1})
    return work / ".git"


def test_a_page_becomes_one_document_with_its_headings_and_bullets_and_stubs_are_left_out(
    clone: Path, tmp_path: Path
) -> None:
    gathered = negatives.gather(clone)

    ids = [n.doc_id for n in gathered]
    assert "medquad_1_0000001_1" in ids and "medquad_1_0000002_1" not in ids  # a stub is no leaflet
    assert sum(i.startswith("medquad_3_") for i in ids) == 1  # the sample's size, by name hash
    text = next(n.text for n in gathered if n.doc_id == "medquad_1_0000001_1")
    lines = text.splitlines()
    assert lines[0] == "Breast Cancer"
    assert "What is (are) Breast Cancer ?" in lines
    assert "Cells grow." in lines and "Tests find it." in lines  # each bullet a line of its own
    assert "Who is at risk?" not in text  # a question without an answer is no heading

    folder = tmp_path / "out"
    negatives.write(gathered, folder)
    with (folder / "labels.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert {r["label"] for r in rows} == {"other"}
    assert {r["source"] for r in rows} == {"medquad:1_CancerGov_QA", "medquad:3_GHR_QA"}
    assert all((folder / r["path"]).read_text() for r in rows)
    assert negatives.gather(clone) == gathered  # the same documents in the same order
