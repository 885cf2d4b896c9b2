"""bench_learning: a simulated deployment on a small labelled corpus, with the JSON keys the
issue names."""

from __future__ import annotations

import json
import random
from io import StringIO

from django.core.management import call_command

from tests.reliability.test_trained_classifier import WORDS, text_for


def corpus(folder, per_type: int = 12) -> None:
    rng = random.Random(7)
    (folder / "docs").mkdir()
    rows = ["doc_id,label,source,path"]
    for label in WORDS:
        for i in range(per_type):
            source = "hospital_b" if label == "radiology" and i % 2 else "hospital_a"
            name = f"{label}-{i}"
            (folder / "docs" / f"{name}.txt").write_text(text_for(label, rng))
            rows.append(f"{name},{label},{source},docs/{name}.txt")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")


def test_bench_learning_leaves_a_source_out_and_writes_the_curve(tmp_path, settings):
    corpus(tmp_path)
    out, path = StringIO(), tmp_path / "learning.json"
    call_command(
        "bench_learning",
        "--initial",
        str(tmp_path),
        "--leave-out",
        "hospital_b",
        "--batch",
        "2",
        "--learn-every",
        "2",
        "--folds",
        "3",
        "--method",
        "crc",
        "--json",
        str(path),
        stdout=out,
    )
    result = json.loads(path.read_text())
    assert len(result["batches"]) == 3
    for batch in result["batches"]:
        assert {"documents", "escalated", "accepted", "accepted_wrong", "escalation_rate"} <= set(
            batch
        )
        assert batch["escalated"] + batch["accepted"] == batch["documents"]
    for key in (
        "overall_accepted_error_rate",
        "final_escalation_rate",
        "reviewed_until_below_10pct",
    ):
        assert key in result
    assert result["attempts"][0]["outcome"] == "activated"
    text = out.getvalue()
    assert "batch   1:" in text and "targets:" in text
