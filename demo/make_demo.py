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


# -- a second patient: a bundle of outside records, and the checks the demo starts -----------

HEADER_2 = "Lakeside Demo Medical Center · Patient: DEMO, Jordan · MRN DEMO-0002 · DOB 06/15/1962"

# Seven pages, four documents: a pathology report (1-2), a tumour board note (3), a CT report
# (4-5) and a genomic report (6-7). The offline classifier reads the note, which quotes the
# pathology, as part of the pathology report and escalates: the reviewer splits it off.
BUNDLE = [
    [
        "SURGICAL PATHOLOGY REPORT",
        HEADER_2,
        "Specimen: Sigmoid colon, laparoscopic sigmoid colectomy. Accession S25-DEMO-0412.",
        "CLINICAL HISTORY",
        "Obstructing sigmoid mass seen at colonoscopy; biopsy showed adenocarcinoma.",
        "FINAL DIAGNOSIS",
        "Sigmoid colon, colectomy:\nInvasive adenocarcinoma, moderately differentiated, "
        "4.1 cm, invading through the muscularis propria into pericolorectal tissue (pT3).\n"
        "Metastatic carcinoma in 2 of 18 regional lymph nodes (pN1b).\nProximal, distal and "
        "radial margins negative (closest, radial, 1.2 cm).",
    ],
    [
        "SYNOPTIC SUMMARY",
        "Histologic type: adenocarcinoma. Histologic grade: G2. Tumour deposits: not "
        "identified. Lymphovascular invasion: present. Perineural invasion: not identified. "
        "Pathologic stage: pT3 pN1b.",
        "MISMATCH REPAIR IMMUNOHISTOCHEMISTRY",
        "MLH1, PMS2, MSH2 and MSH6: nuclear expression retained (mismatch repair proficient).",
        "GROSS DESCRIPTION",
        "Received fresh, a segment of sigmoid colon 24 cm in length with an annular, "
        "ulcerated mass 4.1 cm in greatest dimension, 8 cm from the distal margin.",
        "Electronically signed by: Demo Pathologist, MD. Date: 04/02/2025.",
    ],
    [
        "MULTIDISCIPLINARY TUMOUR BOARD NOTE",
        HEADER_2,
        "Date of discussion: 04/10/2025. Present: colorectal surgery, medical oncology, "
        "radiology, pathology.",
        "HISTORY OF PRESENT ILLNESS",
        "62-year-old man presented with change in bowel habit and iron deficiency anaemia. "
        "Colonoscopy showed an obstructing sigmoid mass; he underwent laparoscopic sigmoid "
        "colectomy on 03/28/2025.",
        "PATHOLOGY REVIEWED",
        "Moderately differentiated adenocarcinoma, pT3 pN1b, 2/18 lymph nodes, margins clear, "
        "lymphovascular invasion present, mismatch repair proficient.",
        "ASSESSMENT AND PLAN",
        "Stage IIIB sigmoid adenocarcinoma. Recommend adjuvant CAPOX for 3 months. MRI liver "
        "if the segment 6 lesion on the staging scan is indeterminate. Send tissue for "
        "genomic profiling. Follow-up in medical oncology clinic in 2 weeks.",
    ],
    [
        "CT CHEST, ABDOMEN AND PELVIS WITH CONTRAST",
        HEADER_2,
        "CLINICAL INDICATION",
        "Staging after sigmoid colectomy for adenocarcinoma.",
        "TECHNIQUE",
        "Contiguous axial images from the thoracic inlet to the pubic symphysis after "
        "intravenous contrast, portal venous phase. Coronal reformats reviewed.",
        "COMPARISON",
        "Colonoscopy report of 03/10/2025; no prior imaging.",
        "FINDINGS",
        "Chest: No pulmonary nodule or mass. No mediastinal or hilar adenopathy. No pleural "
        "effusion.\nAbdomen: Post-surgical change in the sigmoid colon with an intact "
        "anastomosis. The liver is normal in size; a 7 mm hypodense lesion in segment 6 is "
        "too small to characterise.",
    ],
    [
        "FINDINGS (CONTINUED)",
        "Pelvis: No free fluid. No pelvic adenopathy. Bladder and prostate unremarkable.\n"
        "Bones: No suspicious osseous lesion.",
        "IMPRESSION",
        "1. No definite evidence of distant metastatic disease.\n2. 7 mm hypodense lesion in "
        "liver segment 6, too small to characterise; MRI liver recommended.\n3. Expected "
        "post-operative appearance of the sigmoid anastomosis.",
        "Dictated by: Demo Radiologist, MD. Date: 04/08/2025.",
    ],
    [
        "COMPREHENSIVE GENOMIC PROFILING REPORT",
        HEADER_2,
        "Specimen: Sigmoid colon resection, block A4, tumour content 50%. Test: targeted NGS "
        "panel, 324 genes, DNA and RNA.",
        "SUMMARY OF FINDINGS",
        "Microsatellite status: MSS (microsatellite stable).\nTumor mutational burden (TMB): "
        "6 mutations/Mb (low).",
        "GENOMIC ALTERATIONS",
        "KRAS G12D, variant allele frequency (VAF) 38%: pathogenic.\nAPC R1450*, VAF 41%: "
        "pathogenic.\nTP53 R175H, VAF 36%: pathogenic.",
    ],
    [
        "BIOMARKERS AND THERAPY ASSOCIATIONS",
        "KRAS G12D: resistance to anti-EGFR antibodies (cetuximab, panitumumab) is predicted.\n"
        "NRAS and BRAF: no alterations detected (BRAF V600E negative).\nHER2 (ERBB2): not "
        "amplified.",
        "VARIANTS OF UNKNOWN SIGNIFICANCE",
        "SMAD4 P130S, VAF 12% (significance unknown).",
        "METHODS",
        "Hybrid capture sequencing of 324 genes to a median depth of 720x; RNA fusion panel of "
        "50 genes. Limit of detection 5% VAF for substitutions.",
        "Report approved by: Demo Molecular Pathologist, MD, PhD. Date: 04/16/2025.",
    ],
]

