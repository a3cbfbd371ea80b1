"""``%%pi`` in a real JupyterLab with headless Chromium: the product as a user meets it.

A notebook of real ``%%pi`` cells runs the offline ``typewriter`` model (30 ms per delta):
the answer streams into the AgentView in many DOM steps and, once the run ends, the widget
gives way to the static rendering of the same conversation. The widget's Stop button stops a
*blocking* cell (the kernel hears it while the cell waits): the partial answer is kept as
``aborted`` and the cell ends in a short ``RunStopped`` error, as an interrupted cell does. A
``--background`` run stopped the same way says "stopped", not "running". After a page reload
everything is still there. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/typewriter"
%config PiMagics.thinking = "low"
%pi new browser-demo
# A slow offline model, so Stop lands mid-answer even on a loaded machine.
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.25))
print("setup-end")
"""

BLOCKING = "%%pi\n" + "Tell me about the loss curve. " + "It diverges after step two hundred. " * 40

STOPPED = "%%pi --model offline/slow\n" + "A long question, stopped while the cell blocks. " * 12

BACKGROUND = "%%pi --background --name job --model offline/slow\n" + "A long question that takes a while to answer. " * 12

CHECK = """
res = job.result(timeout=30)
from pi_jupyter import Session, current_session
msgs = [m for m in Session.open(current_session().path, readonly=True).context().messages if m.role == "assistant"]
print("BG", res.stop_reason, [m.stop_reason for m in msgs[-2:]], all(m.text for m in msgs[-2:]), "check-end")
"""


def test_pi_cells_stream_stop_and_survive_a_reload(lab):
    lab.write_notebook("pi_magic.ipynb", [SETUP, BLOCKING])
    lab.open_notebook("pi_magic.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")

    # a blocking cell: the widget grows while the kernel is busy with the cell
    lab.run_cell(1)
    view = lab.cell(1).locator(".piav-root")
    view.wait_for(timeout=30_000)
    assert lab.watch_stream(view) >= 5, "the answer did not stream in steps"
    lab.screenshot("pi_cell.png", lab.cell(1))
    out = lab.wait_for_static(1, "It diverges after step two hundred")
    assert "offline/typewriter · done" in out and "pi: stop" in out
    lab.screenshot("pi_cell_static.png", lab.cell(1))

    # re-run the cell: a sibling answer; the output says "answer 2 of 2" and pages back with ‹
    lab.run_cell(1)
    lab.wait_for_static(1, "answer 2 of 2")
    lab.cell(1).locator("button.pi-sib-nav", has_text="‹").click()
    head = lab.cell(1).locator(".pi-sib-head")
    assert "answer 1 of 2" in head.inner_text()
    # the earlier answer takes the place of this one, as a chat app swaps its answers
    earlier = lab.cell(1).locator(".pi-sib-swap")
    assert earlier.is_visible() and "It diverges after step two hundred" in earlier.inner_text()
    assert "%pi checkout " in earlier.inner_text()
    lab.screenshot("pi_cell_siblings.png", lab.cell(1))

    # Stop on a blocking cell: heard while the cell waits; the cell ends like an interrupted one
    lab.append_and_run(STOPPED)
    out = lab.stop_while_streaming(2)
    lab.wait_for_output(2, "RunStopped")
    out = lab.output_text(2)
    assert "partial answer is kept as entry" in out and "Traceback" not in out, out
    assert len([line for line in out.splitlines() if "RunStopped" in line or "Run All" in line]) == 2
    lab.screenshot("pi_cell_stopped.png", lab.cell(2))

    # a background run, stopped from the widget: its line no longer says "running"
    lab.append_and_run(BACKGROUND)
    lab.cell(3).locator(".piav-root").wait_for(timeout=30_000)
    lab.page.wait_for_function(
        "() => { const r = document.querySelectorAll('.jp-Notebook .jp-Cell')[3].querySelector('.piav-root');"
        " const l = r && r.querySelector('.piav-thinking-label'); const t = r && r.querySelector('.piav-assistant .piav-text');"
        " return r && r.dataset.state === 'streaming' && t && t.innerText.length > 20 && l; }",
        timeout=30_000,
    )
    # the answer is streaming, so the thinking before it is over
    assert lab.cell(3).locator(".piav-thinking-label").inner_text() == "Thought"
    lab.stop_while_streaming(3)
    lab.wait_for_output(3, "(stopped)")
    assert "(running)" not in lab.output_text(3)
    lab.append_and_run(CHECK)
    out = lab.wait_for_output(4, "check-end")
    assert "BG aborted ['aborted', 'aborted'] True" in out, out

    # reload: the transcript comes back
    lab.save()
    lab.reload()
    lab.wait_for_static(1, "It diverges after step two hundred")
    lab.screenshot("pi_cell_reloaded.png", lab.cell(1))
