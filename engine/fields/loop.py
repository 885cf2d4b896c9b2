"""The evaluator-optimizer loop. Pure: no Django.

Each iteration extracts, evaluates and builds feedback; the next iteration gets the base prompt
plus that feedback (an LLM extractor) or searches wider for the flagged fields (the offline
extractor). The loop stops when the quality threshold is met, at the iteration limit, when an
iteration improves by less than the minimum, or at the timeout; the best iteration is kept.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.fields.evaluator import Evaluation, evaluate, feedback_block, screen
from engine.fields.offline_extractor import ExtractedField
from engine.fields.templates import Template

THRESHOLD_MET = "threshold_met"
MAX_ITERATIONS = "max_iterations"
PLATEAU = "plateau"
TIMEOUT = "timeout"
SINGLE_PASS = "single_pass"


@dataclass(frozen=True)
class LoopConfig:
    quality_threshold: float = 0.95
    max_iterations: int = 3
    min_improvement: float = 0.05
    timeout_seconds: float = 30.0
    enabled: bool = True


@dataclass
class Iteration:
    number: int
    fields: dict[str, ExtractedField]
    evaluation: Evaluation
    feedback: str
    improvement: float | None
    prompt_hash: str
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "score": self.evaluation.overall,
            "breakdown": {
                k: getattr(self.evaluation, k)
                for k in ("completeness", "accuracy", "validity", "consistency")
            },
            "issues": self.evaluation.issues,
            "feedback": self.feedback,
            "improvement": self.improvement,
            "prompt_hash": self.prompt_hash,
            "seconds": round(self.seconds, 4),
            "fields": {k: v.as_dict() for k, v in self.fields.items()},
        }


@dataclass
class LoopResult:
    best: Iteration
    iterations: list[Iteration] = field(default_factory=list)
    stopped_reason: str = ""
    met_threshold: bool = False

    @property
    def final_score(self) -> float:
        return self.best.evaluation.overall


# An extractor takes (prompt, feedback or None, flagged fields, iteration) and returns fields.
Extractor = Callable[[str, "str | None", list[str], int], dict[str, ExtractedField]]


def base_prompt(template: Template) -> str:
    lines = [f"Extract the fields of this {template.title} from the source."]
    for spec in template.fields:
        extra = f" Values: {', '.join(spec.values)}." if spec.values else ""
        where = f" Look near: {', '.join(spec.labels[:3])}"
        where += f" ({spec.location})." if spec.location else "."
        lines.append(
            f"- {spec.name} [{spec.tier.value}, {spec.format}]: {spec.description}.{extra}{where}"
        )
    return "\n".join(lines)


def run_loop(
    *,
    template: Template,
    pages: list[str],
    extractor: Extractor,
    config: LoopConfig,
    clock: Callable[[], float] = time.monotonic,
) -> LoopResult:
    started = clock()
    prompt = base_prompt(template)
    iterations: list[Iteration] = []
    feedback: str | None = None
    flagged: list[str] = []
    stopped = ""
    limit = config.max_iterations if config.enabled else 1
    while True:
        t0 = clock()
        full_prompt = prompt + (f"\n\n{feedback}" if feedback else "")
        # What the extractor read, less what its own text does not support: only that is
        # ever reported.
        fields = screen(template, extractor(full_prompt, feedback, flagged, len(iterations)), pages)
        evaluation = evaluate(template, fields, pages)
        previous = iterations[-1].evaluation.overall if iterations else None
        iteration = Iteration(
            number=len(iterations),
            fields=fields,
            evaluation=evaluation,
            feedback=feedback_block(evaluation, target=config.quality_threshold, previous=fields),
            improvement=None if previous is None else round(evaluation.overall - previous, 4),
            prompt_hash=hashlib.sha256(full_prompt.encode()).hexdigest()[:16],
            seconds=clock() - t0,
        )
        iterations.append(iteration)
        if evaluation.overall >= config.quality_threshold:
            stopped = THRESHOLD_MET
            break
        if not config.enabled:
            stopped = SINGLE_PASS
            break
        if len(iterations) >= limit:
            stopped = MAX_ITERATIONS
            break
        if iteration.improvement is not None and iteration.improvement < config.min_improvement:
            stopped = PLATEAU
            break
        if clock() - started >= config.timeout_seconds:
            stopped = TIMEOUT
            break
        feedback = iteration.feedback
        flagged = evaluation.priority
    best = max(iterations, key=lambda it: (it.evaluation.overall, -it.number))
    return LoopResult(
        best=best,
        iterations=iterations,
        stopped_reason=stopped,
        met_threshold=best.evaluation.overall >= config.quality_threshold,
    )
