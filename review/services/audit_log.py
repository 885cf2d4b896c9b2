"""The audit log: who viewed, decided, skipped, undid, reopened, audited or exported what."""

from __future__ import annotations

from typing import Any

from review.models import AuditEvent


def audit_record(
    *,
    user: Any,
    action: str,
    obj: Any = None,
    object_type: str = "",
    object_id: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Record who did what to which object. The object is named by its model (a lazy
    request user is named "User", not by its wrapper), or given explicitly."""
    if obj is not None:
        object_type = object_type or obj._meta.object_name
        object_id = object_id or str(obj.pk)
    AuditEvent.objects.create(
        user=user if getattr(user, "is_authenticated", False) else None,
        username=getattr(user, "username", "") or "system",
        action=action,
        object_type=object_type,
        object_id=object_id,
        detail=detail or {},
    )


def export_audit(
    *, user: Any, digest: str, filters: dict[str, Any], records: int, complete: bool = True
) -> None:
    """An export is audited as the ground-truth file it produced: named by its SHA-256 (see
    review.exports.export_digest), with the filter that chose it and how many records it
    holds. A streamed download broken off part way is audited too, as ``interrupted``, with
    the digest of the bytes handed over and the records read."""
    detail = {**{k: str(v) for k, v in filters.items()}, "sha256": digest, "records": records}
    if not complete:
        detail["interrupted"] = True
    audit_record(
        user=user,
        action=AuditEvent.Action.EXPORTED,
        object_type="GroundTruth",
        object_id=f"export:{digest[:16]}",
        detail=detail,
    )
