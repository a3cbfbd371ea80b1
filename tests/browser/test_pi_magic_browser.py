"""``%%pi`` in a real JupyterLab with headless Chromium: the product as a user meets it.

A notebook of real ``%%pi`` cells runs the offline ``typewriter`` model (30 ms per delta):
the answer streams into the AgentView in many DOM steps; a ``--background`` run is stopped
with the widget's Stop button and its partial answer is persisted as ``aborted``; after a page
reload the transcript is still there. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/typewriter"
%config PiMagics.thinking = "low"
%pi new browser-demo
# A slow offline model for the background run, so Stop lands mid-answer even on a loaded machine.
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.25))
print("setup-end")
"""

BLOCKING = "%%pi\n" + "Tell me about the loss curve. " + "It diverges after step two hundred. " * 40

BACKGROUND = "%%pi --background --name job --model offline/slow\n" + "A long question that takes a while to answer. " * 12

CHECK = """
res = job.result(timeout=30)
from pi_jupyter import Session, current_session
last = Session.open(current_session().path, readonly=True).context().messages[-1]
print("BG", res.stop_reason, last.stop_reason, bool(last.text), "check-end")
"""


def test_pi_cells_stream_stop_and_survive_a_reload(lab):
    lab.write_notebook("pi_magic.ipynb", [SETUP, BLOCKING])
    lab.open_notebook("pi_magic.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")

    # a blocking cell: the widget grows while the kernel is busy with the cell
    lab.run_cell(1)
    view = lab.page.locator(".piav-root").nth(0)
    view.wait_for(timeout=30_000)
    assert lab.watch_stream(view) >= 5, "the answer did not stream in steps"
    assert "It diverges after step two hundred" in view.inner_text()
    assert "offline/typewriter" in view.locator(".piav-status").inner_text()
    lab.wait_for_output(1, "pi: stop")
    lab.screenshot("pi_cell.png", view)

    # a background run, stopped from the widget
    lab.append_and_run(BACKGROUND)
    bg = lab.page.locator(".piav-root").nth(1)
    bg.wait_for(timeout=30_000)
    lab.page.wait_for_function(
        "() => { const r = document.querySelectorAll('.piav-root')[1];"
        " const t = r && r.querySelector('.piav-assistant .piav-text');"
        " return r.dataset.state === 'streaming' && t && t.innerText.length > 20; }",
        timeout=30_000,
    )
    lab.screenshot("pi_cell_background.png", bg)
    # the answer is streaming, so the thinking before it is over
    assert bg.locator(".piav-thinking-label").inner_text() == "Thought"
    bg.locator("button.piav-stop").click()
    lab.page.wait_for_function("() => document.querySelectorAll('.piav-root')[1].dataset.state === 'aborted'", timeout=30_000)
    lab.append_and_run(CHECK)
    out = lab.wait_for_output(3, "check-end")
    assert "BG aborted aborted True" in out, out

    # reload: the transcript comes back
    lab.save()
    lab.reload()
    lab.page.wait_for_function(
        "() => { const r = document.querySelector('.piav-root'); return r && r.innerText.includes('It diverges after step two hundred'); }",
        timeout=60_000,
    )
    lab.screenshot("pi_cell_reloaded.png", lab.page.locator(".piav-root").nth(0))
