"""A generator of look-alikes (issue 32): documents that are truly one type and built to be taken
for another. Every template is text written for this project; names, numbers and institutions are
invented.

Families:
* paperwork about reports, truly "other", lured towards a report type: patient leaflets and
  education walking through an example report, referrals and requisitions, appointment and
  prior-authorisation letters, test directories and price lists, consents and trial information
  about testing, audit and peer-review records, policies, bills;
* the structure of one type with the content of another: consult notes with FINDINGS and
  IMPRESSION (a note), a semen analysis or a blood panel with SPECIMEN and DIAGNOSIS lines
  (other), a pathology result written as a letter (pathology), a radiology report written as
  a letter (radiology);
* genuine reports and notes about one patient, of every type (the positives a discriminator
  learns from, and the clean side of every measure).

Templates are held out whole by the hash of their name (``held_out``): the discriminator
(engine.discriminator) learns only from the others, and the figures that count are measured on
the held-out ones. Pure: no Django.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass

from engine.schemas import DocType

SALT = "vetted-split-v1:"
TEST_ONE_IN = 5


def held_out(key: str) -> bool:
    """Whether ``key`` (a document's sha256, a template's name) is in the frozen test split.
    The salt and share never change (benchmarks.splits uses the same rule)."""
    digest = hashlib.sha256((SALT + key).encode()).hexdigest()
    return int(digest[:8], 16) % TEST_ONE_IN == 0


@dataclass(frozen=True)
class Template:
    name: str
    family: str  # paperwork | structure_swap | genuine
    true_type: DocType
    lure: DocType  # the type it is built to be taken for (its own type for a genuine one)
    write: Callable[[random.Random], str]


@dataclass(frozen=True)
class Generated:
    template: str
    family: str
    true_type: DocType
    lure: DocType
    text: str
    held_out: bool


# -- fill-ins ------------------------------------------------------------------------------------

FIRST = ["Maria", "James", "Aiko", "Daniel", "Fatima", "Oliver", "Grace", "Samuel", "Lena", "Tomas"]
LAST = ["Okafor", "Lindqvist", "Moreau", "Castillo", "Whitaker", "Nakamura", "Brennan", "Adeyemi"]
HOSPITALS = [
    "Northfield General Hospital",
    "Lakeside University Medical Center",
    "St. Brigid's Hospital",
    "Harbour View Health",
    "Westmoor Regional Medical Centre",
]
DOCTORS = ["Dr. Helen Park", "Dr. Rui Santos", "Dr. Amara Osei", "Dr. Peter Vogel", "Dr. Li Wen"]
SITES = {
    "breast": ("Left breast, core needle biopsy", "Invasive ductal carcinoma, Nottingham grade 2"),
    "colon": ("Sigmoid colon, polypectomy", "Tubular adenoma with low-grade dysplasia"),
    "prostate": ("Prostate, right base, needle biopsy", "Acinar adenocarcinoma, Gleason 3+4=7"),
    "skin": ("Skin, left forearm, shave biopsy", "Basal cell carcinoma, nodular type"),
    "thyroid": ("Thyroid, right lobe, lobectomy", "Papillary thyroid carcinoma, 1.2 cm"),
    "lung": ("Lung, right upper lobe, wedge resection", "Invasive adenocarcinoma, acinar"),
}
STUDIES = {
    "CT chest with contrast": (
        "A 6 mm solid nodule in the right upper lobe. No pleural effusion. No mediastinal "
        "lymphadenopathy.",
        "Indeterminate 6 mm right upper lobe nodule; follow-up CT in 6 months.",
    ),
    "MRI brain without and with contrast": (
        "No acute infarct. A 9 mm enhancing lesion in the left frontal lobe with mild edema.",
        "Solitary enhancing left frontal lesion, metastasis favoured.",
    ),
    "Ultrasound of the abdomen": (
        "The liver is normal in size with a 2.1 cm simple cyst. Gallbladder without stones.",
        "Simple hepatic cyst. No acute abnormality.",
    ),
    "Chest radiograph, two views": (
        "The heart is normal in size. Lungs are clear. No pneumothorax.",
        "No acute cardiopulmonary process.",
    ),
    "Mammogram, bilateral screening": (
        "Scattered fibroglandular densities. A 1 cm spiculated mass in the left upper outer "
        "quadrant.",
        "BI-RADS 4: suspicious left breast mass; biopsy recommended.",
    ),
}
VARIANTS = [
    ("BRCA2", "c.5946delT", "p.Ser1982fs"),
    ("TP53", "c.743G>A", "p.Arg248Gln"),
    ("KRAS", "c.35G>T", "p.Gly12Val"),
    ("EGFR", "c.2573T>G", "p.Leu858Arg"),
    ("PIK3CA", "c.3140A>G", "p.His1047Arg"),
    ("MLH1", "c.350C>T", "p.Thr117Met"),
]


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}"


def _date(r: random.Random) -> str:
    return f"{r.randint(1, 12):02d}/{r.randint(1, 28):02d}/20{r.randint(19, 26)}"


def _mrn(r: random.Random) -> str:
    return f"{r.choice('ABCDEFHK')}{r.randint(1000000, 9999999)}"


def _acc(r: random.Random) -> str:
    return f"S{r.randint(19, 26)}-{r.randint(1000, 99999)}"


def _site(r: random.Random) -> tuple[str, str, str]:
    key = r.choice(sorted(SITES))
    return key, *SITES[key]


def _study(r: random.Random) -> tuple[str, str, str]:
    key = r.choice(sorted(STUDIES))
    return key, *STUDIES[key]


def _variant(r: random.Random) -> tuple[str, str, str]:
    return r.choice(VARIANTS)


# -- paperwork about reports (truly other) -------------------------------------------------------


def leaflet_pathology(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""UNDERSTANDING YOUR PATHOLOGY REPORT
A guide for patients from {r.choice(HOSPITALS)}

After your biopsy, a pathologist looks at the tissue under a microscope and writes a report.
This leaflet walks you through an example so that you know what each part means.

Example report (not your result)
SPECIMEN: {specimen}
DIAGNOSIS: {diagnosis}

What does "specimen" mean? It is the piece of tissue that was taken from you.
What does "diagnosis" mean? It is what the pathologist saw. Your own report may use
different words. Please ask your doctor to explain your result at your next appointment.
Questions? Call the patient information line on 0800 {r.randint(100000, 999999)}."""


