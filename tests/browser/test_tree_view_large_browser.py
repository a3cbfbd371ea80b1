"""TreeView on the real 1,000-entry pi sessions, in JupyterLab and headless Chromium.

What a new user meets first: the current leaf and the path leading to it in view, node labels
at a legible size (the rendered font size of a label is read from the page: the computed
font size times the zoom on screen), the canvas taking the output's width. Then: search moves
to a match outside the view and highlights it; the keyboard moves to the parent; the side
panel hides; the context lens on the compacted pi session marks the replaced originals
(greyed) and the compaction's summary; ``%pi compare In[n] root`` works in the notebook.
Screenshots go to ``artifacts/``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"

OPEN = """
from pi_jupyter.session import Session
from pi_jupyter.notebook.tree_view.view import TreeView
big = Session.open({path!r}, readonly=True)
view = TreeView(big)
print("OPEN", len(big), view.header, "open-end")
view
"""

# a font size on screen: computed CSS size times the scale the SVG is drawn at
LABEL_PX = """(el) => {
  const t = el.querySelector('text[font-weight="bold"]') || el.querySelector('text');
  const css = parseFloat(getComputedStyle(t).fontSize);
  const m = t.getScreenCTM();
  return css * Math.hypot(m.a, m.b);
}"""

INSIDE = """([el, vp]) => {
  const r = el.getBoundingClientRect(), v = vp.getBoundingClientRect();
  const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
  return cx >= v.left && cx <= v.right && cy >= v.top && cy <= v.bottom;
}"""


INSIDE_JS = """(cls) => {
  const g = document.querySelector('.pitv-root svg g.node' + cls), v = document.querySelector('.pitv-root .pitv-viewport');
  if (!g || !v) return false;
  const r = g.getBoundingClientRect(), b = v.getBoundingClientRect();
  return r.top >= b.top && r.bottom <= b.bottom && r.left + r.width / 2 >= b.left && r.left + r.width / 2 <= b.right;
}"""


def _inside(page, node, viewport) -> bool:
    return page.evaluate(INSIDE, [node.element_handle(), viewport.element_handle()])


def test_first_view_search_keys_and_panel_on_the_1000_entry_pi_session(lab):
    path = str(FIXTURES / "large-session.jsonl")
    lab.write_notebook("large_tree.ipynb", [OPEN.format(path=path)])
    lab.open_notebook("large_tree.ipynb")
    lab.run_cell(0)
    out = lab.wait_for_output(0, "open-end")
    n = int(re.search(r"OPEN (\d+)", out).group(1))
    assert f"{n:,} entries" in out  # the header counts what len(session) counts
    root = lab.page.locator(".pitv-root").first
    root.wait_for(timeout=30_000)
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node').length > 20", timeout=30_000)
    page = lab.page
    viewport = root.locator(".pitv-viewport")

    # first sight: the leaf in view, its label legible, its parent (the path above it) in view too
    leaf = root.locator("svg g.node.pi-leaf")
    assert _inside(page, leaf, viewport)
    px = leaf.evaluate(LABEL_PX)
    assert px >= 11.5, f"the leaf's label is drawn at {px:.1f} px"
    path_nodes = root.locator("svg g.node.pi-path")
    above = path_nodes.nth(path_nodes.count() - 2)
    assert _inside(page, above, viewport)
    # the canvas is as wide as the output area, and the tree is taller than it: the overview shows
    out_box = root.bounding_box()
    assert viewport.bounding_box()["width"] >= 0.6 * out_box["width"]
    assert root.locator(".pitv-minimap").is_visible()
    lab.screenshot("tree_large_first_view.png", root)

    # search for a text shown only in nodes far from the leaf: the first match is out of view
    search = root.locator("input.pitv-search")
    search.fill("/mode")
    info = root.locator(".pitv-match-info")
    assert re.fullmatch(r"– / \d+", info.inner_text()), info.inner_text()
    first_match = root.locator("svg g.node.pitv-match").first
    assert not _inside(page, first_match, viewport)
    search.press("Enter")
    assert info.inner_text().startswith("1 / ")
    current = root.locator("svg g.node.pitv-current")
    assert current.count() == 1 and _inside(page, current, viewport)
    assert current.evaluate(LABEL_PX) >= 11.5
    lab.screenshot("tree_large_search.png", root)
    # every text a node shows is searchable: a model badge
    search.fill("claude-sonnet")
    assert root.locator("svg g.node.pitv-match").count() >= 1
    # text that only a folded turn holds (an answer inside it): the kernel's search lights up the fold
    search.fill("cycle detection")
    page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pitv-match').length === 1", timeout=15_000)
    search.press("Enter")
    fold = root.locator("svg g.node.pitv-current")
    assert "pi-folded" in (fold.get_attribute("class") or "") and _inside(page, fold, viewport)
    search.fill("")

    # keyboard: select the leaf, then Up moves the selection to its parent
    leaf.click()
    root.locator(".pitv-panel .pitv-badge-leaf").wait_for(timeout=15_000)
    viewport.focus()
    page.keyboard.press("ArrowUp")
    page.wait_for_function(
        "() => { const g = document.querySelector('.pitv-root svg g.node.pitv-selected'); return g && !g.classList.contains('pi-leaf'); }",
        timeout=15_000,
    )
    selected = root.locator("svg g.node.pitv-selected")
    assert "pi-path" in (selected.get_attribute("class") or "") and _inside(page, selected, viewport)

    # the side panel hides, and the canvas takes its room
    before = viewport.bounding_box()["width"]
    root.locator("button.pitv-act-panel").click()
    assert not root.locator(".pitv-panel").is_visible()
    assert viewport.bounding_box()["width"] > before + 100
    root.locator("button.pitv-act-panel").click()
    errors = [c for c in lab.console if c.startswith("pageerror") or "pitv" in c.lower()]
    assert not errors, errors


LENS = """
from pi_jupyter.session import Session
from pi_jupyter.notebook.tree_view.view import TreeView
comp = Session.open({path!r}, readonly=True)
cview = TreeView(comp)
print("LENS", cview.leaf, "lens-end")
cview
"""


def test_context_lens_greys_what_the_compaction_replaced(lab):
    path = str(FIXTURES / "before-compaction.jsonl")
    lab.write_notebook("lens_tree.ipynb", [LENS.format(path=path)])
    lab.open_notebook("lens_tree.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "lens-end")
    root = lab.page.locator(".pitv-root").first
    root.wait_for(timeout=30_000)
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node').length > 10", timeout=30_000)
    root.locator("button.pitv-act-lens").click()
    bar = root.locator(".pitv-lens-bar")
    bar.locator(".pitv-lens-title").wait_for(timeout=30_000)
    headline = bar.inner_text()
    assert "compaction" in headline and "replaced" in headline, headline
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pitv-lens-replaced').length > 0", timeout=15_000)
    replaced = root.locator("svg g.node.pitv-lens-replaced").first
    assert float(replaced.evaluate("(g) => getComputedStyle(g).opacity")) < 0.6  # greyed
    summary = root.locator("svg g.node.pi-compaction.pitv-lens-summary")
    assert summary.count() == 1
    # the lens opens where the compaction cuts the history: summary, first kept entry and greyed originals in view
    lab.page.wait_for_function(INSIDE_JS, arg=".pitv-lens-summary", timeout=15_000)
    assert _inside(lab.page, root.locator("svg g.node.pitv-lens-firstkept"), root.locator(".pitv-viewport"))
    assert root.locator("svg g.node.pi-leaf.pitv-lens-in").count() == 1
    panel = root.locator(".pitv-panel .pitv-lens-panel")
    assert panel.locator(".pitv-lens-row.pitv-lens-replaced").count() >= 1
    assert panel.locator(".pitv-lens-row.pitv-lens-summary").count() >= 1
    # the first entry the compaction kept is marked, and the request's own starting node
    assert root.locator("svg g.node.pitv-lens-firstkept").count() == 1
    assert "pi-leaf" in (root.locator("svg g.node.pitv-lens-from").get_attribute("class") or "")
    lab.screenshot("tree_lens.png", root)
    root.locator(".pitv-viewport").focus()
    lab.page.keyboard.press("0")  # fit: the whole picture of what is sent and what is not
    lab.screenshot("tree_lens_fit.png", root)
    bar.locator("button.pitv-lens-close").click()
    assert not bar.is_visible() and root.locator("svg g.node.pitv-lens-replaced").count() == 0


COMPARE_SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "offline/echo"
%pi new compare-demo
print("setup-end")
"""


