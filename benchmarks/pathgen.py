"""Generated breast pathology reports with their true canonical values (issue 37).

A *template* is a layout (synoptic checklist, narrative, table, institution form; a two-column
page and a letter in the second wave) and a wording variant (``a``-``e``; the second wave's
``f``, ``g`` build and ``h`` held out, see ``NEW_VARIANTS``; the third wave's ``i``, ``j`` build
and ``k`` held out, see ``THIRD_VARIANTS``; the fourth wave's ``l``, ``m`` build and ``n`` held
out, see ``FOURTH_VARIANTS``); every phrase the generator
writes comes from a pool of wordings, and variant ``v`` draws only from the wordings at the
positions that variant owns, so a held-out variant shares no wording choice with the build
variants. Every document also draws
the classes of difficulty a real report has: OCR noise (broken words, wrapped lines, l/1 and
O/0 confusions), addenda that add or correct receptor results (the later supersedes), several
specimens, results pending or sent out, a result quoted from a previous biopsy (not a value),
ICD-O codes beside the words, printed labels with empty boxes (not a value).

The split is frozen in ``pathgen_split.json`` (committed before the reader was tuned): its
``held_out`` templates are measured, never looked at while building.

Truth is canonical (see ``engine.fields.oncology``): ER/PR ``positive`` / ``negative`` /
``low positive`` with the percentage and intensity; HER2 ``positive`` / ``negative`` /
``equivocal`` by the ASCO/CAP rule; histology as its ICD-O code and WHO term; Nottingham grade
with its score; margins ``involved`` / ``not involved`` with the closest distance. ``None``:
the report gives no current value.

Pure: no Django.
"""

from __future__ import annotations

import json
import random
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

SPLIT_FILE = Path(__file__).resolve().parent / "pathgen_split.json"
LAYOUTS = ("synoptic", "narrative", "table", "form")
VARIANTS = ("a", "b", "c")
# Build-only variants added after the split was frozen: each draws the build positions of a
# pool (d those of a, e those of b, never c's) plus wordings of its own (``extra``), such as a
# CAP checklist's component rows; the held-out variant c is untouched by them.
BUILD_EXTRA = ("d", "e")
# A second wave of variants (issue 37, after two measurements of c): wordings of their own,
# written from CAP breast checklists and real reports, and layouts the first wave lacks (value on
# the next line, upper-case keys with no colon, leader dots, component grade rows, two tumours).
# A pool's ``new`` wordings are dealt out by position: f 0, 3, ...; g 1, 4, ...; h 2, 5, ...
# Where a pool has none, f and g draw the build positions of the old pool (a's and b's) and h
# the held-out ones (c's): h never writes a build wording. f and g are build variants, h is held
# out, and so is every template of the letter layout.
NEW_BUILD = ("f", "g")
NEW_HELD = ("h",)
NEW_VARIANTS = NEW_BUILD + NEW_HELD
# Layouts of the second wave: two columns read across by OCR; a consultant's letter (held out
# entirely: it has only variant h).
NEW_LAYOUTS = ("twocol", "letter")
# A third wave (issue 37, after h was measured and so spent): i and j build, k held out, for every
# layout of both waves, with pools of their own (``THIRD_*``: positions i 0, 3, ...; j 1, 4, ...;
# k 2, 5, ...) written from real reports' shapes no earlier variant writes: leader dots, check
# marks after the option, clearance wordings, results in a comment paragraph, percentage ranges,
# Allred or H-score alone, a reflexed equivocal HER2 in one value, "G2" and "moderately
# differentiated" grades, abbreviated keys, pipe tables, OCR errors in keys. Where the third wave
# draws a pool of an earlier wave (header, history, specimen), i and j draw a's and b's, k c's.
THIRD_BUILD = ("i", "j")
THIRD_HELD = ("k",)
THIRD_VARIANTS = THIRD_BUILD + THIRD_HELD
# A fourth wave (issue 37, after k was measured and so spent): l and m build, n held out, for every
# layout, with pools of their own (``FOURTH_*``: positions l 0, 3, ...; m 1, 4, ...; n 2, 5, ...)
# written from the classes of real report wording no earlier build variant writes: separators
# (" - ", "is", none, tab runs, ":-", " -- "), check marks of every style before and after their
# option, receptors by H-score, "percent" in words, bucketed ranges and "<1%", intensity as an
# adverb or a 1+-3+ score, HER2 ISH by ratio and copy number alone, grade by its component scores
# alone, margins by distance in cm or "less than" a bound, values wrapped onto the next line, keys
# abbreviated or damaged by OCR beyond l/1 and O/0. Where it draws an earlier pool (header,
# history, specimen), l and m draw a's and b's, n c's.
FOURTH_BUILD = ("l", "m")
FOURTH_HELD = ("n",)
FOURTH_VARIANTS = FOURTH_BUILD + FOURTH_HELD
FIELDS = ("histology", "grade", "margins", "er_status", "pr_status", "her2_status")
T = TypeVar("T")


def templates() -> list[str]:
    first = [f"{layout}/{variant}" for layout in LAYOUTS for variant in VARIANTS + BUILD_EXTRA]
    second = [f"{layout}/{v}" for layout in (*LAYOUTS, "twocol") for v in NEW_VARIANTS]
    third = [f"{layout}/{v}" for layout in (*LAYOUTS, *NEW_LAYOUTS) for v in THIRD_VARIANTS]
    fourth = [f"{layout}/{v}" for layout in (*LAYOUTS, *NEW_LAYOUTS) for v in FOURTH_VARIANTS]
    return first + second + ["letter/h"] + third + fourth


def split() -> dict[str, list[str]]:
    data: dict[str, list[str]] = json.loads(SPLIT_FILE.read_text())
    return data


def split_of(template: str) -> str:
    return "held_out" if template in split()["held_out"] else "build"


# -- wording pools: the variant owns positions (a: 0, 3, ...; b: 1, 4, ...; c: 2, 5, ...) ------


def pick(
    rng: random.Random,
    variant: str,
    pool: list[str],
    extra: list[str] | None = None,
    new: list[str] | None = None,
) -> str:
    if variant in THIRD_VARIANTS or variant in FOURTH_VARIANTS:
        held = variant in THIRD_HELD or variant in FOURTH_HELD
        return rng.choice([w for i, w in enumerate(pool) if (i % 3 == 2) == held] or pool)
    if variant in NEW_VARIANTS:
        k = NEW_VARIANTS.index(variant)
        owned = [w for i, w in enumerate(new or []) if i % 3 == k]
        if not owned:
            held = variant in NEW_HELD
            owned = [w for i, w in enumerate(pool) if (i % 3 == 2) == held]
        return rng.choice(owned or pool)
    if variant in BUILD_EXTRA:
        k = BUILD_EXTRA.index(variant)
        owned = [w for i, w in enumerate(pool) if i % 3 == k]
        owned += [w for i, w in enumerate(extra or []) if i % 2 == k]
        return rng.choice(owned or [w for i, w in enumerate(pool) if i % 3 != 2] or pool)
    owned = [w for i, w in enumerate(pool) if i % 3 == VARIANTS.index(variant)]
    return rng.choice(owned or pool)


HISTOLOGY = [
    # (ICD-O code, WHO term, wordings)
    (
        "8500/3",
        "invasive carcinoma of no special type",
        [
            "Invasive ductal carcinoma",
            "Infiltrating ductal carcinoma",
            "Invasive carcinoma of no special type (ductal)",
            "Invasive ductal carcinoma, NOS",
            "Infiltrating duct carcinoma",
            "Invasive mammary carcinoma, ductal type",
        ],
    ),
    (
        "8520/3",
        "invasive lobular carcinoma",
        [
            "Invasive lobular carcinoma",
            "Infiltrating lobular carcinoma",
            "Invasive lobular carcinoma, classic type",
            "Lobular carcinoma, invasive",
            "Infiltrating lobular carcinoma, classic",
            "Invasive mammary carcinoma, lobular type",
        ],
    ),
    (
        "8522/3",
        "mixed ductal and lobular carcinoma",
        [
            "Invasive carcinoma with ductal and lobular features",
            "Mixed ductal and lobular carcinoma",
            "Infiltrating duct and lobular carcinoma",
            "Invasive mixed ductal and lobular carcinoma",
            "Invasive carcinoma, mixed ductal and lobular type",
            "Infiltrating ductal and lobular carcinoma",
        ],
    ),
    (
        "8480/3",
        "mucinous carcinoma",
        [
            "Mucinous carcinoma",
            "Invasive mucinous carcinoma",
            "Mucinous (colloid) carcinoma",
            "Colloid carcinoma",
            "Invasive mucinous carcinoma, pure",
            "Mucinous adenocarcinoma",
        ],
    ),
    (
        "8211/3",
        "tubular carcinoma",
        [
            "Tubular carcinoma",
            "Invasive tubular carcinoma",
            "Tubular carcinoma, invasive",
            "Tubular adenocarcinoma",
            "Invasive carcinoma, tubular type",
            "Well-formed tubular carcinoma",
        ],
    ),
]
INTENSITY = ["weak", "moderate", "strong"]
# Second-wave wordings of each type (positions f, g, h, f, g, h, ...).
NEW_HISTOLOGY: dict[str, list[str]] = {
    "8500/3": [
        "Invasive carcinoma, no special type (ductal)",
        "IDC (invasive ductal carcinoma)",
        "Invasive breast carcinoma of no special type",
        "Invasive carcinoma of NST",
        "Carcinoma, ductal, invasive",
        "Infiltrating carcinoma of ductal (NST) type",
    ],
    "8520/3": [
        "Invasive lobular carcinoma (classic)",
        "ILC, classic type",
        "Infiltrating carcinoma of lobular type",
        "Lobular carcinoma, infiltrating",
        "Invasive lobular carcinoma, pleomorphic variant",
        "Classic lobular carcinoma, invasive",
    ],
    "8522/3": [
        "Invasive carcinoma with mixed ductal and lobular features",
        "Mixed invasive ductal and lobular carcinoma",
        "Invasive carcinoma, mixed type (ductal and lobular)",
        "IDC with lobular features (mixed ductal and lobular)",
        "Infiltrating duct and lobular carcinoma, mixed",
        "Carcinoma of mixed ductal and lobular type, invasive",
    ],
    "8480/3": [
        "Invasive mucinous (colloid) carcinoma",
        "Mucinous carcinoma, pure type",
        "Invasive carcinoma, mucinous type",
        "Colloid (mucinous) carcinoma",
        "Mucin-producing carcinoma (mucinous)",
        "Pure mucinous carcinoma",
    ],
    "8211/3": [
        "Invasive tubular carcinoma, pure",
        "Tubular carcinoma of the breast",
        "Invasive carcinoma of tubular type",
        "Carcinoma, tubular type",
        "Tubular carcinoma (>90% tubules)",
        "Pure tubular carcinoma, invasive",
    ],
}


@dataclass
class Receptor:
    percent: int  # 0..100
    intensity: str  # weak, moderate, strong ("" when negative)
    # False once the report states no exact percentage (a range, an Allred or H-score alone):
    # the truth then has none either.
    exact: bool = True
    # False once the report states no intensity (an H-score alone): the truth then has none.
    intensity_shown: bool = True

    @property
    def category(self) -> str:
        if self.percent < 1:
            return "negative"
        return "low positive" if self.percent <= 10 else "positive"

    def canonical(self) -> str:
        if self.category == "negative":
            return "negative"
        if not self.exact:
            return f"{self.category} ({self.intensity})" if self.intensity_shown else self.category
        if not self.intensity_shown:
            return f"{self.category} ({self.percent}%)"
        return f"{self.category} ({self.percent}%, {self.intensity})"


@dataclass
class Her2:
    ihc: int  # 0..3
    ish: str  # "amplified", "not amplified", "" (not done)
    ratio: float = 0.0

    @property
    def category(self) -> str:
        if self.ihc == 3:
            return "positive"
        if self.ihc == 2:
            if self.ish == "amplified":
                return "positive"
            if self.ish == "not amplified":
                return "negative"
            return "equivocal"
        if self.ish == "amplified":
            return "positive"
        return "negative"


@dataclass
class Tumour:
    histology: int  # index into HISTOLOGY
    wording: str
    tubules: int
    nuclei: int
    mitoses: int
    er: Receptor
    pr: Receptor
    her2: Her2
    margin_involved: bool
    margin_mm: float
    margin_side: str
    # False once the report states the distance only as a bound ("less than 1 mm").
    margin_exact: bool = True

    @property
    def score(self) -> int:
        return self.tubules + self.nuclei + self.mitoses

    @property
    def grade(self) -> int:
        return 1 if self.score <= 5 else 2 if self.score <= 7 else 3


@dataclass
class Generated:
    key: str
    template: str
    text: str
    truth: dict[str, Any]
    features: list[str] = field(default_factory=list)


def _receptor(rng: random.Random) -> Receptor:
    roll = rng.random()
    if roll < 0.25:
        return Receptor(0, "")
    if roll < 0.4:
        return Receptor(rng.choice([1, 2, 5, 8, 10]), rng.choice(INTENSITY[:2]))
    return Receptor(rng.choice([20, 40, 60, 70, 80, 90, 95, 100]), rng.choice(INTENSITY[1:]))


def _her2(rng: random.Random) -> Her2:
    ihc = rng.choice([0, 1, 1, 2, 2, 3])
    if ihc == 2:
        ish = rng.choice(["amplified", "not amplified", ""])
    else:
        ish = rng.choice(["", "", "not amplified" if ihc < 3 else "amplified"])
    ratio = (
        round(rng.uniform(2.2, 5.0), 1)
        if ish == "amplified"
        else round(rng.uniform(1.0, 1.8), 1)
        if ish
        else 0.0
    )
    return Her2(ihc, ish, ratio)


def _tumour(rng: random.Random, variant: str) -> Tumour:
    h = rng.randrange(len(HISTOLOGY))
    return Tumour(
        h,
        pick(rng, variant, HISTOLOGY[h][2], new=NEW_HISTOLOGY[HISTOLOGY[h][0]]),
        rng.randint(1, 3),
        rng.randint(1, 3),
        rng.randint(1, 3),
        _receptor(rng),
        _receptor(rng),
        _her2(rng),
        rng.random() < 0.25,
        rng.choice([0.5, 1, 2, 3, 4, 5, 7, 8, 10, 12]),
        rng.choice(["anterior", "posterior", "superior", "inferior", "medial", "lateral"]),
    )


ROMAN = {1: "I", 2: "II", 3: "III"}
GRADE_RANGE = {1: "3-5", 2: "6-7", 3: "8-9"}
DIFFERENTIATION = {
    1: "well differentiated",
    2: "moderately differentiated",
    3: "poorly differentiated",
}


# -- phrases ---------------------------------------------------------------------------------------


