"""What documents hands on to the apps above it (connected by config.wiring)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.wiring import Hook
from documents.models import Document

# A document was read into pages and committed: classify it (when AUTO_CLASSIFY is on).
document_ready: Hook[[Document], object] = Hook("document ready")

# Retention (documents.retention). Which of these documents (ids) must be kept past the
# retention age for now, each with a code saying why ("run_open", "review_open", ...): work
# on them is still under way, and deleting them would cut it short. Each receiver answers for
# what its app holds; a document is kept while any receiver holds it.
retention_holds: Hook[[Sequence[Any]], dict[Any, str]] = Hook("retention holds")

# A document is being deleted under the retention policy, inside the transaction that
# empties it: each receiver deletes, or de-identifies, what its app holds of it, and the
# deletion is recorded in the audit log. ``record`` describes the deletion (no patient data:
# ids, dates, counts, the policy) for that log.
document_erasing: Hook[[Document, dict[str, Any]], object] = Hook("document erasing")
