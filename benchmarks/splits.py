"""Frozen test splits, decided by a hash before anything is built or tuned (issue 32).

A document (a corpus file, a gathered negative) is in the test split when the hash of its bytes
says so; a generated look-alike when the hash of its template's name says so (templates held
out whole, so a test document shares no wording with any training one). The salt and the share
are fixed: changing either unfreezes every split, so they are never changed. Figures on the test
split are the ones that count; figures on the rest are development figures (we tuned on them).

Pure: no Django.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from engine.lookalikes import held_out  # the one rule (the engine's generator uses it too)

__all__ = ["file_hash", "held_out", "split_of"]


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def split_of(path: Path) -> str:
    """ "test" or "dev" for a corpus file, by the hash of its bytes."""
    return "test" if held_out(file_hash(path)) else "dev"
