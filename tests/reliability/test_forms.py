"""Tax forms end to end: generated W-2 and 1099 PDFs uploaded (in the browser's form and
through the API), typed by form filling, a wrong tax year escalated, a blank form left Other."""

from __future__ import annotations

import json
import random

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from benchmarks.evaluation import value_matches
from benchmarks.pdfgen import (
    form_1099_paragraphs,
    random_ein,
    random_ssn,
    random_w2_paragraphs,
    text_pdf,
    w2_paragraphs,
)
from documents.models import Document
from reliability.models import Extraction, Run
from reliability.services import api_token_create
from review.models import GroundTruth, ReviewPacket
from tests.reliability.test_api import call

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def tax_pack(settings):
    settings.EXTRACTION_PACKS = ["clinical", "us_tax"]


def w2_pdf(rng, year):
    return text_pdf([random_w2_paragraphs(rng, year=year)])


def upload(client, name, pdf, **fields):
    return client.post(
        reverse("documents:upload"), {"documents": [SimpleUploadedFile(name, pdf)], **fields}
    )


def test_a_w2_for_the_expected_year_is_filled_and_accepted(reviewer_client):
    response = upload(
        reviewer_client, "w2.pdf", w2_pdf(random.Random(1), 2024), expected_tax_year="2024"
    )
    assert response.status_code == 302
    document = Document.objects.get()
    assert document.options == {"expected_tax_year": 2024}
    run = Run.objects.get(document=document)
    extraction = Extraction.objects.get(run=run)
    assert (extraction.doc_type, extraction.form_type, extraction.issues) == ("w2", "w2", [])
    assert extraction.fields["tax_year"]["value"] == "2024"
    assert value_matches(
        extraction.fields["wages"]["value"], extraction.fields["social_security_wages"]["value"]
    )
    assert {a["form_type"] for a in extraction.alternatives} >= {"1099_nec", "1099_int"}
    assert extraction.form_attempts[0]["strategy"] == "all_templates"
    assert extraction.form_attempts[-1]["chosen"] == "w2"
    # The classification keeps its five clinical types: a W-2 is Other, filled as a W-2.
    assert run.final_decision == "AUTO_ACCEPT"
    assert GroundTruth.objects.get(document=document).dominant_type == "other"


def test_a_w2_for_another_year_is_an_error_and_goes_to_review(reviewer_client):
    upload(reviewer_client, "w2.pdf", w2_pdf(random.Random(2), 2022), expected_tax_year="2023")
    run = Run.objects.get()
    assert run.final_decision == "ESCALATE_TO_SME"
    assert "wrong tax year" in run.stopped_reason
    extraction = Extraction.objects.get(run=run)
    [issue] = extraction.issues
    assert issue == {
        "severity": "ERROR",
        "code": "wrong_tax_year",
        "message": "This Form W-2 is for tax year 2022; tax year 2023 was expected.",
    }
    packet = ReviewPacket.objects.get(run=run)
    assert packet.priority == 0 and packet.worst_severity == "BLOCKER"
    [blocker] = [i for i in packet.issues if i["agent"] == "EX"]
    assert blocker["code"] == "wrong_tax_year" and blocker["id"] == "EX-0001"
    page = reviewer_client.get(reverse("review:packet", args=[packet.pk])).content.decode()
    assert "tax year 2022; tax year 2023 was expected" in page and "Form: w2" in page


def test_a_blank_form_stays_other_with_the_blank_form_message(reviewer_client):
    upload(reviewer_client, "blank.pdf", text_pdf([w2_paragraphs(year=2024)]))
    extraction = Extraction.objects.get()
    assert (extraction.doc_type, extraction.form_type) == ("other", "")
    assert "Form W-2: Every field is empty: this looks like a blank form." in extraction.warnings
    assert extraction.fields["title"]["status"] == "found"  # the Other template still runs


def test_without_the_tax_pack_forms_are_other_and_the_year_field_is_not_offered(
    reviewer_client, settings
):
    settings.EXTRACTION_PACKS = ["clinical"]
    assert b"expected_tax_year" not in reviewer_client.get(reverse("documents:upload")).content
    upload(reviewer_client, "w2.pdf", w2_pdf(random.Random(3), 2024))
    extraction = Extraction.objects.get()
    assert (extraction.doc_type, extraction.form_type, extraction.alternatives) == ("other", "", [])


