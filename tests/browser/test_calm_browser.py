"""A ``%%pi`` output is calm by default, in JupyterLab with its default settings (headless Chromium).

"forget this" is not drawn under every message: it shows while the pointer is on a message. A
code block in an answer offers "Copy" and "Insert as cell", and "Insert as cell" puts the code
in a new cell right below the output's cell, in the live widget while the answer streams and in
the finished (static) output. The recorded system prompt is one line in plain words.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi new calm-demo
from pi_jupyter.providers import offline_model, register_model
register_model(offline_model("slow", delta_delay_s=0.2))
print("setup-end")"""

ASK = """%%pi
Show me the code:
```python
total = sales.revenue.sum()
```"""

SLOW = (
    """%%pi --model offline/slow
And once more, slowly:
```python
by_region = sales.groupby("region").revenue.sum()
```
"""
    + "Take your time. " * 30
)

# how visible an element is: the product of its own and its ancestors' opacity
OPACITY = (
    "(el) => { let o = 1; for (let n = el; n && n.nodeType === 1; n = n.parentElement)"
    " o *= Number(getComputedStyle(n).opacity); return o; }"
)


def _sources(lab) -> list[str]:
    return lab.page.evaluate(
        "() => { const m = window.jupyterapp.shell.currentWidget.content.model;"
        " return Array.from({length: m.cells.length}, (_, i) => m.cells.get(i).sharedModel.getSource()); }"
    )


def test_forget_shows_on_hover_and_code_goes_into_a_new_cell(lab):
    lab.write_notebook("calm.ipynb", [SETUP, ASK, "print('the last cell')"])
    lab.open_notebook("calm.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)
    out = lab.wait_for_static(1, "total = sales.revenue.sum()", timeout=90)
    assert "system prompt:" not in out and "sections preamble" not in out  # the recorded prompt, in words
    assert "The model's instructions were set; tools offered:" in out
    cell = lab.cell(1)
    forget = cell.locator("button.pi-forget")
    assert forget.count() >= 2
    lab.page.mouse.move(0, 0)
    seen = [b.evaluate(OPACITY) for b in forget.all()]
    assert all(o < 0.05 for o in seen), f"no button under every message: {seen}"
    lab.screenshot("calm_static.png", cell)
    answer = cell.locator(".pi-entry", has=lab.page.locator(".pi-assistant")).last
    answer.hover()
    lab.settled(answer)  # the hover's fade has ended
    assert answer.locator("> .pi-forget-bar button.pi-forget").evaluate(OPACITY) > 0.8  # on hover, one button for it
    code = answer.locator(".pi-text pre").first
    code.hover()
    insert = code.locator("button", has_text="Insert as cell")
    lab.settled(code)
    assert insert.evaluate(OPACITY) > 0.5 and code.locator("button", has_text="Copy").count() == 1
    lab.screenshot("calm_static_hover.png", cell)
    insert.click()
    lab.page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.model.cells.length === 4", timeout=10_000)
    assert _sources(lab)[2] == "total = sales.revenue.sum()"  # right below the output's cell
    assert _sources(lab)[3] == "print('the last cell')"

    # the live widget, while the answer streams: the same button, the same new cell
    lab.run_cell(3)  # not a %%pi cell: just to move on
    lab.append_and_run(SLOW)
    live = lab.cell(4).locator(".piav-root")
    block = live.locator(".piav-assistant .piav-codewrap").first  # a code block of the answer, as it streams
    block.wait_for(timeout=60_000)
    assert live.get_attribute("data-state") != "done", "the answer is still streaming"
    block.hover()
    block.locator("button.piav-insert").click()
    lab.page.wait_for_function("() => window.jupyterapp.shell.currentWidget.content.model.cells.length === 6", timeout=10_000)
    assert _sources(lab)[5] == 'by_region = sales.groupby("region").revenue.sum()'
    lab.screenshot("calm_live.png", lab.cell(4))
