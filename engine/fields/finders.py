"""Where each kind of clinical value is written, and how to read it. Pure: no Django.

Templates name a finder for a field (``"finder": "grade"``); a finder returns every place it
reads the field at one search level, each with its value, the verbatim lines it came from and
a rank (lower is better). Levels, tried in order:
  0. labels and sections: the value after its label ("Nottingham grade 2", "ER: positive
     (95%)"), or the text of the section under a header ("FINDINGS:", "FINAL DIAGNOSIS");
  1. forms and phrases: a label line with its value on the next line (scanned forms), and
     sentences that name the field ("surgical margins are free of tumor", "positive for
     estrogen receptor", "examination performed on 9/1/05");
  2. the value's own pattern in the report's text ("high grade urothelial carcinoma",
     "poorly differentiated", "MSI-H", "19 mutations/Mb").
Every value is taken from the page; its snippet is the page's own text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.fields.labelled import find_labelled
from engine.fields.sections import Line, Outline, Section, label_match, norm, words
from engine.fields.templates import FieldSpec
from engine.fields.text import DATE, clean, first_date, sentence, snippet, valid_date

MAX_LEVEL = 2
LEVEL2_CANDIDATES = 5  # values read by their own pattern: the first few, in reading order
RESULT_LINE = 100  # a short line of its own: a result row ("MSI-High", "TMB-Low")
PROSE_LINE = 400  # a longer "line" is a paragraph (flattened XML): interpretation, not a result


@dataclass(frozen=True)
class Hit:
    value: Any
    snippet: str
    page: int
    rank: int = 0
    offset: int = 0


Finder = Callable[[FieldSpec, Outline, int], list[Hit]]

# Sections whose text is history or a request, not the report's own result.
HISTORY_SECTIONS = re.compile(
    r"\b(?:history|hx|course|indication|indications|reason|clinical|complaint|hpi|comparison"
    r"|instructions|references?|rationale|interpretation)\b"
)
_SEPARATOR = re.compile(r"^[ \t]*(?:\([^)\n]{0,40}\)[ \t]*)?(?::|=|[ \t]-[ \t]|\u2013|\u2014)")
_FLAG_LINE = re.compile(r"^\s*\w+:\s*(?:true|false|yes|no)\s*$", re.IGNORECASE)  # "Include: true"
_KEY_PREFIX = re.compile(r"^\s*[A-Za-z][\w ]{0,20}:\s*")  # "Name: ", "Gene: " (flattened XML)


@lru_cache(maxsize=256)
def _compiled(cue: str) -> re.Pattern[str]:
    return re.compile(cue, re.IGNORECASE | re.MULTILINE)


def _flags(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _label_re(labels: list[str]) -> re.Pattern[str]:
    alternation = "|".join(
        re.escape(label).replace(r"\ ", r"\s+") for label in sorted(labels, key=len, reverse=True)
    )
    return re.compile(rf"(?<![\w-])(?:{alternation})(?![\w-])", re.IGNORECASE)


def _in_history(outline: Outline, page: int, offset: int) -> bool:
    section = outline.section_of(page, offset)
    return section is not None and bool(HISTORY_SECTIONS.search(section.header.key))


def _cut(value: str, limit: int) -> str:
    value = clean(value)
    if len(value) <= limit:
        return value
    cut = value[:limit]
    return cut[: cut.rfind(" ")] if " " in cut else cut


# -- labelled text: sections under headers, "Label: value", label lines ----------------------------


def _label_rank(spec: FieldSpec, key: str) -> tuple[int, int] | None:
    """(label index, match kind) of the best label naming this header, or None."""
    best = None
    for index, label in enumerate(spec.labels):
        kind = label_match(key, label)
        if kind is not None and (best is None or (kind, index) < (best[1], best[0])):
            best = (index, kind)
    return best


def _section_rank(index: int, kind: int) -> int:
    """A header that is exactly a label beats one that only starts or ends with a better one
    ("IMPRESSION:" over "Assessment for vestibular function follows:")."""
    return kind * 100 + index


def _section_value(spec: FieldSpec, section: Section, pick: Callable[[str], str] | None) -> str:
    body = section.text
    if pick is not None:
        return _cut(pick(body), spec.max_chars)
    if spec.extent == "line":
        first = next((line for line in body.split("\n") if clean(line)), "")
        return _cut(first, spec.max_chars)
    if spec.extent == "sentence":
        a, b = sentence(body, 0, 1)
        return _cut(body[a:b], spec.max_chars)
    return _cut(body, spec.max_chars)


def labelled(
    spec: FieldSpec,
    outline: Outline,
    level: int,
    *,
    pick: Callable[[str], str] | None = None,
    accept: Callable[[str], bool] | None = None,
) -> list[Hit]:
    """Text after a field's label: level 0 reads the sections its labels head and "Label:
    value" on a line; level 1 a label on a line of its own with the value on the next line,
    and sections whose header only contains a label ("Right side margin (separately):")."""
    hits: list[Hit] = []
    used: set[Line] = set()
    for section in outline.sections:
        rank = _label_rank(spec, section.header.key)
        if rank is None or not section.text:
            continue
        index, kind = rank
        if (kind < 3) != (level == 0):
            continue
        value = _section_value(spec, section, pick)
        if value and (accept is None or accept(value)):
            header = section.header
            text = outline.page_text(header.line.page)
            end = section.body_end
            hits.append(
                Hit(
                    value,
                    text[header.line.start : end].strip(),
                    header.line.page,
                    _section_rank(index, kind),
                    header.line.start,
                )
            )
        used.add(section.header.line)
    labels = _label_re(spec.labels)
    for page_lines in outline.lines:
        for line in page_lines:
            if line in used:
                continue
            for match in labels.finditer(line.text):
                tail = line.text[match.end() :]
                index = _label_index(spec, match.group(0))
                if level == 0:
                    separator = _SEPARATOR.match(tail)
                    if separator is None:
                        continue
                    value = _cut(tail[separator.end() :], spec.max_chars)
                    if spec.extent == "sentence" and value:
                        a, b = sentence(value, 0, 1)
                        value = _cut(value[a:b], spec.max_chars)
                    if value and (accept is None or accept(value)):
                        hits.append(
                            Hit(value, line.text.strip(), line.page, 1000 + index, line.start)
                        )
                    break
                if level == 1 and not clean(tail) and _label_alone(line.text, match):
                    # The value is on the next line; a flag line a form puts between them
                    # ("Include: true") is skipped.
                    following = outline.next_lines(line, 2)
                    if following and _FLAG_LINE.match(following[0].text):
                        following = following[1:]
                    for value_line in following[:1]:
                        if outline.is_header_line(value_line):
                            break
                        value = _cut(_KEY_PREFIX.sub("", value_line.text, count=1), spec.max_chars)
                        if value and (accept is None or accept(value)):
                            text = outline.page_text(line.page)
                            hits.append(
                                Hit(
                                    value,
                                    text[line.start : value_line.end].strip(),
                                    line.page,
                                    1000 + index,
                                    line.start,
                                )
                            )
    return hits


def _label_index(spec: FieldSpec, found: str) -> int:
    key = norm(found)
    return next((i for i, label in enumerate(spec.labels) if norm(label) == key), len(spec.labels))


def _label_alone(text: str, match: re.Match[str]) -> bool:
    """The label is the line's whole content, apart from a "Key:" prefix (flattened XML)."""
    before = text[: match.start()]
    return not clean(before) or bool(re.fullmatch(r"\s*[A-Za-z][\w ]{0,20}:\s*", before))


