"""De-identification in the pure engine: recognisers, the document's vocabulary, surrogates,
the way back, the token-level metric, the annotated sample, and the LLM client wrapper."""

from __future__ import annotations

import json
import re
import socket
from datetime import date

import pytest
from pydantic import BaseModel

from benchmarks.deid import SAMPLE, SAMPLE_MARKUP, from_markup, read_jsonl, score
from engine.deid import DocumentScrub, Pseudonyms, Surrogates, detect
from engine.deid.llm import DeidentifyingClient
from engine.deid.metrics import Score
from engine.deid.spans import Phi
from engine.llm.delimiting import boundary, delimit, feedback_block

KEY = b"test-key"
HEADER = "Riverside Demo Hospital · Patient: DEMO, Alex · MRN DEMO-0001 · DOB 01/01/1970"
NOTE = (
    "Patient: QUILLEN, Marisol A.    MRN: 40022871    DOB: 02/11/1958\n"
    "Ordering physician: Tobias Vandermeer, MD    Phone: (608) 555-0142\n"
    "She lives at 418 Larchmont Avenue, Fairhaven, MA 02719 with her daughter Ingrid.\n"
    "Email ingrid.q@example.net. 93-year-old aunt. Specimen S24-118734 received 09/03/2024."
)


def found(text: str) -> dict[str, str]:
    return {text[s.start : s.end]: s.type for s in detect([text])[0]}


def test_a_clinical_header_gives_names_dates_identifiers_phones_and_addresses():
    spans = found(NOTE)
    for word in ("QUILLEN", "Marisol", "Tobias", "Vandermeer", "Ingrid"):
        assert spans[word] == "NAME"
    assert spans["40022871"] == spans["S24-118734"] == "ID"
    assert spans["02/11/1958"] == spans["09/03/2024"] == "DATE"
    assert spans["(608) 555-0142"] == "PHONE"
    # "lives at" takes the whole address as one span (version 2): each part is inside it.
    address = " | ".join(k for k, v in spans.items() if v == "ADDRESS")
    for part in ("418 Larchmont Avenue", "Fairhaven", "02719"):
        assert part in address, part
    assert spans["ingrid.q@example.net"] == "EMAIL"
    assert spans["93"] == "AGE"
    assert "MA" not in spans and "A." not in spans  # states and initials stay


def test_the_demo_header_is_found_whole():
    spans = found(HEADER)
    assert spans["DEMO"] == spans["Alex"] == "NAME"
    assert spans["DEMO-0001"] == "ID" and spans["01/01/1970"] == "DATE"


def test_a_name_labelled_on_one_page_is_found_unlabelled_on_another():
    pages = [HEADER, "Hello Alex, thank you for writing. Dr Demo will call you."]
    second = detect(pages)[1]
    words = {pages[1][s.start : s.end] for s in second}
    assert {"Alex", "Demo"} <= words


def test_fractions_scores_and_ventilator_settings_are_not_dates():
    text = "Pain 3/10. 1/2 of the sample. PS 12/5 and PEEP 5. Seen on 7/22 and 8/84."
    dates = [text[s.start : s.end] for s in detect([text])[0] if s.type == "DATE"]
    assert dates == ["7/22", "8/84"]


def test_common_words_after_a_title_in_capitals_are_not_names():
    text = "BP STABLE, RN TO WEAN OFF NEO. MD AWARE. DR QUARTERMAIN CALLED."
    assert [text[s.start : s.end] for s in detect([text])[0]] == ["QUARTERMAIN"]


def test_the_same_value_gets_the_same_surrogate_of_the_same_shape():
    surrogates = Surrogates(KEY)
    assert surrogates.of("NAME", "Quillen") == surrogates.of("NAME", "Quillen")
    assert surrogates.of("NAME", "QUILLEN") == surrogates.of("NAME", "Quillen").upper()
    assert surrogates.of("ID", "S24-118734") != "S24-118734"
    assert re.fullmatch(r"[A-Z]\d\d-\d{6}", surrogates.of("ID", "S24-118734"))
    assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", surrogates.of("PHONE", "(608) 555-0142"))
    assert Surrogates(b"other").of("ID", "40022871") != surrogates.of("ID", "40022871")


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        ("02/11/1958", r"\d\d/\d\d/1958"),
        ("2024-11-19", r"2024-\d\d-\d\d"),
        ("October 2, 2024", r"[A-Z][a-z]+ \d{1,2}, 2024"),
        ("12 May 1961", r"\d{1,2} [A-Z][a-z]+ 1961"),
        ("7/22", r"\d{1,2}/\d{1,2}"),
        ("Jan 9, 2025", r"[A-Z][a-z]{2} \d{1,2}, 2025"),
    ],
)
def test_a_date_keeps_its_format_and_year(value, shape):
    assert re.fullmatch(shape, Surrogates(KEY, today=date(2026, 1, 1)).of("DATE", value))


def test_a_year_that_tells_an_age_over_89_is_moved():
    surrogates = Surrogates(KEY, today=date(2026, 1, 1))
    assert surrogates.of("DATE", "03-09-1931").endswith("-1936")
    assert surrogates.of("DATE", "03-09-1922").endswith("-1936")
    assert surrogates.of("DATE", "03-09-1958").endswith("-1958")


def test_restore_gives_back_every_original_word():
    scrub = DocumentScrub.of([NOTE], Pseudonyms(Surrogates(KEY), injective=True, avoid=NOTE))
    hidden = scrub.scrub(NOTE)
    for value in ("QUILLEN", "Marisol", "40022871", "02/11/1958", "Larchmont", "Ingrid"):
        assert value not in hidden
    assert scrub.restore(hidden) == NOTE


