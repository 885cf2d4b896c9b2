from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import text_pdf_once

PATHOLOGY_PAGES = [
    [
        "SURGICAL PATHOLOGY REPORT",
        "Specimen: left breast, core needle biopsy.",
        "FINAL DIAGNOSIS",
        "Invasive ductal carcinoma, Nottingham grade 2.\nDuctal carcinoma in situ is also present.",
    ],
    [
        "MICROSCOPIC DESCRIPTION",
        "Nests of malignant cells in a desmoplastic stroma.",
        "- ER positive, 90%.\n- HER2 negative.",
    ],
    ["ADDENDUM", "Ki-67 proliferation index 18%."],
]


@pytest.fixture
def pathology_pdf() -> bytes:
    return text_pdf_once(PATHOLOGY_PAGES)


def drawn_pdf(content: Callable[[Any], None]) -> bytes:
    """A one-page letter PDF that ``content(canvas)`` draws with reportlab."""
    from reportlab.lib.pagesizes import LETTER
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=LETTER, invariant=1)
    content(pdf)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


# -- an S3-compatible bucket: moto's server on a local port (no network) -------------------------


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 in server mode, in a thread of this process on a free local port: it speaks
    the S3 API over HTTP, so the storage (and worker processes) use it as a real endpoint."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@dataclass
class Bucket:
    name: str
    url: str  # the STORAGE_URL that names it
    prefix: str
    client: Any

    def stored(self, under: str = "") -> list[str]:
        """The keys in the bucket (those starting with ``under``), sorted."""
        found = self.client.list_objects_v2(Bucket=self.name, Prefix=under).get("Contents", [])
        return sorted(item["Key"] for item in found)


AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


@pytest.fixture
def bucket(s3_endpoint: str, settings: Any, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """A new, empty bucket; uploads and page images go to it (STORAGE_URL, as a deployment
    sets it, under the prefix ``hospital``), credentials from the standard AWS variables."""
    import boto3

    from config.env import storage_from_url

    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    name = f"vetted-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="eu-west-1")
    client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    url = f"s3://{name}/hospital?endpoint_url={s3_endpoint}&region=eu-west-1"
    settings.STORAGE_URL = url
    settings.STORAGES = {**settings.STORAGES, "default": storage_from_url(url)}
    return Bucket(name=name, url=url, prefix="hospital", client=client)