def receptor_value(rng: random.Random, v: str, r: Receptor) -> str:
    if r.category == "negative":
        return pick(
            rng,
            v,
            [
                "Negative (0%)",
                "NEGATIVE (no staining)",
                "Negative, 0% of tumor cells",
                "Negative (<1% staining)",
                "Negative - no nuclear staining",
                "0% - negative",
            ],
            new=[
                "Negative (0%; Allred score 0/8)",
                "NEGATIVE. Percentage of cells with nuclear positivity: 0%",
                "Negative - no nuclei staining (H-score 0)",
                "0 percent (negative)",
                "Not detected (negative)",
                "No expression (0% of nuclei)",
            ],
        )
    p, i = r.percent, r.intensity
    strength = {"weak": 1, "moderate": 2, "strong": 3}[i]
    proportion = 2 if p <= 10 else 3 if p <= 33 else 4 if p <= 66 else 5
    allred, hscore = proportion + strength, p * strength
    if r.category == "low positive":
        return pick(
            rng,
            v,
            [
                f"Low positive ({p}%, {i})",
                f"LOW POSITIVE, {p}% of tumor cells, {i} intensity",
                f"Low positive ({p}% {i} nuclear staining)",
                f"Positive, low ({p}%, {i})",
                f"Low Positive: {p}% of cells, {i} intensity",
                f"{p}% {i} staining (low positive)",
            ],
            new=[
                f"Low Positive ({p}% of cells, {i}; Allred score {allred}/8)",
                f"LOW POSITIVE. Percentage of cells with nuclear positivity: {p}%. "
                f"Average intensity of staining: {i.capitalize()}",
                f"Low positive - {p}% nuclei staining, intensity {i} (H-score {hscore})",
                f"{p}% ({i}) - low positive",
                f"Positive (low expression), {p}%, {i}",
                f"Weakly expressed in {p}% of cells ({i} intensity); low positive",
            ],
        )
    return pick(
        rng,
        v,
        [
            f"Positive ({p}%, {i})",
            f"POSITIVE, {p}% of tumor cells, {i} intensity",
            f"Positive ({p}% {i} nuclear staining)",
            f"Positive, {p}%, {i}",
            f"Positive: {p}% of cells, {i} intensity",
            f"{p}% {i} staining (positive)",
        ],
        new=[
            f"Positive ({p}% of invasive tumour cells, {i} intensity; Allred score {allred}/8)",
            f"POSITIVE. Percentage of cells with nuclear positivity: {p}%. "
            f"Average intensity of staining: {i.capitalize()}",
            f"Positive - {p}% nuclei staining, intensity {i} (H-score {hscore})",
            f"{p}% positive ({i})",
            f"Positive; {i} staining in {p}% of tumour nuclei",
            f"Expressed in {p}% of cells with {i} intensity",
        ],
    )


HER2_STAINING = {
    0: "no staining observed",
    1: "faint, incomplete membrane staining",
    2: "weak to moderate complete membrane staining in >10% of cells",
    3: "strong, complete, circumferential membrane staining in >10% of cells",
}


def her2_ihc_value(rng: random.Random, v: str, h: Her2) -> str:
    word = {0: "negative", 1: "negative", 2: "equivocal", 3: "positive"}[h.ihc]
    s = f"{h.ihc}+" if h.ihc else "0"
    return pick(
        rng,
        v,
        [
            f"{s} ({word})",
            f"Score {s}, {word.upper()}",
            f"{word.capitalize()} (score {s})",
            f"{s}, {word}",
            f"IHC score {s} - {word}",
            f"{word.capitalize()}, {s}",
        ],
        new=[
            f"{word.capitalize()} (Score {s})",
            f"SCORE {s} ({word.upper()})",
            f"Score {s}: {word} ({HER2_STAINING[h.ihc]})",
            f"{word.capitalize()}, score {s} ({HER2_STAINING[h.ihc]})",
            f"{s} ({HER2_STAINING[h.ihc]})",
            f"IHC {s}, {word}",
        ],
    )


def her2_ish_value(rng: random.Random, v: str, h: Her2) -> str:
    word = "Amplified" if h.ish == "amplified" else "Not amplified"
    amp = h.ish == "amplified"
    cn = round(h.ratio * 2.1 + 0.2, 1)  # average HER2 copies per cell, with its ratio
    return pick(
        rng,
        v,
        [
            f"{word} (HER2/CEP17 ratio {h.ratio})",
            f"{word.upper()}, ratio {h.ratio}",
            f"{word}; HER2:CEP17 ratio = {h.ratio}",
            f"{word} (ratio {h.ratio})",
            f"{word}, HER2/CEP17 {h.ratio}",
            f"Ratio {h.ratio}: {word.lower()}",
        ],
        new=[
            f"{word}; HER2/CEP17 ratio {h.ratio}; average HER2 copy number {cn} signals/cell",
            f"{'Positive (Group 1)' if amp else 'Negative (Group 5)'}: HER2/CEP17 ratio "
            f"{h.ratio}, mean HER2 signals {cn} per cell",
            f"{'Amplification detected' if amp else 'No amplification detected'} (ratio "
            f"{h.ratio}; {cn} HER2 signals/nucleus)",
            f"Ratio {h.ratio}, copy number {cn}: {word.upper()}",
            f"{'HER2 gene amplified' if amp else 'HER2 gene not amplified'} (ratio {h.ratio})",
            f"{'Positive' if amp else 'Negative'} for HER2 gene amplification (HER2:CEP17 "
            f"{h.ratio}, average copy number {cn})",
        ],
    )


GRADE_RANGE_OR = {1: "3, 4, or 5", 2: "6 or 7", 3: "8 or 9"}
LEVEL = {1: "low", 2: "intermediate", 3: "high"}


def grade_value(rng: random.Random, v: str, t: Tumour) -> str:
    g = t.grade
    return pick(
        rng,
        v,
        [
            f"Grade {g} (tubules {t.tubules}, nuclei {t.nuclei}, mitoses {t.mitoses}; "
            f"total score {t.score}/9)",
            f"G{g}, score {t.score}",
            f"{g} of 3 (score {t.score} of 9)",
            f"Grade {ROMAN[g]} (score {t.score})",
            f"Nottingham grade {g} ({DIFFERENTIATION[g]})",
            f"{ROMAN[g]}/III, total score {t.score}",
        ],
        [
            f"Grade {g} (score {GRADE_RANGE[g]})",
            f"SBR grade {g} (score {t.score}/9)",
            f"Grade: {ROMAN[g]}/III (Nottingham score {t.score})",
            f"Overall Grade: Grade {g} (scores of {GRADE_RANGE[g]})",
            f"Nottingham combined histologic grade {g} of 3 (total score = {t.score})",
            f"Scarff-Bloom-Richardson grade {ROMAN[g]}",
            f"Grade {g}",
            f"Modified SBR: {t.tubules}+{t.nuclei}+{t.mitoses} = {t.score} (grade {g})",
        ],
        [
            f"Grade {g} (scores of {GRADE_RANGE_OR[g]})",
            f"{LEVEL[g].capitalize()} grade (Nottingham {ROMAN[g]})",
            f"Grade {g}: tubule formation {t.tubules}, pleomorphism {t.nuclei}, mitotic count "
            f"{t.mitoses} (sum {t.score})",
            f"{t.score}/9 (grade {ROMAN[g]})",
            f"Nottingham score {t.score} = grade {g}",
            f"{t.score} points, histological grade {ROMAN[g]}",
            f"Elston-Ellis grade {ROMAN[g]} ({t.tubules}+{t.nuclei}+{t.mitoses})",
            f"Tubules {t.tubules} / Nuclei {t.nuclei} / Mitoses {t.mitoses} -> Grade {g}",
            f"{LEVEL[g].capitalize()} grade (Nottingham {g}; score {t.score})",
        ],
    )


def margin_value(rng: random.Random, v: str, t: Tumour) -> str:
    mm = f"{t.margin_mm:g} mm"
    if t.margin_involved:
        return pick(
            rng,
            v,
            [
                f"Involved by invasive carcinoma ({t.margin_side} margin)",
                f"POSITIVE - tumor at inked {t.margin_side} margin",
                f"Invasive carcinoma present at the {t.margin_side} margin",
                f"Positive ({t.margin_side})",
                f"Involved, {t.margin_side} margin",
                f"Tumor extends to {t.margin_side} inked margin",
            ],
            [
                f"Involved by invasive carcinoma; margin(s) involved: {t.margin_side}",
                f"Transected ({t.margin_side} margin)",
                f"Positive for invasive carcinoma at the {t.margin_side} margin",
                f"Carcinoma transected at {t.margin_side} margin",
                "Involved",
                f"Positive, {t.margin_side}",
            ],
            [
                f"Positive for invasive carcinoma ({t.margin_side} margin at ink)",
                f"INVOLVED ({t.margin_side.upper()})",
                f"Invasive carcinoma reaches the inked {t.margin_side} resection margin",
                f"Tumour at ink: {t.margin_side}",
                f"Focally involved at the {t.margin_side} margin",
                f"Ink on tumour ({t.margin_side})",
            ],
        )
    return pick(
        rng,
        v,
        [
            f"Negative for carcinoma; closest margin {t.margin_side}, {mm}",
            f"UNINVOLVED by invasive carcinoma (closest: {t.margin_side}, {mm})",
            f"Free of tumor; nearest margin {mm} ({t.margin_side})",
            f"Negative; distance to closest ({t.margin_side}) margin {mm}",
            f"Not involved, closest {mm} {t.margin_side}",
            f"Clear; tumor is {mm} from the {t.margin_side} margin",
        ],
        [
            f"Uninvolved by invasive carcinoma; Distance from closest margin: {mm}",
            f"Negative (closest margin {t.margin_side} at {mm})",
            f"{'Close' if t.margin_mm < 2 else 'Free'} ({mm}, {t.margin_side} margin)",
            f"Clear of invasive carcinoma, closest {t.margin_side} margin {mm}",
            f"All margins free; closest: {t.margin_side} at {mm}",
            f"{'Close (<2 mm)' if t.margin_mm < 2 else 'Negative'}; {mm} to {t.margin_side} margin",
            f"Uninvolved; closest margin is {t.margin_side}, {mm} away",
            f"Not involved by carcinoma ({mm} from the {t.margin_side} margin)",
        ],
        [
            f"Uninvolved by invasive carcinoma; Distance from closest margin: {mm}; "
            f"Closest margin: {t.margin_side}",
            f"Negative for invasive carcinoma and DCIS; closest ({t.margin_side}) {mm}",
            f"Tumour clearance {mm} ({t.margin_side} margin)",
            f"Invasive carcinoma is {mm} from the {t.margin_side} margin",
            f"No ink on tumour; nearest margin {t.margin_side} at {mm}",
            f"Excised with {mm} clearance to the {t.margin_side} margin",
            f"Distance to nearest ({t.margin_side}) margin: {mm}",
            f"Free ({mm} clearance, {t.margin_side})",
            f"{mm} to closest margin ({t.margin_side}); no tumour at ink",
        ],
    )


LABELS: dict[str, list[str]] = {
    "histology": [
        "Histologic Type",
        "Tumor Type",
        "Histologic type of invasive carcinoma",
        "Histological Type",
        "Histotype",
        "Type of invasive carcinoma",
    ],
    "grade": [
        "Nottingham Histologic Grade",
        "Histologic Grade",
        "Nottingham Grade",
        "Overall Grade (Nottingham)",
        "Combined Histologic Grade",
        "Modified Bloom-Richardson Grade",
    ],
    "margins": [
        "Margins",
        "Surgical Margins",
        "Margin Status",
        "Resection Margins",
        "Margins (invasive carcinoma)",
        "Status of margins",
    ],
    "er": [
        "Estrogen Receptor (ER)",
        "Estrogen Receptor",
        "ER Status",
        "Oestrogen Receptor",
        "ER (clone SP1)",
        "Estrogen receptor status",
    ],
    "pr": [
        "Progesterone Receptor (PR)",
        "Progesterone Receptor",
        "PR Status",
        "Progesterone Receptor (PgR)",
        "PR (clone 1E2)",
        "Progesterone receptor status",
    ],
    "her2_ihc": [
        "HER2 (by immunohistochemistry)",
        "HER2/neu IHC",
        "HER2 Immunohistochemistry",
        "HER-2 (IHC)",
        "HER2 protein (IHC)",
        "c-erbB-2 IHC",
    ],
    "her2_ish": [
        "HER2 (by ISH)",
        "HER2/neu FISH",
        "HER2 In Situ Hybridization",
        "HER-2 (FISH)",
        "HER2 gene (ISH)",
        "c-erbB-2 FISH",
    ],
}

# Labels only the build-only variants (d, e) also write, CAP checklist style.
EXTRA_LABELS: dict[str, list[str]] = {
    "grade": [
        "Histologic Grade (Nottingham)",
        "Overall Grade",
        "SBR Grade",
        "Grade (Nottingham modification of SBR)",
        "Histologic Grade (Nottingham Histologic Score)",
        "Grade",
    ],
    "margins": [
        "Margins (Invasive Carcinoma)",
        "Margin Status for Invasive Carcinoma",
        "Surgical margins",
        "Margin status",
        "Excision margins",
        "Margins, invasive carcinoma",
    ],
}


# Labels of the second wave (positions f, g, h, f, g, h, ...).
NEW_LABELS: dict[str, list[str]] = {
    "histology": [
        "HISTOLOGIC TYPE",
        "Histology",
        "Histopathological type",
        "Tumor histologic type",
        "Morphology",
        "Carcinoma type",
        "WHO histologic type",
        "Invasive tumour type",
        "Type of carcinoma (WHO)",
    ],
    "grade": [
        "HISTOLOGIC GRADE (NOTTINGHAM)",
        "Nottingham Histologic Grade (Elston-Ellis)",
        "Histological grade",
        "Overall Nottingham grade",
        "NHG",
        "Tumour grade (NHG)",
        "Grade (modified Bloom-Richardson)",
        "Elston-Ellis grade",
        "Bloom-Richardson-Elston grade",
    ],
    "margins": [
        "MARGINS",
        "Resection margin status",
        "Surgical resection margins",
        "Margin assessment",
        "Excision margins (invasive)",
        "Circumferential margins",
        "Margins of excision",
        "Margin (invasive carcinoma)",
        "Margin clearance",
    ],
    "er": [
        "ESTROGEN RECEPTOR (ER) STATUS",
        "ER (clone 6F11)",
        "Oestrogen receptor (ER) status",
        "Estrogen Receptor Status",
        "ER expression",
        "ER result",
        "Hormone receptor - ER",
        "ER-alpha (SP1)",
        "Oestrogen Receptor (ER) Allred",
    ],
    "pr": [
        "PROGESTERONE RECEPTOR (PgR) STATUS",
        "PR (clone 16)",
        "Progesterone receptor (PR) status",
        "Progesterone Receptor Status",
        "PgR expression",
        "PR result",
        "Hormone receptor - PR",
        "PgR (clone 636)",
        "Progesterone Receptor (PgR) Allred",
    ],
    "her2_ihc": [
        "HER2 (BY IMMUNOHISTOCHEMISTRY)",
        "HER2 protein expression",
        "HER2 IHC (HercepTest)",
        "HER2/neu (IHC, 4B5)",
        "ERBB2 immunostain",
        "HER2 status by IHC",
        "HER2 IHC score",
        "HER2 (4B5)",
        "HER2 protein overexpression",
    ],
    "her2_ish": [
        "HER2 (BY ISH)",
        "HER2 gene amplification (SISH)",
        "HER2 dual-probe ISH",
        "HER2 FISH result",
        "HER2 DISH",
        "HER2 gene status (ISH)",
        "HER2 ISH",
        "HER2 CISH",
        "ERBB2 gene amplification",
    ],
}


def label(rng: random.Random, v: str, key: str) -> str:
    return pick(rng, v, LABELS[key], EXTRA_LABELS.get(key), NEW_LABELS.get(key))


INSTITUTIONS = ["", "", "Riverside Regional Laboratory", "St. Anne's Hospital Pathology"]


# -- noise -----------------------------------------------------------------------------------------

_CONFUSE = {"l": "1", "O": "0", "o": "0", "I": "l", "1": "l", "0": "O", "m": "rn"}


def ocr_noise(rng: random.Random, text: str, rate: float) -> str:
    """Broken words, l/1 and O/0 confusions, wrapped long lines."""
    out_lines = []
    for line in text.split("\n"):
        words = line.split(" ")
        for i, w in enumerate(words):
            if len(w) > 5 and rng.random() < rate:
                cut = rng.randrange(2, len(w) - 2)
                w = w[:cut] + " " + w[cut:]
            elif rng.random() < rate:
                chars = list(w)
                spots = [k for k, c in enumerate(chars) if c in _CONFUSE]
                if spots:
                    k = rng.choice(spots)
                    chars[k] = _CONFUSE[chars[k]]
                w = "".join(chars)
            words[i] = w
        line = " ".join(words)
        if len(line) > 60 and rng.random() < rate * 2:
            cut = line.rfind(" ", 30, 60)
            if cut > 0:
                out_lines += [line[:cut], line[cut + 1 :]]
                continue
        out_lines.append(line)
    return "\n".join(out_lines)


# -- layouts ---------------------------------------------------------------------------------------