def test_a_surrogate_is_never_a_word_already_in_the_text():
    surrogates = Surrogates(KEY)
    taken = surrogates.of("NAME", "Quillen")
    text = f"Patient: Quillen, Marisol. Seen with {taken} (a friend)."
    pseudonyms = Pseudonyms(surrogates, injective=True, avoid=text)
    assert pseudonyms.surrogate("NAME", "Quillen") != taken


def test_a_half_removed_token_counts_as_missed():
    scored = Score()
    text = "Seen by Alexandra today"
    scored.add("d", text, [Phi(8, 17, "NAME")], [Phi(8, 12, "NAME")])
    report = scored.report()
    assert report["recall"] == 0.0 and report["per_type"]["NAME"]["support"] == 1


def test_the_shipped_sample_is_its_markup_converted():
    assert list(read_jsonl(SAMPLE)) == from_markup(SAMPLE_MARKUP.read_text(encoding="utf-8"))


def test_the_sample_meets_the_recall_target_on_every_target_type():
    report = score(read_jsonl(SAMPLE), lambda text: detect([text])[0]).report()
    for kind in ("NAME", "DATE", "ID", "PHONE", "ADDRESS"):
        assert report["per_type"][kind]["recall"] >= 0.95, kind
    assert report["precision"] >= 0.95


def test_de_identification_opens_no_connection(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("de-identification tried the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    scrub = DocumentScrub.of([NOTE], Pseudonyms(Surrogates(KEY)))
    assert "QUILLEN" not in scrub.scrub(NOTE)


# -- the LLM client wrapper ------------------------------------------------------------------


class Quote(BaseModel):
    snippet: str
    reasoning: str = ""


class Recorder:
    """An inner client that records prompts and quotes the line after 'Patient:'."""

    model = "scripted"
    max_concurrency = 1
    calls: list = []
    deadline = None

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, *, prompt, schema, system="", operation="generate", version=""):
        self.prompts.append(prompt)
        line = next(line for line in prompt.splitlines() if "Patient:" in line)
        return schema(snippet=line.strip(), reasoning=f"Quoted {line.split()[1]}")

    def usage(self):
        return {"calls": len(self.prompts)}


def test_the_wrapped_client_sends_surrogates_and_answers_in_the_original_words():
    pages = [HEADER, "Hello Alex, your biopsy result is ready."]
    inner = Recorder()
    client = DeidentifyingClient(inner, surrogates=Surrogates(KEY), pages=pages)
    block = delimit(pages)
    prompt = block.text + "\n\n" + feedback_block("Quote the page: 'Hello Alex'", block.token)

    answer = client.generate(prompt=prompt, schema=Quote)

    sent = inner.prompts[0]
    for phi in ("DEMO", "Alex", "DEMO-0001", "01/01/1970", boundary(pages)):
        assert phi not in sent
    token = re.search(r"Boundary token: (\w+)", sent).group(1)
    assert f"<<<PAGE 2 {token}>>>" in sent and f"<<<FEEDBACK {token}>>>" in sent
    assert answer.snippet == HEADER.strip()
    assert answer.reasoning.startswith("Quoted")
    assert client.usage() == {"calls": 1} and client.model == "scripted"


def test_the_same_prompt_leaves_the_same_way_every_time():
    pages = [HEADER, "Hello Alex."]
    one = DeidentifyingClient(Recorder(), surrogates=Surrogates(KEY), pages=pages)
    two = DeidentifyingClient(Recorder(), surrogates=Surrogates(KEY), pages=pages)
    prompt = delimit(pages).text
    assert one.outgoing(prompt)[0] == two.outgoing(prompt)[0] == one.outgoing(prompt)[0]


def test_the_batch_operations_go_through_the_wrapper():
    pages = [HEADER]
    inner = Recorder()
    client = DeidentifyingClient(inner, surrogates=Surrogates(KEY), pages=pages)

    class Answer(BaseModel):
        value: bool
        confidence: float

    def answer(*, prompt, schema, **kwargs):
        inner.prompts.append(prompt)
        return schema(value=True, confidence=0.9)

    inner.generate = answer
    results = client.filter_batch([{"question": "Is this about DEMO?", "text": HEADER}])
    assert results[0].value is True
    assert "DEMO" not in inner.prompts[0] and "Alex" not in inner.prompts[0]


def test_a_deadline_set_on_the_wrapper_is_the_inner_clients():
    inner = Recorder()
    client = DeidentifyingClient(inner, surrogates=Surrogates(KEY), pages=[HEADER])
    client.deadline = 123.0
    assert inner.deadline == 123.0 and client.deadline == 123.0


def test_the_sample_lines_are_valid_gold_records():
    for line in SAMPLE.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for phi in record["phi"]:
            text = record["text"][phi["start"] : phi["end"]]
            assert text and text == text.strip()


def test_a_document_with_more_names_than_the_surrogate_list_still_gets_distinct_ones():
    names = [f"Patient: Zorvath{chr(97 + i // 26)}{chr(97 + i % 26)}, Quenby" for i in range(150)]
    text = "\n".join(names)
    scrub = DocumentScrub.of([text], Pseudonyms(Surrogates(KEY), injective=True, avoid=text))
    hidden = scrub.scrub(text)
    assert "Zorvath" not in hidden
    assert scrub.restore(hidden) == text
