"""Bundles made from a labelled corpus's documents, to measure where segmentation cuts: several
documents joined into one file, in different orders, lengths and types, with the true first and
last page of each. Pure: no Django.

A bundle is written as a text file whose pages are separated by form feeds (the text reader
reads each as a page), next to a ``segments.jsonl`` in the layout of the corpus's own
``bundles/`` folder, so the same evaluation reads both. Built at run time into a temporary
folder from the corpus (whose files stay where they are), with a fixed seed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

# Long text documents are cut into pages of about this many characters, at line ends, so that
# bundles hold documents of several pages (whose pages must not be cut apart) and not only
# one-page texts.
PAGE_CHARS = 1800
MAX_DOCUMENT_PAGES = 8

# The shapes of bundles, drawn in turn: how many documents and whether they share one type.
SHAPES = (
    ("mixed", 3),
    ("same_type", 3),
    ("mixed", 2),
    ("same_type", 2),
    ("mixed", 5),
    ("same_type", 4),
    ("mixed", 4),
)


def paginate(text: str, *, page_chars: int = PAGE_CHARS) -> list[str]:
    """A text as pages of about ``page_chars``, cut at line ends (never inside a line)."""
    pages: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines():
        if size >= page_chars and line.strip():
            pages.append("\n".join(current).strip("\n"))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current and "\n".join(current).strip():
        pages.append("\n".join(current).strip("\n"))
    return pages or [text]


def build(
    corpus: Path,
    out: Path,
    *,
    extract: Callable[[Path], list[str]],
    rows: list[dict[str, str]],
    count: int = 12,
    seed: int = 27,
) -> Path:
    """Write ``count`` bundles into ``out/bundles`` and return that folder. ``rows`` are the
    corpus's labels (doc_id, label, path); ``extract`` reads a file's pages."""
    rng = random.Random(seed)
    folder = out / "bundles"
    folder.mkdir(parents=True, exist_ok=True)
    by_label: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_label.setdefault(row["label"], []).append(row)
    pages_of: dict[str, list[str]] = {}

    def pages(row: dict[str, str]) -> list[str]:
        if row["doc_id"] not in pages_of:
            found = [p for p in extract(corpus / row["path"]) if p.strip()]
            if len(found) == 1 and len(found[0]) > PAGE_CHARS * 1.5:
                found = paginate(found[0])
            pages_of[row["doc_id"]] = found[:MAX_DOCUMENT_PAGES]
        return pages_of[row["doc_id"]]

    labels = sorted(label for label, docs in by_label.items() if len(docs) >= 2)
    specs = []
    for index in range(count):
        shape, size = SHAPES[index % len(SHAPES)]
        if shape == "same_type":
            label = rng.choice(labels)
            pool = by_label[label]
            chosen = rng.sample(pool, min(size, len(pool)))
        else:
            chosen = [rng.choice(by_label[rng.choice(labels)]) for _ in range(size)]
            # Two copies of one document side by side would be one document to any reader.
            chosen = [d for i, d in enumerate(chosen) if i == 0 or d is not chosen[i - 1]]
        segments = []
        bundle_pages: list[str] = []
        for row in chosen:
            own = pages(row)
            if not own:
                continue
            segments.append(
                {
                    "doc_id": row["doc_id"],
                    "label": row["label"],
                    "first_page": len(bundle_pages) + 1,
                    "last_page": len(bundle_pages) + len(own),
                }
            )
            bundle_pages += own
        if len(segments) < 2:
            continue
        name = f"generated_{index + 1:02d}_{shape}.txt"
        (folder / name).write_text("\f".join(bundle_pages), encoding="utf-8")
        specs.append(
            {"bundle": name, "n_pages": len(bundle_pages), "shape": shape, "segments": segments}
        )
    (folder / "segments.jsonl").write_text("".join(json.dumps(s) + "\n" for s in specs))
    return folder
