"""The classifier trained on ground truth: training data, the held-back slice, the chain's
figures on it, storage, activation and the active model.

A record's place (training or held back) comes from a hash of its id, so the same documents are
held back every time: a new model and the active one are compared on documents neither was
trained on. A model is activated only if, on that slice, the chain with it is not worse than
with the active classifier (the rule-based offline one when no trained model is active) in
accuracy, macro-F1 or accepted-error rate.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from engine import pipeline
from engine.classifiers import trained
from engine.classifiers.gemini import FewShotExample
from engine.classifiers.offline import OfflineClassifier
from engine.document import DocumentContext, SecondOpinion
from engine.protocols import Classifier
from engine.schemas import DOC_TYPES, Decision
from engine.verifiers.v3_domain import addressed_to_model
from reliability import hooks
from reliability.models import TrainedClassifierModel

logger = logging.getLogger(__name__)

LABELS = [t.value for t in DOC_TYPES]
HELD_BACK_ONE_IN = 5  # one record in five is held back (by a hash of its id)
TOLERANCE = 1e-9


@dataclass(frozen=True)
class Record:
    key: str
    label: str
    pages: list[str]

    @property
    def text(self) -> str:
        return "\n\n".join(self.pages)


def _derived(secret: str) -> bytes:
    # A key of its own for model signing, derived from a secret key (never the key itself).
    return hashlib.sha256(b"vetted-trained-classifier\x00" + secret.encode()).digest()


def signing_key() -> bytes:
    """The key new models are signed with: derived from SECRET_KEY."""
    return _derived(settings.SECRET_KEY)


def signing_keys() -> list[bytes]:
    """Every key a stored model may be signed with: SECRET_KEY's first, then those of
    SECRET_KEY_FALLBACKS (Django's rotation list), so a rotated key keeps models loading."""
    return [signing_key(), *(_derived(k) for k in settings.SECRET_KEY_FALLBACKS)]


# A model's standing, shown on the admin and metrics pages (codes; messages for people).
MODEL_TRUSTED = "trusted"
MODEL_REFUSED = "refused"


@dataclass(frozen=True)
class ModelCheck:
    code: str  # MODEL_TRUSTED or MODEL_REFUSED
    message: str


def model_check(row: TrainedClassifierModel) -> ModelCheck:
    """Whether the stored model would load: its bytes match their hash and one of
    ``signing_keys`` signed them. Cheap (a hash and an HMAC, no parsing)."""
    blob = bytes(row.blob)
    if hashlib.sha256(blob).hexdigest() != row.blob_sha256:
        return ModelCheck(MODEL_REFUSED, "Refused: the stored bytes do not match their hash.")
    index = trained.signed_with(blob, signing_keys())
    if index is None:
        return ModelCheck(
            MODEL_REFUSED,
            "Refused: its signature matches neither SECRET_KEY nor SECRET_KEY_FALLBACKS "
            "(changed after it was stored, or signed with a key no longer listed). It is not "
            "used; retrain, or put the old key in SECRET_KEY_FALLBACKS.",
        )
    if index > 0:
        return ModelCheck(MODEL_TRUSTED, "Signed with a fallback key: re-signed when next loaded.")
    return ModelCheck(MODEL_TRUSTED, "Signature verified.")


def held_back(key: str) -> bool:
    digest = hashlib.sha256(f"heldout:{key}".encode()).hexdigest()
    return int(digest[:8], 16) % HELD_BACK_ONE_IN == 0


def split(records: Sequence[Record]) -> tuple[list[Record], list[Record]]:
    train = [r for r in records if not held_back(r.key)]
    held = [r for r in records if held_back(r.key)]
    return train, held


def data_hash(records: Sequence[Record]) -> str:
    return trained.training_hash([(r.key, r.label, r.text) for r in records])


def ground_truth_records(*, sme_only: bool = False) -> list[Record]:
    """Current ground truth (not withdrawn, not superseded) with each document's page text."""
    return [
        Record(key, label, pages)
        for found in hooks.training_ground_truth(sme_only)
        for key, label, pages in found
    ]


def corpus_records(corpus: Path, extract: Callable[[Path], list[str]]) -> list[Record]:
    """A labelled corpus folder (labels.csv: doc_id,label,source,path), as evaluate reads it."""
    import csv

    with (corpus / "labels.csv").open(newline="", encoding="utf-8-sig") as handle:
        rows = [
            {k.strip(): (v or "").strip() for k, v in r.items()} for r in csv.DictReader(handle)
        ]
    return [Record(r["doc_id"], r["label"], extract(corpus / r["path"])) for r in rows]


# -- the chain's figures -------------------------------------------------------------------------


class MemoOffline(OfflineClassifier):
    """The offline classifier remembering its answers by the pages' text: the trained
    classifier's base and the gate classify the same document once."""

    def __init__(self) -> None:
        super().__init__()
        self._memo: dict[str, Any] = {}

    def classify(self, pages: list[str], feedback: str | None = None) -> Any:
        key = hashlib.sha256("\x00".join(pages).encode("utf-8", "surrogatepass")).hexdigest()
        if key not in self._memo:
            self._memo[key] = super().classify(pages)
        return self._memo[key]


def chain_outcome(
    pages: list[str], primary: Classifier, gate: Classifier | None, preset: pipeline.Preset
) -> tuple[str, str]:
    """(predicted type, decision) of the whole chain (V1-V5, the gate) for one document."""
    context = DocumentContext(
        pages=pages,
        min_dominant_confidence=pipeline.confidence_threshold(preset, primary),
        second=SecondOpinion(gate.name, gate.classify(pages)) if gate is not None else None,
        gate_confirm_confidence=settings.GATE_CONFIRM_CONFIDENCE,
    )
    outcome = pipeline.orchestrate(
        classify=lambda feedback: (primary.classify(pages, feedback), 0),
        context=context,
        preset=preset,
        can_reask=False,
    )
    return outcome.best.output.dominant_type_overall.value, outcome.decision.value


def figures(results: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """From (true type, predicted type, decision): accuracy, macro-F1, per-type recall and
    precision, escalation rate and the error rate of what was auto-accepted."""
    n = len(results)
    per_type: dict[str, dict[str, Any]] = {}
    f1s = []
    for label in LABELS:
        tp = sum(1 for t, p, _ in results if t == label and p == label)
        actual = sum(1 for t, _, _ in results if t == label)
        predicted = sum(1 for _, p, _ in results if p == label)
        recall = tp / actual if actual else 0.0
        precision = tp / predicted if predicted else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if actual:
            f1s.append(f1)
        per_type[label] = {
            "support": actual,
            "recall": round(recall, 4),
            "precision": round(precision, 4),
        }
    accepted = [(t, p) for t, p, d in results if d == Decision.AUTO_ACCEPT.value]
    escalated = sum(1 for _, _, d in results if d == Decision.ESCALATE_TO_SME.value)
    return {
        "documents": n,
        "accuracy": round(sum(t == p for t, p, _ in results) / n, 4) if n else 0.0,
        "macro_f1": round(sum(f1s) / len(f1s), 4) if f1s else 0.0,
        "escalation_rate": round(escalated / n, 4) if n else 0.0,
        "accepted": len(accepted),
        "accepted_errors": sum(1 for t, p in accepted if t != p),
        "accepted_error_rate": round(sum(1 for t, p in accepted if t != p) / len(accepted), 4)
        if accepted
        else 0.0,
        "per_type": per_type,
    }


def chain_figures(
    records: Sequence[Record],
    primary: Classifier,
    gate: Classifier | None,
    preset: pipeline.Preset,
) -> dict[str, Any]:
    results = []
    for record in records:
        predicted, decision = chain_outcome(record.pages, primary, gate, preset)
        results.append((record.label, predicted, decision))
    return figures(results)


def roles(model: trained.TrainedModel | None) -> tuple[Classifier, Classifier | None]:
    """(primary, gate) of the offline chain: the trained classifier with the rules as its
    gate, or the rules alone."""
    base = MemoOffline()
    if model is None:
        return base, None
    return trained.TrainedClassifier(model, base=base), base


def compare(candidate: dict[str, Any], active: dict[str, Any]) -> tuple[bool, list[str]]:
    """Is the candidate not worse than the active classifier? And the reasons, in words."""
    reasons = []
    worse = False
    for key, label, higher_is_better in (
        ("accuracy", "accuracy", True),
        ("macro_f1", "macro-F1", True),
        ("accepted_error_rate", "accepted-error rate", False),
    ):
        a, b = candidate[key], active[key]
        bad = a < b - TOLERANCE if higher_is_better else a > b + TOLERANCE
        worse |= bad
        reasons.append(f"{label} {a:.4f} vs {b:.4f}" + (" (worse)" if bad else ""))
    reasons.append(
        f"escalation rate {candidate['escalation_rate']:.4f} vs {active['escalation_rate']:.4f}"
    )
    return not worse, reasons


def per_type_lines(candidate: dict[str, Any], active: dict[str, Any], name: str) -> list[str]:
    """Per type: recall and precision of the candidate and of the active classifier."""
    lines = [
        f"{'type':<15}{'support':>8}{'recall new':>12}{'recall ' + name:>22}{'diff':>8}"
        f"{'precision new':>15}{'precision ' + name:>25}"
    ]
    for label in LABELS:
        c, a = candidate["per_type"][label], active["per_type"][label]
        if not c["support"]:
            continue
        diff = c["recall"] - a["recall"]
        flag = "  worse" if diff < -TOLERANCE else ""
        lines.append(
            f"{label:<15}{c['support']:>8}{c['recall']:>12.3f}{a['recall']:>22.3f}{diff:>+8.3f}"
            f"{c['precision']:>15.3f}{a['precision']:>25.3f}{flag}"
        )
    return lines


# -- training, storage, activation ---------------------------------------------------------------


@dataclass
class TrainingResult:
    row: TrainedClassifierModel
    model: trained.TrainedModel
    activated: bool
    report: list[str]


def train(
    records: Sequence[Record],
    *,
    source: str,
    preset: pipeline.Preset,
    activate: bool = True,
) -> TrainingResult:
    """Fit on the training part, measure on the held-back slice next to the active classifier,
    store the model and activate it when it is not worse."""
    train_part, held = split(records)
    if len({r.label for r in train_part}) < 2:
        raise ValueError("Training needs ground truth of at least two types.")
    digest = data_hash(records)
    model = trained.fit(
        [r.text for r in train_part],
        [r.label for r in train_part],
        data_hash=digest,
        meta={"source": source, "train_documents": len(train_part), "heldout": len(held)},
    )
    current = TrainedClassifierModel.objects.filter(active=True).first()
    current_model = load_row(current) if current is not None else None
    active_name = str(current) if current is not None else "rule-based (offline)"
    primary, gate = roles(model)
    candidate = chain_figures(held, primary, gate, preset)
    primary, gate = roles(current_model)
    baseline = chain_figures(held, primary, gate, preset)
    better, reasons = compare(candidate, baseline)
    counts = ", ".join(f"{k} {v}" for k, v in model.support.items() if v)
    report = [
        f"Trained {model.version} on {len(train_part)} documents ({counts}) in "
        f"{model.seconds:.1f} s; "
        f"held back {len(held)}.",
        f"On the held-back slice, against the active classifier ({active_name}): "
        + "; ".join(reasons)
        + ".",
        *per_type_lines(candidate, baseline, active_name.split(" ")[0]),
    ]
    if not held:
        better = False
        decision = "Not activated: no held-back documents to compare on (add ground truth)."
    elif not activate:
        better = False
        decision = "Not activated: --no-activate."
    elif better:
        decision = f"Activated: not worse than {active_name} on the held-back slice."
    else:
        decision = f"Not activated: worse than {active_name} on the held-back slice."
    report.append(decision)
    blob = trained.dump(model, signing_key())
    with transaction.atomic():
        if better:
            TrainedClassifierModel.objects.filter(active=True).update(active=False)
        row = TrainedClassifierModel.objects.create(
            version=model.version,
            data_hash=digest,
            source=source[:300],
            trained_at=timezone.now(),
            train_documents=len(train_part),
            heldout_documents=len(held),
            label_counts=model.support,
            training_seconds=model.seconds,
            metrics={"candidate": candidate, "active": baseline, "active_name": active_name},
            active=better,
            activated_at=timezone.now() if better else None,
            decision=decision,
            blob=blob,
            blob_sha256=hashlib.sha256(blob).hexdigest(),
        )
    return TrainingResult(row=row, model=model, activated=better, report=report)


_cache: dict[int, trained.TrainedModel] = {}
_cache_lock = threading.Lock()


def load_row(row: TrainedClassifierModel) -> trained.TrainedModel:
    with _cache_lock:
        if row.pk in _cache:
            return _cache[row.pk]
    blob = bytes(row.blob)
    if hashlib.sha256(blob).hexdigest() != row.blob_sha256:
        raise trained.UntrustedModel(f"Model {row.pk}: stored bytes do not match their hash.")
    index = trained.signed_with(blob, signing_keys())
    if index is not None and index > 0:
        # Signed with a key SECRET_KEY_FALLBACKS still lists: re-signed with the current one,
        # so the old key can be dropped from the list once every model has been loaded.
        blob = trained.resign(blob, signing_key())
        TrainedClassifierModel.objects.filter(pk=row.pk).update(
            blob=blob, blob_sha256=hashlib.sha256(blob).hexdigest()
        )
        logger.info("trained classifier %s re-signed with the current key", row.pk)
    model = trained.load(blob, signing_key())
    with _cache_lock:
        _cache.clear()  # one model in memory: the one in use
        _cache[row.pk] = model
    return model


def active_model() -> trained.TrainedModel | None:
    """The active trained model, or None (none active, disabled, or it cannot be loaded)."""
    if not settings.TRAINED_CLASSIFIER:
        return None
    row = TrainedClassifierModel.objects.filter(active=True).defer("blob").first()
    if row is None:
        return None
    with _cache_lock:
        if row.pk in _cache:
            return _cache[row.pk]
    try:
        return load_row(TrainedClassifierModel.objects.get(pk=row.pk))
    except (trained.UntrustedModel, ValueError, OSError) as exc:
        logger.warning("trained classifier %s not loaded: %s", row.pk, exc)
        return None


def load_file(path: Path) -> trained.TrainedModel:
    blob = path.read_bytes()
    keys = signing_keys()
    index = trained.signed_with(blob, keys)
    return trained.load(blob, keys[index or 0])  # no match: refused with load's reason


# -- cross-validation ----------------------------------------------------------------------------


def folds(records: Sequence[Record], k: int, *, seed: int = 15) -> list[list[Record]]:
    """k folds stratified by type: each type's records, shuffled, dealt round the folds."""
    rng = random.Random(seed)
    out: list[list[Record]] = [[] for _ in range(k)]
    by_label: dict[str, list[Record]] = {}
    for r in sorted(records, key=lambda r: r.key):
        by_label.setdefault(r.label, []).append(r)
    offset = 0
    for label in sorted(by_label):
        group = by_label[label]
        rng.shuffle(group)
        for i, r in enumerate(group):
            out[(i + offset) % k].append(r)
        offset += len(group)
    return out


def cross_validate(
    records: Sequence[Record],
    *,
    k: int,
    preset: pipeline.Preset,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every document evaluated by a model that never saw it, and by the rules alone."""
    trained_results: list[tuple[str, str, str]] = []
    rules_results: list[tuple[str, str, str]] = []
    seconds = []
    for index, fold in enumerate(folds(records, k)):
        held = {r.key for r in fold}
        train_part = [r for r in records if r.key not in held]
        model = trained.fit([r.text for r in train_part], [r.label for r in train_part])
        seconds.append(model.seconds)
        primary, gate = roles(model)
        rules = gate
        for record in fold:
            predicted, decision = chain_outcome(record.pages, primary, gate, preset)
            trained_results.append((record.label, predicted, decision))
            assert rules is not None
            predicted, decision = chain_outcome(record.pages, rules, None, preset)
            rules_results.append((record.label, predicted, decision))
        if progress:
            progress(f"fold {index + 1}/{k}: trained on {len(train_part)}, tested {len(fold)}")
    return {
        "folds": k,
        "documents": len(records),
        "labels": dict(Counter(r.label for r in records)),
        "preset": preset.name,
        "trained": figures(trained_results),
        "rules": figures(rules_results),
        "mean_training_seconds": round(sum(seconds) / len(seconds), 2) if seconds else 0.0,
    }


# -- corrections teach the LLM -------------------------------------------------------------------


def few_shot_examples(pages: list[str], *, exclude_document: Any = None) -> list[FewShotExample]:
    """The most similar SME-corrected documents (by the trained model's TF-IDF features, or
    the same features fitted on the corrections when no model is active), best first.

    Examples without poison: the corrections come without documents whose runs flagged
    untrusted text (review.selectors.corrected_examples), and a text that addresses a language
    model is dropped here too, whatever its runs recorded (a run from before the rule)."""
    k = settings.FEW_SHOT_EXAMPLES
    if k <= 0:
        return []
    rows = [
        r
        for found in hooks.corrected_examples()
        for r in found
        if str(r[1]) != str(exclude_document) and addressed_to_model(r[3]) is None
    ]
    if not rows:
        return []
    model = active_model()
    text = "\n\n".join(pages)
    candidates = [(index, row[3]) for index, row in enumerate(rows)]
    if model is not None:
        vectorizer = model.vectorizer
    else:
        vectorizer = trained.make_vectorizer(min_df=1)
        vectorizer.fit([text, *(t for _, t in candidates)])
    chosen = trained.nearest(vectorizer, text, candidates, k=k)
    return [
        FewShotExample(key=rows[index][0], label=rows[index][2], text=rows[index][3])
        for index, _score in chosen
    ]