def leaflet_radiology(r: random.Random) -> str:
    study, findings, impression = _study(r)
    return f"""How to read your imaging report
Patient education series, Radiology Department

Your {study.lower()} will be read by a radiologist, who sends a written report to the doctor
who asked for it. Most reports have the same sections. Here is a made-up example:

FINDINGS: {findings}
IMPRESSION: {impression}

The findings describe what was seen; the impression is the summary. You may read words you
do not know. Do not worry: your doctor will go through your own report with you. You can
also ask for a copy through the patient portal. This sheet is for information only."""


def leaflet_genomic(r: random.Random) -> str:
    gene, cdna, protein = _variant(r)
    return f"""Your genetic test results explained

This information sheet explains what a genomic test report can look like. The example below
is invented.

Sample result section
Gene: {gene}   Variant: {cdna} ({protein})   Classification: Pathogenic

A "pathogenic" variant is a change that can cause disease. A "variant of uncertain
significance" means we do not know yet. Many people have no variant found at all. If you have
questions about your own result, your genetic counsellor will explain it and what it means for
your family. Leaflet GEN-{r.randint(10, 99)}, reviewed {_date(r)}."""


def imaging_referral(r: random.Random) -> str:
    study, _, _ = _study(r)
    return f"""REFERRAL FOR IMAGING
To: Radiology Department, {r.choice(HOSPITALS)}
From: {r.choice(DOCTORS)}, General Practice
Patient: {_name(r)}   DOB: {_date(r)}   MRN: {_mrn(r)}

Examination requested: {study}
Reason for referral: persistent cough for six weeks, ex-smoker, please exclude a mass.
Clinical question: is there a lesion that needs further work-up?
Urgency: routine
Contrast allergy: none known   Renal function: eGFR 78

Please contact the referring clinician with the result. Signed electronically {_date(r)}."""


def pathology_requisition(r: random.Random) -> str:
    _, specimen, _ = _site(r)
    return f"""SURGICAL PATHOLOGY REQUISITION
Patient name: {_name(r)}          MRN: {_mrn(r)}
Ordering physician: {r.choice(DOCTORS)}
Specimen source: {specimen}
Clinical history: mass on imaging, rule out malignancy
Tests requested: [ ] routine histology  [ ] frozen section  [ ] immunohistochemistry
Date collected: ________   Time in formalin: ________
Collected by: __________________
Please send with the specimen in a sealed biohazard bag. Incomplete forms delay reporting."""


def genetics_appointment(r: random.Random) -> str:
    gene, cdna, protein = _variant(r)
    return f"""Clinical Genetics Service
{r.choice(HOSPITALS)}

Dear {_name(r)},

Your appointment to discuss your genetic test result has been booked for {_date(r)} at
10:30 in Clinic 4. At this appointment your genetic counsellor will talk through your result,
including the {gene} variant {cdna} ({protein}) that was reported in your relative, and what
testing means for you and your family.

Please bring a list of your medicines and any questions. If you cannot attend, call us to
rearrange. You are welcome to bring a family member.

Yours sincerely,
Appointments Office, Clinical Genetics"""


def imaging_appointment(r: random.Random) -> str:
    study, _, _ = _study(r)
    return f"""APPOINTMENT CONFIRMATION
{r.choice(HOSPITALS)} Imaging Centre

Dear {_name(r)},
You are booked for: {study}
Date: {_date(r)}   Arrival time: 08:15   Location: Level 2, Imaging Reception

Before your scan: do not eat for 4 hours. Drink water as usual. Tell the staff if you may be
pregnant or have a pacemaker. Your results will be sent to the doctor who referred you, usually
within a week. Please do not phone the department for results.
To change your appointment call 01632 {r.randint(100000, 999999)}."""


def prior_authorization(r: random.Random) -> str:
    study, _, _ = _study(r)
    return f"""PRIOR AUTHORIZATION REQUEST
Health plan: Meridian Health Insurance   Member ID: MH{r.randint(10000000, 99999999)}
Patient: {_name(r)}   DOB: {_date(r)}
Requesting provider: {r.choice(DOCTORS)}   NPI: {r.randint(1000000000, 9999999999)}

Service requested: {study} (CPT {r.randint(70000, 79999)})
Diagnosis code: R91.1 (solitary pulmonary nodule)
Medical necessity: a nodule seen on a prior study requires follow-up per guidelines.
Previous treatment: none. Please approve within 14 days.
Attach: office notes, prior imaging report. Decision: [ ] approved [ ] denied [ ] pended"""


def genomic_prior_auth(r: random.Random) -> str:
    gene, _, _ = _variant(r)
    return f"""Letter of medical necessity: comprehensive genomic profiling
To the utilization review department,

I am writing to request coverage for tumour sequencing (CPT 81455) for my patient
{_name(r)}, who has metastatic disease. Identifying alterations such as {gene} changes would
guide targeted therapy according to current guidelines. Without testing, the patient may
receive less effective treatment. Enclosed are the pathology report and clinic notes.

Thank you for your prompt review.
{r.choice(DOCTORS)}, Medical Oncology"""


def test_directory(r: random.Random) -> str:
    rows = "\n".join(
        f"{code}  {name:<38} {spec:<22} {tat:<9} ${price}"
        for code, name, spec, tat, price in [
            ("HP100", "Histopathology, small biopsy", "Tissue in formalin", "3 days", 95),
            ("HP210", "Immunohistochemistry, per antibody", "Paraffin block", "2 days", 60),
            (
                "MP450",
                "Solid tumour NGS panel (50 genes)",
                "FFPE block, 20% tumour",
                "14 days",
                1850,
            ),
            ("CY020", "Cervical cytology, liquid based", "ThinPrep vial", "5 days", 40),
            ("RD300", "CT chest with contrast, report", "n/a", "24 hours", 320),
        ]
    )
    return f"""LABORATORY TEST DIRECTORY AND PRICE LIST {2020 + r.randint(0, 6)}
{r.choice(HOSPITALS)} Laboratory Medicine

Code   Test                                   Specimen               TAT       Price
{rows}

Prices are per test and exclude collection. Turnaround times are from receipt in the
laboratory. Specimen requirements must be met or the sample will be rejected. For tests not
listed, contact client services."""


