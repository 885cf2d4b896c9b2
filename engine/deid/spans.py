"""PHI spans: where a recogniser found protected health information in a text, and of what
type. Spans are half-open character offsets into the text they were found in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

NAME = "NAME"  # patients, clinicians, relatives, anyone named
DATE = "DATE"  # any date more precise than a year (dates of birth included)
ID = "ID"  # record, accession, account, order, insurance, social security and other numbers
PHONE = "PHONE"  # phone, fax, pager (and extensions)
ADDRESS = "ADDRESS"  # street, unit, city, ZIP code (states are kept)
EMAIL = "EMAIL"
URL = "URL"  # web addresses and IP addresses
AGE = "AGE"  # ages over 89 (HIPAA Safe Harbor: 90 or older)
TYPES = (NAME, DATE, ID, PHONE, ADDRESS, EMAIL, URL, AGE)

# When two recognisers disagree on overlapping text, the longer span wins; on equal length,
# the type earlier in this order (an identifier that looks like a date is an identifier).
PRECEDENCE = {t: i for i, t in enumerate((EMAIL, URL, ID, PHONE, DATE, ADDRESS, AGE, NAME))}


@dataclass(frozen=True, order=True)
class Phi:
    start: int
    end: int
    type: str
    source: str = ""  # the recogniser that found it (for benchmarks and debugging)

    def text(self, text: str) -> str:
        return text[self.start : self.end]


def resolve(spans: Iterable[Phi]) -> list[Phi]:
    """Non-overlapping spans in text order. Overlapping spans are joined into one span that
    covers them all, typed by the longest of them (PRECEDENCE breaks ties), so nothing any
    recogniser found is left out. Spans merely touching stay apart (two name tokens)."""
    ordered = sorted(s for s in spans if s.end > s.start)
    out: list[Phi] = []
    group: list[Phi] = []
    end = -1
    for span in ordered:
        if group and span.start < end:
            group.append(span)
            end = max(end, span.end)
            continue
        if group:
            out.append(_join(group))
        group, end = [span], span.end
    if group:
        out.append(_join(group))
    return out


def _join(group: list[Phi]) -> Phi:
    if len(group) == 1:
        return group[0]
    best = min(group, key=lambda s: (-(s.end - s.start), PRECEDENCE.get(s.type, 99)))
    start = min(s.start for s in group)
    end = max(s.end for s in group)
    return Phi(start, end, best.type, best.source)
