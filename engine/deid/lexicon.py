"""Word lists the recognisers consult: first names (from a package's bundled list, loaded
once), and the words that are not names (common English, clinical vocabulary, institutions),
so that a capitalised word after "Dr" or before "MD" is taken for a name only when it can be.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

# Function words: scikit-learn's English stop words (a dependency already) and a few more.
_FUNCTION = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up very was we were what when where which while who whom why will
with would you your yours yourself yourselves per via re cc attn please thank thanks today tonight
tomorrow yesterday morning evening night noon am pm et al etc vs ok okay yes
"""
# Capitalised words that clinical paperwork puts next to names: section headings, roles,
# departments, document words, units, common verbs and adjectives.
_CLINICAL = """
patient patients pt pts name names physician physicians provider providers doctor doctors
nurse nurses navigator coordinator intake clinician clinicians surgeon surgeons pathologist
pathologists radiologist radiologists resident residents fellow fellows attending consultant
consultants technologist technician therapist pharmacist assistant anesthesiologist oncologist
cardiologist neurologist urologist director chief staff team service services unit ward floor
department dept division section office clinic clinics center centre hospital hospitals health
healthcare medical medicine memorial regional university college institute laboratory laboratories
lab labs pathology radiology oncology cardiology neurology surgery surgical imaging genomics
genomic genetics genetic practice family pool portal group associates partners network system
systems care primary urgent emergency intensive general internal outpatient inpatient community
county state national foundation trust board society association report reports note notes
summary letter message form forms fax cover sheet page pages date dates time visit visits exam
exams study studies test tests result results specimen specimens sample samples block slide
order orders request requests requisition referral consult consultation history diagnosis
diagnoses final impression findings finding indication comparison technique procedure
procedures plan assessment medications medication allergies allergy review systems physical
examination vitals vital signs labs addendum amendment comment comments recommendation
recommendations conclusion interpretation clinical gross microscopic description
immunohistochemistry
signed electronically dictated transcribed verified reviewed approved reported ordered
collected received performed read interpreted entered prepared authorized seen examined
referred witness signature consent consents subject status closed open sent reply from to
male female man woman men women boy girl sex gender age dob mrn ssn id no number account
insurance member policy claim authorization prior left right bilateral upper lower anterior
posterior breast lung lungs liver kidney colon brain chest abdomen pelvis head neck bone bones
blood heart skin node nodes lymph tissue core cores biopsy biopsies mass lesion lesions tumor
tumour cancer carcinoma adenocarcinoma lymphoma melanoma sarcoma metastasis metastatic benign
malignant negative positive normal abnormal stable new old acute chronic mild moderate severe
grade stage type types level levels high low well good poor better worse no none negative ct
mri pet ultrasound xray x-ray mammogram echo ekg ecg iv po prn bid tid qid daily weekly monthly
er pr her2 ki-67 ihc fish ngs dna rna pcr msi mss tmb vaf kras braf egfr tp53 pik3ca brca1 brca2
alk ros1 ret met ntrk pd-l1 cd cbc cmp bmp inr pt ptt bun cr hgb wbc plt na k cl
continue continued discussed discuss called paged notified informed aware made said asked
came went given gave started stopped increased decreased resting sleeping awake alert oriented
stable tolerated tolerating denies reports states noted seen plan follow follow-up return
returns returned admitted discharged transferred presented presents complains complained
medical oncology heme hematology hem onc ed er icu ccu micu sicu pacu or nicu picu ob gyn
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
saturday sunday mon tue tues wed thu thurs fri sat sun
north south east west street avenue road lane drive court boulevard suite apt room
mr mrs ms miss dr prof md m.d do d.o rn np pa pa-c phd mbbs mbchb dnp aprn cnp crna cnm pharmd
lcsw msw lpn facs facp frcp frcpc frcpath mph dds dmd od dpm rph cna bsn msn
hello hi dear sincerely regards best cheers
wife husband spouse partner daughter son mother father sister brother niece nephew aunt uncle
cousin friend neighbor neighbour caregiver guardian family sibling child children parent parents
grandson granddaughter grandmother grandfather mom dad
min max line lines aline a-line long place placed extremities respiratory resp mae le peg
hemodynamics hemodynamically comfort numbers soon pleasant visited hypertensive hypotensive
neuro lopressor propofol fio2 asa perrl perla perl sats sat vent abg abgs tlc ntg htn mag code
npo ileus labored tf tfs ngt ogt ett cvp pcwp svr map maps ivf prbc ffp lasix heparin insulin
levophed neo dopamine coumadin tylenol morphine ativan haldol fentanyl versed
foley carevue brady endo rrt nsr abd ros ng serosang abx cath cont freq pulm hct nepro zosyn
"""
# Words that make a candidate an institution rather than a person ("Oncology Pool",
# "Lakeshore Family Practice", "Maple Grove Rehabilitation").
_INSTITUTION = """
hospital hospitals clinic clinics center centre centers medical health healthcare university
college institute laboratory laboratories lab labs pathology radiology oncology cardiology
imaging genomics practice pool portal department dept division services service foundation
group associates partners network system systems memorial regional county intake office unit
ward pharmacy rehabilitation rehab nursing home hospice insurance company inc llc corp
corporation ltd school church hosp ctr house square
"""


