"""The classifier trained on ground truth: TF-IDF word and character features and a linear
model whose probabilities are calibrated (CalibratedClassifierCV), so a confidence of 0.8 means
about 8 in 10 such answers are right and the presets' thresholds mean what they say.

``fit`` trains a ``TrainedModel`` from (text, label) pairs; ``dump``/``load`` store it as a
signed blob (an HMAC over the pickled bytes with a key only Vetted holds), so only models Vetted
wrote are ever unpickled. ``TrainedClassifier`` is an engine.protocols.Classifier: the offline
classifier gives the segments and the verbatim evidence (a text classifier has no snippets to
ground), and the trained model names each segment's type with its calibrated probability as
the confidence. For a type the model saw too few examples of to learn (``MIN_TYPE_SUPPORT``),
the rule-based answer stands; where the model and the rules disagree, the model's type is
given only when it is sure (``OVERRIDE_CONFIDENCE``), and either way the rules, as the gate,
send the run to a clinician. ``similar`` finds the nearest texts by the same features (the
few-shot examples shown to the LLM).

Pure: no Django.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from engine.classifiers.offline import OfflineClassifier, document_mixture
from engine.schemas import (
    DOC_TYPES,
    ClassificationOutput,
    DocType,
    Presence,
    Segment,
    SelfEvaluation,
)

FORMAT = b"VETTED-TRAINED-CLASSIFIER-1\n"
MAX_CHARS = 20_000  # the head of a long document says what it is; keeps training fast
WORD_FEATURES = 40_000
CHAR_FEATURES = 60_000
MIN_TYPE_SUPPORT = 8  # fewer training examples of a type than this: the rules decide it
# When the model and the rules disagree (the run escalates either way), the model's type is
# shown only when it is at least this sure; otherwise the rules' type stands, with the model's
# (low) probability for it as the confidence. Chosen on the development corpus.
OVERRIDE_CONFIDENCE = 0.8
CALIBRATION_FOLDS = 2  # two halves: each fits a model, the other half calibrates it
SEED = 15


class UntrustedModel(ValueError):
    """A model blob not signed with our key (or damaged): it is never unpickled."""


def _clip(text: str) -> str:
    return text[:MAX_CHARS]


def _analyzer(vectorizer: Any) -> Callable[[str], list[str]]:
    """The fitted vectorizer's analyzer; for lower-cased character n-grams within word
    boundaries of one length, the same n-grams as sklearn's ``char_wb`` without its per-gram
    Python loop (the single-document path spends most of its time there)."""
    n_min, n_max = vectorizer.ngram_range
    if not (
        vectorizer.analyzer == "char_wb"
        and n_min == n_max
        and vectorizer.lowercase
        and vectorizer.strip_accents is None
        and vectorizer.preprocessor is None
        and vectorizer.input == "content"
    ):
        analyzer: Callable[[str], list[str]] = vectorizer.build_analyzer()
        return analyzer
    n = n_min

    def char_wb(text: str) -> list[str]:
        grams: list[str] = []
        for word in text.lower().split():
            padded = f" {word} "
            if len(padded) <= n:
                grams.append(padded)
            else:
                grams.extend([padded[i : i + n] for i in range(len(padded) - n + 1)])
        return grams

    return char_wb


def training_hash(records: Sequence[tuple[str, str, str]]) -> str:
    """SHA-256 over (id, label, text) sorted by id: the same data gives the same version."""
    digest = hashlib.sha256()
    for key, label, text in sorted(records):
        digest.update(f"{key}\x00{label}\x00".encode())
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()


@dataclass
class TrainedModel:
    vectorizer: Any  # sklearn FeatureUnion of two TfidfVectorizers
    classifier: Any  # sklearn CalibratedClassifierCV
    labels: list[str]
    support: dict[str, int]
    data_hash: str
    trained_at: str
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.data_hash[:12]

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_fast", None)  # rebuilt from the fitted objects after loading
        return state

    def _fast_parts(self) -> Any:
        """The fitted pieces as plain arrays, for predicting one document without sklearn's
        per-call overhead (the same arithmetic as transform + predict_proba)."""
        fast = self.__dict__.get("_fast")
        if fast is None:
            parts = []
            for _name, vec in self.vectorizer.transformer_list:
                parts.append((_analyzer(vec), vec.vocabulary_, vec.idf_.astype(np.float64)))
            members = []
            for member in self.classifier.calibrated_classifiers_:
                estimator = member.estimator
                index = [list(self.classifier.classes_).index(c) for c in estimator.classes_]
                a = np.array([c.a_ for c in member.calibrators], dtype=np.float64)
                b = np.array([c.b_ for c in member.calibrators], dtype=np.float64)
                members.append(
                    (estimator.coef_.astype(np.float64), estimator.intercept_, index, a, b)
                )
            fast = (parts, members)
            self.__dict__["_fast"] = fast
        return fast

    def _fast_one(self, text: str) -> np.ndarray:
        parts, members = self._fast_parts()
        indices: list[np.ndarray] = []
        values: list[np.ndarray] = []
        offset = 0
        for analyzer, vocabulary, idf in parts:
            counts = Counter(analyzer(text))
            known = np.array([vocabulary.get(t, -1) for t in counts], dtype=np.int64)
            mask = known >= 0
            if mask.any():
                idx = known[mask]
                tf = 1.0 + np.log(np.array(list(counts.values()), dtype=np.float64)[mask])
                weights = tf * idf[idx]
                weights /= np.linalg.norm(weights) or 1.0
                indices.append(idx + offset)
                values.append(weights)
            offset += len(idf)
        idx = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
        val = np.concatenate(values) if values else np.zeros(0)
        total = np.zeros(len(self.classifier.classes_))
        for coef, intercept, index, a, b in members:
            decision = coef[:, idx] @ val + intercept
            proba = np.zeros(len(self.classifier.classes_))
            proba[index] = 1.0 / (1.0 + np.exp(a * decision + b))
            norm = proba.sum()
            total += proba / norm if norm > 0 else 1.0 / len(proba)
        return total / len(members)

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        classes = [str(c) for c in self.classifier.classes_]
        if len(texts) == 1:
            try:
                row = self._fast_one(_clip(texts[0]))
            except (AttributeError, ValueError, IndexError):
                row = None  # another sklearn's internals: the general path below
            if row is not None:
                return [
                    {
                        lab: float(row[classes.index(lab)]) if lab in classes else 0.0
                        for lab in self.labels
                    }
                ]
        matrix = self.vectorizer.transform([_clip(t) for t in texts])
        probs = self.classifier.predict_proba(matrix)
        return [
            {
                label: float(row[classes.index(label)]) if label in classes else 0.0
                for label in self.labels
            }
            for row in probs
        ]

    def predict(self, text: str) -> tuple[str, float, dict[str, float]]:
        probs = self.probabilities([text])[0]
        label = max(probs, key=lambda k: probs[k])
        return label, probs[label], probs

    def learned(self, label: str) -> bool:
        return self.support.get(label, 0) >= MIN_TYPE_SUPPORT

    def similar(
        self, text: str, candidates: Sequence[tuple[Any, str]], *, k: int = 3
    ) -> list[tuple[Any, float]]:
        """The ``k`` candidates (key, text) nearest to ``text`` by cosine similarity of the
        model's TF-IDF features, best first."""
        return nearest(self.vectorizer, text, candidates, k=k)


