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


# -- what delimiting added is taken back, and only that ------------------------------------------


def test_a_banner_quoted_as_the_model_saw_it_is_grounded():
    from engine.llm.delimiting import neutralise

    page = "*** CORRECTED REPORT ***\n----- Original Message -----\nFINDINGS: no mass."
    for line in neutralise(page).split("\n")[:2]:
        assert line.startswith("(document text) ")
        match = find_snippet(line, page)
        assert match is not None and match.method == "exact"
        assert page[match.start : match.end] == line.removeprefix("(document text) ")


def test_the_prefix_is_not_a_licence_to_quote_what_is_not_there():
    page = "*** CORRECTED REPORT ***\nFINDINGS: no mass."
    assert find_snippet("(document text) *** AMENDED REPORT ***", page) is None
    # Text that really says "(document text)" is found as it stands.
    assert find_snippet("(document text) see above", "Note (document text) see above") is not None


_WORDS = ["carcinoma", "FINDINGS:", "impression", "grade 2", "margin", "\ufb01nal", "CT", "x"]
_MARKERS = ["<<", ">>", "===", "---", "###", "***", "[[", "]]", "<<<<", ">>>", "- - -"]
_SPACES = ["", " ", "  ", "\t", "\u00a0"]


def _line(rng) -> str:
    kind = rng.randrange(6)
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(1, 6)))
    if kind == 0:  # a marker-like line: neutralised in the prompt
        marker = rng.choice(_MARKERS)
        return f"{rng.choice(_SPACES)}{marker}{rng.choice(_SPACES)}{words} {marker}"
    if kind == 1:  # angle runs inside a line: spaced out in the prompt
        return f"{words} {rng.choice(['<<<', '>>>>', '<<<<<', '< < <'])} {words}"
    if kind == 2:  # text that happens to look like the prefix
        return f"(document text) {words}"
    if kind == 3:  # typography normalisation folds
        return f"{words}{rng.choice(_SPACES)}\u2013 \u201c{words}\u201d"
    if kind == 4:
        return ""
    return words


def _page(rng) -> str:
    lines = [_line(rng) for _ in range(rng.randrange(1, 12))]
    if rng.random() < 0.3:
        lines += ["Invasive ductal carci-", "noma, Nottingham grade 2"]
    return "\n".join(lines)


def test_every_line_the_model_can_quote_from_the_prompt_grounds_on_its_page():
    """Property test (seeded, 400 random pages): each non-blank line of a page as the prompt
    shows it, each pair of adjacent lines, and the whole page, are found on that page."""
    import itertools
    import random

    from benchmarks.gemini_stub import prompt_pages
    from engine.llm.delimiting import delimit

    rng = random.Random(25)
    for _ in range(400):
        pages = [_page(rng) for _ in range(rng.randrange(1, 4))]
        shown = prompt_pages(delimit(pages).text)
        assert len(shown) == len(pages)
        for page, prompt_page in zip(pages, shown, strict=True):
            lines = [line.strip() for line in prompt_page.split("\n")]
            quotes = [line for line in lines if line]
            quotes += [
                f"{a}{sep}{b}"
                for a, b in itertools.pairwise(lines)
                if a and b and not a.endswith("-")
                for sep in ("\n", " ")
            ]
            if prompt_page.strip():
                quotes.append(prompt_page.strip())
            for quote in quotes:
                match = find_snippet(quote, page)
                assert match is not None and match.method == "exact", (quote, page)


def test_the_word_by_word_normal_form_is_the_character_by_character_one():
    """normalise reads ASCII words whole; it must give what reading every character gives."""
    import random

    from engine.grounding import _normalise_chars, normalise

    rng = random.Random(7)
    alphabet = list("ab- \t\n\r\x0b\x1c\u00a0\u2003\u200b\ufb01\u2013\u201c\u00a8\u00df\u0130X,1")
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16)))
        assert normalise.__wrapped__(text) == _normalise_chars(text), repr(text)
    # ASCII pages are read whole, as arrays: every ASCII space and the hyphen joins.
    ascii_alphabet = [*"ab-X,1 \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00\x7f", "a-\n b", "-\n"]
    for _ in range(20000):
        text = "".join(rng.choice(ascii_alphabet) for _ in range(rng.randrange(0, 24)))
        assert text.isascii() and normalise.__wrapped__(text) == _normalise_chars(text), repr(text)
    assert normalise(PAGE) == _normalise_chars(PAGE)
