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
    text = re.sub(r"(?<=\d)[lI]|(?<![A-Za-z])[lI](?=\d|\s?\+)", "1", text)
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
    """``text`` with its check-box glyphs, and boxes printed as parentheses ("(X)", "( )"),
    as bracketed boxes ("[X]", "[ ]")."""
    return re.sub(r"\(\s*([xX\u2713])\s*\)|\(\s\s?\)", _paren_box, text.translate(_BOX_GLYPHS))


def _paren_box(m: re.Match[str]) -> str:
    return "[X]" if m.group(1) else "[ ]"


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


def receptor_canonical(text: str) -> str | None:
    f = fold(text)
    pct_match = re.search(r"(?<![\d.])(\d(?:\s?\d){0,2})\s*%", f)
    percent = int(pct_match.group(1).replace(" ", "")) if pct_match else None
    if percent is not None and percent > 100:
        percent = None
    intensity = next(
        (w for w in ("strong", "moderate", "intermediate", "weak") if _has_word(f, w)), ""
    )
    intensity = "moderate" if intensity == "intermediate" else intensity
    less_than = bool(re.search(r"<\s*1\s*%", f))
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
        ish = ""
    if _has_word(f, "equivocal") or _has_word(f, "indeterminate"):
        stated = "equivocal"
    elif _has_word(f, "negative"):
        stated = "negative"
    elif _has_word(f, "positive"):
        stated = "positive"
    else:
        stated = ""
    return ihc, ish, stated


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


def _expand_ca(text: str) -> str:
    text = _CA.sub(lambda m: f"{m[1]} carcinoma", text)
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
    r"notlnvolved|unlnvolved|negatlve|free|clear(?!ance)|close(?!st)"
    r"|no(?:lnvaslve)?(?:carclnoma|tumou?r)(?:at|on|ln)|nolnkontumou?r"
)
_MARGIN_INVOLVED = re.compile(
    r"lnvolved|lnvolves|lnvolvlng|posltlve|presentat|at(?:the)?lnk|transected|extendsto"
    r"|lnkontumou?r"
)


def margins_canonical(text: str) -> str | None:
    f = re.sub(r"\s+", " ", fold(boxes(text)))
    f = re.sub(r"(?<![a-z0-9.])[li](?= ?mm\b)", "1", f)  # OCR's "l mm"
    f = re.sub(r"(?<=\d)(\s?)(?:mrn|rnm|rnrn)\b", r"\1mm", f)  # OCR's "3 mrn", "3 rnm"
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
            return None
        if distance == 0:
            return "involved"
    if mm:
        return f"not involved ({float(mm.group(1)):g} mm)"
    if cm:
        return f"not involved ({float(cm.group(1)) * 10:g} mm)"
    return "not involved"


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
    dash of its own, "Hormone receptor - ER: Positive")."""
    text = _as_row(text)
    kv = _KEY_VALUE.match(text)
    key = _key_field(kv.group("k")) if kv else None
    if key is None:
        by_colon = _KEY_COLON.match(text)
        if by_colon and _key_field(by_colon.group("k")) is not None:
            return by_colon, _key_field(by_colon.group("k"))
    return kv, key


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
    m = _KEY_VALUE.match(_as_row(raw))
    if not m or not m.group("v").strip():
        return False
    key = m.group("k")
    if _key_field(key) not in (None, "diagnosis"):
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
            if _KEY_AT_START.match(line[at:])
            and not re.match(r"[^:]*\[", boxes(line[at:]))
            and not re.search(r"\[\s*[xX\u2713]?\s*\]", boxes(line[:at]))
        ]
        support = {at: sum(any(abs(g - at) <= 2 for g in ats) for ats in gaps) for at in keyed}
        col = max(support, key=lambda k: (support[k], -k)) if support else 0
        # The right column's cells are rows of their own ("ER: Positive", or a key OCR
        # wrapped, "ER"); where few are, the gap sets each row's value off its key ("Size
        # 35 mm" / "Grade     G2"), and there is one column.
        cells = [
            line[at:]
            for line, ats in zip(block, gaps, strict=True)
            for at in ats
            if abs(at - col) <= 2
        ]
        rows = sum(
            1
            for c in cells
            if (_KEY_AT_START.match(c) and not re.match(r"[^:]*\[", boxes(c)))
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
            if at is None and right and ":" not in right[-1] and not line[:1].isspace():
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


def _logical_lines(pages: list[str]) -> list[_Line]:
    lines: list[_Line] = []
    block = 0
    for number, text in enumerate(pages, start=1):
        history = addendum = node = False
        tumour = 0
        offset = 0
        previous: _Line | None = None
        raw_lines = text.split("\n")
        if re.search(r"\S\s{3,}[A-Za-z][^:\n]{0,60}:", text):
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
                and (raw.strip()[:1].islower() or raw.strip()[:1].isdigit())
                and _KEY_COLON.match(previous.text)
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
            ):
                previous.join(raw, end)
                continue
            line = _Line(raw, number, start, end, block, history, addendum, node, bare_key, tumour)
            lines.append(line)
            previous = line
    return lines


# Keys: each field's key, as squashed text (see ``squash``).
def _key_field(key: str) -> str | None:
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
    if has("margin", "clearance"):
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
    if has("type", "histolog", "morpholog", "classification") and not has(
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
    if not re.search(r"\[\s*[xX\u2713 ]?\s*\]", value):
        return None
    if re.match(r"\s*\[", value):
        picked = re.findall(r"\[\s*[xX\u2713]\s*\]\s*([^\[\n]*?)(?=\s*\[|\s{2,}|$)", value)
    else:
        # Each box after its option ("Pos [x]   Low [ ]"): the option is the text before it.
        parts = re.split(r"(\[\s*[xX\u2713 ]?\s*\])", value)
        picked = [
            parts[i - 1].strip()
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
        ("%", r"%\s*:\s*(\d{1,3})\b"),
        ("", r"intensity\s*:\s*(weak|moderate|strong)"),
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


def _value_of(key: str, value: str) -> tuple[str, str]:
    """(value to read, why withheld) for a labelled value."""
    if _EMPTY.match(value):
        return "", "empty"
    boxes = _checked(value)
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


def _candidates(lines: list[_Line]) -> list[_Candidate]:
    found: list[_Candidate] = []
    for line in lines:
        if line.history or line.node:
            continue
        text = line.text
        if _PREVIOUS.search(fold(text)):
            continue
        kv, key = _key_value(text)
        if kv and key and histology_canonical(kv.group("k")) is not None:
            # A "key" that names a tumour type is a diagnosis sentence cut at a separator
            # ("Mucinous carcinoma, pure type, NHG score 5 = grade 1"): read as a sentence.
            kv, key = None, None
        if kv and key and key != "diagnosis":
            given, rest = kv.group("v"), ""
            stop = re.search(r"\.\s+(?=[A-Z])", given)
            if stop and _MARKER_IN_TEXT.search(fold(given[stop.end() :])):
                # "PgR: low positive, 1%, weak. HER2 is 3+, ...": the next sentence names
                # another marker; it is read as a sentence.
                given, rest = given[: stop.start()], given[stop.end() :]
            value, why = _value_of(key, given)
            level = 0
            if re.search(r"\s\|\s|\t|\s{3,}", text) and not re.search(r":", text):
                level = 0  # a table row
            found.append(_Candidate(key, value, line, level, why, given.strip()))
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
                        if re.search(r"flsh|slsh|lnsltu|ampllf", squash(segment))
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
        if re.search(
            r"grade|differentiated|nottingham|\bnhg|elston|bloom|\bg[123]\b", f
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
