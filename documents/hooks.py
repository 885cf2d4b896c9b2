"""What documents hands on to the apps above it (connected by config.wiring)."""

from __future__ import annotations

from core.wiring import Hook
from documents.models import Document

# A document was read into pages and committed: classify it (when AUTO_CLASSIFY is on).
document_ready: Hook[[Document], object] = Hook("document ready")
