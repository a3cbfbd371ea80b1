"""A branch carries its world, in JupyterLab with its DEFAULT settings (widget state not saved), the offline model.

The issue's three cases as a user meets them: a cell run twice (plan A, then its sibling plan B,
each writing notes.txt), "continue from this one" on the first answer brings plan == 'A' and
notes.txt == "branch A" back (the button's note says so); a grid of four repeats prints 1, 1,
1, 1 and the notebook's own variables are as they were.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi new world-demo
letters = iter("AB")
def pick():
    global L
    L = next(letters)
    return L
mine = [1, 2]
print("setup-end")
"""

RERUN = """%%pi --tools python,write
call python with {{"code": "plan = '{pick()}'"}}
call write with {{"path": "notes.txt", "content": "branch {L}"}}"""

CHECK = "print('WORLD', plan, open('notes.txt').read(), mine, 'check-end')"

GRID = """%%pi --tools python --repeat 4
use python
```python
counter = globals().get('counter', 0) + 1; print('count', counter); mine.append(counter)
```"""


def test_rerun_continue_from_the_first_answer_and_a_grid_keep_their_worlds(lab):
    lab.write_notebook("world.ipynb", [SETUP, RERUN, CHECK, GRID, CHECK.replace("plan, open('notes.txt').read(), ", "counter, ")])
    lab.open_notebook("world.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)
    lab.wait_for_static(1, "branch A", timeout=90)
    lab.run_cell(1)
    lab.wait_for_static(1, "answer 2 of 2", timeout=90)
    assert "pi: removed plan and notes.txt (set only on the branch left)" in lab.output_text(1)
    lab.run_cell(2)
    assert "WORLD B branch B [1, 2] check-end" in lab.wait_for_output(2, "check-end")

    out = lab.cell(1).locator(".jp-OutputArea")
    out.locator("button.pi-sib-nav", has_text="‹").click()
    first = out.locator(".pi-sib-swap")  # the earlier answer, swapped in place of the current one
    first.locator("button.pi-continue").click()
    note = first.locator(".pi-act-note")
    note.filter(has_text="restored plan and notes.txt").wait_for(timeout=30_000)
    lab.screenshot("world_continue.png", lab.cell(1))
    lab.run_cell(2)
    assert "WORLD A branch A [1, 2] check-end" in lab.wait_for_output(2, "WORLD A")

    lab.run_cell(3)
    grid = lab.wait_for_output(3, "pi: restored", timeout=120)
    assert "restored counter and mine" in grid
    lab.run_cell(4)
    assert "WORLD 1 [1, 2, 1] check-end" in lab.wait_for_output(4, "check-end")
    lab.screenshot("world_grid.png", lab.cell(3))


LIVE = """%%pi --tools python
call python with {{"code": "plan = 'A'\\nnotes = [1, 2, 3]"}}
call python with {{"code": "import time\\ntime.sleep(8)"}}"""


def test_the_live_tool_card_says_what_the_call_changed(lab):
    """While the run goes on (the second call sleeps), the first call's live card ends with its changed: line."""
    lab.write_notebook("world-live.ipynb", [SETUP, LIVE])
    lab.open_notebook("world-live.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)
    out = lab.cell(1).locator(".jp-OutputArea")
    line = out.locator(".piav-tool .piav-world")
    line.first.wait_for(state="attached", timeout=60_000)
    assert line.first.text_content() == "changed: set notes (list of 3), plan"
    out.locator(".piav-tool:has(.piav-world) > summary").first.click()  # a finished call's card is folded: open it as a user would
    line.first.wait_for(state="visible", timeout=10_000)
    assert out.locator(".piav-tool-running").count() == 1  # taken while the run still goes on
    lab.screenshot("world_live_card.png", lab.cell(1))
    lab.wait_for_static(1, "changed: set notes (list of 3), plan", timeout=60)  # and the saved output says the same


TWO = """%%pi --tools python,write
WHICH step
call python with {{"code": "plan = 'WHICH'"}}
call write with {{"path": "notes.txt", "content": "branch WHICH"}}"""


def test_the_tree_panel_rewinds_the_world_alone_or_both(lab):
    """The side panel's "what moves" choice: *world only* brings a node's variables and files into the conversation, which stays."""
    sent = "len(__import__('pi_jupyter').current_session().context().messages)"
    check = f"print('WORLD', plan, open('notes.txt').read(), {sent}, 'check-end')"
    cells = [SETUP, TWO.replace("WHICH", "first"), TWO.replace("WHICH", "second"), "%pi tree", check]
    lab.write_notebook("world-tree.ipynb", cells)
    lab.open_notebook("world-tree.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    for i in (1, 2):
        lab.run_cell(i)
        lab.wait_for_static(i, "branch ", timeout=90)
    lab.run_cell(4)
    before = lab.wait_for_output(4, "check-end")
    assert "WORLD second branch second" in before
    messages = before.split("branch second ")[1].split(" ")[0]
    lab.run_cell(3)
    root = lab.page.locator(".pitv-root").first
    root.wait_for(timeout=30_000)
    root.locator("svg g.node", has_text="first step").first.click()
    panel = root.locator(".pitv-panel")
    panel.locator("select.pitv-rewind").select_option("world")
    panel.locator("button.pitv-act-checkout").click()
    root.locator(".pitv-note", has_text="brought the world of").wait_for(timeout=30_000)
    assert "(the conversation did not move): restored plan and notes.txt" in root.locator(".pitv-note").inner_text()
    lab.screenshot("world_tree_rewind.png", root)
    lab.run_cell(4)
    assert f"WORLD first branch first {messages} check-end" in lab.wait_for_output(4, "WORLD first")  # the conversation is where it was
