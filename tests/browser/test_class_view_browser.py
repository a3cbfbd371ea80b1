"""The class view page in headless Chromium: no network, a cell's click shows every answer, a student's click their tree.

The page is written by ``pi-jupyter class`` over a folder of sessions written by real agents
(``tests/classroom.py``), a damaged file and a student whose name and answers carry markup.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from classroom import student  # noqa: E402
from offline_page import offline_page  # noqa: E402

from pi_jupyter.cli.main import main  # noqa: E402

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
EVIL = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def test_the_class_page_opens_answers_and_trees_without_network(browser, tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    student(folder, "ada")
    student(folder, "bob", values={"file": "missing.csv"}, rerun="c-read")
    student(folder, "cy", cells=["c-intro", "c-read"])
    student(folder, "dee" + EVIL.replace("/", "_"), values={"guess": EVIL})
    (folder / "broken.jsonl").write_text("{not json\n")
    out = tmp_path / "class.html"
    assert main(["class", str(folder), "-o", str(out)]) == 1  # one file had a problem
    with offline_page(browser, out, width=1300, height=900) as page:
        assert "broken.jsonl" in page.locator(".pic-problems").inner_text()
        table = page.locator(".pic-table")
        assert table.locator("tbody tr").count() == 4
        assert "1 never ran it" in table.locator("tfoot").inner_text()
        page.screenshot(path=str(ARTIFACTS / "class_view.png"))
        # bob's read cell: its answers open, his is marked, the others' are side by side
        bob = table.locator("tbody tr", has_text="bob").locator("td.pic-cell").nth(1)
        assert "2 tool errors" in bob.inner_text() and "2 runs" in bob.inner_text()
        bob.locator("a").click()
        opened = page.locator("details.pic-answers[open]")
        assert opened.count() == 1 and "use read on" in opened.locator("summary").inner_text()
        assert opened.locator(".pic-card").count() == 5  # the common answer, then four students
        assert "bob" in page.locator(".pic-card.pic-hl").inner_text()
        page.screenshot(path=str(ARTIFACTS / "class_view_answers.png"))
        # a student's name opens their tree, the re-run cell as two branches
        table.locator("th.pic-student a", has_text="bob").click()
        tree = page.locator("details.pic-tree[open]")
        assert tree.count() == 1 and tree.locator("li").count() >= 4
        assert "2 tool errors" in tree.inner_text() or "1 tool error" in tree.inner_text()
        assert EVIL in page.locator("body").text_content()  # the markup is text (in an answer)
        assert EVIL.replace("/", "_") in table.inner_text()  # and in a name