def nearest(
    vectorizer: Any, text: str, candidates: Sequence[tuple[Any, str]], *, k: int = 3
) -> list[tuple[Any, float]]:
    if not candidates or k <= 0:
        return []
    from sklearn.preprocessing import normalize

    query = normalize(vectorizer.transform([_clip(text)]))
    others = normalize(vectorizer.transform([_clip(t) for _, t in candidates]))
    scores = np.asarray((others @ query.T).todense()).ravel()
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], i))[:k]
    return [(candidates[i][0], round(float(scores[i]), 4)) for i in order]


def make_vectorizer(*, min_df: int = 2) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import FeatureUnion

    return FeatureUnion(
        [
            (
                "words",
                TfidfVectorizer(
                    lowercase=True,
                    ngram_range=(1, 2),
                    min_df=min_df,
                    max_df=0.9 if min_df > 1 else 1.0,
                    sublinear_tf=True,
                    max_features=WORD_FEATURES,
                    dtype=np.float32,
                ),
            ),
            (
                "chars",
                TfidfVectorizer(
                    lowercase=True,
                    analyzer="char_wb",
                    ngram_range=(4, 4),
                    min_df=min_df,
                    sublinear_tf=True,
                    max_features=CHAR_FEATURES,
                    dtype=np.float32,
                ),
            ),
        ]
    )


