"""The offline classifier: deterministic, no network, no model download.

Each page is scored for the five types from section headers, vocabulary and patterns (data:
rules/offline_vocabulary.json). Pages with strong evidence start a segment of their type;
weak pages continue the current segment. Evidence snippets are copied verbatim from the page.
It is the embedded default and, when Gemini is primary, the "production comparison".

Pure module: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from engine import discriminator
from engine.boundaries import CUT_SCORE, DESCRIPTIONS, BoundaryReader
from engine.classifiers.vocabulary import (
    Vocabulary,
    load_vocabulary,
    without_keyword_lines,
)
from engine.schemas import (
    DOC_TYPES,
    BoundaryCue,
    ClassificationOutput,
    DocType,
    Evidence,
    MixtureEntry,
    Presence,
    Segment,
    SelfEvaluation,
    TypeAssessment,
)
from engine.verifiers.v3_domain import load_rules

MIN_PAGE_SCORE = 6.0  # below this a page has too little evidence to start a segment
NEW_SEGMENT_MARGIN = 1.5  # a page's top score must beat the current type's by this factor
MAX_EVIDENCE = 3
# The offline answer's confidence when the discriminator reads a segment as paperwork about
# reports (it vetoes a report type at engine.discriminator.MIN_PAPERWORK, 0.9, or at
# MIN_TABLE_PAPERWORK, 0.8, for a table of results claimed as a report) ...
PAPERWORK_CONFIDENCE = 0.8
# ... when the discriminator is at least this sure; below it (but sure enough to veto the
# vocabulary's type) the answer's confidence is under every preset's threshold: it escalates.
MIN_PAPERWORK_LABEL = 0.97
UNSURE_PAPERWORK_CONFIDENCE = 0.4
# Calibration of confidence (see confidence_from), chosen on the development corpus as two
# global constants: how fast competition from the runner-up type lowers confidence, and how
# much evidence counts as plenty.
COMPETITION_SLOPE = 3.5
STRENGTH_SCALE = 10.0
SNIPPET_CHARS = 220
PRESENCE_RANK = {
    Presence.PRIMARY: 3,
    Presence.EMBEDDED_RAW: 2,
    Presence.MENTION_ONLY: 1,
    Presence.NO_EVIDENCE: 0,
}


@dataclass
class TypeScore:
    score: float = 0.0
    headers: int = 0
    anchors: list[tuple[int, int, str]] = field(default_factory=list)  # (start, end, text)


def score_page(text: str, vocabulary: Vocabulary) -> dict[DocType, TypeScore]:
    """Each type's score for the page. Keyword lines count for nothing: their words are
    blanked before scoring (without moving anything, so anchors are spans of ``text``)."""
    text = without_keyword_lines(text, vocabulary)
    scores: dict[DocType, TypeScore] = {}
    for doc_type, vocab in vocabulary.types.items():
        result = TypeScore()
        for match in vocab.header.finditer(text):
            result.headers += 1
            result.anchors.append((match.start(), match.end(), match.group().strip(" \t:")))
        counts: dict[str, int] = {}
        for match in vocab.terms.finditer(text):
            key = match.group().lower()
            counts[key] = counts.get(key, 0) + 1
            if counts[key] <= 1:
                result.anchors.append((match.start(), match.end(), match.group()))
        pattern_hits = sum(
            weight * min(len(regex.findall(text)), cap or vocabulary.cap)
            for regex, weight, cap in vocab.patterns
        )
        weak: dict[str, int] = {}
        if vocab.weak_terms is not None:
            for match in vocab.weak_terms.finditer(text):
                weak[match.group().lower()] = weak.get(match.group().lower(), 0) + 1
        result.score = (
            vocabulary.weak_term_weight * sum(min(c, vocabulary.cap) for c in weak.values())
            + vocabulary.header_weight * min(result.headers, 3 * vocabulary.cap)
            + vocabulary.term_weight * sum(min(c, vocabulary.cap) for c in counts.values())
            + pattern_hits
        )
        scores[doc_type] = result
    return scores


def _top(scores: dict[DocType, float]) -> tuple[DocType, float, float]:
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], DOC_TYPES.index(kv[0])))
    return ranked[0][0], ranked[0][1], ranked[1][1] if len(ranked) > 1 else 0.0


def confidence_from(top: float, second: float) -> float:
    """0..1 from the amount of evidence and how little the runner-up type competes.

    Competition is penalised steeply: a note where another type scores a fifth as much is a
    mixture, and a mixture is a decision for a clinician rather than for a rule.
    """
    if top <= 0:
        return 0.0
    ratio = second / top
    strength = min(1.0, top / STRENGTH_SCALE)
    return round(0.25 * strength + 0.75 * math.exp(-COMPETITION_SLOPE * ratio), 3)


def _snippet(text: str, start: int, end: int, header_line: bool) -> tuple[int, int]:
    """A verbatim stretch around an anchor: its line (and the next one after a bare header)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if header_line and len(text[line_start:line_end].strip()) < 30:
        following = text.find("\n", line_end + 1)
        if line_end < len(text):
            line_end = len(text) if following < 0 else following
    if line_end - line_start > SNIPPET_CHARS:
        # Keep a window around the anchor, cut at spaces so words stay whole.
        left = max(line_start, start - SNIPPET_CHARS // 3)
        if left > line_start:
            space = text.find(" ", left, start)
            left = space + 1 if space >= 0 else left
        right = min(line_end, left + SNIPPET_CHARS)
        if right < line_end:
            space = text.rfind(" ", end, right)
            right = space if space > end else right
        line_start, line_end = left, right
    while line_start < line_end and text[line_start].isspace():
        line_start += 1
    while line_end > line_start and text[line_end - 1].isspace():
        line_end -= 1
    return line_start, line_end


def document_mixture(
    segments: list[Segment], total_pages: int
) -> tuple[list[MixtureEntry], DocType]:
    """The document's mixture from its segments (page-weighted shares summing to 1) and the
    type with the largest share."""
    mixture = []
    for doc_type in DOC_TYPES:
        found = [(s, s.assessment(doc_type)) for s in segments]
        share = sum(a.segment_share * s.segment_page_count for s, a in found if a) / total_pages
        presence = max(
            (a.presence_level for _, a in found if a),
            key=PRESENCE_RANK.__getitem__,
            default=Presence.NO_EVIDENCE,
        )
        mixture.append(
            MixtureEntry(type=doc_type, overall_share=round(share, 4), presence_level=presence)
        )
    largest = max(range(len(mixture)), key=lambda i: mixture[i].overall_share)
    mixture[largest].overall_share = round(
        mixture[largest].overall_share + 1.0 - sum(m.overall_share for m in mixture), 4
    )
    return mixture, mixture[largest].type


class OfflineClassifier:
    name = "offline"

    def __init__(self, vocabulary: Vocabulary | None = None) -> None:
        self.vocabulary = vocabulary or load_vocabulary()
        self._footer = load_rules().header_footer

    @property
    def model(self) -> str:
        return self.vocabulary.version

    @property
    def prompt_version(self) -> str:
        return self.vocabulary.version

    def _evidence(
        self,
        pages: list[str],
        page_scores: list[dict[DocType, TypeScore]],
        numbers: range,
        doc_type: DocType,
    ) -> list[Evidence]:
        found: list[Evidence] = []
        seen: set[str] = set()
        # Header anchors first: they are the strongest, clearest evidence.
        for prefer_headers in (True, False):
            for number in numbers:
                text = pages[number - 1]
                score = page_scores[number - 1][doc_type]
                for start, end, anchor in score.anchors:
                    is_header = text[start:end].strip(" \t:").lower() == anchor.lower() and (
                        start == 0
                        or text[start - 1] == "\n"
                        or text[:start].endswith(("\n ", "\n\t"))
                    )
                    if is_header != prefer_headers:
                        continue
                    a, b = _snippet(text, start, end, is_header)
                    snippet = text[a:b]
                    if len(snippet) < 12 or snippet in seen:
                        continue
                    if any(p.search(snippet) for p in self._footer):
                        continue
                    seen.add(snippet)
                    anchors = sorted({x[2] for x in score.anchors if a <= x[0] and x[1] <= b})
                    found.append(Evidence(snippet=snippet, page=number, anchors_found=anchors))
                    if len(found) >= MAX_EVIDENCE:
                        return found
        return found

    def classify(self, pages: list[str], feedback: str | None = None) -> ClassificationOutput:
        """Classify a document given its pages' text. ``feedback`` is ignored: the offline
        classifier is deterministic, so asking again gives the same answer."""
        if not pages:
            pages = [""]
        page_scores = [score_page(text, self.vocabulary) for text in pages]
        totals = [{t: s.score for t, s in scores.items()} for scores in page_scores]

        # Segment: strong pages of a new type start a segment; so do pages whose cues say a
        # new document starts (engine.boundaries: a counter restarting, a new accession or
        # letterhead, ...), even when it is of the same type. Weak pages continue a segment.
        bounds: list[list[int]] = []  # [start, end, type index]
        reader = BoundaryReader(pages)
        for number, scores in enumerate(totals, start=1):
            best, top, _second = _top(scores)
            if not bounds:
                bounds.append([number, number, DOC_TYPES.index(best)])
                continue
            current = DOC_TYPES[bounds[-1][2]]
            strong = top >= MIN_PAGE_SCORE and top >= NEW_SEGMENT_MARGIN * scores[current]
            forced = []
            if best != current and strong:
                forced.append(
                    BoundaryCue(
                        code="type_change",
                        weight=CUT_SCORE,
                        description=DESCRIPTIONS["type_change"],
                        text=f"{current.value} -> {best.value} (score {top:.0f} against "
                        f"{scores[current]:.0f})",
                    )
                )
            if reader.read(number, forced).cut:
                bounds.append([number, number, DOC_TYPES.index(best if strong else current)])
            else:
                bounds[-1][1] = number

        segments: list[Segment] = []
        concerns: list[str] = []
        for start, end, _ in bounds:
            numbers = range(start, end + 1)
            summed = {t: sum(totals[n - 1][t] for n in numbers) for t in DOC_TYPES}
            headers = {t: sum(page_scores[n - 1][t].headers for n in numbers) for t in DOC_TYPES}
            dominant, top, _second = _top(summed)
            if top < MIN_PAGE_SCORE / 2:
                dominant = DocType.OTHER  # almost no clinical language: paperwork or blank
                concerns.append(f"Pages {start}-{end} have little recognisable text.")
            confidence = confidence_from(
                summed[dominant], max((v for t, v in summed.items() if t != dominant), default=0.0)
            )
            # Vocabulary says which report; the learned discriminator says whether it is one
            # (engine.discriminator): paperwork about reports is 'other', with its evidence.
            reading = (
                discriminator.read("\n\n".join(pages[start - 1 : end]))
                if dominant != DocType.OTHER
                else None
            )
            paperwork = reading.not_a_report(dominant) if reading is not None else None
            if reading is not None and paperwork is not None:
                concerns.append(f"Pages {start}-{end}: not {dominant.value}: {paperwork}.")
                dominant = DocType.OTHER
                # Sure enough to veto a report type, but to give 'other' as the answer the
                # reading must be surer still: between the two, the vocabulary and the
                # discriminator disagree, and the answer is below every preset's threshold.
                confidence = (
                    PAPERWORK_CONFIDENCE
                    if reading.paperwork >= MIN_PAPERWORK_LABEL
                    else UNSURE_PAPERWORK_CONFIDENCE
                )
            if confidence < 0.6:
                runner = max((t for t in DOC_TYPES if t != dominant), key=lambda t: summed[t])
                concerns.append(
                    f"Pages {start}-{end}: {dominant.value} and {runner.value} are close."
                )
            assessments = []
            for doc_type in DOC_TYPES:
                value = summed[doc_type]
                if doc_type == dominant:
                    presence = Presence.PRIMARY
                elif paperwork is not None:  # its report words are about reports: mentions
                    presence = Presence.MENTION_ONLY if value >= 3 else Presence.NO_EVIDENCE
                elif top and value >= 0.5 * top and headers[doc_type] >= 1:
                    presence = Presence.EMBEDDED_RAW
                elif value >= 3:
                    presence = Presence.MENTION_ONLY
                else:
                    presence = Presence.NO_EVIDENCE
                assessments.append((doc_type, presence, value))
            weights = [v if p != Presence.NO_EVIDENCE else 0.0 for _, p, v in assessments]
            if sum(weights) <= 0 or paperwork is not None:
                weights = [1.0 if t == dominant else 0.0 for t, _, _ in assessments]
            shares = [round(w / sum(weights), 4) for w in weights]
            shares[DOC_TYPES.index(dominant)] = round(
                shares[DOC_TYPES.index(dominant)] + 1.0 - sum(shares), 4
            )
            types = []
            for (doc_type, presence, value), share in zip(assessments, shares, strict=True):
                if presence == Presence.NO_EVIDENCE:
                    types.append(
                        TypeAssessment(
                            type=doc_type,
                            presence_level=presence,
                            confidence=0.0,
                            segment_share=0.0,
                            reasoning="No vocabulary of this type.",
                        )
                    )
                    continue
                type_confidence = (
                    confidence
                    if doc_type == dominant
                    else round(min(0.9, 0.3 + 0.6 * value / top) if top else 0.3, 3)
                )
                evidence = self._evidence(pages, page_scores, numbers, doc_type)
                types.append(
                    TypeAssessment(
                        type=doc_type,
                        presence_level=presence,
                        confidence=type_confidence,
                        segment_share=share,
                        reasoning=f"Score {value:.0f} from {headers[doc_type]} section header(s) "
                        "and vocabulary.",
                        top_evidence=evidence,
                    )
                )
            segments.append(
                Segment(
                    start_page=start,
                    end_page=end,
                    segment_page_count=end - start + 1,
                    dominant_type=dominant,
                    types=types,
                )
            )

        mixture, overall = document_mixture(segments, len(pages))
        main = max(segments, key=lambda s: s.segment_page_count)
        rules = load_rules()
        joined = "\n".join(pages).lower()
        vendors = [
            v for v in (*rules.genomic_vendors, *rules.routine_lab_vendors) if v.lower() in joined
        ]
        return ClassificationOutput(
            dominant_type_overall=overall,
            number_of_segments=len(segments),
            segments=segments,
            document_mixture=mixture,
            vendor_signals=vendors,
            self_evaluation=SelfEvaluation(
                confidence=main.assessment(main.dominant_type).confidence,  # type: ignore[union-attr]
                concerns=concerns,
            ),
            boundaries=reader.boundaries,
        )
