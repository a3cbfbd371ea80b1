"""A page opened from a file in Chromium, watched: it must fetch nothing and raise nothing (script errors, dialogs)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def offline_page(browser: Any, path: Path, *, width: int = 1280, height: int = 860) -> Iterator[Any]:
    """``path`` open in a new page; on leaving, asserts no network request, no page error and no dialog happened."""
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    try:
        page.goto(path.as_uri())
        yield page
    finally:
        context.close()
    assert requests == [] and errors == []
