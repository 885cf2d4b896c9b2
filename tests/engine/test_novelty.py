"""Novelty (engine.novelty): a document from a source absent from training is flagged; documents
like the training ones are flagged at about the rate alpha; the stored reference loads back."""

from __future__ import annotations

import random

from sklearn.feature_extraction.text import TfidfVectorizer

from engine.novelty import NoveltyIndex

SOURCES = {
    "radiology": "impression nodule axial images consolidation effusion pneumothorax contrast "
    "radiograph opacity lobe mediastinum unremarkable technique comparison chest",
    "pathology": "carcinoma biopsy specimen margins microscopic stroma grade lymphovascular "
    "immunohistochemistry gross description cassette formalin tumor invasive ductal",
    "clinical_note": "patient presents complains pain medications allergies assessment plan "
    "follow examination vital signs prescribed reports denies symptoms history social",
}
FILLER = ["the", "and", "of", "with", "in", "for", "on", "was", "is", "at", "no"]


def text(words: str, rng: random.Random, n: int = 120) -> str:
    pool = words.split()
    return " ".join(rng.choice(pool if rng.random() < 0.7 else FILLER) for _ in range(n))


def index(
    alpha: float = 0.01, vendors: tuple[str, ...] = (), extra: tuple[str, ...] = ()
) -> NoveltyIndex:
    rng = random.Random(3)
    texts = [text(words, rng) for words in SOURCES.values() for _ in range(60)] + list(extra)
    vectorizer = TfidfVectorizer(sublinear_tf=True).fit(texts)
    return NoveltyIndex.build(
        vectorizer, texts, [str(i) for i in range(len(texts))], alpha=alpha, vendors=vendors
    )


ICU_NURSING = (
    "ICU NURSING FLOWSHEET 0700-1900. Neuro: RASS -1, pupils equal reactive. Resp: vent AC "
    "FiO2 40% PEEP 8, suctioned moderate secretions. CV: norepinephrine titrated to MAP > 65. "
    "GI: tube feeds at goal. Skin: turned q2h, sacral dressing intact. Lines: R IJ CVC, A-line."
)


def test_a_document_from_a_source_absent_from_training_is_novel():
    found = index().score(ICU_NURSING)
    assert found.novel and found.p_value <= 0.01
    assert found.reason.startswith("a kind of document not seen before")
    assert len(found.nearest) == 3


def test_documents_like_the_training_ones_are_flagged_about_alpha_of_the_time():
    idx = index(alpha=0.05)
    rng = random.Random(11)
    fresh = [text(words, rng) for words in SOURCES.values() for _ in range(100)]
    flagged = sum(idx.score(t).novel for t in fresh)
    assert flagged / len(fresh) <= 0.05 + 0.04  # alpha, and Monte Carlo slack


def test_a_vendor_no_training_document_names_is_novel():
    rng = random.Random(5)
    known = text(SOURCES["pathology"], rng) + " Molecular profile by Caris Life Sciences."
    idx = index(vendors=("Foundation Medicine", "Caris"), extra=(known,))
    seen = text(SOURCES["pathology"], rng) + " Report by Caris Life Sciences."
    assert not idx.score(seen).unknown_vendors  # a training document names Caris
    found = idx.score(text(SOURCES["pathology"], rng) + " FoundationOne by Foundation Medicine")
    assert found.novel and found.unknown_vendors == ["Foundation Medicine"]


def test_the_stored_reference_gives_the_same_answers_without_pickle():
    idx = index()
    again = NoveltyIndex.load(idx.dump(), idx.vectorizer)
    assert again.keys == idx.keys and again.k == idx.k and again.alpha == idx.alpha
    for sample in (ICU_NURSING, text(SOURCES["radiology"], random.Random(2))):
        a, b = idx.score(sample), again.score(sample)
        assert a.novel == b.novel and abs(a.similarity - b.similarity) < 1e-2
