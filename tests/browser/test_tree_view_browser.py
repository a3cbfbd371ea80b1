"""TreeView in a real JupyterLab, a real ipykernel, an offline Agent and headless Chromium.

The notebook builds a small branched session with the offline model and shows
``TreeView(agent, runner=KernelRunner())``. In the page: a click on a node fills the side
panel with that turn's messages; "Check out" moves the leaf there (checked in the SVG and in
the kernel: the session's leaf and the agent's rebuilt context); search finds a label; the
keyboard zooms; shift-clicked leaves are compared in the side panel; "Fork" writes a new
session file and the view redraws on it; a prompt run from another cell adds a node without
any click (the debounced redraw). Screenshots, light and dark, go to ``artifacts/``.
"""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

SETUP = """
import os
from pi_jupyter import Agent
from pi_jupyter.session import Session
from pi_jupyter.notebook.tree_view.view import TreeView
from pi_jupyter.notebook.runner import KernelRunner

path = os.path.abspath("tree_browser.jsonl")
if os.path.exists(path):
    os.remove(path)
s = Session.create(path=path)
agent = Agent(s, model="offline/echo")
first = await agent.prompt("What is in the data?")
second = await agent.prompt("Plot the second column")
await agent.checkout(first.entry_ids[-1])
third = await agent.prompt("Try a log scale instead")
s.label(first.entry_ids[-1], "baseline")
view = TreeView(agent, runner=KernelRunner())
print("setup ok", len(view.nodes), second.entry_ids[-1], "setup-end")
view
"""

CHECK_CHECKOUT = """
print("LEAF", s.leaf_id == second.entry_ids[-1], len(agent.messages), len(s.context().messages))
"""

CHECK_FORK = """
fork = view.last_fork
print("FORK", fork is not None and os.path.exists(fork.path), view.session is fork, view.agent is not agent, os.path.basename(fork.path))
"""

LARGE = """
from pi_jupyter.views import sample_session
big = TreeView(sample_session(2000, seed=1))
print("LARGE", len(big.nodes), sum(n["folded"] for n in big.nodes.values()))
big
"""

PROMPT_AFTER_FORK = """
await view.agent.prompt("Now on the forked file")
print("PROMPTED", view.agent.session.path == view.last_fork.path)
"""


def _node(root, text: str):
    return root.locator("svg g.node", has_text=text)


def _scale(root) -> float:
    transform = root.locator(".pitv-stage").get_attribute("style") or ""
    m = re.search(r"scale\(([\d.]+)\)", transform)
    return float(m.group(1)) if m else 0.0


