"""manage.py bench_deid: token-level recall and precision on a gold JSONL, as a table and as
JSON; conversions of the sample's markup and of the PhysioNet gold standard's format."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from benchmarks.deid import SAMPLE


def bench(*args: str) -> str:
    out = io.StringIO()
    call_command("bench_deid", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_sample_is_scored_overall_and_per_type(tmp_path):
    report_file = tmp_path / "report.json"
    table = bench(str(SAMPLE), "--json", str(report_file))

    report = json.loads(report_file.read_text())
    assert {"recall", "precision", "per_type"} <= set(report)
    assert set(report["per_type"]) >= {"NAME", "DATE", "ID", "PHONE", "ADDRESS", "EMAIL", "AGE"}
    assert set(report["per_type"]["NAME"]) == {"recall", "precision", "support"}
    assert report["per_type"]["NAME"]["support"] > 50
    assert "overall" in table and "NAME" in table


def test_the_physionet_format_converts_with_offsets_from_each_note(tmp_path):
    # The layout of id.text and id-phi.phrase, with text written for this test.
    (tmp_path / "id.text").write_text(
        "START_OF_RECORD=1||||1||||\nPt seen by Dr. Hollis on 7/22. Call 410-555-0100.\n"
        "||||END_OF_RECORD\n\nSTART_OF_RECORD=2||||1||||\nSon Marcus visited 1992.\n"
        "||||END_OF_RECORD\n",
        encoding="latin-1",
    )
    (tmp_path / "id-phi.phrase").write_text(
        "1 1 15 21 HCPName Hollis\n1 1 25 29 Date 7/22\n1 1 36 48 Phone 410-555-0100\n"
        "2 1 4 10 RelativeProxyName Marcus\n2 1 19 23 DateYear 1992\n",
        encoding="latin-1",
    )
    out = tmp_path / "gold.jsonl"
    table = bench("--from-physionet", str(tmp_path), "--write", str(out), str(out))

    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["doc_id"] for r in records] == ["1-1", "2-1"]
    first = records[0]
    assert [first["text"][p["start"] : p["end"]] for p in first["phi"]] == [
        "Hollis",
        "7/22",
        "410-555-0100",
    ]
    assert [p["type"] for p in records[1]["phi"]] == ["NAME", "YEAR"]
    assert "YEAR" in table  # years are reported apart: Vetted keeps them
    odd = tmp_path / "odd.jsonl"
    bench("--from-physionet", str(tmp_path), "--patients", "odd", "--write", str(odd))
    assert [json.loads(line)["doc_id"] for line in odd.read_text().splitlines()] == ["1-1"]


def test_a_file_that_is_not_gold_jsonl_is_refused(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "x", "text": "y"}\n')
    with pytest.raises(CommandError, match="no 'phi'"):
        bench(str(bad))
    with pytest.raises(CommandError, match="No such file"):
        bench(str(tmp_path / "missing.jsonl"))