def test_catalogue_entry(r: random.Random) -> str:
    gene, _, _ = _variant(r)
    return f"""Test catalogue entry: Hereditary cancer panel
Test code: GN{r.randint(100, 999)}
Genes analysed: BRCA1, BRCA2, {gene}, PALB2, CHEK2, ATM
Method: next-generation sequencing with deletion/duplication analysis
Specimen: 3 mL blood in EDTA, or saliva kit
Turnaround time: 21 calendar days
Reported: pathogenic and likely pathogenic variants; variants of uncertain significance
Price: ${r.randint(250, 1500)} (self-pay), billed to insurer otherwise
Ordering: requires a signed consent form and a completed requisition."""


def trial_information(r: random.Random) -> str:
    return f"""PARTICIPANT INFORMATION SHEET
Study: Sequencing tumours to choose treatment (protocol {r.randint(1000, 9999)})

You are being invited to take part in a research study. Before you decide, it is important
that you understand why the research is being done and what it will involve.

What is the purpose of the study? We want to find out whether sequencing the DNA of a tumour
helps doctors choose treatment. What will happen to me if I take part? We will ask to use
tissue left over from your biopsy and a blood sample. The results will be reported to your
doctor. Do I have to take part? No. You can withdraw at any time without giving a reason.
Contact: research nurse, {r.choice(HOSPITALS)}."""


def consent_genetic(r: random.Random) -> str:
    return f"""CONSENT FOR GENETIC TESTING
I, ____________________, agree to have a sample of my blood tested for inherited changes in
genes linked to cancer. I understand that:
[ ] the result may show a pathogenic variant, no variant, or a variant of uncertain significance
[ ] the result may have implications for my relatives
[ ] my sample may be stored for {r.randint(2, 10)} years
Patient signature: ____________________ Date: ________
Witness: ____________________
{r.choice(HOSPITALS)} Genetics Laboratory"""


def consent_biopsy(r: random.Random) -> str:
    _, specimen, _ = _site(r)
    return f"""Consent to procedure: image-guided biopsy
Procedure: {specimen.split(",")[0]} biopsy under ultrasound or CT guidance
Benefits: a tissue diagnosis so that the right treatment can be planned.
Risks: bleeding, infection, pain, a sample that is not diagnostic (about 1 in 20).
The tissue will be examined by a pathologist and a report sent to your consultant.
I confirm the procedure has been explained to me.
Signed (patient): ______________ Date: ______  Signed (clinician): ______________"""


def audit_report(r: random.Random) -> str:
    n = r.randint(300, 900)
    return f"""AUDIT: Turnaround times of histopathology reports, quarter {r.randint(1, 4)}
Department of Cellular Pathology, {r.choice(HOSPITALS)}

Standard: 80% of biopsy reports signed out within 7 calendar days of receipt.
Method: all {n} biopsy cases received in the quarter were reviewed from the laboratory system.
Results: {r.randint(70, 95)}% signed out within 7 days; median 5 days; 12 cases over 14 days,
mostly awaiting immunohistochemistry.
Conclusion: the standard was {r.choice(["met", "not met"])}.
Recommendations: extra consultant sessions; re-audit in six months.
Audit lead: {r.choice(DOCTORS)}"""


def radiology_discrepancy_audit(r: random.Random) -> str:
    return f"""Radiology discrepancy meeting: summary of cases
Meeting date: {_date(r)}   Chair: {r.choice(DOCTORS)}

Case 1: CT abdomen. Missed 8 mm liver lesion. Grade 2 discrepancy. Learning point: review
all phases. Case 2: chest radiograph. Subtle rib fracture not reported. Grade 1.
Case 3: MRI spine. Report correct; referred for teaching.
Themes: satisfaction of search; reporting under time pressure.
Actions: cases shared at teaching; no individual is identified in these minutes."""