def test_tree_view_click_checkout_fork_and_redraw(lab):
    lab.write_notebook("tree_view.ipynb", [SETUP])
    lab.open_notebook("tree_view.ipynb")
    lab.run_cell(0)
    out = lab.wait_for_output(0, "setup-end")  # stream output can arrive in pieces
    assert "setup ok 3" in out, out
    root = lab.page.locator(".pitv-root").first
    root.wait_for(timeout=30_000)
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node').length === 3", timeout=30_000)

    # what is drawn: the leaf on the "log scale" branch, the label on the first turn
    leaf = root.locator("svg g.node.pi-leaf")
    assert leaf.count() == 1 and "Try a log scale instead" in leaf.text_content()
    assert "[baseline]" in _node(root, "What is in the data?").text_content()
    assert root.locator("svg g.edge.pi-path").count() == 1

    # click a node: its messages in the side panel
    target = _node(root, "Plot the second column")
    assert "pi-path" not in (target.get_attribute("class") or "")
    target.click()
    panel = root.locator(".pitv-panel")
    panel.locator(".pitv-msg.pitv-user", has_text="Plot the second column").wait_for(timeout=15_000)
    assert "[offline model]" in panel.inner_text()
    assert panel.locator(".pitv-fact", has_text="tokens").count() == 1
    assert "pitv-selected" in (target.get_attribute("class") or "")
    compact = panel.locator("button.pitv-act-compact")
    # an agent is attached, but three short turns leave nothing to compact: not offered, and it says why
    assert not compact.is_enabled() and "nothing to compact" in (compact.get_attribute("title") or "")

    # check out: the leaf moves there, in the picture and in the kernel
    panel.locator("button.pitv-act-checkout").click()
    lab.page.wait_for_function(
        "() => { const g = document.querySelector('.pitv-root svg g.node.pi-leaf');"
        " return g && g.textContent.includes('Plot the second column'); }",
        timeout=30_000,
    )
    assert "checked out" in root.locator(".pitv-note").inner_text()
    assert "pitv-selected" in (_node(root, "Plot the second column").get_attribute("class") or "")  # selection survives the redraw
    lab.append_and_run(CHECK_CHECKOUT)
    assert "LEAF True 5 5" in lab.wait_for_output(1, "LEAF")  # the system prompt, then two turns
    lab.screenshot("tree_view.png", root)

    # search by label, then zoom with the keyboard
    search = root.locator("input.pitv-search")
    search.fill("baseline")
    # the kernel's answer (it looks in every entry, folded ones too) comes when it comes: wait for it, not for a time
    lab.page.wait_for_function("() => document.querySelector('.pitv-root').dataset.searched === 'baseline'", timeout=30_000)
    assert root.locator(".pitv-match-info").inner_text() == "– / 1"
    assert "pitv-match" in (_node(root, "What is in the data?").get_attribute("class") or "")
    search.press("Enter")
    assert root.locator(".pitv-match-info").inner_text() == "1 / 1"
    before = _scale(root)
    root.locator(".pitv-viewport").focus()
    lab.page.keyboard.press("+")
    assert _scale(root) > before
    lab.page.keyboard.press("0")
    search.fill("")

    # shift-click two leaves, then compare them: the side panel shows the branches side by side
    _node(root, "Plot the second column").click(modifiers=["Shift"])
    _node(root, "Try a log scale instead").click(modifiers=["Shift"])
    assert root.locator("svg g.node.pitv-picked").count() == 2
    root.locator("button.pitv-act-compare-picked").click()
    panel.locator(".pitv-compare .pi-comparison").wait_for(timeout=15_000)
    assert "Compare 2 branches" in panel.locator(".pitv-panel-title").inner_text()
    root.locator(".pitv-viewport").focus()
    lab.page.keyboard.press("Escape")
    assert root.locator("svg g.node.pitv-picked").count() == 0

    # fork the checked-out branch into a new file: the view redraws on it
    _node(root, "Plot the second column").click()
    panel.locator("button.pitv-act-fork").click()
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node').length === 2", timeout=30_000)
    # the note and the redraw arrive in separate messages: wait for both
    lab.page.wait_for_function(
        "() => (document.querySelector('.pitv-root .pitv-note') || {}).innerText?.includes('forked')", timeout=30_000
    )
    lab.append_and_run(CHECK_FORK)
    out = lab.wait_for_output(2, "FORK")
    m = re.search(r"FORK True True True (\S+\.jsonl)", out)
    assert m, out
    header = root.locator(".pitv-header").inner_text()
    assert header.startswith(m.group(1)) and "tree_browser.jsonl" not in header  # the view shows the new file

    # entries written by the agent (another cell, the agent's own loop) redraw the view by themselves
    lab.append_and_run(PROMPT_AFTER_FORK)
    assert "PROMPTED True" in lab.wait_for_output(3, "PROMPTED")
    _node(root, "Now on the forked file").wait_for(timeout=30_000)
    assert "pi-leaf" in (_node(root, "Now on the forked file").get_attribute("class") or "")
    lab.screenshot("tree_view_after_fork.png", root)

    lab.command("apputils:change-theme", {"theme": "JupyterLab Dark"})
    lab.page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'", timeout=30_000)
    lab.settled(root)  # the theme's colours have landed
    _node(root, "Now on the forked file").click()
    panel.locator(".pitv-msg.pitv-user", has_text="Now on the forked file").wait_for(timeout=15_000)
    lab.screenshot("tree_view_dark.png", root)
    lab.command("apputils:change-theme", {"theme": "JupyterLab Light"})

    # a large session: folded, centred on the leaf; a double click opens a fold
    lab.append_and_run(LARGE)
    out = lab.wait_for_output(4, "LARGE")
    drawn, folded = map(int, re.search(r"LARGE (\d+) (\d+)", out).groups())
    assert folded > 0 and drawn <= 250
    big = lab.page.locator(".pitv-root").nth(1)
    lab.page.wait_for_function(
        f"() => document.querySelectorAll('.pitv-root')[1].querySelectorAll('svg g.node').length === {drawn}", timeout=30_000
    )
    leaf_box = big.locator("svg g.node.pi-leaf").bounding_box()
    view_box = big.locator(".pitv-viewport").bounding_box()
    assert view_box["x"] <= leaf_box["x"] + leaf_box["width"] / 2 <= view_box["x"] + view_box["width"]
    assert view_box["y"] <= leaf_box["y"] + leaf_box["height"] / 2 <= view_box["y"] + view_box["height"]
    big.locator("svg g.node.pi-leaf").scroll_into_view_if_needed()
    lab.screenshot("tree_view_large.png", big)
    fold = big.locator("svg g.node.pi-folded.pi-path").last
    fold.dblclick()
    lab.page.wait_for_function(
        f"() => document.querySelectorAll('.pitv-root')[1].querySelectorAll('svg g.node').length > {drawn}", timeout=30_000
    )

    errors = [c for c in lab.console if c.startswith("pageerror") or "pitv" in c.lower() or "tree_view" in c.lower()]
    assert not errors, errors


EDIT_SETUP = """
import json, os
from pi_jupyter import Agent
from pi_jupyter.session import Session
from pi_jupyter.notebook.tree_view.view import TreeView
from pi_jupyter.notebook.runner import KernelRunner

path = os.path.abspath("tree_edits_browser.jsonl")
if os.path.exists(path):
    os.remove(path)
s = Session.create(path=path)
agent = Agent(s, model="offline/echo")
first = await agent.prompt("My token is sk-live-42, what is in the data?")
second = await agent.prompt("Plot the second column")
view = TreeView(agent, runner=KernelRunner())
print("edits ok", len(view.nodes), "edits-end")
view
"""

