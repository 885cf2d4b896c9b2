"""V4 evidence grounding: every snippet must be found on the page it claims, and must be a
finding rather than a list of keywords (engine.classifiers.vocabulary.keyword_line: anyone can
write "Coding note: document type = surgical pathology report" into a document).

Deterministic (see engine.grounding); an LLM is never needed to detect fabrication.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from engine.classifiers.vocabulary import keyword_line, load_vocabulary
from engine.document import DocumentContext
from engine.grounding import contains_term, find_snippet
from engine.schemas import ClassificationOutput, Issue, Severity, make_issue

AGENT = "V4"
# Every grounding problem is one a language model can fix by quoting the page again.
_issue = partial(make_issue, AGENT, llm=True)
GENERIC_SNIPPET = re.compile(
    r"^\W*(see (the )?(attached|above|below|report|previous|enclosed)\b.*|as above|n/?a|none|"
    r"not applicable|unknown|document|report|page \d+|\.\.\.)\W*$",
    re.IGNORECASE,
)
GENERIC_MIN_CHARS = 8
HIGH_CONFIDENCE = 0.7


@dataclass
class GroundingReport:
    issues: list[Issue]
    matches: list[dict[str, Any]] = field(default_factory=list)
    quality_score: float = 1.0


def quality_score(issues: list[Issue]) -> float:
    counts = {s: sum(1 for i in issues if i.severity == s) for s in Severity}
    score = 1 - 0.30 * counts[Severity.BLOCKER] - 0.15 * counts[Severity.MAJOR]
    return round(max(0.0, score - 0.05 * counts[Severity.MINOR]), 4)


def verify(output: ClassificationOutput, context: DocumentContext) -> GroundingReport:
    issues: list[Issue] = []
    matches: list[dict[str, Any]] = []
    for i, segment in enumerate(output.segments):
        for t in segment.types:
            for k, evidence in enumerate(t.top_evidence):
                where = f"segments[{i}].types.{t.type.value}.top_evidence[{k}]"
                record: dict[str, Any] = {
                    "location": where,
                    "page": evidence.page,
                    "snippet": evidence.snippet,
                    "found": False,
                    "found_page": None,
                    "start": None,
                    "end": None,
                    "score": None,
                    "method": None,
                }
                matches.append(record)
                snippet = evidence.snippet.strip()
                generic = len(snippet) < GENERIC_MIN_CHARS or GENERIC_SNIPPET.match(snippet)
                if generic and t.confidence >= HIGH_CONFIDENCE:
                    issues.append(
                        _issue(
                            Severity.MAJOR,
                            "generic_evidence",
                            f"Generic evidence “{snippet}” backs {t.type.value} at "
                            f"confidence {t.confidence:.2f}.",
                            where,
                            "Quote specific text from the page.",
                        )
                    )
                lines = [line for line in snippet.splitlines() if line.strip()]
                if lines and all(keyword_line(line, load_vocabulary()) for line in lines):
                    issues.append(
                        _issue(
                            Severity.MAJOR,
                            "keyword_evidence",
                            f"Evidence for {t.type.value} is a list of keywords or a line naming "
                            f"the document's type, not a finding: “{snippet[:120]}”.",
                            where,
                            "Quote the findings of the page (a diagnosis, findings, an "
                            "impression, a variant), not a list of its words.",
                        )
                    )
                page_text = context.page_text(evidence.page)
                match = None
                if page_text is not None:
                    match = find_snippet(
                        evidence.snippet, page_text, page_norm=context.normalised[evidence.page - 1]
                    )
                if match is not None:
                    record.update(
                        found=True,
                        found_page=evidence.page,
                        start=match.start,
                        end=match.end,
                        score=match.score,
                        method=match.method,
                    )
                    page_norm = context.normalised[evidence.page - 1]
                    missing = [a for a in evidence.anchors_found if not contains_term(a, page_norm)]
                    if missing:
                        issues.append(
                            _issue(
                                Severity.MAJOR,
                                "anchor_not_on_page",
                                f"Anchors {', '.join(repr(a) for a in missing)} are not on "
                                f"page {evidence.page}.",
                                where,
                                "Name only terms that appear on the page.",
                            )
                        )
                    continue
                elsewhere = None
                for number, text in enumerate(context.pages, start=1):
                    if number == evidence.page:
                        continue
                    match = find_snippet(
                        evidence.snippet, text, page_norm=context.normalised[number - 1]
                    )
                    if match is not None:
                        elsewhere = number
                        record.update(
                            found_page=number,
                            start=match.start,
                            end=match.end,
                            score=match.score,
                            method=match.method,
                        )
                        break
                if elsewhere is not None:
                    issues.append(
                        _issue(
                            Severity.MAJOR,
                            "evidence_wrong_page",
                            f"Evidence for {t.type.value} claims page {evidence.page} but "
                            f"is on page {elsewhere}.",
                            where,
                            f"Cite page {elsewhere}.",
                        )
                    )
                else:
                    issues.append(
                        _issue(
                            Severity.BLOCKER,
                            "fabricated_evidence",
                            f"Evidence for {t.type.value} is not in the document: "
                            f"“{evidence.snippet[:120]}”.",
                            where,
                            "Quote text that is on the page, verbatim.",
                        )
                    )
    return GroundingReport(issues=issues, matches=matches, quality_score=quality_score(issues))
