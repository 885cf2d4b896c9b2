"""Measure the packet pages of a running Vetted: how tall each is and whether the decision
controls are on screen, at 1280x800 and 768x1024, in Debian's Chromium (Playwright).

    .venv/bin/python benchmarks/review_pages.py http://127.0.0.1:8000 USER PASSWORD [PACKET_ID ...]

Without packet ids it measures every packet linked from the first page of the open queue.
Opening a packet locks it to USER, as it would for a clinician: use a measuring account.
Prints one JSON object per packet and width.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
SIZES = [(1280, 800), (768, 1024)]


def in_view(box: Any, width: int, height: int) -> bool:
    return bool(
        box
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width
        and box["y"] + box["height"] <= height
    )


def main(url: str, user: str, password: str, ids: list[str]) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        for width, height in SIZES:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}/accounts/login/")
            page.fill("#id_username", user)
            page.fill("#id_password", password)
            page.click("button[type=submit]")
            page.wait_for_load_state()
            if not ids:
                page.goto(f"{url}/review/")
                links = page.eval_on_selector_all(
                    "a[href*='/review/packets/']", "els => els.map(e => e.href)"
                )
                ids = sorted({m.group(1) for h in links if (m := re.search(r"/(\d+)/$", h))})
            for packet in ids:
                page.goto(f"{url}/review/packets/{packet}/")
                page.wait_for_load_state("networkidle")
                save = page.get_by_role("button", name="Save correction")
                box = save.bounding_box() if save.count() else None
                print(
                    json.dumps(
                        {
                            "viewport": f"{width}x{height}",
                            "packet": int(packet),
                            "document": page.locator("h1").first.inner_text(),
                            "page_height": page.evaluate("document.documentElement.scrollHeight"),
                            "page_width": page.evaluate("document.documentElement.scrollWidth"),
                            "save_top": round(box["y"]) if box else None,
                            "save_in_view": in_view(box, width, height),
                        }
                    )
                )
            page.close()
        browser.close()


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1].rstrip("/"), sys.argv[2], sys.argv[3], sys.argv[4:])
