"""Novelty: is a document unlike anything the model was trained on?

A document's *similarity* is the mean cosine similarity of its ``k`` nearest training
documents in the trained model's TF-IDF space. The reference scores are the same figure for
every training document against the others (leave one out). The conformal p-value of a new
document is the share of reference scores at or below its own, (1 + #{s_j <= s}) / (n + 1);
a document with p-value at most ``alpha`` is novel ("a kind of document not seen before");
with fewer than 1 / alpha - 1 training documents, one less similar than all of them is. For a
document like the training documents (exchangeable with them), this happens with
probability at most ``alpha`` (Bates, Candès, Lei, Romano and Sesia, "Testing for outliers
with conformal p-values", Annals of Statistics 2023), so ``alpha`` is the false-alarm rate a
deployment pays for the check. A vendor named in the document that no training document
names is novel too (a report from a laboratory never seen).

Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_CHARS = 20_000  # as engine.classifiers.trained: the head of a document says what it is
CHUNK = 512
FORMAT = "vetted-novelty-1"
NOVEL_REASON = "a kind of document not seen before"


@dataclass(frozen=True)
class Novelty:
    similarity: float  # mean cosine similarity of the k nearest training documents
    p_value: float
    novel: bool
    nearest: list[tuple[str, float]] = field(default_factory=list)  # (key, similarity)
    unknown_vendors: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        if not self.novel:
            return ""
        parts = []
        if self.unknown_vendors:
            vendors = ", ".join(self.unknown_vendors)
            parts.append(f"it names a vendor no training document names ({vendors})")
        parts.append(
            f"its nearest training documents have similarity {self.similarity:.2f} "
            f"(conformal p-value {self.p_value:.3f})"
        )
        return f"{NOVEL_REASON}: " + "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "similarity": round(self.similarity, 4),
            "p_value": round(self.p_value, 4),
            "novel": self.novel,
            "nearest": [[k, round(s, 4)] for k, s in self.nearest],
            "unknown_vendors": list(self.unknown_vendors),
        }


def _normalise(matrix: Any) -> Any:
    from sklearn.preprocessing import normalize

    return normalize(matrix.astype(np.float32), copy=False)


def _top_mean(similarities: np.ndarray, k: int) -> np.ndarray:
    """Per row, the mean of the k largest values."""
    k = max(1, min(k, similarities.shape[1]))
    top = np.partition(similarities, -k, axis=1)[:, -k:]
    return np.asarray(top.mean(axis=1)).ravel()


@dataclass
class NoveltyIndex:
    """The training documents as normalised TF-IDF rows, and their leave-one-out scores."""

    vectorizer: Any
    matrix: Any  # scipy sparse, one normalised row per reference document
    keys: list[str]
    reference: np.ndarray  # sorted leave-one-out scores
    known_vendors: frozenset[str]
    vendors: tuple[str, ...]
    k: int = 3
    alpha: float = 0.01

    @classmethod
    def build(
        cls,
        vectorizer: Any,
        texts: Sequence[str],
        keys: Sequence[str],
        *,
        k: int = 3,
        alpha: float = 0.01,
        vendors: Sequence[str] = (),
    ) -> NoveltyIndex:
        """From the model's fitted vectorizer and its training texts."""
        if len(texts) < 2:
            raise ValueError("A novelty index needs at least two training documents.")
        matrix = _normalise(vectorizer.transform([t[:MAX_CHARS] for t in texts])).tocsr()
        scores = []
        for start in range(0, matrix.shape[0], CHUNK):
            block = (matrix[start : start + CHUNK] @ matrix.T).toarray()
            for i in range(block.shape[0]):
                block[i, start + i] = -np.inf  # leave the document itself out
            scores.append(_top_mean(block, k))
        lowered = [t.lower() for t in texts]
        known = frozenset(v for v in vendors if any(v.lower() in t for t in lowered))
        return cls(
            vectorizer=vectorizer,
            matrix=matrix,
            keys=[str(key) for key in keys],
            reference=np.sort(np.concatenate(scores)),
            known_vendors=known,
            vendors=tuple(vendors),
            k=k,
            alpha=alpha,
        )

    def dump(self) -> bytes:
        """The reference as a compressed numpy archive of plain arrays (no pickle: loaded
        with ``allow_pickle=False``). The vectorizer is the model's, stored with it."""
        import io

        matrix = self.matrix.tocsr()
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer,
            format=np.array([FORMAT]),
            data=matrix.data.astype(np.float16),
            indices=matrix.indices.astype(np.int32),
            indptr=matrix.indptr.astype(np.int64),
            shape=np.array(matrix.shape, dtype=np.int64),
            keys=np.array(self.keys, dtype=np.str_),
            reference=self.reference.astype(np.float32),
            known_vendors=np.array(sorted(self.known_vendors), dtype=np.str_),
            vendors=np.array(self.vendors, dtype=np.str_),
            params=np.array([self.k, self.alpha], dtype=np.float64),
        )
        return buffer.getvalue()

    @classmethod
    def load(cls, blob: bytes, vectorizer: Any) -> NoveltyIndex:
        import io

        from scipy.sparse import csr_matrix

        with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
            if str(arrays["format"][0]) != FORMAT:
                raise ValueError("Not a Vetted novelty reference.")
            shape = tuple(int(x) for x in arrays["shape"])
            matrix = csr_matrix(
                (arrays["data"].astype(np.float32), arrays["indices"], arrays["indptr"]),
                shape=shape,
            )
            k, alpha = arrays["params"]
            return cls(
                vectorizer=vectorizer,
                matrix=matrix,
                keys=[str(x) for x in arrays["keys"]],
                reference=arrays["reference"].astype(np.float64),
                known_vendors=frozenset(str(x) for x in arrays["known_vendors"]),
                vendors=tuple(str(x) for x in arrays["vendors"]),
                k=int(k),
                alpha=float(alpha),
            )

    @property
    def size(self) -> int:
        return len(self.keys)

    @property
    def level(self) -> float:
        """The p-value at or below which a document is novel: ``alpha``, or, with fewer than
        1 / alpha - 1 training documents, the least p-value there is (less similar than every
        training document), so a small reference can still flag; its false-alarm rate is then
        1 / (n + 1)."""
        return max(self.alpha, 1.0 / (len(self.reference) + 1))

    def p_value(self, similarity: float) -> float:
        at_or_below = int(np.searchsorted(self.reference, similarity, side="right"))
        return (1 + at_or_below) / (len(self.reference) + 1)

    def score(self, text: str) -> Novelty:
        row = _normalise(self.vectorizer.transform([text[:MAX_CHARS]]))
        similarities = np.asarray((self.matrix @ row.T).toarray()).ravel()
        k = max(1, min(self.k, len(similarities)))
        order = np.argsort(-similarities, kind="stable")[:k]
        similarity = float(similarities[order].mean())
        p = self.p_value(similarity)
        lowered = text.lower()
        unknown = sorted(
            {v for v in self.vendors if v not in self.known_vendors and v.lower() in lowered}
        )
        return Novelty(
            similarity=similarity,
            p_value=p,
            novel=p <= self.level or bool(unknown),
            nearest=[(self.keys[i], float(similarities[i])) for i in order],
            unknown_vendors=unknown,
        )


__all__ = ["NOVEL_REASON", "Novelty", "NoveltyIndex"]