def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


@cache
def _common() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return _words(_FUNCTION) | frozenset(ENGLISH_STOP_WORDS)


@cache
def _not_names() -> frozenset[str]:
    return _common() | _words(_CLINICAL)


@cache
def _institutions() -> frozenset[str]:
    return _words(_INSTITUTION)


def is_common_word(word: str) -> bool:
    return word.lower().strip(".,'\u2019") in _not_names()


def is_not_a_name(word: str) -> bool:
    """A word that, capitalised next to a name, is still no name (a heading, a role, a unit,
    a function word)."""
    return word.lower().strip(".,'\u2019") in _not_names()


def is_institution_word(word: str) -> bool:
    return word.lower().strip(".,'\u2019") in _institutions()


# -- first names --------------------------------------------------------------------------------

NAME_LIST_PACKAGE = "names"  # the US Census 1990 lists, as the `names` package ships them
NAME_LIST_FILES = ("dist.female.first", "dist.male.first")


@cache
def first_names() -> frozenset[str]:
    """First names from the US Census 1990 lists bundled in the ``names`` package (public
    domain data): read from the installed package, never downloaded. Lowercased. Names that
    are also common words (will, may, mark) are left out."""
    found: set[str] = set()
    package = resources.files(NAME_LIST_PACKAGE)
    for filename in NAME_LIST_FILES:
        for line in (package / filename).read_text(encoding="utf-8").splitlines():
            if line.strip():
                found.add(line.split()[0].lower())
    return frozenset(found - _not_names())


def is_first_name(word: str) -> bool:
    return word.lower() in first_names()


@cache
def surnames() -> frozenset[str]:
    """The commonest 20,000 surnames of the US Census 1990 list the ``names`` package ships
    (beyond them the list is mostly rare spellings of words). Lowercased; common and
    clinical words left out."""
    text = (resources.files(NAME_LIST_PACKAGE) / "dist.all.last").read_text(encoding="utf-8")
    found = {line.split()[0].lower() for line in text.splitlines()[:20000] if line.strip()}
    return frozenset(found - _not_names())


def is_surname(word: str) -> bool:
    return word.lower() in surnames()


# -- the dictionary -----------------------------------------------------------------------------

DICTIONARY_PACKAGE = "english_words"  # Webster's Second International (1934, public domain)
_INFLECTIONS = (
    ("ies", "y"),
    ("es", ""),
    ("s", ""),
    ("ed", ""),
    ("ed", "e"),
    ("ing", ""),
    ("ing", "e"),
    ("ly", ""),
    ("ation", "ate"),
    ("ive", "e"),
    ("ive", ""),
)


@cache
def dictionary_words() -> frozenset[str]:
    """The words Webster's Second International dictionary writes in lower case (the
    ``web2`` list the ``english-words`` package ships, read from the installed package; its
    proper nouns are capitalised there and so left out): "large", "clear", "walker"."""
    from english_words import get_english_words_set

    return frozenset(
        w for w in get_english_words_set(["web2"], lower=False, alpha=True) if w.islower()
    )


def is_dictionary_word(word: str) -> bool:
    """A common noun, verb or adjective of the dictionary, or a regular inflection of one
    ("distended", "antibiotics")."""
    lower = word.lower().strip(".,'\u2019")
    if len(lower) < 2:
        return False  # the dictionary lists the letters; an initial stays a name's
    words = dictionary_words()
    if lower in words:
        return True
    return any(
        lower.endswith(suffix)
        and len(lower) - len(suffix) >= 3
        and lower[: -len(suffix)] + stem in words
        for suffix, stem in _INFLECTIONS
    )
