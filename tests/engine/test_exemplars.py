"""The exemplar memory (engine.exemplars): a clinician's label changes the next look-alike's
acceptance score at once, per source, and cannot be flooded or turned by one label."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer

from engine.document import DocumentContext
from engine.exemplars import CellTrust, ExemplarMemory, ExemplarVote, combined_score
from engine.novelty import Novelty
from engine.schemas import DOC_TYPES, Decision
from tests.engine.test_risk import RADIOLOGY, _run, _threshold

WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
]


class _Text(str):
    """A template whose ``format(n=i)`` puts the i-th code word in: one document per word."""

    def format(self, *args: object, **kwargs: object) -> str:  # type: ignore[override]
        return str.format(self, n=WORDS[int(kwargs["n"])])  # type: ignore[call-overload]


LAB = _Text("SURGICAL PATHOLOGY REPORT lab {n} specimen colon biopsy diagnosis adenoma margin")
OTHER = _Text("Patient registration form insurance address phone signature date {n}")


def _memory(**kwargs: float | int) -> ExemplarMemory:
    vectorizer = TfidfVectorizer().fit(
        [LAB.format(n=i) for i in range(10)] + [OTHER.format(n=i) for i in range(10)]
    )
    return ExemplarMemory(vectorizer, **kwargs)  # type: ignore[arg-type]


def test_three_look_alikes_labelled_alike_make_a_unanimous_vote():
    memory = _memory(k=3, min_similarity=0.3)
    for i in range(3):
        assert memory.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
    vote = memory.vote(LAB.format(n=9), "lab-a")
    assert vote.enough and vote.label() == "pathology"
    assert vote.score("pathology") == 1.0 and vote.score("other") == 0.0
    # Two exemplars are not enough, and another source's exemplars do not count.
    assert not memory.vote(LAB.format(n=9), "lab-b").enough
    fewer = _memory(k=3, min_similarity=0.3)
    fewer.add("p0", LAB.format(n=0), "pathology", "lab-a")
    fewer.add("p1", LAB.format(n=1), "pathology", "lab-a")
    assert not fewer.vote(LAB.format(n=9), "lab-a").enough


def test_an_unlike_document_gets_no_look_alike_vote_only_its_sources():
    alone = _memory(k=3, min_similarity=0.3, source_window=0)
    memory = _memory(k=3, min_similarity=0.3)
    for i in range(3):
        alone.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
        memory.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
    assert not alone.vote(OTHER.format(n=1), "lab-a").enough
    vote = memory.vote(OTHER.format(n=1), "lab-a")
    assert vote.scope == "source" and vote.label() == "pathology"
    assert vote.as_dict()["scope"] == "source"


def test_a_correction_lowers_the_score_of_the_next_look_alike_at_once():
    memory = _memory(k=3, min_similarity=0.3)
    for i in range(3):
        memory.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
    text = LAB.format(n=9)
    assert combined_score(0.6, memory.vote(text, "lab-a"), "pathology") == 1.0
    memory.add("p1", LAB.format(n=1), "other", "lab-a")  # a clinician corrects one label
    vote = memory.vote(text, "lab-a")
    assert combined_score(0.9, vote, "pathology") < 0.9
    assert combined_score(0.9, vote, "pathology") == round(2 / 3, 4)


def test_a_flood_of_copies_counts_as_one_document():
    memory = _memory(k=3, min_similarity=0.3)
    assert memory.add("a", LAB.format(n=1), "pathology", "lab-a")
    for i in range(50):
        assert not memory.add(f"copy{i}", LAB.format(n=1), "pathology", "lab-a")
    assert len(memory) == 1
    assert not memory.vote(LAB.format(n=1), "lab-a").enough


def test_a_doubted_label_weighs_less_and_a_zero_weight_removes_it():
    memory = _memory(k=3, min_similarity=0.3)
    memory.add("a", LAB.format(n=1), "pathology", "lab-a")
    memory.add("b", LAB.format(n=2), "pathology", "lab-a")
    memory.add("c", LAB.format(n=3), "other", "lab-a", weight=0.5)
    vote = memory.vote(LAB.format(n=9), "lab-a")
    assert vote.support("pathology") == 0.8
    memory.reweigh("c", 0.0)
    assert not memory.vote(LAB.format(n=9), "lab-a").enough  # only two usable exemplars


def test_a_document_is_left_out_of_its_own_vote():
    memory = _memory(k=3, min_similarity=0.3)
    for i in range(3):
        memory.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
    assert not memory.vote(LAB.format(n=0), "lab-a", exclude=("p0",)).enough


@given(
    score=st.floats(0, 1),
    labels=st.lists(st.sampled_from(["pathology", "other"]), min_size=3, max_size=3),
    weights=st.lists(st.floats(0.1, 1), min_size=3, max_size=3),
)
def test_the_memory_raises_a_score_only_when_every_neighbour_agrees(
    score: float, labels: list[str], weights: list[float]
) -> None:
    vote = ExemplarVote(
        neighbours=[
            (f"k{i}", label, 0.9, w)
            for i, (label, w) in enumerate(zip(labels, weights, strict=True))
        ],
        enough=True,
    )
    combined = combined_score(score, vote, "pathology")
    if all(label == "pathology" for label in labels):
        assert combined >= score
    else:
        assert combined <= score
    assert combined_score(score, ExemplarVote(), "pathology") == score


def test_look_alikes_labelled_since_lift_novelty_and_the_threshold():
    # A short radiology report the rules give about 0.5: under a 0.9 threshold, escalated.
    novel = Novelty(similarity=0.02, p_value=0.004, novel=True)
    assert _run(RADIOLOGY, novelty=novel).decision == Decision.ESCALATE_TO_SME
    agree = ExemplarVote(
        neighbours=[(f"k{i}", "radiology", 0.8, 1.0) for i in range(3)], enough=True
    )
    table = _threshold("radiology", 0.9)
    outcome = _run(RADIOLOGY, novelty=novel, acceptance=table, exemplar=agree)
    assert outcome.decision == Decision.AUTO_ACCEPT
    # Look-alikes a clinician labelled otherwise: escalated, novelty or not.
    disagree = ExemplarVote(
        neighbours=[
            ("k0", "radiology", 0.8, 1.0),
            ("k1", "other", 0.8, 1.0),
            ("k2", "other", 0.8, 1.0),
        ],
        enough=True,
    )
    assert _run(RADIOLOGY, acceptance=_threshold("radiology", 0.4)).decision == (
        Decision.AUTO_ACCEPT
    )
    held = _run(RADIOLOGY, acceptance=_threshold("radiology", 0.4), exemplar=disagree)
    assert held.decision == Decision.ESCALATE_TO_SME
    assert "below_risk_threshold" in {i.code for i in held.best.verification.issues}
    assert DocumentContext(pages=["x"]).exemplar is None


def test_a_source_is_trusted_after_enough_confirmed_votes_and_a_contradiction_withdraws_it():
    record = CellTrust()
    for i in range(3):
        record.record(agreed=True, key=f"k{i}")
    assert not record.trusted(4) and record.needed(4) == 1 and record.certified_by(4) is None
    record.record(agreed=True, key="k3")
    assert record.trusted(4) and record.needed(4) == 0 and record.certified_by(4) == "k3"
    assert 0 < record.bound(0.1) < 1
    record.record(agreed=False, key="bad")
    assert not record.trusted(4) and record.needed(4) == 4
    assert record.bound(0.1) > 0.4  # one contradiction in five votes


def test_the_replayed_record_counts_each_label_against_the_labels_before_it():
    memory = _memory(k=3, min_similarity=0.3)
    for i in range(8):
        memory.add(f"p{i}", LAB.format(n=i), "pathology", "lab-a")
    record = memory.trust("lab-a")
    assert (record.confirmed, record.contradicted) == (5, 0)  # the first three build the vote
    memory.add("p8", LAB.format(n=8), "other", "lab-a")  # a look-alike labelled otherwise
    replayed = memory.trust("lab-a")
    assert (replayed.confirmed, replayed.contradicted) == (5, 1)
    assert not replayed.trusted(1)


# -- the source's own vote: a source whose documents are not look-alikes but all one kind ------

FORMS = [
    "Requisition for cytology: patient name, date of birth, insurance, ordering physician",
    "Consent to release medical records, signature of patient or guardian, witness",
    "Billing statement: amount due, account number, remit payment to the address below",
    "Specimen tracking log: courier, received at, temperature, clerk initials",
    "Fax cover sheet: to, from, pages including cover, confidentiality notice",
    "Change of address notice: old street, new street, effective date, phone",
]


def _forms_memory(**kwargs: float | int) -> ExemplarMemory:
    vectorizer = TfidfVectorizer().fit(FORMS + [LAB.format(n=i) for i in range(10)])
    return ExemplarMemory(vectorizer, k=3, min_similarity=0.35, **kwargs)  # type: ignore[arg-type]


def test_a_source_whose_labels_are_all_one_type_votes_when_no_look_alikes_do():
    memory = _forms_memory(source_min=3, source_window=20)
    memory.add("f0", FORMS[0], "other", "lab-forms")
    memory.add("f1", FORMS[1], "other", "lab-forms")
    assert not memory.vote(FORMS[4], "lab-forms").enough  # two labels: not yet
    memory.add("f2", FORMS[2], "other", "lab-forms")
    vote = memory.vote(FORMS[4], "lab-forms", trusted=True)
    assert vote.enough and vote.scope == "source" and vote.label() == "other"
    # The forms are not look-alikes: without the source's vote there is none.
    assert all(s < 0.35 for _, _, s, _ in vote.neighbours)
    # It raises only the classifier's own type, and only when the source is trusted.
    assert combined_score(0.4, vote, "other") == 1.0
    untrusted = memory.vote(FORMS[4], "lab-forms", trusted=False)
    assert combined_score(0.4, untrusted, "other") == 0.4
    # Another type from the classifier is held back (lowered), never raised.
    assert combined_score(0.9, vote, "pathology") == 0.0
    # Another source sees none of it.
    assert not memory.vote(FORMS[4], "lab-other").enough


def test_the_sources_vote_does_not_lift_novelty():
    """It says what the source sends, not that this document is like one a clinician saw."""
    novel = Novelty(similarity=0.02, p_value=0.004, novel=True)
    neighbours = [(f"k{i}", "radiology", 0.1, 1.0) for i in range(3)]
    table = _threshold("radiology", 0.9)
    source = ExemplarVote(neighbours=neighbours, enough=True, scope="source")
    held = _run(RADIOLOGY, novelty=novel, acceptance=table, exemplar=source)
    assert held.decision == Decision.ESCALATE_TO_SME
    assert {i.code for i in held.best.verification.issues} == {"novel_document"}
    # Not novel: the same vote lifts the score over the threshold.
    assert _run(RADIOLOGY, acceptance=table, exemplar=source).decision == Decision.AUTO_ACCEPT


def test_one_label_of_another_type_in_the_window_silences_the_sources_vote():
    memory = _forms_memory(source_min=3, source_window=4)
    for i in range(4):
        memory.add(f"f{i}", FORMS[i], "other", "lab-forms")
    memory.add("x", FORMS[4], "pathology", "lab-forms")
    assert not memory.vote(FORMS[5], "lab-forms").enough
    for i in range(4):  # the window still holds the odd one out
        memory.add(f"g{i}", LAB.format(n=i) + " form", "other", "lab-forms")
        if i < 3:
            assert memory.vote(FORMS[5], "lab-forms").scope != "source"
    # Four labels of one type since: the window agrees again.
    assert memory.vote(FORMS[5], "lab-forms").label() == "other"
    # The look-alikes' vote comes first when there is one.
    assert memory.vote(LAB.format(n=9) + " form", "lab-forms").scope == "neighbours"


def test_the_trust_record_counts_the_sources_votes_and_one_contradiction_withdraws_it():
    memory = _forms_memory(source_min=3, source_window=20)
    texts = FORMS + [f"{form} copy {w}" for form, w in zip(FORMS, WORDS, strict=False)]
    for i, text in enumerate(texts[:9]):
        memory.add(f"f{i}", text, "other", "lab-forms")
    record = memory.trust("lab-forms")
    # The first three build the vote; each later label confirmed it.
    assert (record.confirmed, record.contradicted) == (6, 0)
    assert record.trusted(6) and not record.trusted(7)
    memory.add("bad", texts[9], "pathology", "lab-forms")
    withdrawn = memory.trust("lab-forms")
    assert withdrawn.contradicted == 1 and not withdrawn.trusted(1)
    off = _forms_memory(source_min=3, source_window=0)
    for i, text in enumerate(texts[:9]):
        off.add(f"f{i}", text, "other", "lab-forms")
    assert off.trust("lab-forms").confirmed < record.confirmed


_TYPES = [t.value for t in DOC_TYPES]
_PLAIN = st.lists(st.sampled_from([*WORDS, "form", "date", "signature", "patient"]), max_size=12)


@settings(max_examples=40, deadline=None)
@given(
    query=st.sampled_from([RADIOLOGY, [LAB.format(n=2)], [OTHER.format(n=3)], [FORMS[1]]]),
    poison=st.sampled_from(_TYPES),
    taught=st.lists(st.one_of(st.sampled_from(FORMS), _PLAIN.map(" ".join)), min_size=3),
    threshold=st.floats(0.0, 1.0),
    trusted=st.booleans(),
)
def test_a_poisoner_labelling_a_whole_source_one_type_never_gets_that_type_accepted(
    query: list[str], poison: str, taught: list[str], threshold: float, trusted: bool
) -> None:
    """A reviewer labels every document of a source ``poison``, a type the classifier does
    not give: whatever the memory's vote (look-alikes or the source's), the document is never
    accepted as ``poison``, and the memory accepts nothing that the chain would not have
    accepted without it."""
    plain = _run(query, acceptance=_threshold("*", threshold))
    predicted = plain.best.output.dominant_type_overall.value
    assume(poison != predicted)
    memory = _forms_memory(source_min=3, source_window=20)
    for i, text in enumerate(taught):
        memory.add(f"t{i}", text or "blank", poison, "poisoned")
    vote = memory.vote("\n\n".join(query), "poisoned", trusted=trusted)
    outcome = _run(query, acceptance=_threshold("*", threshold), exemplar=vote)
    if outcome.decision == Decision.AUTO_ACCEPT:
        assert outcome.best.output.dominant_type_overall.value != poison
        assert plain.decision == Decision.AUTO_ACCEPT
