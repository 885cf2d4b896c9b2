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

import hashlib
import pickle
import random
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.classifiers import trained
from engine.exemplars import CellTrust
from engine.novelty import NoveltyIndex
from engine.risk import ALL, ThresholdTable, documents_to_certify
from reliability import training
from reliability.learner import (
    SAFETY_CODES,
    Example,
    Learner,
    learning_value,
    words_vectorizer,
)

CACHE_KEY = b"bench_learning state cache"  # signs the benchmark's own cached models

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
    memory: bool = True  # the exemplar memory, updated after every decision
    waivers: bool = True  # escalation codes learned harmless per source
    waiver_after: int = 10  # overruling decisions, with no error, before a code is waived
    cell_min: int = 10  # unanimous memory votes a source's labels confirmed before it is trusted
    reviewer_flips: float = 0.0  # share of clinicians' labels flipped to another type
    poison: str = ""  # a source whose escalated documents a reviewer labels ``poison_label``
    poison_label: str = "pathology"


@dataclass
class Pending:
    example: Example
    severity: int
    value: float
    arrived: int
    result: Any = None


@dataclass
class State:
    records: dict[str, Example] = field(default_factory=dict)
    model: Any = None
    version: str = "rules"
    index: Any = None
    table: ThresholdTable | None = None
    labels_at_last: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    memory: Any = None
    # (source, code) -> [decisions that overruled the code (the machine's type was right),
    # decisions that upheld it (the type was wrong)]
    overrules: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    # source -> the record of its memory's unanimous votes against its clinicians
    cells: dict[str, CellTrust] = field(default_factory=dict)
    certified_at: dict[str, int] = field(default_factory=dict)  # source -> reviews then

    def waivers(self, options: Options) -> dict[str, frozenset[str]]:
        out: dict[str, set[str]] = {}
        for (source, code), (overruled, upheld) in self.overrules.items():
            if overruled >= options.waiver_after and upheld == 0 and code not in SAFETY_CODES:
                out.setdefault(source, set()).add(code)
        return {source: frozenset(codes) for source, codes in out.items()}

    def trusted(self, source: str, options: Options) -> bool:
        """A source's memory is trusted once ``cell_min`` of its unanimous votes were
        confirmed by clinicians and none contradicted."""
        return self.cells.get(source, CellTrust()).trusted(options.cell_min)

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
        waivers = state.waivers(options) if options.waivers else None
        state.table = learner.thresholds_from(
            learner.cross_fit(records, waivers=waivers).calibration
            if ok
            else learner.held_back_calibration(
                state.model,
                state.index,
                records,
                memory=learner.memory(state.model, records) if options.memory else None,
                waivers=waivers,
            )
        )
    if options.memory:
        state.memory = learner.memory(state.model, records)
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


