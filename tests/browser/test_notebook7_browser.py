"""``%%pi`` and ``%pi tree`` in Jupyter Notebook 7 (not JupyterLab), in headless Chromium.

Notebook 7 loads widgets through the same ipywidgets manager as JupyterLab, but it is a
different application (its own shell, page and URL scheme), so the widgets are checked there
too: the answer streams into the AgentView in several DOM steps, a ``--background`` run stops
from the widget's Stop button, and the TreeView draws the session and answers a click on a
node. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/typewriter"
%config PiMagics.thinking = "off"
%pi new notebook7-demo
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.25))
print("setup-end")
"""

BLOCKING = "%%pi\n" + "Notebook 7 shows the same widget. " * 40

BACKGROUND = "%%pi --background --name job --model offline/slow\n" + "A question answered slowly. " * 10

CHECK = """
res = job.result(timeout=30)
print("BG", res.stop_reason, "check-end")
"""


def test_agent_view_and_tree_view_in_notebook_7(notebook7):
    nb = notebook7
    nb.write_notebook("nb7.ipynb", [SETUP, BLOCKING])
    nb.open_notebook("nb7.ipynb")
    nb.run_cell(0)
    nb.wait_for_output(0, "setup-end")

    nb.run_cell(1)
    view = nb.cell(1).locator(".piav-root")
    view.wait_for(timeout=30_000)
    assert nb.watch_stream(view) >= 5, "the answer did not stream in steps"
    # the finished run leaves its static rendering in place of the widget
    assert "offline/typewriter · done" in nb.wait_for_static(1, "Notebook 7 shows the same widget.")
    nb.screenshot("notebook7_agent_view.png", nb.cell(1))
    nb.wait_for_output(1, "pi: stop")

    nb.append_and_run(BACKGROUND)
    nb.cell(2).locator(".piav-root").wait_for(timeout=30_000)
    nb.stop_while_streaming(2)
    nb.append_and_run(CHECK)
    assert "BG aborted" in nb.wait_for_output(3, "check-end")

    nb.append_and_run("%pi tree")
    tree = nb.page.locator(".pitv-root").first
    tree.wait_for(timeout=30_000)
    node = tree.locator("svg g.node", has_text="Notebook 7 shows")
    node.first.wait_for(timeout=30_000)
    node.first.click()
    nb.page.wait_for_function(
        "() => { const p = document.querySelector('.pitv-root .pitv-panel'); return p && p.innerText.includes('Notebook 7 shows'); }",
        timeout=30_000,
    )
    nb.screenshot("notebook7_tree_view.png", tree)
