"""What a report's layout says: its lines, its section headers and the sections under them.
Pure: no Django.

Clinical reports are written as labelled sections, in three common shapes:
  - a header with the text on the same line ("FINDINGS: The lungs are clear.", "CC: ,Headache.");
  - a header on a line of its own, the text below it until the next header ("IMPRESSION:" then
    a numbered list; "FINAL DIAGNOSIS" then the diagnosis);
  - on scanned forms, a label line and its value on the next line ("Histologic diagnosis" then
    "High grade urothelial carcinoma").
A section runs from its header to the next header on the same page. Upper-case headers
("FINDINGS:", "GROSS DESCRIPTION") and short lines ending with a colon ("Bladder:") start
sections; a title-case label inside a section ("Margins:  negative") does not end it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any


def words(text: str) -> frozenset[str]:
    """A word list written as one string."""
    return frozenset(text.split())


# Words that make an upper-case line without a colon a section header ("GROSS DESCRIPTION").
HEADER_WORDS = words(
    "addendum assessment cc clinical comment comments comparison complaint conclusion "
    "conclusions course description diagnoses diagnosis discussion exam examination findings "
    "gross history hpi impression indication indications interpretation microscopic note "
    "notes opinion plan procedure recommendation recommendations result results specimen "
    "specimens summary technique "
)
_INLINE_HEADER = re.compile(
    r"^[ \t]*(?:\d{1,2}[.)][ \t]+)?"
    r"(?P<name>[A-Z][A-Z0-9&/'().\- ]{0,58}?[A-Z0-9)]|[A-Z])"
    r"[ \t]*(?::|[ \t]-(?=[ \t,])|-[ \t]*,|,(?=[ \t]*\d{1,2}\.[ \t]))[ \t]*,?[ \t]*(?P<rest>.*)$"
)
_COLON_LINE = re.compile(r"^[ \t]*(?P<name>[A-Z][^:\n]{1,60}?)[ \t]*:[ \t,]*$")
_CAPS_LINE = re.compile(r"^[ \t]*(?P<name>[A-Z][A-Z0-9&/'(),.\- ]{2,60}?)[ \t]*:?[ \t]*$")
_SOAP = frozenset({"S", "O", "A", "P"})
_PART_HEADER = re.compile(r"^[ \t]*(?:part\s+)?[A-H1-9][.)][ \t]+\S", re.IGNORECASE)
_WORD = re.compile(r"[a-z]+")


@lru_cache(maxsize=8192)
def norm(text: str) -> str:
    """Lower case, letters and digits only, single spaces: the form labels are compared in."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("&", " and ")))


@dataclass(frozen=True)
class Line:
    page: int  # 1-based
    index: int  # line number within the page, 0-based
    start: int  # offsets in the page text
    end: int
    text: str


@dataclass(frozen=True)
class Header:
    name: str
    key: str  # norm(name)
    line: Line
    rest_start: int  # page offset where the text after an inline header starts
    inline: bool  # text follows the header on its line
    caps: bool  # upper case: a section header, not a label inside a section


@dataclass(frozen=True)
class Section:
    header: Header
    body_start: int
    body_end: int
    text: str  # the body: inline text and the lines below, up to the next header

    @property
    def page(self) -> int:
        return self.header.line.page


def _header(line: Line) -> Header | None:
    text = line.text
    match = _INLINE_HEADER.match(text)
    if match:
        name = match.group("name").strip()
        letters = re.sub(r"[^A-Za-z]", "", name)
        rest = match.group("rest")
        if (len(letters) >= 2 or name in _SOAP) and len(name.split()) <= 8:
            return Header(
                name,
                norm(name),
                line,
                line.start + match.start("rest"),
                bool(rest.strip(" ,")),
                True,
            )
    match = _COLON_LINE.match(text)
    if match:
        name = match.group("name").strip()
        caps = name.upper() == name
        # "Bladder:", "Left pelvic lymph nodes:" head what follows; a longer sentence ending
        # in a colon ("Assessment for vestibular function follows:") does not.
        if len(name.split()) <= (6 if caps else 5) or (
            _PART_HEADER.match(name) and len(name.split()) <= 12
        ):
            return Header(name, norm(name), line, line.end, False, caps)
    match = _CAPS_LINE.match(text)
    if match:
        name = match.group("name").strip()
        words = set(_WORD.findall(name.lower()))
        if len(name.split()) <= 6 and words & HEADER_WORDS:
            return Header(name, norm(name), line, line.end, False, True)
    return None


