"""De-identification benchmark data: the annotated sample's markup, JSONL gold files, and
scoring a detector on them (manage.py bench_deid)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from engine.deid.metrics import Score
from engine.deid.spans import Phi

SAMPLE_MARKUP = Path(__file__).resolve().parent / "deid_sample.txt"
SAMPLE = Path(__file__).resolve().parent / "deid_sample.jsonl"
_MARK = re.compile(r"\[\[(?P<type>[A-Z]+)\|(?P<text>[^\]]*)\]\]")
_DOC = re.compile(r"^=== (?P<id>\S+) ===$", re.MULTILINE)


def from_markup(markup: str) -> list[dict[str, Any]]:
    """Gold records from the sample's markup: documents start with ``=== id ===`` lines
    (lines before the first are comments); PHI is written ``[[TYPE|text]]``."""
    heads = list(_DOC.finditer(markup))
    records = []
    for head, following in zip(heads, [*heads[1:], None], strict=True):
        body = markup[head.end() + 1 : following.start() if following else len(markup)]
        text, phi, at = [], [], 0
        for match in _MARK.finditer(body):
            text.append(body[at : match.start()])
            start = sum(len(part) for part in text)
            text.append(match.group("text"))
            phi.append(
                {
                    "start": start,
                    "end": start + len(match.group("text")),
                    "type": match.group("type"),
                }
            )
            at = match.end()
        text.append(body[at:])
        records.append(
            {"doc_id": head.group("id"), "text": "".join(text).rstrip("\n") + "\n", "phi": phi}
        )
    return records


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            for key in ("doc_id", "text", "phi"):
                if key not in record:
                    raise ValueError(f"{path}:{number}: no {key!r}")
            yield record


def gold_spans(record: dict[str, Any]) -> list[Phi]:
    return [Phi(int(p["start"]), int(p["end"]), str(p["type"])) for p in record["phi"]]


def score(records: Iterable[dict[str, Any]], detect: Callable[[str], Sequence[Phi]]) -> Score:
    scored = Score()
    for record in records:
        scored.add(record["doc_id"], record["text"], gold_spans(record), detect(record["text"]))
    return scored


# -- the PhysioNet "Deidentified Medical Text" gold standard ------------------------------------

# Its PHI categories in this benchmark's types. Years alone (DateYear), hospitals, cities and
# states (Location) are kept apart: Vetted keeps years, states and institutions (HIPAA Safe
# Harbor keeps years and states; an institution names no patient), so their recall is
# reported but is not a target.
PHYSIONET_TYPES = {
    "PTName": "NAME",
    "PTNameInitial": "NAME",
    "HCPName": "NAME",
    "RelativeProxyName": "NAME",
    "Date": "DATE",
    "DateYear": "YEAR",
    "Phone": "PHONE",
    "Age": "AGE",
    "Location": "LOCATION",
    "Other": "OTHER",
}
_RECORD = re.compile(
    r"START_OF_RECORD=(?P<patient>\d+)\|\|\|\|(?P<note>\d+)\|\|\|\|\n(?P<text>.*?)"
    r"\|\|\|\|END_OF_RECORD",
    re.DOTALL,
)


def from_physionet(
    text_file: Path, phrase_file: Path, *, patients: str = "all"
) -> list[dict[str, Any]]:
    """Records from the corpus (``id.text``, the notes with realistic surrogate PHI) and its
    PHI locations (``id-phi.phrase``: patient, note, start, end, category, text), offsets
    counted from the start of each note's text. ``patients``: ``all``, or ``odd`` / ``even``
    patient numbers (a development half and a held-out half)."""
    raw = text_file.read_text(encoding="latin-1")
    notes = {(m["patient"], m["note"]): m["text"] for m in _RECORD.finditer(raw)}
    phi: dict[tuple[str, str], list[dict[str, Any]]] = {key: [] for key in notes}
    for line in phrase_file.read_text(encoding="latin-1").splitlines():
        if not line.strip():
            continue
        patient, note, start, end, category = line.split()[:5]
        text = notes[(patient, note)]
        begin, stop = int(start), int(end)
        while stop > begin and not text[stop - 1].isalnum():
            stop -= 1  # a few spans take the space or full stop after them
        phi[(patient, note)].append(
            {"start": begin, "end": stop, "type": PHYSIONET_TYPES.get(category, category)}
        )
    return [
        {"doc_id": f"{patient}-{note}", "text": text, "phi": phi[(patient, note)]}
        for (patient, note), text in notes.items()
        if _in_part(patient, patients)
    ]


def physionet_split(patient: str) -> str:
    """The frozen split of the PhysioNet notes, by patient (never by note: one patient's
    notes share names): "test" for a quarter of the patients, chosen by a hash of the
    patient number, "dev" for the rest. Frozen before the statistical recogniser was built."""
    digest = int(hashlib.sha256(f"patient:{patient}".encode()).hexdigest(), 16)
    return "test" if digest % 4 == 0 else "dev"


def _in_part(patient: str, part: str) -> bool:
    if part in ("dev", "test"):
        return physionet_split(patient) == part
    return int(patient) % 2 in {"all": (0, 1), "odd": (1,), "even": (0,)}[part]


# The types Vetted removes; YEAR, LOCATION (institutions, cities, states) and OTHER are kept
# or not Vetted's, and reported apart.
REMOVED = ("NAME", "DATE", "ID", "PHONE", "ADDRESS", "EMAIL", "URL", "AGE")


def removed_recall(report: dict[str, Any]) -> dict[str, Any]:
    """Recall over the gold tokens of the removed types only."""
    rows = [report["per_type"][t] for t in REMOVED if t in report["per_type"]]
    support = sum(r["support"] for r in rows)
    removed = sum(round((r["recall"] or 0) * r["support"]) for r in rows)
    return {"recall": round(removed / support, 4) if support else None, "support": support}


def training_records(files: Sequence[Path]) -> Iterator[tuple[str, list[Phi]]]:
    """(text, gold spans of the removed types) from gold JSONL files, then the generated
    notes the default model learns from."""
    from engine.deid import synthetic

    for path in files:
        for record in read_jsonl(path):
            yield record["text"], [s for s in gold_spans(record) if s.type in REMOVED]
    yield from synthetic.corpus()


def generated(family: str) -> Iterator[dict[str, Any]]:
    """The generated gold of one template family (engine.deid.synthetic), as JSONL records."""
    from engine.deid import synthetic

    for number, (text, gold) in enumerate(synthetic.corpus(family=family, count=400, seed=7)):
        yield {
            "doc_id": f"generated-{family}-{number}",
            "text": text,
            "phi": [{"start": s.start, "end": s.end, "type": s.type} for s in gold],
        }


def write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    return count


# -- detectors to compare --------------------------------------------------------------------

PRESIDIO_TYPES = {
    "DATE_TIME": "DATE",
    "PHONE_NUMBER": "PHONE",
    "EMAIL_ADDRESS": "EMAIL",
    "URL": "URL",
    "IP_ADDRESS": "URL",
    "PERSON": "NAME",
    "LOCATION": "ADDRESS",
}
DETECTORS = ("vetted", "presidio", "presidio+names", "vetted+presidio")


def detector(name: str) -> Callable[[str], Sequence[Phi]]:
    """A detector by name: ``vetted`` (engine.deid, what Vetted uses), or for comparison
    Presidio's analyzer with its pattern recognisers only (``presidio``; no NER model),
    with a deny-list of the same first names (``presidio+names``), or both (``vetted+presidio``).
    The Presidio ones need ``pip install presidio-analyzer`` (not a Vetted dependency)."""
    from engine.deid.detect import detect
    from engine.deid.spans import resolve

    def vetted(text: str) -> Sequence[Phi]:
        return detect([text])[0]

    if name == "vetted":
        return vetted
    analyze = _presidio(names=name == "presidio+names")
    if name == "vetted+presidio":
        return lambda text: resolve([*vetted(text), *analyze(text)])
    return analyze


def _presidio(*, names: bool) -> Callable[[str], Sequence[Phi]]:
    try:
        from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer
        from presidio_analyzer.nlp_engine import SlimSpacyNlpEngine
    except ImportError:
        raise SystemExit("Comparing with Presidio needs: pip install presidio-analyzer") from None
    from engine.deid import lexicon
    from engine.deid.spans import resolve

    # A blank spaCy pipeline (a tokenizer, no model), never downloaded.
    nlp = SlimSpacyNlpEngine(
        models=[{"lang_code": "en", "model_name": "blank:en"}], auto_download=False
    )
    nlp.load()
    analyzer = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])
    # Its e-mail recogniser validates through tldextract, which fetches the public suffix
    # list at run time: replaced by the same pattern without the fetch.
    analyzer.registry.remove_recognizer("EmailRecognizer")
    analyzer.registry.add_recognizer(
        PatternRecognizer(
            supported_entity="EMAIL_ADDRESS",
            patterns=[Pattern("email", r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", 0.9)],
        )
    )
    if names:
        analyzer.registry.add_recognizer(
            PatternRecognizer(
                supported_entity="PERSON",
                deny_list=sorted(n.title() for n in lexicon.first_names()),
                context=["patient", "dr", "mr", "mrs", "ms", "son", "daughter", "wife", "name"],
            )
        )

    def analyze(text: str) -> Sequence[Phi]:
        found = analyzer.analyze(text, language="en", score_threshold=0.3)
        return resolve(
            Phi(r.start, r.end, PRESIDIO_TYPES.get(r.entity_type, "ID"), r.entity_type)
            for r in found
        )

    return analyze
