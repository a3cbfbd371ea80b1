"""The buttons of a finished ``%%pi`` output in JupyterLab (DEFAULT settings), through the page bridge.

A cell re-run three times (the offline model; each run's prompt holds a new number) shows
"answer 3 of 3"; ‹ pages back to answer 1, "continue from this one" checks it out through the
bridge while the kernel lives, and the next cell continues from answer 1 (its context holds
number 1, not 2 or 3). "forget this" on that cell's prompt writes a ``context_edit`` in the
session file and the output marks the prompt "not sent any more". After a kernel restart the
same button copies the command instead and says so, also once the new kernel has a bridge for
the same session (outputs act only through the kernel that wrote them).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
import itertools
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
%pi new actions-demo
counter = itertools.count(1)
# a slow offline model, so a click lands while the answer streams
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.25))
print("setup-end")
"""

REOPEN = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi open actions-demo
print("reopened")
"""

RERUN = "%%pi\nremember the number {next(counter)}"

NEXT = "%%pi\nwhich number did I ask you to remember?"

LIVE = "%%pi --model offline/slow\nmy API key is in the next line; forget this prompt while you answer. " + "Some long context. " * 12

CHECK = """
from pi_jupyter import Session, current_session
from pi_jupyter.messages import text_of
s = Session.open(current_session().path, readonly=True)
said = [text_of(m.content, "") for m in s.context().messages if m.role == "user"]
edits = [e["targetId"] for e in s.raw_entries() if e["type"] == "context_edit"]
print("CTX", [t for t in said if "number" in t], "EDITS", edits, "check-end")
"""


def test_continue_from_an_earlier_answer_and_forget_a_prompt_from_the_static_output(lab, tmp_path):
    lab.write_notebook("actions.ipynb", [SETUP, RERUN, NEXT, CHECK])
    lab.open_notebook("actions.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    for n in (1, 2, 3):
        lab.run_cell(1)
        lab.wait_for_static(1, f"remember the number {n}", timeout=90)
    lab.wait_for_static(1, "answer 3 of 3")
    out = lab.cell(1).locator(".jp-OutputArea")
    this_answer = out.locator(".pi-static > .pi-turn > .pi-entry", has=lab.page.locator(".pi-assistant")).last
    assert "remember the number 3" in this_answer.inner_text()
    for _ in range(2):
        out.locator("button.pi-sib-nav", has_text="‹").click()
    assert "answer 1 of 3" in out.locator(".pi-sib-head").inner_text()
    # paged in place, as a chat app does: answer 1 stands where answer 3 stood, answer 3 is out of sight
    first = out.locator(".pi-sib-swap")
    assert "remember the number 1" in first.inner_text() and this_answer.is_hidden()
    swap_at, box_at = first.bounding_box(), out.locator(".pi-siblings").bounding_box()
    assert swap_at["y"] < box_at["y"], "the other answer replaces this one above the pager, not below it"
    assert out.locator("details.pi-sib").evaluate_all("ds => ds.every((d) => getComputedStyle(d).display === 'none')")
    lab.screenshot("static_siblings_paged.png", lab.cell(1))
    first.locator("button.pi-continue").click()
    note = first.locator(".pi-act-note")
    note.filter(has_text="cells below continue from here").wait_for(timeout=30_000)
    assert note.get_attribute("data-ok") == "1"
    lab.screenshot("static_actions_continue.png", lab.cell(1))

    lab.run_cell(2)
    lab.wait_for_static(2, "which number did I ask you to remember?", timeout=90)
    lab.run_cell(3)
    ctx = lab.wait_for_output(3, "check-end")
    assert "CTX ['remember the number 1', 'which number did I ask you to remember?'] EDITS []" in ctx, ctx

    # "forget this" on the new cell's prompt: a context_edit in the file, the output says so
    prompt = lab.cell(2).locator(".pi-entry", has=lab.page.locator(".pi-user"))
    prompt.locator("button.pi-forget").click()
    # the kernel re-renders the output through its display id: the prompt is marked, with no button left
    forgotten = lab.cell(2).locator(".pi-entry-forgotten", has=lab.page.locator(".pi-user"))
    forgotten.wait_for(timeout=30_000)
    assert "which number did I ask you to remember?" in forgotten.inner_text() and "not sent any more" in forgotten.inner_text()
    assert forgotten.locator("button.pi-forget").count() == 0
    lab.screenshot("static_actions_forget.png", lab.cell(2))
    lab.run_cell(3)
    ctx = lab.wait_for_output(3, "EDITS ['")
    assert "CTX ['remember the number 1'] EDITS ['" in ctx, ctx

    # "forget this" in the live widget while the answer streams: done when the run ends, and marked
    lab.append_and_run(LIVE)
    live = lab.cell(4).locator(".piav-root")
    live.locator(".piav-item.piav-user .piav-forget").click(timeout=30_000)
    live.locator(".piav-act-note", has_text="will be forgotten when this run ends").wait_for(timeout=30_000)
    lab.screenshot("live_forget.png", lab.cell(4))
    assert live.locator(".piav-forgotten").count() == 1 and lab.cell(4).locator(".piav-root").count() == 1  # still streaming
    lab.wait_for_static(4, "not sent any more", timeout=120)
    static_prompt = lab.cell(4).locator(".pi-entry-forgotten")
    assert "forget this prompt while you answer" in static_prompt.inner_text()
    lab.run_cell(3)
    ctx = lab.wait_for_output(3, "EDITS ['")
    edits = ctx.split("EDITS ")[1]
    assert edits.count("'") == 4, ctx  # two edits: the static forget and the live one
    assert "forget this prompt" not in ctx.split("EDITS")[0]

    # after a kernel restart (as the toolbar's restart does it) the old outputs' bridge is gone:
    # the button copies the command and says so, at once
    lab.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    lab.wait_for_kernel()
    out.locator("button.pi-sib-nav", has_text="›").click()
    second = out.locator(".pi-sib-swap")
    assert "remember the number 2" in second.inner_text()
    second.locator("button.pi-continue").click()
    note = second.locator(".pi-act-note")
    note.filter(has_text="run it in a cell: %pi checkout ").wait_for(timeout=10_000)  # "copied — " too where the clipboard is allowed
    assert note.get_attribute("data-ok") == "0"
    # the new kernel opens the same session and runs a cell: a live bridge for that session again, with
    # another token; the old output still does not act through it (no cross-talk between kernels)
    lab.append_and_run(REOPEN)
    lab.wait_for_output(5, "reopened")
    lab.append_and_run("%%pi\nhello from the new kernel")
    lab.wait_for_static(6, "hello from the new kernel", timeout=90)
    session = lab.cell(1).locator(".pi-static").get_attribute("data-pi-session")
    tokens = lab.page.evaluate("(s) => (window.__piJupyter.bridges[s] || []).filter((b) => b.alive()).map((b) => b.token)", session)
    assert len(tokens) == 1 and tokens[0] != lab.cell(1).locator(".pi-static").get_attribute("data-pi-bridge")
    assert lab.cell(6).locator(".pi-static").get_attribute("data-pi-bridge") == tokens[0]
    note.evaluate("(n) => { n.textContent = ''; n.dataset.ok = ''; }")
    second.locator("button.pi-continue").click()
    note.filter(has_text="run it in a cell: %pi checkout ").wait_for(timeout=10_000)
    assert note.get_attribute("data-ok") == "0"

    # an untrusted copy (no scripts): the earlier answers are still there, folded, with their commands; no dead buttons
    import json

    import nbformat

    lab.save()
    nb = nbformat.reads(json.dumps(json.loads((lab.server.root / "actions.ipynb").read_text())), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("A copy from a colleague."))  # new content: no longer signed
    nbformat.write(nb, lab.server.root / "actions-untrusted.ipynb")
    lab.open_notebook("actions-untrusted.ipynb")
    out = lab.cell(2).locator(".jp-OutputArea")
    out.locator("details").first.wait_for(timeout=30_000)
    text = out.text_content()
    assert "answer 3 of 3" in text and "remember the number 1" in text and "remember the number 2" in text
    assert text.count("%pi checkout ") == 3  # answer 3 (to come back), answers 1 and 2
    assert lab.page.locator("button.pi-continue, button.pi-forget, button.pi-sib-nav").count() == 0
    assert "not sent any more" in lab.cell(5).locator(".jp-OutputArea").text_content()  # the live forget, saved
    assert "not sent any more" in lab.cell(3).locator(".jp-OutputArea").text_content()  # the bridge's re-render, saved
    lab.screenshot("static_actions_untrusted.png", lab.cell(2))

    # an nbconvert page with its scripts running: ‹ › pages, and no buttons that have no kernel to act on
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path), str(lab.server.root / "actions.ipynb")],
        check=True,
        capture_output=True,
    )
    lab.page.goto((tmp_path / "actions.html").as_uri())
    lab.page.locator("button.pi-sib-nav").first.wait_for(timeout=30_000)
    assert lab.page.locator("button.pi-continue, button.pi-forget").count() == 0
    assert "%pi checkout " in lab.page.locator(".pi-siblings").first.text_content()


def test_continue_from_this_one_in_notebook_7(notebook7):
    nb = notebook7
    nb.write_notebook("actions7.ipynb", [SETUP, RERUN, CHECK])
    nb.open_notebook("actions7.ipynb")
    nb.run_cell(0)
    nb.wait_for_output(0, "setup-end")
    for n in (1, 2):
        nb.run_cell(1)
        nb.wait_for_static(1, f"remember the number {n}", timeout=90)
    out = nb.cell(1).locator(".jp-OutputArea")
    out.locator("button.pi-sib-nav", has_text="‹").click()
    first = out.locator(".pi-sib-swap")
    assert "remember the number 1" in first.inner_text()
    first.locator("button.pi-continue").click()
    first.locator(".pi-act-note", has_text="cells below continue from here").wait_for(timeout=30_000)
    nb.run_cell(2)
    assert "CTX ['remember the number 1'] EDITS []" in nb.wait_for_output(2, "check-end")
