"""The template library: packs from engine/fields/packs/*.json, each field checked against
the finders that read it. Pure: no Django."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from engine.fields.finders import FINDERS
from engine.fields.templates import PACKS_DIR, Pack, Template, TemplateError


def load_pack(path: Path) -> Pack:
    try:
        pack = Pack.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:
        raise TemplateError(f"Template pack {path.name} is invalid: {exc}") from exc
    for template in pack.templates:
        for spec in template.fields:
            if spec.finder and spec.finder not in FINDERS:
                raise TemplateError(
                    f"Template pack {path.name} is invalid: field {spec.name} names an unknown "
                    f"finder {spec.finder!r} (known: {', '.join(sorted(FINDERS))})."
                )
    return pack


@lru_cache(maxsize=8)
def load_packs(names: tuple[str, ...]) -> dict[str, Pack]:
    packs = {}
    for name in names:
        path = PACKS_DIR / f"{name}.json"
        if not path.exists():
            available = ", ".join(sorted(p.stem for p in PACKS_DIR.glob("*.json")))
            raise TemplateError(f"No template pack {name!r} (available: {available}).")
        packs[name] = load_pack(path)
    return packs


def find_template(packs: dict[str, Pack], doc_type: str) -> Template | None:
    for pack in packs.values():
        template = pack.template(doc_type)
        if template is not None:
            return template
    return None
