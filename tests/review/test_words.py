"""review.words: the engine's codes in a clinician's words, in one place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.schemas import ClassificationOutput
from review import words

ENGINE = Path(__file__).resolve().parents[2] / "engine"


def engine_issue_codes() -> set[str]:
    """Every issue code the engine can raise: the string after a severity in the verifiers."""
    codes = set()
    for path in (ENGINE / "verifiers").glob("*.py"):
        source = path.read_text()
        codes |= set(re.findall(r"Severity\.\w+,\s*\"([a-z_]+)\"", source))
        codes |= set(re.findall(r"^CODE = \"([a-z_]+)\"", source, re.M))
    return codes


def two_segments() -> ClassificationOutput:
    from benchmarks.faults import clean_output
    from tests.review.conftest import PAGES

    output = clean_output(PAGES, "pathology")
    assert output is not None
    first = output.segments[0]
    second = first.model_copy(deep=True)
    first.end_page, first.segment_page_count = 1, 1
    second.start_page = second.end_page = 2
    second.dominant_type = "radiology"  # type: ignore[assignment]
    output.segments.append(second)
    output.number_of_segments = 2
    return output


def test_the_engine_raises_a_known_set_of_codes():
    codes = engine_issue_codes()
    assert {"fabricated_evidence", "low_confidence", "independent_disagreement"} <= codes
    assert len(codes) >= 25


@pytest.mark.parametrize("code", sorted(engine_issue_codes()))
def test_every_engine_issue_code_has_its_own_words_without_codes_or_type_values(code):
    message = f"Segment 2 is clinical_note with confidence 0.01, below 0.60 ({code})."
    said = words.issue_words(
        {"code": code, "message": message, "location": "segments[1].types.clinical_note"},
        two_segments(),
    )
    assert said.title and said.title != code.replace("_", " ").capitalize()
    for text in (said.title, said.sentence, said.reason):
        assert code not in text
        assert "clinical_note" not in text
        assert not re.search(r"\b(pathology|genomic|radiology)\b", text), text
        assert "segments[" not in text and "0.01" not in text


def test_low_confidence_is_said_in_percent_about_the_pages_it_concerns():
    said = words.issue_words(
        {
            "code": "low_confidence",
            "message": "Segment 2 is radiology with confidence 0.01, below 0.60.",
            "location": "segments[1].types.radiology",
        },
        two_segments(),
    )
    assert said.sentence == (
        "The classifier is unsure that page 2 is a Radiology Report (1% sure; 60% is needed "
        "to accept it)."
    )


def test_the_gate_disagreement_names_both_types():
    issue = {
        "code": "independent_disagreement",
        "severity": "MAJOR",
        "message": "The independent offline classifier reads this document as Radiology "
        "Report; the primary classifier said Pathology Report. Two unrelated classifiers "
        "disagree on the type.",
        "location": "dominant_type_overall",
    }
    assert words.issue_words(issue).reason == (
        "the classifier and the independent check disagree: Pathology Report vs Radiology Report"
    )


def test_why_escalated_names_the_reasons_not_the_arbiter():
    output = two_segments()
    issues = [
        {
            "code": "fabricated_evidence",
            "severity": "BLOCKER",
            "message": "Evidence for pathology is not in the document: “x”.",
            "location": "segments[0].types.pathology.top_evidence[1]",
        },
        {
            "code": "segment_shares",  # repaired automatically: not a reason
            "severity": "MAJOR",
            "auto_fixable": True,
            "message": "Shares in segment 1 sum to 0.9, not 1.",
            "location": "segments[0].types",
        },
        {
            "code": "header_footer_evidence",  # minor: not a reason while others are
            "severity": "MINOR",
            "message": "Evidence for pathology in segment 1 is header or footer text.",
            "location": "segments[0].types.pathology.top_evidence[0]",
        },
    ]
    reasons = words.escalation_reasons(
        issues=issues,
        output=output,
        gate={"classifier": "offline", "dominant_type": "radiology", "agrees": False},
        comparison={
            "available": True,
            "classifier": "offline",
            "dominant_type": "genomic",
            "agrees_on_type": False,
        },
        stopped_reason="escalated by the arbiter",
    )
    assert reasons == [
        "the classifier and the independent check disagree: Pathology Report vs Radiology Report",
        "the quote given as evidence of a Pathology Report is not in the document",
        "the built-in rules classifier reads it as Genomic Report",
    ]
    sentence = words.reasons_sentence(reasons)
    assert sentence.startswith("The classifier and the independent check disagree")
    assert "arbiter" not in sentence and sentence.endswith("Genomic Report.")


def test_a_run_stopped_by_its_retry_limit_says_so():
    assert words.escalation_reasons(
        issues=[], output=None, stopped_reason="retry limit reached"
    ) == ["the automatic repairs ran out of tries"]


def test_types_fields_and_statuses_are_never_shown_raw():
    assert words.type_name("clinical_note") == "Clinical Note"
    assert words.type_name("") == ""
    assert words.field_status("not_present") == "not in the document"
    assert words.field_status("missing") == "named in the document, value not read"
    assert words.field_label("er_status") == "ER status"
    assert words.field_label("report_date") == "Report date"
    assert words.classifier_name("offline") == "the built-in rules classifier"
    assert words.presence("MENTION_ONLY") == "mentioned only"
    assert words.decision_words("ESCALATE_TO_SME") == "sent to a clinician"
    assert words.with_type_names("Segment 1 is clinical_note.") == "Segment 1 is Clinical Note."


def test_an_unknown_code_is_still_said_in_words():
    said = words.issue_words({"code": "new_check", "message": "Page 1 is genomic, oddly."})
    assert said.title == "New check"
    assert said.sentence == "Page 1 is Genomic Report, oddly."


# -- on the pages --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_packet_page_speaks_in_words_and_keeps_the_codes_for_admins(reviewer, admin_user):
    from django.test import Client
    from django.urls import reverse

    from tests.review.conftest import make_packet

    packet = make_packet()
    url = reverse("review:packet", args=[packet.pk])
    pages = {}
    for user in (reviewer, admin_user):
        client = Client()
        client.force_login(user)
        pages[user.username] = client.get(url).content.decode()
    for body in pages.values():
        assert 'id="escalation-reason"' in body and "escalated by the arbiter" not in body
        assert "reads like paperwork" in body and "is not in the document" in body
        assert "Classification by" not in body and "What the machine said" in body
        assert "the built-in rules classifier" in body.lower()
    # A reviewer reads sentences; an Admin can also open each issue's id, code and location.
    assert "V4-0001" not in pages["rita"] and "segments[0]" not in pages["rita"]
    assert 'class="tech"' in pages["ada"] and "fabricated_evidence</code>" in pages["ada"]


@pytest.mark.django_db
def test_the_queue_names_types_and_issues_in_words(reviewer):
    from django.test import Client
    from django.urls import reverse

    from tests.review.conftest import make_packet

    make_packet(label="clinical_note", fabricate=False)
    client = Client()
    client.force_login(reviewer)
    body = client.get(reverse("review:queue")).content.decode()
    assert "<td>Clinical Note</td>" in body and "<td>clinical_note</td>" not in body
    codes = body[body.index('id="f-code"') :].split("</select>")[0]
    options = re.findall(r'<option value="([a-z_]+)"[^>]*>([^<]+)</option>', codes)
    assert options and all(label != code and "_" not in label for code, label in options)
