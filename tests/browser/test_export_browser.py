"""The exported session page in headless Chromium: no network, the tree drawn, a click on a node shows its branch, search.

The page is opened from a file with every network request recorded: it must make none.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_export import _two_branches  # noqa: E402

from pi_jupyter.cli.main import main  # noqa: E402


def test_export_page_switches_branches_by_the_tree_and_searches(browser, tmp_path):
    s = _two_branches(tmp_path)
    out = tmp_path / "study.html"
    assert main(["export", s.path, "-o", str(out)]) == 0
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    try:
        page.goto(out.as_uri())
        transcript = page.locator("#transcript")
        # the current branch (the right one) is shown first, with its compaction summary
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The right branch explodes.')")
        assert "The left branch converges." not in transcript.inner_text()
        assert "Find a stable rate." in transcript.inner_text()
        branches = page.locator("a[data-leaf]").all_inner_texts()
        assert len(branches) == 2 and any(b.startswith("baseline") for b in branches), branches
        # a click on the node of the left branch's last turn shows that branch (its label too)
        node = page.locator("#tree g.node", has_text="The left branch").first
        node.click()
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The left branch converges.')")
        text = transcript.inner_text()
        assert "The right branch explodes." not in text and "baseline" in text and "1.0" in text
        assert "First question about the loss." in text  # the shared start of both branches
        # search finds text on any branch; its hit shows that branch
        page.fill("#search", "explodes")
        hit = page.locator("#hits a").first
        hit.wait_for()
        hit.click()
        page.wait_for_function("() => document.querySelector('#transcript').innerText.includes('The right branch explodes.')")
        page.screenshot(path=str(Path(__file__).resolve().parents[2] / "artifacts" / "export_page.png"))
    finally:
        context.close()
    assert requests == []  # self-contained: nothing fetched
