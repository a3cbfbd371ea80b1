"""‹ › on a re-run cell swaps the whole turn, and "Insert as cell" is only on code the agent wrote.

In JupyterLab with its DEFAULT settings (widget state not saved), the offline model. A cell runs
twice, each run in a world of its own: plan A sets ``only_a`` and writes ``a_only.txt``, its
sibling plan B sets ``only_b`` and writes ``b_only.txt`` (on a slower model, so its live widget
can be watched). After ‹ to "answer 1 of 2" the conversation shows plan A's turn and nothing of
plan B's: what its prompt filled in, the prompt, tool cards with their "changed:" lines, answer
and status line; › brings B back. The same holds in the notebook reopened from its file and in its nbconvert HTML page; its
nbconvert Markdown is plan B's turn alone. The answers quote the tools' output in code blocks:
no "Insert as cell" on those, live or finished.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi new paging-demo
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.1))
letters = iter("AB")
def pick():
    global L
    L = next(letters)
    return L
print("setup-end")
"""

RERUN = """%%pi --tools python,write
Plan {pick()}: call python with {{"code": "only_{L.lower()} = 'plan {L}'\\nprint('ran plan {L}')"}}
call write with {{"path": "{L.lower()}_only.txt", "content": "branch {L}"}}"""

# each run's marks: what its prompt filled in, its prompt, what its tools changed and printed, its status line
A_SIDE = ("Filled in {pick()} = A", "Plan A:", "only_a", "a_only.txt", "ran plan A", "offline/echo · done")
B_SIDE = ("Filled in {pick()} = B", "Plan B:", "only_b", "b_only.txt", "ran plan B", "offline/slow · done")


def shows(text: str, side: tuple[str, ...], other: tuple[str, ...]) -> None:
    """``text`` (what a reader sees) holds every mark of one run's turn and none of the other's."""
    missing = [m for m in side if m not in text]
    mixed = [m for m in other if m in text]
    assert not missing and not mixed, f"missing {missing}, from the other run {mixed}:\n{text}"


def page_back_and_forth(page, out, where: str) -> None:
    """‹ then ›, checking what the conversation shows each time (``out``: the output, or the exported page)."""
    turn = out.locator(".pi-static").first
    shows(turn.inner_text(), B_SIDE, A_SIDE)  # inner_text: what is on screen, not what is folded away
    out.locator("button.pi-sib-nav", has_text="‹").first.click()
    assert "answer 1 of 2" in out.locator(".pi-sib-head").first.inner_text()
    shows(turn.inner_text(), A_SIDE, B_SIDE)
    assert "changed:" in out.locator(".pi-sib-swap .pi-world").first.inner_text()
    out.locator("button.pi-sib-nav", has_text="›").first.click()
    assert "answer 2 of 2" in out.locator(".pi-sib-head").first.inner_text(), where
    shows(turn.inner_text(), B_SIDE, A_SIDE)


def test_paging_swaps_the_whole_turn_live_reopened_and_exported(lab, tmp_path):
    lab.write_notebook("paging.ipynb", [SETUP, RERUN])
    lab.open_notebook("paging.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)
    lab.wait_for_static(1, "ran plan A", timeout=90)

    # the sibling, on the slow model: while it streams, the answer quoting the tools' output offers Copy, not Insert
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.content.model.cells.get(1).sharedModel.setSource("
                      "window.jupyterapp.shell.currentWidget.content.model.cells.get(1).sharedModel.getSource()"
                      ".replace('--tools python,write', '--tools python,write --model offline/slow'))")  # fmt: skip
    lab.run_cell(1)
    live = lab.cell(1).locator(".piav-root")
    quoted = live.locator(".piav-assistant .piav-codewrap")
    quoted.first.wait_for(timeout=90_000)
    assert quoted.locator("button.piav-copy").count() >= 1 and live.locator("button.piav-insert").count() == 0
    lab.wait_for_static(1, "answer 2 of 2", timeout=90)
    out = lab.cell(1).locator(".jp-OutputArea")
    assert out.locator(".pi-assistant .pi-text pre").count() >= 2  # the quoted outputs ...
    assert out.locator("button", has_text="Insert as cell").count() == 0  # ... are not offered as cells

    page_back_and_forth(lab.page, out, "live")
    out.locator("button.pi-sib-nav", has_text="‹").click()
    lab.screenshot("paging_answer_1_of_2.png", lab.cell(1))
    out.locator("button.pi-sib-nav", has_text="›").click()

    # reopened from its file (saved, signed, read again): the same paging
    lab.save()
    lab.reload()
    out = lab.cell(1).locator(".jp-OutputArea")
    out.locator("button.pi-sib-nav").first.wait_for(timeout=30_000)
    page_back_and_forth(lab.page, out, "reopened")

    # exported: the HTML page pages the same way; the Markdown is plan B's turn alone, never mixed
    src = lab.server.root / "paging.ipynb"
    for fmt in ("html", "markdown"):
        subprocess.run(
            [sys.executable, "-m", "nbconvert", "--to", fmt, "--output-dir", str(tmp_path), str(src)], check=True, capture_output=True
        )
    md = (tmp_path / "paging.md").read_text()
    assert "answer 2 of 2" in md and "only\\_b" in md and "only\\_a" not in md and "Plan A" not in md
    lab.page.goto((tmp_path / "paging.html").as_uri())
    lab.page.locator("button.pi-sib-nav").first.wait_for(timeout=30_000)
    page_back_and_forth(lab.page, lab.page.locator("body"), "exported")