def text_finder(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    return labelled(spec, outline, level)


# -- histology -------------------------------------------------------------------------------------

TUMOUR = (
    r"\w*(?:carcinoma|sarcoma|melanoma|lymphoma|leuka?emia|mesothelioma|glioma|blastoma"
    r"|seminoma|myeloma|adenoma|thymoma|carcinoid|meningioma|schwannoma|cytoma|germinoma"
    r"|neoplasia|neoplasm|dysplasia|metaplasia|hyperplasia|itis|osis|cyst|ovary)s?"
)
_TUMOUR = re.compile(rf"\b{TUMOUR}\b", re.IGNORECASE)
_MALIGNANT = re.compile(
    r"\b\w*(?:carcinoma|sarcoma|melanoma|lymphoma|leuka?emia|mesothelioma|glioma|blastoma"
    r"|seminoma|myeloma|thymoma|carcinoid|cytoma|germinoma)s?\b",
    re.IGNORECASE,
)
_NEGATED = re.compile(
    r"\b(?:no|without|negative\s+for|free\s+of|absence\s+of|absent|rule\s+out|r/o|history\s+of"
    r"|suspicious\s+for|probable|possible)\b[^.;\n]{0,40}$",
    re.IGNORECASE,
)


def _affirmed_tumour(line: str) -> re.Match[str] | None:
    """The first tumour the line names that no negation before it denies ("negative for
    metastatic carcinoma" names none)."""
    for match in _TUMOUR.finditer(line):
        if not _NEGATED.search(line[: match.start()]):
            return match
    return None


def _diagnostic_line(body: str) -> str:
    lines = [line for line in body.split("\n") if clean(line)]
    chosen = next(
        (line for line in lines if _affirmed_tumour(line)),
        next((line for line in lines if _TUMOUR.search(line)), lines[0] if lines else ""),
    )
    match = _affirmed_tumour(chosen) or _TUMOUR.search(chosen)
    if match:
        a, b = sentence(chosen, match.start(), match.end())
        start = 0 if len(clean(chosen[:a])) < 60 else a  # keep "Site, procedure:" leads
        return chosen[start:b]
    return chosen


_DIAGNOSTIC_WORDS = re.compile(
    r"benign|malignan|negative|normal|no\s+evidence|tissue|lesion|inflammation|granulom|nodule"
    r"|mass|polyp|cells?\b",
    re.IGNORECASE,
)


def _diagnostic(value: str) -> bool:
    return bool(_TUMOUR.search(value) or _DIAGNOSTIC_WORDS.search(value))


def histology(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    # A label line on a form must be followed by a diagnosis, not by the form's next label;
    # "Diagnosis: Kidney, left, nephrectomy:" names the specimen, the diagnosis follows.
    hits = labelled(spec, outline, level, pick=_diagnostic_line, accept=_diagnostic)
    if level < 2:
        return hits
    # The first malignancy named in natural order ("high grade urothelial carcinoma"), outside
    # history sections; inverted ICD-O stamps ("Carcinoma, urothelial NOS") are not sentences.
    for page_lines in outline.lines:
        for line in page_lines:
            for match in _MALIGNANT.finditer(line.text):
                page = line.page
                text = outline.page_text(page)
                offset = line.start + match.start()
                a, b = sentence(text, offset, line.start + match.end())
                lead = text[a:offset]
                if not re.search(r"[A-Za-z]{3,}", lead) or _NEGATED.search(lead):
                    continue
                if _in_history(outline, page, offset):
                    continue
                value = _cut(text[a:b], spec.max_chars)
                hits.append(Hit(value, snippet(outline, page, a, b), page, 0, offset))
                # Every candidate in reading order, a few at most: the first that its text
                # supports is taken (a history line may name the tumour first).
                if len(hits) >= LEVEL2_CANDIDATES:
                    return hits
    return hits


# -- grade -----------------------------------------------------------------------------------------

_GRADE_VALUE = (
    r"(?:G\s?[1-4X]\b"
    r"|(?:[1-4]|I{1,3}|IV)\b(?:\s*(?:/|of|out\s+of)\s*(?:[34]|III|IV)\b)?"
    r"|(?:(?:well|moderately|poorly)(?:\s*(?:to|-|and|/)\s*(?:well|moderately|poorly))?"
    r"|un)[\s-]*differentiated\b"
    r"|(?:low|intermediate|high)\b(?![\s-]*grade))"
)
_GRADE_SYSTEM = (
    r"(?:nottingham|(?:modified\s+)?(?:scarff[\s-]+)?bloom[\s-]+richardson|sbr|elston"
    r"(?:[\s-]+ellis)?|combined|overall|histologic(?:al)?|tumou?r|fnclcc|fuhrman|isup|who"
    r"|figo)"
)
_GRADE_LABELLED = _flags(
    rf"(?:{_GRADE_SYSTEM}(?:\s+(?:histologic(?:al)?|combined|tumou?r|nuclear))?\s+)?grade\b"
    r"(?:\s*\([^)\n]{0,40}\))?(?:\s+(?:is|of))?\s*[:=\-]?\s*"
    rf"(?P<v>{_GRADE_VALUE})"
)
_GRADE_EXCLUDED_BEFORE = _flags(r"(?:nuclear|gleason|nucleolar)\s*$")
_GRADE_PHRASE = _flags(
    r"\b(?:(?:well|moderately|poorly)(?:\s*(?:to|-|and|/)\s*(?:well|moderately|poorly))?"
    r"|un)[\s-]*differentiated\b|\b(?:low|high)[\s-]grade\b"
    r"|(?<=[0-9a-dxX])(?-i:G[1-4])\b"
)
_GRADE_NOT_TUMOUR = _flags(
    r"^[\s-]*(?:dysplasia|squamous|intraepithelial|pin\b|prostatic\s+intraepithelial|fever)"
)


def grade(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    hits: list[Hit] = []
    if level == 0:
        for page_lines in outline.lines:
            for line in page_lines:
                for match in _GRADE_LABELLED.finditer(line.text):
                    if _GRADE_EXCLUDED_BEFORE.search(line.text[: match.start()]):
                        continue
                    value = clean(line.text[match.start() : match.end("v")])
                    hits.append(Hit(value, line.text.strip(), line.page, 0, line.start))
        return hits
    if level == 1:
        return labelled(
            spec,
            outline,
            1,
            accept=lambda v: bool(re.match(_GRADE_VALUE, v, re.IGNORECASE)),
            pick=lambda body: body.split("\n")[0],
        )
    for page_lines in outline.lines:
        for line in page_lines:
            for match in _GRADE_PHRASE.finditer(line.text):
                if _GRADE_NOT_TUMOUR.search(line.text[match.end() :]):
                    continue
                page = line.page
                offset = line.start + match.start()
                if _in_history(outline, page, offset):
                    continue
                text = outline.page_text(page)
                a, b = sentence(text, offset, offset + len(match.group(0)))
                if not _TUMOUR.search(text[a:b]) and not match.group(0).startswith("G"):
                    continue
                hits.append(Hit(match.group(0), line.text.strip(), page, 0, offset))
                if len(hits) >= LEVEL2_CANDIDATES:
                    return hits
    return hits


# -- margins ---------------------------------------------------------------------------------------

_MARGIN = _flags(r"\bmargins?\b")
_MARGIN_STATUS = _flags(
    r"\b(?:free|negative|positive|clear|uninvolved|involved|not\s+involved|close|compromised"
    r"|absent|tumou?r[\s-]free|widely\s+clear|(?:un)?remarkable|cannot\s+be\s+assessed)\b"
)
_MARGIN_WEAK = _flags(
    r"\binvolvement\b|\bextends?\s+to\b|\bat\s+the\s+margin"
    r"|\d+(?:\.\d+)?\s*(?:mm|cm)\s+(?:away\s+)?(?:from|to)\s+(?:the\s+)?(?:\w+\s+){0,3}margin"
)


def margins(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    if level == 0:
        return labelled(spec, outline, 0, pick=_first_sentence)
    if level > 1:
        return []
    hits = labelled(spec, outline, 1, pick=_first_sentence)
    hits = [Hit(h.value, h.snippet, h.page, 2, h.offset) for h in hits]
    for page_lines in outline.lines:
        for line in page_lines:
            for match in _MARGIN.finditer(line.text):
                page = line.page
                text = outline.page_text(page)
                offset = line.start + match.start()
                a, b = sentence(text, offset, line.start + match.end())
                near = text[max(a, offset - 40) : min(b, offset + 90)]
                if _MARGIN_STATUS.search(near):
                    rank = 0
                elif _MARGIN_WEAK.search(near):
                    rank = 1
                else:
                    continue
                value = _cut(text[a:b], spec.max_chars)
                hits.append(Hit(value, snippet(outline, page, a, b), page, rank, offset))
    return hits


def _first_sentence(body: str) -> str:
    a, b = sentence(body, 0, 1)
    return body[a:b]


# -- receptors, HER2, Ki-67 ------------------------------------------------------------------------

_STATUS_VALUE = (
    r"(?:(?:(?:strongly|weakly|moderately|focally|diffusely|strong|weak|moderate|intermediate)"
    r"[\s,]+)*(?:positive|negative|pos\b|neg\b)"
    r"|[<>\u2264\u2265]?\s*\d{1,3}(?:\.\d+)?\s*%|allred(?:\s+score)?\s*[:=]?\s*\d"
    r"|h-?score\s*[:=]?\s*\d)"
)
_RECEPTOR_NAMES = {
    "er": r"(?:o?estrogen\s+receptors?(?:\s*\((?-i:ER)\))?|(?-i:ER)(?:\s*alpha)?)",
    "pr": r"(?:progesterone\s+receptors?(?:\s*\((?-i:PR|PgR)\))?|(?-i:PR|PgR))",
}
_MARKER_STOP = _flags(
    r"[,;.]?\s*\b(?:(?-i:ER|PR|PgR)\b|o?estrogen|progesterone|her-?2|ki-?67|erbb2|mib-?1"
    r"|androgen|(?-i:AR)\b)"
)
_QUALIFIERS = (
    r"(?:\s*\((?:clone\s*)?[^)\n]{0,40}\))?"
    r"(?:\s+(?:status|expression|receptor|protein|oncoprotein|score|result|by\s+ihc|by\s+fish"
    r"|ihc|fish|immunohistochemistry|immunostain|\(ihc\)))*"
)


def _marker_value(tail: str) -> str:
    """The status phrase at the start of ``tail``, up to the next marker or sentence end."""
    stop = _MARKER_STOP.search(tail)
    if stop:
        tail = tail[: stop.start()]
    end = re.search(r"(?<=[a-z%)\]])\.(?:\s|$)|;|\n", tail)
    if end:
        tail = tail[: end.start()]
    value = re.sub(r"(?:\s+(?:and|or|with))+$", "", clean(tail[:90]), flags=re.IGNORECASE)
    if value.count("(") > value.count(")"):  # "Amplified (HER2/CEP17 ...": cut at the marker
        value = clean(value[: value.rfind("(")])
    return value


def _marker_hits(outline: Outline, name: str, value: str, level: int, spec: FieldSpec) -> list[Hit]:
    hits: list[Hit] = []
    if level == 0:
        pattern = _flags(
            rf"(?<![\w-]){name}(?![\w-]){_QUALIFIERS}\s*(?:[:=]|\s-\s|\s(?:is|was|are))?\s*"
            rf"(?P<v>{value})"
        )
        for page_lines in outline.lines:
            for line in page_lines:
                for match in pattern.finditer(line.text):
                    found = _marker_value(line.text[match.start("v") :])
                    if found:
                        hits.append(Hit(found, line.text.strip(), line.page, 0, line.start))
        return hits
    if level == 1:
        reverse = _flags(
            rf"(?P<v>(?:(?:strongly|weakly|focally|diffusely)\s+)?(?:positive|negative))\s+for"
            rf"\s+(?:the\s+)?{name}(?![\w-])"
        )
        for page_lines in outline.lines:
            for line in page_lines:
                for match in reverse.finditer(line.text):
                    hits.append(Hit(match.group("v"), line.text.strip(), line.page, 0, line.start))
        table = re.compile(rf"^\s*{name}{_QUALIFIERS}\s*:?\s*$", re.IGNORECASE)
        status = _flags(rf"^\s*(?:[A-Za-z][\w ]{{0,20}}:\s*)?(?P<v>{value})")
        for page_lines in outline.lines:
            for line in page_lines:
                if not table.match(line.text):
                    continue
                following = outline.next_lines(line, 1)
                if following and (on_next := status.match(following[0].text)):
                    found = _marker_value(following[0].text[on_next.start("v") :])
                    text = outline.page_text(line.page)
                    hits.append(
                        Hit(
                            found,
                            text[line.start : following[0].end].strip(),
                            line.page,
                            1,
                            line.start,
                        )
                    )
    return hits


def _receptor(which: str) -> Finder:
    name = _RECEPTOR_NAMES[which]
    both = _flags(
        r"(?:o?estrogen\s+and\s+progesterone\s+receptors?|(?-i:ER)\s*(?:/|and|&|,)\s*(?-i:PR|PgR))"
        r"(?:\s*\([^)\n]{0,30}\))?\s*(?:[:=]|are|were)?\s*(?:both\s+)?"
        r"(?P<a>positive|negative)(?:\s*/\s*(?P<b>positive|negative))?"
    )

    both_reverse = _flags(
        r"(?P<v>(?:(?:strongly|weakly|focally|diffusely)\s+)?(?:positive|negative))\s+for\s+"
        r"(?:both\s+)?(?:o?estrogen|(?-i:ER))(?:\s+receptors?)?\s*(?:and|,|/|&)\s*"
        r"(?:progesterone|(?-i:PR|PgR))(?:\s+receptors?)?"
    )

    def find(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
        hits = _marker_hits(outline, name, _STATUS_VALUE, level, spec)
        if level == 1:
            for page_lines in outline.lines:
                for line in page_lines:
                    for match in both_reverse.finditer(line.text):
                        hits.append(
                            Hit(match.group("v"), line.text.strip(), line.page, 0, line.start)
                        )
                    for match in both.finditer(line.text):
                        value = (
                            match.group("a")
                            if which == "er"
                            else (match.group("b") or match.group("a"))
                        )
                        hits.append(Hit(value, line.text.strip(), line.page, 0, line.start))
        if level == 2:
            short = re.compile(
                r"(?<![\w-])" + ("ER" if which == "er" else "(?:PR|PgR)") + r"\s*\(?([+-])\)?"
                r"(?=[\s,/;)]|$)"
            )
            for page_lines in outline.lines:
                for line in page_lines:
                    for match in short.finditer(line.text):
                        hits.append(
                            Hit(clean(match.group(0)), line.text.strip(), line.page, 0, line.start)
                        )
        return hits

    return find


_HER2_NAME = r"(?:HER[-\s]?2(?:\s*/\s*neu|\s*-?\s*neu)?|c-?erb-?B-?2|ERBB2|HercepTest)"
_HER2_VALUE = (
    r"(?:(?:ihc\s+)?score\s*(?:of\s*)?[:=]?\s*[0-3]\s*\+?|[0-3]\s*\+"
    r"|[0-3](?=\s*(?:\(|,|;|$|negative|positive|equivocal))"
    r"|(?:positive|negative|equivocal|indeterminate|(?:not\s+|non-?\s*)?amplified)\b"
    r"|(?:ratio|her2/cep17\s+ratio)\s*(?:of\s*)?[:=]?\s*\d)"
)


def her2(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    return _marker_hits(outline, _HER2_NAME, _HER2_VALUE, level, spec)


_KI67 = _flags(
    r"\b(?:Ki[-\s]?67|MIB-?1)\b(?:\s*\([^)\n]{0,20}\))?"
    r"(?:\s+(?:proliferation|proliferative|labell?ing|staining|immunostain))?"
    r"(?:\s+(?:index|rate|fraction|score))?(?:\s+(?:is|of|was))?\s*[:=\-]?\s*"
    r"(?:(?:approximately|about|~)\s*)?"
    r"(?P<v>[<>]?\s*\d{1,3}(?:\.\d+)?\s*(?:%\s*)?(?:-|to)\s*\d{1,3}(?:\.\d+)?\s*%"
    r"|[<>]?\s*\d{1,3}(?:\.\d+)?\s*%)"
)


def ki67(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    if level > 0:
        return []
    return [
        Hit(clean(match.group("v")), line.text.strip(), line.page, 0, line.start)
        for page_lines in outline.lines
        for line in page_lines
        for match in _KI67.finditer(line.text)
    ]


# -- genomic: MSI, TMB, variants -------------------------------------------------------------------

_MSI_VALUE = (
    r"(?:MSI[-\s]?(?:H(?:igh)?|L(?:ow)?|stable)\b|(?-i:MSS)\b|MS[-\s]?stable\b"
    r"|(?:microsatellite\s+)?(?:stable|unstable|instability[-\s]high|instability[-\s]low)\b"
    r"|high\b|low\b|equivocal\b|indeterminate\b|not\s+detected\b)"
)
_MSI_LABEL = (
    r"(?:microsatellite\s+instability(?:\s*\((?-i:MSI)\))?(?:\s+status)?"
    r"|microsatellite\s+status|(?-i:MSI)(?:\s+status)?)"
    r"(?:\s+(?:by\s+)?(?:NGS|PCR|IHC))?"
)
_MSI_LINE = _flags(
    rf"(?<![\w-]){_MSI_LABEL}(?!-)\s*(?:[:=]|\s-\s|\s(?:is|was))?\s*(?P<v>{_MSI_VALUE})"
)
_MSI_ANYWHERE = _flags(
    r"\b(?:MSI[-\s]?H(?:igh)?|MSI[-\s]?L(?:ow)?|(?-i:MSS)|MS[-\s]stable|microsatellite\s+"
    r"(?:stable|unstable|instability[-\s]high))\b"
)


def _result_finder(
    line_pattern: re.Pattern[str],
    value_pattern: str,
    result_token: re.Pattern[str],
    anywhere: re.Pattern[str],
    rank: Callable[[str], int],
) -> Finder:
    """A genomic result (MSI, TMB): level 0 reads "Label: value" and a short result row of its
    own ("MSI-High", "TMB-Low"); level 1 a label line with the value below it; level 2 the
    value's own pattern. Interpretive prose and paragraph-long lines are not results."""

    def find(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
        hits: list[Hit] = []
        if level == 1:
            return labelled(
                spec, outline, 1, accept=lambda v: bool(re.match(value_pattern, v, re.IGNORECASE))
            )
        for page_lines in outline.lines:
            for line in page_lines:
                if len(line.text) > PROSE_LINE:
                    continue
                if level == 2:
                    loose = anywhere.search(line.text)
                    if loose and not _interpretive(outline, line, loose.start()):
                        return [Hit(loose.group(0), line.text.strip(), line.page, 0, line.start)]
                    continue
                for match in line_pattern.finditer(line.text):
                    if not _interpretive(outline, line, match.start()):
                        value = clean(match.group("v"))
                        hits.append(
                            Hit(value, line.text.strip(), line.page, rank(value), line.start)
                        )
                token = result_token.search(line.text)
                if (
                    token
                    and len(line.text) <= RESULT_LINE
                    and not _interpretive(outline, line, token.start())
                ):
                    hits.append(Hit(token.group(0), line.text.strip(), line.page, 3, line.start))
        return hits

    return find


msi = _result_finder(_MSI_LINE, _MSI_VALUE, _MSI_ANYWHERE, _MSI_ANYWHERE, lambda value: 0)


_TMB_UNIT = (
    r"(?:mut(?:ation)?s?\s*/\s*(?:mb|megabase)|mutations?\s+per\s+(?:mb|megabase)|muts?/mb"
    r"|m/mb|/\s*mb)"
)
_TMB_VALUE = (
    rf"(?:(?:(?:high|low|intermediate)\s*[|,;:(]?\s*)?\d+(?:\.\d+)?\s*{_TMB_UNIT}"
    r"|(?:(?:high|low|intermediate)\s*[|,;:(]?\s*)?\d+(?:\.\d+)?\b"
    r"|TMB[-\s](?:high|low|intermediate)\b|(?:high|low|intermediate)\b)"
)
_TMB_LABEL = (
    r"(?:tumou?r\s+mutation(?:al)?\s+(?:burden|load)(?:\s*\((?-i:TMB)\))?|(?-i:TMB))"
    r"(?:\s+(?:score|status|result))?(?:\s+(?:by\s+)?NGS)?"
)
_TMB_LINE = _flags(
    rf"(?<![\w-]){_TMB_LABEL}(?!-)\s*(?:[:=]|\s-\s|\s(?:is|was))?\s*(?P<v>{_TMB_VALUE})"
)
_TMB_CATEGORY = _flags(r"\bTMB[-\s](?:high|low|intermediate)\b")
_TMB_ANYWHERE = _flags(rf"\b\d+(?:\.\d+)?\s*{_TMB_UNIT}|\bTMB[-\s](?:high|low|intermediate)\b")


def _tmb_rank(value: str) -> int:
    """A burden with its unit beats a bare number, which beats a category."""
    if re.search(_TMB_UNIT, value, re.IGNORECASE):
        return 0
    return 1 if re.search(r"\d", value) else 2


tmb = _result_finder(_TMB_LINE, _TMB_VALUE, _TMB_CATEGORY, _TMB_ANYWHERE, _tmb_rank)


GENES = frozenset(
    symbol
    for line in (Path(__file__).resolve().parent / "genes.txt").read_text().splitlines()
    if not line.startswith("#")
    for symbol in line.split()
)
_GENE = r"(?P<gene>(?-i:[A-Z][A-Z0-9]{1,7}(?:-\d)?))"
_AMINO = "ACDEFGHIKLMNPQRSTVWY"
_PROTEIN = (
    rf"(?-i:(?:[{_AMINO}]|Ala|Arg|Asn|Asp|Cys|Gln|Glu|Gly|His|Ile|Leu|Lys|Met|Phe|Pro|Ser|Thr"
    rf"|Trp|Tyr|Val)\d{{1,4}}(?:_(?:[{_AMINO}]|[A-Z][a-z]{{2}})\d{{1,4}})?"
    rf"(?:delins[{_AMINO}]+|del[{_AMINO}]*|dup|ins[{_AMINO}]+|fs\*?\d*|\*|Ter"
    rf"|[{_AMINO}]|(?:Ala|Arg|Asn|Asp|Cys|Gln|Glu|Gly|His|Ile|Leu|Lys|Met|Phe|Pro|Ser|Thr|Trp"
    r"|Tyr|Val)))(?![A-Za-z0-9])"
)
_CDNA = (
    r"c\.-?\d+(?:[+-]\d+)?(?:_-?\d+(?:[+-]\d+)?)?"
    r"(?:[ACGT]>[ACGT]|delins[ACGT]+|del[ACGT]*|dup[ACGT]*|ins[ACGT]+)"
)
_EXON = (
    r"exon\s*\d+\s*(?:deletion|insertion|skipping|del|ins|duplication|mutation|alteration)s?"
    r"|(?:deletion|insertion|skipping)\s+(?:in\s+|of\s+)?exon\s*\d+"
)
_CNV = (
    r"(?:amplification|amplified|homozygous\s+deletion|deletion|loss|gain|copy\s+number\s+"
    r"(?:gain|loss)|fusion|rearrangement|rearranged|translocation|truncation|splice\s+site\s+\S+)"
)
_NEGATIVE = _flags(
    r"\b(?:not\s+detected|negative|not\s+identified|no\s+(?:mutation|alteration|variant)s?"
    r"|none\s+detected|wild[\s-]?type|not\s+amplified)\b"
)
_INTERPRETIVE = _flags(
    r"\b(?:may|might|could|has\s+been|have\s+been|had\s+been|reported|studies|study|trials?"
    r"|patients|tumou?rs\s+with|harbou?ring|such\s+as|including|associated\s+with|predict"
    r"|sensitivity|resistance|approved|indicated|treat|therapy|therapies|inhibitors?"
    r"|preclinical|literature|frequency|observed|incidence|encodes|dataset)\b"
)


_CITATION = re.compile(r"\bet\s+al\b|\bepub\b|\bdoi:|\bpmid\b|\bcitation\b", re.IGNORECASE)


def _interpretive(outline: Outline, line: Line, offset_in_line: int) -> bool:
    """The sentence around this point discusses the literature, trials or therapy in general
    (or is a reference): not a result of this patient's test."""
    if _CITATION.search(line.text):
        return True
    text = outline.page_text(line.page)
    a, b = sentence(text, line.start + offset_in_line, line.start + offset_in_line + 1)
    return bool(_INTERPRETIVE.search(text[a:b]))


_VARIANT_AFTER_GENE = _flags(
    rf"^(?:\s*\([^)\n]{{0,20}}\))?(?P<between>[^\n]{{0,60}}?)"
    rf"(?:(?P<exon>{_EXON})|p\.\s?\(?(?P<protein>{_PROTEIN})\)?|(?<![\w.])(?P<bare>{_PROTEIN})"
    rf"|(?P<cdna>{_CDNA})|(?<![\w-])(?P<cnv>{_CNV})(?![\w-]))"
)
_FUSION = re.compile(
    r"(?<![\w-])(?P<a>[A-Z][A-Z0-9]{1,7})\s*(?:-|::|/|\u2013)\s*(?P<b>[A-Z][A-Z0-9]{1,7})"
    r"(?i:\s+(?:fusion|rearrangement|translocation))?(?![\w-])"
)
_PROTEIN_AFTER = re.compile(rf"^[\s,;(|]*p\.\s?\(?(?P<protein>{_PROTEIN})")
_GENE_SUFFIX = re.compile(r"/[A-Z0-9]{1,2}|\((?:[A-Za-z0-9/-]{1,12})\)|gene")
_PAIR_VALUE = _flags(rf"^\s*(?:{_EXON}|p\.\s?{_PROTEIN}|{_PROTEIN}|{_CDNA}|{_CNV})\s*$")


def variants(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """Gene + change (protein, cDNA, exon event), copy number and fusions, for genes on the
    list; "not detected" rows and interpretive prose ("patients with BRAF V600E may...") are
    not results."""
    if level > 0:
        return []
    hits: list[Hit] = []
    seen: set[str] = set()

    def add(value: str, line: Line, offset: int) -> None:
        key = re.sub(r"\bp\.\s?|\s+gene\b", "", value.lower())
        if key not in seen:
            seen.add(key)
            hits.append(Hit(value, line.text.strip(), line.page, 0, line.start + offset))

    gene_token = re.compile(rf"(?<![\w-]){_GENE}(?![\w-])")
    for page_lines in outline.lines:
        for index, line in enumerate(page_lines):
            text = line.text
            if len(text) > PROSE_LINE:
                continue  # a paragraph on one line (flattened XML): interpretation, not a result
            for fusion in _FUSION.finditer(text):
                if fusion.group("a") in GENES and fusion.group("b") in GENES:
                    tail = text[fusion.end() : fusion.end() + 30]
                    if not _NEGATIVE.search(tail) and not _interpretive(
                        outline, line, fusion.start()
                    ):
                        add(clean(fusion.group(0)), line, fusion.start())
            for gene in gene_token.finditer(text):
                symbol = gene.group("gene")
                if symbol not in GENES:
                    continue
                change = _VARIANT_AFTER_GENE.match(text[gene.end() :])
                if change is None:
                    continue
                if _NEGATIVE.search(change.group("between")):
                    continue
                kind = next(
                    k for k in ("exon", "protein", "bare", "cdna", "cnv") if change.group(k)
                )
                if kind == "bare" and change.group("between").strip():
                    continue  # a bare "G12D" must follow its gene directly
                between = change.group("between").strip()
                if kind in ("cnv", "exon"):
                    after = text[gene.end() + change.end() : gene.end() + change.end() + 30]
                    if _NEGATIVE.search(after) or (between and not _GENE_SUFFIX.fullmatch(between)):
                        continue
                if _interpretive(outline, line, gene.start()):
                    continue
                token = change.group(kind)
                if kind == "cdna":  # "KRAS c.35G>A (p.G12D)": the protein change names it
                    rest = text[gene.end() + change.end() : gene.end() + change.end() + 40]
                    protein = _PROTEIN_AFTER.search(rest)
                    if protein:
                        kind, token = "protein", protein.group("protein")
                if kind == "protein":
                    token = "p." + token  # the page's notation: "p.Q479*"
                if kind in ("cnv", "exon"):  # "CDKN2A/B loss", "EGFR exon 19 deletion"
                    value = clean(text[gene.start() : gene.end() + change.end()])
                else:
                    value = f"{symbol} {clean(token)}"
                add(value, line, gene.start())
            # "Gene: TP53" then "Alteration: R248W" (flattened XML, two-column tables); a
            # flag line ("Include: true") may sit between them.
            stripped = _KEY_PREFIX.sub("", text, count=1).strip()
            if stripped in GENES:
                for nxt in page_lines[index + 1 : index + 3]:
                    alteration = _KEY_PREFIX.sub("", nxt.text, count=1).strip()
                    if alteration and _PAIR_VALUE.match(alteration):
                        both = outline.page_text(line.page)[line.start : nxt.end]
                        add(
                            f"{stripped} {alteration}",
                            Line(line.page, line.index, line.start, nxt.end, both),
                            0,
                        )
                        break
    return hits


# -- measurements ----------------------------------------------------------------------------------

MEASUREMENT = (
    r"(?<![\w.])\d+(?:\.\d+)?(?:\s*(?:x|\u00d7|by)\s*\d+(?:\.\d+)?)*(?:\s*|-)(?:mm|cm|ml|cc)"
    r"(?:\s*(?:x|\u00d7)\s*\d+(?:\.\d+)?\s*(?:mm|cm))*\b"
)
_MEASUREMENT = _flags(MEASUREMENT)
_TECHNIQUE = _flags(
    r"\b(?:slices?|sections|thick|thickness|collimation|increments?|intervals?|reconstruct\w*"
    r"|reformat\w*"
    r"|contrast|optiray|omnipaque|isovue|visipaque|gadolinium|mci|mbq|mhz|transducer|kvp|mas"
    r"|mgy|dose|oral|syringe|bolus|inject\w*|administered|agent|saline|ultravist|magnevist"
    r"|solution|infus\w*|received)\b"
)


def measurements(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """Every measurement of the report's findings, in reading order; technique figures (slice
    thickness, contrast volume) and history sections are not findings."""
    if level > 0:
        return []
    hits: list[Hit] = []
    seen: set[str] = set()
    for page_lines in outline.lines:
        for line in page_lines:
            for match in _MEASUREMENT.finditer(line.text):
                page = line.page
                offset = line.start + match.start()
                if _in_history(outline, page, offset):
                    continue
                text = outline.page_text(page)
                a, b = sentence(text, offset, line.start + match.end())
                near = text[max(a, offset - 40) : min(b, line.start + match.end() + 40)]
                if _TECHNIQUE.search(near):
                    continue
                value = clean(match.group(0))
                key = value.lower().replace(" ", "")
                if key not in seen:
                    seen.add(key)
                    hits.append(Hit(value, line.text.strip(), page, 0, offset))
    return hits


# -- dates -----------------------------------------------------------------------------------------

_PERFORMED = _flags(
    r"\b(?:exam(?:ination)?|study|scan|mri|ct|ultrasound|sonogram|radiographs?|x-?rays?|films?"
    r"|images|mammogram|procedure)\b[^.\n]{0,40}?\b(?:was\s+|were\s+)?(?:performed|obtained"
    rf"|done|acquired)\s+(?:on\s+)?(?P<d>{DATE})"
)
# The note's own encounter: "was seen for evaluation on 12/11/06", "seen in our clinic on ...".
SEEN = (
    r"\b(?:seen|evaluated|examined)\s+(?:today\s+)?(?:for\s+(?:an?\s+)?(?:evaluation|consultation"
    r"|follow-?up|assessment)|in\s+(?:my|our|the)\s+(?:\w+\s+)?(?:office|clinic))\s+on\s+"
)
_SEEN = _flags(rf"{SEEN}(?P<d>{DATE})")
_SIGNED = _flags(
    r"\b(?:electronically\s+)?(?:signed|verified|finali[sz]ed|reported)(?:\s+out)?"
    rf"(?:\s+by\s+[^\n]{{0,40}}?)?\s+(?:on\s+)?(?P<d>{DATE})"
)
_NOT_THIS_EXAM = _flags(r"\b(?:prior|previous|comparison|compared|correlat\w*|last|first)\b")
_PHRASES = {"exam": _PERFORMED, "visit": _SEEN, "report": _SIGNED}


def _date_finder(kind: str) -> Finder:
    phrase = _PHRASES[kind]

    def find(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
        hits: list[Hit] = []
        labels = [label for label in spec.labels if label != "date"]
        if level == 0:
            pattern = re.compile(
                rf"(?<![\w-])(?:{'|'.join(_label_source(label) for label in labels)})"
                rf"(?:\s*\((?:mm|dd)[^)\n]{{0,12}}\))?\s*(?:[:=\-]|on|of)?\s*,?\s*(?P<d>{DATE})",
                re.IGNORECASE,
            )
            for page_lines in outline.lines:
                for line in page_lines:
                    for match in pattern.finditer(line.text):
                        if valid_date(match.group("d")):
                            hits.append(
                                Hit(match.group("d"), line.text.strip(), line.page, 0, line.start)
                            )
            return hits
        if level == 1:
            hits = labelled(
                spec,
                outline,
                1,
                accept=lambda v: first_date(v) is not None and first_date(v).start() == 0,  # type: ignore[union-attr]
            )
            hits = [
                Hit(first_date(h.value).group(0), h.snippet, h.page, h.rank, h.offset)  # type: ignore[union-attr]
                for h in hits
            ]
            generic = re.compile(rf"^\s*date\s*:\s*(?P<d>{DATE})", re.IGNORECASE)
            for page_lines in outline.lines:
                for line in page_lines:
                    dated = generic.match(line.text)
                    if dated and valid_date(dated.group("d")):
                        hits.append(
                            Hit(dated.group("d"), line.text.strip(), line.page, 5, line.start)
                        )
            return hits
        for page_lines in outline.lines:
            for line in page_lines:
                for match in phrase.finditer(line.text):
                    if not valid_date(match.group("d")):
                        continue
                    text = outline.page_text(line.page)
                    offset = line.start + match.start()
                    a, _ = sentence(text, offset, offset + 1)
                    if _NOT_THIS_EXAM.search(text[a : line.start + match.start("d")]):
                        continue
                    if kind == "visit" and _in_history(outline, line.page, offset):
                        continue  # a case history's earlier encounters are not this visit
                    hits.append(Hit(match.group("d"), line.text.strip(), line.page, 0, offset))
        return hits

    return find


def _label_source(label: str) -> str:
    return re.escape(label).replace(r"\ ", r"\s+")


# -- institutions ----------------------------------------------------------------------------------

ORGANISATION = re.compile(
    r"(?<![\w])(?P<org>(?:[A-Z][\w&.'-]*\s+){1,6}?"
    r"(?i:hospital|medical\s+cent(?:er|re)|health(?:care|\s+system|\s+services)|clinic"
    r"|laborator(?:y|ies)"
    r"|institute|university|cancer\s+cent(?:er|re)|pathology(?:\s+services)?|diagnostics"
    r"|life\s+sciences|genomics|oncology|family\s+practice|associates|medicine)"
    r"(?:,?\s+(?:LLC|Inc\.?|PC|PS|P\.S\.|LLP))?)(?![\w])"
)


def organisation(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """A label ("Laboratory: ..."), else the organisation named in a copyright line, the
    letterhead (first lines of a page) or the footer (last lines)."""
    hits = labelled(spec, outline, level, pick=lambda body: body.split("\n")[0])
    if level > 0:
        return hits
    for page_lines in outline.lines:
        content = [line for line in page_lines if line.text.strip()]
        for position, line in enumerate(content):
            copyright_line = bool(_COPYRIGHT.search(line.text))
            if 6 <= position < len(content) - 4 and not copyright_line:
                continue  # letterhead (first lines) and footer (last lines) only
            for match in ORGANISATION.finditer(line.text):
                org = clean(_COPYRIGHT.sub("", match.group("org")))
                org = re.sub(r"^(?:(?:19|20)\d{2}\s+)", "", org)
                words = {w.lower().strip(",.") for w in org.split()}
                if words <= _GENERIC_ORG_WORDS or _REPORT_AFTER.match(line.text[match.end() :]):
                    continue  # "Surgical Pathology (Report)", "Clinical Laboratory": a heading
                if len(org.split()) >= 2 and org[0].isupper():
                    rank = 10 if copyright_line else (11 if position < 6 else 12)
                    hits.append(Hit(org, line.text.strip(), line.page, rank, line.start))
                    break
    return hits


_GENERIC_ORG_WORDS = words(
    "surgical anatomic anatomical clinical molecular department of the and pathology "
    "laboratory laboratories medicine internal family health services diagnostics oncology "
    "genomics patient center centre medical hospital institute university clinic associates "
    "llc inc inc. ps pc improvement amendments "
)
_REPORT_AFTER = re.compile(
    r"\s+(?:report|reporting|department|section|consultation|form|proforma|request)\b",
    re.IGNORECASE,
)
_COPYRIGHT = re.compile(r"\u00a9|\(c\)\s*(?:19|20)\d{2}|\bcopyright\b", re.IGNORECASE)


# -- title of other documents ----------------------------------------------------------------------

_NOT_TITLE = _flags(
    r"^\W*$|^\s*\d+\s+\w+.*\b(?:street|st|road|rd|avenue|ave|blvd|suite|ste|drive|dr|unit)\b"
    r"|\b[A-Z]{2}\s+\d{5}\b|,\s*[A-Za-z]+\s+\d{5}(?:-\d{4})?\b|\(\d{3}\)"
    r"|\d{3}[-.\s]\d{3}[-.\s]\d{4}|_{3,}|:\s*$"
)


def title(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """The document's first heading: the first line with words in it that is not the issuer's
    letterhead, an address, a phone number or a blank form field."""
    if level > 0 or not outline.lines:
        return []
    for line in outline.lines[0]:
        text = line.text.strip()
        if len(re.findall(r"[A-Za-z]", text)) < 4 or _NOT_TITLE.search(text):
            continue
        if ORGANISATION.fullmatch(text):
            continue
        return [Hit(clean(text)[:200], text, line.page, 0, line.start)]
    return []


# -- chief complaint -------------------------------------------------------------------------------

# "presents with Mom and Dad for ...": who came along is not the complaint.
_COMPANY = (
    r"\s+(?:(?:his|her|their)\s+)?(?:mom|dad|mother|father|parents?|wife|husband|family"
    r"|daughter|son|caregiver|guardian)\b"
)
_PRESENTS = _flags(
    r"\b(?:presents?|presenting|presented|comes?|came|is\s+here|here|returns?|admitted|referred"
    r"|seen|evaluated|coming)\b(?:\s+(?:(?:in|to|at)\s+(?:the\s+)?\w+(?:\s+\w+)?|in|today|back"
    r"|again"
    r"|earlier\s+today|with\s+(?:his|her|their)\s+\w+"
    r"|with\s+(?:(?:his|her|their)\s+)?(?:mom|dad|mother|father|parents?|wife|husband|family"
    r"|daughter|son|caregiver|guardian)(?:\s+and\s+(?:mom|dad|mother|father))?))*?\s+(?:today\s+)?"
    rf"(?:for|with(?!{_COMPANY})|after"
    r"|because\s+of|complaining\s+of|c/o)\s+(?:a\s+|an\s+)?(?:(?:chief\s+|main\s+)?complaints?\s+of\s+)?"
    r"(?P<v>[^.\n]{3,200})"
    r"|\b(?:main|chief)\s+complaint\s+(?:of|is)\s+(?P<w>[^.\n]{3,200})"
    r"|\bcomplain(?:s|ing|ed)\s+of\s+(?P<x>[^.\n]{3,200})"
)


_OPENING = re.compile(
    r"\b(?:subjective|hpi|present illness|history of present|interval history|clinical data"
    r"|history and physical)\b|^(?:history|s|hx)$"
)
# A discharge summary without a history opens its hospital course with the presentation.
_COURSE = re.compile(r"\bhospital course\b")


def opening_regions(outline: Outline) -> list[tuple[int, int, str]]:
    """(page, offset, text) of a note's opening history: its subjective / HPI section, else
    the text before its first section header."""
    for pattern in (_OPENING, _COURSE):
        for section in outline.sections:
            if pattern.search(section.header.key):
                return [(section.page, section.body_start, section.text[:3000])]
    if not outline.pages:
        return []
    first = outline.sections[0].header.line.start if outline.sections else 1000
    if outline.sections and outline.sections[0].page != 1:
        first = 1000
    return [(1, 0, outline.pages[0][: min(first, 1000)])] if first > 0 else []


def chief_complaint(spec: FieldSpec, outline: Outline, level: int) -> list[Hit]:
    """The complaint under its header; without one, what the patient "presents with" or
    "comes in for" in the opening history."""
    if level < 2:
        return labelled(spec, outline, level)
    for page, start, text in opening_regions(outline):
        match = _PRESENTS.search(text)
        if match:
            group = next(g for g in ("v", "w", "x") if match.group(g))
            value = _cut(match.group(group), spec.max_chars)
            a = start + match.start(group)
            return [Hit(value, snippet(outline, page, a, a + len(value)), page, 0, a)]
    return []


FINDERS: dict[str, Finder] = {
    "text": text_finder,
    "histology": histology,
    "grade": grade,
    "margins": margins,
    "receptor_er": _receptor("er"),
    "receptor_pr": _receptor("pr"),
    "her2": her2,
    "ki67": ki67,
    "msi": msi,
    "tmb": tmb,
    "variants": variants,
    "measurements": measurements,
    "date_report": _date_finder("report"),
    "date_exam": _date_finder("exam"),
    "date_visit": _date_finder("visit"),
    "organisation": organisation,
    "title": title,
    "chief_complaint": chief_complaint,
}


# -- presence: does the document state this field at all? ------------------------------------------


def presence(spec: FieldSpec, outline: Outline) -> Hit | None:
    key = (
        "presence",
        spec.name,
        spec.format,
        spec.finder,
        spec.cue_scope,
        tuple(spec.labels),
        tuple(spec.cues),
    )
    if key not in outline.memo:
        outline.memo[key] = _presence(spec, outline)
    cached: Hit | None = outline.memo[key]
    return cached


def _presence(spec: FieldSpec, outline: Outline) -> Hit | None:
    """Where the document shows it holds this field, independently of whether a value was
    read: one of the field's cues, or one of its labels with a value after it (a header with
    text under it, "Label: text", "Date of report: 03/14/2025"). A blank form's labels with
    nothing after them are not a presence."""
    regions = (
        opening_regions(outline)
        if spec.cue_scope == "opening"
        else [(number, 0, text) for number, text in enumerate(outline.pages, start=1)]
    )
    for cue in spec.cues:
        pattern = _compiled(cue)
        for number, start, text in regions:
            for match in pattern.finditer(text):
                offset = start + match.start()
                if spec.cue_scope == "results" and _in_history(outline, number, offset):
                    continue
                return Hit(
                    match.group(0),
                    snippet(outline, number, offset, start + match.end()),
                    number,
                    0,
                    offset,
                )
    if spec.labels == ["@first_line"] or spec.finder in ("title", "measurements", "variants"):
        return None
    if spec.format == "date":
        finder = FINDERS[spec.finder] if spec.finder else _date_finder("report")
        hits = finder(spec, outline, 0) or finder(spec, outline, 1)
    elif spec.format == "text":
        hits = labelled(spec, outline, 0) or labelled(spec, outline, 1)
    else:
        # A label with a value of the field's format after it, on its line or below it (the
        # presence of a form's box that is filled in).
        hits = [
            Hit(v, s, p)
            for v, s, p in find_labelled(spec, outline.pages, 0)
            or find_labelled(spec, outline.pages, 1)
        ]
    return hits[0] if hits else None
