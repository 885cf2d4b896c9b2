"""Learned waivers on the production run path (issue 33, part 3).

An escalation code that clinicians overruled on a source many times, and never upheld, stops
escalating runs of that source, under the same rules as bench_learning (reliability.learner:
``waivable``, ``waived_codes``):

- counted per (source, code) over the current clinician labels given on runs: a label equal to
  the run's machine type *overruled* each of the run's codes, a different one *upheld* them;
  a code is waived on the source after LEARNING_WAIVER_AFTER overrulings and no upholding (an
  audit that corrects a run accepted by a waiver upholds its codes, and the waiver ends);
- only while the bound holds: the run's thresholds are certified (risk control is on and the
  loop certified a table for the primary) and the source's exemplar memory is trusted
  (engine.exemplars.CellTrust); the bound's own checks (``below_risk_threshold``,
  ``no_risk_certificate``) are safety codes, so a waiver never lets a score under its
  certified threshold through;
- never a safety code (text addressed to a model, hidden text, fabricated evidence,
  unreadable pages, no answer; ``SAFETY_CODES``) and never a BLOCKER;
- what is left after the waived issues must be something the arbiter accepts with.

The counts are rebuilt when ground truth changes (the exemplar memory's marker and the count
of clinician labels, as reliability.learning.run_memory).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db.models import F

from core.caching import cache_get
from engine.exemplars import CellTrust
from engine.schemas import Decision
from reliability import hooks, learning
from reliability.learner import SAFETY_CODES, waived_codes
from reliability.models import Attempt, Issue

_cache: dict[str, dict[str, frozenset[str]]] = {}
_lock = threading.Lock()


def overrule_counts() -> dict[tuple[str, str], tuple[int, int]]:
    """(source, code) -> (overruled, upheld) over the current clinician labels on runs."""
    labels = dict(row for found in hooks.clinician_run_labels() for row in found)
    if not labels:
        return {}
    best = {
        attempt_id: (run_id, str(source or ""), str(machine or ""))
        for attempt_id, run_id, source, machine in Attempt.objects.filter(
            run_id__in=list(labels), number=F("run__best_attempt_number")
        ).values_list(
            "pk", "run_id", "run__learning__source", "classification__dominant_type_overall"
        )
    }
    codes: dict[int, set[str]] = defaultdict(set)
    for attempt_id, code in Issue.objects.filter(attempt_id__in=list(best)).values_list(
        "attempt_id", "code"
    ):
        codes[attempt_id].add(code)
    counts: dict[tuple[str, str], list[int]] = {}
    for attempt_id, (run_id, source, machine) in best.items():
        if not source or not machine:
            continue  # a run from before the loop recorded its source
        for code in codes.get(attempt_id, ()):
            tally = counts.setdefault((source, code), [0, 0])
            tally[0 if labels[run_id] == machine else 1] += 1
    return {key: (o, u) for key, (o, u) in counts.items()}


def learned_waivers() -> dict[str, frozenset[str]]:
    """source -> the codes learned harmless there (see the module's docstring)."""
    if not settings.LEARNING_WAIVERS:
        return {}
    key = f"{cache_get(learning.MEMORY_MARKER, '')}:{learning.clinician_labels()}"
    with _lock:
        if key in _cache:
            return _cache[key]
    out: dict[str, set[str]] = {}
    for (source, code), (overruled, upheld) in overrule_counts().items():
        harmless = overruled >= settings.LEARNING_WAIVER_AFTER and upheld == 0
        if harmless and code not in SAFETY_CODES:
            out.setdefault(source, set()).add(code)
    found = {source: frozenset(codes) for source, codes in out.items()}
    with _lock:
        _cache.clear()
        _cache[key] = found
    return found


def waivers_in_force() -> dict[str, frozenset[str]]:
    """The learned waivers that runs apply now: those of sources whose memory is trusted. A
    learning attempt calibrates its thresholds on the chain with these (reliability.learning),
    so the bound is computed on the chain as runs decide."""
    found = learned_waivers()
    if not found:
        return {}
    _, trust = learning.run_memory()
    cell_min = settings.LEARNING_MEMORY_CELL_MIN
    return {
        source: codes
        for source, codes in found.items()
        if trust.get(source, CellTrust()).trusted(cell_min)
    }


def run_waived(outcome: Any, *, source: str, certified: bool) -> list[str]:
    """The codes whose learned waiver turns this escalated outcome into an acceptance on
    ``source`` (empty: the decision stands). ``certified``: the run's thresholds are the
    loop's certified ones (reliability.learning.RunChecks.table)."""
    if not certified or not settings.LEARNING_WAIVERS:
        return []
    if outcome.decision == Decision.AUTO_ACCEPT:
        return []
    waivers = learned_waivers().get(source)
    if not waivers:
        return []
    _, trust = learning.run_memory()
    if not trust.get(source, CellTrust()).trusted(settings.LEARNING_MEMORY_CELL_MIN):
        return []
    return waived_codes(outcome.best.verification.issues, waivers)


__all__ = ["learned_waivers", "overrule_counts", "run_waived", "waivers_in_force"]
