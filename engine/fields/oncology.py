"""Breast pathology values with meaning: a reader of a report's structure and the canonical
values a tumour board acts on (issue 37). Pure: no Django.

``read(pages)`` reads synoptic key-value lines and checklists (keys matched after folding OCR
noise: broken words, l/1 and O/0 confusions), table rows, printed forms with check boxes, and
narrative sentences; it skips the clinical history and sentences quoting a previous biopsy,
lymph-node specimens, and values that are pending, sent out, deferred or an empty box; a value
in an addendum supersedes the report's own. Each field's reading carries the verbatim value, the
line it stands on, a canonical value and how surely it was read (a level, as the finders' are:
0 a labelled value read cleanly, 1 a value read from a sentence or put together, 2 a reading
with a doubt).

``canonical(field, text)`` gives the canonical value of any stated value, and ``same(field, a,
b)`` compares two values by their meaning: "strongly positive" and "Positive (95%)" agree.

Canonical forms: ER/PR ``positive`` / ``low positive`` (1-10 %) / ``negative`` with the
percentage and intensity when stated; HER2 ``positive`` / ``negative`` / ``equivocal`` by the
ASCO/CAP rule (IHC 3+ positive; 0 and 1+ negative; 2+ decided by ISH, equivocal without it);
histology an ICD-O morphology code with its WHO term; Nottingham grade 1-3 with its score;
margins ``involved`` / ``not involved`` with the closest distance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

RECEPTOR_FIELDS = {"er_status": "er", "pr_status": "pr"}
FIELDS = ("histology", "grade", "margins", "er_status", "pr_status", "her2_status")

# -- folding OCR noise -----------------------------------------------------------------------------


def fold(text: str) -> str:
    """Lower case with OCR letter/digit confusions undone by their neighbours: a 0 or 1 among
    letters is an o or an l, an O, o, l or I among digits (or before %) is a 0 or a 1."""
    text = re.sub(
        r"(?<=[A-Za-z])0(?=[A-Za-z])|(?<=[A-Za-z]{2})0(?![\d%.])|0(?=[A-Za-z]{2})"
        r"|(?<![\w.])0(?=[A-Za-z]\b)",
        "o",
        text,
    )
    text = re.sub(r"(?<=[A-Za-z])1(?=[A-Za-z])|(?<=\s)1(?=[a-z]{2})|(?<=[a-z]{2})1\b", "l", text)
    text = re.sub(r"(?<=\d)[Oo]|(?<![A-Za-z])[Oo](?=[.,]?\d|\s?%)", "0", text)
    text = re.sub(r"(?<=\d)[lI]|(?<![A-Za-z])[lI](?=\d|\.\d|\s?\+)", "1", text)
    # An l inside an upper-case word, or opening one before a letter no word starts "l" with,
    # is an I.
    text = re.sub(r"(?<=[A-Z])l(?=[A-Z]|\b)|\bl(?=[A-Z]{2}|[nmt][a-z])", "I", text)
    return text.lower()


# Check boxes printed as glyphs, read as the bracketed boxes the reader knows: a ballot box
# with a cross or a tick, a filled square, checked; an empty ballot box or square, empty.
_BOX_GLYPHS = str.maketrans(
    {
        "\u2612": "[X]",
        "\u2611": "[X]",
        "\u25a0": "[X]",
        "\u25a3": "[X]",
        "\u2610": "[ ]",
        "\u25a1": "[ ]",
    }
)


def boxes(text: str) -> str:
    """``text`` with its check-box glyphs, and boxes printed as parentheses ("(X)", "( )") or
    angle brackets ("<x>", "< >"), as bracketed boxes ("[X]", "[ ]"); a bracketed box holds
    any mark ("[v]", "[*]", "[/]"); a check mark standing alone ("Positive \u2713") is a
    checked box."""
    text = re.sub(
        r"\(\s*([xX\u2713\u2714])\s*\)|\(\s\s?\)|<\s*([xXvV\u2713\u2714])\s*>|<\s\s?>",
        _paren_box,
        text.translate(_BOX_GLYPHS),
    )
    text = re.sub(r"\[\s*[vV*/\u2713\u2714]\s*\]", "[X]", text)
    text = re.sub(r"\[_+\]", "[ ]", text)
    return re.sub(r"(?<!\[)[\u2713\u2714\u2705](?!\s*\])", "[X]", text)


def _paren_box(m: re.Match[str]) -> str:
    return "[X]" if m.group(1) or m.group(2) else "[ ]"


def squash(text: str) -> str:
    """Letters and digits only, with i/l and rn/m merged: a key as OCR may have spelt it."""
    s = re.sub(r"[^a-z0-9]", "", fold(text))
    return s.replace("rn", "m").replace("i", "l")


def _loose(word: str) -> str:
    """``word`` as a pattern that lets OCR break it once or twice with a space."""
    return r"\s?".join(re.escape(c) for c in word)


def _has_word(folded: str, word: str) -> bool:
    """``word`` in the folded text, also broken by one stray space ("pos itive")."""
    return bool(re.search(r"\b" + r"\s?".join(re.escape(c) for c in word), folded))


# -- canonical values ------------------------------------------------------------------------------

_NEGATED_WORD = (
    # (whole words: "immuno staining" is no "no staining")
    r"(?:negative|neg\b|\bno\s+(?:nuclear\s+)?(?:staining|expression)|\bnot\s+(?:expressed|detected))"
)


_ALLRED = re.compile(rf"{_loose('allred')}\s*(?:score)?\s*[:=]?\s*([0-8])\b(?:\s*/\s*8)?")
_ALLRED_PS = re.compile(r"\b(?:ps|proportion(?:\s*score)?)\s*[:=]?\s*([0-5])\b")
_ALLRED_IS = re.compile(r"\b(?:is|intensity(?:\s*score)?)\s*[:=]?\s*([0-3])\b")


def _allred(f: str, intensity: str) -> tuple[str, str]:
    """(category, intensity) of a receptor stated by its Allred score alone ("Allred score
    7/8 (PS 5, IS 2)"): a total of 0-2 is negative, 3-8 positive; a proportion score of 2
    (1-10% of cells) is low positive; the intensity score 1-3 is weak, moderate, strong."""
    total = _ALLRED.search(f)
    if total is None:
        return "", intensity
    ps, is_ = _ALLRED_PS.search(f), _ALLRED_IS.search(f)
    if not intensity and is_ and int(is_.group(1)):
        intensity = INTENSITY_OF_SCORE[int(is_.group(1))]
    if int(total.group(1)) <= 2:
        return "negative", ""
    if ps and int(ps.group(1)) <= 2:
        return "low positive", intensity
    return "positive", intensity


INTENSITY_OF_SCORE = {1: "weak", 2: "moderate", 3: "strong"}


# A share of cells given as a range or a bound ("11-50%", "1 to 10 percent", ">50%", "less than
# 1%"): it decides the category where it lies wholly in one, and states no percentage.
_PERCENT_WORD = r"\s*(?:%|per\s?cent\b)"
_PERCENT_RANGE = re.compile(
    rf"(?<![\d.])(\d{{1,3}})\s*%?\s*(?:-|\u2013|to)\s*(\d{{1,3}}){_PERCENT_WORD}"
)
_PERCENT_BOUND = re.compile(
    rf"(<|>|\bless\s+than|\bmore\s+than|\bover|\bgreater\s+than)\s*(\d{{1,3}}){_PERCENT_WORD}"
)
_H_SCORE = re.compile(r"\bh[\s-]?score\s*(?:of\s*)?[:=]?\s*(\d{1,3})\b(?!\s*%)")


def _share(f: str) -> tuple[str, bool]:
    """(category a range or bound of cells decides, whether the text states one)."""
    r = _PERCENT_RANGE.search(f)
    if r:
        lo, hi = int(r.group(1)), int(r.group(2))
        if lo > hi or hi > 100:
            return "", True
        if lo >= 11:
            return "positive", True
        if lo >= 1 and hi <= 10:
            return "low positive", True
        return "", True
    b = _PERCENT_BOUND.search(f)
    if b:
        n = int(b.group(2))
        if b.group(1) in ("<",) or "less" in b.group(1):
            return ("negative" if n <= 1 else ""), True
        return ("positive" if n >= 10 else ""), True
    return "", False


def _h_score(f: str) -> str:
    """The category an H-score (0-300: the percentage of cells times their intensity 1-3)
    decides alone: 0 negative; above 30 more than 10% of cells stain, positive; between, it
    cannot tell low positive from positive."""
    m = _H_SCORE.search(f)
    if m is None or int(m.group(1)) > 300:
        return ""
    h = int(m.group(1))
    return "negative" if h == 0 else "positive" if h > 30 else ""


def receptor_canonical(text: str) -> str | None:
    f = fold(text)
    by_share, ranged = _share(f)
    pct_match = re.search(rf"(?<![\d.])(\d(?:\s?\d){{0,2}}){_PERCENT_WORD}", f)
    percent = int(pct_match.group(1).replace(" ", "")) if pct_match else None
    if percent is not None and percent > 100:
        percent = None
    if ranged:
        percent = None
    # An intensity given as a score of 1-3 ("intensity 2+", "intensity score 3").
    scored = re.search(r"intensity\s*(?:score)?\s*(?:of\s*)?[:=]?\s*([123])\s*\+?(?![\d.%])", f)
    intensity = next(
        (w for w in ("strong", "moderate", "intermediate", "weak") if _has_word(f, w)), ""
    )
    intensity = "moderate" if intensity == "intermediate" else intensity
    if not intensity and scored:
        intensity = INTENSITY_OF_SCORE[int(scored.group(1))]
    less_than = by_share == "negative"
    if _has_word(f, "low positive") or re.search(
        r"positive,?\s*low\b|\blow\b.{0,3}positive|\blow\s?pos\b", f
    ):
        category = "low positive"
    elif re.search(_NEGATED_WORD, f) or _has_word(f, "negative"):
        category = "negative"
    elif _has_word(f, "positive") or re.search(r"\bpos\b", f):
        category = "positive"
    else:
        category = ""
    if percent is not None and not less_than:
        by_percent = "negative" if percent < 1 else "low positive" if percent <= 10 else "positive"
        if not category or category != "negative" or percent == 0:
            category = by_percent
    if less_than:
        category, percent = "negative", None
    if by_share and (not category or (category != "negative" and by_share != "negative")):
        category = by_share
    if not category and percent is None:
        category = _h_score(f)
        if category == "negative":
            return "negative"
    if not category and percent is None:
        category, intensity = _allred(f, intensity)
    if not category:
        return None
    if category == "negative":
        return "negative"
    details = ", ".join(x for x in (f"{percent}%" if percent is not None else "", intensity) if x)
    return f"{category} ({details})" if details else category


def her2_parts(text: str) -> tuple[int | None, str, str]:
    """(IHC score, ISH result, stated category) of a HER2 value."""
    f = fold(text)
    f = re.sub(r"(?<![\d.])[0o]\s*(?:-|\u2013|to)\s*3\s*\+", " ", f)  # the scale, "0-3+"
    ihc = None
    m = re.search(
        r"(?<![\d.])([0-3])\s*\+|scored?\s*(?:of\s*|as\s*)?[:=]?\s*([0-3])\b|^\s*([0-3])\b(?!\.\d)",
        f,
    )
    if m:
        ihc = int(next(g for g in m.groups() if g is not None))
    squashed = squash(f)
    if re.search(r"(?:not|non|no)ampllf(?:led|lcatlon)", squashed):
        ish = "not amplified"
    elif re.search(r"ampllf(?:led|lcatlon)", squashed):
        ish = "amplified"
    else:
        ish = _ish_by_numbers(f)
    if _has_word(f, "equivocal") or _has_word(f, "indeterminate"):
        stated = "equivocal"
    elif _has_word(f, "negative"):
        stated = "negative"
    elif _has_word(f, "positive"):
        stated = "positive"
    else:
        stated = ""
    return ihc, ish, stated


_RATIO = re.compile(
    r"\b(?:ratio|her-?2\s*(?:/|:|to)\s*(?:cep|cen|chr)\s?17(?:\s*ratio)?)\D{0,12}?"
    r"(?<![\d.])(\d{1,2}(?:\.\d{1,2})?)(?![\d.]*\s*(?:copies|signals|%))"
    r"|(?<![\d.])(\d{1,2}(?:\.\d{1,2})?)\s*\(ratio\)"
)
_COPIES = re.compile(
    r"(?<![\d.])(\d{1,2}(?:\.\d{1,2})?)\s*(?:her-?2\s*)?(?:copies|signals)\b"
    r"|\b(?:copy\s*number|copies|her-?2\s*signals|signals)\s*(?:of\s*)?[:=]?\s*"
    r"(?<![\d.])(\d{1,2}(?:\.\d{1,2})?)"
)


def _ish_by_numbers(f: str) -> str:
    """An ISH result stated by its numbers alone (ASCO/CAP 2018): a HER2/CEP17 ratio of 2 or
    more with 4 or more HER2 copies per cell (or no count stated) is amplified (group 1); a
    ratio under 2 with fewer than 4 copies (or none stated) is not (group 5); the groups
    between are left unread."""
    ratio_m = _RATIO.search(f)
    if ratio_m is None:
        return ""
    ratio = float(ratio_m.group(1) or ratio_m.group(2))
    copies_m = _COPIES.search(f)
    copies = float(copies_m.group(1) or copies_m.group(2)) if copies_m else None
    if ratio >= 2 and (copies is None or copies >= 4):
        return "amplified"
    if ratio < 2 and (copies is None or copies < 4):
        return "not amplified"
    return ""


def her2_combine(ihc: int | None, ish: str, stated: str = "") -> str | None:
    """The ASCO/CAP rule: IHC 3+ positive; 2+ decided by ISH (equivocal without it); 0 and 1+
    negative (ISH amplification, when tested, makes it positive)."""
    if ihc == 3:
        return "positive"
    if ish == "amplified":
        return "positive"
    if ish == "not amplified" and ihc in (None, 0, 1, 2):
        return "negative"
    if ihc == 2:
        return "equivocal"
    if ihc in (0, 1):
        return "negative"
    return stated or None


def her2_canonical(text: str) -> str | None:
    ihc, ish, stated = her2_parts(text)
    return her2_combine(ihc, ish, stated)


# ICD-O-3 morphology codes and WHO terms, with the words reports use for them (most specific
# first: "ductal and lobular" before "ductal").
HISTOLOGY: list[tuple[str, str, str]] = [
    # (code, term, words as ``squash`` spells them)
    (
        "8522/3",
        "mixed ductal and lobular carcinoma",
        r"duct(?:al)?andlobular|lobularandduct|duct(?:al)?(?:carclnoma)?wlthlobular"
        # (written with a slash: "ductal/lobular", "IDC/ILC")
        r"|duct(?:al)?lobular|ductalcarclnomalnvaslvelobular",
    ),
    ("8480/3", "mucinous carcinoma", r"muclnous|collold"),
    ("8211/3", "tubular carcinoma", r"tubular(?:adeno)?carclnoma|carclnomatubular|tubulartype"),
    ("8520/3", "invasive lobular carcinoma", r"lobular"),
    ("8507/3", "invasive micropapillary carcinoma", r"mlcropaplllary"),
    ("8510/3", "medullary carcinoma", r"medullary"),
    ("8575/3", "metaplastic carcinoma", r"metaplastlc"),
    ("8201/3", "cribriform carcinoma", r"crlbrlformcarclnoma"),
    ("8500/3", "invasive carcinoma of no special type", r"duct|nospeclaltype"),
]
_ICDO_CODE = re.compile(r"\b(8\d{3})\s*/\s*([0-3])\b|\bM-?(8\d{3})([0-3])\b")
_IN_SITU_ONLY = re.compile(r"in[\s-]?situ", re.IGNORECASE)


def _carcinoma(text: str) -> bool:
    return "carclnoma" in squash(_expand_ca(text))


# "ca." after a word is carcinoma ("Invasive lobular ca.", "Mucinous ca."; not "Ca 2.3"), and
# a tumour type named by its type word alone is one ("Mucinous (colloid) type").
_CA = re.compile(r"\b([a-z]{2,}\.?,?)\s+ca\b(?:\.|(?=[,;)]|\s*$|\s+\())", re.IGNORECASE)
_TYPE_WORD = re.compile(
    r"\b("
    + "|".join(_loose(w) for w in ("mucinous", "colloid", "lobular", "tubular", "ductal"))
    + r")((?:\s*\([a-z]+\))?\s+type)\b",
    re.IGNORECASE,
)


# A tumour type named by its type word and "invasive" with no "carcinoma" ("Lobular,
# invasive", "Ductal and lobular, invasive (mixed)").
_TYPE_WORDS = "|".join(_loose(w) for w in ("mucinous", "colloid", "lobular", "tubular", "ductal"))
_TYPE_INVASIVE = re.compile(
    # (at the value's start, or anywhere set off by a comma: "It contains lobular, invasive")
    rf"^\s*((?:{_TYPE_WORDS})(?:\s+and\s+\w+)?),?\s+(?:invasive|infiltrating)\b"
    rf"|\b((?:{_TYPE_WORDS})(?:\s+and\s+\w+)?),\s+(?:invasive|infiltrating)\b"
    r"(?!\s+(?:carcinoma|ca\b))",
    re.IGNORECASE,
)


def _expand_ca(text: str) -> str:
    text = _CA.sub(lambda m: f"{m[1]} carcinoma", text)
    text = _TYPE_INVASIVE.sub(lambda m: f"{m[1] or m[2]} carcinoma (invasive)", text)
    return _TYPE_WORD.sub(lambda m: f"{m[1]}{m[2]} carcinoma", text)


def histology_canonical(text: str) -> str | None:
    f = re.sub(r"\s+", " ", fold(text))
    code = _ICDO_CODE.search(text)
    if code:
        number = code.group(1) or code.group(3)
        behaviour = code.group(2) or code.group(4)
        full = f"{number}/{behaviour}"
        term = next((t for c, t, _ in HISTOLOGY if c == full), "")
        return f"{full} {term}".strip()
    # The abbreviations reports use for the two commonest types, read as their words.
    f = re.sub(r"\bidc\b", "invasive ductal carcinoma", f)
    f = re.sub(r"\bilc\b", "invasive lobular carcinoma", f)
    f = _expand_ca(f)
    if not _carcinoma(f):
        return None
    # The invasive tumour, not an accompanying in-situ component.
    main = re.split(r"\b(?:with|and)\s+(?:associated|adjacent|accompanying)\b|\bassociated\b", f)[0]
    if _IN_SITU_ONLY.search(main) and not re.search(r"invasive|infiltrating", main):
        return None
    squashed = squash(main)
    for c, term, words in HISTOLOGY:
        if re.search(words, squashed) or (c == "8500/3" and re.search(r"\bnst\b", main)):
            return f"{c} {term}"
    return None


_ROMAN = {
    "i": 1,
    "ii": 2,
    "iii": 3,
    "1": 1,
    "2": 2,
    "3": 3,
    "l": 1,
    "one": 1,
    "two": 2,
    "three": 3,
}


def grade_canonical(text: str) -> str | None:
    f = fold(boxes(text))
    # OCR's roman numerals: "grade lI", "Grade Il" are grade II.
    f = re.sub(
        r"\b(grade\s*:?\s*|g\s?|nottingham\s*|nhg\s*|elston(?:-ellis)?\s*)([il]{1,3})\b",
        lambda m: m[1] + m[2].replace("l", "i"),
        f,
    )
    f = re.sub(r"\bg ?r ?a ?d ?e\b", "grade", f)  # OCR's "g rade"
    f = _score_of_nine(f)
    f = _components_as_score(f)
    # A sum of the three component scores ("2+3+2 = 7", "(3+1+1)") states the score.
    f = re.sub(
        r"\b([123])\s*\+\s*([123])\s*\+\s*([123])(?:\s*=\s*[3-9])?\b",
        lambda m: f"score {int(m[1]) + int(m[2]) + int(m[3])}",
        f,
    )
    g = None
    m = re.search(
        r"\[\s*x\s*\]\s*([123])\b|\bg\s?([123])\b|\bgrade\s*:?\s*(iii|ii|i|[123l])\b"
        r"|\bg\s?(iii|ii|i)\b|\bgrade\s*:?\s*(one|two|three)\b"
        r"|^\s*(iii|ii|i|[123])\s*(?:/\s*(?:iii|3)|of\s*3|\(|,|$)",
        f,
    )
    if m:
        g = _ROMAN[next(x for x in m.groups() if x is not None)]
    # "score 6-7" is the range of scores a grade stands for, no tumour's score.
    score_m = re.search(rf"{_loose('score')}\s*(?:of\s*)?[:=]?\s*([3-9])\b(?!\s*[-\u2013]\s*\d)", f)
    score = int(score_m.group(1)) if score_m else None
    if g is None:
        # The grade named after its system ("Nottingham III", "NHG 2", "Elston-Ellis grade
        # II" read above) or by its level ("low grade", "intermediate-grade", "high grade").
        m = re.search(r"\b(?:nottingham|nhg|elston(?:-ellis)?|sbr)\s*:?\s*(iii|ii|i|[123])\b", f)
        # (a level of the tumour: "low grade fever" is none)
        level = re.search(
            r"\b(low|inter(?:m|rn)ediate|high)[\s-]+grade\b"
            r"(?=\s*(?:$|[(,.;:]|invasive|carcinoma|tumou?r|lesion))",
            f,
        )
        if m:
            g = _ROMAN[m.group(1)]
        elif level:
            g = {"low": 1, "high": 3}.get(level.group(1), 2)
    if g is None and score is not None:
        g = 1 if score <= 5 else 2 if score <= 7 else 3
    if g is None:
        for words, value in (("well", 1), ("moderately", 2), ("poorly", 3)):
            if re.search(rf"\b{_loose(words)}[\s-]+{_loose('differentiated')}", f):
                g = value
    if g is None:
        return None
    return f"grade {g}" + (f" (score {score})" if score is not None else "")


# Margin status words as ``squash`` spells them (broken words and l/I confusions undone).
_MARGIN_CLEAR = re.compile(
    r"notlnvolved|unlnvolved|negatlve|free|(?<!nu)clear(?!ance)|close(?!st)"
    r"|no(?:lnvaslve)?(?:carclnoma|tumou?r)(?:at|on|ln)|nolnkontumou?r"
)
_MARGIN_INVOLVED = re.compile(
    r"lnvolved|lnvolves|lnvolvlng|posltlve|presentat|at(?:the)?lnk|transected|extendsto"
    r"|lnkontumou?r|(?:tumou?r|carclnoma)onlnk"
)


def margins_canonical(text: str) -> str | None:
    f = re.sub(r"\s+", " ", fold(boxes(text)))
    f = re.sub(r"(?<![a-z0-9.])[li](?= ?[cm]m\b)", "1", f)  # OCR's "l mm", "lcm"
    f = re.sub(r"(?<=\d)(\s?)(?:mrn|rnm|rnrn)\b", r"\1mm", f)  # OCR's "3 mrn", "3 rnm"
    f = re.sub(r"(?<=\d)(\s?)millimet(?:er|re)s?\b", r"\1mm", f)
    f = re.sub(r"(?<=\d)(\s?)centimet(?:er|re)s?\b", r"\1cm", f)
    f = re.sub(r"\bless\s+than\s*(?=\d)", "<", f)  # a bound, no distance
    f = re.sub(r"\[\s*\]\s*(?:not\s+)?i\s?n\s?v\s?o\s?l\s?v\s?e\s?d", " ", f)  # an empty box
    s = squash(f)
    clear = _MARGIN_CLEAR.search(s)
    involved = _MARGIN_INVOLVED.search(s)
    if clear and (not involved or clear.start() <= involved.start() or "not" in clear.group(0)):
        status = "not involved"
    elif involved:
        status = "involved"
    else:
        status = ""
    if status == "involved":
        return "involved"
    # A distance stated as a bound ("close (<2 mm)", "> 10 mm") is a threshold, no distance.
    mm = re.search(r"(?<![<>\d.])(?<![<>] )(\d+(?:\.\d+)?)\s*mm\b", f)
    cm = re.search(r"(?<![<>\d.])(?<![<>] )(\d+(?:\.\d+)?)\s*cm\b", f)
    if not status:
        # A margin stated only by the tumour's distance from it ("carcinoma is 4 mm from the
        # posterior margin", "distance to nearest margin: 4 mm"): clear when the distance is
        # more than nothing, involved at 0 mm.
        distance = float(mm.group(1)) if mm else float(cm.group(1)) * 10 if cm else None
        if distance is None:
            # "less than 1 mm from the margin": a distance, though stated as a bound, from it.
            if re.search(r"<\s*\d+(?:\.\d+)?\s*(?:mm|cm)\s+(?:from|to)\b", f):
                return "not involved"
            return None
        if distance == 0:
            return "involved"
    if mm:
        return f"not involved ({float(mm.group(1)):g} mm)"
    if cm:
        return f"not involved ({float(cm.group(1)) * 10:g} mm)"
    return "not involved"


_COMPONENT_WORDS = (
    # (OCR may break a word once: "Tubu les", "nuc lei", "rnitoses")
    rf"{_loose('tubul')}\w*|{_loose('gland')}\w*|acin\w*",
    rf"{_loose('nucle')}\w*|{_loose('pleomorph')}\w*",
    r"(?:m|rn)\s?" + rf"{_loose('itos')}\w*|(?:m|rn)\s?{_loose('itot')}\w*",
)


def _components_as_score(f: str) -> str:
    """Nottingham's three component scores named in one value ("Tubules 3, nuclei 2, mitoses
    1", "T3P2M1") as the score they add up to; a stated total as a score ("total 6")."""
    total = _component_sum(f)
    if total is not None:
        f = f + f" score {total}"
    return re.sub(r"\btotal\s*(?:score)?\s*(?:of\s*)?[:=]?\s*([3-9])\b(?![.\d])", r"score \1", f)


def _component_sum(f: str) -> int | None:
    """The sum of Nottingham's three component scores named in ``f`` (None: not all three)."""
    found = []
    for words in _COMPONENT_WORDS:
        m = re.search(
            rf"\b(?:{words})(?:\s+(?:formation|score|count|rate|pleomorphism|figures))?\s*"
            r"[:=]?\s*([123]|l(?=\s*[,.;)]|\s*$))\b(?!\.\d|\d)",
            f,
        )
        found.append((int(m.group(1)) if m.group(1).isdigit() else 1) if m else 0)
    # (folding reads a 1 between letters as an l: "T2P1M2" is "t2plm2")
    tpm = re.search(r"\bt\s?([123il])\s?p\s?([123il])\s?m\s?([123il])\b", f)
    if tpm:
        found = [int(x) if x.isdigit() else 1 for x in tpm.groups()]
    return sum(found) if all(found) else None


def _score_of_nine(f: str) -> str:
    """A score out of 9 ("grade 7/9", "5/9 (grade I)") is the Nottingham score, no grade."""
    return re.sub(r"(?<![\d.])([3-9])\s*/\s*9\b", r"score \1", f)


def _grade_numbers(f: str) -> set[int]:
    f = _score_of_nine(f)
    found = set()
    pattern = (
        r"\bg\s?([123])\b|\bgrade\s*:?\s*(iii|ii|i|[123])\b(?:\s*(?:-|to|or)\s*(iii|ii|i|[123])\b)?"
        r"|^\s*(iii|ii|i|[123])\s*(?:/|of)\s*(?:iii|3)\b"
    )
    for m in re.finditer(pattern, f):
        for x in m.groups():
            if x is not None:
                found.add(_ROMAN[x])
    return found


def _drop_unchecked(text: str) -> str:
    """A form row whose boxes follow their options ("G1 [ ]   G2 [X]") without the options
    left unchecked: they are printed choices, not what the report states."""
    if re.match(r"\s*\[", text) or not re.search(r"\[\s*\]", text):
        return text
    return re.sub(r"(?:^|(?<=\]))[^\[\]]*?\[\s*\]", " ", text)


def unsure(name: str, text: str | None) -> str:
    """Why a grade or margin value, though it has a meaning, may not be read right ("" when
    nothing speaks against it): a grade that names two grades ("grade 2-3") or disagrees with
    its own score; a margin that states both a clear and an involved status, or calls it
    close with no distance."""
    if not text:
        return ""
    picked = _checked(text)
    if picked:
        # A form's row: what it states is the options checked ("Grade 1 \u2713    Grade 2":
        # the options left bare or in empty boxes are printed choices).
        extras = _form_extras(text)
        text = f"{picked} ({extras})" if extras else picked
    text = _drop_unchecked(boxes(text))
    f = re.sub(r"\s+", " ", fold(text))
    if name == "grade":
        canon = grade_canonical(text)
        if canon is None:
            return ""
        grades = _grade_numbers(f)
        if len(grades) > 1:
            return "two grades"
        if re.search(
            r"\b(?:well|moderately|poorly)\b[\s-]+(?:to|-)[\s-]+(?:well|moderately|poorly)", f
        ):
            return "two grades"
        m = re.search(r"score (\d)", canon)
        if m and grades:
            score = int(m.group(1))
            by_score = 1 if score <= 5 else 2 if score <= 7 else 3
            if by_score not in grades:
                return "grade and score disagree"
        return ""
    if name == "margins":
        canon = margins_canonical(text)
        if canon is None:
            return ""
        s = squash(re.sub(r"\[\s*\]\s*(?:not\s+)?i\s?n\s?v\s?o\s?l\s?v\s?e\s?d", " ", f))
        # Negated involvement ("not involved", "no tumour at ink", "no ink on tumour") is
        # a clear status, no involved one.
        cleared = re.sub(
            r"notlnvolved|unlnvolved|nonlnvolved|no(?:lnvaslve)?(?:carclnoma|tumou?r)at(?:the)?lnk"
            r"|nolnkontumou?r",
            "",
            s,
        )
        clear = _MARGIN_CLEAR.search(cleared) or re.search(r"notlnvolved|unlnvolved", s)
        involved = _MARGIN_INVOLVED.search(cleared)
        if clear and involved:
            return "clear and involved"
        if canon == "not involved" and re.search(r"close(?!st)", s):
            return "close, no distance"
        return ""
    return ""


CANONICALISERS = {
    "er_status": receptor_canonical,
    "pr_status": receptor_canonical,
    "her2_status": her2_canonical,
    "histology": histology_canonical,
    "grade": grade_canonical,
    "margins": margins_canonical,
}


def canonical(name: str, text: object) -> str | None:
    """The canonical value of a stated value of field ``name`` (None: none, or not a field
    with canonical values)."""
    fn = CANONICALISERS.get(name)
    if fn is None or text in (None, ""):
        return None
    return fn(str(text))


# A diagnosis that names no tumour ("Benign breast tissue", "Fibroadenoma", "Negative for
# malignancy"): outside the WHO/ICD-O tumour terms the histology field's meaning is read in,
# so it has none, and that is no doubt about it.
_NO_TUMOUR = re.compile(
    r"\b(benign|no (evidence of )?(malignancy|carcinoma|tumou?r)|negative for (malignancy|"
    r"carcinoma)|fibroadenoma|fibrocystic|fibroadipose|no (significant )?abnormality)",
    re.IGNORECASE,
)


def names_no_tumour(name: str, text: object) -> bool:
    """A histology value that names no tumour (see _NO_TUMOUR)."""
    return name == "histology" and bool(_NO_TUMOUR.search(fold(str(text or ""))))


def meaning_unread(name: str, text: object, meaning: str | None = None) -> bool:
    """A stated value of field ``name`` whose meaning cannot be read (``meaning``: one read
    already, else read here), and which is not a diagnosis naming no tumour: a doubt the score
    does not vouch for (the evaluator's trust and the offline extractor's confidence)."""
    return (meaning or canonical(name, text)) is None and not names_no_tumour(name, text)


def same(name: str, a: str, b: str) -> bool:
    """Two canonical values agree: the same category (receptor, HER2, margin status), code or
    grade; a percentage, intensity, score or distance counts only when both state it."""
    if name == "histology":
        return a.split()[0] == b.split()[0]

    def parts(v: str) -> tuple[str, set[str]]:
        head, _, rest = v.partition("(")
        return head.strip(), {p.strip() for p in rest.rstrip(")").split(",") if p.strip()}

    (ha, da), (hb, db) = parts(a), parts(b)
    if ha != hb:
        return False
    kinds = {
        "percent": lambda s: s.endswith("%"),
        "mm": lambda s: s.endswith("mm"),
        "score": lambda s: s.startswith("score"),
        "intensity": lambda s: s in {"weak", "moderate", "strong"},
    }
    for test in kinds.values():
        xa, xb = {p for p in da if test(p)}, {p for p in db if test(p)}
        if xa and xb and xa != xb:
            return False
    return True


# -- the structure reader --------------------------------------------------------------------------


@dataclass
class Reading:
    name: str
    value: str | None  # verbatim, as on the page (None: the report gives no current value)
    canonical: str | None
    snippet: str  # the line the value stands on, verbatim
    page: int
    level: int  # 0 clean labelled value, 1 from a sentence or put together, 2 doubtful
    withheld: str = ""  # why there is no value: pending, empty box, previous biopsy
    addendum: bool = False
    sources: list[str] = field(default_factory=list)
    unsure: str = ""  # why the value, as the page states it, may not be read right (``unsure``)


@dataclass
class _Line:
    text: str  # logical line: wrapped continuation lines joined
    page: int
    start: int
    end: int
    block: int
    history: bool
    addendum: bool
    node: bool  # in a lymph-node specimen's part
    bare_key: bool = False  # a key alone, its value indented on the next line
    tumour: int = 0  # the tumour section it stands in (1, 2, ...; 0 none)

    def join(self, raw: str, end: int, separator: str = " ") -> None:
        """The next line of the page read as the rest of this one."""
        self.text += separator + raw.strip()
        self.end = end


_KEY_VALUE = re.compile(
    r"^\s*(?:[-*\u2022]\s*)?(?P<k>(?:[A-Za-z]|[01](?=[A-Za-z]))[^:|\t\n.;%=]{0,60}?)\s*(?::|\s\|\s|\t|\s-\s|\s=\s|\s{2,})\s*(?P<v>.*)$"
)
_HEADER_LINE = re.compile(r"^\s*[A-Z][A-Z0-9 ,'()/&#.-]{3,}(?<!\.):?\s*$")
_PART_HEADER = re.compile(
    r"^\s*(?:part\s+[a-h]\b|[a-h][.)]\s|specimen\s*(?:[a-h]|\d)\b)", re.IGNORECASE
)
_HISTORY_HEADER = re.compile(
    r"^\s*(?:clinical\s+(?:history|information|data|indication)|history|indication|"
    r"pre-?operative\s+diagnosis)\b",
    re.IGNORECASE,
)
_ADDENDUM_HEADER = re.compile(
    r"^\s*(?:a\s?d\s?d\s?e\s?n\s?d\s?u\s?m|amended\s+report)", re.IGNORECASE
)
_NODE = re.compile(r"lymph\s*node|sentinel|axilla", re.IGNORECASE)
_PREVIOUS = re.compile(
    rf"\b(?:{_loose('prior')}|{_loose('previous')}(?:ly)?|{_loose('outside')}|earlier|original)\b"
    r"[^.;]{0,40}?"
    r"\b(?:biops\w*|specimen|core|report\w*|case|showed|shows)|\bs\d{2}-\d{3,}",
    re.IGNORECASE,
)
_PENDING = re.compile(
    r"\b(?:pending|sent\s*(?:out|to)|to\s+follow|in\s+progress|not\s+yet\s+available|"
    r"will\s+be\s+(?:reported|issued)|see\s+addendum|addendum\s+will|ordered|deferred|"
    r"not\s+performed|not\s+done|not\s+applicable|n/a)\b",
    re.IGNORECASE,
)
_NOT_PERFORMED = re.compile(r"\bnot\s+(?:performed|done|applicable)\b|\bn/a\b", re.IGNORECASE)
_DEFERRED = re.compile(r"addendum", re.IGNORECASE)


def _why_withheld(text: str) -> str:
    """The reason code (``support``'s where it has one) for a value that is not given."""
    if _NOT_PERFORMED.search(text):
        return "not_performed"
    if _DEFERRED.search(text):
        return "deferred"
    return "pending"


_EMPTY = re.compile(r"^[\s_\[\]\.:-]*$")
_CONTINUATION_STOP = re.compile(
    r"^\s*(?:[-*\u2022]|(?:[A-Za-z]|[01](?=[A-Za-z]))[^:\n.;%]{0,60}:|[A-H][.)]\s|PART\s)"
)


_KEY_COLON = re.compile(r"^\s*(?:[-*\u2022]\s*)?(?P<k>[A-Za-z][^:\n]{0,60}?)\s*:\s*(?P<v>.*)$")


_PIPE_BORDER = re.compile(r"^\s*\|\s*|\s*\|\s*$")
_LEADER_DOTS = re.compile(r"\s*\.{3,}\s*")
_ROW_SEPARATOR = re.compile(r":|\t|\s\|\s|\s{2,}")
_ABBREVIATION_DOT = re.compile(r"(?<=[A-Za-z])\.(?=[\s(A-Za-z]|$)")


def _as_row(text: str) -> str:
    """A line as a key-value row: a pipe table's border bars dropped ("| ER | Positive |"),
    leader dots between key and value read as a colon ("Estrogen receptor ...... Positive"),
    and the dots of an abbreviated key dropped ("E.R.", "Oestrogen rec.", "Gr."); the value's
    own text is left as it is."""
    text = _PIPE_BORDER.sub("", text)
    leader = _LEADER_DOTS.search(text)
    if leader and leader.start() > 0 and ":" not in text[: leader.start()]:
        text = text[: leader.start()] + ": " + text[leader.end() :]
    sep = _ROW_SEPARATOR.search(text)
    if sep:
        text = _ABBREVIATION_DOT.sub("", text[: sep.start()]) + text[sep.start() :]
    return text


def _key_value(text: str) -> tuple[re.Match[str] | None, str | None]:
    """The line's key and value, and the field its key names: split at the first separator,
    or, when that leaves a key the reader does not know, at the colon (a key that holds a
    dash of its own, "Hormone receptor - ER: Positive"), or at a separator of the other kinds
    reports write (" is ", ":-", " -- ", an arrow), or after a key with none at all ("Hist.
    type Invasive lobular carcinoma")."""
    text = _as_row(text)
    kv = _KEY_VALUE.match(text)
    key = _key_field(kv.group("k")) if kv else None
    if kv and key and _NO_KEY.search(kv.group("k")):
        # ("Combined grade is Grade 1 \u2713    Grade 2": the gap follows a value, not a key)
        more = _other_separator(text) or _no_separator(text)
        if more is not None:
            return more, _key_field(more.group("k"))
        kv, key = None, None
    if key is None:
        by_colon = _KEY_COLON.match(text)
        if by_colon and _key_field(by_colon.group("k")) is not None:
            return by_colon, _key_field(by_colon.group("k"))
        more = _other_separator(text) or _no_separator(text)
        if more is not None:
            return more, _key_field(more.group("k"))
    return kv, key


# Separators reports write between a key and its value besides the colon, tab, pipe, " - ",
# " = " and a gap of spaces: " is ", ":-", a double dash, a dash of any width, an arrow.
_OTHER_SEPARATOR = re.compile(
    r"\s*(?::-|--+|[\u2013\u2014\u2192]|=>|->)\s*|\s+is\s+|\s-\s|\t+|\s{2,}|\s*[:=|]\s*"
)
_KEY_WORDS = 5  # a key is a few words (a sentence before "is" is none)
# What no key holds: "is", a comma, a check box or mark.
_NO_KEY = re.compile(
    r"\sis\s|,|[\[\]<>*%\u2610-\u2612\u2713\u2714]|(?<!her)\s\d+(?:\.\d+)?\s*$|\d\s?\+"
    r"|\b(?:positive|negative|equivocal|amplified)\b",
    re.IGNORECASE,
)


def _row_match(text: str, key_end: int, value_start: int) -> re.Match[str] | None:
    key, value = text[:key_end].strip(), text[value_start:].strip()
    if not key or not value:
        return None
    return re.match(
        r"^\s*(?P<k>" + re.escape(key) + r")(?P<sep>.*?)(?P<v>" + re.escape(value) + r")\s*$",
        text,
        re.DOTALL,
    )


def _as_key(key: str) -> str | None:
    """The field a short key names ("diagnosis" is none: its line is read as a sentence)."""
    key = re.sub(r"^\s*[-*\u2022]\s*", "", key)
    if not key.strip() or _NO_KEY.search(key) or len(key.split()) > _KEY_WORDS:
        return None
    if key.strip()[0].islower():
        return None  # (the rest of a sentence OCR wrapped: "showed estrogen receptor ...")
    field = _key_field(key)
    return None if field in (None, "diagnosis") else field


def _other_separator(text: str) -> re.Match[str] | None:
    """A row split at the first separator of any kind whose left side is a key the reader
    knows."""
    sep = next((m for m in _OTHER_SEPARATOR.finditer(text[:70]) if m.start() > 0), None)
    if sep is not None and _as_key(text[: sep.start()]) is not None:
        return _row_match(text, sep.start(), sep.end())
    return None


# Words that carry a key on after the word that named its field ("Estrogen receptor (SP1)",
# "Her2 IHC score", "HER 2 FISH").
_KEY_TAIL = re.compile(
    r"\(\S[^()]{0,20}\)|rec(?:eptors?|ept)?\.?|status|type|grade|margins?|score|ihc|[a-z]?ish"
    r"|gene|immunohistochemistry|amplification|protein|/?neu|(?:er|pr|pgr)\b",
    re.IGNORECASE,
)
_ROW_VALUE = {
    "er": "er_status",
    "pr": "pr_status",
    "her2_ihc": "her2_status",
    "her2_final": "her2_status",
    "histology": "histology",
    "grade": "grade",
    "margins": "margins",
}


def _opens_with_key(text: str) -> bool:
    """The line opens with a key the reader knows and goes on after it (its value may be
    wrapped onto the next line: "Hist. type Carcinoma of" / "  breast, mucinous")."""
    return _no_separator(text, strict=False) is not None


# A marker named inside a value: the line lists several results, it is no key's row.
_ANOTHER_MARKER = re.compile(
    r"\b(?:ER|PR|PgR|HER-?2)\b|\b(?:estrogen|oestrogen|progesterone)\b", re.IGNORECASE
)
# ... by the field its first three letters name (the key's own marker may recur: "HER2 2+
# equivocal, reflex HER2 FISH pending").
_MARKER_FIELD = {"er": "er", "est": "er", "oes": "er", "pr": "pr", "pgr": "pr", "pro": "pr"}
_MARKER_FIELD |= {"her": "her2"}


def _no_separator(text: str, strict: bool = True) -> re.Match[str] | None:
    """A key and its value with no separator between ("Oestr. Positive", "Mgns 4 mm"): the
    shortest start of the line that names a field, with the words that carry a key on, where
    what follows reads as that field's value (a meaning, a form's boxes or a reason it is not
    given)."""
    words = list(re.finditer(r"\S+", text))
    for n in range(1, min(_KEY_WORDS, len(words) - 1) + 1):
        if _as_key(text[: words[n - 1].end()].replace(".", " ")) is not None:
            break
    else:
        return None
    if (
        fold(words[n - 1].group(0)).strip(".") in {"er", "pr", "pgr"}
        and not words[n - 1].group(0).isupper()
    ):
        return None  # ("er" / "pr" name a marker only in capitals: OCR's "und er")
    end = words[n - 1].end()
    folded = fold(text)  # (letter for letter: "lSH" is "ISH")
    while True:
        tail = _KEY_TAIL.match(folded, end + 1) if text[end : end + 1] == " " else None
        if tail is None or squash(tail.group(0)) in squash(text[:end]):
            break
        if tail.end() < len(text) and not text[tail.end()].isspace():
            break
        end = tail.end()
    key, value = text[:end], text[end:].strip()
    field = _as_key(key.replace(".", " "))
    if field is None or not value:
        return None
    if not strict:
        return _row_match(text, end, len(text) - len(value))
    if field == "her2_ish":
        known = bool(her2_parts(value)[1])
    elif field in _ROW_VALUE:
        known = canonical(_ROW_VALUE[field], value) is not None
    else:
        return None
    if not (known or _checked(value) is not None or _PENDING.search(fold(value))):
        return None
    own = "her2" if field.startswith("her2") else field
    if any(
        _MARKER_FIELD[m.group(0).casefold()[:3]] != own for m in _ANOTHER_MARKER.finditer(value)
    ):
        return None  # a sentence listing markers ("ER positive, PR negative, HER2 ..."): no row
    if field == "histology" and histology_canonical(key) is not None:
        return None
    return _row_match(text, end, len(text) - len(value))


def _recognised_row(raw: str) -> bool:
    """The line is a row of a key the reader knows (a field's, or a grade component's)."""
    m, key = _key_value(raw)
    return bool(m and m.group("v").strip() and key not in (None, "diagnosis"))


def _starts_row(raw: str) -> bool:
    """The line opens a key-value row of its own (no continuation of the line above): a
    field's key, an upper-case key, or any key before "=" or a colon."""
    if re.match(r"^\s*[A-Za-z][^=:\n]{0,60}\s=\s", raw):
        return True
    if re.match(r"^\s*[A-Za-z][^:\n]{0,40}?\s\.{3,}\s*\S", raw):
        return True  # a key, leader dots, a value
    if _recognised_row(raw) or _opens_with_key(raw):
        return True
    m = _KEY_VALUE.match(_as_row(raw))
    if not m or not m.group("v").strip():
        return False
    key = m.group("k")
    if _key_field(key) not in (None, "diagnosis") and not (
        key.strip()[:1].islower() and _NO_KEY.search(key)
    ):
        return True
    letters = [c for c in key if c.isalpha()]
    return len(letters) >= 3 and sum(c.islower() for c in letters) <= 1


# A heading that opens one tumour's section of a report of several ("TUMOUR 1", "Tumor #2:",
# "Lesion B (lower inner)", "Focus 2").
_TUMOUR_HEADER = re.compile(
    r"^\s*(?:invasive\s+)?(?:tumou?r|lesion|focus|nodule|mass)\s*(?:#|no\.?|number)?\s*"
    r"(?:\d|[a-d]|one|two|three)\b[^:.;]{0,30}:?\s*$",
    re.IGNORECASE,
)
_BARE_KEY = re.compile(r"^\s*[A-Za-z][^:|\t.;]{0,60}?:?\s*$")
_COLUMN_GAP = re.compile(r"\S(\s{3,})(?=\S)")
# (a key spans no column gap: "Lobular carcinoma      ER:" is a value, then a key)
_KEY_AT_START = re.compile(r"^[A-Za-z](?:(?!\s{3})[^:\n]){0,60}:\s*\S")


def _cell_is_row(cell: str) -> bool:
    """A right-hand cell that is a row of its own: "key: value", or a key the reader knows
    and its value after any separator ("ER is positive", "Her2 IHC score - 1+")."""
    if _KEY_AT_START.match(cell):
        return True
    m, key = _key_value(cell)
    return bool(
        m
        and key not in (None, "diagnosis")
        and m.group("v").strip()
        and not _NO_KEY.search(m.group("k"))
        and histology_canonical(m.group("k")) is None
    )


def _right_cell(line: str, at: int) -> bool:
    """The text after the gap at ``at`` is a right column's row: "key: value", or a row of
    another separator whose left side is no bare key (a bare key and its value set off by
    spaces, "Margins (closest)     Tumour at margin - involved", are one row)."""
    cell = line[at:]
    if _KEY_AT_START.match(cell):
        return True
    left = line[:at].strip()
    if left.endswith(":"):
        return False  # (the cell is the value of the key before it)
    bare = len(left.split()) <= 4 and not re.search(r"\d|\s(?:is|-)\s|[:=|\t]", left)
    return not bare and _cell_is_row(cell)


def _has_columns(text: str) -> bool:
    """The page may hold two columns read across: a gap, then a row's key."""
    if re.search(r"\S\s{3,}[A-Za-z][^:\n]{0,60}:", text):
        return True
    return any(
        _right_cell(line, m.end())
        for line in text.split("\n")
        for m in _COLUMN_GAP.finditer(line)
        if not line[m.end() :].lstrip().startswith("[")
    )


def _columns_read_across(raw_lines: list[str]) -> list[str]:
    """Two printed columns that OCR read across the page: where two or more lines of a
    block have text starting at the same column after a gap, and most of their right parts
    are "key: value", the left column is read down first, then the right one."""
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        # Where each line's text resumes after a gap (OCR's broken words shift a column by
        # a character or two: starts within 2 count as one).
        gaps = [[m.end() for m in _COLUMN_GAP.finditer(line)] for line in block]
        keyed = [
            at
            for line, ats in zip(block, gaps, strict=True)
            for at in ats
            # (a form's boxes before a colon are options of the row, no key of a column:
            # "Neg ( )   %: 90"; nor is what follows a row's boxes: "Clear [x]   Distance: 1")
            if _right_cell(line, at)
            and not re.match(r"[^:]*\[", boxes(line[at:]))
            and not re.search(r"\[\s*[xX\u2713]?\s*\]", boxes(line[:at]))
        ]
        support = {at: sum(any(abs(g - at) <= 2 for g in ats) for ats in gaps) for at in keyed}
        col = max(support, key=lambda k: (support[k], -k)) if support else 0
        # The right column's cells are rows of their own ("ER: Positive", or a key OCR
        # wrapped, "ER"); where few are, the gap sets each row's value off its key ("Size
        # 35 mm" / "Grade     G2"), and there is one column.
        cells = [
            (line, at, line[at:])
            for line, ats in zip(block, gaps, strict=True)
            for at in ats
            if abs(at - col) <= 2
        ]
        rows = sum(
            1
            for line, at, c in cells
            if (_right_cell(line, at) and not re.match(r"[^:]*\[", boxes(c)))
            or _key_field(c.strip()) in ("er", "pr", "her2_ihc", "her2_ish")
        )
        if not col or support[col] < 2 or rows < 2 or 3 * rows < len(cells):
            out.extend(block)
            block.clear()
            return
        left: list[str] = []
        right: list[str] = []
        above = ""
        for line, ats in zip(block, gaps, strict=True):
            at = next((g for g in ats if abs(g - col) <= 2), None)
            wrapped_at_gap, above = len(above) - len(above.rstrip()) >= 3, line
            if (
                at is None
                and wrapped_at_gap
                and (not line[:1].isspace() or _KEY_AT_START.match(line.strip()))
            ):
                # OCR wrapped the line in the gap: this line is the right column's cell.
                right.append(line.strip())
                continue
            if (
                at is None
                and right
                and ":" not in right[-1]
                and not line[:1].isspace()
                and not _cell_is_row(right[-1])
            ):
                # OCR wrapped the line inside the right column's key ("ER" / "(clone 6F11):
                # Negative"): the rest is that cell's.
                right[-1] += " " + line.strip()
                continue
            if at is None:
                left.append(line.rstrip())
                continue
            left.append(line[:at].rstrip())
            right.append(line[at:].strip())
        out.extend(x for x in left if x.strip())
        out.extend(x for x in right if x)
        block.clear()

    for line in raw_lines:
        if not line.strip():
            flush()
            out.append(line)
        else:
            block.append(line)
    flush()
    return out


def _separator_after_key(line: str) -> str:
    """The separator after a line's key, where the key is a few capitalised words (" - ",
    " is ", ":-", "" for none found)."""
    m = re.match(r"^\s*[A-Z][A-Za-z0-9 ./()]{0,40}?(\s-\s|\s--\s|:-|\sis\s|\t+|\s=\s)", line)
    if m is None or len(line[: m.start(1)].split()) > _KEY_WORDS:
        return ""
    return m.group(1).strip(" ") or "tab"


def _same_separator(previous: str, raw: str) -> bool:
    """The line is the next row of a block whose rows set their values off the same way
    ("Carcinoma type - Tubular" / "Size - 36 mm"): no continuation of the row above."""
    kind = _separator_after_key(raw)
    return bool(kind) and kind == _separator_after_key(previous)


def _logical_lines(pages: list[str]) -> list[_Line]:
    lines: list[_Line] = []
    block = 0
    for number, text in enumerate(pages, start=1):
        history = addendum = node = False
        tumour = 0
        offset = 0
        previous: _Line | None = None
        raw_lines = text.split("\n")
        if _has_columns(text):
            # Offsets of a page read across columns are those of its reassembled lines.
            raw_lines = _columns_read_across(raw_lines)
        for i, raw in enumerate(raw_lines):
            start, end = offset, offset + len(raw)
            offset = end + 1
            below = raw_lines[i + 1] if i + 1 < len(raw_lines) else ""
            # A key on a line of its own whose value is indented on the next line.
            bare_key = bool(
                not raw[:1].isspace()
                and _BARE_KEY.match(raw)
                and below[:1].isspace()
                and below.strip()
            )
            if not raw.strip():
                block += 1
                history = False
                previous = None
                continue
            if re.match(r"^\s*[+|]?[-=+|_\s]{5,}$", raw) and re.search(r"[-=_]{5}", raw):
                previous = None  # a table's rule ("+-------+")
                continue
            folded = fold(raw)
            if _TUMOUR_HEADER.match(raw) and len(raw.strip()) <= 40:
                tumour += 1
            if _ADDENDUM_HEADER.match(folded):
                addendum, history, node, tumour = True, False, False, 0
            if _HISTORY_HEADER.match(folded):
                history = True
            elif _PART_HEADER.match(raw) or (
                _HEADER_LINE.match(raw) and re.search(r"breast|node|margin", raw, re.IGNORECASE)
            ):
                history = False
                node = bool(_NODE.search(raw)) and not re.search(r"breast", raw, re.IGNORECASE)
            boxes_wrapped = previous is not None and re.search(
                r"\[\s*[xX\u2713]?\s*\]\s*$", boxes(previous.text)
            )
            if (
                previous is not None
                and (
                    boxes_wrapped
                    or ("[" in boxes(previous.text) and re.match(r"\s*(?:[a-z]|\[)", boxes(raw)))
                )
                and not _recognised_row(raw)
            ):
                previous.join(raw, end)
                continue
            if (
                previous is not None
                and previous.bare_key
                and raw[:1].isspace()
                and not (_recognised_row(raw) and below[:1].isspace() and _recognised_row(below))
            ):
                # (An indented list of rows under a heading is no value of the heading.)
                # A key on a line of its own, its value indented on the next.
                # (joined by spaces, as the page has them: the row is quoted from the page)
                previous.text = previous.text.rstrip()
                previous.join(raw, end, "  " if previous.text[-1:] != ":" else " ")
                continue
            if (
                previous is not None
                and raw[:2].isspace()
                and (
                    (
                        (raw.strip()[:1].islower() or raw.strip()[:1].isdigit())
                        and (
                            _KEY_COLON.match(previous.text)
                            or _recognised_row(previous.text)
                            or _opens_with_key(previous.text)
                        )
                    )
                    or (
                        raw[:4].isspace()
                        and (_recognised_row(previous.text) or _opens_with_key(previous.text))
                    )
                )
                and not _recognised_row(raw)
            ):
                # The rest of a row's value, wrapped and indented below it ("Tumour type:
                # Invasive lobular" / "  carcinoma, classic").
                previous.join(raw, end)
                continue
            if (
                previous is not None
                and not bare_key
                and len(previous.text) >= 30
                and not _CONTINUATION_STOP.match(raw)
                and not _starts_row(raw)
                and not _HEADER_LINE.match(raw)
                and not re.search(r"\s\|\s|\t|\s{3,}", raw)
                and not re.search(r"[.:]\s*$", previous.text)
                and not _same_separator(previous.text, raw)
            ):
                previous.join(raw, end)
                continue
            line = _Line(raw, number, start, end, block, history, addendum, node, bare_key, tumour)
            lines.append(line)
            previous = line
    return lines


# The words keys are made of, to repair a key OCR damaged by one letter ("Estroge receptor",
# "Marqin status", "Proesterone"): a word one edit (a letter changed, dropped or added) from one
# of these, and from no other, is read as it.
_KEY_VOCABULARY = (
    "estrogen",
    "oestrogen",
    "oestr",
    "progest",
    "progesterone",
    "receptor",
    "receptors",
    "margin",
    "margins",
    "histologic",
    "histological",
    "histology",
    "histotype",
    "grade",
    "nottingham",
    "differentiation",
    "morphology",
    "amplification",
    "status",
    "clearance",
    "excision",
    "resection",
    "surgical",
    "combined",
    "tumor",
    "tumour",
)


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by exactly one letter changed, dropped or added."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b, strict=True)) == 1
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _repaired(key: str) -> str:
    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if len(word) < 4 or word in _KEY_VOCABULARY:
            return word
        near = [v for v in _KEY_VOCABULARY if len(v) >= 5 and _one_edit(word, v)]
        # (one word, or its forms: "margis" is a letter from "margin" and from "margins")
        return near[0] if near and len({v[:5] for v in near}) == 1 else word

    return re.sub(r"[a-z]+", fix, fold(key))


@lru_cache(maxsize=4096)
def _key_field(key: str) -> str | None:
    """The field a key names, also when OCR damaged one of its words by a letter."""
    repaired = _repaired(key)
    if repaired != fold(key):
        # (the repaired word decides: "histologic qrade" is a grade's key, not a type's)
        field = _key_field_exact(repaired)
        if field is not None:
            return field
    return _key_field_exact(key)


# Keys: each field's key, as squashed text (see ``squash``).
def _key_field_exact(key: str) -> str | None:
    k = squash(key)

    def has(*words: str) -> bool:
        return any(squash(w) in k for w in words)

    first = fold(key).strip().split(" ")[0] if key.strip() else ""
    # The key's words (a short key: a marker's abbreviation among them names it, "ER
    # expression", "Hormone receptor - PR", "ER-alpha (SP1)").
    words = re.findall(r"[a-z0-9]+", fold(key)) if len(key) <= 45 else []
    her2 = "her2" in k or "erbb2" in k or "hercep" in k or ("her" in words and "2" in words)
    if "estrogen" in k or "oestrogen" in k or first in {"er", "er(sp1)", "er(clone"}:
        return "er"
    if re.match(r"o?estr(?:\.|\s|$|rec)", fold(key).strip()) and len(k) <= 12:
        return "er"  # "Estr. rec.", "Oestr."
    if k.startswith("er") and not k.startswith("erb") and len(k) <= 12:
        return "er"
    if not her2 and ("er" in words or "era" in words):
        return "er"
    if "progest" in k or first in {"pr", "pgr", "pr(1e2)", "pgr(1e2)"}:
        return "pr"
    if (k.startswith("pr") or k.startswith("pgr")) and len(k) <= 12 and "proc" not in k:
        return "pr"
    if not her2 and ("pr" in words or "pgr" in words):
        return "pr"
    if her2:
        # In situ hybridisation by any of its names (FISH, SISH, CISH, dual ISH), or the gene
        # and its amplification, against the protein by immunohistochemistry.
        if (
            re.search(r"flsh|slsh|clsh|dlsh|lnsltu|hybrld|gene|ampllf|copy|ratlo", k)
            or re.search(r"\bi\s?s\s?h\b", fold(key))
            or any(w.endswith("ish") and len(w) <= 4 for w in words)
        ):
            return "her2_ish"
        if re.search(r"lhc|lmmuno|proteln|4b5|hercep|score", k):
            return "her2_ihc"
        if re.search(r"flnal|overall|status|result$", k):
            return "her2_final"
        return "her2_ihc"
    if has("margin", "clearance") or (words and words[0] in {"marg", "mgn", "mgns", "margs"}):
        return "margins"
    if has("grade") and not has("nuclear", "dcis"):
        return "grade"
    if words and (words[0] in {"nhg", "sbr", "elston", "gr"} or "nhg" in words):
        return "grade"
    if has("differentiation") and not has("tubul", "gland", "acinar"):
        return "grade"
    # Nottingham's three components on rows of their own, and their sum.
    if has("tubul", "gland", "acinar"):
        return "grade_tubules"
    if has("pleomorph", "nucle") and not has("grade", "dcis"):
        return "grade_nuclei"
    if has("mitos", "mitot"):
        return "grade_mitoses"
    if has("score") and has("total", "sum", "nottingham", "combined"):
        return "grade_score"
    if has("type", "histol", "morpholog", "classification") and not has(
        "procedure", "specimen", "laterality", "sample"
    ):
        return "histology"
    if has("diagnosis") and not has("history"):
        return "diagnosis"
    return None


_MARKER_IN_TEXT = re.compile(
    rf"(?P<er>o?{_loose('estrogen')}\s*{_loose('receptor')}s?(?:\s*\(er\))?|\ber\b)"
    rf"|(?P<pr>{_loose('progesterone')}\s*{_loose('receptor')}s?(?:\s*\((?:pr|pgr)\))?|\bpg?r\b)"
    r"|(?P<her2>\bher-?\s?2(?:\s*/?\s*neu)?\b|c-?erb\s?b-?2)",
)


def _checked(value: str) -> str | None:
    """The option checked in a printed row of boxes: "" when no box is checked (empty),
    None when the value has no boxes."""
    value = boxes(value)
    if re.search(r"\S\s{3,}\S", value):
        # Options set apart by gaps, the chosen one starred ("Grade 1    * Grade 2    Grade 3").
        value = re.sub(r"(?:^|(?<=\s))\*(?=\s?[A-Za-z0-9])", "[X]", value)
    if not re.search(r"\[\s*[xX\u2713 ]?\s*\]", value):
        return None
    first = re.search(r"\[\s*[xX\u2713]\s*\]", value)
    # A box before its option: at the row's start, or set off by a gap before the option it
    # marks ("Grade 1    [X] Grade 2    Grade 3"); else after it.
    before = bool(
        re.match(r"\s*\[", value)
        or (
            first
            and re.search(r"(?:^|\s{2,}|:)\s*$", value[: first.start()])
            and re.match(r" ?[A-Za-z0-9]", value[first.end() :])
        )
    )
    if before:
        picked = re.findall(r"\[\s*[xX\u2713]\s*\]\s*([^\[\n]*?)(?=\s*\[|\s{2,}|$)", value)
    else:
        # Each box after its option ("Pos [x]   Low [ ]"): the option is the text before it
        # (back to the gap before it, where other options have no box).
        parts = re.split(r"(\[\s*[xX\u2713 ]?\s*\])", value)
        picked = [
            re.split(r"\s{2,}", parts[i - 1].strip())[-1]
            for i in range(1, len(parts), 2)
            if re.search(r"[xX\u2713]", parts[i])
        ]
    # A lone O or l beside a box is a 0 or a 1 (an IHC score, a grade).
    options = [{"O": "0", "o": "0", "l": "1", "I": "1"}.get(p.strip(), p.strip()) for p in picked]
    return " ".join(options)


def _form_extras(value: str) -> str:
    """What follows the boxes on a form row: "%: 90", "Intensity: strong", "Ratio: 2.4"."""
    out = []
    for label, pattern in (
        ("%", r"%\s*(?:of\s*)?(?:cells|nuclei)?\s*(?:[:=-]|is)?\s*(\d{1,3})\b(?![.\d])"),
        ("", r"intensity\s*(?:[:=-]|is)?\s*(weak|moderate|strong)"),
        ("ratio ", r"ratio\s*:\s*(\d+(?:\.\d+)?)"),
        ("score ", r"score\s*:\s*(\d)"),
        ("", r"(?:distance|margin\s+at|clearance)\s*:\s*(\d+(?:\.\d+)?\s*mm)"),
    ):
        m = re.search(pattern, value, re.IGNORECASE)
        if m:
            out.append(f"{m.group(1)}%" if label == "%" else f"{label}{m.group(1)}")
    return ", ".join(out)


@dataclass
class _Candidate:
    key: str  # er, pr, her2_ihc, her2_ish, her2_final, histology, grade, margins
    value: str
    line: _Line
    level: int
    withheld: str = ""
    raw: str = ""  # a labelled value as it stands after its label (a form row's boxes)


def _printed_options(key: str, value: str) -> bool:
    """The value is a form's printed options with none marked ("Positive    Negative", "0
    1+    2+    3+"): two or more, set apart by gaps, each a value of the field that the
    others contradict."""
    chunks = [c for c in re.split(r"\s{3,}|\t+", value.strip()) if c]
    name = "her2_status" if key.startswith("her2") else _ROW_VALUE.get(key)
    if len(chunks) < 2 or name is None:
        return False
    if any(re.search(r"%|score|allred|ratio|mm\b|cm\b", c, re.I) for c in chunks):
        return False
    meanings = [m for c in chunks if (m := canonical(name, c))]
    return len(meanings) >= 2 and any(not same(name, meanings[0], m) for m in meanings[1:])


def _value_of(key: str, value: str) -> tuple[str, str]:
    """(value to read, why withheld) for a labelled value."""
    if _EMPTY.match(value):
        return "", "empty"
    boxes = _checked(value)
    if boxes is None and _printed_options(key, value):
        return "", "empty box"
    if boxes is not None:
        if not boxes:
            return "", "empty box"
        extras = _form_extras(value)
        return (f"{boxes} ({extras})" if extras else boxes), ""
    # Folded: OCR writes "N0t applicable", "pend1ng".
    if _PENDING.search(fold(value)) and not re.search(
        r"\d\s*%|\d\s*\+|positive|negative|amplified", fold(value)
    ):
        return "", _why_withheld(fold(value))
    return value, ""


# A form's sub-row that goes on about the receptor row above it ("  % cells - 20", "  Intensity
# [ ] Weak  [X] Moderate").
_SUB_ROW = re.compile(
    r"^\s*(?:%|percent(?:age)?|proportion)\s*(?:of\s+)?(?:cells|nuclei)?\s*(?:[:=-]|is\b|\t+)?"
    r"\s*(?P<pct>\d{1,3})\s*%?\s*$"
    r"|^\s*intensity\s*(?:[:=-]|is\b|\t+)?\s*(?P<int>\S.*)$",
    re.IGNORECASE,
)


def _sub_row(line: _Line, above: _Candidate | None) -> bool:
    """Read a percentage or intensity sub-row into the receptor value of the row above it
    (True: the line was one)."""
    m = _SUB_ROW.match(line.text)
    if m is None or above is None or not above.value:
        return False
    if m.group("pct") is not None:
        above.value += f" ({m.group('pct')}%)"
        return True
    said = _checked(m.group("int"))
    said = m.group("int") if said is None else said
    word = next((w for w in ("weak", "moderate", "strong") if w in fold(said)), "")
    if word and len(said.split()) <= 2:
        above.value += f", {word}"
    return True


def _candidates(lines: list[_Line]) -> list[_Candidate]:
    found: list[_Candidate] = []
    receptor: _Candidate | None = None  # the receptor row the next lines may go on about
    for line in lines:
        if line.history or line.node:
            continue
        text = line.text
        if _PREVIOUS.search(fold(text)):
            continue
        if _sub_row(line, receptor):
            continue
        receptor = None
        kv, key = _key_value(text)
        if kv and key and histology_canonical(kv.group("k")) is not None:
            # A "key" that names a tumour type is a diagnosis sentence cut at a separator
            # ("Mucinous carcinoma, pure type, NHG score 5 = grade 1"): read as a sentence.
            kv, key = None, None
        if kv and key and key != "diagnosis":
            given, rest = kv.group("v"), ""
            stop = re.search(r"[.;]\s+(?=[A-Za-z])", given)
            named = _MARKER_IN_TEXT.search(fold(given[stop.end() :])) if stop else None
            if stop and named and not (key.startswith("her2") and named.lastgroup == "her2"):
                # "PgR: low positive, 1%, weak. HER2 is 3+, ...": the next sentence names
                # another marker; it is read as a sentence.
                given, rest = given[: stop.start()], given[stop.end() :]
            value, why = _value_of(key, given)
            level = 0
            if re.search(r"\s\|\s|\t|\s{3,}", text) and not re.search(r":", text):
                level = 0  # a table row
            found.append(_Candidate(key, value, line, level, why, given.strip()))
            if key in ("er", "pr"):
                receptor = found[-1]
            if key in ("grade", "margins") and _carcinoma(fold(kv.group("k"))):
                # A diagnosis sentence whose grade wording has a colon ("Tubular carcinoma,
                # histologic grade Grade: II/III"): its start is the tumour's type.
                found.append(_Candidate("histology", kv.group("k"), line, 1))
            if not rest:
                continue
            text = rest
        # Narrative: clauses that name one marker; diagnosis lines for the tumour.
        f = fold(text)
        shorts = set(re.findall(r"(?<![A-Za-z])(ER|PR|PgR|PGR)(?![A-Za-z])", text))
        shorts = {m.upper() for m in shorts}
        last = ""
        for clause in re.split(r";|(?<=[a-z%)\]])\.(?:\s|$)", f):
            if not clause.strip():
                continue
            if (
                last.startswith("her2")
                and not _MARKER_IN_TEXT.search(clause)
                and re.search(r"\b(?:[fscd]\s?)?i\s?s\s?h\b|in\s*situ", clause)
                and re.search(r"ampllf", squash(clause))
            ):
                # "HER2 2+ (equivocal); ISH not amplified": the clause after HER2's goes on
                # about it.
                found.append(_Candidate("her2_ish", clause.strip(" ,:"), line, 1))
                continue
            # "er" / "pr" are markers only where the page writes them in capitals (OCR breaks
            # words into fragments like "und er").
            marks = [
                m
                for m in _MARKER_IN_TEXT.finditer(clause)
                if len(m.group(0).strip()) > 3 or m.group(0).strip().upper() in shorts
            ]
            for i, m in enumerate(marks):
                seg_start = m.start() if len(marks) > 1 else 0
                seg_end = marks[i + 1].start() if i + 1 < len(marks) else len(clause)
                segment = clause[seg_start:seg_end]
                which = m.lastgroup or ""
                if which == "her2":
                    which = (
                        "her2_ish"
                        if re.search(r"flsh|slsh|lnsltu|ampllf|cep17", squash(segment))
                        or re.search(r"\bi\s?s\s?h\b", segment)
                        else "her2_ihc"
                    )
                given = re.search(r"\d\s*%|[0-3]\s*\+|amplified|positive|negative", segment)
                if not given and _PENDING.search(clause):
                    found.append(_Candidate(which, "", line, 1, _why_withheld(clause)))
                    continue
                found.append(_Candidate(which, segment.strip(" ,:"), line, 1))
                last = which
        if _MARKER_IN_TEXT.search(f):
            continue
        if _carcinoma(f) or re.search(r"\b(?:idc|ilc)\b", f) or _ICDO_CODE.search(text):
            found.append(_Candidate("histology", text, line, 1))
        if (
            re.search(r"grade|differentiated|nottingham|\bnhg|elston|bloom|\bg[123]\b", f)
            or _component_sum(f) is not None
        ) and not re.search(r"nuclear\s+grade", f):
            found.append(_Candidate("grade", text, line, 1))
        if re.search(r"margln|lnkontumo|tumou?ratlnk", squash(f)) and not kv:
            found.append(_Candidate("margins", text, line, 1))
    return found


def _verbatim(line: _Line, value: str, name: str = "") -> str:
    """The value as it stands on the line (case and spacing of the page); of a margin
    sentence, the clause that states the status, with the clauses after it up to the one
    that states the distance ("No tumour at ink; closest approach 5 mm to the medial
    margin")."""
    if not value:
        return ""
    if name == "margins":
        target = margins_canonical(value)
        text = line.text
        cuts = [0] + [m.end() for m in re.finditer(r";|(?<=[A-Za-z%)\]])\.(?:\s|$)", text)]
        ends = [m.start() for m in re.finditer(r";|(?<=[A-Za-z%)\]])\.(?:\s|$)", text)]
        ends.append(len(text))
        first = ""
        for i, start in enumerate(cuts):
            clause = text[start : ends[i]]
            if margins_canonical(clause) is None:
                continue
            first = first or clause.strip(" -\u2022*")
            for end in ends[i:]:
                if margins_canonical(text[start:end]) == target:
                    return text[start:end].strip(" -\u2022*")
        if first:
            return first
    pattern = r"\s*".join(re.escape(c) for c in re.sub(r"\s+", "", value)[:60])
    try:
        m = re.search(pattern, fold(line.text))
    except re.error:  # pragma: no cover - escaped above
        m = None
    return line.text[m.start() : m.end()] if m else line.text.strip()


def _pick(cands: list[_Candidate], canon: str) -> tuple[_Candidate | None, list[_Candidate]]:
    """The value that stands: an addendum's over the report's, a labelled one over a
    sentence's, the first otherwise; and the others that give a different value."""
    usable = [c for c in cands if c.value and canonical(canon, c.value)]
    if not usable:
        return None, []
    addenda = [c for c in usable if c.line.addendum]
    pool = addenda or usable
    best = min(pool, key=lambda c: (c.level, c.line.page, c.line.start))
    value = canonical(canon, best.value) or ""
    others = [
        c for c in pool if c is not best and not same(canon, value, canonical(canon, c.value) or "")
    ]
    return best, others


def _reading(name: str, cands: list[_Candidate], canon: str) -> Reading | None:
    best, others = _pick(cands, canon)
    if best is None:
        withheld = next((c for c in cands if c.withheld), None)
        if withheld is None:
            return None
        return Reading(
            name, None, None, withheld.line.text.strip(), withheld.line.page, 0, withheld.withheld
        )
    value = canonical(canon, best.value)
    level = best.level + (1 if others else 0)
    return Reading(
        name,
        _verbatim(best.line, best.value, name) if best.level else (best.raw or best.value.strip()),
        value,
        best.line.text.strip(),
        best.line.page,
        min(level, 2),
        addendum=best.line.addendum,
        unsure=unsure(name, best.raw or best.value),
    )


def _ish_result(value: str) -> str:
    """An ISH row's result: amplified or not, also when stated as the test's positive or
    negative ("Positive (Group 1)", "Negative for amplification")."""
    _, ish, stated = her2_parts(value)
    if ish:
        return ish
    return {"positive": "amplified", "negative": "not amplified"}.get(stated, "")


def _her2_reading(cands: list[_Candidate]) -> Reading | None:
    ihc = [c for c in cands if c.key == "her2_ihc"]
    ish = [c for c in cands if c.key == "her2_ish"]
    final = [c for c in cands if c.key == "her2_final"]
    best_final, _ = _pick(final, "her2_status")
    if best_final is not None:
        r = _reading("her2_status", final, "her2_status")
        if r is not None:
            return r
    ihc_best, ihc_others = _pick(ihc, "her2_status")
    ish_usable = [c for c in ish if c.value and _ish_result(c.value)]
    ish_best = None
    if ish_usable:
        addenda = [c for c in ish_usable if c.line.addendum]
        ish_best = min(addenda or ish_usable, key=lambda c: (c.level, c.line.page, c.line.start))
    if ihc_best is None and ish_best is None:
        withheld = next((c for c in ihc + ish if c.withheld), None)
        if withheld is None:
            return None
        return Reading(
            "her2_status",
            None,
            None,
            withheld.line.text.strip(),
            withheld.line.page,
            0,
            withheld.withheld,
        )
    score, own_ish, stated = her2_parts(ihc_best.value) if ihc_best else (None, "", "")
    # An ISH row decides; else a result the IHC value states of its own ("Equivocal (2+),
    # reflexed to FISH: not amplified").
    ish_result = _ish_result(ish_best.value) if ish_best else own_ish
    if ish_best is not None and ihc_best is None:
        stated = ""
    value = her2_combine(score, ish_result, stated)
    if value is None:
        return None
    anchor = ish_best if (ish_best and (ish_best.line.addendum or score in (None, 2))) else ihc_best
    assert anchor is not None
    parts = []
    if score is not None:
        parts.append(f"IHC {score}+" if score else "IHC 0")
    if ish_result:
        parts.append(f"ISH {ish_result}")
    level = max(anchor.level, 1 if (ihc_best and ish_best) else 0) + (1 if ihc_others else 0)
    if (
        ihc_best is not None
        and ish_best is None
        and score == 2
        and any(c.line.addendum for c in cands if c.withheld)
    ):
        level = 2
    return Reading(
        "her2_status",
        _verbatim(anchor.line, anchor.value)
        if anchor.level
        else (anchor.raw or anchor.value.strip()),
        f"{value} ({', '.join(parts)})" if parts else value,
        anchor.line.text.strip(),
        anchor.line.page,
        min(level, 2),
        addendum=anchor.line.addendum,
    )


def is_breast_report(pages: list[str]) -> bool:
    """The report is about the breast (the reader and the meaning checks apply to it)."""
    return _is_breast(tuple(pages))


@lru_cache(maxsize=32)
def _is_breast(pages: tuple[str, ...]) -> bool:
    text = fold("\n".join(pages))
    squashed = squash(text)
    return bool(
        "breast" in squashed
        or "mammary" in squashed
        or "estrogenreceptor" in squashed
        or re.search(r"\ber\b\s*[:(]", text)
        # A letter or comment that names no organ: two of the breast's markers (ER, PR, HER2).
        or _markers_named("\n".join(pages), squashed) >= 2
        # ... or a name only the breast's tumours and grades have.
        or bool(re.search(r"\b(?:idc|ilc)\b|nottingham|elston|bloom-richardson", text))
        or "lobularcarclnoma" in squashed
        or ("lobular" in squashed and _carcinoma(text))
    )


def _markers_named(page: str, squashed: str) -> int:
    """How many of ER, PR and HER2 the text names (the short names only in capitals)."""
    hormone = "hormonereceptor" in squashed  # (ER and PR by their common name)
    er = hormone or "estrogen" in squashed or bool(re.search(r"\bE\.?R\b", page))
    pr = hormone or "progest" in squashed or bool(re.search(r"\bP\.?g?R\b", page))
    her2 = "her2" in squashed or "erbb2" in squashed
    return er + pr + her2


_SIZE = re.compile(
    r"(?:size|dimension|diameter|extent)[^\n]{0,40}?(?<![\d.])(\d+(?:\.\d+)?)\s*(mm|cm)\b",
    re.IGNORECASE,
)


def _index_tumour(lines: list[_Line]) -> int:
    """Of a report of several tumours, the section of the largest (the index tumour whose
    values the report's fields carry, as CAP and AJCC stage it); 0 when there is one."""
    sizes: dict[int, float] = {}
    for line in lines:
        if line.tumour and line.tumour not in sizes:
            m = _SIZE.search(line.text)
            if m:
                sizes[line.tumour] = float(m.group(1)) * (10 if m.group(2).lower() == "cm" else 1)
    if len(sizes) < 2:
        return 0
    return max(sizes, key=lambda n: sizes[n])


_COMPONENTS = ("grade_tubules", "grade_nuclei", "grade_mitoses")


def _component_grade(cands: list[_Candidate]) -> list[_Candidate]:
    """A grade put together from Nottingham's three component scores (each 1-3) on rows of
    their own, or from a total score's row, where the report states no overall grade."""
    scores: dict[str, tuple[int, _Candidate]] = {}
    for c in cands:
        m = re.search(r"(?<![\d.])([123])(?![\d.])", fold(c.value))
        if c.key in _COMPONENTS and m and c.key not in scores:
            scores[c.key] = (int(m.group(1)), c)
    total = next(
        (c for c in cands if c.key == "grade_score" and re.search(r"\b[3-9]\b", c.value)), None
    )
    if len(scores) == 3:
        anchor = max((c for _, c in scores.values()), key=lambda c: c.line.start)
        value = f"Nottingham score {sum(n for n, _ in scores.values())}"
        return [_Candidate("grade", value, anchor.line, 1)]
    if total is not None:
        m = re.search(r"\b([3-9])\b", total.value)
        assert m is not None
        return [_Candidate("grade", f"Nottingham score {m.group(1)}", total.line, 1)]
    return []


@lru_cache(maxsize=32)
def _read(pages: tuple[str, ...]) -> dict[str, Reading]:
    lines = _logical_lines(list(pages))
    cands = _candidates(lines)
    index = _index_tumour(lines)
    if index:
        # The other tumours' values are theirs; the margins are the specimen's.
        cands = [c for c in cands if c.line.tumour in (0, index) or c.key == "margins"]
    cands += _component_grade(cands)
    out: dict[str, Reading] = {}
    for name, key in (
        ("er_status", "er"),
        ("pr_status", "pr"),
        ("histology", "histology"),
        ("grade", "grade"),
        ("margins", "margins"),
    ):
        chosen = [c for c in cands if c.key == key]
        if name == "histology" and not chosen:
            continue
        r = _reading(name, chosen, name)
        if r is not None:
            out[name] = r
    her2 = _her2_reading([c for c in cands if c.key.startswith("her2")])
    if her2 is not None:
        out["her2_status"] = her2
    for reading in out.values():
        page = pages[reading.page - 1]
        if reading.value:
            reading.value = _quotable(page, reading.value)
        reading.snippet = _quotable(page, reading.snippet)
    return out


def _quotable(page: str, value: str) -> str:
    """``value`` as the page can quote it: a value put together from lines that the page
    does not hold side by side (a two-column page read across, the rest of a value wrapped
    below the other column's text) is cut to its longest start that stands on the page (its
    meaning is read from the whole; the cut quote does not vouch for it)."""
    words = value.split()

    def on_page(n: int) -> bool:
        pattern = r"\s+".join(re.escape(w) for w in words[:n])
        return bool(re.search(pattern, page))

    if not words or on_page(len(words)):
        return value
    n = len(words) - 1
    while n > 0 and not on_page(n):
        n -= 1
    return " ".join(words[:n]) if n else value


def doubt(name: str, pages: list[str], value: str | None) -> str:
    """Why a breast report's grade or margin value may not be read right ("" when nothing
    speaks against it): the value's own words, or those of the page's statement of the same
    meaning (a tight value "Grade 2" of "Grade 2 (total score 8)")."""
    if name not in ("grade", "margins") or not value or not is_breast_report(pages):
        return ""
    why = unsure(name, value)
    if why:
        return why
    reading = read(pages).get(name)
    meaning = canonical(name, value)
    if reading is None or not reading.canonical or meaning is None:
        return ""
    return reading.unsure if same(name, reading.canonical, meaning) else ""


def read(pages: list[str]) -> dict[str, Reading]:
    """Each field the report gives a current value for (or withholds one for, with the
    reason), read from its structure; empty for a report that is not a breast report."""
    if not is_breast_report(pages):
        return {}
    return _read(tuple(pages))
