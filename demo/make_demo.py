"""Write the demo documents shipped in demo/documents (fictional patients, no real data).

Run: .venv/bin/python demo/make_demo.py   (needs the test extras: reportlab)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pdfgen import image_pdf, text_pdf

OUT = Path(__file__).resolve().parent / "documents"

HEADER = "Riverside Demo Hospital · Patient: DEMO, Alex · MRN DEMO-0001 · DOB 01/01/1970"

PATHOLOGY = [
    [
        "SURGICAL PATHOLOGY REPORT",
        HEADER,
        "Specimen received: Left breast, ultrasound-guided core needle biopsy (3 cores).",
        "CLINICAL HISTORY",
        "Palpable mass in the left breast at 2 o'clock, 3 cm from the nipple. BI-RADS 5.",
        "FINAL DIAGNOSIS",
        "Left breast, 2 o'clock, core biopsy:\nInvasive ductal carcinoma, Nottingham grade 2 "
        "(tubules 3, nuclei 2, mitoses 1).\nDuctal carcinoma in situ, solid type, intermediate "
        "nuclear grade, is also present.",
        "GROSS DESCRIPTION",
        "Received in formalin are three cores of tan-white tissue, 1.2 to 1.6 cm in length, "
        "entirely submitted in cassette A1.",
    ],
    [
        "MICROSCOPIC DESCRIPTION",
        "The cores show infiltrating nests and cords of malignant epithelial cells in a "
        "desmoplastic stroma. No lymphovascular invasion is identified.",
        "IMMUNOHISTOCHEMISTRY",
        "- Estrogen receptor (ER): positive, 90% of tumour nuclei, strong.\n"
        "- Progesterone receptor (PR): positive, 40%, moderate.\n"
        "- HER2 (IHC): 1+, negative.\n- Ki-67: 18%.",
        "Electronically signed by: Demo Pathologist, MD. Date: 03/14/2025.",
    ],
]

RADIOLOGY = [
    [
        "CT CHEST WITH CONTRAST",
        HEADER,
        "CLINICAL INDICATION",
        "Staging of newly diagnosed left breast carcinoma.",
        "TECHNIQUE",
        "Axial images of the chest were acquired after intravenous contrast. Coronal and sagittal "
        "reformats were reviewed.",
        "COMPARISON",
        "None.",
        "FINDINGS",
        "Lungs: A 4 mm solid nodule in the right upper lobe (series 3, image 42). No consolidation "
        "or effusion.\nMediastinum: No enlarged lymph nodes. Left axillary node measures 9 mm in "
        "short axis.\nBones: No suspicious osseous lesion.",
        "IMPRESSION",
        "1. No evidence of thoracic metastatic disease.\n2. 4 mm right upper lobe nodule, "
        "likely benign; follow-up CT in 12 months per Fleischner criteria.",
        "Dictated by: Demo Radiologist, MD.",
    ]
]

GENOMIC = [
    [
        "COMPREHENSIVE GENOMIC PROFILING REPORT",
        HEADER,
        "Specimen: Left breast core biopsy, tumour content 60%. Test: targeted NGS panel, "
        "324 genes, DNA.",
        "SUMMARY OF FINDINGS",
        "Microsatellite status: MSS (microsatellite stable).\nTumor mutational burden (TMB): "
        "4 mutations/Mb (low).",
        "GENOMIC ALTERATIONS",
        "PIK3CA H1047R, variant allele frequency (VAF) 27%: pathogenic.\nTP53 R248Q, VAF 33%: "
        "pathogenic.",
    ],
    [
        "VARIANTS OF UNKNOWN SIGNIFICANCE",
        "ATM S1691R, VAF 48% (possibly germline; consider germline testing).",
        "THERAPY ASSOCIATIONS",
        "PIK3CA H1047R: alpelisib in combination with fulvestrant (FDA approved for HR+/HER2- "
        "advanced breast cancer).",
        "METHODS",
        "Hybrid capture sequencing to a median depth of 650x. Limit of detection 5% VAF.",
    ],
]

FAX_COVER = [
    [
        "FAX COVER SHEET",
        "To: Oncology Intake, Riverside Demo Hospital. Fax: (555) 010-2200",
        "From: Demo Family Practice. Fax: (555) 010-3300",
        "Pages: 4 including cover. Re: Referral and test request for DEMO, Alex.",
        "Prior authorization number: PA-DEMO-44812.",
        "CONFIDENTIALITY NOTICE",
        "This facsimile contains confidential information intended only for the recipient named "
        "above. If you received it in error, call the sender and destroy all copies.",
    ]
]

CLINIC_NOTE = """ONCOLOGY CLINIC NOTE

Patient: DEMO, Alex    MRN DEMO-0001    Visit: 03/20/2025

CHIEF COMPLAINT
New diagnosis of left breast cancer, here to discuss treatment.

HISTORY OF PRESENT ILLNESS
55-year-old woman who noticed a left breast lump two months ago. Core biopsy showed
invasive ductal carcinoma, grade 2, ER positive, PR positive, HER2 negative. CT chest
showed no metastatic disease.

PAST MEDICAL HISTORY
Hypertension, well controlled. No prior cancer.

MEDICATIONS
Amlodipine 5 mg daily.

PHYSICAL EXAMINATION
Well appearing. 2.5 cm firm mobile mass in the left breast at 2 o'clock. No palpable
axillary adenopathy.

ASSESSMENT AND PLAN
1. Left breast invasive ductal carcinoma, clinical stage IA, hormone receptor positive.
   Plan lumpectomy with sentinel node biopsy; refer to surgical oncology.
2. Genomic profiling shows PIK3CA mutation; relevant if disease recurs.
3. Return after surgery to discuss adjuvant endocrine therapy.
"""

SCANNED_REFERRAL = [
    "REFERRAL LETTER",
    "Dear colleague,",
    "I am referring Alex Demo, a 55 year old woman with a",
    "newly diagnosed left breast cancer, for surgical opinion.",
    "Please see the enclosed biopsy report.",
    "Kind regards, Demo Family Practice",
]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    files = {
        "pathology_core_biopsy_demo.pdf": text_pdf(PATHOLOGY, title="Demo pathology report"),
        "ct_chest_demo.pdf": text_pdf(RADIOLOGY, title="Demo radiology report"),
        "genomic_profile_demo.pdf": text_pdf(GENOMIC, title="Demo genomic report", table_on_page=2),
        "fax_cover_demo.pdf": text_pdf(FAX_COVER, title="Demo fax cover"),
        "scanned_referral_demo.pdf": image_pdf(SCANNED_REFERRAL, dpi=200),
        "oncology_clinic_note_demo.txt": CLINIC_NOTE.encode(),
    }
    for name, data in files.items():
        (OUT / name).write_bytes(data)
        print(f"wrote demo/documents/{name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
