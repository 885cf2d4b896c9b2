"""Exemplar memory: the documents clinicians labelled, kept as TF-IDF rows, so that a decision
changes what the next document of that kind gets at once, without waiting for a retrain.

A document's *vote* is read from its ``k`` nearest exemplars **of the same source** (cosine
similarity in the trained model's word TF-IDF space): the weighted share that carry the type
the classifier gave. Its exemplar score is that share (in [0, 1]); it counts only when the
``k`` nearest exemplars of the source all have a similarity of at least ``min_similarity``
(a look-alike, not merely the least unlike). ``combined_score`` folds it into the
acceptance score: unanimous support raises the score to the exemplar score when that is
higher; any neighbour that disagrees lowers the score to at most the exemplar score, so a
clinician's correction holds back the next look-alike as fast as a validation lets it through.

The memory is per source on purpose: a source is what a hospital sees as "a kind of document
from one sender", and its look-alikes are where a decision should count first; what sources
share is the certified threshold on the combined score (engine.risk), computed over every
source together.

**The source's vote** (a fallback, ``scope`` "source"): a source whose documents are not
look-alikes of each other but are all one kind (forms of one lab, one practice's letters)
never gives ``k`` neighbours at ``min_similarity``, so the look-alikes never vote. When they
do not, the source's own recent labels vote instead: if its last ``source_window`` clinician
labels (all of them when it has fewer, at least ``source_min``) all carry one type, that type
is the vote. ``combined_score`` treats it as any unanimous vote: it raises a score only when
it is the classifier's own type and the source's trust record (``CellTrust``) allows, and it
lowers the score of a document the classifier gives another type. A poisoner who labels every
document of a source with one type can therefore only hold the classifier's other answers
back, never make a type the classifier does not give accepted. Unlike look-alikes, it does
not lift the novelty check (engine.acceptance): it says what the source sends, not that this
document is like one a clinician saw. The window makes it "all one kind": one label of
another type among the last ``source_window`` silences it.

Each exemplar carries a weight (the reviewer's, reliability.learner): a label the label-error
check doubts, or one from a reviewer whose labels audits overruled, weighs less, and a weight
of 0 removes it. Near-duplicates are collapsed (an exemplar within ``duplicate_similarity`` of
one already in memory with the same label and source adds weight to nothing), so a flood of
copies counts as one document.

Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_CHARS = 8_000
K = 3
MIN_SIMILARITY = 0.35
DUPLICATE_SIMILARITY = 0.97
SOURCE_MIN = 3  # labels before the source's own vote counts
SOURCE_WINDOW = 20  # the source's recent labels that must all agree (0: no source vote)


@dataclass(frozen=True)
class ExemplarVote:
    """What the memory says about one document: its k nearest exemplars of its source."""

    neighbours: list[tuple[str, str, float, float]] = field(
        default_factory=list
    )  # key, label, sim, weight
    enough: bool = False  # k neighbours of the source, each at min_similarity or more
    # Whether the source's memory has earned trust (``CellTrust``): until then it may only
    # hold a document back (a disagreement), never let one through.
    trusted: bool = True
    # "neighbours": the k look-alikes voted; "source": none did, and the source's recent
    # labels, all of one type, voted instead (the neighbours are those labels).
    scope: str = "neighbours"

    def support(self, predicted: str) -> float:
        """The weighted share of the neighbours that carry ``predicted``."""
        total = sum(w for *_, w in self.neighbours)
        agree = sum(w for _, label, _, w in self.neighbours if label == predicted)
        return agree / total if total > 0 else 0.0

    def score(self, predicted: str) -> float:
        return round(self.support(predicted), 4) if self.enough else 0.0

    def label(self) -> str | None:
        """The neighbours' label when they all carry one, else None."""
        labels = {label for _, label, _, w in self.neighbours if w > 0}
        return next(iter(labels)) if self.enough and len(labels) == 1 else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "neighbours": [[k, label, round(s, 4), w] for k, label, s, w in self.neighbours],
            "enough": self.enough,
            "scope": self.scope,
        }


