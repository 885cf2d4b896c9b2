from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser
from django.test.utils import override_settings

from engine.schemas import DocType
from review import queue as review_queue
from review import selectors
from review.corrections import correction_build
from review.models import Review, ReviewPacket, SecondReview
from review.roles import ADMINS, REVIEWERS, ensure_roles
from review.services import ReviewRefused, decisions
from review.services.second_review import second_review_submit

DEMO_DIR = Path(settings.BASE_DIR) / "demo" / "documents"

# The demo's documents are processed here and now, by the offline chain, with an audit draw
# and second-review rules fixed for the demo, whatever the deployment configures: its checks
# are set up on packets whose outcome is known (demo/make_demo.py says which document becomes
# what). Only this command's own processing is affected.
DEMO_SETTINGS: dict[str, Any] = {
    "REDIS_URL": "",  # jobs inline: the packets exist when the checks are set up
    "GEMINI_API_KEY": "",  # the offline classifier, deterministic and free
    "GOOGLE_GENAI_USE_VERTEXAI": False,
    # Exactly one blind audit: the only accepted radiology report (ct_chest_demo.pdf).
    "AUDIT_DAILY_MINIMUM": False,
    "AUDIT_SAMPLE_RATE": 0.0,
    "AUDIT_SAMPLE_RATES": {DocType.RADIOLOGY.value: 1.0},
    # A correction gets a second review; nothing else does.
    "SECOND_REVIEW_ON_CORRECTION": True,
    "SECOND_REVIEW_ON_BLOCKER": False,
    "SECOND_REVIEW_RATE": 0.0,
}

# Seven pages, four documents; the machine misses where the third starts (demo/make_demo.py).
BUNDLE = "outside_records_bundle_demo.pdf"
# A patient's portal message quoting a biopsy report: the machine says Pathology Report, the
# demo reviewer corrects it to Clinical Note, and its second review waits for the second
# reviewer.
FOR_SECOND_REVIEW = "portal_message_demo.txt"
# Immunohistochemistry and an MSI PCR on one page: the demo reviewer files it as a Genomic
# Report, the second reviewer (blind) as a Pathology Report; the admin adjudicates.
FOR_ADJUDICATION = "mmr_msi_report_demo.pdf"


def demo_packet(filename: str) -> ReviewPacket | None:
    """The packet of a demo document (found by its content, not its name)."""
    sha256 = hashlib.sha256((DEMO_DIR / filename).read_bytes()).hexdigest()
    return (
        ReviewPacket.objects.filter(document__sha256=sha256)
        .select_related("document")
        .order_by("created_at")
        .first()
    )


class Command(BaseCommand):
    help = (
        "Create the demo accounts (a reviewer, a second reviewer and an admin), load the demo "
        "documents (fictional) and set up one of each check: a bundle to split in the queue, "
        "a blind audit, a second review and an adjudication. Running it again is harmless."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--username",
            default="reviewer",
            help="the demo reviewer (default reviewer; the second reviewer is this name and 2)",
        )
        parser.add_argument(
            "--password", help="password for the demo accounts (default: a new random one)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        password = options["password"] or secrets.token_urlsafe(9)
        # Hashed once for the three accounts (the hasher is slow on purpose, ~1 s a hash).
        hashed = make_password(password)
        roles = ensure_roles()
        user = self._account(options["username"], "Demo", "Reviewer", hashed)
        user.groups.add(roles[REVIEWERS])
        second = self._account(f"{options['username']}2", "Demo", "Second Reviewer", hashed)
        second.groups.add(roles[REVIEWERS])
        admin = self._account("admin", "Demo", "Admin", hashed, superuser=True)
        admin.groups.add(roles[ADMINS])

        with override_settings(**DEMO_SETTINGS):
            call_command("ingest", str(DEMO_DIR), user=user.username, stdout=self.stdout)
            self._checks(reviewer=user, second=second)

        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Demo accounts (same password)"))
        self.stdout.write(f"  username: {user.username}   (clinician: review queue, audits)")
        self.stdout.write(f"  username: {second.username}   (second clinician: second reviews)")
        self.stdout.write(
            f"  username: {admin.username}   (admin: adjudication, export, metrics, Django admin)"
        )
        self.stdout.write(f"  password: {password}")
        self._waiting(reviewer=user, second=second, admin=admin)

    def _account(
        self, username: str, first: str, last: str, hashed: str, *, superuser: bool = False
    ) -> Any:
        account, _ = get_user_model().objects.get_or_create(
            username=username, defaults={"first_name": first, "last_name": last}
        )
        account.password = hashed
        if superuser:
            account.is_staff = account.is_superuser = True
        account.save()
        return account

    def _checks(self, *, reviewer: Any, second: Any) -> None:
        """The decisions that put a second review and an adjudication in waiting, made through
        the services as the reviewers would make them (audited, blind). Each is made
        once: a packet already decided (or decided and undone) is left as it is."""
        self._correct(
            FOR_SECOND_REVIEW,
            reviewer,
            DocType.CLINICAL_NOTE,
            "A patient's portal message that quotes the biopsy report: not the report itself.",
        )
        review = self._correct(
            FOR_ADJUDICATION,
            reviewer,
            DocType.GENOMIC,
            "MSI by PCR is a molecular test: filed with the genomic results.",
        )
        waiting = (
            SecondReview.objects.filter(first_review=review, status=SecondReview.Status.AWAITING)
            .values_list("pk", flat=True)
            .first()
            if review is not None
            else None
        )
        if waiting is not None:
            second_review_submit(
                second_id=waiting,
                reviewer=second,
                segments=[(1, 1, DocType.PATHOLOGY)],
                note="Mismatch repair immunohistochemistry signed by a pathologist: a "
                "pathology report.",
            )

    def _correct(
        self, filename: str, reviewer: Any, doc_type: DocType, notes: str
    ) -> Review | None:
        packet = demo_packet(filename)
        if packet is None or Review.objects.filter(packet=packet).exists():
            return None
        correction = correction_build(segments=[(1, packet.document.page_count, doc_type)])
        # Decided without opening the packet (no lock taken, so no start time): a scripted
        # decision took no reviewer's time, and the analytics leave it untimed.
        try:
            return decisions.review_submit(
                packet_id=packet.pk, reviewer=reviewer, correction=correction, notes=notes
            )
        except ReviewRefused as refused:  # someone holds the packet: leave it to them
            self.stderr.write(f"Demo decision on {filename} not made: {refused.message}")
            return None

    def _waiting(self, *, reviewer: Any, second: Any, admin: Any) -> None:
        """What each demo account finds waiting, read from the database (true on a re-run)."""
        counts = review_queue.queue_counts()
        bundle = demo_packet(BUNDLE)
        to_split = (
            f" (the {bundle.document.page_count}-page {BUNDLE} among them, to split)"
            if bundle is not None and bundle.status in ReviewPacket.OPEN_STATUSES
            else ""
        )
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("Waiting in the demo"))
        self.stdout.write(
            f"  {reviewer.username}: {counts['open']} packet(s) in the review queue{to_split}; "
            f"{len(selectors.audit_queue())} blind audit(s) in Quality checks"
        )
        self.stdout.write(
            f"  {second.username}: {len(selectors.second_reviews_for(second))} second review(s) "
            "in Quality checks"
        )
        self.stdout.write(
            f"  {admin.username}: {len(selectors.adjudications_for(admin))} adjudication(s) in "
            "Quality checks"
        )