def _first_learning(
    learner: Learner,
    state: State,
    options: Options,
    log: Callable[[str], None],
    cache: Path | None,
) -> None:
    """The first attempt on the initial corpus, kept in ``cache`` (a benchmark's own folder,
    pickled: never production data) by a hash of the corpus and the settings, so that runs
    that differ only in what happens to the stream (flips, poisoning, batch size) pay for it
    once on a shared machine."""
    digest = hashlib.sha256(
        repr(
            (
                sorted((r.key, r.label, r.source) for r in state.records.values()),
                learner.settings,
                options.memory,
                options.novelty,
                options.risk_control,
                options.waivers,
            )
        ).encode()
    ).hexdigest()[:16]
    path = cache / f"first-{digest}.pickle" if cache is not None else None
    if path is not None and path.exists():
        saved = pickle.loads(path.read_bytes())  # the benchmark's own file
        state.model = trained.load(saved[0], CACHE_KEY)
        state.version = saved[1]
        state.index = (
            NoveltyIndex.load(saved[2], words_vectorizer(state.model)) if saved[2] else None
        )
        state.table = saved[3]
        state.attempts.append(saved[4])
        state.labels_at_last = state.clinician_labels()
        if options.memory:
            state.memory = learner.memory(state.model, list(state.records.values()))
        log(f"  learning: the first attempt from {path}")
        return
    learn(learner, state, options, log)
    if path is not None and state.model is not None:
        # The model and the novelty reference in their own safe formats (the model holds
        # functions that pickle cannot keep); the rest is plain data.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            pickle.dumps(
                (
                    trained.dump(state.model, CACHE_KEY),
                    state.version,
                    state.index.dump() if state.index is not None else None,
                    state.table,
                    state.attempts[-1],
                )
            )
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
    test_keys: Collection[str] | None = None,
    cache: Path | None = None,
) -> dict[str, Any]:
    rng = random.Random(options.seed)
    flips_rng = random.Random(options.seed + 1)
    labels = sorted({r.label for r in (*initial, *stream)})
    test_split = set(test_keys or ())
    state = State(records={r.key: r for r in initial})
    _first_learning(learner, state, options, log, cache)
    waivers = state.waivers(options) if options.waivers else {}
    per_source: dict[str, dict[str, Any]] = {}
    queue: list[Pending] = []
    batches: list[dict[str, Any]] = []
    reviews = 0
    reviewed_until: int | None = None
    for number, start in enumerate(range(0, len(stream), options.batch), 1):
        batch = stream[start : start + options.batch]
        escalated = accepted = wrong = audited = novel = 0
        escalated_keys: set[str] = set()
        before = {src: cell["reviews"] for src, cell in per_source.items()}
        for doc in batch:
            result = learner.chain(
                doc.pages,
                state.model,
                novelty=state.index,
                table=state.table if options.risk_control else None,
                source=doc.source,
                fixed_threshold=not options.risk_control,
                memory=state.memory,
                waivers=waivers.get(doc.source, frozenset()),
                trusted=state.trusted(doc.source, options),
            )
            novel += bool(result.novelty is not None and result.novelty.novel)
            cell = per_source.setdefault(doc.source, _cell())
            cell["documents"] += 1
            split = "test" if doc.key in test_split else "dev"
            cell[f"{split}_documents"] += 1
            if result.accepted:
                accepted += 1
                wrong += result.predicted != doc.label
                cell["accepted"] += 1
                cell["accepted_wrong"] += result.predicted != doc.label
                cell[f"{split}_accepted"] += 1
                cell[f"{split}_accepted_wrong"] += result.predicted != doc.label
                if result.waived:
                    cell["accepted_by_waiver"] += 1
                if rng.random() < options.audit_rate:
                    audited += 1
                    state.records[doc.key] = doc  # the auditor's label
                    _remember(learner, state, doc, doc.label, result)
                else:
                    state.records[doc.key] = Example(
                        doc.key, result.predicted, doc.pages, source=doc.source, clinician=False
                    )
            else:
                escalated += 1
                escalated_keys.add(doc.key)
                cell["escalated"] += 1
                cell[f"{split}_escalated"] += 1
                queue.append(Pending(doc, result.severity, learning_value(result), start, result))
        # Clinicians work through the queue; each decision reaches the memory at once.
        if options.order == "learning":
            queue.sort(key=lambda p: (p.severity, -p.value, p.arrived))
        else:
            queue.sort(key=lambda p: (p.severity, p.arrived))
        budget = options.review_budget or len(queue)
        done, queue = queue[:budget], queue[budget:]
        for item in done:
            doc = item.example
            label = _reviewers_label(doc, options, flips_rng, labels)
            taught = Example(doc.key, label, doc.pages, source=doc.source, reviewer="r")
            state.records[doc.key] = taught
            per_source.setdefault(doc.source, _cell())["reviews"] += 1
            reviews += 1
            _remember(learner, state, doc, label, item.result)
            if item.result is not None:
                for code in item.result.codes:
                    if code in SAFETY_CODES:
                        continue
                    tally = state.overrules.setdefault((doc.source, code), [0, 0])
                    tally[0 if label == item.result.predicted else 1] += 1
            if (
                doc.source not in state.certified_at
                and state.memory is not None
                and state.trusted(doc.source, options)
            ):
                state.certified_at[doc.source] = per_source[doc.source]["reviews"]
        waivers = state.waivers(options) if options.waivers else {}
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
        for source in {d.source for d in batch}:
            mine = [d for d in batch if d.source == source]
            cell = per_source[source]
            cell["batches"].append(
                [len(mine), sum(1 for d in mine if d.key in escalated_keys), before.get(source, 0)]
            )
        log(
            f"batch {number:>3}: {len(batch):>3} documents, escalated {escalated:>3} "
            f"({rate:6.1%}), accepted {accepted:>3}, wrong {wrong}, novel {novel}, "
            f"model {state.version}, reviews so far {reviews}"
        )
        labels_now = state.clinician_labels()
        more = labels_now - state.labels_at_last
        # As reliability.learning.learning_due: every ``learn_every`` labels, and once when the
        # labels first reach the count from which a certificate can exist at all.
        need = documents_to_certify(
            method=learner.settings.method,
            alpha=learner.settings.alpha,
            delta=learner.settings.delta,
            small_sample=learner.settings.small_sample,
        )
        due = more >= options.learn_every or state.labels_at_last < need <= labels_now
        if options.learn_every and due and start + options.batch < len(stream):
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
        "sources": {
            source: _cell_summary(cell, state, source) for source, cell in per_source.items()
        },
        "waivers": {source: sorted(codes) for source, codes in state.waivers(options).items()},
    }
    for split in ("dev", "test"):
        taken = sum(c[f"{split}_accepted"] for c in per_source.values())
        bad = sum(c[f"{split}_accepted_wrong"] for c in per_source.values())
        docs = sum(c[f"{split}_documents"] for c in per_source.values())
        summary[f"{split}_split"] = {
            "documents": docs,
            "escalated": sum(c[f"{split}_escalated"] for c in per_source.values()),
            "accepted": taken,
            "accepted_wrong": bad,
        }
    summary["targets"] = targets_met(summary)
    return summary


