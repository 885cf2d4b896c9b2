"""An ordinary 403 is one log line; a server error keeps its traceback."""

from __future__ import annotations

import logging

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_403_is_logged_as_one_line_without_a_traceback(client, django_user_model, caplog):
    user = django_user_model.objects.create_user(username="nobody", password="x")
    client.force_login(user)  # no role: the review queue is forbidden
    with caplog.at_level(logging.WARNING, logger="django.request"):
        response = client.get(reverse("review:queue"))
    assert response.status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert record.exc_info is None and record.exc_text is None
    line = logging.Formatter("%(levelname)s %(name)s %(message)s").format(record)
    assert "\n" not in line and line.startswith("WARNING django.request Forbidden")
    assert "Traceback" not in caplog.text


def test_a_server_error_keeps_its_traceback():
    from core.logging import ClientErrorsOnOneLine

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record = logging.LogRecord(
            "django.request",
            logging.ERROR,
            __file__,
            1,
            "Internal Server Error",
            (),
            sys.exc_info(),
        )
    record.status_code = 500
    assert ClientErrorsOnOneLine().filter(record) and record.exc_info is not None
