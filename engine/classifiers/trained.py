"""The classifier trained on ground truth: TF-IDF word and character features and a linear
model whose probabilities are calibrated (CalibratedClassifierCV), so a confidence of 0.8 means
about 8 in 10 such answers are right and the presets' thresholds mean what they say.

``fit`` trains with scikit-learn, then keeps only what predicting needs as plain arrays: each
TF-IDF part's settings, vocabulary and idf weights (``Features``), and each calibrated member's
coefficients, intercepts and sigmoid parameters (``CalibratedLinear``). Tests hold the arithmetic
to scikit-learn's own ``transform`` and ``predict_proba``.

``dump``/``load`` store a model as data that cannot run code when it is read: a zip holding
``model.json`` (the settings, vocabularies, labels, version and training-data hash) and
``arrays.npz`` (numbers only, read with ``allow_pickle=False``), signed with an HMAC under a key
only Vetted holds. Older files were pickles: they are refused, never unpickled (retrain).

``TrainedClassifier`` is an engine.protocols.Classifier: the offline classifier gives the
segments and the verbatim evidence (a text classifier has no snippets to ground), and the
trained model names each segment's type with its calibrated probability as the confidence. For
a type the model saw too few examples of to learn (``MIN_TYPE_SUPPORT``), the rule-based answer
stands; where the model and the rules disagree, the model's type is given only when it is sure
(``OVERRIDE_CONFIDENCE``), and either way the rules, as the gate, send the run to a clinician.
``similar`` finds the nearest texts by the same features (the few-shot examples shown to the
LLM).

Pure: no Django.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import time
import zipfile
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

FORMAT = b"VETTED-TRAINED-CLASSIFIER-2\n"
# The first format was a pickle: recognised so that it can be refused with a reason.
PICKLE_FORMAT = b"VETTED-TRAINED-CLASSIFIER-1\n"
RETRAIN = (
    "This model was stored as a pickle by an older Vetted; pickles are no longer loaded, "
    "since reading one can run code. Retrain it: manage.py train_classifier."
)
MAX_MEMBER_BYTES = 512 * 1024 * 1024  # a model's arrays are tens of MB; refuse a zip bomb
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
# The TfidfVectorizer settings that shape its analyzer; stored with the model and used to
# rebuild the same analyzer when it is loaded.
ANALYZER_PARAMS = ("analyzer", "ngram_range", "lowercase", "token_pattern", "strip_accents")


class UntrustedModel(ValueError):
    """A model file that is not ours, damaged, or in a format that is no longer read."""


def _clip(text: str) -> str:
    return text[:MAX_CHARS]


def _analyzer(vectorizer: Any) -> Callable[[str], list[str]]:
    """The vectorizer's analyzer; for lower-cased character n-grams within word boundaries of
    one length, the same n-grams as sklearn's ``char_wb`` without its per-gram Python loop
    (the single-document path spends most of its time there)."""
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


# -- the fitted model as arrays -------------------------------------------------------------------


class TfidfPart:
    """One fitted TfidfVectorizer (sublinear tf, idf, l2 norm) as its settings, vocabulary and
    idf weights."""

    def __init__(self, name: str, params: dict[str, Any], terms: list[str], idf: np.ndarray):
        from sklearn.feature_extraction.text import TfidfVectorizer

        if len(terms) != len(idf) or idf.ndim != 1:
            raise ValueError(f"feature part {name!r}: vocabulary and idf weights differ")
        self.name = name
        self.params = params
        self.terms = terms
        self.vocabulary = {term: index for index, term in enumerate(terms)}
        if len(self.vocabulary) != len(terms):
            raise ValueError(f"feature part {name!r}: a term appears twice")
        self.idf = idf.astype(np.float64)
        # An unfitted vectorizer with the same settings gives the same analyzer.
        self.analyzer = _analyzer(
            TfidfVectorizer(
                **{**params, "ngram_range": tuple(params["ngram_range"])}  # JSON made it a list
            )
        )

    @classmethod
    def from_sklearn(cls, name: str, vectorizer: Any) -> TfidfPart:
        if not (
            vectorizer.sublinear_tf
            and vectorizer.use_idf
            and vectorizer.norm == "l2"
            and not vectorizer.binary
            and vectorizer.preprocessor is None
            and vectorizer.tokenizer is None
            and vectorizer.stop_words is None
            and isinstance(vectorizer.analyzer, str)
        ):
            raise ValueError(f"feature part {name!r}: settings this format does not keep")
        params = {key: getattr(vectorizer, key) for key in ANALYZER_PARAMS}
        params["ngram_range"] = list(params["ngram_range"])
        terms = [""] * len(vectorizer.vocabulary_)
        for term, index in vectorizer.vocabulary_.items():
            terms[int(index)] = term
        return cls(name, params, terms, np.asarray(vectorizer.idf_, dtype=np.float64))

    def weights(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(column indices, l2-normalised weights) of one text."""
        counts = Counter(self.analyzer(text))
        known = np.array([self.vocabulary.get(t, -1) for t in counts], dtype=np.int64)
        mask = known >= 0
        if not mask.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        idx = known[mask]
        tf = 1.0 + np.log(np.array(list(counts.values()), dtype=np.float64)[mask])
        values = tf * self.idf[idx]
        values /= np.linalg.norm(values) or 1.0
        return idx, values


