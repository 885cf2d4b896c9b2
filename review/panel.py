"""A decision is the act of the reviewer who holds the packet, on the panel state they saw.

The packet page carries two things with every decision it posts:

- ``panel_token``: signed by the server when it painted the page, for this packet, this
  reviewer and the packet's decision count at that moment. A form from another reviewer's
  session, another packet, or a page painted before the packet was decided (then undone or
  reopened) does not carry a token that fits: it is refused as stale.
- the panel itself: its segment rows (where each document starts, its type) and the types
  marked "Also present", posted with every decision, validations included. The server
  records a decision only if it is exactly that state: a validation only from a panel
  showing the machine's answer (without the rows it is refused, not assumed), a correction
  only from the panel it was built from.

The decision service checks both (review.services.decisions.review_submit, ``seen``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.core.exceptions import ValidationError

SALT = "review.panel"
MAX_AGE_SECONDS = 12 * 60 * 60  # a page left open overnight is painted again, not trusted


@dataclass(frozen=True)
class PanelSeen:
    """What the reviewer's panel showed, as posted with the decision."""

    token: str
    segments: tuple[tuple[int, int, str], ...] | None  # None: no (valid) rows were posted
    present: tuple[str, ...] = ()


# Refusal codes (the message is for people; tests and clients branch on the code).
STALE = "panel_stale"
MISSING = "panel_missing"
DIFFERS = "panel_differs"
NOT_HELD = "lock_not_held"

MESSAGES = {
    STALE: "Nothing was recorded: this page is out of date (the packet changed, or the page "
    "is not yours). Reload the packet and decide again.",
    MISSING: "Nothing was recorded: the decision did not say what the panel showed. Reload "
    "the packet and decide from its panel.",
    DIFFERS: "Nothing was recorded: the decision differs from what the panel showed. Check "
    "the panel and decide again.",
    NOT_HELD: "Nothing was recorded: you do not hold this packet. Open it (it locks to you "
    "when it is free) and decide again.",
}


def _revision(packet: Any) -> int:
    # Every decision on the packet, withdrawn ones included: an undo or a reopen makes an
    # older page stale even though the packet is open again.
    return int(packet.reviews.count())


def panel_token(*, packet: Any, user: Any, revision: int | None = None) -> str:
    """The token a page painted now carries (``revision``: the packet's decision count, when
    the caller has it at hand)."""
    revision = _revision(packet) if revision is None else revision
    return signing.dumps({"p": packet.pk, "u": user.pk, "r": revision}, salt=SALT)


def panel_token_fits(*, packet: Any, user: Any, token: str) -> bool:
    try:
        data = signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)
    except signing.BadSignature:
        return False
    return bool(
        isinstance(data, dict)
        and data.get("p") == packet.pk
        and data.get("u") == user.pk
        and data.get("r") == _revision(packet)
    )


def panel_seen_parse(data: Any, *, page_count: int) -> PanelSeen:
    """The panel state posted with a decision: its segment rows (``start`` and ``type``
    lists, as the form posts them) and its "Also present" types."""
    from review.forms import posted_rows, segments_from_rows

    token = str(data.get("panel_token", "") or "")
    present = tuple(sorted(data.getlist("present"))) if hasattr(data, "getlist") else ()
    rows = posted_rows(data)
    if not rows:
        return PanelSeen(token=token, segments=None, present=present)
    try:
        segments = segments_from_rows(rows, page_count=page_count)
    except ValidationError:
        return PanelSeen(token=token, segments=None, present=present)
    return PanelSeen(
        token=token, segments=tuple((a, b, t.value) for a, b, t in segments), present=present
    )
