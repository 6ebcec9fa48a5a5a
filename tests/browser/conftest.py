"""Shared fixtures for the browser tests: Debian's Chromium driven by Playwright.

The tests never download a browser: they launch the system ``chromium``
(``CHROMIUM`` overrides the path) through Playwright's ``executable_path``.
Every request that does not go to the local server under test is refused, so
a page that needs the network to look right fails its test.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    """The Chromium binary to drive, or None when none is installed."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """One headless Chromium for the whole session."""
    path = chromium_path()
    if path is None:
        pytest.fail("Chromium is not installed: run .ci/system-deps (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def offline_context(browser, allowed_origin: str, *, width: int = 1280, height: int = 900):
    """A browser context at the given width that refuses every request not to ``allowed_origin``.

    Returns the context and the list that collects the refused URLs.
    """
    context = browser.new_context(viewport={"width": width, "height": height})
    refused: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(allowed_origin) or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    context.route("**/*", route)
    return context, refused
