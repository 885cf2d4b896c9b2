"""The oncology benchmark: values compared by meaning, the frozen split, the report's shape."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from benchmarks import oncology_bench, pathgen
from benchmarks.evaluation import FieldCounts, value_matches


def test_receptor_values_match_by_meaning_and_text_fields_by_text():
    assert value_matches("positive (95%)", "strongly positive", name="er_status")
    assert not value_matches("negative", "Positive (95%)", name="er_status")
    assert value_matches(
        "positive", "2+", name="her2_status", canonical="positive (IHC 2+, ISH amplified)"
    )
    assert value_matches(
        "8500/3 invasive carcinoma of no special type",
        "Infiltrating duct carcinoma",
        name="histology",
    )
    # A value with no canonical meaning (dev's urothelial grade) falls back to text.
    assert value_matches("High grade", "high-grade", name="grade")


def test_a_wrong_canonical_value_is_a_false_positive_and_a_miss():
    counts = FieldCounts()
    counts.add("negative", "POSITIVE (90%)", name="er_status", canonical="positive (90%)")
    assert (counts.tp, counts.fp, counts.fn) == (0, 1, 1)


def test_the_split_is_frozen_and_covers_every_layout():
    split = json.loads(pathgen.SPLIT_FILE.read_text())
    assert sorted(split["build"] + split["held_out"]) == sorted(pathgen.templates())
    assert not set(split["build"]) & set(split["held_out"])
    layouts = set(pathgen.LAYOUTS) | set(pathgen.NEW_LAYOUTS)
    assert {t.split("/")[0] for t in split["held_out"]} == layouts
    # The first wave's held-out list stays as it was frozen; the second wave adds h to it, the
    # third k.
    assert split["held_out_first_wave"] == [f"{lay}/c" for lay in pathgen.LAYOUTS]
    assert set(split["held_out"]) - set(split["held_out_first_wave"]) == {
        t for t in pathgen.templates() if t.endswith(("/h", "/k", "/n"))
    }
    assert {t.split("/")[0] for t in split["held_out"] if t.endswith("/k")} == layouts
    assert {t.split("/")[0] for t in split["held_out"] if t.endswith("/n")} == layouts


def _digest(templates: list[str]) -> str:
    """The hash of the first 10 documents of each template: key, text, truth and features."""
    h = hashlib.sha256()
    for template in templates:
        for i in range(10):
            d = pathgen.generate(template, i)
            h.update(json.dumps([d.key, d.text, d.truth, d.features], sort_keys=True).encode())
    return h.hexdigest()


def test_first_wave_documents_are_byte_identical_to_those_measured():
    # Hash of the first wave's documents (a-e, 10 each) as generated before the second wave
    # was added: adding variants must not change one document already measured.
    first = [
        f"{lay}/{v}" for lay in pathgen.LAYOUTS for v in pathgen.VARIANTS + pathgen.BUILD_EXTRA
    ]
    assert _digest(first) == "f2fab0aeb64280207dc9164bda6f8e411f0ac2fe1186c70807d8532591135f4e"


def test_earlier_waves_documents_are_byte_identical_after_the_third_wave():
    # Hash of every template of the first two waves (a-h, twocol, letter; 10 documents each) as
    # generated before the third wave was added.
    earlier = [
        t
        for t in pathgen.templates()
        if t.split("/")[1] not in pathgen.THIRD_VARIANTS + pathgen.FOURTH_VARIANTS
    ]
    assert len(earlier) == 36
    assert _digest(earlier) == "28facba4e3d9606a9ae449e2bba18202c295d151f80c47d35c40e51ec9e0655b"


def test_earlier_waves_documents_are_byte_identical_after_the_fourth_wave():
    # Hash of every template of the first three waves (a-k; 10 documents each) as generated
    # before the fourth wave was added.
    earlier = [t for t in pathgen.templates() if t.split("/")[1] not in pathgen.FOURTH_VARIANTS]
    assert len(earlier) == 54
    assert _digest(earlier) == "24a9105e1b08ce6d8828b9538621d653cc4b602ee406d4c0491744c902b96379"


def _owns_its_wordings(
    pick: Callable[[random.Random, str, Any], Any], held: str, build: str, pools: list[Any]
) -> None:
    """In every pool, the held-out variant's wordings and its build variants' share none."""
    for pool in pools:
        held_words = {pick(random.Random(i), held, pool) for i in range(60)}
        build_words = {pick(random.Random(i), v, pool) for i in range(60) for v in build}
        assert held_words and build_words and not held_words & build_words


def _draws_c_from_an_earlier_pool(held: str, build: str) -> None:
    """Where a wave draws a first-wave pool, its held-out variant draws c's wordings (held
    out) and a build variant none of them."""
    old = pathgen.LABELS["er"]
    assert {pathgen.pick(random.Random(i), held, old) for i in range(60)} == set(old[2::3])
    assert not {pathgen.pick(random.Random(i), build, old) for i in range(60)} & set(old[2::3])


def test_fourth_wave_held_out_variant_shares_no_wording_with_its_build_variants():
    pools: list[list[Any]] = [
        *pathgen.FOURTH_LABELS.values(),
        *pathgen.HISTOLOGY4.values(),
        pathgen.FOURTH_STYLES,
        pathgen.FOURTH_WRAPS,
        pathgen.FOURTH_MARKS,
        pathgen.FOURTH_KEY_OCR,
    ]
    _owns_its_wordings(pathgen.pick4, "n", "lm", pools)
    # The receptor, HER2, grade and margin wordings: n's never equal l's or m's.
    for seed in range(60):
        tumour = pathgen._tumour(random.Random(seed), "a")
        fns = [
            lambda r, v, t=tumour: pathgen.grade4(r, v, t),
            lambda r, v, t=tumour: pathgen.margin4(r, v, t),
            lambda r, v, t=tumour: pathgen.receptor4(r, v, t.er),
            lambda r, v, t=tumour: pathgen.her2_4(r, v, t.her2, with_ish=False),
        ]
        if tumour.her2.ish:
            fns += [
                lambda r, v, t=tumour: pathgen.her2_ish4(r, v, t.her2),
                lambda r, v, t=tumour: pathgen.her2_4(r, v, t.her2, with_ish=True),
            ]
        for fn in fns:
            n = {fn(random.Random(i), "n") for i in range(30)}
            lm = {fn(random.Random(i), v) for i in range(30) for v in "lm"}
            assert not n & lm
    # Where the fourth wave draws an earlier pool, n draws c's (held out), l and m a's and b's.
    _draws_c_from_an_earlier_pool("n", "l")


def test_fourth_wave_truth_states_only_what_the_report_states():
    # A percentage in the truth is printed in the report (as "90%", "90 percent" or a form's
    # "% cells 90"); an ISH result stated by numbers alone is ASCO/CAP group 1 or 5.
    for layout in (*pathgen.LAYOUTS, *pathgen.NEW_LAYOUTS):
        for v in pathgen.FOURTH_VARIANTS:
            for i in range(30):
                doc = pathgen.generate(f"{layout}/{v}", i)
                text = doc.text.replace(" ", "").replace("O", "0").replace("l", "1")
                for name in ("er_status", "pr_status"):
                    value = doc.truth[name] or ""
                    if "%" in value:
                        pct = value.split("(")[1].split(",")[0].rstrip(")%")
                        assert pct in text
    for ratio, ish in ((2.2, "amplified"), (5.0, "amplified"), (1.0, ""), (1.8, "")):
        h = pathgen.Her2(2, ish or "not amplified", ratio)
        copies = pathgen.her2_copies(h)
        assert (copies >= 4) == (ish == "amplified")


def test_third_wave_held_out_variant_shares_no_wording_with_its_build_variants():
    pools = [
        *pathgen.THIRD_LABELS.values(),
        *pathgen.HISTOLOGY3.values(),
        pathgen.THIRD_STYLES,
    ]
    _owns_its_wordings(pathgen.pick3, "k", "ij", pools)
    # The receptor, HER2, grade and margin wordings: k's never equal i's or j's.
    for seed in range(40):
        rng = random.Random(seed)
        tumour = pathgen._tumour(rng, "a")
        for fn in (pathgen.grade3, pathgen.margin3):
            k = {fn(random.Random(i), "k", tumour) for i in range(30)}
            ij = {fn(random.Random(i), v, tumour) for i in range(30) for v in "ij"}
            assert not k & ij
    # Where the third wave draws an earlier pool, k draws c's (held out), i and j a's and b's.
    _draws_c_from_an_earlier_pool("k", "i")


def test_a_receptor_percentage_in_the_truth_is_printed_in_the_report():
    # Ranges, Allred and H-scores state no exact percentage: the truth then states none either.
    for template in ("synoptic/i", "synoptic/j", "table/i", "table/j", "narrative/j"):
        for i in range(40):
            doc = pathgen.generate(template, i)
            for name in ("er_status", "pr_status"):
                value = doc.truth[name] or ""
                if "%" in value:
                    pct = value.split("(")[1].split(",")[0]
                    text = doc.text.replace(" ", "").replace("O", "0").replace("l", "1")
                    assert pct in text


def test_second_wave_held_out_variant_shares_no_wording_with_its_build_variants():
    pools = [*pathgen.NEW_LABELS.values(), *pathgen.NEW_HISTOLOGY.values(), pathgen.NEW_STYLES]
    _owns_its_wordings(lambda r, v, pool: pathgen.pick(r, v, [], new=pool), "h", "fg", pools)
    # Where a pool has no second-wave wordings, h draws c's (held out), f and g a's and b's.
    _draws_c_from_an_earlier_pool("h", "f")


def test_generated_documents_are_reproducible_and_held_out_wording_differs():
    assert pathgen.generate("synoptic/a", 3).text == pathgen.generate("synoptic/a", 3).text
    build = {pathgen.pick(random.Random(i), "a", pathgen.LABELS["er"]) for i in range(50)}
    held = {pathgen.pick(random.Random(i), "c", pathgen.LABELS["er"]) for i in range(50)}
    assert not build & held


def test_build_only_variants_draw_no_held_out_wording_and_leave_the_split_alone():
    assert set(pathgen.split()["held_out_first_wave"]) == {f"{lay}/c" for lay in pathgen.LAYOUTS}
    for extra in pathgen.BUILD_EXTRA:
        for key in ("grade", "margins", "er"):
            held = {pathgen.pick(random.Random(i), "c", pathgen.LABELS[key]) for i in range(80)}
            got = {pathgen.label(random.Random(i), extra, key) for i in range(80)}
            assert got and not got & held
        assert pathgen.split_of(f"synoptic/{extra}") == "build"


def test_measure_prints_both_splits_side_by_side():
    def perfect(doc_type: str, pages: list[str], loop: bool) -> dict[str, Any]:
        doc = next(
            d
            for t in pathgen.templates()
            for i in range(2)
            if (d := pathgen.generate(t, i)).text == pages[0]
        )
        return {"values": dict(doc.truth), "iterations": 1, "score": 0.99}

    metrics = oncology_bench.measure(perfect, per_template=2)
    assert metrics["held_out"]["all"]["precision"] == 1.0
    build = [t for t in pathgen.templates() if pathgen.split_of(t) == "build"]
    assert metrics["build"]["all"]["band_documents"] == 2 * len(build)
    report = oncology_bench.format_report(metrics)
    assert "synoptic/c" in report and "held_out" in report and "met" in report
