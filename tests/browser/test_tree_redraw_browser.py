"""A TreeView redraw after a new turn, in headless Chromium: the patched picture is the picture.

The kernel sends a patch (nodes drawn as before left out, :mod:`pi_jupyter.notebook.tree_view.patch`);
the page moves its own copies of those nodes and inserts the rest. Checked against a page that
draws the new SVG whole: the same nodes, each with the same text at the same place on the
canvas, and the user's zoom, pan and selection kept. The widget's ES module runs on a minimal
model (``tests/widget_page.py``), as in ``bench/bench_tree_view.py``.
"""

from __future__ import annotations

import base64

import pytest
from widget_page import PAGE, mount_script

from pi_jupyter.notebook.tree_view.view import TreeView
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
  const edges = {};
  for (const g of svg.querySelectorAll('g.edge')) {
    const r = g.getBoundingClientRect();
    const p = new DOMPoint(r.left, r.top).matrixTransform(inv);
    const q = new DOMPoint(r.right, r.bottom).matrixTransform(inv);
    const key = g.querySelector('title').textContent;
    edges[key] = (edges[key] || []).concat([[p.x, p.y, q.x, q.y, g.getAttribute('class')]]);
  }
  return { nodes: out, edges, stage: document.querySelector('#host .pitv-stage').style.transform,
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
    sent: list[dict] = []  # every state the kernel sends, in order, as the page receives them
    view.observe(lambda _change: sent.append({k: getattr(view, k) for k in TRAITS}), names=["revision"])
    for i in range(3):  # three turns, three redraws in a row
        write_turn(session, f"a new turn {i}", f"its answer {i}", tools=i)
        sent.clear()
        view.redraw()
        assert len(sent) == 2, "the new turn at once, then Graphviz's layout"
        for got in sent:
            assert got["svg_patch"] and got["patch_base"] > 0, "the kernel sent a patch"
            assert len(got["svg_patch"]) < 0.25 * len(got["svg"])  # most of the picture was left out
            page.evaluate("(p) => window.__model.update(p)", got)
        assert page.evaluate("() => document.querySelectorAll('#host svg g.node').length") == len(view.nodes)
    patched = page.evaluate(NODES)
    whole = mounted(browser, view).evaluate(NODES)
    assert patched["nodes"].keys() == whole["nodes"].keys() == set(view.nodes)
    for key, node in whole["nodes"].items():
        mine = patched["nodes"][key]
        assert mine["text"] == node["text"], key
        assert all(abs(a - b) < 0.6 for a, b in zip(mine["box"], node["box"], strict=True)), (key, mine["box"], node["box"])
    assert patched["edges"].keys() == whole["edges"].keys()
    for key, boxes in whole["edges"].items():
        mine = patched["edges"][key]
        assert len(mine) == len(boxes) == 1, key  # one drawing of each edge, none left behind
        assert mine[0][4] == boxes[0][4], key  # drawn as on the path, or not
        assert all(abs(a - b) < 0.6 for a, b in zip(mine[0][:4], boxes[0][:4], strict=True)), (key, mine, boxes)
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


def test_a_new_turn_shows_at_once_under_its_parent_and_moves_to_its_place(browser):
    """The provisional picture: the new node below its parent, overlapping nothing; a page opened then draws the same."""
    session = sample_session(1500, seed=5)
    view = TreeView(session, debounce=3600)
    page = mounted(browser, view)
    sent: list[dict] = []
    view.observe(lambda _change: sent.append({k: getattr(view, k) for k in TRAITS}), names=["revision"])
    for i, branch in enumerate([False, True, False]):
        if branch:  # a re-run of an earlier turn: the new node is a sibling of an existing one
            session.checkout(session.raw_entries()[-9]["id"])
        write_turn(session, f"turn {i}", f"answer {i}")
        sent.clear()
        view.redraw()
        if len(sent) != 2:
            continue  # not a grown picture (the path moved): drawn whole, as before
        quick = sent[0]
        new = [k for k in quick["nodes"] if k not in page.evaluate(NODES)["nodes"]]
        page.evaluate("(p) => window.__model.update(p)", quick)
        shown = page.evaluate(NODES)
        assert set(shown["nodes"]) == set(quick["nodes"])
        assert new, "a new node"
        for key in new:
            parent = quick["nodes"][key]["parent"]
            assert shown["nodes"][key]["box"][1] > shown["nodes"][parent]["box"][3], "below its parent"
            assert f"turn {i}" in shown["nodes"][key]["text"] or any(f"turn {i}" in shown["nodes"][k]["text"] for k in new)
        boxes = [n["box"] for n in shown["nodes"].values()]
        for a in range(len(boxes)):
            for b in range(a + 1, len(boxes)):
                p, q = boxes[a], boxes[b]
                assert p[2] <= q[0] + 0.5 or q[2] <= p[0] + 0.5 or p[3] <= q[1] + 0.5 or q[3] <= p[1] + 0.5, "no node covers another"
        fresh = mounted(browser, view)  # a page opened now (the kernel has laid it out) draws what the patches drew
        page.evaluate("(p) => window.__model.update(p)", sent[1])
        after, whole = page.evaluate(NODES), fresh.evaluate(NODES)
        assert after["nodes"].keys() == whole["nodes"].keys()
        for key, node in whole["nodes"].items():
            assert all(abs(a - b) < 0.6 for a, b in zip(after["nodes"][key]["box"], node["box"], strict=True)), key
        fresh.close()
    page.close()