def fit(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    data_hash: str = "",
    meta: dict[str, Any] | None = None,
) -> TrainedModel:
    """Fit the vectorizer and the calibrated linear model. Needs at least two types."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.svm import LinearSVC

    support = Counter(labels)
    # Every calibration fold must hold every type: a type with fewer examples than folds is
    # left out of the model (the rules decide it, see TrainedClassifier and MIN_TYPE_SUPPORT).
    kept = [i for i, label in enumerate(labels) if support[label] >= CALIBRATION_FOLDS]
    if len({labels[i] for i in kept}) < 2:
        raise ValueError(
            f"Training needs at least {CALIBRATION_FOLDS} examples of each of two types."
        )
    started = time.perf_counter()
    vectorizer = make_vectorizer()
    matrix = vectorizer.fit_transform([_clip(texts[i]) for i in kept])
    classifier = CalibratedClassifierCV(
        LinearSVC(C=0.5, class_weight="balanced", random_state=SEED),
        method="sigmoid",
        cv=CALIBRATION_FOLDS,
    )
    classifier.fit(matrix, [labels[i] for i in kept])
    return TrainedModel(
        vectorizer=vectorizer,
        classifier=classifier,
        labels=[t.value for t in DOC_TYPES],
        support={t.value: support.get(t.value, 0) for t in DOC_TYPES},
        data_hash=data_hash
        or training_hash(
            [(str(i), lab, txt) for i, (txt, lab) in enumerate(zip(texts, labels, strict=True))]
        ),
        trained_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=round(time.perf_counter() - started, 3),
        meta=dict(meta or {}),
    )


def dump(model: TrainedModel, key: bytes) -> bytes:
    """The model as a signed blob: FORMAT, an HMAC-SHA256 (hex) of the payload, the payload."""
    import joblib

    buffer = io.BytesIO()
    joblib.dump(model, buffer, compress=3)
    payload = buffer.getvalue()
    signature = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    return FORMAT + signature + b"\n" + payload


def load(blob: bytes, key: bytes) -> TrainedModel:
    """Unpickle a blob only when its signature is ours; anything else is refused."""
    import joblib

    if not blob.startswith(FORMAT):
        raise UntrustedModel("Not a Vetted trained-classifier file.")
    rest = blob[len(FORMAT) :]
    signature, _, payload = rest.partition(b"\n")
    expected = hmac.new(key, payload, hashlib.sha256).hexdigest().encode()
    if not hmac.compare_digest(signature, expected):
        raise UntrustedModel(
            "The model file's signature does not match: it was not written by this Vetted "
            "(or it was changed), so it is not loaded."
        )
    model = joblib.load(io.BytesIO(payload))
    if not isinstance(model, TrainedModel):
        raise UntrustedModel("The file does not hold a trained classifier.")
    return model


def _relabel(segment: Segment, new: DocType, confidence: float) -> Segment:
    """The segment with ``new`` as its dominant type: it takes the PRIMARY presence and the
    largest share; the old dominant type becomes a mention (keeping its evidence)."""
    old = segment.dominant_type
    types = [t.model_copy(deep=True) for t in segment.types]
    by_type = {t.type: t for t in types}
    if new != old and new in by_type and old in by_type:
        a, b = by_type[old], by_type[new]
        a.segment_share, b.segment_share = b.segment_share, a.segment_share
        b.presence_level = Presence.PRIMARY
        a.presence_level = Presence.MENTION_ONLY if a.top_evidence else Presence.NO_EVIDENCE
        if a.presence_level == Presence.NO_EVIDENCE:
            a.confidence = 0.0
            b.segment_share = round(b.segment_share + a.segment_share, 4)
            a.segment_share = 0.0
        else:
            a.confidence = round(min(a.confidence, 1.0 - confidence), 3)
        b.reasoning = f"Trained classifier: probability {confidence:.3f}. " + b.reasoning
    if new in by_type:
        by_type[new].confidence = round(confidence, 3)
    return segment.model_copy(update={"dominant_type": new, "types": types})


class TrainedClassifier:
    """engine.protocols.Classifier: the offline segmentation and evidence, the trained
    model's type and calibrated confidence for each segment."""

    name = "trained"
    calibrated = True  # its confidence is a calibrated probability (see pipeline.Preset)

    def __init__(self, model: TrainedModel, base: OfflineClassifier | None = None) -> None:
        self.trained = model
        self.base = base or OfflineClassifier()

    @property
    def model(self) -> str:
        return f"trained-{self.trained.version}"

    @property
    def prompt_version(self) -> str:
        return self.trained.version

    def classify(self, pages: list[str], feedback: str | None = None) -> ClassificationOutput:
        """``feedback`` is ignored: the model is deterministic."""
        base = self.base.classify(pages)
        pages = pages or [""]
        texts = ["\n\n".join(pages[s.start_page - 1 : s.end_page]) for s in base.segments]
        predictions = self.trained.probabilities(texts)
        segments = []
        concerns = list(base.self_evaluation.concerns)
        for segment, probs in zip(base.segments, predictions, strict=True):
            label = max(probs, key=lambda k: probs[k])
            rules_say = segment.dominant_type.value
            if not self.trained.learned(rules_say) or not self.trained.learned(label):
                # A type the model barely saw: the rules' answer and confidence stand.
                segments.append(segment)
                continue
            if label != rules_say:
                concerns.append(
                    f"Pages {segment.start_page}-{segment.end_page}: the trained model says "
                    f"{label} ({probs[label]:.2f}), the rules {rules_say}."
                )
                if probs[label] < OVERRIDE_CONFIDENCE:
                    label = rules_say
            segments.append(_relabel(segment, DocType(label), probs[label]))
        mixture, overall = document_mixture(segments, len(pages))
        main = max(segments, key=lambda s: s.segment_page_count)
        dominant = main.assessment(main.dominant_type)
        return base.model_copy(
            update={
                "dominant_type_overall": overall,
                "segments": segments,
                "document_mixture": mixture,
                "self_evaluation": SelfEvaluation(
                    confidence=dominant.confidence if dominant else 0.0, concerns=concerns
                ),
            }
        )


__all__ = [
    "TrainedClassifier",
    "TrainedModel",
    "UntrustedModel",
    "dump",
    "fit",
    "load",
    "nearest",
    "training_hash",
]
