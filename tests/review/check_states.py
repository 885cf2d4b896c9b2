"""Four documents, one in each state of a check, with sentinel answers and people, for the
tests that prove blind checks stay blind (test_visibility_walk, test_visibility_rules).

Every answer is a segmentation whose segments ([first, last, type]) appear in no other
answer, so an answer shown where it should not be is found by its page ranges and type
names, in words or in JSON. Every person has a name found nowhere else. Which viewer may see
which answer follows the table in docs/review.md ("Who sees what"), written out here
independently of review/visibility.py."""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from engine.schemas import DISPLAY_NAMES, DocType
from reliability.models import Run
from review.corrections import corrected_output, correction_build
from review.models import AuditSample, GroundTruth, ReviewPacket, SecondReview
from review.roles import ADMINS, REVIEWERS
from review.services import audits, decisions, ground_truth, second_review
from tests.conftest import ready_document
from tests.review.conftest import escalate

Seg = list[tuple[int, int, DocType]]
P, R, G, C, OTHER = (
    DocType.PATHOLOGY,
    DocType.RADIOLOGY,
    DocType.GENOMIC,
    DocType.CLINICAL_NOTE,
    DocType.OTHER,
)
# (state, what): the answers. Each segment is unique across all of them.
ANSWERS: dict[str, Seg] = {
    "audit_open/machine": [(1, 2, P), (3, 4, OTHER)],
    "audit_disputed/machine": [(1, 2, R), (3, 5, C)],
    "audit_disputed/auditor": [(1, 3, G), (4, 5, P)],
    "second_open/machine": [(1, 4, P), (5, 6, OTHER)],
    "second_open/first": [(1, 3, R), (4, 6, G)],
    "adjudication/machine": [(1, 5, OTHER), (6, 7, P)],
    "adjudication/first": [(1, 2, G), (3, 7, R)],
    "adjudication/second": [(1, 4, C), (5, 7, G)],
}
PAGES = {"audit_open": 4, "audit_disputed": 5, "second_open": 6, "adjudication": 7}
NOTES = {
    "audit_disputed/auditor": "Quokka-audit-note",
    "second_open/first": "Wombat-first-note",
    "adjudication/first": "Numbat-first-note",
    "adjudication/second": "Bilby-second-note",
}
# The people, by role. Names are the sentinels of "who decided".
PEOPLE = {
    "first_decider": "zebediah",  # decided the packet under second review
    "first_decider_adjudication": "xenophon",  # decided the packet under adjudication
    "second_reviewer": "ottoline",  # answered second in adjudication; may answer the others
    "auditor": "peregrine",  # audited and disagreed
    "unrelated": "ulrich",  # a reviewer with no part in any check; uploaded the documents
    "admin": "adelheid",  # Admins: see everything
}
WHO_ANSWERED = {
    "audit_disputed/auditor": "peregrine",
    "second_open/first": "zebediah",
    "adjudication/first": "xenophon",
    "adjudication/second": "ottoline",
}


def hidden_from(username: str) -> set[str]:
    """The answers (keys of ANSWERS) ``username`` may not see, from the documented table."""
    if username == PEOPLE["admin"]:
        return set()
    hidden = {"audit_open/machine"}  # a blind audit: hidden from everyone
    if username != "peregrine":  # the auditor sees the machine's answer and their own
        hidden |= {"audit_disputed/machine", "audit_disputed/auditor"}
    if username != "zebediah":  # a decision under second review: its decider only
        hidden.add("second_open/first")
    if username == "xenophon":  # the first decider: their own answer only
        hidden.add("adjudication/second")
    elif username != "ottoline":  # the second reviewer answered: both
        hidden |= {"adjudication/first", "adjudication/second"}
    return hidden


def hidden_names(username: str) -> set[str]:
    names = {WHO_ANSWERED[a] for a in hidden_from(username) if a in WHO_ANSWERED}
    return names - {username}


def _words(segments: Seg) -> list[re.Pattern[str]]:
    """Ways a segment shows in a page or a payload: its range near its type's name (words:
    "pages 1-3 Genomic Report" (an en dash or a hyphen), "Pages 1-3: Genomic Report"), its
    JSON triple [1, 3, "genomic"], or a segment object of the classification JSON."""
    found = []
    for a, b, t in segments:
        name = re.escape(DISPLAY_NAMES[t])
        found.append(re.compile(rf"\b{a}\s*[-\u2013]\s*{b}\b[^<>\[\]{{}}]{{0,14}}?{name}", re.I))
        found.append(re.compile(rf"\[{a},{b},\"{t.value}\"\]"))
        found.append(
            re.compile(
                rf"\"start_page\":{a},\"end_page\":{b},[^{{}}]*?\"dominant_type\":\"{t.value}\""
            )
        )
    return found


def normalised(text: str) -> tuple[str, str]:
    """The text as read (entities decoded) and the same without white space (for JSON)."""
    read = html.unescape(text)
    return read, re.sub(r"\s+", "", read)


@dataclass
class Leak:
    what: str
    where: str


