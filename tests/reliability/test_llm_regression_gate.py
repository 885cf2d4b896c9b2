"""The regression gate for Gemini (evaluate --ground-truth --llm): a new model name or prompt
version against the active one on held-back clinician ground truth, through the real
google-genai client and the local stub server, whose answers depend on the model asked and on
the prompt's text."""

from __future__ import annotations

import json
import random
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from benchmarks.gemini_stub import system_text
from benchmarks.llm_answers import classification
from engine.classifiers import gemini as gemini_classifier
from reliability import services, training
from reliability.models import Run
from review.models import GroundTruth
from review.services import ground_truth
from tests.reliability.gemini_stub import GeminiStub, Reply, candidate, prompt_pages
from tests.reliability.test_trained_classifier import WORDS, document, text_for

pytestmark = pytest.mark.django_db(transaction=True)

ROTATE = {"pathology": "radiology", "radiology": "clinical_note", "clinical_note": "other"}
ROTATE["other"] = "pathology"
NEW_PROMPT_LINE = "A new instruction of the candidate prompt."


def true_label(text: str) -> str:
    return next(label for label, (header, _) in WORDS.items() if header.split("\n")[0] in text)


class Model:
    """The stub's answers: right, except for the model named ``bad`` and, once
    ``worse_prompt`` is set, for the prompt carrying NEW_PROMPT_LINE."""

    def __init__(self) -> None:
        self.worse_prompt = False

    def __call__(self, path: str, body: dict) -> Reply:
        prompt = "".join(p.get("text", "") for p in body["contents"][0]["parts"])
        pages = prompt_pages(prompt)
        label = true_label(pages[0])
        wrong = "models/bad-model" in path or (
            self.worse_prompt and NEW_PROMPT_LINE in system_text(body)
        )
        answer = classification(pages, ROTATE[label] if wrong else label)
        return Reply(200, candidate(answer.model_dump_json()))


@pytest.fixture
def stub(settings):
    model = Model()
    with GeminiStub(responder=model) as server:
        settings.GEMINI_API_KEY = "test-key"
        settings.GEMINI_BASE_URL = server.url
        settings.GEMINI_MODEL = "gemini-2.5-flash"
        settings.AUTO_EXTRACT = False
        settings.FEW_SHOT_EXAMPLES = 0
        settings.LLM_CACHE_DAYS = 0  # every evaluation asks the stub (no cached answers)
        settings.LLM_BACKOFF_BASE_SECONDS = 0.01
        server.model = model  # type: ignore[attr-defined]
        yield server


def held_back_documents(minimum: int = 4) -> list:
    """Documents of every type until at least ``minimum`` are held back (by their id's hash)."""
    rng = random.Random(5)
    labels = list(WORDS)
    held: list[tuple[Any, str]] = []
    made = 0
    while len(held) < minimum and made < 200:
        label = labels[made % len(labels)]
        doc = document(text_for(label, rng), key=f"g{made}")
        made += 1
        if training.held_back(str(doc.pk)):
            held.append((doc, label))
    return held


def clinician_truth(doc, label: str) -> None:
    pages = list(doc.pages.values_list("text", flat=True))
    with transaction.atomic():
        ground_truth.ground_truth_record(
            document=doc,
            run=None,
            output=classification(pages, label),
            source=GroundTruth.Source.SME_VALIDATED,
        )


def gate(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("evaluate", "--ground-truth", "--llm", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_worse_candidate_model_is_refused_and_an_equal_one_passes(stub, tmp_path):
    held = held_back_documents()
    for doc, label in held:
        clinician_truth(doc, label)
    with pytest.raises(CommandError, match="has a completed Gemini run"):
        gate()  # the same model and prompt, and nothing recorded to compare with
    assert not stub.requests

    with pytest.raises(CommandError, match="worse"):
        gate("--candidate-model", "bad-model")
    out, _ = gate("--candidate-model", "bad-model", "--allow-worse")
    assert f"Held-back clinician ground truth: {len(held)} documents" in out
    assert "Candidate: bad-model prompt " in out
    assert "Active (the configured gemini-2.5-flash" in out
    assert "accuracy 0.0000 vs 1.0000 (worse)" in out
    for _doc, label in held:
        line = next(x for x in out.splitlines() if x.startswith(label))
        assert "  worse" in line and "recall active" in out and "precision new" in out
    paths = {p.split("/models/")[1].split(":")[0] for p in stub.paths}
    assert paths == {"bad-model", "gemini-2.5-flash"}  # both models were asked

    out, _ = gate("--candidate-model", "good-model", "--json", str(tmp_path / "g.json"))
    assert "Not worse than the active classifier." in out
    figures = json.loads((tmp_path / "g.json").read_text())
    assert figures["ok"] and figures["mode"] == "live"
    assert figures["candidate"]["accuracy"] == figures["active"]["accuracy"] == 1.0
    assert [v["model"] for v in figures["candidate_versions"]] == ["good-model"]
    assert [v["model"] for v in figures["active_versions"]] == ["gemini-2.5-flash"]


def test_a_new_prompt_version_is_compared_with_the_recorded_runs(stub, monkeypatch, tmp_path):
    held = held_back_documents()
    for doc, _label in held:
        services.run_start(document=doc)  # the active prompt's answers, recorded on the runs
    for doc, label in held:
        clinician_truth(doc, label)
    recorded = set(Run.objects.values_list("prompt_version", flat=True))
    assert len(recorded) == 1 and Run.objects.filter(status="completed").count() == len(held)

    monkeypatch.setattr(
        gemini_classifier, "SYSTEM_PROMPT", gemini_classifier.SYSTEM_PROMPT + "\n" + NEW_PROMPT_LINE
    )
    out, _ = gate("--json", str(tmp_path / "p.json"))
    figures = json.loads((tmp_path / "p.json").read_text())
    assert figures["ok"] and figures["mode"] == "recorded"
    (old,) = recorded
    assert figures["active_versions"][0]["prompt_version"] == old
    assert figures["candidate_versions"][0]["prompt_version"] != old  # the new prompt's hash
    recorded_line = "Active (as recorded on the documents' latest runs): gemini-2.5-flash prompt"
    assert f"{recorded_line} {old}" in out

    stub.model.worse_prompt = True
    with pytest.raises(CommandError, match="refusing"):
        gate()
    assert len(Run.objects.all()) == len(held)  # the gate stores no runs


def test_without_gemini_the_gate_says_so(settings):
    settings.GEMINI_API_KEY = ""
    settings.GOOGLE_CLOUD_PROJECT = ""
    with pytest.raises(CommandError, match="needs Gemini"):
        gate()
    with pytest.raises(CommandError, match="add --ground-truth"):
        call_command("evaluate", "--llm")
