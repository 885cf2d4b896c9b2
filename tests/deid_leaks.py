# ruff: noqa: RUF001 (names in other scripts are the point)
"""The leaks a privacy review found in de-identified exports and in prompts with
LLM_DEIDENTIFY=1 (issue 36), as one fictional document: every value in LEAKS must be gone
from what leaves. Shared by tests/review/test_deid_leaks.py (the export command) and
tests/reliability/test_deid_leaks.py (the stub model)."""

from __future__ import annotations

PAGES = [
    "DISCHARGE SUMMARY\n"
    "Pt: Marisol Quillen   Hospital number: 123 456 789\n"
    "Patient: QUILLEN, Marisol    DOB: 02/11/1958\n"
    "患者：王伟    Пациент: Иван Петров\n"
    "Address: 12 rue des Lilas, 75011 Paris\n"
    "Previously lived at 45 Kowhai Street, Ponsonby, Auckland 1011 and at\n"
    "Flat 3, 22 Mill Lane, Leeds LS6 2AB; treated in Springfield IL in 2019.\n"
    "Specimen SP:21:004471   NHI ZAC4471   Ref 2021/00457   Collected 20210314\n"
    "Phone +64 9 555 0142 ext 4471, or 0161 496 0958.\n",
    "HOSPITAL COURSE\nSeen with Dr. Fitzgibbon; Hannelore Fitzgibbon agreed with the plan.\n"
    "Her daughter Ingrid called. wife: Ana at bedside. son, jovan, will drive her home.\n"
    "FINAL DIAGNOSIS: invasive ductal carcinoma, grade 2. ER positive (90%).\n",
]
# Lower-case and unlabelled names in a field value, an evidence snippet and a reviewer note.
FIELD_VALUE = "marisol quillen"
NOTE = "called marisol and her daughter ingrid; quillen to return on 03/04/2025"
FILENAME = "quillen_marisol_20210314.pdf"
EVIDENCE = "Pt: Marisol Quillen   Hospital number: 123 456 789"

LEAKS = (
    "Marisol", "marisol", "Quillen", "QUILLEN", "quillen", "123 456", "456 789", "王伟",
    "Иван", "Петров", "rue des Lilas", "75011", "Kowhai", "Ponsonby", "1011", "Mill Lane",
    "LS6 2AB", "Springfield", "SP:21:004471", "004471", "ZAC4471", "2021/00457", "00457",
    "20210314", "555 0142", "4471", "496 0958", "Fitzgibbon", "Hannelore", "Ingrid", "ingrid",
    "Ana ", "jovan", "02/11/1958",
)  # fmt: skip
# What must stay: the clinical content.
# (A heading in capitals is not here: the default CRF model takes "DISCHARGE SUMMARY" for a
# name, an over-removal docs/deidentification.md reports.)
KEPT = ("invasive ductal carcinoma", "ER positive (90%)")