def combined_score(score: float, vote: ExemplarVote | None, predicted: str) -> float:
    """The acceptance score with the memory's vote folded in (see the module's docstring)."""
    if vote is None or not vote.enough:
        return score
    support = vote.score(predicted)
    if support >= 0.999:
        return max(score, support) if vote.trusted else score
    return min(score, support)


@dataclass
class CellTrust:
    """A source's record of the memory against its clinicians: each label given while the
    memory's vote for that document was unanimous either confirmed the vote or contradicted
    it. The source's memory is trusted (may raise a score) once ``cell_min`` votes were
    confirmed and none contradicted; one contradiction withdraws the trust until
    ``cell_min`` more confirmations follow it."""

    confirmed: int = 0
    contradicted: int = 0
    since_contradiction: int = 0
    streak: list[str] = field(default_factory=list)  # keys confirmed since the contradiction

    def record(self, *, agreed: bool, key: str = "") -> None:
        if agreed:
            self.confirmed += 1
            self.since_contradiction += 1
            self.streak.append(key)
        else:
            self.contradicted += 1
            self.since_contradiction = 0
            self.streak = []

    def certified_by(self, cell_min: int) -> str | None:
        """The key of the label whose confirmation made the source trusted, if it is."""
        return self.streak[cell_min - 1] if len(self.streak) >= cell_min else None

    def trusted(self, cell_min: int) -> bool:
        return self.since_contradiction >= cell_min

    def needed(self, cell_min: int) -> int:
        """Confirmed votes still needed before the source is trusted."""
        return max(0, cell_min - self.since_contradiction)

    def bound(self, delta: float) -> float:
        """One-sided (1 - delta) Clopper-Pearson upper bound of the rate at which the
        source's unanimous votes are wrong."""
        from engine.risk import clopper_pearson_upper

        return clopper_pearson_upper(self.contradicted, self.confirmed + self.contradicted, delta)