# Immunohistochemistry and a PCR test on one page: a pathology report or a genomic one? The
# demo's two reviewers answer differently, and the admin adjudicates.
MMR_MSI = [
    [
        "MISMATCH REPAIR AND MICROSATELLITE INSTABILITY REPORT",
        HEADER_2,
        "Specimen: Sigmoid colon resection, block A4 (accession S25-DEMO-0412). Tumour "
        "content 50%.",
        "IMMUNOHISTOCHEMISTRY",
        "MLH1: nuclear expression retained.\nPMS2: nuclear expression retained.\nMSH2: nuclear "
        "expression retained.\nMSH6: nuclear expression retained.",
        "MICROSATELLITE INSTABILITY (PCR)",
        "Five mononucleotide markers (BAT-25, BAT-26, NR-21, NR-24, MONO-27) compared with "
        "normal colonic mucosa from the same specimen: 0 of 5 markers unstable.",
        "INTERPRETATION",
        "Mismatch repair proficient (pMMR), microsatellite stable (MSS). No evidence of Lynch "
        "syndrome-associated mismatch repair deficiency; germline testing is not indicated on "
        "these results alone.",
        "Reviewed by: Demo Pathologist, MD. Date: 04/05/2025.",
    ]
]

# A patient's portal message quoting a pathology report: a clinical note, not a report.
PORTAL_MESSAGE = """Patient Message (Demo Portal)                              Status: Closed

From: Patient (DEMO, Alex · MRN DEMO-0001)
To: Riverside Demo Hospital Oncology Pool
Sent: 03/15/2025 7:42 PM
Subject: Biopsy results?

Hello, my biopsy result was posted in the portal and I do not understand it. It says:

   "FINAL DIAGNOSIS: Left breast, 2 o'clock, core biopsy: Invasive ductal carcinoma,
    Nottingham grade 2. Ductal carcinoma in situ is also present.
    Estrogen receptor positive (90%), progesterone receptor positive (40%),
    HER2 negative (1+)."

Does this mean it has spread? What happens next?

---
Reply from: Demo Nurse Navigator, RN                         Sent: 03/16/2025 9:05 AM

Hello Alex, thank you for writing. The report shows a breast cancer that is hormone receptor
positive and HER2 negative, which is a common type with good treatment options. The biopsy
alone does not tell us whether it has spread; Dr Demo has ordered a CT scan of the chest for
staging and will go through the results with you at your visit on 03/20. Please call the
clinic if you have new pain or other symptoms before then.

Demo Nurse Navigator, RN
"""

IMAGING_ORDER = [
    [
        "IMAGING ORDER FORM",
        "Riverside Demo Hospital · Department of Radiology · Fax (555) 010-4400",
        "Patient name: DEMO, Alex    MRN: DEMO-0001    DOB: 01/01/1970",
        "Examination requested: MRI BREAST BILATERAL WITH AND WITHOUT CONTRAST",
        "Clinical indication: Newly diagnosed left breast invasive ductal carcinoma; assess "
        "extent of disease before lumpectomy.",
        "Contrast allergy: [ ] Yes  [x] No    eGFR (if contrast): ______    Pregnant: [ ] Yes  "
        "[ ] No",
        "Priority: [ ] Stat  [x] Urgent (within 7 days)  [ ] Routine",
        "Ordering clinician: Demo Oncologist, MD    Signature: ____________________    "
        "Date: 03/20/2025",
        "TO BE COMPLETED BY RADIOLOGY",
        "Protocol: ____________  Appointment date: ____________  Scheduled by: ____________",
    ]
]

LAB_RESULTS = [
    [
        "LABORATORY RESULTS",
        "Riverside Demo Hospital Laboratory · Patient: DEMO, Alex · MRN DEMO-0001 · "
        "Collected 03/18/2025 08:10",
        "COMPLETE BLOOD COUNT",
        "WBC 6.2 x10^9/L (4.0-11.0)\nHemoglobin 13.1 g/dL (12.0-15.5)\nPlatelets 248 x10^9/L "
        "(150-400)",
        "COMPREHENSIVE METABOLIC PANEL",
        "Sodium 139 mmol/L (135-145)\nPotassium 4.2 mmol/L (3.5-5.1)\nCreatinine 0.8 mg/dL "
        "(0.6-1.1)\nALT 22 U/L (7-35)\nAlkaline phosphatase 71 U/L (40-129)",
        "TUMOR MARKERS",
        "CEA 2.1 ng/mL (<3.0)\nCA 15-3 24 U/mL (<30)\nCA 27.29 31 U/mL (<38)",
        "Results verified by: Demo Laboratory Scientist. Reported 03/18/2025 14:22.",
    ]
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
        "outside_records_bundle_demo.pdf": text_pdf(BUNDLE, title="Demo bundle of outside records"),
        "mmr_msi_report_demo.pdf": text_pdf(MMR_MSI, title="Demo MMR and MSI report"),
        "portal_message_demo.txt": PORTAL_MESSAGE.encode(),
        "imaging_order_form_demo.pdf": text_pdf(IMAGING_ORDER, title="Demo imaging order form"),
        "lab_results_demo.pdf": text_pdf(LAB_RESULTS, title="Demo laboratory results"),
    }
    for name, data in files.items():
        (OUT / name).write_bytes(data)
        print(f"wrote demo/documents/{name} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
