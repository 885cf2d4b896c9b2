"""A simulated deployment of the learning loop (manage.py bench_learning), without a database.

Train on an initial labelled corpus; process a stream in batches. Every document goes through
the whole chain (the active trained model, the rules as its gate, V1-V5, novelty and the
risk-controlled thresholds); an accepted document is right or wrong against its true label,
and a share of accepted ones is audited (a clinician's label); an escalated one waits in the
review queue, and clinicians label it with its true label (all of them, or ``review_budget``
per batch, in queue order: BLOCKER first, then arrival or learning value). Between batches the
learning loop runs as configured (reliability.learner): a candidate trained on the ground
truth, activated only if not worse on held-back clinician labels, thresholds certified again
from cross-fitted scores, the novelty index rebuilt.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.risk import ALL, ThresholdTable
from reliability import training
from reliability.learner import Example, Learner, learning_value

TARGETS = {
    "final_escalation_rate": 0.10,
    "overall_accepted_error_rate": 0.005,
    "reviewed_until_below_10pct": 200,
}


@dataclass
class Options:
    batch: int = 25
    audit_rate: float = 0.05
    learn_every: int = 1  # clinician labels that start the loop between batches (0: never)
    risk_control: bool = True
    novelty: bool = True
    order: str = "fifo"  # fifo | learning
    review_budget: int = 0  # clinician reviews per batch (0: every escalated document)
    seed: int = 26


@dataclass
class Pending:
    example: Example
    severity: int
    value: float
    arrived: int


@dataclass
class State:
    records: dict[str, Example] = field(default_factory=dict)
    model: Any = None
    version: str = "rules"
    index: Any = None
    table: ThresholdTable | None = None
    labels_at_last: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)

    def clinician_labels(self) -> int:
        return sum(1 for r in self.records.values() if r.clinician)


def learn(learner: Learner, state: State, options: Options, log: Callable[[str], None]) -> None:
    """One attempt of the loop on the current ground truth."""
    started = time.perf_counter()
    records = list(state.records.values())
    train_part, held = training.split(records)
    held = [r for r in held if r.clinician]  # type: ignore[attr-defined]
    attempt: dict[str, Any] = {"labels": state.clinician_labels(), "ground_truth": len(records)}
    try:
        candidate = learner.fit(train_part)
    except ValueError as exc:
        attempt.update(outcome="no_data", reason=str(exc))
        state.attempts.append(attempt)
        return
    if state.model is None:
        ok, reasons = True, ["the first model (the rules alone before it)"]
    else:
        ok, reasons, _new, _old = learner.gate(candidate, state.model, held)
    if ok:
        state.model, state.version = candidate, candidate.version
        state.index = learner.novelty_index(candidate, train_part) if options.novelty else None
    if options.risk_control:
        # As reliability.learning: cross-fitted for a model just trained on this data, the
        # held-back clinician labels for one kept.
        state.table = learner.thresholds_from(
            learner.cross_fit(records).calibration
            if ok
            else learner.held_back_calibration(state.model, state.index, records)
        )
    state.labels_at_last = state.clinician_labels()
    attempt.update(
        outcome="activated" if ok else "kept",
        reason="; ".join(reasons),
        version=state.version,
        seconds=round(time.perf_counter() - started, 1),
        thresholds=thresholds_summary(state.table),
    )
    state.attempts.append(attempt)
    log(
        f"  learning: {attempt['outcome']} {state.version} on {len(train_part)} documents "
        f"({attempt['seconds']} s); thresholds {attempt['thresholds']}"
    )


def thresholds_summary(table: ThresholdTable | None) -> dict[str, Any]:
    if table is None:
        return {}
    return {
        f"{e.doc_type}/{e.source}" if e.source != ALL else e.doc_type: (
            e.threshold if e.threshold is not None else "escalate"
        )
        for e in table.rows()
    }


def simulate(
    learner: Learner,
    initial: Sequence[Example],
    stream: Sequence[Example],
    options: Options,
    *,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    rng = random.Random(options.seed)
    state = State(records={r.key: r for r in initial})
    learn(learner, state, options, log)
    queue: list[Pending] = []
    batches: list[dict[str, Any]] = []
    reviews = 0
    reviewed_until: int | None = None
    for number, start in enumerate(range(0, len(stream), options.batch), 1):
        batch = stream[start : start + options.batch]
        escalated = accepted = wrong = audited = novel = 0
        for doc in batch:
            result = learner.chain(
                doc.pages,
                state.model,
                novelty=state.index,
                table=state.table if options.risk_control else None,
                source=doc.source,
                fixed_threshold=not options.risk_control,
            )
            novel += bool(result.novelty is not None and result.novelty.novel)
            if result.accepted:
                accepted += 1
                wrong += result.predicted != doc.label
                if rng.random() < options.audit_rate:
                    audited += 1
                    state.records[doc.key] = doc  # the auditor's label
                else:
                    state.records[doc.key] = Example(
                        doc.key, result.predicted, doc.pages, source=doc.source, clinician=False
                    )
            else:
                escalated += 1
                queue.append(Pending(doc, result.severity, learning_value(result), start))
        # Clinicians work through the queue.
        if options.order == "learning":
            queue.sort(key=lambda p: (p.severity, -p.value, p.arrived))
        else:
            queue.sort(key=lambda p: (p.severity, p.arrived))
        budget = options.review_budget or len(queue)
        done, queue = queue[:budget], queue[budget:]
        for item in done:
            state.records[item.example.key] = item.example
        reviews += len(done)
        rate = escalated / len(batch)
        row = {
            "batch": number,
            "documents": len(batch),
            "escalated": escalated,
            "accepted": accepted,
            "accepted_wrong": wrong,
            "escalation_rate": round(rate, 4),
            "audited": audited,
            "novel": novel,
            "reviews": len(done),
            "backlog": len(queue),
            "model": state.version,
            "thresholds": thresholds_summary(state.table),
        }
        if reviewed_until is None and rate <= 0.10:
            reviewed_until = reviews - len(done)  # reviews before this batch was processed
        batches.append(row)
        log(
            f"batch {number:>3}: {len(batch):>3} documents, escalated {escalated:>3} "
            f"({rate:6.1%}), accepted {accepted:>3}, wrong {wrong}, novel {novel}, "
            f"model {state.version}, reviews so far {reviews}"
        )
        more = state.clinician_labels() - state.labels_at_last
        if (
            options.learn_every
            and more >= options.learn_every
            and start + options.batch < len(stream)
        ):
            learn(learner, state, options, log)
    total = len(stream)
    quarter = max(1, total // 4)
    last: list[dict[str, Any]] = []
    seen = 0
    for row in reversed(batches):  # the batches that make up the last quarter of the stream
        if seen >= quarter:
            break
        last.append(row)
        seen += row["documents"]
    accepted_all = sum(b["accepted"] for b in batches)
    wrong_all = sum(b["accepted_wrong"] for b in batches)
    summary = {
        "documents": total,
        "batches": batches,
        "overall_accepted_error_rate": round(wrong_all / accepted_all, 4) if accepted_all else 0.0,
        "accepted": accepted_all,
        "accepted_wrong": wrong_all,
        "overall_escalation_rate": round(sum(b["escalated"] for b in batches) / total, 4)
        if total
        else 0.0,
        "final_escalation_rate": round(
            sum(b["escalated"] for b in last) / max(1, sum(b["documents"] for b in last)), 4
        ),
        "reviewed_until_below_10pct": reviewed_until,
        "clinician_reviews": reviews,
        "attempts": state.attempts,
        "options": options.__dict__,
    }
    summary["targets"] = targets_met(summary)
    return summary


def targets_met(summary: dict[str, Any]) -> dict[str, bool]:
    until = summary["reviewed_until_below_10pct"]
    return {
        "final_escalation_rate<=0.10": summary["final_escalation_rate"]
        <= TARGETS["final_escalation_rate"],
        "overall_accepted_error_rate<=0.005": summary["overall_accepted_error_rate"]
        <= TARGETS["overall_accepted_error_rate"],
        "reviewed_until_below_10pct<200": until is not None
        and until < TARGETS["reviewed_until_below_10pct"],
    }


def label_flips(
    learner: Learner, records: Sequence[Example], *, flips: int, seed: int
) -> dict[str, Any]:
    """Flip ``flips`` labels on purpose (each to another type present in the corpus), find
    likely-wrong labels with cross-fitted probabilities and cleanlab, and score what was found
    against the flips: precision, recall, and the same for the top ``flips`` of the ranking."""
    from reliability.learner import label_issues

    rng = random.Random(seed)
    labels = sorted({r.label for r in records})
    chosen = set(rng.sample([r.key for r in records], flips))
    noisy = [
        Example(
            r.key,
            rng.choice([label for label in labels if label != r.label]),
            r.pages,
            source=r.source,
        )
        if r.key in chosen
        else r
        for r in records
    ]
    started = time.perf_counter()
    ranked = [key for key, *_ in label_issues(learner.cross_fit(noisy))]
    found = set(ranked)
    hits = len(found & chosen)
    top = set(ranked[:flips])
    return {
        "documents": len(records),
        "flipped": flips,
        "found": len(found),
        "true_positives": hits,
        "precision": round(hits / len(found), 4) if found else 0.0,
        "recall": round(hits / flips, 4) if flips else 0.0,
        "precision_at_flips": round(len(top & chosen) / flips, 4) if flips else 0.0,
        "seconds": round(time.perf_counter() - started, 1),
        "seed": seed,
        "not_flipped_but_found": sorted(found - chosen),
    }
