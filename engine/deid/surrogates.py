"""Surrogates: a realistic stand-in for each PHI value, the same every time for the same value
under the same key (an HMAC of the type and the value), so a de-identified export says the same
surrogate for the same patient in every row, and a prompt de-identified twice is the same
prompt (the response cache still answers it).

Shapes are kept so the text still reads as clinical text: a name word becomes a name word in
the same case, a date a date in the same format and year (HIPAA Safe Harbor keeps years; a
year that would tell an age over 89 is moved), an identifier or phone number keeps its letters,
digits and punctuation in place.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import re
from collections.abc import Callable
from datetime import date

from engine.deid.spans import ADDRESS, AGE, DATE, EMAIL, ID, NAME, PHONE, URL

# Stand-in names: short, common in many places, and not English words.
FIRST_NAMES = [
    "Avery",
    "Blake",
    "Casey",
    "Dana",
    "Devon",
    "Elliot",
    "Emery",
    "Finley",
    "Harper",
    "Hayden",
    "Jamie",
    "Jesse",
    "Kai",
    "Kendall",
    "Logan",
    "Lane",
    "Marlow",
    "Micah",
    "Morgan",
    "Noel",
    "Oakley",
    "Parker",
    "Peyton",
    "Quinn",
    "Reese",
    "Riley",
    "Rowan",
    "Sage",
    "Sasha",
    "Shawn",
    "Sidney",
    "Skyler",
    "Tatum",
    "Toby",
    "Wren",
    "Ainsley",
    "Arden",
    "Bellamy",
    "Briar",
    "Corin",
    "Dale",
    "Ellis",
    "Emerson",
    "Frankie",
    "Hollis",
    "Jordan",
    "Kerry",
    "Leighton",
    "Lennox",
    "Merritt",
    "Nico",
    "Perry",
    "Remy",
    "Robin",
    "Sloane",
]
SURNAMES = [
    "Abbott",
    "Aldana",
    "Ambler",
    "Ashby",
    "Barlow",
    "Bellweather",
    "Birchall",
    "Blakemore",
    "Brightwell",
    "Calloway",
    "Carrow",
    "Castellane",
    "Chadwick",
    "Colfax",
    "Corliss",
    "Crandall",
    "Dalby",
    "Darrow",
    "Delacroix",
    "Dunmore",
    "Eastwick",
    "Ellery",
    "Fairbanks",
    "Farrow",
    "Fenwick",
    "Garrity",
    "Gideon",
    "Halloway",
    "Harrowgate",
    "Hartwell",
    "Holcombe",
    "Ingleby",
    "Jessop",
    "Kettering",
    "Kimball",
    "Lathrop",
    "Lockhart",
    "Loxley",
    "Mallory",
    "Marchbank",
    "Merriman",
    "Norcott",
    "Oakes",
    "Pemberton",
    "Penrose",
    "Quarles",
    "Radcliffe",
    "Ravenel",
    "Redfern",
    "Rutledge",
    "Sandoval",
    "Sexton",
    "Standish",
    "Sutcliffe",
    "Thackeray",
    "Thorne",
    "Tremaine",
    "Underhill",
    "Vance",
    "Wadsworth",
    "Whitlock",
    "Winslow",
    "Yardley",
]
STREETS = [
    "Alder",
    "Aspen",
    "Beacon",
    "Briar",
    "Cedar",
    "Chestnut",
    "Clover",
    "Dogwood",
    "Elm",
    "Fern",
    "Foxglove",
    "Hawthorn",
    "Heron",
    "Juniper",
    "Laurel",
    "Linden",
    "Magnolia",
    "Maple",
    "Meadow",
    "Orchard",
    "Osprey",
    "Poplar",
    "Quarry",
    "Sparrow",
    "Spruce",
    "Sycamore",
    "Tamarack",
    "Willow",
    "Wren",
    "Yarrow",
]
TOWNS = [
    "Ashford",
    "Bramley",
    "Brookhaven",
    "Clearwater",
    "Dunmore",
    "Eastbrook",
    "Fairmont",
    "Glenwood",
    "Harwich",
    "Kingsbridge",
    "Lakemont",
    "Millford",
    "Northgate",
    "Oakmont",
    "Pinecrest",
    "Ridgefield",
    "Riverton",
    "Stonebridge",
    "Thornbury",
    "Westfield",
]
MONTH_NAMES = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTH_ABBR = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
MONTH_ABBR["sept"] = 9
OLDEST_YEARS = 89  # a year of birth further back than this tells an age over 89

_DIGIT = re.compile(r"\d")
# A date's year, month and day as found (None where the format has none), and how to write a
# new year, month and day in the same format.
Render = Callable[[int | None, int | None, int | None], str]
Parsed = tuple[int | None, int | None, int | None, Render]
_LETTERS_RE = re.compile(r"[^\W\d_]+")


class Surrogates:
    """Surrogates under one key. ``of(type, value, salt)`` is a pure function of its
    arguments: ``salt`` picks another surrogate of the same shape when a caller needs one that
    is not already taken (engine.deid.Pseudonyms)."""

    def __init__(self, key: bytes, *, today: date | None = None) -> None:
        self.key = key
        self.today = today or date.today()

    def _stream(self, *parts: object) -> bytes:
        message = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
        return hmac.new(self.key, message, hashlib.sha256).digest()

    def _pick(self, options: list[str] | tuple[str, ...], *parts: object, salt: int = 0) -> str:
        """One of ``options``; from the 8th ``salt`` on (a document with more names than the
        list), two of them joined (Ashby-Thorne)."""
        stream = self._stream(*parts, salt)
        first = options[int.from_bytes(stream[:8], "big") % len(options)]
        if salt < 8:
            return first
        return f"{first}-{options[int.from_bytes(stream[8:16], 'big') % len(options)]}"

    def of(self, kind: str, value: str, salt: int = 0) -> str:
        if kind == NAME:
            return self.name(value, salt)
        if kind == DATE:
            return self.date(value, salt)
        if kind == AGE:
            return str(90 + int.from_bytes(self._stream(AGE, value, salt)[:2], "big") % 10)
        if kind == EMAIL:
            return f"person{self._number(EMAIL, value, salt, 6)}@example.org"
        if kind == URL:
            return f"https://example.org/{self._number(URL, value, salt, 8)}"
        if kind == ADDRESS:
            return self.address(value, salt)
        return self.characters(kind, value, salt)  # ID, PHONE and anything else

    def _number(self, kind: str, value: str, salt: int, digits: int) -> str:
        number = int.from_bytes(self._stream(kind, value.casefold(), salt)[:8], "big")
        return str(number % 10**digits).zfill(digits)

    def name(self, value: str, salt: int = 0) -> str:
        """A name word for a name word, in its case (QUILLEN, Quillen, quillen)."""
        from engine.deid import lexicon

        pool = FIRST_NAMES if lexicon.is_first_name(value) else SURNAMES
        word = self._pick(pool, NAME, value.casefold(), salt=salt)
        return _same_case(word, value)

    def characters(self, kind: str, value: str, salt: int = 0) -> str:
        """Each digit for a digit and each letter for a letter (same case), punctuation and
        spacing kept: an identifier of the same shape that says nothing of the original."""
        stream = self._stream(kind, value.upper(), salt)
        out = []
        for i, char in enumerate(value):
            byte = stream[i % len(stream)] ^ (i // len(stream) * 131 % 256)
            if char.isdigit():
                out.append(str(byte % 10))
            elif char.isalpha() and char.isascii():
                letter = chr(ord("A") + byte % 26)
                out.append(letter if char.isupper() else letter.lower())
            else:
                out.append(char)
        return "".join(out)

    def address(self, value: str, salt: int = 0) -> str:
        """Numbers for numbers, a street or town name for each capitalised word; street
        types and unit words stay ("418 Larchmont Avenue" -> "763 Juniper Avenue")."""
        from engine.deid import recognisers

        keep = re.compile(
            rf"^(?:{recognisers.STREET_TYPES}|Apt|Apartment|Suite|Ste|Unit|Room|Rm|Floor|Fl|"
            r"Bldg|Building|P\.?O\.?|Box|North|South|East|West|[NSEW])\.?$",
            re.IGNORECASE,
        )
        street = bool(re.match(r"\d", value))
        pool = STREETS if street else TOWNS
        words = []
        for i, token in enumerate(re.split(r"(\s+)", value)):
            if not token or token.isspace() or keep.match(token):
                words.append(token)
            elif _DIGIT.search(token):
                words.append(self.characters(ADDRESS, token, salt))
            elif token[:1].isalpha():
                words.append(
                    _same_case(self._pick(pool, ADDRESS, token.casefold(), i, salt=salt), token)
                )
            else:
                words.append(token)
        return "".join(words)

    def date(self, value: str, salt: int = 0) -> str:
        """A date in the same format: the year kept (every year that would tell an age over
        89 becomes the same one, as Safe Harbor groups those ages), the month and day drawn
        from the key. Unparsed shapes get their digits drawn."""
        parsed = parse_date(value)
        stream = self._stream(DATE, value, salt)
        if parsed is None:
            return self._date_parts(value, stream) or self.characters(DATE, value, salt)
        year, month, day, render = parsed
        if year is not None:
            year = self._kept_year(year)
        new_month = 1 + stream[0] % 12 if month is not None else None
        days = calendar.monthrange(year or 2001, new_month or 1)[1]
        new_day = 1 + int.from_bytes(stream[1:3], "big") % days if day is not None else None
        return render(year, new_month, new_day)

    def _date_parts(self, value: str, stream: bytes) -> str | None:
        """A date of a shape ``parse_date`` does not take whole ("Mar 4-6", "1->2 nov",
        "10/03/10/04", "March the 4th", "03/2019", "20021220"), part by part: month words
        drawn in the same case and length, days and months drawn at the same width, years
        kept (as ``date`` keeps them), the words between ("the", "of", "to") and days of the
        week left."""
        parts = [p for p in re.split(r"(\d+|[A-Za-z]+)", value) if p]
        draws = iter(stream * 2)
        out = []
        for part in parts:
            lower = part.lower()
            if lower in MONTH_NAMES or lower in MONTH_ABBR:
                month = 1 + next(draws) % 12
                name = calendar.month_name[month]
                if lower not in MONTH_NAMES or (len(part) <= 3 and lower != "may"):
                    name = calendar.month_abbr[month]
                out.append(_same_case(name, part))
            elif part.isdigit() and len(part) == 8 and part[:2] in ("18", "19", "20"):
                month = 1 + next(draws) % 12
                out.append(f"{part[:4]}{month:02d}{1 + next(draws) % 28:02d}")  # 20021220
            elif part.isdigit() and len(part) == 4 and part[:2] in ("18", "19", "20"):
                out.append(f"{self._kept_year(int(part)):04d}")
            elif part.isdigit() and len(part) == 2 and out and out[-1].endswith(("'", ", ")):
                out.append(part)  # "nov, 96", "may 15'"... a year written short, kept
            elif part.isdigit() and len(part) <= 2:
                number = 1 + next(draws) % 12  # a month or a day: 12 fits both
                out.append(f"{number:02d}" if len(part) == 2 else str(number))
            elif lower in ("st", "nd", "rd", "th") and out and out[-1].isdigit():
                out.append(_same_case(_suffix(int(out[-1])), part))
            elif part.isdigit() or (part.isalpha() and lower not in _DATE_GLUE):
                return None
            else:
                out.append(part)
        return "".join(out)

    def _kept_year(self, year: int) -> int:
        """The year a date keeps: itself, or one year for every age over 89."""
        if year < self.today.year - OLDEST_YEARS:
            return self.today.year - OLDEST_YEARS - 1
        return year


# Words a date's parts are written with.
_DATE_GLUE = frozenset(
    (
        *("the", "of", "to", "thru", "through", "till", "until", "and"),
        *(d.lower() for d in calendar.day_name),
        *(d.lower() for d in calendar.day_abbr),
        *("tues", "thur", "thurs"),
    )
)


def _same_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like.islower():
        return word.lower()
    return word


_NUMERIC = re.compile(
    r"^(?P<a>\d{1,4})(?P<s1>[/.-])(?P<b>\d{1,2})(?:(?P<s2>[/.-])(?P<c>\d{2,4}))?$"
)
_NAMED = re.compile(
    r"^(?:(?P<d1>\d{1,2})(?P<o1>st|nd|rd|th)?(?P<of>[ \t]+of)?(?P<g1>[ \t-]+))?"
    r"(?P<month>[A-Za-z]+)(?P<dot>\.?)"
    r"(?:(?P<g2>[ \t]+)(?P<d2>\d{1,2})(?P<o2>st|nd|rd|th)?)?"
    r"(?:(?P<g3>,?[ \t-]+(?:of[ \t]+)?)(?P<y>'?\d{2,4}))?$",
    re.IGNORECASE,
)


def parse_date(value: str) -> Parsed | None:
    """(year, month, day, render) for the date shapes the recognisers find, where ``render``
    writes a new year, month and day in the original's format; None when not understood."""
    numeric = _NUMERIC.match(value)
    if numeric:
        return _parse_numeric(numeric)
    named = _NAMED.match(value)
    if named:
        return _parse_named(named)
    ordinal = re.match(r"^(\d{1,2})(st|nd|rd|th)$", value, re.IGNORECASE)
    if ordinal:
        return None, None, int(ordinal[1]), lambda y, m, d: f"{d}{_suffix(d)}"
    return None


