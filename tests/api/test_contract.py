"""The schema is the contract: schemathesis, with every check it has, against the API served
by a live server, as an integration engineer would run it (``schemathesis run <schema> --checks
all``): every status, body and content type the server answers is in the schema, every request
the schema allows is served, every request it forbids is refused, and no request is a 5xx.

Sized for CI (SCHEMATHESIS_MAX_EXAMPLES, 6 by default; scripts/test.sh --long may set more). Uploads
go to a real Redis queue that no worker reads, so the contract is measured on the API alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from reliability.services import api_token_create
from tests.conftest import ready_document

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "6"))


def contract_run(url: str, token: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(SCHEMATHESIS),
            "run",
            f"{url}/api/v1/openapi.json",
            "--checks",
            "all",
            "-H",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(EXAMPLES),
            "--seed",
            "20261128",
            "--request-timeout",
            "30",
            "--wait-for-schema",
            "120",
            "--no-color",
            "--report-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
        cwd=tmp_path,  # schemathesis keeps a cache of what it found in its working directory
    )


# CI runs the contract as an Admin's token (every document); the nightly profile also as a
# Reviewer's (its own documents only).
@pytest.mark.parametrize("role", ["admin", pytest.param("reviewer", marks=pytest.mark.long)])
def test_the_api_keeps_its_schema_under_every_check(
    live_server, redis_url, django_user_model, role, tmp_path
):
    from review.roles import ADMINS, REVIEWERS, ensure_roles

    user = django_user_model.objects.create_user(username=f"lims-{role}", password="x")
    user.groups.add(ensure_roles()[ADMINS if role == "admin" else REVIEWERS])
    ready_document("SURGICAL PATHOLOGY REPORT\n\nFINAL DIAGNOSIS: benign.", uploaded_by=user)
    token = api_token_create(user=user, name="contract")[1]

    # The first request warms the live server (imports, the schema's generation), which takes
    # seconds on a loaded machine: schemathesis's own schema request would time out.
    urllib.request.urlopen(f"{live_server.url}/api/v1/openapi.json", timeout=120).read()
    run = contract_run(live_server.url, token, tmp_path)

    summary = run.stdout[-3000:]
    assert run.returncode == 0, summary
    assert "No issues found" in run.stdout or " passed" in run.stdout, summary
    operations = re.search(r"Selected: (\d+)/(\d+)", run.stdout)
    # Six operations: /evaluate/ is in the schema only where a language model is configured.
    assert operations and operations.group(1) == operations.group(2) == "6", summary
    generated = re.search(r"(\d+) generated", run.stdout)
    assert generated and int(generated.group(1)) >= 6 * EXAMPLES, summary
    print(f"schemathesis ({role}): {operations.group(1)} operations, {generated.group(1)} cases")