def test_a_year_out_of_range_is_refused_in_the_upload_form(reviewer_client):
    page = reviewer_client.get(reverse("documents:upload")).content.decode()
    assert 'name="expected_tax_year"' in page
    response = upload(
        reviewer_client, "w2.pdf", w2_pdf(random.Random(4), 2024), expected_tax_year="1899"
    )
    assert response.status_code == 400
    assert "Ensure this value is greater than or equal to 1950." in response.content.decode()
    assert not Document.objects.exists()


def test_the_api_takes_the_expected_year_and_reports_the_form(live_server, django_user_model):
    from review.roles import REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user("lims", password="x")
    user.groups.add(ensure_roles()[REVIEWERS])  # tokens need a role, as the browser does
    token = api_token_create(user=user, name="lims")[1]
    rng = random.Random(5)
    pdf = text_pdf(
        [
            form_1099_paragraphs(
                kind="NEC",
                year=2023,
                payer_tin=random_ein(rng),
                recipient_tin=random_ssn(rng),
                amount=4_250.00,
            )
        ]
    )
    status, body = call(
        f"{live_server.url}/api/v1/documents/",
        token=token,
        method="POST",
        fields={"options": json.dumps({"expected_tax_year": 2024})},
        file=("nec.pdf", pdf),
    )
    assert status == 202, body
    status, result = call(live_server.url + body["result_url"], token=token)
    assert status == 200
    # Escalated (a form for the wrong year): no label until a clinician decides, but the
    # fields the run read and the issue that escalated it are there.
    assert result["label"]["state"] == "awaiting_review"
    assert (result["type"], result["form_type"]) == (None, "1099_nec")
    [segment] = result["fields"]
    assert segment["doc_type"] == "1099_nec" and segment["form_type"] == "1099_nec"
    assert segment["fields"]["nonemployee_compensation"]["value"] == "4,250.00"
    assert [i["code"] for i in segment["issues"]] == ["wrong_tax_year"]
    assert result["decision"] == "ESCALATE_TO_SME"
    assert {a["form_type"] for a in segment["alternative_types"]} >= {"1099_int", "1099_div"}


def test_with_gemini_each_template_is_filled_by_extract_fields_through_the_stub():
    from engine import llm
    from engine.fields.extractors import gemini_filler
    from engine.fields.forms import match_form
    from engine.fields.library import load_packs
    from tests.reliability.gemini_stub import GeminiStub, Reply, candidate

    page = "\n\n".join(random_w2_paragraphs(random.Random(9), year=2021))
    ssn = page.split("social security number\n")[1].split("\n")[0]
    w2 = {
        "form_name": "W-2",
        "employee_ssn": ssn,
        "tax_year": "2021",
        "employer_ein": page.split("(EIN)\n")[1].split("\n")[0],
        "wages": page.split("other compensation\n")[1].split("\n")[0],
    }

    def respond(path, request):
        names = request["generationConfig"]["responseSchema"]["properties"]
        answer = {
            name: {"value": w2[name], "status": "found", "confidence": 0.95, "snippet": w2[name]}
            if "employee_ssn" in names and name in w2
            else {"value": None, "status": "not_present", "confidence": 0.9, "snippet": ""}
            for name in names
        }
        return Reply(200, candidate(json.dumps(answer)))

    tax = load_packs(("us_tax",))["us_tax"].templates
    with GeminiStub() as stub:
        stub.responder = respond
        client = llm.GeminiClient(
            model="m", api_key="k", base_url=stub.url, max_transport_retries=0
        )
        match = match_form(tax, [page], expected_year=2022, filler=gemini_filler(client))
    assert match.form_type == "w2" and len(match.attempts) == 1
    assert match.chosen.fields["employee_ssn"].value == ssn
    assert [i["code"] for i in match.issues] == ["wrong_tax_year"]
    assert len(stub.requests) == len(tax)  # one extract_fields call per template
    assert all(c.operation == "extract_fields" for c in client.calls)