def _parse_numeric(m: re.Match[str]) -> Parsed | None:
    a, b, c = m["a"], m["b"], m["c"]
    s1, s2 = m["s1"], m["s2"] or ""
    if len(a) == 4:  # 2025-03-14
        if not c:
            return None
        return int(a), int(b), int(c), lambda y, mo, d: f"{y:04d}{s1}{mo:02d}{s2}{d:02d}"

    def width(n: int, like: str) -> str:
        return f"{n:02d}" if len(like) == 2 else str(n)

    first, second = int(a), int(b)
    day_first = first > 12  # 14/03/2025
    if c is None:
        if second > 31:  # 8/84: a month and a two-digit year
            year = 1900 + second if second > 30 else 2000 + second
            return year, first, None, lambda y, mo, d: f"{width(mo, a)}{s1}{y % 100:02d}"
        if day_first:
            return None, second, first, lambda y, mo, d: f"{width(d, a)}{s1}{width(mo, b)}"
        return None, first, second, lambda y, mo, d: f"{width(mo, a)}{s1}{width(d, b)}"
    year = int(c) if len(c) == 4 else (1900 + int(c) if int(c) > 30 else 2000 + int(c))
    if day_first:
        return (
            year,
            second,
            first,
            lambda y, mo, d: f"{width(d, a)}{s1}{width(mo, b)}{s2}{_year(y, c)}",
        )
    return year, first, second, lambda y, mo, d: f"{width(mo, a)}{s1}{width(d, b)}{s2}{_year(y, c)}"


