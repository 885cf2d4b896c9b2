"""What a text is about, learned rather than listed (issue 32): a report or note about one patient,
of which type, or paperwork about reports (a leaflet walking through an example report, a
referral, an appointment or prior-authorisation letter, a test directory, a consent or trial
sheet, an audit or peer-review record, a policy, a bill).

Two linear models (logistic regressions) over hand features that say whether the text reports
findings about one patient: a patient named or numbered, a date of service, an author or a
sign-out, results stated with units, the writer's voice about one patient, against text
addressed to a reader ("you", "your"), questions it answers, people in general, examples and
samples, blanks to fill in, prices and requests. The coefficients ship in ``data/
discriminator.json``, trained by ``manage.py bench_reports --train-discriminator`` on the
look-alike generator's training templates, gathered public paperwork (patient-education pages)
and the development corpus's dev split (docs/security.md); the file holds numbers, no text.
When it is missing or its fingerprint no longer matches these signals, the model is trained at
first use from the generator's templates alone (about a second).

Callers ask two questions of a ``Reading``:
* ``not_a_report(doc_type)``: the text is paperwork about a report of that type, not one;
* ``other_content(doc_type)``: the text's content is of another type than its claimed one
  (a consult note with FINDINGS and IMPRESSION is a note, whatever its headers say).
Both answer with evidence (the features that weighed most) or None, and both are deliberately
confident before they speak: a real report read as paperwork would escalate for nothing.

Pure: no Django.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import math
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine.schemas import DocType

logger = logging.getLogger(__name__)

# The model as trained by ``manage.py bench_reports --train-discriminator`` (the generator's
# training templates, gathered public negatives and the development corpus's dev split; see
# docs/security.md): coefficients only, no text. Without it, or when it is stale, the model is
# trained from the generator alone at first use.
MODEL_FILE = Path(__file__).with_name("data") / "discriminator.json"
PER_TEMPLATE = 15  # training documents per template
SEED = 32
# How sure the model must be before it says "not a report": paperwork at least MIN_PAPERWORK.
MIN_PAPERWORK = 0.9
# ... and a report type only when the text does not read, this surely, as an encounter note.
MIN_NOTE = 0.9
EVIDENCE_FEATURES = 4
PER_SIGNAL = 3  # features per signal: present, rate per 100 words, log count
PENALTY = 3.0  # L2: keeps any one signal from deciding alone
MIN_KINDS = 2  # kinds of paperwork signal that must weigh in before "not a report"
# ... or a table of results: this many values with reference ranges (a panel, a semen analysis,
# whatever SPECIMEN and DIAGNOSIS lines stand above it).
MIN_RANGES = 3
MIN_TABLE_PAPERWORK = 0.8
# A clinical note with none of these (the signs that tie a text to one patient's encounter) is
# vetoed as paperwork from this probability on.
ANCHORS = ("a patient named or numbered", "a date of service", "an author or sign-out")
MIN_ANONYMOUS_NOTE = 0.5
RANGES = "reference ranges"
MEASUREMENTS = "measurements"
MAX_TABLE_MEASUREMENTS = 1
MAX_CHARS = 20000  # a long document's head says what it is; the rest costs time only
_I = re.IGNORECASE
_IM = re.IGNORECASE | re.MULTILINE
_WORDS = re.compile(r"[A-Za-z]{2,}")


@dataclass(frozen=True)
class Signal:
    name: str  # what a reviewer reads
    pattern: re.Pattern[str]
    reports: bool  # a sign of a report about one patient (else of paperwork about reports)
    distinct: bool = False  # count the different wordings found, not every occurrence


SIGNALS: tuple[Signal, ...] = (
    # About one patient: who, when, who signed, and findings stated as results.
    Signal(
        "a patient named or numbered",
        re.compile(
            # (spaces and tabs, not \s: a run of blank lines must not be tried from every line)
            r"^[ \t]*(?:patient(?:'s)?(?:[ \t]+name)?|name|pt)[ \t]*:"
            r"|\b(?:MRN|DOB|date of birth|accession|medical record)\b",
            _IM,
        ),
        True,
    ),
    Signal(
        "a date of service",
        re.compile(
            r"\b(?:date of (?:service|visit|exam|operation|procedure|admission|discharge)|exam date"
            r"|collected|received|admitted|discharged|performed|report date|clinic date|seen on)\b",
            _I,
        ),
        True,
    ),
    Signal(
        "an author or sign-out",
        re.compile(
            r"\b(?:electronically signed|signed out|dictated|transcribed|reported by|signed by"
            r"|attending|surgeon|pathologist|radiologist|laboratory director|M\.?D\.?)\b",
            _I,
        ),
        True,
    ),
    Signal(
        "findings stated as results",
        re.compile(
            r"\b(?:shows?|showed|demonstrates?|reveals?|revealed|is seen|are seen|consistent with"
            r"|no evidence of|measures?|measuring|unremarkable|within normal limits|positive for"
            r"|negative for|detected|identified|noted|denies|complains? of|presents? with"
            r"|was (?:placed|performed|given|started|admitted))\b",
            _I,
        ),
        True,
    ),
    Signal(
        "measurements", re.compile(r"\b\d+(?:\.\d+)?\s?(?:mm|cm|mL|mg|mmHg|kg|bpm)\b", _I), True
    ),
    Signal(
        "clinical history",
        re.compile(
            r"\b(?:year-old|y/o|yo|history of|past medical|medications?|allergies|vital signs"
            r"|examination|exam|impression|assessment|plan|diagnosis|findings)\b",
            _I,
        ),
        True,
    ),
    Signal(
        "variants and biomarkers",
        re.compile(
            r"\b(?:c\.\d+[ACGT_>+\-\d]*[ACGTdelinsup]*|p\.[A-Z][a-z]{0,2}\d+\w*"
            r"|[A-Z][A-Z0-9]{1,7}\s+[A-Z]\d{2,4}[A-Z*]|muts?/mb|mutations/mb|ms-stable"
            r"|microsatellite (?:stable|instab\w+)|allele frequency|VAF)\b",
            _I,
        ),
        True,
    ),
    Signal(
        "one patient's story",
        re.compile(
            r"\b(?:the patient|this patient|patient (?:is|was|has|had|states|reports|denies)"
            r"|he|she|(?-i:(?:Mr|Mrs|Ms)\.? [A-Z][a-z]+))\b"
            # the writer's own voice about this patient (a leaflet says "you" and "we")
            r"|\bI (?:had|saw|spent|examined|discussed|reviewed|placed|ordered|was"
            r"|recommend(?:ed)?|felt|noted)\b",
            _I,
        ),
        True,
        # Counted by its different wordings, not its occurrences: the same few sentences
        # pasted into a leaflet ("He was well. I examined the patient.") must not outweigh it.
        distinct=True,
    ),
    # About reports in general, or asking for something.
    Signal("addressed to a reader", re.compile(r"\b(?:you|your|yours)\b", _I), False),
    # General health information: a page about a condition, a test, a gene or a medicine asks
    # its own questions and speaks of people in general, where a note speaks of one patient.
    # (A question word first: a checklist's "Margins involved?" is no question to a reader.)
    Signal(
        "questions it answers",
        re.compile(
            r"^[ \t]*(?:Q:\s*)?(?:what|how|who|when|why|where|which|can|could|is|are|do|does"
            r"|should|will|am)\b[^\n?]{2,150}\?[ \t]*$",
            _IM,
        ),
        False,
    ),
    Signal(
        "people in general",
        re.compile(
            r"\b(?:people|persons|individuals|patients|children|adults|women|men|anyone|someone"
            r"|most|many)\s+(?:with|who|may|can|might|often|usually|should|will|have|are|get"
            r"|develop|need)\b|\b(?:can|may|might) (?:cause|lead to|help|increase|lower|reduce"
            r"|prevent|affect|be (?:caused|used|treated))\b"
            r"|\b(?:is|are) (?:a|an) (?:common |rare )?"
            r"(?:type|kind|form|group|condition|disorder|disease)s? (?:of|in|that)\b"
            r"|\brisk factors?\b|\bsigns and symptoms\b|\b(?:symptoms|causes|treatments?|options)"
            r" (?:may |can )?include\b|\btreatment options?\b|\bpercent of\b",
            _I,
        ),
        False,
    ),
    Signal(
        "examples and explanations",
        re.compile(
            r"\b(?:example|sample (?:report|result)|made-up|invented|for information|leaflet"
            r"|guide|what does|explains?|explained|means?|information sheet)\b",
            _I,
        ),
        False,
    ),
    Signal("blanks to fill in", re.compile(r"_{3,}|\[\s?\]|☐"), False),
    Signal(
        "prices and charges",
        re.compile(
            r"\$\s?\d|\bprices?\b|\bcharges?\b|\bCPT\b|\bbill(?:ed|ing)?\b|amount due|self-pay"
            r"|insurance|insurer|member id",
            _I,
        ),
        False,
    ),
    Signal(
        "requests and bookings",
        re.compile(
            # Not "approved" (an FDA-approved drug) nor a sequencing depth's "coverage".
            r"\b(?:please|request(?:ed|ing)?|referr(?:al|ing)|appointment|booked|approve|approval"
            r"|coverage (?:for|of|decision)|insurance coverage|authori[sz]ation"
            r"|medical necessity|invited|arrival)\b",
            _I,
        ),
        False,
    ),
    Signal(
        "consent and research",
        re.compile(
            r"\b(?:I (?:understand|agree|confirm|consent)|consent|research|study|participants?"
            r"|withdraw|protocol|take part)\b",
            _I,
        ),
        False,
    ),
    Signal(
        "audit and policy",
        re.compile(
            r"\b(?:audit|standard|quarter|median|re-audit|recommendations|quality (?:assurance"
            r"|programme|program)|policy|scope|responsibilities|shall|compliance|meeting"
            r"|minutes|themes|learning points?)\b",
            _I,
        ),
        False,
    ),
    # A case review names a discrepancy whether it is a peer-review record or a report's own
    # quality checklist (TCGA's): a signal of its own, for the model to weigh.
    Signal(
        "case review",
        re.compile(r"\b(?:peer review|reviewer|concordant|discrepanc(?:y|ies)|qualified)\b", _I),
        False,
    ),
    Signal(
        "a test catalogue",
        re.compile(
            r"\b(?:turnaround|TAT|test code|specimen requirements?|per test|client services"
            r"|catalogue|directory|genes analysed|ordering (?:information|requirements?)"
            r"|ordering:)",
            _I,
        ),
        False,
    ),
    Signal(
        "reference ranges",
        re.compile(
            r"\((?:ref\s*)?[<>≥≤=]*\s*\d+(?:\.\d+)?(?:\s*-\s*\d+(?:\.\d+)?)?\)|\(negative\)", _I
        ),
        False,
    ),
)


# A note or a report? An encounter with a patient (a complaint, a history, an examination, a
# plan, a disposition) against a study or specimen read (a technique, views, a comparison, a
# specimen's gross and microscopic description, an assay). A note may quote findings and an
# impression; a report may state a history: the model weighs them.
NOTE_SIGNALS: tuple[Signal, ...] = (
    Signal(
        "an encounter",
        re.compile(
            r"\b(?:presents?|presented|complains?|complaint|history:|seen (?:by|in|today)|visit"
            r"|fell|follow-up|follow up|review in|disposition|discharged? home|plan:|plan\b"
            r"|advised|prescribed|start(?:ed)? (?:on )?\w+ \d|medications?|allergies"
            r"|examination|exam:|vital signs|blood pressure|pulse|alert|oriented|tender"
            r"|subjective|objective|assessment)\b",
            _I,
        ),
        False,
    ),
    Signal(
        "a study or specimen read",
        re.compile(
            r"\b(?:technique|comparison|views?|contrast|series|image|axial|sagittal|coronal"
            r"|radiograph|ultrasound|sonograph\w*|gross description|microscopic|specimen|stain"
            r"|immunohisto\w*|margins?|assay|sequencing|variant|allele|exon|dictated|reported"
            r"|examination of the|no acute)\b",
            _I,
        ),
        True,
    ),
)


def signals_of(text: str, signals: tuple[Signal, ...] = SIGNALS) -> dict[str, int]:
    """How often each signal occurs in ``text`` (a ``distinct`` one: in how many wordings)."""
    head = text[:MAX_CHARS]
    return {
        s.name: (
            len({m.group(0).casefold() for m in s.pattern.finditer(head)})
            if s.distinct
            else len(s.pattern.findall(head))
        )
        for s in signals
    }


def _row(counts: dict[str, int], words: int, signals: tuple[Signal, ...]) -> list[float]:
    """Each signal as present (0/1), as a rate per 100 words, capped (a long report's many
    findings must not outweigh everything, nor a leaflet's length dilute its "you"), and as a
    log count (forty general statements in a long page say more than three)."""
    row = []
    for s in signals:
        n = counts[s.name]
        row.append(1.0 if n else 0.0)
        row.append(min(3.0, 100.0 * n / max(words, 1)))
        row.append(math.log1p(n) / 2.0)
    return row


@dataclass(frozen=True)
class Reading:
    paperwork: float  # the probability that the text is paperwork about reports, not a report
    note: float  # the probability that a report or note is an encounter note, not a report
    signals: dict[str, int]
    evidence: tuple[str, ...]  # the signals that weighed most towards paperwork

    def not_a_report(self, doc_type: DocType) -> str | None:
        """Why the text is paperwork about a ``doc_type`` report (or note) rather than one,
        or None when the model is not sure of it."""
        if doc_type == DocType.OTHER:
            return None
        # A results table: values against reference ranges, not sizes (an obstetric ultrasound
        # gives its biometry ranges beside measurements in cm).
        ranges = self.signals.get(RANGES, 0)
        if self.signals.get(MEASUREMENTS, 0) > MAX_TABLE_MEASUREMENTS:
            ranges = 0
        # Claimed as a pathology, radiology or genomic report, a table of results needs less
        # surety: its ranges are the evidence. (A note may carry a results table: an EHR
        # summary does.)
        table = ranges >= MIN_RANGES and doc_type != DocType.CLINICAL_NOTE
        # A note is about one patient: one that names no patient, no date of service and no
        # author needs less surety (its wording of one patient's story can be pasted in).
        anonymous = doc_type == DocType.CLINICAL_NOTE and not any(
            self.signals.get(name) for name in ANCHORS
        )
        need = MIN_TABLE_PAPERWORK if table else MIN_PAPERWORK
        if self.paperwork < (MIN_ANONYMOUS_NOTE if anonymous else need):
            return None
        if len(self.evidence) < MIN_KINDS and ranges < MIN_RANGES:
            return None  # one kind of wording alone is no genre; a results table is one
        missing = [s.name for s in SIGNALS if s.reports and not self.signals.get(s.name)][:3]
        what = "a table of results" if ranges >= MIN_RANGES else "paperwork about reports"
        return (
            f"it reads as {what}, not a {doc_type.value} report about a patient "
            f"(probability {self.paperwork:.2f}; weighed most: {'; '.join(self.evidence)}"
            + (f"; none of: {', '.join(missing)}" if missing else "")
            + ")"
        )

    def agrees(self, doc_type: DocType) -> bool:
        """The content does not contradict ``doc_type``: a report or note type is not read as
        paperwork, 'other' is not read as a report. An agreement without confidence may be
        confirmed by the structure only then."""
        if doc_type == DocType.OTHER:  # a form asks about one patient too: only a sure report
            return self.paperwork > 1.0 - MIN_PAPERWORK
        if doc_type != DocType.CLINICAL_NOTE and self.note >= MIN_NOTE:
            return False  # a consult's FINDINGS and IMPRESSION do not make it a report
        # Only a confident reading contradicts: real reports with few of the signals (a
        # transcription without a header) lean either way, and escalating them costs (dev:
        # 4 more clean false escalations at 0.5). A table of results vetoed at its own level
        # does not agree either.
        return self.paperwork < MIN_PAPERWORK and self.not_a_report(doc_type) is None


class Model:
    """Logistic regression over signals (L2-penalised, fitted by Newton's method in numpy:
    sixty-odd features, so scikit-learn's import would cost more than the fit). The two
    classes weigh the same whatever their counts: how many templates of paperwork the
    generator has must not move the prior a report is judged against."""

    def __init__(self, rows: list[list[float]], targets: list[bool]) -> None:
        import numpy as np

        x = np.hstack([np.array(rows, dtype=float), np.ones((len(rows), 1))])
        y = np.array([float(t) for t in targets])
        positives = float(y.sum())
        weight = np.where(
            y == 1.0,
            len(y) / (2.0 * max(positives, 1.0)),
            len(y) / (2.0 * max(len(y) - positives, 1.0)),
        )
        w = np.zeros(x.shape[1])
        penalty = np.full(x.shape[1], PENALTY)
        penalty[-1] = 0.0  # the intercept is not penalised
        for _ in range(50):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            gradient = x.T @ (weight * (p - y)) + penalty * w
            hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + np.diag(penalty + 1e-9)
            step = np.linalg.solve(hessian, gradient)
            w -= step
            if float(np.abs(step).max()) < 1e-8:
                break
        self.coef = [float(v) for v in w[:-1]]
        self.intercept = float(w[-1])

    @classmethod
    def of(cls, coef: list[float], intercept: float) -> Model:
        model = cls.__new__(cls)
        model.coef, model.intercept = [float(c) for c in coef], float(intercept)
        return model

    def probability(self, row: list[float]) -> float:
        z = self.intercept + sum(c * v for c, v in zip(self.coef, row, strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


class Discriminator:
    """Two models over the signals: paperwork (1) against a report or note (0), learned from
    every training document; an encounter note (1) against a report (0), learned from the
    reports and notes."""

    paperwork: Model
    note: Model

    def __init__(self, texts: list[str], labels: list[DocType]) -> None:
        rows = [self._rows(t) for t in texts]
        self.paperwork = Model([r[1] for r in rows], [t == DocType.OTHER for t in labels])
        pairs = [(r[2], t) for r, t in zip(rows, labels, strict=True) if t != DocType.OTHER]
        self.note = Model([r for r, _ in pairs], [t == DocType.CLINICAL_NOTE for _, t in pairs])

    @classmethod
    def of(cls, data: dict[str, Any]) -> Discriminator:
        """A model saved by ``as_dict``."""
        found = cls.__new__(cls)
        found.paperwork = Model.of(data["paperwork"]["coef"], data["paperwork"]["intercept"])
        found.note = Model.of(data["note"]["coef"], data["note"]["intercept"])
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            name: {"coef": [round(c, 8) for c in m.coef], "intercept": round(m.intercept, 8)}
            for name, m in (("paperwork", self.paperwork), ("note", self.note))
        }

    @staticmethod
    def _rows(text: str) -> tuple[dict[str, int], list[float], list[float]]:
        words = len(_WORDS.findall(text[:MAX_CHARS]))
        counts = signals_of(text)
        row = _row(counts, words, SIGNALS)
        return counts, row, row + _row(signals_of(text, NOTE_SIGNALS), words, NOTE_SIGNALS)

    def read(self, text: str) -> Reading:
        counts, row, note_row = self._rows(text)
        weights = []
        for k, s in enumerate(SIGNALS):
            coef = self.paperwork.coef
            at = slice(PER_SIGNAL * k, PER_SIGNAL * (k + 1))
            weight = sum(c * v for c, v in zip(coef[at], row[at], strict=True))
            if not s.reports and weight > 0 and counts[s.name]:
                weights.append((weight, f"{s.name} ({counts[s.name]})"))
        evidence = tuple(w for _, w in sorted(weights, reverse=True)[:EVIDENCE_FEATURES])
        return Reading(
            paperwork=self.paperwork.probability(row),
            note=self.note.probability(note_row),
            signals=counts,
            evidence=evidence,
        )


_lock = threading.Lock()


def fingerprint() -> str:
    """What a saved model's coefficients mean: the signals (names, patterns, flags, sides,
    counting), the features each gives (by their code and constants, and by the rows they give
    a fixed probe text) and how the models are fitted. A saved model whose fingerprint differs
    is stale and is never used."""

    def described(signals: tuple[Signal, ...]) -> list[list[object]]:
        return [
            [s.name, s.pattern.pattern, int(s.pattern.flags), s.reports, s.distinct]
            for s in signals
        ]

    probe = "Patient: A B. What is it?\nPeople with it may cough. He was seen; you (ref 1-2)."
    _, row, note_row = Discriminator._rows(probe)
    data = {
        "signals": described(SIGNALS),
        "note_signals": described(NOTE_SIGNALS),
        "features": [PER_SIGNAL, _WORDS.pattern, MAX_CHARS, inspect.getsource(_row)],
        "probe": [round(v, 9) for v in row + note_row],
        "fit": [PENALTY, inspect.getsource(Model.__init__)],
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def generated_training() -> tuple[list[str], list[DocType]]:
    """The look-alike generator's templates that are not held out (engine.lookalikes)."""
    from engine.lookalikes import generate

    documents = generate(PER_TEMPLATE, seed=SEED, split="train")
    return [d.text for d in documents], [d.true_type for d in documents]


def load(path: Path = MODEL_FILE) -> Discriminator | None:
    """The saved model at ``path`` when it matches the code's fingerprint, else None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        logger.error("discriminator model %s unreadable (%s): trained on the generator", path, exc)
        return None
    if data.get("fingerprint") != fingerprint():
        logger.error("discriminator model %s is stale: trained on the generator instead", path)
        return None
    try:
        found = Discriminator.of(data["model"])
    except (KeyError, TypeError, ValueError) as exc:
        logger.error(
            "discriminator model %s is malformed (%s): trained on the generator", path, exc
        )
        return None
    width = PER_SIGNAL * len(SIGNALS)
    if len(found.paperwork.coef) != width or len(found.note.coef) != width + PER_SIGNAL * len(
        NOTE_SIGNALS
    ):
        logger.error("discriminator model %s has the wrong width: trained on the generator", path)
        return None
    return found


@lru_cache(maxsize=1)
def _trained() -> Discriminator:
    saved = load()
    if saved is not None:
        return saved
    texts, labels = generated_training()
    return Discriminator(texts, labels)


def discriminator() -> Discriminator:
    """The model, trained once per process (under a lock: RQ and test threads share it)."""
    with _lock:
        return _trained()


def read(text: str) -> Reading:
    """What ``text`` reads as (remembered: V3 and the gate read the same segments). Only the
    head is read, so only the head is kept."""
    return _read(text[:MAX_CHARS])


@lru_cache(maxsize=512)
def _read(head: str) -> Reading:
    return discriminator().read(head)
