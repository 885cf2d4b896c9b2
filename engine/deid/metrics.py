"""Token-level recall and precision of PHI removal (manage.py bench_deid).

A token is a run of letters or digits (``\\w+``). A gold PHI token counts as removed only when
every one of its characters lies inside a predicted span: a name whose first half was replaced
still leaks its second half. Recall of a type: its gold tokens removed over its gold tokens.
Precision of a type: the tokens predicted as that type that are gold PHI of any type, over the
tokens predicted as that type (removing a date that the gold standard calls an identifier is
still a correct removal). Overall figures count every token once.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.deid.spans import Phi

TOKEN = re.compile(r"\w+")


@dataclass
class Score:
    """Counts over a corpus; ``report`` gives the figures."""

    gold: Counter[str] = field(default_factory=Counter)  # gold tokens per gold type
    removed: Counter[str] = field(default_factory=Counter)  # of those, removed
    predicted: Counter[str] = field(default_factory=Counter)  # predicted tokens per type
    correct: Counter[str] = field(default_factory=Counter)  # of those, gold PHI
    documents: int = 0
    missed: list[tuple[str, str, str]] = field(default_factory=list)  # (doc, type, token)
    spurious: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, doc_id: str, text: str, gold: Sequence[Phi], predicted: Sequence[Phi]) -> None:
        self.documents += 1
        gold_mask = _mask(len(text), gold)
        predicted_mask = _mask(len(text), predicted)
        for match in TOKEN.finditer(text):
            start, end = match.span()
            gold_type = _type_of(gold_mask, start, end, whole=False)
            predicted_type = _type_of(predicted_mask, start, end, whole=True)
            if gold_type:
                self.gold[gold_type] += 1
                if predicted_type:
                    self.removed[gold_type] += 1
                else:
                    self.missed.append((doc_id, gold_type, match.group()))
            if predicted_type:
                self.predicted[predicted_type] += 1
                if gold_type:
                    self.correct[predicted_type] += 1
                else:
                    self.spurious.append((doc_id, predicted_type, match.group()))

    def report(self) -> dict[str, Any]:
        """``recall``, ``precision``, ``per_type`` (type -> recall, precision, support: its gold
        tokens), and the token counts behind them."""
        types = sorted(set(self.gold) | set(self.predicted))
        gold, removed = sum(self.gold.values()), sum(self.removed.values())
        predicted, correct = sum(self.predicted.values()), sum(self.correct.values())
        return {
            "recall": _ratio(removed, gold),
            "precision": _ratio(correct, predicted),
            "per_type": {
                t: {
                    "recall": _ratio(self.removed[t], self.gold[t]),
                    "precision": _ratio(self.correct[t], self.predicted[t]),
                    "support": self.gold[t],
                }
                for t in types
            },
            "documents": self.documents,
            "tokens": {"gold": gold, "removed": removed, "predicted": predicted},
        }


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _mask(length: int, spans: Iterable[Phi]) -> list[str]:
    mask = [""] * length
    for span in spans:
        for i in range(max(0, span.start), min(length, span.end)):
            mask[i] = mask[i] or span.type
    return mask


def _type_of(mask: list[str], start: int, end: int, *, whole: bool) -> str:
    """The type covering the token: for predictions every character must be covered (a
    partly replaced token still leaks); for gold, any annotated character makes it PHI."""
    covered = [mask[i] for i in range(start, end)]
    if whole:
        return covered[0] if all(covered) else ""
    return next((t for t in covered if t), "")