def test_pi_compare_in_n_and_root_in_the_notebook(lab):
    cells = [COMPARE_SETUP, "%%pi\nFit a linear model to the prices", "%%pi\nNow plot the residuals", "%pi compare In[3] root"]
    lab.write_notebook("compare_cells.ipynb", cells)
    lab.open_notebook("compare_cells.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    for i in (1, 2):
        lab.run_cell(i)
        lab.wait_for_execution_count(i)
    lab.run_cell(3)
    out = lab.wait_for_output(3, "Cell by cell")
    assert "Now plot the residuals" in out and "Fit a linear model" in out, out
    assert "did not run on this branch" in out  # root's branch ran no cell after itself
    # the answer panes read left to right, whatever JupyterLab's table style says
    cell = lab.cell(3)
    aligns = cell.locator("table.pi-compare-cells td").evaluate_all("(tds) => tds.map((td) => getComputedStyle(td).textAlign)")
    assert aligns and set(aligns) == {"left"}, aligns
    lab.screenshot("compare_cells.png", cell)

    # %pi tree with a presentation scale: the view's text and its first zoom grow with it
    lab.append_and_run("%config PiMagics.scale = 1.5\n%pi tree")
    root = lab.page.locator(".pitv-root").first
    root.wait_for(timeout=30_000)
    lab.page.wait_for_function("() => document.querySelectorAll('.pitv-root svg g.node.pi-leaf').length === 1", timeout=30_000)
    assert root.evaluate("(r) => r.style.getPropertyValue('--pi-scale')") == "1.5"
    ui = float(root.locator(".pitv-header").evaluate("(e) => parseFloat(getComputedStyle(e).fontSize)"))
    assert ui >= 15, ui  # JupyterLab's 13 px UI font, times 1.5, times the status line's 90%
    px = root.locator("svg g.node.pi-leaf").evaluate(LABEL_PX)
    assert px >= 1.5 * 11.5, px