class ExemplarMemory:
    """Clinician-labelled documents by source, as normalised TF-IDF rows. ``add`` is cheap
    (one transform), so the memory follows every decision."""

    def __init__(
        self,
        vectorizer: Any,
        *,
        k: int = K,
        min_similarity: float = MIN_SIMILARITY,
        duplicate_similarity: float = DUPLICATE_SIMILARITY,
        source_min: int = SOURCE_MIN,
        source_window: int = SOURCE_WINDOW,
    ) -> None:
        self.vectorizer = vectorizer
        self.k = k
        self.min_similarity = min_similarity
        self.duplicate_similarity = duplicate_similarity
        self.source_min = max(1, source_min)
        self.source_window = source_window
        # per source: keys, labels, weights and the stacked rows
        self._keys: dict[str, list[str]] = {}
        self._labels: dict[str, list[str]] = {}
        self._weights: dict[str, list[float]] = {}
        self._rows: dict[str, Any] = {}
        self._where: dict[str, tuple[str, int]] = {}

    def _vector(self, text: str) -> Any:
        from sklearn.preprocessing import normalize

        return normalize(self.vectorizer.transform([text[:MAX_CHARS]]).astype(np.float32))

    def __len__(self) -> int:
        return len(self._where)

    def sources(self) -> list[str]:
        return sorted(self._keys)

    def count(self, source: str) -> int:
        return sum(1 for w in self._weights.get(source, []) if w > 0)

    def add(self, key: str, text: str, label: str, source: str, *, weight: float = 1.0) -> bool:
        """Remember (or relabel) one clinician-labelled document. Returns False when it was
        collapsed into a near-duplicate already remembered with the same label."""
        import scipy.sparse as sp

        if key in self._where:
            src, i = self._where[key]
            self._labels[src][i] = label
            self._weights[src][i] = weight
            return True
        row = self._vector(text)
        rows = self._rows.get(source)
        if rows is not None and rows.shape[0]:
            sims = np.asarray((rows @ row.T).todense()).ravel()
            j = int(np.argmax(sims))
            if sims[j] >= self.duplicate_similarity and self._labels[source][j] == label:
                return False
        self._keys.setdefault(source, []).append(key)
        self._labels.setdefault(source, []).append(label)
        self._weights.setdefault(source, []).append(weight)
        self._rows[source] = row if rows is None else sp.vstack([rows, row], format="csr")
        self._where[key] = (source, len(self._keys[source]) - 1)
        return True

    def reweigh(self, key: str, weight: float) -> None:
        if key in self._where:
            src, i = self._where[key]
            self._weights[src][i] = weight

    def trust(self, source: str) -> CellTrust:
        """The source's record, replayed in the order its labels were remembered: each label
        against the unanimous vote of the labels before it (as the labels arrived, when they
        are remembered in the order they were given)."""
        record = CellTrust()
        rows = self._rows.get(source)
        if rows is None:
            return record
        labels, weights = self._labels[source], self._weights[source]
        sims = np.asarray((rows @ rows.T).todense())
        for i in range(rows.shape[0]):
            if weights[i] <= 0:
                continue
            before = [j for j in np.argsort(-sims[i, :i]) if weights[int(j)] > 0][: self.k]
            if len(before) >= self.k and min(sims[i, j] for j in before) >= self.min_similarity:
                voted = {labels[int(j)] for j in before}
            else:
                run = self._source_run(source, [weights[j] > 0 for j in range(i)])
                voted = {labels[run[0]]} if run else set()
            if len(voted) == 1:
                record.record(agreed=voted == {labels[i]}, key=self._keys[source][i])
        return record

    def _source_run(self, source: str, usable: Sequence[bool]) -> list[int]:
        """The source's vote when its look-alikes give none: the indices of its last
        ``source_window`` usable labels (of those before ``len(usable)``), when there are at
        least ``source_min`` and they all carry one type; else empty."""
        if self.source_window <= 0:
            return []
        labels = self._labels[source]
        recent = [i for i, ok in enumerate(usable) if ok][-self.source_window :]
        if len(recent) < self.source_min or len({labels[i] for i in recent}) != 1:
            return []
        return recent

    def label_of(self, key: str) -> str | None:
        if key not in self._where:
            return None
        src, i = self._where[key]
        return self._labels[src][i]

    def vote(
        self, text: str, source: str, *, exclude: Sequence[str] = (), trusted: bool = True
    ) -> ExemplarVote:
        """The k nearest exemplars of ``source`` (``exclude``: keys left out, for a document's
        own label when it is scored out of sample)."""
        rows = self._rows.get(source)
        if rows is None or not rows.shape[0]:
            return ExemplarVote()
        sims = np.asarray((rows @ self._vector(text).T).todense()).ravel()
        weights = self._weights[source]
        usable = np.asarray([w > 0 for w in weights])
        for key in exclude:
            where = self._where.get(key)
            if where is not None and where[0] == source:
                usable[where[1]] = False
        order = [int(i) for i in np.argsort(-sims) if usable[int(i)]][: self.k]
        keys, labels = self._keys[source], self._labels[source]
        neighbours = [(keys[i], labels[i], float(sims[i]), weights[i]) for i in order]
        enough = len(order) >= self.k and all(s >= self.min_similarity for *_, s, _ in neighbours)
        if not enough:
            run = self._source_run(source, [bool(u) for u in usable])
            if run:
                return ExemplarVote(
                    neighbours=[(keys[i], labels[i], float(sims[i]), weights[i]) for i in run],
                    enough=True,
                    trusted=trusted,
                    scope="source",
                )
        return ExemplarVote(neighbours=neighbours, enough=enough, trusted=trusted)


__all__ = ["CellTrust", "ExemplarMemory", "ExemplarVote", "combined_score"]