def peer_review_record(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""PEER REVIEW RECORD (quality assurance, confidential)
Case number: {_acc(r)}     Review type: random 2% retrospective review
Reviewer: {r.choice(DOCTORS)}     Review date: {_date(r)}
Specimen type: {specimen}
Original diagnosis: {diagnosis}
Reviewer's opinion: agree with the original diagnosis
Category: 1 - concordant   [ ] minor discrepancy  [ ] major discrepancy
Action required: none
This record is part of the quality programme and is not part of the medical record."""


def reporting_policy(r: random.Random) -> str:
    return f"""POLICY: Communication of critical and unexpected results
Document number: QP-{r.randint(100, 999)}   Version {r.randint(1, 6)}.0   Review date: {_date(r)}

1. Purpose. To make sure that critical findings in pathology and radiology reports reach the
responsible clinician in time.
2. Scope. All reporting staff.
3. Procedure. The reporter shall telephone the requesting clinician within one hour and record
the call in the report. Examples of critical findings include a new malignancy, a pneumothorax
and a pulmonary embolism.
4. Responsibilities. Department heads shall audit compliance annually."""


def billing_statement(r: random.Random) -> str:
    return f"""STATEMENT OF ACCOUNT
{r.choice(HOSPITALS)} Patient Billing
Account: {r.randint(10000000, 99999999)}   Statement date: {_date(r)}
Patient: {_name(r)}

Date of service  Description                         Charges   Insurance   You owe
{_date(r)}       Surgical pathology, level IV (88305)  $210.00   $168.00     $42.00
{_date(r)}       Immunohistochemistry (88342)          $145.00   $116.00     $29.00
Total amount due: $71.00   Please pay by the due date. Questions about your bill? Call us."""


def cover_sheet(r: random.Random) -> str:
    return f"""FAX COVER SHEET
To: {r.choice(DOCTORS)}   Fax: 555-{r.randint(1000, 9999)}
From: Medical Records, {r.choice(HOSPITALS)}
Date: {_date(r)}   Pages (including cover): {r.randint(2, 9)}
Re: pathology and imaging reports for {_name(r)} as requested
CONFIDENTIALITY NOTICE: the documents accompanying this fax contain confidential health
information. If you received this in error, notify the sender and destroy the documents."""


def results_notification(r: random.Random) -> str:
    study, _, _ = _study(r)
    return f"""Dear {_name(r)},

We are writing to let you know that the result of your recent {study.lower()} is now
available and has been sent to your doctor. No action is needed from you at this time. Your
doctor will discuss the result with you at your next appointment, or sooner if needed.

To see your result online, log in to the patient portal. Please do not reply to this letter.
Results Office, {r.choice(HOSPITALS)}"""


# -- the structure of one type, the content of another -------------------------------------------


def consult_with_findings(r: random.Random) -> str:
    return f"""CARDIOLOGY CONSULTATION
Patient: {_name(r)}   MRN: {_mrn(r)}   Date of visit: {_date(r)}
Referring physician: {r.choice(DOCTORS)}

HISTORY: {r.randint(45, 85)}-year-old with exertional chest pain for three months, worse on
stairs, relieved by rest. Hypertension, type 2 diabetes.
FINDINGS: blood pressure 148/86, pulse 78 regular. Heart sounds normal, no murmur. Chest clear.
No ankle oedema.
IMPRESSION: stable angina, likely coronary artery disease.
PLAN: start aspirin and a statin, exercise treadmill test, review in 4 weeks.
{r.choice(DOCTORS)}, Cardiology"""


def clinic_note_with_impression(r: random.Random) -> str:
    return f"""Neurology outpatient note
Name: {_name(r)}   Seen: {_date(r)}
Subjective: headaches for 2 months, morning predominance, no visual change.
Examination findings: alert, fundi normal, cranial nerves intact, power 5/5 throughout,
reflexes symmetric, gait normal.
Impression: tension-type headache; no red flags on examination.
Plan: analgesic diary, sleep hygiene, follow-up in 8 weeks or sooner if worse.
Electronically signed by {r.choice(DOCTORS)}"""


def semen_analysis(r: random.Random) -> str:
    return f"""ANDROLOGY LABORATORY
Patient: {_name(r)}   DOB: {_date(r)}   Lab no: {_acc(r)}
SPECIMEN: semen, collected {_date(r)}, abstinence 3 days
Volume 2.8 mL   (ref >= 1.4)
Concentration {r.randint(5, 80)} million/mL   (ref >= 16)
Progressive motility {r.randint(10, 60)} %   (ref >= 30)
Normal forms {r.randint(1, 8)} %   (ref >= 4)
DIAGNOSIS: {r.choice(["normozoospermia", "oligozoospermia", "asthenozoospermia"])}
Reported by: andrology scientist"""


def blood_panel_with_diagnosis(r: random.Random) -> str:
    return f"""CLINICAL CHEMISTRY
Patient: {_name(r)}   MRN: {_mrn(r)}   Collected: {_date(r)}
SPECIMEN: serum
Sodium 139 mmol/L (135-145)
Potassium {r.choice(["4.1", "5.6", "3.2"])} mmol/L (3.5-5.1)
Creatinine {r.randint(60, 180)} umol/L (59-104)
ALT {r.randint(10, 120)} U/L (0-45)
HbA1c {r.randint(38, 80)} mmol/mol (20-42)
DIAGNOSIS (clinical): type 2 diabetes, monitoring
Authorised by: duty biochemist"""


def pathology_letter(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""Department of Histopathology
{r.choice(HOSPITALS)}

Dear {r.choice(DOCTORS)},

Re: {_name(r)}, DOB {_date(r)}, our reference {_acc(r)}

Thank you for sending the {specimen.lower()} received on {_date(r)}. Sections show
{diagnosis.lower()}. The margins are clear by 3 mm. Lymphovascular invasion is not seen.
In summary: {diagnosis}.

Yours sincerely,
{r.choice(DOCTORS)}, Consultant Histopathologist"""


def radiology_letter(r: random.Random) -> str:
    study, findings, impression = _study(r)
    return f"""Dear {r.choice(DOCTORS)},

Re: {_name(r)}, MRN {_mrn(r)}
{study}, performed {_date(r)}

Thank you for referring this patient. {findings} In conclusion: {impression}
I have not compared with previous imaging, none being available.

Kind regards,
{r.choice(DOCTORS)}, Consultant Radiologist, {r.choice(HOSPITALS)}"""


def physio_assessment(r: random.Random) -> str:
    return f"""PHYSIOTHERAPY INITIAL ASSESSMENT
Patient: {_name(r)}   Date: {_date(r)}   Referred by: {r.choice(DOCTORS)}
Presenting complaint: right knee pain after a fall six weeks ago.
FINDINGS: swelling mild; range of motion 0-110 degrees; quadriceps lag 10 degrees; ligaments
stable on testing; tender over the medial joint line.
IMPRESSION: patellofemoral pain with quadriceps weakness.
PLAN: strengthening programme, review in two weeks. Physiotherapist: J. Reyes"""


def emergency_note(r: random.Random) -> str:
    return f"""EMERGENCY DEPARTMENT NOTE
Patient: {_name(r)}   Arrival: {_date(r)} 22:40
History: fell from a ladder, left wrist pain, no head injury.
Findings: swelling and tenderness of the distal radius, neurovascularly intact.
Wrist radiograph reviewed: see radiology report.
Impression: suspected distal radius fracture.
Disposition: backslab, fracture clinic tomorrow. Seen by {r.choice(DOCTORS)}"""


def urinalysis_with_diagnosis(r: random.Random) -> str:
    return f"""URINALYSIS
Patient: {_name(r)}   Collected: {_date(r)}   Lab no: {_acc(r)}
SPECIMEN: midstream urine
Appearance: cloudy   pH {r.choice(["5.5", "6.0", "7.0"])}   Specific gravity 1.020
Leukocytes 3+ (negative)   Nitrite positive (negative)   Blood 1+ (negative)
Microscopy: white cells >100 /uL (0-10); bacteria many
DIAGNOSIS: findings consistent with urinary tract infection; culture to follow
Validated by: laboratory scientist"""


def pathology_email(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""From: {r.choice(DOCTORS)}, Histopathology
To: {r.choice(DOCTORS)}
Subject: biopsy result, {_name(r)}, {_acc(r)}

Hi,
The {specimen.lower()} on your patient (MRN {_mrn(r)}), received {_date(r)}, shows
{diagnosis.lower()}. Immunostains support this. I have signed the report out today and it is on
the system. Happy to discuss at the MDT.
Best wishes"""


def genomic_result_letter(r: random.Random) -> str:
    gene, cdna, protein = _variant(r)
    return f"""Molecular Diagnostics Laboratory, {r.choice(HOSPITALS)}

Dear {r.choice(DOCTORS)},
Re: {_name(r)}, DOB {_date(r)}, laboratory number {_acc(r)}

Sequencing of the tumour sample received on {_date(r)} (next-generation sequencing panel of
52 genes) detected {gene} {cdna} ({protein}) at a variant allele frequency of
{r.randint(8, 45)}%. No other pathogenic variants were found. This variant predicts sensitivity
to targeted therapy.
Yours sincerely, {r.choice(DOCTORS)}, Clinical Scientist"""


def dermatology_note(r: random.Random) -> str:
    return f"""Dermatology clinic
Patient: {_name(r)}   Clinic date: {_date(r)}
Reason for visit: changing mole on the back.
FINDINGS: 7 mm asymmetric pigmented lesion, two colours, irregular border; dermoscopy shows an
atypical network. No palpable nodes.
IMPRESSION: atypical naevus, melanoma not excluded.
PLAN: excision biopsy with 2 mm margins; results by letter. {r.choice(DOCTORS)}"""


def coagulation_screen(r: random.Random) -> str:
    return f"""HAEMATOLOGY: COAGULATION SCREEN
Patient: {_name(r)}   Collected: {_date(r)}   Specimen no: {_acc(r)}
SPECIMEN: citrated plasma
Prothrombin time {r.randint(11, 30)} s (10-13)
INR {r.choice(["1.0", "2.4", "3.8"])} (0.8-1.2)
APTT {r.randint(25, 45)} s (25-35)
Fibrinogen 3.1 g/L (1.5-4.0)
DIAGNOSIS / COMMENT: consistent with warfarin therapy
Authorised: haematology registrar"""


def cytology_letter(r: random.Random) -> str:
    return f"""Cytology Department, {r.choice(HOSPITALS)}

Dear {r.choice(DOCTORS)},
Re: {_name(r)}, case C{r.randint(19, 26)}-{r.randint(100, 9999)}

The pleural fluid received on {_date(r)} contains malignant cells. Cell block
immunohistochemistry is positive for TTF-1 and napsin A, consistent with metastatic lung
adenocarcinoma. Material has been kept for molecular testing.
Yours sincerely, {r.choice(DOCTORS)}, Consultant Cytopathologist"""


def imaging_result_email(r: random.Random) -> str:
    study, findings, impression = _study(r)
    return f"""From: {r.choice(DOCTORS)}, Radiology
To: {r.choice(DOCTORS)}
Subject: {study} for {_name(r)} ({_mrn(r)}), done {_date(r)}

I reported this one this morning. {findings}
Bottom line: {impression}
Formal report is on PACS."""


# -- genuine reports and notes about one patient -------------------------------------------------


def pathology_report(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""SURGICAL PATHOLOGY REPORT
{r.choice(HOSPITALS)}
Patient: {_name(r)}   MRN: {_mrn(r)}   Accession: {_acc(r)}
Collected: {_date(r)}   Received: {_date(r)}

SPECIMEN: {specimen}
GROSS DESCRIPTION: received in formalin, three cores 0.8 to 1.5 cm, entirely submitted.
MICROSCOPIC DESCRIPTION: the cores show an infiltrating neoplasm arranged in nests and cords.
FINAL DIAGNOSIS: {diagnosis}.
Electronically signed out by {r.choice(DOCTORS)}, pathologist, {_date(r)}"""


BETHESDA = [
    "benign follicular nodule (Bethesda II)",
    "suspicious for papillary carcinoma (Bethesda V)",
]


def cytology_report(r: random.Random) -> str:
    return f"""CYTOPATHOLOGY REPORT
Patient name: {_name(r)}  Case: C{r.randint(19, 26)}-{r.randint(100, 9999)}  Date: {_date(r)}
Source: thyroid, right nodule, fine needle aspiration
Adequacy: satisfactory for evaluation
Interpretation: {r.choice(BETHESDA)}
Comment: correlation with ultrasound features is recommended.
Cytopathologist: {r.choice(DOCTORS)}"""


def radiology_report(r: random.Random) -> str:
    study, findings, impression = _study(r)
    return f"""{study.upper()}
Patient: {_name(r)}   MRN: {_mrn(r)}   Exam date: {_date(r)}
CLINICAL INDICATION: follow-up.
TECHNIQUE: standard protocol.
COMPARISON: none.
FINDINGS: {findings}
IMPRESSION: {impression}
Dictated and signed by {r.choice(DOCTORS)}, radiologist"""


def radiology_brief(r: random.Random) -> str:
    study, findings, impression = _study(r)
    return f"""EXAM: {study}
HISTORY: pain.
{findings}
CONCLUSION: {impression}
Reported by {r.choice(DOCTORS)} on {_date(r)}"""


def genomic_report(r: random.Random) -> str:
    gene, cdna, protein = _variant(r)
    return f"""TUMOR GENOMIC PROFILING REPORT
Patient: {_name(r)}   DOB: {_date(r)}   Specimen ID: {_acc(r)}
Specimen: FFPE block, tumour content 40%
Assay: hybrid-capture next-generation sequencing, 324 genes

GENOMIC FINDINGS
Gene     Alteration              Variant allele frequency   Tier
{gene:<8} {cdna} ({protein})    {r.randint(5, 60)}%                        I
TMB: {r.randint(1, 30)} mutations/Mb   MSI: stable

INTERPRETATION: the {gene} alteration is a known driver; see therapy section.
Laboratory director: {r.choice(DOCTORS)}   Report date: {_date(r)}"""


def germline_report(r: random.Random) -> str:
    gene, cdna, protein = _variant(r)
    return f"""Hereditary Cancer Genetic Test Result
Patient: {_name(r)}   Sample: blood, received {_date(r)}
Method: NGS and MLPA of 30 genes
RESULT: POSITIVE. One pathogenic variant detected.
Gene {gene}  Variant {cdna} {protein}  Zygosity heterozygous  Classification pathogenic
Interpretation: this result confirms a diagnosis of hereditary cancer predisposition.
Reviewed and signed: {r.choice(DOCTORS)}, clinical scientist"""


def progress_note(r: random.Random) -> str:
    return f"""PROGRESS NOTE
Patient: {_name(r)}   Date of service: {_date(r)}
CHIEF COMPLAINT: follow-up of hypertension.
HISTORY OF PRESENT ILLNESS: feels well, no chest pain, adherent to amlodipine.
PHYSICAL EXAMINATION: BP 132/80, HR 70. Lungs clear. No oedema.
ASSESSMENT AND PLAN: hypertension controlled; continue amlodipine 5 mg daily; labs in 6 months.
{r.choice(DOCTORS)}"""


def discharge_summary(r: random.Random) -> str:
    return f"""DISCHARGE SUMMARY
Patient: {_name(r)}   Admitted: {_date(r)}   Discharged: {_date(r)}
Admission diagnosis: community-acquired pneumonia.
Hospital course: treated with intravenous antibiotics, improved, oxygen weaned by day 3.
Discharge medications: amoxicillin for 5 more days.
Follow-up: GP in one week; chest radiograph in 6 weeks.
Attending: {r.choice(DOCTORS)}"""


def operative_note(r: random.Random) -> str:
    return f"""OPERATIVE REPORT
Patient: {_name(r)}   Date of operation: {_date(r)}
PREOPERATIVE DIAGNOSIS: acute appendicitis. POSTOPERATIVE DIAGNOSIS: same.
PROCEDURE: laparoscopic appendectomy. ANESTHESIA: general.
DESCRIPTION: three ports placed; inflamed appendix divided with a stapler; haemostasis secured.
ESTIMATED BLOOD LOSS: minimal. The patient tolerated the procedure well.
Surgeon: {r.choice(DOCTORS)}"""


def pathology_with_checklist(r: random.Random) -> str:
    _, specimen, diagnosis = _site(r)
    return f"""Pathology report
Date of tumor procurement {_date(r)}   Date of report {_date(r)}
Site: {specimen}
Histologic diagnosis
{diagnosis}
Tumor size
{r.randint(1, 6)}.{r.randint(0, 9)} cm
Lymph node status
{r.randint(0, 3)} of {r.randint(8, 20)} lymph nodes with metastatic carcinoma
Criteria  Yes  No
Diagnosis Discrepancy
Primary Tumor Site Discrepancy
HIPAA Discrepancy
Prior Malignancy History
Case is (circle): QUALIFIED / DISQUALIFIED   Reviewer initials ____   Date reviewed ____"""


def doppler_report(r: random.Random) -> str:
    return f"""CAROTID DUPLEX ULTRASOUND
Exam date: {_date(r)}
Right ICA peak systolic velocity {r.randint(60, 250)} cm/s (normal < 125)
Left ICA peak systolic velocity {r.randint(60, 250)} cm/s (normal < 125)
ICA/CCA ratio {r.choice(["1.2", "2.8", "4.3"])} (< 2.0)
Plaque: heterogeneous plaque at the right bulb.
IMPRESSION: {r.choice(["50-69% right ICA stenosis", "less than 50% stenosis bilaterally"])}.
Interpreting physician: {r.choice(DOCTORS)}"""


# -- general health information (truly other): what a condition is, for anyone who has it -------
# A page of a health website or a leaflet about a condition, a test, a gene or a medicine: it
# speaks of people in general and asks its own questions; a note speaks of one patient.

CONDITIONS = [
    (
        "Type 2 diabetes",
        "a long-term condition in which the body does not use insulin well, so sugar builds up "
        "in the blood",
        ["feeling very thirsty", "passing urine often", "tiredness", "blurred vision"],
        ["an HbA1c blood test", "a fasting blood glucose test"],
        ["healthy eating and activity", "metformin", "other tablets or insulin"],
    ),
    (
        "Asthma",
        "a condition of the airways, which become swollen and narrow and make breathing hard",
        ["wheezing", "a tight chest", "coughing at night", "shortness of breath"],
        ["spirometry", "a peak flow diary", "an allergy test"],
        ["a reliever inhaler", "a preventer inhaler", "avoiding triggers"],
    ),
    (
        "Chronic kidney disease",
        "a gradual loss of the kidneys' ability to filter waste from the blood",
        ["swollen ankles", "tiredness", "itchy skin", "often no symptoms early on"],
        ["a blood test for eGFR", "a urine test for protein", "a kidney ultrasound"],
        ["blood pressure control", "medicines that protect the kidneys", "dialysis later on"],
    ),
    (
        "Hypothyroidism",
        "a condition in which the thyroid gland does not make enough thyroid hormone",
        ["tiredness", "weight gain", "feeling cold", "dry skin", "low mood"],
        ["a TSH blood test", "a free T4 blood test"],
        ["levothyroxine taken every day", "regular blood tests to adjust the dose"],
    ),
    (
        "Lymphoma",
        "a cancer that starts in the lymphocytes, white blood cells of the immune system",
        ["painless swollen glands", "night sweats", "fever", "weight loss"],
        ["a lymph node biopsy", "a CT or PET-CT scan", "a bone marrow biopsy"],
        ["chemotherapy", "immunotherapy", "radiotherapy", "watchful waiting"],
    ),
    (
        "Atrial fibrillation",
        "an irregular and often fast heartbeat that starts in the upper chambers of the heart",
        ["palpitations", "dizziness", "breathlessness", "tiredness"],
        ["an electrocardiogram (ECG)", "a 24-hour heart monitor", "an echocardiogram"],
        ["medicines to control the rate", "anticoagulants to prevent stroke", "cardioversion"],
    ),
    (
        "Colorectal cancer",
        "a cancer of the colon or rectum, which often starts as a growth called a polyp",
        ["blood in the stool", "a change in bowel habit", "abdominal pain", "anaemia"],
        ["a colonoscopy with biopsy", "a CT scan", "a stool test"],
        ["surgery", "chemotherapy", "radiotherapy", "targeted therapy"],
    ),
    (
        "Osteoporosis",
        "a condition in which bones become thin and weak and break more easily",
        ["often no symptoms until a bone breaks", "loss of height", "back pain"],
        ["a DEXA bone density scan", "blood tests for calcium and vitamin D"],
        ["calcium and vitamin D", "bisphosphonates", "exercise and fall prevention"],
    ),
]
GENES = [
    ("BRCA1", "breast and ovarian cancer", "autosomal dominant"),
    ("CFTR", "cystic fibrosis", "autosomal recessive"),
    ("HBB", "sickle cell disease", "autosomal recessive"),
    ("MLH1", "Lynch syndrome", "autosomal dominant"),
    ("FBN1", "Marfan syndrome", "autosomal dominant"),
    ("DMD", "Duchenne muscular dystrophy", "X-linked recessive"),
]
TESTS = [
    ("an MRI scan", "strong magnets and radio waves", "30 to 60 minutes", "a radiologist"),
    ("a CT scan", "X-rays taken from many angles", "10 to 20 minutes", "a radiologist"),
    ("a biopsy", "a small sample of tissue", "15 to 30 minutes", "a pathologist"),
    ("an ultrasound scan", "sound waves", "20 to 30 minutes", "a sonographer or radiologist"),
    ("a colonoscopy", "a thin flexible tube with a camera", "30 to 45 minutes", "an endoscopist"),
]
MEDICINES = [
    ("Metformin", "type 2 diabetes", "feeling sick, diarrhoea, a metallic taste"),
    ("Warfarin", "preventing blood clots", "bleeding, bruising"),
    ("Levothyroxine", "an underactive thyroid", "palpitations if the dose is too high"),
    ("Atorvastatin", "high cholesterol", "muscle aches, headache"),
    ("Salbutamol inhaler", "asthma", "shaky hands, a fast heartbeat"),
]


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def _condition(r: random.Random) -> tuple[str, str, list[str], list[str], list[str]]:
    return r.choice(CONDITIONS)


def _listed(r: random.Random, items: list[str], bullet: str) -> str:
    chosen = r.sample(items, k=min(len(items), r.randint(2, len(items))))
    return "\n".join(f"{bullet}{item}" for item in chosen)


def condition_overview(r: random.Random) -> str:
    name, what, symptoms, tests, treatments = _condition(r)
    bullet = r.choice(["- ", "* ", "• ", ""])
    return f"""{name}

What is {name.lower()}?
{name} is {what}. It affects people of all ages, and about {r.randint(2, 15)} percent of adults
in the United States have it. Many people do not know they have it.

What are the symptoms of {name.lower()}?
Symptoms may include:
{_listed(r, symptoms, bullet)}
Some people have no symptoms at all.

How is {name.lower()} diagnosed?
A doctor will ask about symptoms and may do a physical exam. Tests can include
{" or ".join(tests)}.

How is {name.lower()} treated?
Treatment depends on how severe it is. Options include {", ".join(treatments)}.

Who is at risk?
Risk factors include older age, a family history of the condition and smoking.
Source: National health information service. Reviewed {_date(r)}."""


def condition_faq(r: random.Random) -> str:
    name, what, symptoms, tests, treatments = _condition(r)
    return f"""FREQUENTLY ASKED QUESTIONS: {name.upper()}

Q: What causes {name.lower()}?
A: {name} is {what}. Doctors do not always know why it starts; genes and lifestyle can both
play a part.

Q: Can {name.lower()} be cured?
A: It can often be controlled. People who take their treatment and see their doctor regularly
usually lead a full life.

Q: What tests will I need?
A: Most people have {tests[0]}. Your doctor may also suggest {tests[-1]}.

Q: What are the treatment options?
A: {_upper_first("; ".join(treatments))}. Your care team will talk through what suits you.

Q: When should I call a doctor?
A: Call your doctor if you notice {symptoms[0]} or {symptoms[-1]}, or if they get worse.
This page is for general information and does not replace advice from your doctor."""


def disease_fact_sheet(r: random.Random) -> str:
    name, what, symptoms, tests, treatments = _condition(r)
    return f"""FACT SHEET
{name}
Key facts
- {name} is {what}.
- It is more common in older adults and in people with a family history of it.
- Common signs and symptoms include {", ".join(symptoms[:3])}.
- It is usually found with {tests[0]}.
- Treatments include {", ".join(treatments)}.
Overview
Worldwide, millions of people live with {name.lower()}. Early diagnosis and treatment can
prevent complications. Health workers can support people to manage the condition at home.
Prevention
Not smoking, staying active and keeping a healthy weight lower the risk for most people.
Fact sheet updated {r.choice(["March", "June", "October"])} 20{r.randint(19, 26)}."""


def living_with_condition(r: random.Random) -> str:
    name, _, symptoms, _, treatments = _condition(r)
    return f"""Living well with {name.lower()}

Many people with {name.lower()} find that small changes make a big difference. Here are some
tips from people who have the condition and from the nurses who care for them.

Take your treatment as prescribed. {_upper_first(treatments[0])} works best when it is used
every day, even when you feel well.
Keep a diary of your symptoms, such as {symptoms[0]}, and bring it to your appointments.
Stay active. Even a short walk each day can help.
Ask for help. Support groups meet in most areas, and family members can come along too.

If your symptoms suddenly get worse, contact your doctor or nurse straight away.
Patient support charity, helpline 0300 {r.randint(100, 999)} {r.randint(1000, 9999)}."""


def treatment_summary(r: random.Random) -> str:
    name, what, _, tests, treatments = _condition(r)
    stage = r.choice(["early", "advanced", "recurrent"])
    return f"""Treatment of {stage} {name.lower()} (summary for patients)

General information
{name} is {what}. The treatment that is best for a patient depends on the stage of the
disease, the patient's age and general health, and whether it has come back.

Tests used to plan treatment
The following tests and procedures may be used: {"; ".join(tests)}.

Treatment option overview
There are different types of treatment for patients with {stage} {name.lower()}. Some are
standard and some are being tested in clinical trials. Standard treatment may include:
{_listed(r, treatments, "1. ")}

Patients may want to think about taking part in a clinical trial. Ask your doctor whether a
trial is right for you. This summary is reviewed regularly by a board of cancer experts."""


def aftercare_instructions(r: random.Random) -> str:
    test, _, _, _ = r.choice(TESTS)
    return f"""AFTER YOUR PROCEDURE: WHAT TO EXPECT AT HOME
You have had {test}. Read these instructions before you leave.

For the first 24 hours
- Rest and do not drive or drink alcohol if you had sedation.
- You may eat and drink as normal unless you were told otherwise.
- Some soreness or bruising is normal and usually settles within a few days.

Call us if you have
- a temperature over 38 C
- bleeding that does not stop with gentle pressure
- pain that is getting worse

Your results will be sent to the doctor who asked for the test, usually within
{r.randint(3, 14)} days. They will contact you to discuss them.
Day unit telephone: 01{r.randint(100, 999)} {r.randint(100000, 999999)}"""


def test_explainer(r: random.Random) -> str:
    test, how, length, reader = r.choice(TESTS)
    return f"""What is {test}?
{_upper_first(test)} uses {how} to look inside the body. Doctors use it to find the cause of
symptoms and to check how well a treatment is working.

How do I prepare?
Most people can eat and drink as usual. Tell the staff if you are pregnant, have a pacemaker
or have had a reaction to contrast dye before.

What happens during the test?
The test takes about {length}. You will be asked to keep still. It is not painful, although
some people find it noisy or uncomfortable.

Who reads the results?
{_upper_first(reader)} looks at the images or the sample and writes a report for your doctor.
It can take one to two weeks for the report to reach your doctor.
Information for patients, imaging and diagnostics services."""


def gene_condition_summary(r: random.Random) -> str:
    gene, condition, inheritance = r.choice(GENES)
    return f"""{gene} gene

Normal function
The {gene} gene provides instructions for making a protein that helps cells work normally.

Health conditions related to genetic changes
More than {r.randint(2, 20) * 100} mutations in the {gene} gene have been found in people with
{condition}. Most of these changes alter or delete a small part of the protein, which can no
longer do its job. Some people who inherit a mutation never develop the condition.

How is it inherited?
{_upper_first(condition)} is inherited in an {inheritance} pattern. A genetic counsellor can
explain what this means for a family.

How common is it?
{_upper_first(condition)} affects about 1 in {r.choice([500, 2500, 3500, 5000, 10000])} people.
Other names for this gene are listed in the gene databases. Reviewed {_date(r)}."""


def medication_guide(r: random.Random) -> str:
    medicine, use, effects = r.choice(MEDICINES)
    return f"""MEDICATION GUIDE: {medicine.upper()}

What is {medicine.lower()} used for?
{medicine} is used to treat {use}. It is available on prescription only.

How should I take it?
Take it exactly as your doctor or pharmacist tells you. Do not stop taking it without talking
to your doctor first.

What are the possible side effects?
Like all medicines, it can cause side effects, although not everybody gets them. Common side
effects include {effects}. Tell your doctor if any side effect bothers you or does not go away.

Who should not take it?
People who are allergic to it, and some people with liver or kidney problems, should not take
it. Keep this guide: you may need to read it again."""


P, R, G, N, OT = (
    DocType.PATHOLOGY,
    DocType.RADIOLOGY,
    DocType.GENOMIC,
    DocType.CLINICAL_NOTE,
    DocType.OTHER,
)
TEMPLATES: tuple[Template, ...] = (
    Template("leaflet_pathology", "paperwork", OT, P, leaflet_pathology),
    Template("leaflet_radiology", "paperwork", OT, R, leaflet_radiology),
    Template("leaflet_genomic", "paperwork", OT, G, leaflet_genomic),
    Template("imaging_referral", "paperwork", OT, R, imaging_referral),
    Template("pathology_requisition", "paperwork", OT, P, pathology_requisition),
    Template("genetics_appointment", "paperwork", OT, G, genetics_appointment),
    Template("imaging_appointment", "paperwork", OT, R, imaging_appointment),
    Template("prior_authorization", "paperwork", OT, R, prior_authorization),
    Template("genomic_prior_auth", "paperwork", OT, G, genomic_prior_auth),
    Template("test_directory", "paperwork", OT, P, test_directory),
    Template("test_catalogue_entry", "paperwork", OT, G, test_catalogue_entry),
    Template("trial_information", "paperwork", OT, G, trial_information),
    Template("consent_genetic", "paperwork", OT, G, consent_genetic),
    Template("consent_biopsy", "paperwork", OT, P, consent_biopsy),
    Template("audit_report", "paperwork", OT, P, audit_report),
    Template("radiology_discrepancy_audit", "paperwork", OT, R, radiology_discrepancy_audit),
    Template("peer_review_record", "paperwork", OT, P, peer_review_record),
    Template("reporting_policy", "paperwork", OT, R, reporting_policy),
    Template("billing_statement", "paperwork", OT, P, billing_statement),
    Template("cover_sheet", "paperwork", OT, P, cover_sheet),
    Template("results_notification", "paperwork", OT, R, results_notification),
    Template("consult_with_findings", "structure_swap", N, R, consult_with_findings),
    Template("clinic_note_with_impression", "structure_swap", N, R, clinic_note_with_impression),
    Template("semen_analysis", "structure_swap", OT, P, semen_analysis),
    Template("blood_panel_with_diagnosis", "structure_swap", OT, P, blood_panel_with_diagnosis),
    Template("pathology_letter", "structure_swap", P, N, pathology_letter),
    Template("radiology_letter", "structure_swap", R, N, radiology_letter),
    Template("physio_assessment", "structure_swap", N, R, physio_assessment),
    Template("emergency_note", "structure_swap", N, R, emergency_note),
    Template("urinalysis_with_diagnosis", "structure_swap", OT, P, urinalysis_with_diagnosis),
    Template("pathology_email", "structure_swap", P, N, pathology_email),
    Template("genomic_result_letter", "structure_swap", G, N, genomic_result_letter),
    Template("dermatology_note", "structure_swap", N, R, dermatology_note),
    Template("coagulation_screen", "structure_swap", OT, P, coagulation_screen),
    Template("cytology_letter", "structure_swap", P, N, cytology_letter),
    Template("imaging_result_email", "structure_swap", R, N, imaging_result_email),
    Template("pathology_report", "genuine", P, P, pathology_report),
    Template("cytology_report", "genuine", P, P, cytology_report),
    Template("radiology_report", "genuine", R, R, radiology_report),
    Template("radiology_brief", "genuine", R, R, radiology_brief),
    Template("genomic_report", "genuine", G, G, genomic_report),
    Template("germline_report", "genuine", G, G, germline_report),
    Template("progress_note", "genuine", N, N, progress_note),
    Template("discharge_summary", "genuine", N, N, discharge_summary),
    Template("operative_note", "genuine", N, N, operative_note),
    Template("pathology_with_checklist", "genuine", P, P, pathology_with_checklist),
    Template("doppler_report", "genuine", R, R, doppler_report),
    Template("condition_overview", "paperwork", OT, N, condition_overview),
    Template("condition_faq", "paperwork", OT, N, condition_faq),
    Template("disease_fact_sheet", "paperwork", OT, N, disease_fact_sheet),
    Template("living_with_condition", "paperwork", OT, N, living_with_condition),
    Template("treatment_summary", "paperwork", OT, N, treatment_summary),
    Template("aftercare_instructions", "paperwork", OT, N, aftercare_instructions),
    Template("test_explainer", "paperwork", OT, R, test_explainer),
    Template("gene_condition_summary", "paperwork", OT, G, gene_condition_summary),
    Template("medication_guide", "paperwork", OT, N, medication_guide),
)


def generate(
    per_template: int,
    *,
    seed: int = 0,
    split: str = "all",
    templates: tuple[Template, ...] = TEMPLATES,
) -> list[Generated]:
    """``per_template`` documents of each template (``split``: "train" for the templates not
    held out, "test" for the held-out ones, "all")."""
    found = []
    for template in templates:
        out = held_out(template.name)
        if (split == "train" and out) or (split == "test" and not out):
            continue
        rng = random.Random(f"{seed}:{template.name}")
        for _ in range(per_template):
            found.append(
                Generated(
                    template=template.name,
                    family=template.family,
                    true_type=template.true_type,
                    lure=template.lure,
                    text=template.write(rng),
                    held_out=out,
                )
            )
    return found
