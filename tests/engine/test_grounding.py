from __future__ import annotations

import pytest

from engine.grounding import find_snippet

PAGE = (
    "FINAL DIAGNOSIS\n\nInvasive ductal carci-\nnoma, Nottingham grade 2.  The \ufb01ndings   "
    "are\nconsistent with a primary breast tumour."
)


@pytest.mark.parametrize(
    "snippet",
    [
        "invasive ductal carcinoma",  # case and a hyphenated line break
        "The findings are consistent",  # ligature and runs of whitespace
        "FINAL   DIAGNOSIS Invasive",  # paragraph break
    ],
)
def test_normalised_exact_matches_report_the_original_span(snippet):
    match = find_snippet(snippet, PAGE)
    assert match is not None and match.method == "exact"
    assert find_snippet(snippet, PAGE[match.start : match.end]) is not None


def test_ocr_noise_in_letters_is_tolerated_by_fuzzy_alignment():
    match = find_snippet("Invasive ductl carcinoma, Nottingham grade 2", PAGE)
    assert match is not None and match.method == "fuzzy" and match.score >= 90


def test_a_changed_number_is_never_grounded():
    assert find_snippet("Invasive ductal carcinoma, Nottingham grade 3", PAGE) is None


def test_text_that_is_not_there_is_not_found():
    assert find_snippet("metastatic melanoma of the skin", PAGE) is None
    assert find_snippet("", PAGE) is None
