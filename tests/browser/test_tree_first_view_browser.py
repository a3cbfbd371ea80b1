"""The TreeView's first view, as a new user meets it in JupyterLab (default settings, headless Chromium).

A small tree (the quickstart's three turns, from ``%%pi`` cells and a re-run) is shown whole:
no node is cut at the canvas's edges, the labels read at 10 px or more, and the canvas is not
mostly blank (it is as tall as the tree needs). A tall tree (six turns drawn entry by entry)
keeps legible labels when the user presses Fit. A large tree opens on its leaf, and its
overview (the minimap) covers no node. Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

QUICKSTART = [
    '%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"\ns = %pi new first-view',
    "%%pi\nHello! My name is Ada and I am looking at this year's sales figures.",
    'import pandas as pd\nsales = pd.DataFrame({"region": ["north", "east"], "revenue": [120.5, 143.2]})\nregion = "north"',
    "%%pi --name answer\nThe table `sales` has {len(sales)} rows. What did {region!r} earn? use python:\n"
    '```python\nsales.loc[sales.region == region, "revenue"].sum()\n```',
    'north = answer\nregion = "east"\nip, again = get_ipython(), _i\n'
    "await ip.run_cell_async(again, transformed_cell=ip.transform_cell(again), cell_id=answer.cell_id)\n"
    'east = answer\ns.label(north.entry_ids[-1], "north")\ns.label(east.entry_ids[-1], "east")\nprint("forked", east.forked)',
    "%pi tree",
]

SIX = [
    '%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"\ns = %pi new six-answers',
    "%%pi --name answer\nSuggest a title for the sales report.",
    # five re-runs of the cell above (= Shift+Enter on it five times): six sibling answers
    "ip, again = get_ipython(), _i\nfor _ in range(5):\n"
    "    await ip.run_cell_async(again, transformed_cell=ip.transform_cell(again), cell_id=answer.cell_id)\n"
    'print("siblings", len(s.children(s.entry(answer.entry_ids[0]).parent_id)))',
    "%pi tree",
]

LARGE = """
from pi_jupyter.views import sample_session
from pi_jupyter.notebook.tree_view.view import TreeView
big = TreeView(sample_session(3000, seed=2))
print("LARGE", len(big.nodes), "large-end")
big
"""

# Everything measured in the page: the viewport, every node's box, the label size on screen, the overview.
MEASURE = """(root) => {
  const vp = root.querySelector('.pitv-viewport').getBoundingClientRect();
  const nodes = [...root.querySelectorAll('svg g.node')].map((g) => {
    const r = g.getBoundingClientRect();
    return { key: g.dataset.key, leaf: g.classList.contains('pi-leaf'),
             x0: r.left - vp.left, y0: r.top - vp.top, x1: r.right - vp.left, y1: r.bottom - vp.top };
  });
  const t = root.querySelector('svg g.node text[font-weight="bold"]');
  const m = t.getScreenCTM();
  const label = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
  const mini = root.querySelector('.pitv-minimap');
  const a = mini.getBoundingClientRect(), b = root.querySelector('.pitv-minimap-view').getBoundingClientRect();
  // the overview and its view box (which must not stick out of it)
  const mr = { left: Math.min(a.left, b.left), top: Math.min(a.top, b.top),
               right: Math.max(a.right, b.right), bottom: Math.max(a.bottom, b.bottom) };
  const miniShown = getComputedStyle(mini).display !== 'none';
  return { w: vp.width, h: vp.height, nodes, label, miniShown,
           mini: { x0: mr.left - vp.left, y0: mr.top - vp.top, x1: mr.right - vp.left, y1: mr.bottom - vp.top } };
}"""


def _measure(root) -> dict:
    return root.evaluate(MEASURE)


def _overlaps(a: dict, b: dict) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


def _clipped(m: dict) -> list[str]:
    return [n["key"] for n in m["nodes"] if n["x0"] < -0.5 or n["y0"] < -0.5 or n["x1"] > m["w"] + 0.5 or n["y1"] > m["h"] + 0.5]


def _open_tree(lab, name: str, cells: list[str]):
    lab.write_notebook(name, cells)
    lab.open_notebook(name)
    lab.run_all()
    last = len(cells) - 1
    lab.wait_for_execution_count(last, timeout=180)
    root = lab.cell(last).locator(".pitv-root")
    root.wait_for(timeout=60_000)
    lab.page.wait_for_function("(el) => el.querySelectorAll('svg g.node').length > 0", arg=root.element_handle(), timeout=60_000)
    root.scroll_into_view_if_needed()
    lab.settled(root)  # the ResizeObserver's last fit has landed
    return root


def _back_to(lab, root) -> None:
    """Scroll the tree back into view (after reading an earlier cell) and wait for its fit to land."""
    root.scroll_into_view_if_needed()
    lab.settled(root)


def test_a_small_tree_is_shown_whole_centred_and_legible(lab):
    root = _open_tree(lab, "first_view.ipynb", QUICKSTART)
    lab.shown_output(4, "forked True")
    _back_to(lab, root)
    m = _measure(root)
    lab.screenshot("tree_first_view_small.png", root)
    assert len(m["nodes"]) == 3
    assert _clipped(m) == [], f"nodes cut at the canvas's edges: {_clipped(m)} ({m})"
    assert m["label"] >= 9.9, f"labels are {m['label']:.1f} px on screen"
    x0 = min(n["x0"] for n in m["nodes"])
    x1 = max(n["x1"] for n in m["nodes"])
    y0 = min(n["y0"] for n in m["nodes"])
    y1 = max(n["y1"] for n in m["nodes"])
    # centred, and the canvas is not mostly blank: the tree spans one of its dimensions
    assert abs((x0 + x1) / 2 - m["w"] / 2) < 0.1 * m["w"] and abs((y0 + y1) / 2 - m["h"] / 2) < 0.1 * m["h"], m
    assert (x1 - x0) >= 0.8 * m["w"] or (y1 - y0) >= 0.8 * m["h"], m
    assert (x1 - x0) * (y1 - y0) >= 0.35 * m["w"] * m["h"], f"the tree covers {(x1 - x0) * (y1 - y0) / (m['w'] * m['h']):.0%} of the canvas"
    assert not m["miniShown"], "a tree shown whole needs no overview"

    # a click opens the side panel: the canvas makes room for it, the tree stays whole
    root.locator("svg g.node", has_text="Hello! My name is Ada").click()
    root.locator(".pitv-panel .pitv-actions").wait_for()
    lab.settled(root)
    m = _measure(root)
    assert m["h"] >= 400 and _clipped(m) == [], m
    lab.screenshot("tree_first_view_small_selected.png", root)


def test_a_wide_tree_opens_on_its_leaf_the_overview_covers_nothing_and_fit_stays_legible(lab):
    root = _open_tree(lab, "six_answers.ipynb", SIX)
    lab.shown_output(2, "siblings 6")
    _back_to(lab, root)
    m = _measure(root)
    lab.screenshot("tree_first_view_wide.png", root)
    assert m["label"] >= 9.9, f"first view: labels {m['label']:.1f} px"
    leaf = [n for n in m["nodes"] if n["leaf"]]
    assert leaf and not _clipped({**m, "nodes": leaf}), "the leaf is in view"
    if m["miniShown"]:
        assert not [n["key"] for n in m["nodes"] if _overlaps(n, m["mini"])], "the overview covers nodes"
    root.locator("button", has_text="Fit").click()
    lab.settled(root)
    m = _measure(root)
    lab.screenshot("tree_first_view_wide_fit.png", root)
    assert m["label"] >= 9.9, f"after Fit: labels {m['label']:.1f} px"
    if _clipped(m):  # too wide to show whole at a legible size: the status line says so
        assert "does not fit at a legible size" in root.locator(".pitv-note").inner_text()
    if m["miniShown"]:
        assert not [n["key"] for n in m["nodes"] if _overlaps(n, m["mini"])], "the overview covers nodes after Fit"


def test_the_overview_of_a_large_tree_covers_no_node(lab):
    lab.write_notebook("large_first_view.ipynb", [LARGE])
    lab.open_notebook("large_first_view.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "large-end")
    root = lab.cell(0).locator(".pitv-root")
    root.wait_for(timeout=60_000)
    root.scroll_into_view_if_needed()
    lab.settled(root)
    m = _measure(root)
    lab.screenshot("tree_first_view_large.png", root)
    leaf = [n for n in m["nodes"] if n["leaf"]]
    assert leaf and not _clipped({**m, "nodes": leaf}), "the current leaf is in view"
    assert m["label"] >= 9.9
    if m["miniShown"]:
        assert not [n["key"] for n in m["nodes"] if _overlaps(n, m["mini"])], "the overview covers nodes"
    # pan so that nodes fill the corners: the overview moves away or hides, never covers a node
    for dx, dy in ((-300, 0), (0, -400), (300, 300)):
        root.locator(".pitv-viewport").focus()
        lab.page.mouse.move(m["w"] / 2 + 50, 300)
        box = root.locator(".pitv-viewport").bounding_box()
        lab.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        lab.page.mouse.down()
        lab.page.mouse.move(box["x"] + box["width"] / 2 + dx, box["y"] + box["height"] / 2 + dy, steps=5)
        lab.page.mouse.up()
        m = _measure(root)
        if m["miniShown"]:
            assert not [n["key"] for n in m["nodes"] if _overlaps(n, m["mini"])], f"the overview covers nodes after a pan of {dx},{dy}"


SCALED = [
    '%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"\n%config PiMagics.scale = 2\ns = %pi new on-a-projector',
    "%%pi\nHello there",
    "%%pi\nuse python:\n```python\n1 + 1\n```",
    "%pi tree",
]

SHAPE = """(root) => {
  const bar = root.querySelector('.pitv-toolbar'), search = root.querySelector('.pitv-search');
  const btn = root.querySelector('.pitv-toolbar .pitv-btn');
  const panel = root.querySelector('.pitv-panel');
  return { bar: bar.getBoundingClientRect().height, button: btn.getBoundingClientRect().height,
           search: search.getBoundingClientRect().width, font: parseFloat(getComputedStyle(search).fontSize),
           panel: getComputedStyle(panel).display === 'none' ? 0 : panel.getBoundingClientRect().width,
           panelFont: parseFloat(getComputedStyle(panel).fontSize) };
}"""


def test_at_presentation_scale_2_nothing_wraps_or_is_crushed(lab):
    root = _open_tree(lab, "scaled.ipynb", SCALED)
    m, shape = _measure(root), root.evaluate(SHAPE)
    lab.screenshot("tree_scale2_first.png", root)
    assert shape["bar"] < 1.6 * shape["button"], f"the toolbar wrapped: {shape}"
    assert shape["search"] >= 6.5 * shape["font"], f"the search box is crushed: {shape}"
    assert _clipped(m) == [] and m["label"] >= 2 * 9.9, m  # the small tree whole, its labels twice as large
    root.locator("svg g.node").first.click()
    root.locator(".pitv-panel .pitv-actions").wait_for()
    shape = root.evaluate(SHAPE)
    lab.screenshot("tree_scale2_panel.png", root)
    assert shape["panel"] >= 14 * shape["panelFont"], f"the side panel is crushed: {shape}"
    assert shape["bar"] < 1.6 * shape["button"]
