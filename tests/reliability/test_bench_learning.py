"""bench_learning: a simulated deployment on a small labelled corpus, with the JSON keys the
issue names."""

from __future__ import annotations

import json
import random
from io import StringIO

from django.core.management import call_command
from hypothesis import example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

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


_FORMS = [
    "Requisition for cytology: patient name, date of birth, insurance, ordering physician",
    "Consent to release medical records, signature of patient or guardian, witness",
    "Billing statement: amount due, account number, remit payment to the address below",
    "Specimen tracking log: courier, received at, temperature, clerk initials",
    "SURGICAL PATHOLOGY REPORT specimen colon biopsy diagnosis adenoma margin clear",
    "SURGICAL PATHOLOGY REPORT specimen skin excision diagnosis nevus margin clear",
    "SURGICAL PATHOLOGY REPORT specimen breast core diagnosis carcinoma margin involved",
    "CHEST X-RAY two views: lungs clear, no effusion, heart size normal",
]


@given(
    taught=st.lists(
        st.tuples(st.sampled_from(range(len(_FORMS))), st.sampled_from(["other", "pathology"])),
        max_size=30,
    ),
    window=st.sampled_from([0, 3, 20]),
)
@example(taught=[(4, "pathology"), (5, "pathology"), (6, "pathology"), (4, "pathology")], window=0)
@hypothesis_settings(max_examples=60, deadline=None)
def test_the_simulations_trust_record_is_the_production_replay(
    taught: list[tuple[int, str]], window: int
) -> None:
    """The simulation keeps each source's record as labels arrive; production replays the
    memory (ExemplarMemory.trust): for any sequence of labels, look-alikes or not, both count
    the same votes confirmed and contradicted, and a near-duplicate collapsed into one
    remembered confirms nothing."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from benchmarks.learning_sim import State, _remember
    from engine.exemplars import ExemplarMemory
    from reliability.learner import Example

    memory = ExemplarMemory(
        TfidfVectorizer().fit(_FORMS), k=3, min_similarity=0.35, source_window=window
    )
    state = State(memory=memory)
    for i, (form, label) in enumerate(taught):
        doc = Example(f"d{i}", label, [f"{_FORMS[form]} {i}"], source="lab")
        _remember(None, state, doc, label, None)  # type: ignore[arg-type]
    kept = state.cells.get("lab")
    replayed = memory.trust("lab")
    assert (replayed.confirmed, replayed.contradicted) == (
        (kept.confirmed, kept.contradicted) if kept is not None else (0, 0)
    )
