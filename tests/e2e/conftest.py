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


class _Shared:
    """One Playwright and one Chromium for a run of consecutive browser tests in this process
    (starting them costs 2-5 s; a context per test costs a fraction of that)."""

    playwright: Any = None
    browser: Any = None
    async_unsafe: str | None = None


def _shared_browser() -> Any:
    if _Shared.browser is None:
        if not Path(CHROMIUM).exists():
            pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package.")
        from playwright.sync_api import sync_playwright

        # Playwright's sync API keeps an event loop open in this thread for as long as it
        # runs, and Django's ORM refuses to run beside one unless told it is safe (it is: the
        # thread never awaits). It is told so only while the browser is open, which is only
        # while browser tests run (pytest_runtest_teardown below closes it before any other).
        _Shared.async_unsafe = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
        _Shared.playwright = sync_playwright().start()
        _Shared.browser = _Shared.playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        readers(_Shared.browser)  # every page it opens presses keys as a reader
    return _Shared.browser


def _close_shared_browser() -> None:
    if _Shared.playwright is None:
        return
    try:
        if _Shared.browser is not None:
            _Shared.browser.close()
        _Shared.playwright.stop()
    finally:
        _Shared.playwright = _Shared.browser = None
        # While the loop runs, Django keeps this thread's connections in a context variable;
        # close them before the loop stops, or they outlive it and block the database's drop.
        connections.close_all()
        if _Shared.async_unsafe is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = _Shared.async_unsafe


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a browser test's own teardown: keep the shared Chromium for the next test only
    if that one is a browser test too, so no other test ever runs beside Playwright's loop."""
    result = yield
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        _close_shared_browser()
    return result


@pytest.fixture
def browser() -> Iterator[Any]:
    """Chromium, shared with the browser tests that run next in this process; each test gets
    it without any context (no cookies, storage or pages of another test's)."""
    shared = _shared_browser()
    yield shared
    for context in list(shared.contexts):
        context.close()
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