def _cell() -> dict[str, Any]:
    cell: dict[str, Any] = {
        key: 0 for key in ("documents", "escalated", "accepted", "accepted_wrong", "reviews")
    }
    cell["accepted_by_waiver"] = 0
    for split in ("dev", "test"):
        for key in ("documents", "escalated", "accepted", "accepted_wrong"):
            cell[f"{split}_{key}"] = 0
    cell["batches"] = []
    return cell


def _cell_summary(cell: dict[str, Any], state: State, source: str) -> dict[str, Any]:
    """A source's figures: reviews of its own documents before one of its batches was
    escalated at 10% or less (None: never), and the escalation of its last batch."""
    until = next((b[2] for b in cell["batches"] if b[1] <= 0.10 * b[0]), None)
    last = cell["batches"][-1] if cell["batches"] else [0, 0, 0]
    out = {k: v for k, v in cell.items() if k != "batches"}
    out.update(
        reviews_until_below_10pct=until,
        last_batch_escalation=round(last[1] / last[0], 4) if last[0] else None,
        escalation_by_batch=[f"{b[1]}/{b[0]}" for b in cell["batches"]],
        memory=[
            state.cells.get(source, CellTrust()).confirmed,
            state.cells.get(source, CellTrust()).contradicted,
        ],
        trusted_after_reviews=state.certified_at.get(source),
    )
    return out


def _reviewers_label(
    doc: Example, options: Options, rng: random.Random, labels: Sequence[str]
) -> str:
    """The label a reviewer gives: the true one, but flipped to another type for a share
    ``reviewer_flips`` of decisions, and always ``poison_label`` on the poisoned source."""
    if options.poison and doc.source == options.poison:
        return options.poison_label
    if options.reviewer_flips and rng.random() < options.reviewer_flips:
        return rng.choice([label for label in labels if label != doc.label] or [doc.label])
    return doc.label


def _remember(learner: Learner, state: State, doc: Example, label: str, result: Any) -> None:
    """A clinician's label reaches the exemplar memory. First the source's record: was the
    memory's vote before it unanimous, and did the label confirm it? A label that contradicts
    both a unanimous memory and the classifier is doubted (half weight) until another label
    agrees with it: one reviewer's slip cannot by itself make a look-alike's vote unanimous."""
    if state.memory is None:
        return
    vote = state.memory.vote(doc.text, doc.source, exclude=(doc.key,))
    agreed = vote.label()
    weight = 1.0
    if agreed is not None and agreed != label and (result is None or result.predicted != label):
        weight = 0.5
    # A near-duplicate collapsed into one remembered is no new test of the memory: a flood of
    # copies confirms a vote once, as production's replay (ExemplarMemory.trust) counts it.
    if state.memory.add(doc.key, doc.text, label, doc.source, weight=weight) and agreed:
        state.cells.setdefault(doc.source, CellTrust()).record(agreed=agreed == label, key=doc.key)


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