def _year(year: int, like: str) -> str:
    return f"{year % 100:02d}" if len(like) == 2 else f"{year:04d}"


def _parse_named(m: re.Match[str]) -> Parsed | None:
    word = m["month"]
    month = MONTH_NAMES.get(word.lower()) or MONTH_ABBR.get(word.lower())
    if month is None:
        return None
    day_text = m["d1"] or m["d2"]
    year_text = m["y"]
    year = None
    if year_text:
        digits = year_text.lstrip("'")
        year = (
            int(digits)
            if len(digits) == 4
            else (1900 + int(digits) if int(digits) > 30 else 2000 + int(digits))
        )
    full = (word.lower() in MONTH_NAMES and len(word) > 3) or word.lower() == "may"

    def render(y: int | None, mo: int | None, d: int | None) -> str:
        name = calendar.month_name[mo or 1] if full else calendar.month_abbr[mo or 1]
        name = _same_case(name, word)
        out = ""
        if m["d1"]:
            out += f"{d}{_suffix(d) if m['o1'] else ''}{m['of'] or ''}{m['g1']}"
        out += name + m["dot"]
        if m["d2"]:
            out += f"{m['g2']}{d}{_suffix(d) if m['o2'] else ''}"
        if year_text:
            out += (
                m["g3"]
                + ("'" if year_text.startswith("'") else "")
                + _year(y or 2000, year_text.lstrip("'"))
            )
        return out

    return year, month, int(day_text) if day_text else None, render


def _suffix(day: int | None) -> str:
    if day is None:
        return ""
    if 10 <= day % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


__all__ = ["ID", "PHONE", "Surrogates", "parse_date"]