@dataclass
class States:
    users: dict[str, Any]
    documents: dict[str, Any]
    runs: dict[str, Run]
    packets: dict[str, ReviewPacket]
    samples: dict[str, AuditSample]
    seconds: dict[str, SecondReview]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def heard(self, kind: str, data: dict[str, Any]) -> None:
        self.events.append((kind, json.loads(json.dumps(data, default=str))))

    def leaks(self, username: str, text: str, where: str) -> list[Leak]:
        read, tight = normalised(text)
        found = []
        for answer in hidden_from(username):
            for pattern in _words(ANSWERS[answer]):
                if pattern.search(read) or pattern.search(tight):
                    found.append(Leak(f"{answer} ({pattern.pattern})", where))
                    break
            note = NOTES.get(answer)
            if note and note.lower() in read.lower():
                found.append(Leak(f"{answer} note", where))
        for name in hidden_names(username):
            if re.search(rf"\b{name}\b", read, re.I):
                found.append(Leak(f"{name} (who answered)", where))
        return found


def _segments(answer: str) -> Seg:
    return ANSWERS[answer]


def _output(answer: str) -> Any:
    return corrected_output(correction_build(segments=_segments(answer)))


def _pages(n: int, state: str) -> list[str]:
    return [
        f"{state.replace('_', ' ').upper()} PAGE {i}\n\nText of page {i}." for i in range(1, n + 1)
    ]


def _accepted(state: str, sha: str, uploader: Any) -> tuple[Run, AuditSample]:
    pages = _pages(PAGES[state], state)
    document = ready_document(*pages, sha=sha, uploaded_by=uploader)
    output = _output(f"{state}/machine")
    run = Run.objects.create(
        document=document,
        preset="clinical",
        classifier="offline",
        status=Run.Status.COMPLETED,
        final_decision="AUTO_ACCEPT",
        attempts_count=1,
    )
    with transaction.atomic():
        truth = ground_truth.ground_truth_record(
            document=document, run=run, output=output, source=GroundTruth.Source.AUTO_ACCEPTED
        )
        sample = audits.audit_sample_consider(run=run, truth=truth, output=output)
    assert sample is not None
    return run, sample


def _escalated(state: str, sha: str, uploader: Any) -> ReviewPacket:
    pages = _pages(PAGES[state], state)
    document = ready_document(*pages, sha=sha, uploaded_by=uploader)
    packet = escalate(document, pages, _output(f"{state}/machine"))
    assert packet.run.document_id == document.pk
    return packet


def _correct(packet: ReviewPacket, user: Any, answer: str) -> None:
    decisions.packet_open(packet=packet, user=user)
    decisions.review_submit(
        packet_id=packet.pk,
        reviewer=user,
        correction=correction_build(segments=_segments(answer)),
        notes=NOTES[answer],
    )


def build(django_user_model: Any, roles: dict[str, Any], settings: Any) -> States:
    """The four states, with every event published while they were built (and after)."""
    from core import events

    settings.AUDIT_SAMPLE_RATE = 1.0
    settings.SECOND_REVIEW_ON_CORRECTION = True
    settings.ADJUDICATION_BY_REVIEWERS = False
    users = {}
    for role, username in PEOPLE.items():
        user = django_user_model.objects.create_user(
            username=username,
            password="x",
            first_name=username.title(),
            is_staff=role == "admin",
        )
        user.groups.add(roles[ADMINS if role == "admin" else REVIEWERS])
        users[role] = user
    states = States(users=users, documents={}, runs={}, packets={}, samples={}, seconds={})

    events.published.connect(states.heard)  # the caller disconnects it (see the fixtures)
    uploader = users["unrelated"]
    # A blind audit, open.
    run, sample = _accepted("audit_open", "1", uploader)
    states.runs["audit_open"], states.samples["audit_open"] = run, sample
    # An audit that disagreed, under second review.
    run, sample = _accepted("audit_disputed", "2", uploader)
    audits.audit_submit(
        sample_id=sample.pk,
        auditor=users["auditor"],
        segments=_segments("audit_disputed/auditor"),
        note=NOTES["audit_disputed/auditor"],
    )
    states.runs["audit_disputed"], states.samples["audit_disputed"] = run, sample
    states.seconds["audit_disputed"] = SecondReview.objects.get(audit=sample)
    # A decision under second review.
    packet = _escalated("second_open", "3", uploader)
    _correct(packet, users["first_decider"], "second_open/first")
    states.packets["second_open"] = packet
    states.seconds["second_open"] = SecondReview.objects.get(packet=packet)
    # A decision and a second answer that disagree: adjudication.
    packet = _escalated("adjudication", "4", uploader)
    _correct(packet, users["first_decider_adjudication"], "adjudication/first")
    second = SecondReview.objects.get(packet=packet)
    second_review.second_review_submit(
        second_id=second.pk,
        reviewer=users["second_reviewer"],
        segments=_segments("adjudication/second"),
        note=NOTES["adjudication/second"],
    )
    second.refresh_from_db()
    assert second.status == SecondReview.Status.ADJUDICATION
    states.packets["adjudication"], states.seconds["adjudication"] = packet, second
    for state in ("second_open", "adjudication"):
        states.runs[state] = states.packets[state].run
    for state, run in states.runs.items():
        states.documents[state] = run.document
    return states