@dataclass
class Plan:
    tumour: Tumour
    features: list[str]
    biopsy: bool  # a core biopsy: no margins
    er_shown: bool
    pr_shown: bool
    her2_shown: bool
    pending: bool  # receptors pending in the report, no addendum
    addendum: str  # "", "adds" (receptors only in addendum), "corrects" (HER2 ISH changes it)
    previous: bool  # receptors of a previous biopsy quoted in the history
    multi: bool  # a second specimen (sentinel node) before the tumour
    icdo: bool
    form_boxes: bool
    # Second wave: a second invasive tumour reported beside the first, each with its size (the
    # report's values are those of the larger, the index tumour, as CAP and AJCC read them).
    second: Tumour | None = None
    sizes: tuple[int, int] = (0, 0)


def _plan(rng: random.Random) -> Plan:
    features = []
    biopsy = rng.random() < 0.2
    pending = rng.random() < 0.12
    addendum = "" if pending else rng.choice(["", "", "", "adds", "corrects"])
    previous = rng.random() < 0.2
    multi = rng.random() < 0.3
    icdo = rng.random() < 0.35
    for name, on in (
        ("biopsy", biopsy),
        ("pending", pending),
        (f"addendum_{addendum}", bool(addendum)),
        ("previous", previous),
        ("multi_specimen", multi),
        ("icdo", icdo),
    ):
        if on:
            features.append(name)
    return Plan(
        tumour=Tumour(0, "", 1, 1, 1, Receptor(0, ""), Receptor(0, ""), Her2(0, ""), False, 0, ""),
        features=features,
        biopsy=biopsy,
        er_shown=True,
        pr_shown=rng.random() > 0.05,
        her2_shown=rng.random() > 0.08,
        pending=pending,
        addendum=addendum,
        previous=previous,
        multi=multi,
        icdo=icdo,
        form_boxes=False,
    )


def _histology_text(t: Tumour, plan: Plan) -> str:
    code = HISTOLOGY[t.histology][0]
    return f"{t.wording} (ICD-O-3 {code})" if plan.icdo else t.wording


def _header(rng: random.Random, v: str, institution: str) -> list[str]:
    lines = []
    if institution:
        lines.append(institution.upper())
    lines += [
        pick(
            rng,
            v,
            ["SURGICAL PATHOLOGY REPORT", "PATHOLOGY REPORT", "Surgical Pathology Consultation"],
        ),
        f"Accession: S{rng.randint(20, 26)}-{rng.randint(1000, 99999)}",
        "",
    ]
    return lines


def _specimen(rng: random.Random, v: str, plan: Plan) -> str:
    side = rng.choice(["LEFT", "RIGHT"])
    if plan.biopsy:
        return (
            f"{side} BREAST, {rng.choice(['12', '2', '10'])} O'CLOCK, ULTRASOUND-GUIDED CORE BIOPSY"
        )
    return pick(
        rng,
        v,
        [
            f"{side} BREAST, LUMPECTOMY",
            f"{side} BREAST, PARTIAL MASTECTOMY",
            f"{side} BREAST, WIRE-LOCALIZED EXCISION",
            f"{side} BREAST, SEGMENTAL MASTECTOMY",
            f"{side} BREAST, TOTAL MASTECTOMY",
            f"{side} BREAST, WIDE LOCAL EXCISION",
        ],
    )


def _history(rng: random.Random, v: str, plan: Plan) -> list[str]:
    lines = [pick(rng, v, ["CLINICAL HISTORY:", "Clinical information:", "HISTORY:"])]
    text = f"{rng.randint(35, 85)}-year-old woman with a breast mass."
    if plan.previous:
        # A previous biopsy's result: quoted, not this report's value.
        prior = rng.choice(["positive", "negative"])
        text += pick(
            rng,
            v,
            [
                f" Prior core biopsy (S19-4411): ER {prior}, PR {prior}, HER2 {rng.choice(['1+', '3+'])}.",  # noqa: E501 (wording data)
                f" Previous biopsy showed estrogen receptor {prior} and HER2 {rng.choice(['negative', 'positive'])}.",  # noqa: E501 (wording data)
                f" Outside biopsy reported ER {prior}, PR {prior}; HER2 {rng.choice(['0', '3+'])}.",
            ],
        )
    lines.append(text)
    lines.append("")
    return lines


def _node_specimen(rng: random.Random, v: str) -> list[str]:
    n = rng.randint(1, 4)
    pos = rng.randint(0, n)
    if pos:
        text = f"METASTATIC CARCINOMA IN {pos} OF {n} LYMPH NODES ({pos}/{n})."
    else:
        text = f"{n} LYMPH NODES, NEGATIVE FOR METASTATIC CARCINOMA (0/{n})."
    return [
        pick(
            rng,
            v,
            [
                "A. SENTINEL LYMPH NODE, EXCISION:",
                "PART A: SENTINEL LYMPH NODE #1",
                "A) Sentinel node:",
            ],
        ),
        f"- {text}",
        "",
    ]


def _receptor_rows(rng: random.Random, v: str, t: Tumour, plan: Plan, sep: str) -> list[str]:
    rows = []
    rows.append(f"{label(rng, v, 'er')}{sep}{receptor_value(rng, v, t.er)}")
    if plan.pr_shown:
        rows.append(f"{label(rng, v, 'pr')}{sep}{receptor_value(rng, v, t.pr)}")
    if plan.her2_shown:
        rows.append(f"{label(rng, v, 'her2_ihc')}{sep}{her2_ihc_value(rng, v, t.her2)}")
        if t.her2.ish:
            rows.append(f"{label(rng, v, 'her2_ish')}{sep}{her2_ish_value(rng, v, t.her2)}")
    return rows


def _pending_rows(rng: random.Random, v: str, plan: Plan, sep: str, addendum: bool) -> list[str]:
    word = (
        pick(rng, v, ["See addendum", "To follow in addendum", "Will be reported in an addendum"])
        if addendum
        else pick(
            rng,
            v,
            [
                "Pending",
                "Sent out to reference laboratory",
                "Results to follow",
                "In progress",
                "Sent to outside lab; pending",
                "Not yet available",
            ],
        )
    )
    rows = [f"{label(rng, v, 'er')}{sep}{word}"]
    if plan.pr_shown:
        rows.append(f"{label(rng, v, 'pr')}{sep}{word}")
    if plan.her2_shown:
        rows.append(f"{label(rng, v, 'her2_ihc')}{sep}{word}")
    return rows


def _cap_grade_rows(rng: random.Random, v: str, t: Tumour, sep: str) -> list[str]:
    """A CAP checklist's grade: a heading, the three component scores, the overall grade."""
    g = t.grade
    rows = [
        pick(
            rng,
            v,
            ["Histologic Grade (Nottingham Histologic Score)", "Histologic Grade (Nottingham)"],
        )
        + ("" if rng.random() < 0.5 else sep.rstrip())
    ]
    rows.append(f"Glandular (Acinar)/Tubular Differentiation{sep}Score {t.tubules}")
    rows.append(f"Nuclear Pleomorphism{sep}Score {t.nuclei}")
    rows.append(f"Mitotic Rate{sep}Score {t.mitoses}")
    overall = pick(
        rng,
        v,
        [],
        [
            f"Grade {g} (scores of {GRADE_RANGE[g]})",
            f"Grade {g} (score {GRADE_RANGE[g]})",
            f"{ROMAN[g]}/III",
            f"Grade {g} (total score {t.score})",
        ],
    )
    rows.append(f"Overall Grade{sep}{overall}")
    return rows


def _cap_margin_rows(rng: random.Random, v: str, t: Tumour, sep: str) -> list[str]:
    """A CAP checklist's margins: status, then the closest margin and its distance apart."""
    key = pick(rng, v, [], ["Margin Status for Invasive Carcinoma", "Margins"])
    if t.margin_involved:
        return [
            f"{key}{sep}Invasive carcinoma present at margin",
            f"Margin(s) Involved by Invasive Carcinoma{sep}{t.margin_side.capitalize()}",
        ]
    status = pick(
        rng,
        v,
        [],
        ["All margins negative for invasive carcinoma", "Uninvolved by invasive carcinoma"],
    )
    return [
        f"{key}{sep}{status}",
        f"Distance from Invasive Carcinoma to Closest Margin{sep}{t.margin_mm:g} mm",
        f"Closest Margin(s) to Invasive Carcinoma{sep}{t.margin_side.capitalize()}",
    ]


