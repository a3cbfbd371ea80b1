"""A TreeView redraw after a new turn, in headless Chromium: the patched picture is the picture.

The kernel sends a patch (nodes drawn as before left out, :mod:`pi_jupyter.notebook.tree_patch`);
the page moves its own copies of those nodes and inserts the rest. Checked against a page that
draws the new SVG whole: the same nodes, each with the same text at the same place on the
canvas, and the user's zoom, pan and selection kept. The widget's ES module runs on a minimal
model (``tests/widget_page.py``), as in ``bench/bench_tree_view.py``.
"""

from __future__ import annotations

import base64

import pytest
from widget_page import PAGE, mount_script

from pi_jupyter.notebook.tree_view import TreeView
from pi_jupyter.views import sample_session, write_turn

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

MOUNT = mount_script()

# every node: its text and its box in the picture's own units (independent of the view's zoom and pan)
NODES = """() => {
  const svg = document.querySelector('#host svg');
  const inv = svg.getScreenCTM().inverse();
  const out = {};
  for (const g of svg.querySelectorAll('g.node')) {
    const r = g.getBoundingClientRect();
    const p = new DOMPoint(r.left, r.top).matrixTransform(inv);
    const q = new DOMPoint(r.right, r.bottom).matrixTransform(inv);
    out[g.dataset.key] = { text: g.textContent.replace(/\\s+/g, ' ').trim(), box: [p.x, p.y, q.x, q.y] };
  }
  return { nodes: out, stage: document.querySelector('#host .pitv-stage').style.transform,
           selected: [...svg.querySelectorAll('g.node.pitv-selected')].map((g) => g.dataset.key) };
}"""

TRAITS = ["svg", "svg_patch", "patch_base", "text", "nodes", "leaf", "path", "header", "selected", "details", "mode", "status"]
TRAITS += ["capabilities", "revision", "lens", "scale", "found"]


def state(view: TreeView) -> dict:
    return {k: getattr(view, k) for k in TRAITS}


def mounted(browser, view: TreeView):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_content(PAGE)
    page.add_style_tag(content=TreeView._css)
    page.evaluate(MOUNT, [base64.b64encode(TreeView._esm.encode()).decode(), state(view)])
    return page


def test_a_patched_redraw_draws_what_a_whole_drawing_draws(browser):
    session = sample_session(1500, seed=3)
    view = TreeView(session, debounce=3600)
    page = mounted(browser, view)
    selected = view.path[-2]
    view.select(selected)
    page.evaluate("(k) => window.__model.update({selected: k})", selected)
    vp = page.locator("#host .pitv-viewport")
    vp.hover()
    page.mouse.wheel(0, 0)
    page.keyboard.press("Tab")
    page.evaluate("() => document.querySelector('#host .pitv-viewport').focus()")
    page.keyboard.press("+")  # the user zooms in: the redraw must keep it
    page.keyboard.press("Shift+ArrowLeft")  # and pans
    before = page.evaluate(NODES)
    for i in range(3):  # three turns, three patched redraws in a row
        write_turn(session, f"a new turn {i}", f"its answer {i}", tools=i)
        view.redraw()
        assert view.svg_patch and view.patch_base > 0, "the kernel sent a patch"
        assert view.svg_patch.count('data-at="') > 0.8 * len(view.nodes)  # most nodes were left out
        page.evaluate("(p) => window.__model.update(p)", {k: getattr(view, k) for k in TRAITS})
    patched = page.evaluate(NODES)
    whole = mounted(browser, view).evaluate(NODES)
    assert patched["nodes"].keys() == whole["nodes"].keys() == set(view.nodes)
    for key, node in whole["nodes"].items():
        mine = patched["nodes"][key]
        assert mine["text"] == node["text"], key
        assert all(abs(a - b) < 0.6 for a, b in zip(mine["box"], node["box"], strict=True)), (key, mine["box"], node["box"])
    assert patched["stage"].split("scale(")[1] == before["stage"].split("scale(")[1]  # the zoom is kept
    assert patched["selected"] == [view.selected]  # and the selection (a node folded away selects its fold)
    page.close()


def test_a_view_that_missed_a_drawing_draws_the_whole_picture(browser):
    session = sample_session(600, seed=4)
    view = TreeView(session, debounce=3600)
    page = mounted(browser, view)
    write_turn(session, "first", "one")
    view.redraw()  # this page never sees this drawing
    write_turn(session, "second", "two")
    view.redraw()
    assert view.patch_base > 0
    page.evaluate("(p) => window.__model.update(p)", {k: getattr(view, k) for k in TRAITS})
    shown = page.evaluate(NODES)
    assert set(shown["nodes"]) == set(view.nodes)
    assert any("second" in n["text"] for n in shown["nodes"].values())
    page.close()