class Features:
    """The TF-IDF parts side by side (as sklearn's FeatureUnion stacks them)."""

    def __init__(self, parts: list[TfidfPart]):
        self.parts = parts
        self.width = sum(len(p.idf) for p in parts)

    @classmethod
    def from_sklearn(cls, union: Any) -> Features:
        return cls([TfidfPart.from_sklearn(name, vec) for name, vec in union.transformer_list])

    def row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        indices: list[np.ndarray] = []
        values: list[np.ndarray] = []
        offset = 0
        for part in self.parts:
            idx, val = part.weights(text)
            indices.append(idx + offset)
            values.append(val)
            offset += len(part.idf)
        return np.concatenate(indices), np.concatenate(values)

    def transform(self, texts: Sequence[str]) -> Any:
        """A sparse matrix, one row per text: what sklearn's ``transform`` gives."""
        from scipy.sparse import csr_matrix

        rows = [self.row(_clip(t)) for t in texts]
        indptr = np.cumsum([0] + [len(idx) for idx, _ in rows])
        indices = np.concatenate([idx for idx, _ in rows]) if rows else np.zeros(0, np.int64)
        data = np.concatenate([val for _, val in rows]) if rows else np.zeros(0)
        return csr_matrix((data, indices, indptr), shape=(len(rows), self.width))


@dataclass(frozen=True)
class Member:
    """One calibrated linear model: decision = X @ coef.T + intercept; the probability of the
    class at ``positions[i]`` is 1 / (1 + exp(a[i] * decision[:, i] + b[i]))."""

    coef: np.ndarray  # (calibrators, features)
    intercept: np.ndarray  # (calibrators,)
    positions: list[int]
    a: np.ndarray
    b: np.ndarray


class CalibratedLinear:
    """CalibratedClassifierCV(method="sigmoid") over linear models, as arrays: the mean of its
    members' calibrated probabilities (sklearn's ``predict_proba``)."""

    def __init__(self, classes: list[str], members: list[Member]):
        if not members or len(classes) < 2:
            raise ValueError("a calibrated model needs members and at least two classes")
        for m in members:
            width = len(m.positions)
            if not (
                m.coef.ndim == 2
                and m.coef.shape[0] == width
                and m.intercept.shape == m.a.shape == m.b.shape == (width,)
                and all(0 <= p < len(classes) for p in m.positions)
            ):
                raise ValueError("a calibrated member's arrays do not fit together")
        self.classes = classes
        self.members = members

    @classmethod
    def from_sklearn(cls, calibrated: Any) -> CalibratedLinear:
        classes = [str(c) for c in calibrated.classes_]
        members = []
        for pair in calibrated.calibrated_classifiers_:
            estimator = pair.estimator
            if len(classes) == 2:
                positions = [1]  # one decision column: the probability of the second class
            else:
                positions = [classes.index(str(c)) for c in estimator.classes_]
            members.append(
                Member(
                    coef=np.asarray(estimator.coef_, dtype=np.float64),
                    intercept=np.asarray(estimator.intercept_, dtype=np.float64).ravel(),
                    positions=positions,
                    a=np.array([c.a_ for c in pair.calibrators], dtype=np.float64).ravel(),
                    b=np.array([c.b_ for c in pair.calibrators], dtype=np.float64).ravel(),
                )
            )
        return cls(classes, members)

    def predict_proba(self, matrix: Any) -> np.ndarray:
        k = len(self.classes)
        total = np.zeros((matrix.shape[0], k))
        for m in self.members:
            decision = np.asarray(matrix @ m.coef.T) + m.intercept
            proba = np.zeros_like(total)
            proba[:, m.positions] = 1.0 / (1.0 + np.exp(m.a * decision + m.b))
            if k == 2:
                proba[:, 0] = 1.0 - proba[:, 1]
            else:
                norm = proba.sum(axis=1, keepdims=True)
                proba = np.divide(proba, norm, out=np.full_like(proba, 1.0 / k), where=norm != 0)
            proba[(proba > 1.0) & (proba <= 1.0 + 1e-5)] = 1.0
            total += proba
        return total / len(self.members)


