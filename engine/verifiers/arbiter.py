"""V5 arbiter: pure rules, deterministic, first match wins; the rule that fired is recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.schemas import Decision, Issue, Severity


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    rule: str
    trace: list[str]


def _counts(issues: list[Issue]) -> dict[str, int]:
    majors = [i for i in issues if i.severity == Severity.MAJOR]
    return {
        "blocker": sum(1 for i in issues if i.severity == Severity.BLOCKER),
        "major": len(majors),
        "major_fixable": sum(1 for i in majors if i.auto_fixable),
        "major_unfixable": sum(1 for i in majors if not i.auto_fixable),
        "minor": sum(1 for i in issues if i.severity == Severity.MINOR),
    }


Rule = tuple[str, Callable[[dict[str, int]], bool], Decision]

RULES: tuple[Rule, ...] = (
    ("R1 any BLOCKER", lambda c: c["blocker"] >= 1, Decision.ESCALATE_TO_SME),
    ("R2 >= 3 MAJOR", lambda c: c["major"] >= 3, Decision.ESCALATE_TO_SME),
    ("R3 >= 2 non-fixable MAJOR", lambda c: c["major_unfixable"] >= 2, Decision.ESCALATE_TO_SME),
    ("R4 >= 1 non-fixable MAJOR", lambda c: c["major_unfixable"] >= 1, Decision.ESCALATE_TO_SME),
    ("R5 1-2 fixable MAJOR", lambda c: 1 <= c["major_fixable"] <= 2, Decision.AUTO_RETRY),
    ("R6 only MINOR", lambda c: c["major"] == 0 and c["minor"] >= 1, Decision.AUTO_ACCEPT),
    ("R7 no issues", lambda c: c["blocker"] + c["major"] + c["minor"] == 0, Decision.AUTO_ACCEPT),
)
FALLBACK = ("R8 otherwise", Decision.ESCALATE_TO_SME)


def decide(issues: list[Issue]) -> Verdict:
    counts = _counts(issues)
    summary = ", ".join(f"{k}={v}" for k, v in counts.items())
    trace = [f"counts: {summary}"]
    for name, applies, decision in RULES:
        if applies(counts):
            trace.append(f"{name}: matched -> {decision.value}")
            return Verdict(decision, name, trace)
        trace.append(f"{name}: no")
    trace.append(f"{FALLBACK[0]}: matched -> {FALLBACK[1].value}")
    return Verdict(FALLBACK[1], FALLBACK[0], trace)