@dataclass
class Outline:
    """Lines, headers and sections of a document's pages (1-based page numbers)."""

    pages: list[str]
    lines: list[list[Line]] = field(init=False)
    headers: list[Header] = field(init=False)
    memo: dict[Any, Any] = field(init=False, default_factory=dict)  # readings of this text

    def __post_init__(self) -> None:
        self.lines = []
        self.headers = []
        for number, text in enumerate(self.pages, start=1):
            page_lines = []
            offset = 0
            for index, raw in enumerate(text.split("\n")):
                page_lines.append(Line(number, index, offset, offset + len(raw), raw))
                offset += len(raw) + 1
            self.lines.append(page_lines)
            for line in page_lines:
                header = _header(line)
                if header is not None:
                    self.headers.append(header)

    @cached_property
    def sections(self) -> list[Section]:
        sections = []
        for i, header in enumerate(self.headers):
            page = header.line.page
            text = self.pages[page - 1]
            start = header.rest_start if header.inline else header.line.end
            end = self._end(i, page, len(text))
            if not text[start:end].strip(" \t\n,:") and i + 1 < len(self.headers):
                # A header with nothing under it heads the sub-sections that follow
                # ("DIAGNOSIS:" then "A. LEFT BREAST, MASTECTOMY:" then the diagnosis), all
                # the parts of a specimen ("A. ...:", "B. ...:") when they are lettered.
                j = i + 1
                while (
                    j + 1 < len(self.headers)
                    and self.headers[j + 1].line.page == page
                    and _PART_HEADER.match(self.headers[j].line.text)
                    and _PART_HEADER.match(self.headers[j + 1].line.text)
                ):
                    j += 1
                if self.headers[i + 1].line.page == page:
                    end = self._end(j, page, len(text))
            body = text[start:end]
            lead = len(body) - len(body.lstrip(" \t\n,:"))
            body = body.strip(" \t\n,:")
            sections.append(Section(header, start + lead, start + lead + len(body), body))
        return sections

    def _end(self, index: int, page: int, page_length: int) -> int:
        following = next(
            (
                h
                for h in self.headers[index + 1 :]
                if h.line.page == page and (h.caps or not h.inline)
            ),
            None,
        )
        return following.line.start if following else page_length

    def page_text(self, page: int) -> str:
        return self.pages[page - 1]

    def line_at(self, page: int, offset: int) -> Line:
        for line in self.lines[page - 1]:
            if line.start <= offset <= line.end:
                return line
        return self.lines[page - 1][-1]

    def next_lines(self, line: Line, count: int = 3) -> list[Line]:
        """The next non-blank lines after ``line`` on its page."""
        found = []
        for other in self.lines[line.page - 1][line.index + 1 :]:
            if other.text.strip():
                found.append(other)
                if len(found) == count:
                    break
        return found

    def section_of(self, page: int, offset: int) -> Section | None:
        """The innermost section containing this page offset."""
        best = None
        for section in self.sections:
            if section.page == page and section.header.line.start <= offset <= section.body_end:
                best = section
        return best

    def is_header_line(self, line: Line) -> bool:
        return any(h.line == line for h in self.headers)


def label_match(key: str, label: str) -> int | None:
    """How well a header (normalised) names a label: 0 exact, 1 starts with it, 2 ends with
    it, 3 contains it as whole words; None when it does not."""
    label = norm(label)
    if not label:
        return None
    if key == label:
        return 0
    if key.startswith(label + " "):
        return 1
    if key.endswith(" " + label):
        return 2
    if f" {label} " in f" {key} ":
        return 3
    return None