@dataclass
class TrainedModel:
    vectorizer: Features
    classifier: CalibratedLinear
    labels: list[str]
    support: dict[str, int]
    data_hash: str
    trained_at: str
    seconds: float
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return self.data_hash[:12]

    def probabilities(self, texts: Sequence[str]) -> list[dict[str, float]]:
        classes = self.classifier.classes
        probs = self.classifier.predict_proba(self.vectorizer.transform(texts))
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
    """``vectorizer``: a model's Features or a fitted sklearn vectorizer (``transform``)."""
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


def fit_estimators(texts: Sequence[str], labels: Sequence[str]) -> tuple[Any, Any]:
    """scikit-learn's fitted vectorizer (a FeatureUnion) and CalibratedClassifierCV. Needs at
    least two types; a type with fewer examples than calibration folds is left out."""
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
    vectorizer = make_vectorizer()
    matrix = vectorizer.fit_transform([_clip(texts[i]) for i in kept])
    classifier = CalibratedClassifierCV(
        LinearSVC(C=0.5, class_weight="balanced", random_state=SEED),
        method="sigmoid",
        cv=CALIBRATION_FOLDS,
    )
    classifier.fit(matrix, [labels[i] for i in kept])
    return vectorizer, classifier


def fit(
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    data_hash: str = "",
    meta: dict[str, Any] | None = None,
) -> TrainedModel:
    """Fit the vectorizer and the calibrated linear model, and keep them as arrays (the model
    in memory after training is the one a later load gives)."""
    started = time.perf_counter()
    vectorizer, classifier = fit_estimators(texts, labels)
    support = Counter(labels)
    return TrainedModel(
        vectorizer=Features.from_sklearn(vectorizer),
        classifier=CalibratedLinear.from_sklearn(classifier),
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


# -- storage: data only, signed -------------------------------------------------------------------


def _sign(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode()


def dump(model: TrainedModel, key: bytes) -> bytes:
    """The model as a signed blob: FORMAT, an HMAC-SHA256 (hex) of the payload, the payload (a
    zip of model.json and arrays.npz)."""
    arrays: dict[str, np.ndarray] = {}
    parts = []
    for i, part in enumerate(model.vectorizer.parts):
        arrays[f"idf_{i}"] = part.idf
        parts.append({"name": part.name, "params": part.params, "terms": part.terms})
    members = []
    for i, m in enumerate(model.classifier.members):
        arrays.update({f"coef_{i}": m.coef, f"intercept_{i}": m.intercept})
        arrays.update({f"a_{i}": m.a, f"b_{i}": m.b})
        members.append({"positions": m.positions})
    manifest = {
        "format": 2,
        "labels": model.labels,
        "support": model.support,
        "data_hash": model.data_hash,
        "trained_at": model.trained_at,
        "seconds": model.seconds,
        "meta": model.meta,
        "classes": model.classifier.classes,
        "features": parts,
        "members": members,
    }
    numbers = io.BytesIO()
    np.savez(numbers, allow_pickle=False, **arrays)
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        z.writestr("model.json", json.dumps(manifest, sort_keys=True))
        z.writestr("arrays.npz", numbers.getvalue())
    data = payload.getvalue()
    return FORMAT + _sign(key, data) + b"\n" + data


def _float_array(arrays: Any, name: str, ndim: int) -> np.ndarray:
    value = arrays[name]
    if value.dtype.kind != "f" or value.ndim != ndim:
        raise ValueError(f"{name}: not a {ndim}-dimensional array of numbers")
    return np.asarray(value, dtype=np.float64)


def _read(payload: bytes) -> TrainedModel:
    with zipfile.ZipFile(io.BytesIO(payload)) as z:
        infos = {info.filename: info for info in z.infolist()}
        if set(infos) != {"model.json", "arrays.npz"}:
            raise ValueError(f"unexpected contents {sorted(infos)}")
        if any(info.file_size > MAX_MEMBER_BYTES for info in infos.values()):
            raise ValueError("a part of the file is larger than a model can be")
        manifest = json.loads(z.read("model.json"))
        numbers = z.read("arrays.npz")
    if manifest.get("format") != 2:
        raise ValueError(f"format {manifest.get('format')!r} is not read here")
    # allow_pickle=False: an array of Python objects (the one way a .npy runs code) is refused.
    with np.load(io.BytesIO(numbers), allow_pickle=False) as arrays:
        parts = [
            TfidfPart(
                str(part["name"]),
                {k: part["params"][k] for k in ANALYZER_PARAMS},
                [str(t) for t in part["terms"]],
                _float_array(arrays, f"idf_{i}", 1),
            )
            for i, part in enumerate(manifest["features"])
        ]
        members = [
            Member(
                coef=_float_array(arrays, f"coef_{i}", 2),
                intercept=_float_array(arrays, f"intercept_{i}", 1),
                positions=[int(p) for p in member["positions"]],
                a=_float_array(arrays, f"a_{i}", 1),
                b=_float_array(arrays, f"b_{i}", 1),
            )
            for i, member in enumerate(manifest["members"])
        ]
    features = Features(parts)
    if any(m.coef.shape[1] != features.width for m in members):
        raise ValueError("the model's coefficients do not match its features")
    return TrainedModel(
        vectorizer=features,
        classifier=CalibratedLinear([str(c) for c in manifest["classes"]], members),
        labels=[str(label) for label in manifest["labels"]],
        support={str(k): int(v) for k, v in manifest["support"].items()},
        data_hash=str(manifest["data_hash"]),
        trained_at=str(manifest["trained_at"]),
        seconds=float(manifest["seconds"]),
        meta=dict(manifest.get("meta") or {}),
    )


def load(blob: bytes, key: bytes) -> TrainedModel:
    """Read a blob written by ``dump`` with this key. Nothing in it can run code when read
    (JSON, and numeric arrays read without pickle); the signature still decides whether it is
    ours. A pickle (this file's first format, or anything else) is refused unread."""
    if blob.startswith(PICKLE_FORMAT):
        raise UntrustedModel(RETRAIN)
    if not blob.startswith(FORMAT):
        raise UntrustedModel("Not a Vetted trained-classifier file.")
    signature, _, payload = blob[len(FORMAT) :].partition(b"\n")
    if not hmac.compare_digest(signature, _sign(key, payload)):
        raise UntrustedModel(
            "The model file's signature does not match: it was not written by this Vetted "
            "(or it was changed), so it is not loaded."
        )
    try:
        return _read(payload)
    except (ValueError, KeyError, TypeError, zipfile.BadZipFile, OSError) as exc:
        raise UntrustedModel(f"The model file cannot be read: {exc}") from None


def signed_with(blob: bytes, keys: list[bytes]) -> int | None:
    """Which of ``keys`` signed ``blob`` (its index), or None: how a model signed before a key
    rotation is recognised by the key it was signed with (a fallback) and then re-signed."""
    if not blob.startswith(FORMAT):
        return None
    signature, _, payload = blob[len(FORMAT) :].partition(b"\n")
    for index, key in enumerate(keys):
        if hmac.compare_digest(signature, _sign(key, payload)):
            return index
    return None


def resign(blob: bytes, key: bytes) -> bytes:
    """``blob`` with its signature made by ``key``; the payload is unchanged, byte for byte.
    The caller has checked the old signature (``signed_with``)."""
    _signature, _, payload = blob[len(FORMAT) :].partition(b"\n")
    return FORMAT + _sign(key, payload) + b"\n" + payload


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
    "CalibratedLinear",
    "Features",
    "TrainedClassifier",
    "TrainedModel",
    "UntrustedModel",
    "dump",
    "fit",
    "fit_estimators",
    "load",
    "nearest",
    "training_hash",
]