CHECK_FORGET = """
rows = [json.loads(line) for line in open(path, encoding="utf-8").read().splitlines()[1:]]
prompt_id = next(i for i in first.entry_ids if s.raw_entry(i)["message"]["role"] == "user")
edits = [(e["targetId"] == prompt_id, e["replacement"]) for e in rows if e["type"] == "context_edit"]
sent = json.dumps([m.to_dict() for m in agent.messages])
print("FORGET", edits, "sk-live-42" in sent, "sk-live-42" in open(path, encoding="utf-8").read())
"""

CHECK_EDIT = """
rows = [json.loads(line) for line in open(path, encoding="utf-8").read().splitlines()[1:]]
last = [e for e in rows if e["type"] == "context_edit"][-1]
print("EDITED", last["targetId"] == second.entry_ids[-1], json.dumps(last["replacement"]), len(view.nodes[view.leaf]["contextEdits"]))
"""


def test_tree_view_forget_edit_and_restore_from_the_side_panel(lab):
    lab.write_notebook("tree_edits.ipynb", [EDIT_SETUP])
    lab.open_notebook("tree_edits.ipynb")
    lab.run_cell(0)
    assert "edits ok 2" in lab.wait_for_output(0, "edits-end")
    root = lab.page.locator(".pitv-root").first
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node').length === 2", timeout=30_000)
    assert root.locator("svg g.node.pi-ctx-dropped").count() == 0

    # click the first turn (the offline model echoes the token in its answer), then "Forget turn":
    # the node is marked forgotten, dimmed, its title struck through
    _node(root, "My token is sk-live-42").click()
    panel = root.locator(".pitv-panel")
    you = panel.locator(".pitv-ctx-row", has_text="You")
    you.wait_for(timeout=15_000)
    assert "sent" in you.locator(".pitv-ctx-state").inner_text()
    panel.locator("button.pitv-act-forget-node").click()
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pi-ctx-forgotten').length === 1", timeout=30_000)
    marked = root.locator("svg g.node.pi-ctx-forgotten")
    assert "My token is sk-live-42" in marked.text_content() and "✂ forgotten" in marked.text_content()
    assert marked.locator("text[text-decoration='line-through']").count() == 1
    assert "forgotten: kept in the file, not sent" in root.locator("svg").first.text_content()  # the legend
    panel.locator(".pitv-ctx-row", has_text="You").locator(".pitv-ctx-state-dropped").wait_for(timeout=15_000)
    assert panel.locator(".pitv-ctx-state-dropped").count() == 2
    assert panel.locator(".pitv-msg.pitv-ctx-msg-dropped", has_text="sk-live-42").count() == 2  # the prompt and the answer, struck
    assert "forgot 2 messages" in panel.locator(".pitv-ctx-note").inner_text()
    lab.append_and_run(CHECK_FORGET)
    out = lab.wait_for_output(1, "FORGET")
    # two edits in the file (the prompt, the answer); the agent no longer sends the token; the file keeps it
    assert "FORGET [(True, None), (False, None)] False True" in out, out
    lab.screenshot("tree_view_forgotten.png", root)

    # Edit… the last answer: what is sent instead shows in the panel and the node says "edited"
    _node(root, "Plot the second column").click()
    answer = panel.locator(".pitv-ctx-row", has_text="Assistant")
    answer.wait_for(timeout=15_000)
    answer.locator("button.pitv-act-edit").click()
    answer.locator("textarea.pitv-ctx-text").fill("A plot of column two.")
    answer.locator("button.pitv-act-edit-save").click()
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pi-ctx-edited').length === 1", timeout=30_000)
    answer = panel.locator(".pitv-ctx-row", has_text="Assistant")
    answer.locator(".pitv-ctx-replacement", has_text="A plot of column two.").wait_for(timeout=15_000)
    lab.screenshot("tree_view_edited.png", root)
    lab.append_and_run(CHECK_EDIT)
    out = lab.wait_for_output(2, "EDITED")
    assert 'EDITED True {"content": [{"type": "text", "text": "A plot of column two."}]} 1' in out, out

    # Restore: the mark goes away (an edit back to the entry's own content)
    answer.locator("button.pitv-act-restore").click()
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pi-ctx-edited').length === 0", timeout=30_000)
    panel.locator(".pitv-ctx-row", has_text="Assistant").locator(".pitv-ctx-state-restored").wait_for(timeout=15_000)
    assert root.locator("svg g.node.pi-ctx-dropped").count() == 1  # the forgotten prompt stays forgotten

    errors = [c for c in lab.console if c.startswith("pageerror") or "pitv" in c.lower() or "tree_view" in c.lower()]
    assert not errors, errors
