# Templates and word lists are data: long lines and other scripts are what they hold.
# ruff: noqa: E501, RUF001
"""Generated clinical notes with surrogate PHI, annotated as they are written: the training
data of the statistical recogniser (``engine.deid.statistical``) and a gold set of our own
(``manage.py bench_deid --generated``). Everything here is Vetted's own writing: templates of
the shapes clinical paperwork and nursing notes give PHI, filled with names from the US
Census lists the ``names`` package ships (public domain), invented names, names in other
scripts, and numbers drawn at random. No patient, no corpus.

Deterministic: ``corpus(seed=..)`` gives the same notes every time. Templates are split in
two families (``family="train"`` / ``"held"``); the held family's sentences are never used to
train, so scoring on them says something about wording the model has not seen.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import resources

from engine.deid import lexicon
from engine.deid.spans import ADDRESS, AGE, DATE, EMAIL, ID, NAME, PHONE, Phi

VERSION = "1"

# Names in other scripts (written for Vetted; a given name and a family name each).
FOREIGN_NAMES = [
    ("伟", "王"),
    ("秀英", "李"),
    ("娜", "张"),
    ("敏", "刘"),
    ("翔", "陈"),
    ("Иван", "Петров"),
    ("Ольга", "Смирнова"),
    ("Дмитрий", "Кузнецов"),
    ("Анна", "Волкова"),
    ("محمد", "الحسن"),
    ("فاطمة", "الزهراء"),
    ("Γιώργος", "Παπαδόπουλος"),
    ("Ελένη", "Νικολάου"),
    ("राहुल", "शर्मा"),
    ("प्रिया", "पटेल"),
    ("はなこ", "さとう"),
    ("太郎", "山田"),
    ("지훈", "김"),
    ("서연", "박"),
    ("יוסי", "כהן"),
    ("Ngọc", "Nguyễn"),
    ("Şule", "Yılmaz"),
]
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "re",
    "sa",
    "tu",
    "vel",
    "dor",
    "an",
    "bri",
    "cor",
    "fen",
    "gal",
    "hol",
    "jus",
    "kem",
    "lin",
    "mor",
    "nes",
    "par",
    "quin",
    "ros",
]
_STREET_WORDS = [
    "Mill",
    "Kowhai",
    "Church",
    "Station",
    "Harbour",
    "Ridge",
    "Linden",
    "Rowan",
    "Totara",
    "Maple",
    "Alder",
    "Birch",
]
_STREET_TYPES = [
    "Street",
    "Lane",
    "Road",
    "Avenue",
    "Drive",
    "Crescent",
    "Close",
    "Terrace",
    "Way",
    "Place",
    "Court",
]
_TOWNS = [
    "Ponsonby",
    "Leeds",
    "Taupo",
    "Lyon",
    "Rennes",
    "Dunedin",
    "Halifax",
    "Norwich",
    "Springfield",
    "Riverton",
    "Ashby",
    "Kelso",
    "Wanaka",
    "Nantes",
    "Brigham",
    "Milford",
    "Oakdale",
    "Fairview",
]
_STATES = ["IL", "MA", "NY", "CA", "TX", "OH", "PA", "MI"]


@cache
def _surnames() -> list[str]:
    text = (resources.files(lexicon.NAME_LIST_PACKAGE) / "dist.all.last").read_text("utf-8")
    return [line.split()[0] for line in text.splitlines()[:8000] if line.strip()]


@cache
def _first_names() -> list[str]:
    return sorted(lexicon.first_names())


class Note:
    """A note being written: text and its gold spans."""

    def __init__(self, rng: random.Random, case: str) -> None:
        self.rng = rng
        self.case = case  # "title", "upper" or "lower": how this note writes names
        self.parts: list[str] = []
        self.gold: list[Phi] = []
        self.size = 0
        self.people: dict[str, tuple[str, str]] = {}

    def put(self, text: str, kind: str | None = None) -> None:
        if kind:
            self.gold.append(Phi(self.size, self.size + len(text), kind, "gold"))
        self.parts.append(text)
        self.size += len(text)

    def text(self) -> str:
        return "".join(self.parts)

    # -- values --------------------------------------------------------------------------

    def _case(self, word: str, case: str | None = None) -> str:
        case = case or self.case
        if case == "upper":
            return word.upper()
        if case == "lower":
            return word.lower()
        return word[:1].upper() + word[1:].lower()

    def person(self, role: str) -> tuple[str, str]:
        """The same person for the same role throughout the note."""
        if role not in self.people:
            r = self.rng.random()
            if r < 0.12:
                first, last = self.rng.choice(FOREIGN_NAMES)
            elif r < 0.3:
                first = self.rng.choice(_first_names())
                last = "".join(self.rng.choice(_SYLLABLES) for _ in range(self.rng.randint(2, 3)))
            else:
                first, last = self.rng.choice(_first_names()), self.rng.choice(_surnames())
            self.people[role] = (first, last)
        return self.people[role]

    def first(self, role: str, case: str | None = None) -> str:
        return self._case(self.person(role)[0], case)

    def last(self, role: str, case: str | None = None) -> str:
        return self._case(self.person(role)[1], case)

    def date(self) -> str:
        y, m, d = self.rng.randint(1930, 2025), self.rng.randint(1, 12), self.rng.randint(1, 28)
        months = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ]
        return self.rng.choice(
            [
                f"{m:02d}/{d:02d}/{y}",
                f"{m}/{d}/{y % 100:02d}",
                f"{d}.{m}.{y}",
                f"{y}-{m:02d}-{d:02d}",
                f"{months[m - 1]} {d}, {y}",
                f"{d} {months[m - 1][:3]} {y}",
                f"{y}{m:02d}{d:02d}",
                f"{m}/{d}",
                f"{months[m - 1][:3].lower()} {d}",
                f"{d}-{months[m - 1][:3]}-{y}",
            ]
        )

    def ident(self) -> str:
        rng = self.rng

        def digits(n: int) -> str:
            return "".join(rng.choice("0123456789") for _ in range(n))

        def letters(n: int) -> str:
            return "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(n))

        return rng.choice(
            [
                f"SP:{digits(2)}:{digits(6)}",
                f"{letters(3)}{digits(4)}",
                f"{digits(4)}/{digits(5)}",
                f"{letters(1)}{digits(2)}-{digits(6)}",
                digits(8),
                digits(7),
                f"{digits(3)}-{digits(3)}-{digits(3)}",
                f"{letters(2)}/{digits(2)}/{digits(4)}",
                f"{digits(3)} {digits(3)} {digits(4)}",
                f"{letters(1)}{digits(6)}",
                f"{digits(2)}-{letters(1)}-{digits(5)}",
            ]
        )

    def phone(self) -> str:
        rng = self.rng

        def d(n: int) -> str:
            return "".join(rng.choice("0123456789") for _ in range(n))

        return rng.choice(
            [
                f"({d(3)}) {d(3)}-{d(4)}",
                f"{d(3)}-{d(3)}-{d(4)}",
                f"+44 20 {d(4)} {d(4)}",
                f"+64 9 {d(3)} {d(4)}",
                f"0{d(2)} {d(3)} {d(4)}",
                f"+33 1 {d(2)} {d(2)} {d(2)} {d(2)}",
                f"x{d(4)}",
                f"{d(1)}-{d(4)}",
                f"{d(3)}.{d(3)}.{d(4)}",
            ]
        )

    def address(self) -> list[tuple[str, str | None]]:
        """An address as parts (text, type or None for kept words such as a state)."""
        rng = self.rng
        n = rng.randint(1, 240)
        street = f"{rng.choice(_STREET_WORDS)} {rng.choice(_STREET_TYPES)}"
        town = rng.choice(_TOWNS)
        form = rng.randrange(6)
        if form == 0:  # French
            return [
                (
                    f"{n} rue des {rng.choice(['Lilas', 'Ormes', 'Moulins'])}, {rng.randint(10, 95)}0{rng.randint(10, 99)} {town}",
                    ADDRESS,
                )
            ]
        if form == 1:  # New Zealand
            return [
                (
                    f"{n} {street}, {town}, {rng.choice(['Auckland', 'Wellington'])} {rng.randint(1000, 9999)}",
                    ADDRESS,
                )
            ]
        if form == 2:  # United Kingdom
            pc = f"{rng.choice(['LS', 'NR', 'SW', 'M', 'EH'])}{rng.randint(1, 19)} {rng.randint(1, 9)}{rng.choice('ABDEFGHJ')}{rng.choice('LNPQRSTU')}"
            return [(f"Flat {rng.randint(1, 9)}, {n} {street}, {town} {pc}", ADDRESS)]
        if form == 3:  # a US city and state, no ZIP
            return [(town, ADDRESS), (f" {rng.choice(_STATES)}", None)]
        if form == 4:
            return [
                (f"{n} {street}, {town}", ADDRESS),
                (f", {rng.choice(_STATES)} ", None),
                (f"{rng.randint(10000, 99999)}", ADDRESS),
            ]
        return [(f"{n} {street.lower()}", ADDRESS)]


# A template is text with {slots}: p_first/p_last (the patient), d_last/d_first (a
# clinician), r_first (a relative), n_first (a nurse or therapist), date, id, phone, addr,
# age (over 89), email; "!": the slot in capitals, "_": in lower case, whatever the note.
TRAIN = [
    "Pt: {p_first} {p_last}   Hospital number: {id}",
    "Patient: {p_last!}, {p_first}    MRN: {id}    DOB: {date}",
    "Name: {p_first} {p_last}  NHI: {id}  Date of birth: {date}",
    "{p_first} {p_last} seen in clinic on {date}; spoke with dtr {r_first_} at length.",
    "per {d_last_} will hold heparin tonight, recheck ptt at 2200.",
    "{r_first} and {r_first2} in to visit, updated on plan of care.",
    "dr {d_last_} aware of k 3.2, repleted with kcl 40 meq po.",
    "Seen with Dr. {d_last}. Plan discussed with pt and wife {r_first}.",
    "Family: husband {r_first_} called x2, phone {phone}, will be in tomorrow.",
    "Address: {addr}",
    "Lives at {addr} with her son {r_first}.",
    "Specimen {id} received {date}, accession {id2}.",
    "Ref {id}    Our ref: {id2}",
    "Pt is a {age} yo woman admitted {date} from home.",
    "{n_first!} {n_last!} RN",
    "RESP: LS coarse, sx for thick tan secretions. {n_first!} RRT",
    "Call {d_first} {d_last} at {phone} with results.",
    "Electronically signed: {d_first} {d_last}, MD {date}",
    "{p_last_}_{p_first_}_pathology_{date8}.pdf",
    "scan {p_first_} {p_last_} {id}.pdf",
    "患者：{p_full_foreign}   病历号：{id}",
    "Пациент: {p_full_foreign}, дата рождения {date}",
    "Reviewer note: called {p_first_} about results, follow up with {d_last_} next week.",
    "talked w/ {r_first_}, pt's sister, who will bring clothes.",
    "{p_first} ambulated to chair with assist of 1, tolerated well.",
    "Email from {p_first_}.{p_last_}@{domain} re appointment {date}.",
    "Copy to: {d_first} {d_last}, {addr}",
    "Hi {p_first}, your results from {date} are normal. - {d_first}",
    "{d_last}, {d_first} (Attending)  Pager {phone}",
]
HELD = [
    "Pt name: {p_first} {p_last}    Unit no: {id}    Ward 4B",
    "Patient {p_first_} {p_last_} came in with her daughter {r_first_}.",
    "Discussed with {d_first} from oncology; {d_last} to call back on {phone}.",
    "NOK: {r_first} {p_last} (son), {addr}",
    "Specimen no. {id}, collected {date}.",
    "{age} year old man, lives alone in {addr}.",
    "{n_first!} RN / {d_last!} MD",
    "Dear {d_first}, thank you for seeing {p_first} {p_last} on {date}.",
    "file: {p_last_}-{p_first_}-{date8}.tif",
    "المريض: {p_full_foreign}",
    "notified {d_last_} re: bp 80s, bolus ordered.",
    "mom {r_first_} at bedside, asking appropriate questions.",
]
FILLER = [
    "Neuro: alert and oriented x3, MAE, follows commands.",
    "CV: NSR 80s-90s, no ectopy. BP 110/60.",
    "RESP: on PS 10/5, FiO2 40%, sats 97%.",
    "GI: abd soft, +BS, tolerating TF at goal.",
    "GU: foley draining clear yellow urine, 50-100cc/hr.",
    "Pain 4/10, given morphine 2 mg iv with relief.",
    "Plan: continue to monitor, wean vent as tolerated.",
    "FINAL DIAGNOSIS: invasive ductal carcinoma, Nottingham grade 2.",
    "ER positive (90%), PR positive, HER2 negative (IHC 1+).",
    "Gleason score 3+4=7, 2/12 cores positive.",
    "Will continue current plan. Call with questions.",
    "Lasix 20 mg IV given at 1400, good response.",
    "Skin: intact, heels elevated. Turned q2h.",
    "Social: Pt lives with family, independent at baseline.",
    "IMPRESSION: No acute intracranial abnormality.",
    "Hct 28.4, transfused 1 unit PRBC.",
    "Temp max 38.2, cultures sent, started on vanc and zosyn.",
    "Mother Nature Pharmacy refill requested.",
    "Seen by PT and OT today; up to chair for 2 hours.",
    "Amber Alert drill at 1500 per hospital policy.",
]
# Filler with words the model cannot have seen that are no PHI: drug names and misspellings,
# which nursing notes are full of ("captopril", "extremeties", "dopplerable"). Without them
# every unknown word of the generated notes was a name, and the model read any word it did
# not know as one.
WORD_FILLER = [
    "Started on {word} 25 mg po bid, tolerating well.",
    "Cont {word} gtt, {word2} held for low BP.",
    "Lungs {word} at bases, sxn for thick tan secretions.",
    "Pt {word} and {word2} overnight, family in this eve.",
    "Allergies: {word}, {word2}.",
    "Skin {word} on coccyx, {word2} applied.",
    "{word} drip titrated to MAP > 65.",
    "ABD {word}, +BS, {word2} given with good effect.",
    "Remains {word}, will {word2} in am per team.",
    "{word} and {word2} restarted via NGT.",
]
_DRUG_SUFFIXES = [
    "olol",
    "pril",
    "mycin",
    "azole",
    "cillin",
    "ine",
    "statin",
    "oxacin",
    "idone",
    "amide",
    "ium",
    "afil",
    "ide",
    "al",
]


@cache
def _known_words() -> list[str]:
    return sorted(w for w in lexicon._words(lexicon._CLINICAL) if w.isalpha() and len(w) >= 5)


def _unknown_word(rng: random.Random) -> str:
    """A word no list holds and no PHI: a misspelt clinical word or an invented drug name."""
    if rng.random() < 0.5:
        word = list(rng.choice(_known_words()))
        i = rng.randrange(1, len(word) - 1)
        op = rng.randrange(3)
        if op == 0:
            del word[i]
        elif op == 1:
            word.insert(i, word[i])
        else:
            word[i], word[i + 1] = word[i + 1], word[i]
        return "".join(word)
    stem = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 2)))
    return stem + rng.choice(_DRUG_SUFFIXES)


def _word(note: Note, slot: str, case: str | None) -> None:
    word = _unknown_word(note.rng)
    if note.case == "title":  # drugs and words in prose: lower case, or capitalised
        note.put(word if note.rng.random() < 0.6 else word.capitalize())
    else:
        note.put(note._case(word, case))


_SLOT = re.compile(r"\{(?P<slot>[a-z_0-9]+?)(?P<case>[!_]?)\}")
_DOMAINS = ["example.org", "mail.example.com", "clinic.example.net"]


def _fill(note: Note, template: str) -> None:
    at = 0
    for match in _SLOT.finditer(template):
        note.put(template[at : match.start()])
        at = match.end()
        slot = match.group("slot")
        case = {"!": "upper", "_": "lower"}.get(match.group("case"))
        _SLOTS[slot.rstrip("0123456789") if slot[-1].isdigit() and slot != "date8" else slot](
            note, slot, case
        )
    note.put(template[at:])


def _name(role: str, part: str) -> Callable[[Note, str, str | None], None]:
    def put(note: Note, slot: str, case: str | None) -> None:
        key = role + slot[-1] if slot[-1].isdigit() else role
        value = note.first(key, case) if part == "first" else note.last(key, case)
        note.put(value, NAME)

    return put


def _foreign(note: Note, slot: str, case: str | None) -> None:
    first, last = note.rng.choice(FOREIGN_NAMES)
    family_first = note.rng.random() < 0.5
    joined = bool(re.match(r"[\u4e00-\u9fff]", first)) and family_first  # 王伟: no space
    for i, part in enumerate((last, first) if family_first else (first, last)):
        if i and not joined:
            note.put(" ")
        note.put(part, NAME)


def _address(note: Note, slot: str, case: str | None) -> None:
    for text, kind in note.address():
        note.put(text, kind)


def _date8(note: Note, slot: str, case: str | None) -> None:
    note.put(
        f"{note.rng.randint(1990, 2025)}{note.rng.randint(1, 12):02d}{note.rng.randint(1, 28):02d}",
        DATE,
    )


_SLOTS: dict[str, Callable[[Note, str, str | None], None]] = {
    "p_first": _name("p", "first"),
    "p_last": _name("p", "last"),
    "d_first": _name("d", "first"),
    "d_last": _name("d", "last"),
    "r_first": _name("r", "first"),
    "n_first": _name("n", "first"),
    "n_last": _name("n", "last"),
    "p_full_foreign": _foreign,
    "date": lambda note, slot, case: note.put(note.date(), DATE),
    "date8": _date8,
    "id": lambda note, slot, case: note.put(note.ident(), ID),
    "phone": lambda note, slot, case: note.put(note.phone(), PHONE),
    "addr": _address,
    "age": lambda note, slot, case: note.put(str(note.rng.randint(90, 104)), AGE),
    "domain": lambda note, slot, case: note.put(note.rng.choice(_DOMAINS), EMAIL),
    "word": _word,
}


def note(rng: random.Random, templates: list[str]) -> tuple[str, list[Phi]]:
    """One note: a few template lines among clinical filler lines."""
    written = Note(rng, rng.choice(["title", "title", "upper", "lower"]))
    lines = rng.sample(templates, k=min(len(templates), rng.randint(2, 5)))
    lines += rng.sample(FILLER, k=rng.randint(2, 5))
    lines += rng.sample(WORD_FILLER, k=rng.randint(1, 3))
    rng.shuffle(lines)
    for line in lines:
        if written.case == "upper" and line in FILLER:
            written.put(line.upper())
        elif written.case == "upper" and line in WORD_FILLER:
            _fill(written, re.sub(r"\{[A-Z0-9_!]+\}", lambda m: m.group().lower(), line.upper()))
        else:
            _fill(written, line)
        written.put("\n" if rng.random() < 0.7 else "  ")
    text = written.text()
    # An e-mail's whole address is the PHI: widen the domain span over the local part.
    gold: list[Phi] = []
    for span in written.gold:
        if span.type == EMAIL:
            start = span.start
            while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._@"):
                start -= 1
            gold = [g for g in gold if not (g.start >= start and g.end <= span.end)]
            gold.append(Phi(start, span.end, EMAIL, "gold"))
        else:
            gold.append(span)
    return text, gold


def corpus(
    *, family: str = "train", count: int = 1500, seed: int = 36
) -> Iterator[tuple[str, list[Phi]]]:
    """``count`` notes from the ``train`` or ``held`` templates, the same for the same seed."""
    rng = random.Random(f"{seed}-{family}")
    templates = TRAIN if family == "train" else HELD
    for _ in range(count):
        yield note(rng, templates)


__all__ = [
    "AGE",
    "DATE",
    "EMAIL",
    "HELD",
    "ID",
    "NAME",
    "PHONE",
    "TRAIN",
    "VERSION",
    "corpus",
    "note",
]
