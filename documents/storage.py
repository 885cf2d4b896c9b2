"""Where a document's file and its page images are kept: Django's default storage
(settings.STORAGES, from STORAGE_URL): this machine's disk under MEDIA_ROOT, or an
S3-compatible bucket that every web process and worker shares.

Uploads go through the ``Document.file`` field; page images are written here under names
Vetted chooses (``page-images/<document id>/<page>-<dpi>.png``), whole or not at all: on disk
through a temporary file renamed into place, readable by the server's user only; in a bucket
by one PUT, which S3 makes visible only once complete. Nothing is ever given a public URL: the
views stream files to logged-in users.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from pathlib import Path
from typing import IO, Any

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, storages

logger = logging.getLogger(__name__)

PAGE_IMAGES = "page-images"


def _backend() -> Any:
    """The default storage (what ``Document.file`` uses too), as settings.STORAGES has it."""
    return storages["default"]


def page_images_folder(document_id: Any) -> str:
    return f"{PAGE_IMAGES}/{document_id}"


def write_private(name: str, content: bytes) -> None:
    """Store ``content`` under exactly ``name``, replacing what is there, so that a concurrent
    reader sees the old object or the new one, never half of one."""
    backend = _backend()
    if isinstance(backend, FileSystemStorage):
        path = Path(backend.path(name))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.part")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        with os.fdopen(os.open(part, flags, 0o600), "wb") as out:
            out.write(content)
        part.replace(path)  # atomic on one file system
        return
    saved = backend.save(name, ContentFile(content))
    if saved != name:  # a storage that renames rather than replaces: not one we configure
        backend.delete(saved)
        raise RuntimeError(f"the storage wrote {saved!r} instead of {name!r}")


def exists(name: str) -> bool:
    return bool(_backend().exists(name))


def open_file(name: str) -> IO[bytes]:
    """The stored file, for reading. Raises FileNotFoundError when it is not there."""
    handle: IO[bytes] = _backend().open(name, "rb")
    return handle


def names_in(folder: str) -> set[str]:
    """The names of the files directly in ``folder`` (none when it does not exist)."""
    try:
        _, files = _backend().listdir(folder)
    except FileNotFoundError:
        return set()
    return set(files)


def delete(name: str) -> None:
    """Delete one file; a file already gone is not an error."""
    if name:
        _backend().delete(name)


def delete_folder(folder: str) -> int:
    """Delete every file under ``folder`` (and, on disk, the folder). Returns how many files
    there were; a folder already gone is not an error."""
    backend = _backend()
    if isinstance(backend, FileSystemStorage):
        path = Path(backend.path(folder))
        if not path.exists():
            return 0
        count = sum(1 for p in path.rglob("*") if p.is_file())
        shutil.rmtree(path, ignore_errors=False)
        return count
    # A bucket: list the keys under the prefix and delete them in batches (up to 1,000 keys a
    # request), through boto3's public collection API on the storage's bucket.
    prefix = "/".join(part for part in (backend.location.strip("/"), folder.strip("/")) if part)
    objects = backend.bucket.objects.filter(Prefix=f"{prefix}/")
    count = 0
    for answer in objects.delete():
        count += len(answer.get("Deleted", []))
        for error in answer.get("Errors", []):
            logger.warning("could not delete %s: %s", error.get("Key"), error.get("Code"))
    return count


def probe() -> None:
    """Raise when the storage cannot take a file (the health check): on disk, a file is
    written and removed; in a bucket, one key under the prefix is listed (the bucket exists,
    answers and accepts the credentials), without writing at every check."""
    backend = _backend()
    if isinstance(backend, FileSystemStorage):
        root = Path(backend.location)
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        probe_path = root / f".healthz-{os.getpid()}-{threading.get_ident()}"
        with open(probe_path, "wb") as out:
            out.write(b"ok")
        probe_path.unlink()
        return
    backend.connection.meta.client.list_objects_v2(
        Bucket=backend.bucket_name, Prefix=backend.location, MaxKeys=1
    )
