"""Breast pathology fields on generated reports, build and held-out templates side by side
(issue 37): loop precision and recall per template, and of the documents the loop scores
0.95 or more. The held-out templates (``pathgen_split.json``) are the test split; figures on
the build templates are development figures (the reader was built on them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks import pathgen
from benchmarks.evaluation import (
    HIGH_PRECISION,
    HIGH_RECALL,
    HIGH_SCORE,
    FieldCase,
    evaluate_field_cases,
)

TARGET_PRECISION, TARGET_RECALL = 0.95, 0.85  # loop, per template

Run = Callable[[str, list[str], bool], dict[str, Any]]


def cases(template: str, per_template: int) -> list[FieldCase]:
    return [
        FieldCase(doc.key, "pathology", [doc.text], dict(doc.truth))
        for doc in (pathgen.generate(template, i) for i in range(per_template))
    ]


def measure(
    run: Run, *, per_template: int = 40, splits: tuple[str, ...] = ("build", "held_out")
) -> dict[str, Any]:
    """{"build": ..., "held_out": ...}: each with its templates' loop figures and its own
    totals and >= 0.95 band (``splits``: only these; "build" alone while building)."""
    out: dict[str, Any] = {}
    for which in splits:
        chosen = [t for t in pathgen.templates() if pathgen.split_of(t) == which]
        every: list[FieldCase] = []
        per: dict[str, Any] = {}
        for template in chosen:
            some = cases(template, per_template)
            every += some
            loop = evaluate_field_cases(some, run=run)["loop"]
            per[template] = _figures(loop)
        loop = evaluate_field_cases(every, run=run)["loop"]
        total = _figures(loop)
        total["per_field"] = loop["per_field"]
        out[which] = {"templates": per, "all": total}
    out["targets"] = {
        "loop_precision": TARGET_PRECISION,
        "loop_recall": TARGET_RECALL,
        "band": HIGH_SCORE,
        "band_precision": HIGH_PRECISION,
        "band_recall": HIGH_RECALL,
    }
    return out


def _figures(loop: dict[str, Any]) -> dict[str, Any]:
    high = loop["score_bands"][0]
    return {
        "documents": loop["documents"],
        "precision": loop["precision"],
        "recall": loop["recall"],
        "band_documents": high["documents"],
        "band_precision": high["precision"] if high["documents"] else None,
        "band_recall": high["recall"] if high["documents"] else None,
    }


def _cell(f: dict[str, Any]) -> str:
    band = (
        f"{f['band_documents']:>4} P {f['band_precision']:.3f} R {f['band_recall']:.3f}"
        if f["band_documents"]
        else f"{0:>4} {'-':>15}"
    )
    return f"{f['documents']:>5} {f['precision']:>7.3f} {f['recall']:>7.3f}   {band}"


def format_report(m: dict[str, Any]) -> str:
    head = (
        f"{'template':<22}{'split':<10}{'docs':>5} {'loop P':>7} {'loop R':>7}   "
        ">= 0.95: docs, P, R"
    )
    lines = [
        "Breast pathology fields on generated reports (held_out = the frozen test split; build = "
        "development figures):",
        head,
    ]
    splits = [w for w in ("build", "held_out") if w in m]
    for which in splits:
        for template, f in m[which]["templates"].items():
            lines.append(f"{template:<22}{which:<10}{_cell(f)}")
    lines.append("")
    for which in splits:
        lines.append(f"{'all ' + which:<22}{which:<10}{_cell(m[which]['all'])}")
    lines += ["", f"{'field':<14}{'build P/R':>16}{'held_out P/R':>16}"]
    for name in pathgen.FIELDS:
        cells = []
        for which in ("build", "held_out"):
            f = m[which]["all"]["per_field"].get(name) if which in m else None
            cells.append(f"{f['precision']:.3f} / {f['recall']:.3f}" if f else "-")
        lines.append(f"{name:<14}{cells[0]:>16}{cells[1]:>16}")
    t = m["targets"]
    if "held_out" not in m:
        return "\n".join(lines)
    held = m["held_out"]
    per_ok = all(
        f["precision"] >= t["loop_precision"] and f["recall"] >= t["loop_recall"]
        for f in held["templates"].values()
    )
    a = held["all"]
    band_ok = bool(
        a["band_documents"]
        and a["band_precision"] >= t["band_precision"]
        and a["band_recall"] >= t["band_recall"]
    )
    lines += [
        "",
        f"Held-out: every template loop P >= {t['loop_precision']} and R >= {t['loop_recall']}: "
        f"{'met' if per_ok else 'missed'}; documents scoring >= {t['band']}: P >= "
        f"{t['band_precision']} and R >= {t['band_recall']}: {'met' if band_ok else 'missed'}.",
    ]
    return "\n".join(lines)