def _synoptic(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    sep = pick(rng, v, [": ", ": ", ":  ", ": ", ":\t", " - "])
    lines = [
        pick(
            rng,
            v,
            [
                "SYNOPTIC REPORT - INVASIVE CARCINOMA OF THE BREAST",
                "CAP CANCER CHECKLIST",
                "Breast Cancer Synoptic Summary",
            ],
        )
    ]
    lines.append(f"Procedure{sep}{'Core needle biopsy' if plan.biopsy else 'Excision'}")
    lines.append(f"{label(rng, v, 'histology')}{sep}{_histology_text(t, plan)}")
    lines.append(f"Tumor Size{sep}{rng.randint(5, 40)} mm")
    if v in BUILD_EXTRA and rng.random() < 0.5:
        lines += _cap_grade_rows(rng, v, t, sep)
    else:
        lines.append(f"{label(rng, v, 'grade')}{sep}{grade_value(rng, v, t)}")
    if plan.biopsy:
        lines.append(f"{label(rng, v, 'margins')}{sep}Not applicable")
    elif v in BUILD_EXTRA and rng.random() < 0.5:
        lines += _cap_margin_rows(rng, v, t, sep)
    else:
        lines.append(f"{label(rng, v, 'margins')}{sep}{margin_value(rng, v, t)}")
    lines.append(f"Lymphovascular Invasion{sep}{rng.choice(['Not identified', 'Present'])}")
    if plan.pending or plan.addendum == "adds":
        lines += _pending_rows(rng, v, plan, sep, plan.addendum == "adds")
    else:
        lines += _receptor_rows(rng, v, t, plan, sep)
    return lines


def _narrative(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    diff = DIFFERENTIATION[t.grade]
    gtext = pick(
        rng,
        v,
        [
            f"Nottingham grade {t.grade} of 3 (tubules {t.tubules}, nuclei {t.nuclei}, mitoses "
            f"{t.mitoses}; score {t.score})",
            f"Nottingham histologic grade {ROMAN[t.grade]} (score {t.score}/9)",
            f"{diff} (Nottingham grade {t.grade}, score {t.score})",
            f"histologic grade {t.grade} (Nottingham score {t.score})",
            f"Nottingham grade {ROMAN[t.grade]}, {diff}",
            f"combined Nottingham grade {t.grade}",
        ],
        new=[
            f"Nottingham histologic grade {t.grade} (tubule formation {t.tubules}, nuclear "
            f"pleomorphism {t.nuclei}, mitotic rate {t.mitoses})",
            f"{LEVEL[t.grade]} grade (Elston-Ellis {ROMAN[t.grade]}, score {t.score})",
            f"{LEVEL[t.grade]}-grade, with a Nottingham score of {t.score} of 9",
            f"grade {ROMAN[t.grade]} of III (NHG {t.grade})",
            f"NHG{t.grade} ({t.tubules}+{t.nuclei}+{t.mitoses})",
            f"histological grade {t.grade} ({diff.replace('differentiated', 'differentiated')})",
        ],
    )
    lines = [pick(rng, v, ["FINAL DIAGNOSIS:", "DIAGNOSIS:", "Final Pathologic Diagnosis:"])]
    if v in NEW_VARIANTS and rng.random() < 0.5:
        # Sentence case, the grade in a sentence of its own.
        lines.append(f"- {_histology_text(t, plan)}.")
        lines.append(f"- The tumour is {gtext}.")
    else:
        lines.append(f"- {_histology_text(t, plan).upper()}, {gtext.upper()}.")
    lines.append(f"- TUMOR SIZE: {rng.randint(5, 40)} MM.")
    if plan.biopsy:
        pass
    elif t.margin_involved:
        lines.append(
            "- "
            + pick(
                rng,
                v,
                [
                    f"INVASIVE CARCINOMA INVOLVES THE {t.margin_side.upper()} SURGICAL MARGIN.",
                    f"SURGICAL MARGINS: POSITIVE ({t.margin_side.upper()}).",
                    f"CARCINOMA IS PRESENT AT THE INKED {t.margin_side.upper()} MARGIN.",
                    f"THE {t.margin_side.upper()} MARGIN IS INVOLVED BY INVASIVE CARCINOMA.",
                    f"MARGINS: INVOLVED ({t.margin_side.upper()} MARGIN).",
                    f"TUMOR TRANSECTED AT THE {t.margin_side.upper()} MARGIN.",
                ],
                new=[
                    f"THE INVASIVE CARCINOMA IS PRESENT AT INK ON THE {t.margin_side.upper()} "
                    "MARGIN.",
                    f"POSITIVE {t.margin_side.upper()} MARGIN FOR INVASIVE CARCINOMA.",
                    f"INVASIVE CARCINOMA ABUTS THE INKED {t.margin_side.upper()} EXCISION MARGIN.",
                    f"INK ON TUMOUR AT THE {t.margin_side.upper()} ASPECT.",
                    f"THE {t.margin_side.upper()} RESECTION MARGIN IS FOCALLY INVOLVED.",
                    f"TUMOUR EXTENDS TO THE {t.margin_side.upper()} RESECTION MARGIN (INVOLVED).",
                ],
            )
        )
    else:
        mm = f"{t.margin_mm:g} MM"
        lines.append(
            "- "
            + pick(
                rng,
                v,
                [
                    f"SURGICAL MARGINS ARE NEGATIVE; CLOSEST MARGIN ({t.margin_side.upper()}) {mm}.",  # noqa: E501 (wording data)
                    f"MARGINS FREE OF CARCINOMA, CLOSEST {mm} ({t.margin_side.upper()}).",
                    f"ALL MARGINS ARE NEGATIVE FOR INVASIVE CARCINOMA; NEAREST {t.margin_side.upper()} AT {mm}.",  # noqa: E501 (wording data)
                    f"MARGINS UNINVOLVED, {t.margin_side.upper()} MARGIN {mm} AWAY.",
                    f"SURGICAL MARGINS CLEAR (CLOSEST {mm}, {t.margin_side.upper()}).",
                    f"MARGINS NEGATIVE. CARCINOMA IS {mm} FROM THE {t.margin_side.upper()} MARGIN.",
                ],
                new=[
                    f"INVASIVE CARCINOMA IS {mm} FROM THE NEAREST ({t.margin_side.upper()}) "
                    "MARGIN.",
                    f"NO TUMOUR AT INK; CLOSEST APPROACH {mm} TO THE {t.margin_side.upper()} "
                    "MARGIN.",
                    f"CLEARANCE TO THE {t.margin_side.upper()} MARGIN IS {mm}, OTHER MARGINS "
                    "WIDER.",
                    f"ALL MARGINS UNINVOLVED; THE {t.margin_side.upper()} MARGIN IS CLOSEST AT "
                    f"{mm}.",
                    f"MARGINS CLEAR OF INVASIVE AND IN SITU CARCINOMA (NEAREST {mm}, "
                    f"{t.margin_side.upper()}).",
                    f"THE TUMOUR IS EXCISED WITH A MINIMUM CLEARANCE OF {mm} "
                    f"({t.margin_side.upper()}).",
                ],
            )
        )
    lines.append("")
    lines.append(pick(rng, v, ["COMMENT:", "Comment:", "NOTE:"]))
    if plan.pending or plan.addendum == "adds":
        lines.append(
            pick(
                rng,
                v,
                [
                    "Estrogen receptor, progesterone receptor and HER2 studies are pending and will be reported separately.",  # noqa: E501 (wording data)
                    "Hormone receptor and HER2 testing has been sent out; results to follow.",
                    "ER, PR and HER2 immunostains are in progress.",
                    "Prognostic markers (ER/PR/HER2) were sent to the reference laboratory and are pending.",  # noqa: E501 (wording data)
                    "Receptor studies have been ordered; an addendum will follow.",
                    "ER, PR and HER2 results are not yet available.",
                ],
                new=[
                    "Biomarker studies (ER, PR, HER2) are pending.",
                    "ER/PR/HER2 testing was requested and will be reported in a supplementary "
                    "report.",
                    "Hormone receptor and HER2 studies have been sent to the reference laboratory; "
                    "results to follow.",
                ],
            )
        )
    else:
        lines.append(_narrative_markers(rng, v, t, plan))
    return lines


def _narrative_receptor(rng: random.Random, v: str, name: str, r: Receptor) -> str:
    if r.category == "negative":
        return pick(
            rng,
            v,
            [
                f"{name} is negative (0%)",
                f"the tumor cells are negative for {name}",
                f"{name} shows no staining (negative)",
                f"{name} is negative, with no nuclear staining",
                f"{name} negative (<1%)",
                f"no {name} expression is seen (negative)",
            ],
            new=[
                f"{name}: negative (0%, Allred 0)",
                f"{name} is not expressed (0%)",
                f"there is no {name} staining in the invasive carcinoma (0%)",
                f"{name} negative, 0 percent",
                f"{name} was negative",
                f"{name} shows no immunoreactivity (negative)",
            ],
        )
    cat = r.category
    return pick(
        rng,
        v,
        [
            f"{name} is {cat} ({r.percent}%, {r.intensity} intensity)",
            f"{name} is {cat} in {r.percent}% of tumor cells with {r.intensity} staining",
            f"{name} shows {r.intensity} nuclear staining in {r.percent}% of cells ({cat})",
            f"{name}: {cat}, {r.percent}%, {r.intensity}",
            f"{name} {cat} ({r.percent}% {r.intensity})",
            f"{r.percent}% of tumor nuclei stain for {name} with {r.intensity} intensity ({cat})",
        ],
        new=[
            f"{name}: {cat}, {r.percent}% of invasive cells, {r.intensity} intensity",
            f"{name} was {cat}, with {r.intensity} staining of {r.percent}% of nuclei",
            f"the carcinoma is {name} {cat} ({r.percent}% of cells, {r.intensity})",
            f"{name} {cat} in {r.percent}% ({r.intensity})",
            f"{name} stained {r.percent}% of tumour nuclei ({r.intensity}; {cat})",
            f"{r.percent}% of invasive tumour cells express {name} ({r.intensity}, {cat})",
        ],
    )


def _narrative_markers(rng: random.Random, v: str, t: Tumour, plan: Plan) -> str:
    er_name = pick(
        rng,
        v,
        ["estrogen receptor", "ER", "estrogen receptor (ER)", "oestrogen receptor", "ER", "ER"],
        new=[
            "ER",
            "oestrogen receptor (ER)",
            "ER",
            "estrogen receptor",
            "ER",
            "oestrogen receptor",
        ],
    )
    pr_name = pick(
        rng,
        v,
        ["progesterone receptor", "PR", "progesterone receptor (PR)", "PgR", "PR", "PR"],
        new=["PR", "progesterone receptor (PgR)", "PgR", "progesterone receptor", "PR", "PgR"],
    )
    parts = [_narrative_receptor(rng, v, er_name, t.er)]
    if plan.pr_shown:
        parts.append(_narrative_receptor(rng, v, pr_name, t.pr))
    opener = "Immunohistochemistry: "
    if v in NEW_VARIANTS:
        opener = pick(rng, v, [], new=["Biomarkers: ", "Immunostains show: ", "Receptor studies: "])
    text = opener + "; ".join(parts) + "."
    if plan.her2_shown:
        text += (
            " HER2 "
            + pick(
                rng,
                v,
                [
                    f"is {her2_ihc_value(rng, v, t.her2)} by immunohistochemistry",
                    f"immunostain: {her2_ihc_value(rng, v, t.her2)}",
                    f"(IHC) {her2_ihc_value(rng, v, t.her2)}",
                ],
                # (each wording draws its value: built only for the second wave's variants,
                # so the first wave's documents draw as they always did)
                new=[
                    f"immunohistochemistry: {her2_ihc_value(rng, v, t.her2)}",
                    f"protein was scored {her2_ihc_value(rng, v, t.her2)}",
                    f"by IHC is {her2_ihc_value(rng, v, t.her2)}",
                ]
                if v in NEW_VARIANTS
                else None,
            )
            + "."
        )
        if t.her2.ish:
            ish_lead = " HER2 FISH: "
            if v in NEW_VARIANTS:
                ish_lead = pick(
                    rng,
                    v,
                    [],
                    new=[
                        " HER2 dual ISH: ",
                        " Reflex HER2 SISH: ",
                        " HER2 in situ hybridisation: ",
                    ],
                )
            text += ish_lead + her2_ish_value(rng, v, t.her2) + "."
    return text


def _table(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    lines = [
        pick(
            rng,
            v,
            ["DIAGNOSIS:", "FINAL DIAGNOSIS", "Diagnosis"],
            new=["Summary:", "RESULT", "Conclusion:"],
        )
    ]
    lines.append(
        f"{_histology_text(t, plan)}, {label(rng, v, 'grade').lower()} {grade_value(rng, v, t)}."
    )
    if not plan.biopsy:
        lines.append(f"{label(rng, v, 'margins')}: {margin_value(rng, v, t)}.")
    lines.append("")
    bar = pick(rng, v, [" | ", "   ", " | ", "\t", "    ", " | "], new=[" | ", "     ", " || "])
    lines.append(
        pick(
            rng,
            v,
            ["BREAST BIOMARKER RESULTS", "Prognostic Markers", "IMMUNOHISTOCHEMISTRY"],
            new=["PREDICTIVE MARKERS", "Biomarker panel", "Hormone receptor and HER2 studies"],
        )
    )
    lines.append(
        bar.join(
            ["Marker", "Result", "Percent", "Intensity"]
            if v not in NEW_VARIANTS
            else pick(
                rng,
                v,
                [],
                new=[
                    "Biomarker|Status|% cells|Intensity",
                    "Antibody|Interpretation|Proportion|Staining",
                    "Test|Finding|Positive cells|Intensity",
                ],
            ).split("|")
        )
    )
    if plan.pending or plan.addendum == "adds":
        word = "See addendum" if plan.addendum == "adds" else rng.choice(["Pending", "Sent out"])
        lines.append(bar.join(["ER", word, "", ""]))
        if plan.pr_shown:
            lines.append(bar.join(["PR", word, "", ""]))
        if plan.her2_shown:
            lines.append(bar.join(["HER2", word, "", ""]))
        return lines

    def row(name: str, r: Receptor) -> str:
        word = pick(
            rng,
            v,
            [r.category.title(), r.category.upper(), r.category.capitalize()],
            new=[
                {"positive": "Pos", "negative": "Neg", "low positive": "Low pos"}[r.category],
                r.category.upper(),
                {"positive": "Expressed", "negative": "Not expressed", "low positive": "Low"}[
                    r.category
                ],
            ],
        )
        return bar.join([name, word, f"{r.percent}%", r.intensity or "-"])

    lines.append(
        row(
            pick(
                rng,
                v,
                ["ER", "Estrogen receptor", "ER (SP1)"],
                new=["ER", "ER (6F11)", "Oestrogen"],
            ),
            t.er,
        )
    )
    if plan.pr_shown:
        lines.append(
            row(
                pick(
                    rng,
                    v,
                    ["PR", "Progesterone receptor", "PgR (1E2)"],
                    new=["PR", "PR (16)", "PgR"],
                ),
                t.pr,
            )
        )
    if plan.her2_shown:
        ihc = f"{t.her2.ihc}+" if t.her2.ihc else "0"
        word = {0: "Negative", 1: "Negative", 2: "Equivocal", 3: "Positive"}[t.her2.ihc]
        lines.append(
            bar.join(
                [
                    pick(
                        rng,
                        v,
                        ["HER2 IHC", "HER2 (IHC)", "HER2/neu"],
                        new=["HER2 (4B5)", "HER2 protein", "c-erbB2 (IHC)"],
                    ),
                    word,
                    ihc,
                    "-",
                ]
            )
        )
        if t.her2.ish:
            lines.append(
                bar.join(
                    [
                        pick(
                            rng,
                            v,
                            ["HER2 FISH", "HER2 (ISH)", "HER2 SISH"],
                            new=["HER2 DISH", "HER2 gene (SISH)", "HER2 CISH"],
                        ),
                        "Amplified" if t.her2.ish == "amplified" else "Not amplified",
                        f"ratio {t.her2.ratio}",
                        "-",
                    ]
                )
            )
    return lines


def _box(checked: bool, marks: tuple[str, str] = ("[X]", "[ ]")) -> str:
    return marks[0] if checked else marks[1]


# Check boxes of the second wave's forms, as OCR reads them (checked, empty).
NEW_MARKS = [("\u2612", "\u2610"), ("[x]", "[ ]"), ("(X)", "( )")]


def _form(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    under = pick(rng, v, ["________", "__________", "[        ]"])
    marks = NEW_MARKS[NEW_VARIANTS.index(v)] if v in NEW_VARIANTS else ("[X]", "[ ]")
    e = marks[1]
    lines = [
        pick(
            rng,
            v,
            [
                "BREAST PATHOLOGY REPORTING FORM",
                "Pathology Request and Report Form",
                "BREAST CANCER PATHOLOGY PROFORMA",
            ],
        )
    ]
    lines.append(f"Institution: {under}")
    lines.append(f"Requesting physician: {under}")
    lines.append(f"{label(rng, v, 'histology')}: {_histology_text(t, plan)}")
    g = t.grade
    lines.append(
        f"{label(rng, v, 'grade')}: "
        + " ".join(f"{_box(g == k, marks)} {k}" for k in (1, 2, 3))
        + f"   Score: {t.score}"
    )
    if plan.biopsy:
        lines.append(
            f"{label(rng, v, 'margins')}: {e} Involved  {e} Not involved   Distance: {under}"
        )
    else:
        inv = t.margin_involved
        dist = under if inv else f"{t.margin_mm:g} mm"
        lines.append(
            f"{label(rng, v, 'margins')}: {_box(inv, marks)} Involved  "
            f"{_box(not inv, marks)} Not involved"
            f"   Distance: {dist}"
        )
    if plan.pending or plan.addendum == "adds":
        for key in ("er", "pr"):
            if key == "pr" and not plan.pr_shown:
                continue
            lines.append(
                f"{label(rng, v, key)}: {e} Positive  {e} Low positive  {e} Negative   %: {under}"
            )
        if plan.her2_shown:
            lines.append(f"{label(rng, v, 'her2_ihc')}: {e} 0  {e} 1+  {e} 2+  {e} 3+")
        lines.append(
            "Receptor studies: " + ("see addendum" if plan.addendum == "adds" else "pending")
        )
        return lines
    for key, r in (("er", t.er), ("pr", t.pr)):
        if key == "pr" and not plan.pr_shown:
            continue
        cat = r.category
        pct = f"{r.percent}" if r.percent else "0"
        lines.append(
            f"{label(rng, v, key)}: {_box(cat == 'positive', marks)} Positive  "
            f"{_box(cat == 'low positive', marks)} Low positive  "
            f"{_box(cat == 'negative', marks)} Negative   "
            f"%: {pct}   Intensity: {r.intensity or '-'}"
        )
    if plan.her2_shown:
        h = t.her2
        lines.append(
            f"{label(rng, v, 'her2_ihc')}: "
            + "  ".join(f"{_box(h.ihc == k, marks)} {'0' if k == 0 else f'{k}+'}" for k in range(4))
        )
        if h.ish:
            lines.append(
                f"{label(rng, v, 'her2_ish')}: {_box(h.ish == 'amplified', marks)} Amplified  "
                f"{_box(h.ish == 'not amplified', marks)} Not amplified   Ratio: {h.ratio}"
            )
        else:
            lines.append(
                f"{label(rng, v, 'her2_ish')}: {e} Amplified  {e} Not amplified   Ratio: {under}"
            )
    return lines


# -- the second wave's layouts (variants f, g, h) --------------------------------------------------

# How a key meets its value (positions f, g, h): f the value on the next line or after a colon;
# g an upper-case key and two spaces, or "="; h leader dots, or "Key:" and the value below.
NEW_STYLES = ["next", "upper", "dots", "colon", "equals", "colon-next"]


def _kv(key: str, value: str, style: str) -> list[str]:
    if style == "next":
        return [key, f"    {value}"]
    if style == "colon-next":
        return [f"{key}:", f"  {value}"]
    if style == "upper":
        return [f"{key.upper()}  {value}"]
    if style == "dots":
        return [f"{key} {'.' * max(3, 36 - len(key))} {value}"]
    if style == "equals":
        return [f"{key} = {value}"]
    return [f"{key}: {value}"]


def _size_text(rng: random.Random, v: str, mm: int) -> str:
    return pick(rng, v, [], new=[f"{mm} mm", f"{mm} mm (greatest dimension)", f"{mm / 10:g} cm"])


def _size_key(rng: random.Random, v: str) -> str:
    return pick(
        rng,
        v,
        [],
        new=[
            "Tumor Size",
            "Size of invasive carcinoma",
            "Maximum tumour diameter",
            "Invasive tumour size",
            "Greatest dimension of invasive carcinoma",
            "Whole tumour size",
        ],
    )


def _component_grade(rng: random.Random, v: str, t: Tumour, style: str) -> list[str]:
    """Nottingham's three component scores on rows of their own, and no overall grade: the
    grade is theirs to add up (a total row sometimes)."""
    k = NEW_VARIANTS.index(v)
    heading = ["Histologic Grade (Nottingham)", "NOTTINGHAM HISTOLOGIC SCORE", "Grading"][k]
    keys = [
        ("Tubule Formation", "Nuclear Pleomorphism", "Mitotic Count", "Total Score"),
        ("Glandular/Tubular Differentiation", "Nuclear Pleomorphism", "Mitotic Rate", "Score"),
        ("Gland formation", "Nuclear atypia", "Mitoses", "Sum of scores"),
    ][k]
    form = ["{n}", "Score {n}", "{n}/3"][k]
    rows = [heading + ("" if style in ("next", "upper", "dots") else ":")]
    for key, n in zip(keys, (t.tubules, t.nuclei, t.mitoses), strict=False):
        rows += _kv(key, form.format(n=n), style)
    if rng.random() < 0.5:
        rows += _kv(keys[3], f"{t.score}" + ("/9" if k == 2 else ""), style)
    return rows


def _receptor_kv(rng: random.Random, v: str, t: Tumour, plan: Plan, style: str) -> list[str]:
    rows = _kv(label(rng, v, "er"), receptor_value(rng, v, t.er), style)
    if plan.pr_shown:
        rows += _kv(label(rng, v, "pr"), receptor_value(rng, v, t.pr), style)
    if plan.her2_shown:
        rows += _kv(label(rng, v, "her2_ihc"), her2_ihc_value(rng, v, t.her2), style)
        if t.her2.ish:
            rows += _kv(label(rng, v, "her2_ish"), her2_ish_value(rng, v, t.her2), style)
    return rows


def _pending_kv(rng: random.Random, v: str, plan: Plan, style: str, addendum: bool) -> list[str]:
    word = (
        pick(
            rng,
            v,
            [],
            new=["Reported in addendum", "Refer to addendum", "See supplementary report"],
        )
        if addendum
        else pick(
            rng,
            v,
            [],
            new=[
                "Pending",
                "Awaited",
                "Sent for external testing",
                "To follow",
                "Requested",
                "In process",
            ],
        )
    )
    rows = _kv(label(rng, v, "er"), word, style)
    if plan.pr_shown:
        rows += _kv(label(rng, v, "pr"), word, style)
    if plan.her2_shown:
        rows += _kv(label(rng, v, "her2_ihc"), word, style)
    return rows


def _tumour_kv(
    rng: random.Random, v: str, t: Tumour, plan: Plan, style: str, size: int
) -> list[str]:
    rows = _kv(label(rng, v, "histology"), _histology_text(t, plan), style)
    rows += _kv(_size_key(rng, v), _size_text(rng, v, size), style)
    if rng.random() < 0.35:
        rows += _component_grade(rng, v, t, style)
    else:
        rows += _kv(label(rng, v, "grade"), grade_value(rng, v, t), style)
    return rows


def _synoptic2(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick(rng, v, [], new=NEW_STYLES)
    lines = [
        pick(
            rng,
            v,
            [],
            new=[
                "BREAST CANCER SYNOPTIC REPORT (CAP)",
                "INVASIVE BREAST CARCINOMA - SUMMARY",
                "Synoptic data: invasive carcinoma of the breast",
            ],
        )
    ]
    procedure = "Core needle biopsy" if plan.biopsy else "Excision (less than total mastectomy)"
    lines += _kv("Procedure", procedure, style)
    if plan.second is not None:
        lines += _kv("Tumour focality", "Multiple foci of invasive carcinoma (2)", style)
        for n, (tum, size) in enumerate(((t, plan.sizes[0]), (plan.second, plan.sizes[1])), 1):
            lines.append(
                pick(
                    rng,
                    v,
                    [],
                    new=[
                        f"TUMOUR {n}",
                        f"Tumor #{n}:",
                        f"Lesion {'AB'[n - 1]} ({['upper outer', 'lower inner'][n - 1]})",
                    ],
                )
            )
            lines += _tumour_kv(rng, v, tum, plan, style, size)
            if plan.pending:
                lines += _pending_kv(rng, v, plan, style, False)
            else:
                lines += _receptor_kv(rng, v, tum, plan, style)
    else:
        lines += _tumour_kv(rng, v, t, plan, style, rng.randint(5, 40))
    if plan.biopsy:
        lines += _kv(label(rng, v, "margins"), "Not applicable", style)
    else:
        lines += _kv(label(rng, v, "margins"), margin_value(rng, v, t), style)
    lines += _kv("Lymphovascular Invasion", rng.choice(["Not identified", "Present"]), style)
    if plan.second is not None:
        return lines
    if plan.pending or plan.addendum == "adds":
        lines += _pending_kv(rng, v, plan, style, plan.addendum == "adds")
    else:
        lines += _receptor_kv(rng, v, t, plan, style)
    return lines


def _twocol(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    """A two-column printed summary as OCR reads it: each line runs across both columns, the
    tumour's features on the left, the biomarkers on the right."""
    left = _kv(label(rng, v, "histology"), _histology_text(t, plan), "colon")
    left += _kv(_size_key(rng, v), _size_text(rng, v, rng.randint(5, 40)), "colon")
    left += _kv(label(rng, v, "grade"), grade_value(rng, v, t), "colon")
    if plan.biopsy:
        left += _kv(label(rng, v, "margins"), "Not applicable", "colon")
    else:
        left += _kv(label(rng, v, "margins"), margin_value(rng, v, t), "colon")
    left += _kv("Lymphovascular invasion", rng.choice(["Not identified", "Present"]), "colon")
    if plan.pending or plan.addendum == "adds":
        right = _pending_kv(rng, v, plan, "colon", plan.addendum == "adds")
    else:
        right = _receptor_kv(rng, v, t, plan, "colon")
    heads = pick(
        rng,
        v,
        [],
        new=[
            "TUMOUR|BIOMARKERS",
            "Pathological findings|Receptor status",
            "MICROSCOPY|PREDICTIVE MARKERS",
        ],
    ).split("|")
    # The left column is as wide as the printed page allows: a long value wraps inside it.
    column = rng.randint(40, 52)
    left = [
        part
        for item in left
        for part in textwrap.wrap(item, column, subsequent_indent="  ", break_on_hyphens=False)
    ]
    width = column + rng.randint(3, 8)
    lines = [heads[0].ljust(width) + heads[1]]
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        lines.append((a.ljust(width) + b).rstrip())
    return lines


def _letter(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    """A consultant's letter to the referring surgeon: the values in running prose (variant h
    only: every wording here is held out)."""
    g, mm, side = t.grade, f"{t.margin_mm:g} mm", t.margin_side
    lines = [f"Dear Dr {rng.choice(['Okafor', 'Lindqvist', 'Brennan'])},", ""]
    specimen = "core biopsy" if plan.biopsy else rng.choice(["wide local excision", "mastectomy"])
    text = f"Thank you for sending the {rng.choice(['left', 'right'])} breast {specimen}."
    if plan.previous:
        prior = rng.choice(["positive", "negative"])
        text += f" Her earlier core biopsy was reported elsewhere as ER {prior}."
    hist = _histology_text(t, plan)
    grade = rng.choice(
        [
            f"{LEVEL[g]} grade (Nottingham grade {g}, score {t.score})",
            f"Nottingham grade {ROMAN[g]} ({t.score}/9)",
            f"graded {g} of 3 on the Elston-Ellis scheme (score {t.score})",
        ]
    )
    text += " " + rng.choice(
        [
            f"The sections show {hist[0].lower() + hist[1:]}, {grade}.",
            f"Microscopy confirms {hist[0].lower() + hist[1:]}; it is {grade}.",
        ]
    )
    if not plan.biopsy:
        if t.margin_involved:
            text += " " + rng.choice(
                [
                    f"Unfortunately the invasive tumour reaches the {side} margin.",
                    f"The {side} margin is involved by invasive tumour.",
                ]
            )
        else:
            text += " " + rng.choice(
                [
                    f"The tumour is clear of all margins, the nearest being {side} at {mm}.",
                    f"Excision appears complete, with {mm} to the nearest ({side}) margin.",
                ]
            )
    lines.append(text)
    lines.append("")
    if plan.pending or plan.addendum == "adds":
        lines.append(
            rng.choice(
                [
                    "Hormone receptor and HER2 results will follow in a supplementary report.",
                    "I will write again once the ER, PR and HER2 studies are back.",
                ]
            )
        )
    else:
        er = _narrative_receptor(rng, v, "oestrogen receptor", t.er)
        parts = [er]
        if plan.pr_shown:
            parts.append(_narrative_receptor(rng, v, "progesterone receptor", t.pr))
        text = "On immunohistochemistry " + " and ".join(parts) + "."
        if plan.her2_shown:
            text += f" HER2 is {her2_ihc_value(rng, v, t.her2)}."
            if t.her2.ish:
                text += f" HER2 in situ hybridisation: {her2_ish_value(rng, v, t.her2)}."
        lines.append(text)
    lines += ["", rng.choice(["Yours sincerely,", "With kind regards,"])]
    return lines


NEW_LAYOUT_BODY = {
    "synoptic": _synoptic2,
    "narrative": _narrative,
    "table": _table,
    "form": _form,
    "twocol": _twocol,
    "letter": _letter,
}


LAYOUT_BODY = {"synoptic": _synoptic, "narrative": _narrative, "table": _table, "form": _form}


def _addendum(
    rng: random.Random, v: str, t: Tumour, plan: Plan, original: Her2 | None
) -> list[str]:
    lines = ["", pick(rng, v, ["ADDENDUM", "ADDENDUM REPORT", "Addendum #1"])]
    if plan.addendum == "adds":
        lines.append(
            pick(
                rng,
                v,
                [
                    "Receptor studies on block A2:",
                    "Results of prognostic markers:",
                    "Immunohistochemistry performed on block B1:",
                ],
            )
        )
        lines += _receptor_rows(rng, v, t, plan, ": ")
    else:  # corrects: an ISH result that decides an equivocal IHC
        assert original is not None
        lines.append(
            pick(
                rng,
                v,
                [
                    "HER2 in situ hybridization was performed; this supersedes the HER2 result above.",  # noqa: E501 (wording data)
                    "Amended HER2 result (reflex FISH):",
                    "Revised HER2 status following ISH:",
                ],
            )
        )
        lines.append(f"{label(rng, v, 'her2_ish')}: {her2_ish_value(rng, v, t.her2)}")
        lines.append(
            f"{pick(rng, v, ['Final HER2 status', 'HER2 (final)', 'Overall HER2 result'])}: "
            f"{t.her2.category.upper()}"
        )
    return lines


# -- the third wave's layouts (variants i, j build; k held out) ------------------------------------


def pick3(rng: random.Random, v: str, pool: list[str]) -> str:
    """A third-wave wording: i owns positions 0, 3, ...; j 1, 4, ...; k 2, 5, ..."""
    k = THIRD_VARIANTS.index(v)
    return rng.choice([w for i, w in enumerate(pool) if i % 3 == k])


THIRD_LABELS: dict[str, list[str]] = {
    "histology": [
        "Type",
        "Histologic subtype",
        "Histological classification",
        "Tumour type (WHO)",
        "Dx",
        "Tumor morphology",
    ],
    "grade": [
        "Grade",
        "Differentiation",
        "Histological differentiation",
        "Gr.",
        "Nottingham (NHG)",
        "Tumour grading",
    ],
    "margins": [
        "Clearance",
        "Surgical margin",
        "Excision status",
        "Margins (closest)",
        "Resection margin",
        "Closest margin",
    ],
    "er": [
        "ER",
        "Estrogen recept.",
        "E.R.",
        "Oestrogen rec.",
        "ER (SP1 clone)",
        "Estrogen receptors (ER)",
    ],
    "pr": ["PgR", "PR", "P.R.", "Progest. receptor", "PgR (1A6)", "Progesterone receptors (PR)"],
    "her2_ihc": [
        "c-erbB-2",
        "Her-2/neu",
        "CerbB2",
        "HER2 (IHC)",
        "HER2 protein IHC",
        "ERBB2 (HER2) protein",
    ],
    "her2_ish": [
        "FISH (HER2)",
        "ISH HER2/CEP17",
        "HER2 SISH/CISH",
        "c-erbB-2 FISH",
        "Her-2/neu ISH",
        "ERBB2 (HER2) gene",
    ],
}

# OCR errors in keys: one letter read as its look-alike.
_KEY_OCR = [("o", "0"), ("O", "0"), ("l", "1"), ("m", "rn"), ("I", "l"), ("i", "l")]


def key_ocr(rng: random.Random, key: str) -> str:
    if rng.random() < 0.35:
        spots = [(i, a, b) for i, ch in enumerate(key) for a, b in _KEY_OCR if ch == a]
        if spots:
            i, _, b = rng.choice(spots)
            return key[:i] + b + key[i + 1 :]
    return key


def label3(rng: random.Random, v: str, key: str) -> str:
    return key_ocr(rng, pick3(rng, v, THIRD_LABELS[key]))


def _states_percent(text: str, p: int) -> bool:
    """``text`` states exactly ``p`` percent (not as a range's end, "71-80%")."""
    return bool(re.search(rf"(?<![\d-]){p}%", text))


def receptor3(rng: random.Random, v: str, r: Receptor) -> str:
    """A receptor's value: exact percentages, ranges ("81-90%"), an Allred or H-score alone."""
    if r.category == "negative":
        pool = [
            "Negative (0%), Allred 0/8",
            "Allred score 0/8 (PS 0, IS 0)",
            "H-score 0/300 - negative",
            "Neg. (no staining in tumour cells)",
            "Negative, <1% of cells",
            "Absent (negative)",
        ]
        return pick3(rng, v, pool)
    p, i = r.percent, r.intensity
    strength = {"weak": 1, "moderate": 2, "strong": 3}[i]
    ps = 2 if p <= 10 else 3 if p <= 33 else 4 if p <= 66 else 5
    allred, hscore = ps + strength, p * strength
    lo = 1 if p <= 10 else ((p - 1) // 10) * 10 + 1
    hi = 10 if p <= 10 else lo + 9
    cat = r.category
    pool = [
        f"{cat.capitalize()} ({lo}-{hi}%), {i}",
        f"Allred score {allred}/8 (PS {ps}, IS {strength})",
        f"{cat.capitalize()} - H-score {hscore} ({i} intensity)",
        f"{'Pos.' if cat == 'positive' else 'Low pos.'} {p}% ({i})",
        f"{cat.upper()} in {lo}-{hi}% of cells, {i} staining",
        f"Allred {allred} (proportion {ps} + intensity {strength}) - {cat}",
    ]
    text = pick3(rng, v, pool)
    if not _states_percent(text, p):
        r.exact = False
    return text


def her2_3(rng: random.Random, v: str, h: Her2, *, with_ish: bool) -> str:
    """HER2's IHC value; with ``with_ish`` the reflexed ISH result in the same value."""
    word = {0: "negative", 1: "negative", 2: "equivocal", 3: "positive"}[h.ihc]
    s = f"{h.ihc}+" if h.ihc else "0"
    if with_ish:
        ish = h.ish
        return pick3(
            rng,
            v,
            [
                f"Equivocal ({s}), reflexed to FISH: {ish}",
                f"{s} (equivocal); ISH {ish}, ratio {h.ratio}",
                f"Borderline ({s}) - in situ hybridisation {ish} (ratio {h.ratio})",
                f"{s}, equivocal -> reflex FISH {ish} (HER2/CEP17 {h.ratio})",
                f"Equivocal, score {s}. Reflex ISH: {ish.upper()}",
                f"Score {s} (borderline); dual-probe ISH shows it is {ish}",
            ],
        )
    return pick3(
        rng,
        v,
        [
            f"{s} / {word}",
            f"{word.upper()} ({s})",
            f"{word}, {s} by IHC",
            f"Score {s} - {word}",
            f"IHC: {s} ({word})",
            f"membrane score {s}; {word}",
        ],
    )


def her2_ish3(rng: random.Random, v: str, h: Her2) -> str:
    word = "Amplified" if h.ish == "amplified" else "Not amplified"
    r = h.ratio
    return pick3(
        rng,
        v,
        [
            f"{word.upper()} - HER2/CEP17 = {r}",
            f"{word} [ratio {r}]",
            f"{word.lower()}, HER2 to CEP17 ratio of {r}",
            f"Ratio HER2:CEN17 {r} ({word.lower()})",
            f"HER2/chr17 ratio {r} => {word.lower()}",
            f"ISH ratio {r}; {word.lower()}",
        ],
    )


def grade3(rng: random.Random, v: str, t: Tumour) -> str:
    g = t.grade
    diff = DIFFERENTIATION[g]
    return pick3(
        rng,
        v,
        [
            f"G{g}",
            diff.capitalize(),
            f"{ROMAN[g]} ({diff.replace(' ', '-')})",
            f"G{g} (Nottingham {t.tubules}+{t.nuclei}+{t.mitoses}={t.score})",
            f"{diff} (grade {g})",
            f"Gr. {g} (score {t.score})",
        ],
    )


def margin3(rng: random.Random, v: str, t: Tumour) -> str:
    side, mm = t.margin_side, f"{t.margin_mm:g} mm"
    if t.margin_involved:
        return pick3(
            rng,
            v,
            [
                f"Tumour at margin ({side}) - involved",
                f"{side.capitalize()} margin: involved by carcinoma",
                f"Carcinoma touches the {side} margin",
                f"Clearance 0 mm ({side}); margin involved",
                f"Involved: {side} margin",
                f"Incompletely excised ({side} margin involved)",
            ],
        )
    return pick3(
        rng,
        v,
        [
            f"Clear, closest margin {side} at {mm}",
            f"Not involved - closest margin ({side}) at {mm}",
            f"Completely excised; nearest margin {side} {mm}",
            f"Clearance {mm} ({side})",
            f"Minimum clearance: {mm}, {side}",
            f"Free by {mm} ({side})",
        ],
    )


HISTOLOGY3: dict[str, list[str]] = {
    "8500/3": [
        "Invasive carcinoma NST",
        "Invasive ca., ductal type",
        "Breast carcinoma of ductal/NST type",
        "Ductal carcinoma, invasive (NST)",
        "IDC, NOS",
        "No special type invasive carcinoma",
    ],
    "8520/3": [
        "Lobular carcinoma (invasive), classical",
        "ILC",
        "Infiltrating lobular ca.",
        "Invasive lobular ca., classic",
        "Lobular type invasive carcinoma",
        "Carcinoma, infiltrating lobular",
    ],
    "8522/3": [
        "Mixed ductal/lobular carcinoma, invasive",
        "Invasive ca. with ductal and lobular features",
        "Carcinoma, mixed ductal and lobular",
        "Invasive ductal and lobular ca. (mixed)",
        "IDC/ILC mixed type",
        "Infiltrating carcinoma, ductal and lobular",
    ],
    "8480/3": [
        "Mucinous ca.",
        "Colloid ca., invasive",
        "Carcinoma, mucinous",
        "Invasive mucinous ca.",
        "Mucinous (colloid) type",
        "Invasive colloid carcinoma",
    ],
    "8211/3": [
        "Tubular ca.",
        "Invasive tubular ca.",
        "Carcinoma, tubular",
        "Tubular type invasive carcinoma",
        "Tubular carcinoma, classical",
        "Infiltrating tubular carcinoma",
    ],
}


def histology3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> str:
    code = HISTOLOGY[t.histology][0]
    text = pick3(rng, v, HISTOLOGY3[code])
    return f"{text} (ICD-O-3 {code})" if plan.icdo else text


# How a key meets its value: i leader dots or aligned spaces; j a pipe row or an abbreviated
# key and a tab; k an em dash or an upper-case key and its value on the next line, indented.
THIRD_STYLES = ["dots", "pipe", "emdash", "spaces", "tab", "upper-next"]


def kv3(key: str, value: str, style: str) -> list[str]:
    if style == "dots":
        return [f"{key} {'.' * max(4, 30 - len(key))} {value}"]
    if style == "spaces":
        return [f"{key.ljust(30)}{value}"]
    if style == "pipe":
        return [f"| {key} | {value} |"]
    if style == "tab":
        return [f"{key}:\t{value}"]
    if style == "emdash":
        return [f"{key} \u2014 {value}"]
    return [key.upper(), f"\t{value}"]


def _pending3(rng: random.Random, v: str, addendum: bool) -> str:
    if addendum:
        return pick3(
            rng,
            v,
            ["Supplementary report to follow", "See supplement", "Reported separately (addendum)"],
        )
    return pick3(
        rng,
        v,
        [
            "Awaiting",
            "Outstanding",
            "Results awaited from referral lab",
            "Not received",
            "Will follow",
            "Not yet reported",
        ],
    )


def _receptors3(rng: random.Random, v: str, t: Tumour, plan: Plan, style: str) -> list[str]:
    if plan.pending or plan.addendum == "adds":
        word = _pending3(rng, v, plan.addendum == "adds")
        rows = kv3(label3(rng, v, "er"), word, style)
        if plan.pr_shown:
            rows += kv3(label3(rng, v, "pr"), word, style)
        if plan.her2_shown:
            rows += kv3(label3(rng, v, "her2_ihc"), word, style)
        return rows
    rows = kv3(label3(rng, v, "er"), receptor3(rng, v, t.er), style)
    if plan.pr_shown:
        rows += kv3(label3(rng, v, "pr"), receptor3(rng, v, t.pr), style)
    if plan.her2_shown:
        h = t.her2
        together = h.ihc == 2 and bool(h.ish) and rng.random() < 0.6
        rows += kv3(label3(rng, v, "her2_ihc"), her2_3(rng, v, h, with_ish=together), style)
        if h.ish and not together:
            rows += kv3(label3(rng, v, "her2_ish"), her2_ish3(rng, v, h), style)
    return rows


def _tumour3(rng: random.Random, v: str, t: Tumour, plan: Plan, style: str) -> list[str]:
    rows = kv3(label3(rng, v, "histology"), histology3(rng, v, t, plan), style)
    rows += kv3("Size", f"{rng.randint(5, 40)} mm", style)
    rows += kv3(label3(rng, v, "grade"), grade3(rng, v, t), style)
    if plan.biopsy:
        rows += kv3(label3(rng, v, "margins"), "N/A (core biopsy)", style)
    else:
        rows += kv3(label3(rng, v, "margins"), margin3(rng, v, t), style)
    return rows


def _comment3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> str:
    """The receptor results inside a comment paragraph, among sentences of other matters."""
    lead = pick3(
        rng,
        v,
        [
            "The findings were discussed with the surgeon.",
            "Controls stained appropriately.",
            "Slides reviewed at the breast MDT.",
        ],
    )
    if plan.pending or plan.addendum == "adds":
        return (
            lead
            + " "
            + pick3(
                rng,
                v,
                [
                    "Hormone receptors and HER2 are awaited.",
                    "Receptor status will follow in a supplementary report.",
                    "ER, PgR and HER2 remain outstanding at the time of reporting.",
                ],
            )
        )
    er = f"{pick3(rng, v, ['ER', 'oestrogen receptor', 'ER status'])} {receptor3(rng, v, t.er)}"
    parts = [er]
    if plan.pr_shown:
        pr = f"{pick3(rng, v, ['PgR', 'progesterone receptor', 'PR status'])} "
        parts.append(pr + receptor3(rng, v, t.pr))
    text = (
        lead
        + " "
        + pick3(
            rng,
            v,
            [
                "On immunohistochemistry the tumour is ",
                "Immunostaining shows ",
                "The invasive carcinoma is ",
            ],
        )
    )
    text += "; ".join(parts) + "."
    if plan.her2_shown:
        h = t.her2
        together = h.ihc == 2 and bool(h.ish)
        text += " HER2 " + her2_3(rng, v, h, with_ish=together) + "."
    text += " " + pick3(
        rng,
        v,
        [
            "Please correlate with imaging.",
            "A copy goes to the oncologist.",
            "These results were phoned to the breast team.",
        ],
    )
    return text


def _synoptic3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick3(rng, v, THIRD_STYLES)
    lines = [pick3(rng, v, ["TUMOUR SUMMARY", "Synoptic | Breast", "CHECKLIST \u2014 BREAST"])]
    lines += _tumour3(rng, v, t, plan, style)
    lines += kv3("LVI", rng.choice(["absent", "present"]), style)
    if rng.random() < 0.3:
        lines += ["", pick3(rng, v, ["Comment:", "COMMENTS", "Remarks \u2014"])]
        lines.append(_comment3(rng, v, t, plan))
    else:
        lines += _receptors3(rng, v, t, plan, style)
    return lines


def _narrative3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    g = t.grade
    hist = histology3(rng, v, t, plan)
    grade = pick3(
        rng,
        v,
        [
            f"G{g}",
            f"{DIFFERENTIATION[g]}",
            f"grade {ROMAN[g]} ({DIFFERENTIATION[g].replace(' ', '-')})",
            f"Nottingham G{g} ({t.score}/9)",
            f"{DIFFERENTIATION[g]} (grade {g} of 3)",
            f"histological grade {g}, {t.score} points",
        ],
    )
    lines = [pick3(rng, v, ["Diagnosis -", "CONCLUSION", "Opinion:"])]
    lines.append(
        pick3(
            rng,
            v,
            [
                f"{hist}, {grade}.",
                f"There is {hist[0].lower() + hist[1:]} which is {grade}.",
                f"Sections show {hist[0].lower() + hist[1:]}, {grade}.",
            ],
        )
    )
    if not plan.biopsy:
        side, mm = t.margin_side, f"{t.margin_mm:g} mm"
        if t.margin_involved:
            lines.append(
                pick3(
                    rng,
                    v,
                    [
                        f"The {side} margin is involved.",
                        f"Tumour extends to the {side} resection margin, which is involved.",
                        f"Incomplete excision: carcinoma is at the {side} margin.",
                    ],
                )
            )
        else:
            lines.append(
                pick3(
                    rng,
                    v,
                    [
                        f"Radial clearance is {mm}, the closest margin being {side}.",
                        f"The closest margin ({side}) is at {mm}; all margins are clear.",
                        f"Complete excision with {mm} to the {side} margin.",
                    ],
                )
            )
    lines += ["", pick3(rng, v, ["Comment:", "COMMENT", "Additional comment \u2014"])]
    lines.append(_comment3(rng, v, t, plan))
    return lines


def _table3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    lines = [f"{label3(rng, v, 'histology')}: {histology3(rng, v, t, plan)}"]
    lines.append(f"{label3(rng, v, 'grade')}: {grade3(rng, v, t)}")
    if not plan.biopsy:
        lines.append(f"{label3(rng, v, 'margins')}: {margin3(rng, v, t)}")
    lines.append("")
    shape = pick3(rng, v, ["pipes", "spaces", "slashes"])

    def row(cells: list[str]) -> str:
        if shape == "pipes":
            return "| " + " | ".join(cells) + " |"
        if shape == "spaces":
            return "".join(c.ljust(18) for c in cells).rstrip()
        return " / ".join(cells)

    lines.append(pick3(rng, v, ["IHC results", "BIOMARKERS", "Receptor panel"]))
    lines.append(row(["Marker", "Result", "Score"]))
    if shape == "pipes":
        lines.append("|---|---|---|")
    if plan.pending or plan.addendum == "adds":
        word = _pending3(rng, v, plan.addendum == "adds")
        names = [label3(rng, v, "er")]
        names += [label3(rng, v, "pr")] if plan.pr_shown else []
        names += [label3(rng, v, "her2_ihc")] if plan.her2_shown else []
        lines += [row([n, word, ""]) for n in names]
        return lines
    for key, r in (("er", t.er), ("pr", t.pr)):
        if key == "pr" and not plan.pr_shown:
            continue
        lines.append(row([label3(rng, v, key), *_receptor_cells(rng, v, r)]))
    if plan.her2_shown:
        h = t.her2
        s = f"{h.ihc}+" if h.ihc else "0"
        word = {0: "Negative", 1: "Negative", 2: "Equivocal", 3: "Positive"}[h.ihc]
        lines.append(row([label3(rng, v, "her2_ihc"), word, s]))
        if h.ish:
            ish = "Amplified" if h.ish == "amplified" else "Not amplified"
            lines.append(row([label3(rng, v, "her2_ish"), ish, f"ratio {h.ratio}"]))
    return lines


def _receptor_cells(rng: random.Random, v: str, r: Receptor) -> list[str]:
    """A table row's result and score cells: the category, and a percentage, a range or an
    Allred score."""
    word = {"positive": "Positive", "negative": "Negative", "low positive": "Low positive"}
    if r.category == "negative":
        return [word["negative"], pick3(rng, v, ["0%", "Allred 0", "H 0"])]
    p = r.percent
    strength = {"weak": 1, "moderate": 2, "strong": 3}[r.intensity]
    ps = 2 if p <= 10 else 3 if p <= 33 else 4 if p <= 66 else 5
    lo = 1 if p <= 10 else ((p - 1) // 10) * 10 + 1
    hi = 10 if p <= 10 else lo + 9
    score = pick3(
        rng,
        v,
        [
            f"{lo}-{hi}%, {r.intensity}",
            f"Allred {ps + strength}/8",
            f"H-score {p * strength}",
            f"{p}% {r.intensity}",
            f"{p}%",
            f"{p}% ({r.intensity})",
        ],
    )
    if not _states_percent(score, p):
        r.exact = False
    return [word[r.category], score]


# Check marks of the third wave's forms (checked, empty, before or after the option).
THIRD_MARKS = [("(X)", "( )", "after"), ("[x]", "[ ]", "after"), ("X", "_", "before")]


def _form3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    on, off, where = THIRD_MARKS[THIRD_VARIANTS.index(v)]

    def opts(options: list[tuple[str, bool]]) -> str:
        if where == "after":
            return "   ".join(f"{o} {on if c else off}" for o, c in options)
        return "   ".join(f"{on if c else off} {o}" for o, c in options)

    blank = pick3(rng, v, ["......", "________", "....."])
    lines = [pick3(rng, v, ["BREAST HISTOPATHOLOGY FORM", "Breast cancer dataset", "PROFORMA"])]
    lines.append(f"Consultant: {blank}")
    lines.append(f"{label3(rng, v, 'histology')}: {histology3(rng, v, t, plan)}")
    g = t.grade
    lines.append(f"{label3(rng, v, 'grade')}: " + opts([(f"G{k}", g == k) for k in (1, 2, 3)]))
    inv = t.margin_involved
    if plan.biopsy:
        lines.append(
            f"{label3(rng, v, 'margins')}: " + opts([("Involved", False), ("Clear", False)])
        )
    else:
        dist = blank if inv else f"{t.margin_mm:g} mm"
        lines.append(
            f"{label3(rng, v, 'margins')}: "
            + opts([("Involved", inv), ("Clear", not inv)])
            + f"   Closest margin at: {dist}"
        )
    pending = plan.pending or plan.addendum == "adds"
    for key, r in (("er", t.er), ("pr", t.pr)):
        if key == "pr" and not plan.pr_shown:
            continue
        cat = "" if pending else r.category
        pct = blank if pending else f"{r.percent}%"
        lines.append(
            f"{label3(rng, v, key)}: "
            + opts([("Pos", cat == "positive"), ("Low", cat == "low positive")])
            + "   "
            + opts([("Neg", cat == "negative")])
            + f"   %: {pct}"
            + ("" if pending or cat == "negative" else f"   Intensity: {r.intensity}")
        )
    if plan.her2_shown:
        h = t.her2
        ihc = -1 if pending else h.ihc
        lines.append(
            f"{label3(rng, v, 'her2_ihc')}: "
            + opts([("0" if k == 0 else f"{k}+", ihc == k) for k in range(4)])
        )
        ish = "" if pending else h.ish
        lines.append(
            f"{label3(rng, v, 'her2_ish')}: "
            + opts([("Amplified", ish == "amplified"), ("Not amplified", ish == "not amplified")])
        )
    if pending:
        lines.append(_pending3(rng, v, plan.addendum == "adds"))
    return lines


def _twocol3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick3(rng, v, ["dots", "tab", "emdash"])
    left = _tumour3(rng, v, t, plan, style)
    right = _receptors3(rng, v, t, plan, "tab" if style == "dots" else style)
    column = rng.randint(44, 56)
    left = [
        part
        for item in left
        for part in textwrap.wrap(item, column, subsequent_indent="  ", break_on_hyphens=False)
    ]
    width = column + rng.randint(3, 8)
    lines = [pick3(rng, v, ["Morphology", "HISTOLOGY", "Tumour"]).ljust(width) + "Markers"]
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        lines.append((a.ljust(width) + b).rstrip())
    return lines


def _letter3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    name = pick3(rng, v, ["Dr Hale", "Dr Ruiz", "Dr Nakamura"])
    lines = [pick3(rng, v, [f"Dear {name},", f"Re: your patient - to {name}", f"{name} -"]), ""]
    hist = histology3(rng, v, t, plan)
    g = t.grade
    text = pick3(
        rng,
        v,
        [
            f"This {'core' if plan.biopsy else 'excision'} shows {hist[0].lower() + hist[1:]}"
            f" (G{g}).",
            f"The diagnosis is {hist[0].lower() + hist[1:]}, {DIFFERENTIATION[g]}.",
            f"We found {hist[0].lower() + hist[1:]}; grade {ROMAN[g]} of III.",
        ],
    )
    if not plan.biopsy:
        side, mm = t.margin_side, f"{t.margin_mm:g} mm"
        text += " " + (
            pick3(
                rng,
                v,
                [
                    f"The {side} margin is involved.",
                    f"Carcinoma reaches the {side} margin (involved).",
                    f"Excision is incomplete at the {side} margin.",
                ],
            )
            if t.margin_involved
            else pick3(
                rng,
                v,
                [
                    f"Clearance is {mm} at the closest ({side}) margin.",
                    f"The closest margin is {side}, at {mm}.",
                    f"Margins are clear, {mm} at best ({side}).",
                ],
            )
        )
    lines += [text, "", _comment3(rng, v, t, plan), "", "Regards,"]
    return lines


THIRD_LAYOUT_BODY = {
    "synoptic": _synoptic3,
    "narrative": _narrative3,
    "table": _table3,
    "form": _form3,
    "twocol": _twocol3,
    "letter": _letter3,
}


def _addendum3(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    lines = ["", pick3(rng, v, ["SUPPLEMENTARY REPORT", "Addendum (1)", "ADDITIONAL REPORT"])]
    style = pick3(rng, v, THIRD_STYLES)
    if plan.addendum == "adds":
        saved = plan.pending, plan.addendum
        plan.pending, plan.addendum = False, ""
        lines += _receptors3(rng, v, t, plan, style)
        plan.pending, plan.addendum = saved
        return lines
    lines.append(
        pick3(
            rng,
            v,
            [
                "HER2 reflexed to FISH; this replaces the HER2 result above.",
                "Amended HER2 (after ISH):",
                "HER2 status revised on in situ hybridisation:",
            ],
        )
    )
    lines += kv3(label3(rng, v, "her2_ish"), her2_ish3(rng, v, t.her2), style)
    lines += kv3(
        pick3(rng, v, ["HER2 final", "Final HER2", "HER2 overall"]),
        t.her2.category.upper(),
        style,
    )
    return lines


# -- the fourth wave's layouts (variants l, m build; n held out) -----------------------------------


def pick4(rng: random.Random, v: str, pool: list[T]) -> T:
    """A fourth-wave wording: l owns positions 0, 3, ...; m 1, 4, ...; n 2, 5, ..."""
    k = FOURTH_VARIANTS.index(v)
    return rng.choice([w for i, w in enumerate(pool) if i % 3 == k])


FOURTH_LABELS: dict[str, list[str]] = {
    "histology": [
        "Tumor histotype",
        "Hist. type",
        "Morphology (WHO)",
        "Carcinoma type",
        "Histol. dx",
        "Invasive tumor type",
    ],
    "grade": [
        "Combined histologic grade",
        "Nott. grade",
        "Modified Bloom-Richardson",
        "Histo grade",
        "MBR grade",
        "Overall grade (Elston)",
    ],
    "margins": [
        "Margin status",
        "Marg.",
        "Surgical margins (inked)",
        "Resection margins",
        "Mgns",
        "Excision margins",
    ],
    "er": [
        "Estrogen receptor (ER)",
        "Estr. rec.",
        "ER-alpha",
        "Estrogen Receptor (SP1)",
        "Oestr.",
        "ER (6F11)",
    ],
    "pr": [
        "Progesterone receptor (PgR)",
        "Progest.",
        "PgR status",
        "Progesterone Receptor (1E2)",
        "Prog. rec.",
        "PR (16)",
    ],
    "her2_ihc": [
        "HER2 immunohistochemistry",
        "HER-2",
        "HER2/neu (4B5)",
        "Her2 IHC score",
        "HER 2",
        "ERBB2 IHC",
    ],
    "her2_ish": [
        "HER2 FISH",
        "HER-2 ISH",
        "HER2 gene (ISH)",
        "Her2 DISH",
        "HER 2 FISH",
        "ERBB2 gene amplification",
    ],
}

# OCR damage to keys of its own (positions l, m, n): a letter dropped, g read as q (l); e read
# as c, h as b (m); two letters swapped, "cl" read as "d" (n).
FOURTH_KEY_OCR = ["drop", "e>c", "swap", "g>q", "h>b", "cl>d"]


def key_ocr4(rng: random.Random, v: str, key: str) -> str:
    if rng.random() >= 0.35:
        return key
    kind = pick4(rng, v, FOURTH_KEY_OCR)
    letters = [i for i, ch in enumerate(key) if ch.isalpha()]
    if kind == "drop":
        inner = [i for i in letters if 0 < i < len(key) - 1 and key[i - 1].isalpha()]
        if inner:
            i = rng.choice(inner)
            return key[:i] + key[i + 1 :]
        return key
    if kind == "swap":
        pairs = [i for i in letters if i + 1 < len(key) and key[i + 1].isalpha() and i > 0]
        pairs = [i for i in pairs if key[i] != key[i + 1]]
        if pairs:
            i = rng.choice(pairs)
            return key[:i] + key[i + 1] + key[i] + key[i + 2 :]
        return key
    a, b = kind.split(">")
    spots = [m.start() for m in re.finditer(re.escape(a), key)]
    if spots:
        i = rng.choice(spots)
        return key[:i] + b + key[i + len(a) :]
    return key


def label4(rng: random.Random, v: str, key: str) -> str:
    return key_ocr4(rng, v, pick4(rng, v, FOURTH_LABELS[key]))


def receptor4(rng: random.Random, v: str, r: Receptor) -> str:
    """A receptor's value as H-score, "percent" in words, bucketed ranges, "<1%", intensity as
    an adverb or a 1+-3+ score (the truth states no percentage or intensity the text omits)."""
    if r.category == "negative":
        return pick4(
            rng,
            v,
            [
                "H-score 0",
                "0 percent of nuclei",
                "H score = 0",
                "less than 1% (negative)",
                "no reactivity (0 percent)",
                "< 1 per cent; negative",
            ],
        )
    p, i = r.percent, r.intensity
    strength = {"weak": 1, "moderate": 2, "strong": 3}[i]
    h = p * strength
    cat = r.category
    bucket = "1-10%" if p <= 10 else "11-50%" if p <= 50 else ">50%"
    bucket_n = (
        "1 to 10 per cent" if p <= 10 else "11 to 50 per cent" if p <= 50 else "over 50 per cent"
    )
    adverb = {"weak": "weakly", "moderate": "moderately", "strong": "strongly"}[i]
    k = pick4(rng, v, [0, 1, 2, 3, 4, 5])
    if k == 0:
        # An H-score alone decides the category only above 30 (more than 10% of cells).
        text = f"H-score {h}" if h > 30 else f"{cat.capitalize()} (H-score {h})"
        r.exact, r.intensity_shown = False, False
    elif k == 1:
        text = f"{p} percent, {i} intensity"
    elif k == 2:
        text = f"H score = {h} ({i})" if h > 30 else f"{cat} - H score = {h} ({i})"
        r.exact = False
    elif k == 3:
        text = f"{adverb.capitalize()} positive in {bucket} of cells"
        r.exact = False
    elif k == 4:
        text = f"{p}% nuclei staining, intensity {strength}+ ({i})"
    else:
        text = f"{i} nuclear staining, {bucket_n} of cells"
        r.exact = False
    return text


def _her2_desc(ihc: int, k: int) -> str:
    if k == 0:
        return [
            "no staining observed",
            "faint, incomplete membrane staining",
            "weak to moderate complete membrane staining",
            "circumferential, complete, intense membrane staining",
        ][ihc]
    return [
        "no membrane staining",
        "incomplete faint membrane staining in >10% of cells",
        "weak-moderate complete staining in >10%",
        "complete intense staining in >10%",
    ][ihc]


def her2_4(rng: random.Random, v: str, h: Her2, *, with_ish: bool) -> str:
    """HER2's IHC value (a score with the CAP description of its staining); with ``with_ish``
    the reflexed ISH stated by its ratio and copy number in the same value."""
    word = {0: "negative", 1: "negative", 2: "equivocal", 3: "positive"}[h.ihc]
    s = f"{h.ihc}+" if h.ihc else "0"
    if with_ish:
        c = her2_copies(h)
        return pick4(
            rng,
            v,
            [
                f"{s} equivocal; reflex ISH ratio {h.ratio}, {c} HER2 copies per cell",
                f"Equivocal {s} - FISH {h.ratio} (ratio), mean HER2 {c} signals",
                f"{s} (equivocal), HER2:CEP17 {h.ratio} with {c} copies/cell on ISH",
                f"Borderline {s}, ISH: ratio {h.ratio} / copy number {c}",
                f"{s}, reflexed; HER2/CEP17 {h.ratio}, average copies {c}",
                f"{s} equivocal -> dual ISH {h.ratio}, {c} signals per nucleus",
            ],
        )
    return pick4(
        rng,
        v,
        [
            f"{s} ({_her2_desc(h.ihc, 0)})",
            f"{word.capitalize()} (score {s} on a 0-3+ scale)",
            f"{_her2_desc(h.ihc, 1)} ({s})",
            f"{word} [{s}]",
            f"Staining {s}; {word}",
            f"{word} (IHC {s}, {_her2_desc(h.ihc, 1)})",
        ],
    )


def her2_copies(h: Her2) -> float:
    """The mean HER2 copy number of an ISH result: 4 or more when amplified (ASCO/CAP group 1,
    ratio >= 2), under 4 when not (group 5, ratio < 2)."""
    if h.ish == "amplified":
        return round(max(4.2, h.ratio * 2.1), 1)
    return round(min(3.6, max(1.6, h.ratio * 1.9)), 1)


def her2_ish4(rng: random.Random, v: str, h: Her2) -> str:
    """An ISH result stated by its ratio and copy number, with or without the word."""
    word = "amplified" if h.ish == "amplified" else "not amplified"
    r, c = h.ratio, her2_copies(h)
    cep = round(c / r, 1)
    return pick4(
        rng,
        v,
        [
            f"HER2/CEP17 ratio {r}; mean HER2 copy number {c} per cell",
            f"ratio {r} (HER2 {c} signals/nucleus)",
            f"HER2:CEP17 = {r}, average HER2 copies {c}/cell",
            f"{word.capitalize()} (ratio {r}, {c} copies)",
            f"mean HER2 signals {c}, CEP17 {cep}, ratio {r}",
            f"{r} (ratio), {c} HER2 signals per cell - {word}",
        ],
    )


def grade4(rng: random.Random, v: str, t: Tumour) -> str:
    """A grade given by its component scores or total alone, with no grade stated."""
    a, b, c, s = t.tubules, t.nuclei, t.mitoses, t.score
    return pick4(
        rng,
        v,
        [
            f"Tubules {a}, nuclei {b}, mitoses {c}",
            f"T{a}P{b}M{c} (total {s})",
            f"tubule formation = {a}; pleomorphism = {b}; mitotic rate = {c}",
            f"Score {s} of 9 (tubular {a}, nuclear {b}, mitotic {c})",
            f"Nuclear {b}, tubular {a}, mitotic {c} - total {s}",
            f"total score {s} ({a}/{b}/{c})",
        ],
    )


def margin4(rng: random.Random, v: str, t: Tumour) -> str:
    """A margin by its distance in mm or cm, "less than" a bound, or ink on the tumour."""
    side, mm = t.margin_side, t.margin_mm
    cm = f"{mm / 10:g}"
    if t.margin_involved:
        return pick4(
            rng,
            v,
            [
                f"Positive for carcinoma at {side} margin",
                f"0 mm, tumor present at {side} inked margin",
                f"Invasive carcinoma transects the {side} margin",
                f"Tumor on ink ({side})",
                f"Involved ({side}), distance 0 mm",
                f"Ink on tumor, {side} aspect",
            ],
        )
    k = pick4(rng, v, [0, 1, 2, 3, 4, 5])
    if k == 0:
        return f"{cm} cm from {side} margin"
    if k == 1:
        return f"Distance {mm:g}mm ({side})"
    if k == 2:
        return f"Tumor {cm} cm away from the {side} margin"
    if k == 3:
        if mm < 1:
            t.margin_exact = False
            return f"less than 1 mm from the {side} margin"
        return f"{mm:g} millimeters to {side} margin"
    if k == 4:
        if mm <= 2:
            t.margin_exact = False
            return f"< 2 mm ({side}), margins negative"
        return f"Negative, closest {side} {cm}cm"
    if mm < 1:
        t.margin_exact = False
        return f"under 1 mm to the {side} margin, not involved"
    return f"{mm:g} millimetres ({side}); margins free"


HISTOLOGY4: dict[str, list[str]] = {
    "8500/3": [
        "Ductal, invasive (NST)",
        "Invasive carcinoma, ductal/NST",
        "Infiltrating mammary carcinoma, no special type",
        "Invasive ductal adenocarcinoma",
        "Carcinoma of breast, ductal (invasive)",
        "NST invasive breast carcinoma",
    ],
    "8520/3": [
        "Lobular, invasive",
        "Invasive carcinoma, lobular type (classic)",
        "Infiltrating lobular adenocarcinoma",
        "Invasive lobular adenocarcinoma",
        "Carcinoma of breast, lobular (invasive)",
        "Classical invasive lobular breast carcinoma",
    ],
    "8522/3": [
        "Ductal and lobular, invasive (mixed)",
        "Mixed-type invasive carcinoma (ductal + lobular)",
        "Infiltrating mixed ductal-lobular carcinoma",
        "Invasive carcinoma, mixed ductal/lobular pattern",
        "Carcinoma with mixed ductal and lobular morphology",
        "Mixed ductal-lobular invasive carcinoma",
    ],
    "8480/3": [
        "Mucinous, invasive",
        "Invasive carcinoma, mucinous (colloid) type",
        "Infiltrating mucinous adenocarcinoma",
        "Colloid adenocarcinoma",
        "Carcinoma of breast, mucinous",
        "Mucin-secreting (colloid) invasive carcinoma",
    ],
    "8211/3": [
        "Tubular, invasive",
        "Invasive carcinoma, tubular pattern (pure)",
        "Infiltrating tubular adenocarcinoma",
        "Tubular adenocarcinoma, invasive",
        "Carcinoma of breast, tubular type",
        "Invasive tubular breast carcinoma",
    ],
}


def histology4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> str:
    code = HISTOLOGY[t.histology][0]
    text = pick4(rng, v, HISTOLOGY4[code])
    return f"{text} (ICD-O-3 {code})" if plan.icdo else text


# How a key meets its value (positions l, m, n): l " - " or "is"; m no separator at all or a
# run of tabs; n ":-" or " -- ".
FOURTH_STYLES = ["hyphen", "none", "colon-dash", "is", "tabs", "double-dash"]
# How a value too long for its line goes on (positions l, m, n): indented by spaces, aligned
# under the value or by a tab.
FOURTH_WRAPS = ["    ", "<align>", "\t", "        ", "<align+2>", "  \t"]


def kv4(key: str, value: str, style: str, wrap: str = "") -> list[str]:
    sep = {
        "hyphen": " - ",
        "none": " ",
        "colon-dash": ":- ",
        "is": " is ",
        "tabs": "\t\t\t",
        "double-dash": " -- ",
    }[style]
    head = f"{key}{sep}"
    if not wrap or len(value) < 24 or " " not in value[12:]:
        return [head + value]
    cut = value.index(" ", 12)
    first, rest = value[:cut], value[cut + 1 :]
    if wrap.startswith("<align"):
        indent = " " * (len(head.expandtabs()) + (2 if "+2" in wrap else 0))
    else:
        indent = wrap
    return [head + first, indent + rest]


def _pending4(rng: random.Random, v: str, addendum: bool) -> str:
    if addendum:
        return pick4(
            rng,
            v,
            ["to follow in addendum", "see addendum report", "will be issued as an addendum"],
        )
    return pick4(
        rng,
        v,
        [
            "in progress",
            "sent to reference laboratory",
            "testing ordered",
            "not available at time of report",
            "requested, pending",
            "to be reported later",
        ],
    )


def _receptors4(
    rng: random.Random, v: str, t: Tumour, plan: Plan, style: str, wrap: str
) -> list[str]:
    if plan.pending or plan.addendum == "adds":
        word = _pending4(rng, v, plan.addendum == "adds")
        rows = kv4(label4(rng, v, "er"), word, style)
        if plan.pr_shown:
            rows += kv4(label4(rng, v, "pr"), word, style)
        if plan.her2_shown:
            rows += kv4(label4(rng, v, "her2_ihc"), word, style)
        return rows
    rows = kv4(label4(rng, v, "er"), receptor4(rng, v, t.er), style, wrap)
    if plan.pr_shown:
        rows += kv4(label4(rng, v, "pr"), receptor4(rng, v, t.pr), style, wrap)
    if plan.her2_shown:
        h = t.her2
        together = h.ihc == 2 and bool(h.ish) and rng.random() < 0.5
        rows += kv4(label4(rng, v, "her2_ihc"), her2_4(rng, v, h, with_ish=together), style, wrap)
        if h.ish and not together:
            rows += kv4(label4(rng, v, "her2_ish"), her2_ish4(rng, v, h), style, wrap)
    return rows


def _tumour4(rng: random.Random, v: str, t: Tumour, plan: Plan, style: str, wrap: str) -> list[str]:
    rows = kv4(label4(rng, v, "histology"), histology4(rng, v, t, plan), style, wrap)
    rows += kv4("Size", f"{rng.randint(5, 40)} mm", style)
    rows += kv4(label4(rng, v, "grade"), grade4(rng, v, t), style, wrap)
    if plan.biopsy:
        rows += kv4(label4(rng, v, "margins"), "not applicable (biopsy)", style)
    else:
        rows += kv4(label4(rng, v, "margins"), margin4(rng, v, t), style, wrap)
    return rows


def _synoptic4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick4(rng, v, FOURTH_STYLES)
    wrap = pick4(rng, v, FOURTH_WRAPS) if rng.random() < 0.5 else ""
    lines = [pick4(rng, v, ["INVASIVE CARCINOMA", "Synoptic data", "CAP SUMMARY (BREAST)"])]
    lines += _tumour4(rng, v, t, plan, style, wrap)
    lines += kv4("Lymphovascular invasion", rng.choice(["not identified", "present"]), style)
    lines += _receptors4(rng, v, t, plan, style, wrap)
    return lines


def _receptor_sentence4(rng: random.Random, v: str, name: str, r: Receptor) -> str:
    value = receptor4(rng, v, r)
    return pick4(
        rng,
        v,
        [
            f"{name} is {value}",
            f"{name} shows {value}",
            f"for {name}, {value}",
        ],
    )


def _narrative4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    hist = histology4(rng, v, t, plan)
    lines = [pick4(rng, v, ["Final diagnosis", "DIAGNOSIS (summary)", "Impression"])]
    lines.append(
        pick4(
            rng,
            v,
            [
                f"{hist}. The Nottingham components are: {grade4(rng, v, t)}.",
                f"Diagnosis is {hist[0].lower() + hist[1:]}; grading {grade4(rng, v, t)}.",
                f"{hist} is seen, graded as {grade4(rng, v, t)}.",
            ],
        )
    )
    if not plan.biopsy:
        lines.append(
            pick4(rng, v, ["Margins: ", "The margin status is ", "Margin assessment shows "])
            + margin4(rng, v, t)
            + "."
        )
    lines.append("")
    if plan.pending or plan.addendum == "adds":
        lines.append(
            pick4(rng, v, ["ER, PR and HER2 are ", "Receptor studies are ", "Biomarkers are "])
            + _pending4(rng, v, plan.addendum == "adds")
            + "."
        )
        return lines
    names = pick4(
        rng, v, [("ER", "PR"), ("estrogen receptor", "progesterone receptor"), ("ER", "PgR")]
    )
    text = _receptor_sentence4(rng, v, names[0], t.er) + "."
    if plan.pr_shown:
        text += " " + _receptor_sentence4(rng, v, names[1], t.pr) + "."
    if plan.her2_shown:
        h = t.her2
        together = h.ihc == 2 and bool(h.ish)
        text += " HER2 is " + her2_4(rng, v, h, with_ish=together) + "."
    lines.append(text)
    return lines


def _table4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick4(rng, v, FOURTH_STYLES)
    lines = kv4(label4(rng, v, "histology"), histology4(rng, v, t, plan), style)
    lines += kv4(label4(rng, v, "grade"), grade4(rng, v, t), style)
    if not plan.biopsy:
        lines += kv4(label4(rng, v, "margins"), margin4(rng, v, t), style)
    lines.append("")
    shape = pick4(rng, v, ["tabs", "grid", "semicolons"])

    def row(cells: list[str]) -> list[str]:
        if shape == "tabs":
            return ["\t\t".join(cells)]
        if shape == "grid":
            return ["| " + " | ".join(c.ljust(16) for c in cells) + " |", "+" + "-" * 56 + "+"]
        return ["; ".join(cells)]

    lines.append(pick4(rng, v, ["Predictive markers", "RECEPTOR STUDIES", "Biomarker panel"]))
    lines += row(["Test", "Result", "Detail"])
    if plan.pending or plan.addendum == "adds":
        word = _pending4(rng, v, plan.addendum == "adds")
        names = [label4(rng, v, "er")]
        names += [label4(rng, v, "pr")] if plan.pr_shown else []
        names += [label4(rng, v, "her2_ihc")] if plan.her2_shown else []
        for n in names:
            lines += row([n, word, "-"])
        return lines
    for key, r in (("er", t.er), ("pr", t.pr)):
        if key == "pr" and not plan.pr_shown:
            continue
        value = receptor4(rng, v, r)
        lines += row([label4(rng, v, key), value, "-"])
    if plan.her2_shown:
        h = t.her2
        s = f"{h.ihc}+" if h.ihc else "0"
        lines += row([label4(rng, v, "her2_ihc"), s, _her2_desc(h.ihc, 0)])
        if h.ish:
            lines += row([label4(rng, v, "her2_ish"), her2_ish4(rng, v, h), "-"])
    return lines


# Check marks of the fourth wave's forms (positions l, m, n): checked, unchecked, before or
# after the option.
FOURTH_MARKS = [
    ("[v]", "[ ]", "before"),
    ("*", "", "before"),
    ("\u2714", "\u2610", "before"),
    ("\u2713", "", "after"),
    ("<x>", "< >", "after"),
    ("[*]", "[ ]", "after"),
]


def _form4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    on, off, where = pick4(rng, v, FOURTH_MARKS)
    style = pick4(rng, v, FOURTH_STYLES)

    def mark(o: str, c: bool) -> str:
        m = on if c else off
        if not m:
            return o
        return f"{m} {o}" if where == "before" else f"{o} {m}"

    def opts(options: list[tuple[str, bool]]) -> str:
        return "    ".join(mark(o, c) for o, c in options)

    blank = pick4(rng, v, ["__________", "[        ]", "-----"])
    lines = [
        pick4(rng, v, ["BREAST CANCER REPORTING FORM", "Pathology worksheet", "REQUEST/REPORT"])
    ]
    lines += kv4("Reporting pathologist", blank, style)
    lines += kv4(label4(rng, v, "histology"), histology4(rng, v, t, plan), style)
    g = t.grade
    lines += kv4(label4(rng, v, "grade"), opts([(f"Grade {k}", g == k) for k in (1, 2, 3)]), style)
    inv = t.margin_involved
    if plan.biopsy:
        lines += kv4(
            label4(rng, v, "margins"), opts([("Positive", False), ("Negative", False)]), style
        )
    else:
        lines += kv4(
            label4(rng, v, "margins"), opts([("Positive", inv), ("Negative", not inv)]), style
        )
        dist = blank if inv else f"{t.margin_mm:g} mm"
        lines += kv4("Distance to closest margin", dist, style)
    pending = plan.pending or plan.addendum == "adds"
    for key, r in (("er", t.er), ("pr", t.pr)):
        if key == "pr" and not plan.pr_shown:
            continue
        cat = "" if pending else r.category
        lines += kv4(
            label4(rng, v, key),
            opts(
                [("Positive", cat in ("positive", "low positive")), ("Negative", cat == "negative")]
            ),
            style,
        )
        if not pending and cat != "negative":
            lines += kv4("  % cells", f"{r.percent}", style)
            lines += kv4(
                "  Intensity",
                opts([(w.capitalize(), r.intensity == w) for w in INTENSITY]),
                style,
            )
    if plan.her2_shown:
        h = t.her2
        ihc = -1 if pending else h.ihc
        lines += kv4(
            label4(rng, v, "her2_ihc"),
            opts([("0" if k == 0 else f"{k}+", ihc == k) for k in range(4)]),
            style,
        )
        ish = "" if pending else h.ish
        lines += kv4(
            label4(rng, v, "her2_ish"),
            opts(
                [
                    ("Amplified", ish == "amplified"),
                    ("Not amplified", ish == "not amplified"),
                    ("Not done", not pending and not ish),
                ]
            ),
            style,
        )
    if pending:
        lines.append(_pending4(rng, v, plan.addendum == "adds").capitalize())
    return lines


def _twocol4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    style = pick4(rng, v, FOURTH_STYLES)
    left = _tumour4(rng, v, t, plan, style, "")
    right = _receptors4(rng, v, t, plan, style, "")
    column = rng.randint(46, 58)
    left = [
        part
        for item in left
        for part in textwrap.wrap(item, column, subsequent_indent="   ", break_on_hyphens=False)
    ]
    width = column + rng.randint(3, 8)
    lines = [pick4(rng, v, ["TUMOUR", "Pathology", "Findings"]).ljust(width) + "Biomarkers"]
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        lines.append((a.ljust(width) + b).rstrip())
    return lines


def _letter4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    name = pick4(rng, v, ["Dr Okafor", "Dr Lindqvist", "Dr Varga"])
    lines = [
        pick4(rng, v, [f"To: {name}", f"Dear Colleague ({name}),", f"For the attention of {name}"]),
        "",
    ]
    hist = histology4(rng, v, t, plan)
    text = pick4(
        rng,
        v,
        [
            f"Thank you for this specimen. It contains {hist[0].lower() + hist[1:]}"
            f" (Nottingham: {grade4(rng, v, t)}).",
            f"Our diagnosis is {hist[0].lower() + hist[1:]}, with {grade4(rng, v, t)}.",
            f"In summary: {hist[0].lower() + hist[1:]}; {grade4(rng, v, t)}.",
        ],
    )
    if not plan.biopsy:
        text += (
            " "
            + pick4(
                rng,
                v,
                ["Margin: ", "As to the margins, ", "Regarding margins: "],
            )
            + margin4(rng, v, t)
            + "."
        )
    lines += [text, ""]
    if plan.pending or plan.addendum == "adds":
        lines.append(
            pick4(rng, v, ["Receptor studies are ", "ER/PR/HER2 are ", "Hormone receptors are "])
            + _pending4(rng, v, plan.addendum == "adds")
            + "."
        )
    else:
        text = _receptor_sentence4(rng, v, "ER", t.er) + "."
        if plan.pr_shown:
            text += " " + _receptor_sentence4(rng, v, "PR", t.pr) + "."
        if plan.her2_shown:
            h = t.her2
            together = h.ihc == 2 and bool(h.ish)
            text += " HER2 is " + her2_4(rng, v, h, with_ish=together) + "."
        lines.append(text)
    lines += ["", pick4(rng, v, ["Kind regards,", "Yours sincerely,", "With best wishes,"])]
    return lines


FOURTH_LAYOUT_BODY = {
    "synoptic": _synoptic4,
    "narrative": _narrative4,
    "table": _table4,
    "form": _form4,
    "twocol": _twocol4,
    "letter": _letter4,
}


def _addendum4(rng: random.Random, v: str, t: Tumour, plan: Plan) -> list[str]:
    lines = ["", pick4(rng, v, ["ADDENDUM REPORT", "Addendum #1", "Supplemental report"])]
    style = pick4(rng, v, FOURTH_STYLES)
    if plan.addendum == "adds":
        saved = plan.pending, plan.addendum
        plan.pending, plan.addendum = False, ""
        lines += _receptors4(rng, v, t, plan, style, "")
        plan.pending, plan.addendum = saved
        return lines
    lines.append(
        pick4(
            rng,
            v,
            [
                "HER2 in situ hybridisation, which supersedes the IHC result above:",
                "HER2 (revised after FISH):",
                "Reflex ISH completed; HER2 now reads:",
            ],
        )
    )
    lines += kv4(label4(rng, v, "her2_ish"), her2_ish4(rng, v, t.her2), style)
    lines += kv4(
        pick4(rng, v, ["HER2 result", "HER2 (final)", "Final HER2 status"]),
        t.her2.category,
        style,
    )
    return lines


def truth_of(t: Tumour, plan: Plan) -> dict[str, Any]:
    code, term, _ = HISTOLOGY[t.histology]
    receptors_given = not plan.pending
    truth: dict[str, Any] = {
        "histology": f"{code} {term}",
        "grade": f"grade {t.grade} (score {t.score})",
        "margins": None
        if plan.biopsy
        else "involved"
        if t.margin_involved
        else f"not involved ({t.margin_mm:g} mm)"
        if t.margin_exact
        else "not involved",
        "er_status": t.er.canonical() if receptors_given else None,
        "pr_status": t.pr.canonical() if receptors_given and plan.pr_shown else None,
        "her2_status": t.her2.category if receptors_given and plan.her2_shown else None,
    }
    return truth


def generate(template: str, index: int, *, seed: int = 37) -> Generated:
    layout, v = template.split("/")
    rng = random.Random(f"{seed}:{template}:{index}")
    plan = _plan(rng)
    t = _tumour(rng, v)
    plan.tumour = t
    original = None
    index_tumour = t
    two = v in NEW_VARIANTS and layout == "synoptic" and not plan.biopsy and not plan.addendum
    if two and rng.random() < 0.3:
        plan.second = _tumour(rng, v)
        plan.sizes = (rng.randint(5, 40), rng.randint(5, 40))
        while plan.sizes[1] == plan.sizes[0]:
            plan.sizes = (plan.sizes[0], rng.randint(5, 40))
        if plan.sizes[1] > plan.sizes[0]:
            index_tumour = plan.second
        plan.features.append("multi_tumour")
    if plan.addendum == "corrects":
        if not plan.her2_shown:
            plan.her2_shown = True
        # The report gives IHC 2+ with no ISH; the addendum's ISH decides it.
        original = Her2(2, "")
        final = Her2(2, rng.choice(["amplified", "not amplified"]))
        final.ratio = (
            round(rng.uniform(2.2, 4.5), 1)
            if final.ish == "amplified"
            else round(rng.uniform(1.0, 1.7), 1)
        )
        t.her2 = original
    institution = rng.choice(INSTITUTIONS)
    lines = _header(rng, v, institution)
    lines += _history(rng, v, plan)
    if plan.multi:
        lines += _node_specimen(rng, v)
        lines.append(
            pick(
                rng,
                v,
                [
                    "B. " + _specimen(rng, v, plan) + ":",
                    "PART B: " + _specimen(rng, v, plan),
                    "B) " + _specimen(rng, v, plan) + ":",
                ],
            )
        )
    else:
        lines.append(_specimen(rng, v, plan) + ":")
    body = (
        FOURTH_LAYOUT_BODY
        if v in FOURTH_VARIANTS
        else THIRD_LAYOUT_BODY
        if v in THIRD_VARIANTS
        else NEW_LAYOUT_BODY
        if v in NEW_VARIANTS
        else LAYOUT_BODY
    )
    if layout == "letter":
        lines = _header(rng, v, institution) + body[layout](rng, v, t, plan)
    else:
        lines += body[layout](rng, v, t, plan)
    if plan.addendum == "corrects":
        t.her2 = final
    if plan.addendum and v in FOURTH_VARIANTS:
        lines += _addendum4(rng, v, t, plan)
    elif plan.addendum and v in THIRD_VARIANTS:
        lines += _addendum3(rng, v, t, plan)
    elif plan.addendum:
        lines += _addendum(rng, v, t, plan, original)
    lines += [
        "",
        f"Electronically signed by {rng.choice(['J. Smith, MD', 'A. Patel, MD', 'L. Moreau, MD'])}",
    ]
    text = "\n".join(lines)
    noisy = rng.random() < 0.5
    if noisy:
        plan.features.append("ocr")
        text = ocr_noise(rng, text, rate=rng.choice([0.02, 0.04, 0.06]))
    truth = truth_of(t, plan)
    if index_tumour is not t:  # the larger tumour's own values; the margins are the specimen's
        truth.update({k: w for k, w in truth_of(index_tumour, plan).items() if k != "margins"})
    return Generated(f"{template}#{index}", template, text, truth, plan.features)


def corpus(which: str, per_template: int = 40) -> Iterator[Generated]:
    """Every generated document of the ``build`` or ``held_out`` templates."""
    chosen = [t for t in templates() if split_of(t) == which]
    for template in chosen:
        for index in range(per_template):
            yield generate(template, index)


if __name__ == "__main__":  # pragma: no cover - a look at one document
    import sys

    doc = generate(
        sys.argv[1] if len(sys.argv) > 1 else "synoptic/a",
        int(sys.argv[2]) if len(sys.argv) > 2 else 0,
    )
    print(doc.text)
    print(json.dumps(doc.truth, indent=2), doc.features)
