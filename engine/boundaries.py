"""Where one document ends and the next begins in a bundle: read from what changes between
pages. Pure: no Django.

Each page after the first is compared with the page before it (and with what the current
document has shown so far). Cues for a new document, with their weights:
  - the page counter restarts ("Page 1 of 3", "1|Page"), its total changes ("of 6" -> "of 2"),
    or the page before was the last of its count ("Page 6 of 6");
  - a patient, record, accession or case number (or a date of birth) differs from the one the
    current document showed;
  - a new letterhead (an organisation named at the head of the page that the page before does
    not name), a new heading block where no running header or footer carries on;
  - a document's opening (a report title, "CHIEF COMPLAINT:", "EXAM:") at the top of the page,
    after a page that ended with a signature or a form's footer ("Form CMS-R-131 (03/11)");
  - a labelled report, service or exam date that differs from the current document's.
Cues that the same document goes on weigh against: the counter goes on ("Page 2 of 6"), the
same identifiers, a running header or footer repeated, a sentence running on from the page
before.

A page whose cues add up to ``CUT_SCORE`` starts a new document. Every page with a cue is
reported with its cues and the text that shows them, so that a reviewer sees why a cut was
made, or why one was considered and not made.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engine.schemas import Boundary, BoundaryCue

CUT_SCORE = 2.5  # cues adding up to this start a new document
REPORTED_SCORE = 1.0  # pages below this (and not cut) are not listed
TOP_LINES = 4
BOTTOM_LINES = 3
CUE_TEXT_CHARS = 200

# Weights: positive for a new document, negative for the same one going on.
WEIGHTS = {
    "counter_restart": 3.0,
    "counter_total_change": 3.0,
    "counter_end": 2.5,
    "identifier_change": 3.0,
    "letterhead_change": 1.0,
    "new_heading": 1.5,
    "opening": 1.5,
    "sign_off": 1.5,
    "form_end": 1.5,
    "date_change": 1.5,
    "identifier_new": 1.5,
    "closing": 1.0,
    "counter_continues": -3.0,
    "counter_skips": -2.0,
    "identifier_same": -2.0,
    "running_lines": -2.0,
    "date_same": -1.0,
    "runs_on": -2.0,
}
# What a reviewer reads for each cue code.
DESCRIPTIONS = {
    "counter_restart": "the page counter starts again",
    "counter_total_change": "the page counter's total changes",
    "counter_end": "the page before was the last of its count",
    "identifier_change": "a different patient, record or accession number",
    "letterhead_change": "a new letterhead",
    "new_heading": "a new heading, no running header or footer carried on",
    "opening": "a document's opening at the top of the page",
    "sign_off": "the page before ends with a signature",
    "form_end": "the page before ends with a form's footer",
    "date_change": "a different report date",
    "identifier_new": "an identifier at the head of the page that the document so far lacked",
    "closing": "the page before ends with a closing section (impression, plan, diagnosis)",
    "type_change": "the type of document changes",
    "counter_continues": "the page counter goes on",
    "counter_skips": "the page counter skips ahead with the same total",
    "identifier_same": "the same patient, record or accession number",
    "running_lines": "a running header or footer repeats",
    "date_same": "the same report date",
    "runs_on": "a sentence runs on from the page before",
}

_COUNTER = [
    re.compile(r"\bpage\s*(?P<k>\d{1,3})\s*(?:of|/)\s*(?P<n>\d{1,3})\b", re.IGNORECASE),
    re.compile(r"(?<![\w/])(?P<k>\d{1,3})\s*\|\s*P\s?a\s?g\s?e\b", re.IGNORECASE),
    re.compile(r"^\s*(?:page|pg\.?)\s*(?P<k>\d{1,3})\s*$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"^\s*-\s*(?P<k>\d{1,3})\s*-\s*$", re.MULTILINE),
]
_MASKED = re.compile(r"[X*#]{2,}|_{2,}|\bX\b")
_ID_LABELS = {
    "record": r"(?:MRN|MR\s*#|Med(?:ical)?\.?\s*Rec(?:ord)?\.?\s*(?:No\.?|Number|#)|Patient\s+ID"
    r"|Pt\.?\s+ID|Chart\s*(?:No\.?|Number|#)|Hospital\s*(?:No\.?|Number|#)|Unit\s+No\.?)",
    "accession": r"(?:Accession|Acc\.?|Case|Specimen|Surgical\s+(?:Pathology\s+)?|Path(?:ology)?"
    r"|Lab(?:oratory)?|Report|Order|Requisition|Exam|Study|Encounter|Visit|FIN)\s*"
    r"(?:No\.?|Number|#|ID)",
    "birth": r"(?:DOB|D\.O\.B\.?|Date\s+of\s+Birth|Birth\s*date)",
    "document": r"(?:UUID|GUID|Document\s+ID|Barcode)",
    "patient": r"(?:Patient(?:'s|\u2019s)?\s+Name|Patient|Pt\.?\s+Name|Name)",
}
_ID_VALUE = {
    "record": r"(?P<v>[A-Z0-9][A-Z0-9\-]{3,19})",
    "accession": r"(?P<v>[A-Z0-9][A-Z0-9\-/]{3,19})",
    "birth": r"(?P<v>\d{1,2}[/-]\d{1,2}[/-]\d{2,4})",
    "document": r"(?P<v>[A-Z0-9][A-Z0-9\-]{7,40})",
    "patient": r"(?P<v>[A-Z][A-Za-z'\-]+(?:,\s*|\s+)[A-Z][A-Za-z'\-]+(?:\s+[A-Z]\.?)?)",
}
_IDENTIFIERS = {
    key: re.compile(
        rf"(?<![\w]){label}\s*[:#.]?\s*{_ID_VALUE[key]}(?![\w-])",
        re.IGNORECASE if key != "patient" else 0,
    )
    for key, label in _ID_LABELS.items()
}
_NOT_A_NAME = re.compile(
    r"\b(?:name|date|number|address|provider|physician|doctor|dob|birth|sex|age|phone|signature"
    r"|id|information|test|specimen|report)\b",
    re.IGNORECASE,
)
_DATE = (
    r"(?:\d{1,2}[/-]\d{1,2}[/-](?:\d{4}|\d{2})|(?:19|20)\d{2}-\d{2}-\d{2}"
    r"|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{1,2},?\s+(?:19|20)\d{2})"
)
_REPORT_DATE = re.compile(
    r"(?<![\w])(?:date\s+of\s+(?:report|service|exam(?:ination)?|procedure|visit|study"
    r"|collection|surgery)|report(?:ed)?\s+date|date\s+reported|exam(?:ination)?\s+date"
    r"|study\s+date|service\s+date|visit\s+date|collection\s+date|collected|received"
    r"|signed\s+out|DOS)\s*(?:on)?\s*[:#]?\s*(?P<d>" + _DATE + r")",
    re.IGNORECASE,
)
_SIGN_OFF = re.compile(
    r"\b(?:electronically\s+(?:signed|verified|approved)|signed\s+(?:out\s+)?by|dictated\s+by"
    r"|transcribed\s+by|verified\s+by|reviewed\s+and\s+signed|end\s+of\s+report"
    r"|\*+\s*end\s+of|attending\s+(?:physician|radiologist|pathologist)\s*:"
    r"|(?:pathologist|radiologist)\s*:\s*\S)",
    re.IGNORECASE | re.MULTILINE,
)
_FORM_FOOTER = re.compile(
    r"(?:\bform\s+[A-Z0-9][\w-]{1,20}\s*\(\d{1,2}/\d{2,4}\)|#\s?\d{1,3}-\d{2,4}\s*\(\d{1,2}/\d{2,4}\)"
    r"|\brev(?:ised|\.)?\s*:?\s*\d{1,2}/\d{2,4}\b|\bOMB\s+No\.)",
    re.IGNORECASE,
)
# What a document opens with: a report's title, or a section that only a document's first page
# starts with.
_OPENING = re.compile(
    r"^\s*(?:(?:final\s+|amended\s+|surgical\s+|anatomic\s+|cytology\s+|molecular\s+|genomic\s+"
    r"|radiology\s+|imaging\s+|consultation\s+|operative\s+|discharge\s+|pathology\s+)+"
    r"(?:report|summary|note|consultation)\b|(?:history\s+and\s+physical|discharge\s+summary"
    r"|operative\s+report|consultation\s+note|progress\s+note|clinic\s+note)\b"
    r"|(?:chief\s+complaint|reason\s+for\s+(?:consultation|consult|visit|referral|exam(?:ination)?"
    r"|admission)|exam(?:ination)?|procedure\s+performed|preoperative\s+diagnos[ie]s|cc"
    r"|clinical\s+(?:history|information|indication)|indications?|history"
    r"|history\s+of\s+present\s+illness|comparison(?:\s+studies)?)\s*:)",
    re.IGNORECASE,
)
_ORGANISATION = re.compile(
    r"(?<![\w])(?:[A-Z][\w&.'-]*\s+){1,5}?(?i:hospital|medical\s+cent(?:er|re)|health\s*(?:care|"
    r"system|services)|clinic|laborator(?:y|ies)|institute|university|cancer\s+cent(?:er|re)"
    r"|pathology(?:\s+services)?|diagnostics|life\s+sciences|genomics|oncology|family\s+practice"
    r"|associates|imaging|radiology)(?:,?\s+(?:LLC|Inc\.?|PC|PS|P\.S\.|LLP))?(?![\w])"
)
_CLOSING = re.compile(
    r"^\s*(?:impressions?|conclusions?|assessment(?:\s+and\s+plan)?|plan|recommendations?"
    r"|comments?|(?:final\s+)?diagnos[ie]s|disposition|summary|note)\s*:",
    re.IGNORECASE,
)
# "COMPARISON: None.", "INDICATION: Cough": a section with a short value repeats across reports
# of one kind; it is not a running header.
_LABEL_VALUE = re.compile(r"^\s*[A-Za-z][A-Za-z /&]{2,30}:\s*[^:]{0,25}$")
_HEADING = re.compile(r"^[A-Z][A-Za-z&/'\u2019,.()\- ]{3,80}$")


def _norm_line(text: str) -> str:
    """A line as running headers and footers are compared: letters only, lower case (page
    numbers and dates change from page to page; the words of a running line do not)."""
    return " ".join(re.findall(r"[a-z]+", text.lower()))


def _content_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if re.search(r"[A-Za-z0-9]", line)]


@dataclass
class PageFacts:
    """What one page shows about which document it belongs to."""

    counter: tuple[int, int | None, str] | None  # (number, total, verbatim)
    identifiers: dict[str, tuple[str, str]]  # key -> (normalised value, verbatim label + value)
    dates: list[tuple[str, str]]  # (normalised date, verbatim)
    top: list[str]
    bottom: list[str]
    organisations: list[str]
    text: str
    lower: str = field(init=False)

    def __post_init__(self) -> None:
        self.lower = self.text.lower()

    @property
    def running(self) -> set[str]:
        """Top and bottom lines that could be a running header or footer: two words or more,
        not a section header ("GROSS DESCRIPTION:" heads sections of many reports)."""
        return {
            n
            for line in self.top + self.bottom
            if len(n := _norm_line(line)) >= 10
            and " " in n
            and not re.match(r"^[^:]{0,40}:\s*$", line)
            and not _LABEL_VALUE.match(line)
        }


def _counter(text: str) -> tuple[int, int | None, str] | None:
    for pattern in _COUNTER:
        found = list(pattern.finditer(text))
        if found:
            match = found[-1]  # a footer's counter is the page's last
            total = match.groupdict().get("n")
            number = int(match.group("k"))
            if total is not None and not 1 <= number <= int(total):
                continue
            return number, int(total) if total else None, match.group(0).strip()
    return None


def _identifiers(text: str) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for key, pattern in _IDENTIFIERS.items():
        for match in pattern.finditer(text):
            value = match.group("v")
            if _MASKED.search(value) or (key != "patient" and not re.search(r"\d", value)):
                continue
            if key == "patient" and _NOT_A_NAME.search(value):
                continue
            tail = text[match.end() : match.end() + 2]
            if tail.strip().startswith(":"):
                continue  # "Patient Name: Provider Name:" is a blank form's two labels
            said = " ".join(match.group(0).split())
            found.setdefault(key, (re.sub(r"[\s,.]+", " ", value).strip().upper(), said))
            break
    return found


def _dates(text: str) -> list[tuple[str, str]]:
    return [
        (re.sub(r"\s+", " ", m.group("d")).lower(), m.group(0).strip())
        for m in _REPORT_DATE.finditer(text)
    ]


def page_facts(text: str) -> PageFacts:
    lines = _content_lines(text)
    top = lines[:TOP_LINES]
    organisations = []
    for line in top:
        # A letterhead names the organisation and little else ("The hospital course was ..."
        # names none).
        organisations += [
            m.group(0).strip()
            for m in _ORGANISATION.finditer(line)
            if len(m.group(0).strip()) >= 0.5 * len(line.strip())
            and not m.group(0).startswith(("The ", "the "))
        ]
    return PageFacts(
        counter=_counter(text),
        identifiers=_identifiers(text),
        dates=_dates(text),
        top=top,
        bottom=lines[-BOTTOM_LINES:] if len(lines) > TOP_LINES else [],
        organisations=organisations,
        text=text,
    )


def _cue(code: str, text: str, weight: float | None = None) -> BoundaryCue:
    return BoundaryCue(
        code=code,
        weight=WEIGHTS[code] if weight is None else weight,
        description=DESCRIPTIONS[code],
        text=" ".join(text.split())[:CUE_TEXT_CHARS],
    )


@dataclass
class _Current:
    """What the document being read has shown so far (reset at each cut)."""

    identifiers: dict[str, tuple[str, str]] = field(default_factory=dict)
    dates: set[str] = field(default_factory=set)
    pages: int = 0


def _counter_cues(before: PageFacts, page: PageFacts) -> list[BoundaryCue]:
    cues = []
    a, b = before.counter, page.counter
    if b is not None:
        number, total, said = b
        if a is not None and a[1] is not None and total is not None and a[1] != total:
            cues.append(_cue("counter_total_change", f"{a[2]} -> {said}"))
        elif number == 1 and (a is None or a[0] >= 1):
            cues.append(_cue("counter_restart", said if a is None else f"{a[2]} -> {said}"))
        elif a is not None and number == a[0] + 1:
            cues.append(_cue("counter_continues", f"{a[2]} -> {said}"))
        elif a is not None and number > a[0] and (total is None or total == a[1]):
            cues.append(_cue("counter_skips", f"{a[2]} -> {said}"))
    if (
        a is not None
        and a[1] is not None
        and a[0] == a[1]
        and not any(c.code in ("counter_restart", "counter_total_change") for c in cues)
    ):
        cues.append(_cue("counter_end", a[2]))
    return cues


def _identifier_cues(current: _Current, page: PageFacts) -> list[BoundaryCue]:
    changed, same = [], []
    for key, (value, line) in page.identifiers.items():
        seen = current.identifiers.get(key)
        if seen is None:
            continue
        if seen[0] != value:
            changed.append(f"{seen[1]} -> {line}")
        else:
            same.append(line)
    if changed:
        # Two identifiers that change say no more than one: the cue counts once.
        return [_cue("identifier_change", "; ".join(changed))]
    if same:
        return [_cue("identifier_same", "; ".join(same))]
    head = "\n".join(page.top)
    new = [
        said
        for key, (_value, said) in page.identifiers.items()
        if key not in current.identifiers and said in " ".join(head.split())
    ]
    if new and current.pages:
        return [_cue("identifier_new", new[0])]
    return []


def _layout_cues(before: PageFacts, page: PageFacts) -> list[BoundaryCue]:
    cues = []
    shared = before.running & page.running
    if shared:
        line = next(x for x in page.top + page.bottom if _norm_line(x) in shared)
        cues.append(_cue("running_lines", line))
    first = page.top[0] if page.top else ""
    if (
        not shared
        and _HEADING.match(first)
        and len(first.split()) <= 10
        and _norm_line(first) not in {_norm_line(x) for x in _content_lines(before.text)}
    ):
        cues.append(_cue("new_heading", first))
    new_orgs = [o for o in page.organisations if o.lower() not in before.lower]
    if new_orgs and not shared:
        cues.append(_cue("letterhead_change", new_orgs[0]))
    opening = next(
        (line for line in page.top[:2] if _OPENING.match(line) and _norm_line(line) not in shared),
        None,
    )
    if opening is not None:
        cues.append(_cue("opening", opening))
    if not shared and (
        opening is not None or (first and re.match(r"^[A-Z][A-Z /&]{2,40}:", first))
    ):
        last_header = next(
            (
                line
                for line in reversed(_content_lines(before.text))
                if re.match(r"^\s*[A-Z][A-Za-z /&]{1,40}:", line)
            ),
            "",
        )
        if _CLOSING.match(last_header):
            # A radiology report's impression and a note's plan end it; a pathology report's
            # diagnosis or comment may come before its descriptions.
            final = re.match(
                r"\s*(?:impressions?|conclusions?|plan|assessment\s+and\s+plan"
                r"|recommendations?|disposition)\b",
                last_header,
                re.IGNORECASE,
            )
            cues.append(_cue("closing", last_header, 1.5 if final else None))
    if not shared:
        tail = "\n".join(before.bottom or _content_lines(before.text)[-BOTTOM_LINES:])
        sign = _SIGN_OFF.search(tail)
        if sign:
            cues.append(_cue("sign_off", _line_of(tail, sign.start())))
        form = _FORM_FOOTER.search(tail)
        if form and not _FORM_FOOTER.search("\n".join(page.bottom)):
            cues.append(_cue("form_end", _line_of(tail, form.start())))
    before_text = before.text.rstrip()
    after_text = page.text.lstrip()
    if (
        before_text
        and after_text
        and before_text[-1] not in ".:;!?)\"'"
        and after_text[0].islower()
        and not shared
    ):
        cues.append(_cue("runs_on", f"…{before_text[-40:]} | {after_text[:40]}…"))
    return cues


def _line_of(text: str, offset: int) -> str:
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return text[start : len(text) if end < 0 else end].strip()


def _date_cues(current: _Current, page: PageFacts) -> list[BoundaryCue]:
    if not page.dates or not current.dates:
        return []
    values = {d for d, _ in page.dates}
    if values & current.dates:
        return [_cue("date_same", page.dates[0][1])]
    return [_cue("date_change", page.dates[0][1])]


class BoundaryReader:
    """Reads a document's pages in order and decides, page by page, whether each starts a
    new document. The caller may force a cut (the type of document changes) with cues of its
    own; what the current document has shown so far starts again at every cut."""

    def __init__(self, pages: list[str]) -> None:
        self.facts = [page_facts(text) for text in pages]
        self.boundaries: list[Boundary] = []
        self._current = _Current()
        if self.facts:
            self._remember(0)

    def _remember(self, index: int) -> None:
        page = self.facts[index]
        self._current.pages += 1
        for key, value in page.identifiers.items():
            self._current.identifiers.setdefault(key, value)
        self._current.dates |= {d for d, _ in page.dates}

    def cues(self, number: int) -> list[BoundaryCue]:
        """The cues of page ``number`` (1-based, after the first) against the page before
        and the current document."""
        before, page = self.facts[number - 2], self.facts[number - 1]
        return (
            _counter_cues(before, page)
            + _identifier_cues(self._current, page)
            + _layout_cues(before, page)
            + _date_cues(self._current, page)
        )

    def read(self, number: int, forced: list[BoundaryCue] | None = None) -> Boundary:
        """Decide page ``number``; pages must be read in order, from 2."""
        cues = self.cues(number)
        score = round(sum(c.weight for c in cues), 2)
        cut = bool(forced) or score >= CUT_SCORE
        boundary = Boundary(page=number, score=score, cut=cut, cues=[*(forced or []), *cues])
        if cut or score >= REPORTED_SCORE or cues:
            self.boundaries.append(boundary)
        if cut:
            self._current = _Current()
        self._remember(number - 1)
        return boundary


def detect(pages: list[str]) -> list[Boundary]:
    """Every page (after the first) that shows a cue, with its cues and whether it is cut."""
    reader = BoundaryReader(pages)
    for number in range(2, len(pages) + 1):
        reader.read(number)
    return reader.boundaries


def starts(boundaries: list[Boundary]) -> set[int]:
    """The pages that start a new document."""
    return {b.page for b in boundaries if b.cut}
