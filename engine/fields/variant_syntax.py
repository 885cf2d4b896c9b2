"""Is a reported variant well formed? A grammar of HGVS protein (p.), coding DNA (c.) and
genomic (g.) changes as clinical reports write them, and of the events reports name without
HGVS (exon deletions, amplifications, losses, fusions). Pure: no Django.

The ``hgvs`` package's parser was measured against this grammar (tests/engine/test_variant_
syntax.py lists the cases): it accepts the same HGVS changes, but it installs psycopg2 from a
source archive (a C build against libpq) for its database access, which a fresh machine cannot
be relied on to do; and it knows nothing of "amplification" or "exon 19 deletion". So the
grammar is the project's own.
"""

from __future__ import annotations

import re

AMINO_ONE = "ACDEFGHIKLMNPQRSTVWY"
AMINO_THREE = (
    "Ala|Arg|Asn|Asp|Cys|Gln|Glu|Gly|His|Ile|Leu|Lys|Met|Phe|Pro|Ser|Thr|Trp|Tyr|Val|Sec|Pyl"
)
_AA = rf"(?:{AMINO_THREE}|[{AMINO_ONE}])"
_STOP = r"(?:Ter|\*|X)"
_AA_OR_STOP = rf"(?:{_AA}|{_STOP})"
_P_POS = rf"{_AA_OR_STOP}\d{{1,5}}"
_P_EDIT = (
    rf"(?:{_AA_OR_STOP}|=|\?"  # substitution, silent, unknown
    rf"|fs(?:{_STOP}\d{{0,4}}|{_STOP}\?)?|{_AA}fs(?:{_STOP}\d{{0,4}}|{_STOP}\?)?"  # frameshift
    rf"|del|dup|ins(?:{_AA_OR_STOP})+|delins(?:{_AA_OR_STOP})+|ext{_STOP}?\d{{0,4}}"
    rf"|{_AA}?ext{_STOP}?\d{{0,4}})"
)
PROTEIN = rf"p\.\(?(?:{_P_POS}(?:_{_P_POS})?{_P_EDIT}|0\??|\?)\)?"
_PROTEIN_BARE = rf"(?:{_P_POS}(?:_{_P_POS})?{_P_EDIT})"

_C_POS = r"(?:[-*]?\d{1,6}(?:[+-]\d{1,5})?)"
_NT = "[ACGTN]"
_C_EDIT = (
    rf"(?:{_NT}>{_NT}|del{_NT}*\d*|dup{_NT}*\d*|ins{_NT}+|ins\d+|delins{_NT}+|inv\d*|=|"
    rf"\[\d+\]|{_NT}+\[\d+\])"
)
CODING = rf"[cnr]\.{_C_POS}(?:_{_C_POS})?{_C_EDIT}"
GENOMIC = rf"[gm]\.\d{{1,10}}(?:_\d{{1,10}})?{_C_EDIT}"

_EVENT = (
    r"(?:amplification|amplified|amp|gain|copy\s+number\s+(?:gain|loss)|loss|homozygous\s+"
    r"deletion|deletion|deleted|truncation|rearrangement|rearranged|fusion|translocation"
    r"|mutation|splice\s+site(?:\s+\S+)?|overexpression)"
)
_EXON = (
    r"exon\s*\d{1,2}(?:\s*-\s*\d{1,2})?\s*(?:deletion|insertion|skipping|del|ins|duplication"
    r"|mutation|alteration|delins)s?|(?:deletion|insertion|skipping)\s+(?:in\s+|of\s+)?"
    r"exons?\s*\d{1,2}"
)
GENE = r"[A-Z][A-Z0-9]{0,9}(?:-[A-Z0-9]{1,4})?(?:/[A-Z0-9]{1,2})?"

_CHANGE = re.compile(
    rf"^(?:{PROTEIN}|{CODING}|{GENOMIC}|{_PROTEIN_BARE})"
    rf"(?:\s*[,;(]?\s*(?:{PROTEIN}|{CODING})\)?)?$"
)
_VARIANT = re.compile(
    rf"^(?:{GENE})\s+(?:(?P<change>\S.*?)|(?P<exon>{_EXON})|(?P<event>{_EVENT}))$",
    re.IGNORECASE,
)
_FUSION = re.compile(
    rf"^{GENE}\s*(?:-|::|/|\u2013)\s*{GENE}(?:\s+(?:fusion|rearrangement|translocation))?$"
)


def change_is_valid(change: str) -> bool:
    """An HGVS change as reports write it: "p.G12D", "p.(Arg248Trp)", "Q479*", "c.35G>A",
    "c.5000C>T (p.S1667L)", "g.55249071C>T"."""
    return bool(_CHANGE.match(change.strip()))


def variant_is_valid(value: str) -> bool:
    """A gene and a well-formed change ("KRAS p.G12D"), an event ("CDKN2A loss", "EGFR exon
    19 deletion", "ERBB2 amplification"), or a fusion ("EML4-ALK fusion")."""
    value = " ".join(value.split())
    if _FUSION.match(value):
        return True
    match = _VARIANT.match(value)
    if match is None:
        return False
    if match.group("exon") or match.group("event"):
        return True
    change = match.group("change")
    if re.fullmatch(rf"(?i:{_EXON}|{_EVENT})", change):
        return True
    return change_is_valid(change)
