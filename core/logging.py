"""Logging filters shared by every app (wired in config.settings.LOGGING)."""

from __future__ import annotations

import logging


class ClientErrorsOnOneLine(logging.Filter):
    """A 4xx logged by django.request (an ordinary 403, a 404) is one line: Django attaches
    the exception that made it (PermissionDenied) with its traceback, which says nothing the
    line does not and buries the real errors. 5xx keep their traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500 and record.exc_info:
            reason = record.exc_info[1]
            if reason is not None and str(reason):
                record.msg = f"{record.msg} ({str(reason).replace('%', '%%')})"
            record.exc_info = None
            record.exc_text = None
        return True
