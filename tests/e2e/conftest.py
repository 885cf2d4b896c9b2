"""Playwright in Debian's Chromium, headless, against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
# Flags for a closed network: no background calls home that would be refused or hang.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """One Chromium per test. Playwright's sync API keeps an event loop open in the test
    thread, and Django's ORM refuses to run beside one unless told it is safe (it is: the
    thread never awaits). Scoping both to the test keeps every other test's checks intact."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package.")
    from playwright.sync_api import sync_playwright

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        readers(browser)
        yield browser
        browser.close()
        # While the loop runs, Django keeps this thread's connections in a context variable;
        # close them before the loop stops, or they outlive the test and block its teardown.
        connections.close_all()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    read_before_keys(page)
    yield page
    context.close()


# The review pages' keys act only 400 ms after the page is painted (static/js/review.js says
# so with data-keys-ready): a test presses keys as a reader does, once the page can be read.
# A test of that guard presses through ``page.keyboard.press_at_once``.
READY = (
    "() => !document.querySelector('script[src*=\"review.js\"]')"
    " || document.documentElement.dataset.keysReady === 'true'"
)


def readers(browser: Any) -> None:
    """Every page this browser opens presses keys as a reader (read_before_keys)."""
    new_context = browser.new_context

    def reading_context(*args: Any, **kwargs: Any) -> Any:
        context = new_context(*args, **kwargs)
        new_page = context.new_page

        def reading_page() -> Any:
            page = new_page()
            read_before_keys(page)
            return page

        context.new_page = reading_page
        return context

    browser.new_context = reading_context


def read_before_keys(page: Any) -> None:
    if hasattr(page.keyboard, "press_at_once"):
        return
    keyboard = page.keyboard
    at_once = keyboard.press

    def press(key: str, **options: Any) -> None:
        try:
            page.wait_for_function(READY)
        except Exception:  # a page going away as it loads the next: wait for that one
            page.wait_for_load_state()
            page.wait_for_function(READY)
        at_once(key, **options)

    keyboard.press_at_once = at_once
    keyboard.press = press


@pytest.fixture
def screenshot(page: Any) -> Any:
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def log_in(page: Any, live_server: Any, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/documents/")
    assert "/accounts/login/" in page.url
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/documents/")
