"""The pictures of the README and the manual, taken from the shipped notebooks run in JupyterLab (light theme, fixed size).

The quickstart runs top to bottom in a real JupyterLab (its cells carry ids, so the re-run in it
forks by cell id, as pressing Shift+Enter does); then the AgentView of the tool call, the
TreeView with the ``east`` branch selected and the comparison are photographed, and the
experiment notebook's table. The PNGs go to ``artifacts/``, or to ``docs/images/`` (committed,
shown by the README and the manual) when ``PI_JUPYTER_PICTURES`` names that folder:
``python tools/run_notebooks.py --pictures`` does that.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


def _index(path: Path, cell_id: str) -> int:
    cells = nbformat.read(path, as_version=4).cells
    return next(i for i, c in enumerate(cells) if c.get("id") == cell_id)


def _cell(lab, index: int):
    """The cell at ``index``, made active and scrolled into view (JupyterLab renders only the cells near the viewport)."""
    return lab.show_cell(index)


def _save(lab, name: str, locator) -> Path:
    folder = os.environ.get("PI_JUPYTER_PICTURES")
    if not folder:
        return lab.screenshot(name, locator)
    target = (ROOT / folder) if not os.path.isabs(folder) else Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(target / name))
    return target / name


def test_quickstart_in_jupyterlab_forks_and_shows_the_widgets(lab):
    src = NOTEBOOKS / "quickstart.ipynb"
    shutil.copy(src, lab.server.root / "quickstart.ipynb")
    lab.open_notebook("quickstart.ipynb")
    lab.run_all()
    lab.shown_output(_index(src, "ctx"), "Next request")  # the last cell that shows something

    rerun = lab.shown_output(_index(src, "rerun"), "forked:")
    assert "forked: True" in rerun  # by cell id in JupyterLab, as by text under nbclient

    # the cell's first output: the live AgentView, or its durable rendering once the run is over
    ask = _cell(lab, _index(src, "ask")).locator(".jp-OutputArea-output").first
    ask.get_by_text("Out: np.float64(120.5)").first.wait_for(timeout=30_000)
    _save(lab, "agent-view.png", ask)

    tree = _cell(lab, _index(src, "tree")).locator(".pitv-root")
    tree.locator("svg g.node").first.wait_for(timeout=30_000)
    east = tree.locator("svg g.node", has_text="east").first
    east.click()
    tree.locator(".pitv-panel").wait_for(timeout=15_000)
    assert "pitv-selected" in (east.get_attribute("class") or "")
    fit = tree.get_by_role("button", name="Fit")
    if fit.count():
        fit.first.click()  # the whole tree in view, the selection kept
        lab.settled(tree)
    _save(lab, "tree-view.png", tree)

    lab.page.set_viewport_size({"width": 1280, "height": 1800})  # the whole comparison, clear of the status bar
    compare = _cell(lab, _index(src, "cmp")).locator(".jp-OutputArea-output")
    assert "north" in compare.first.inner_text() and "east" in compare.first.inner_text()
    _save(lab, "compare.png", compare.first)


def test_experiment_table_in_jupyterlab(lab):
    src = NOTEBOOKS / "experiment.ipynb"
    shutil.copy(src, lab.server.root / "experiment.ipynb")
    data = lab.server.root / "data"
    if not data.exists():
        shutil.copytree(NOTEBOOKS / "data", data)
    lab.open_notebook("experiment.ipynb")
    lab.run_all()
    out = lab.shown_output(_index(src, "check"), "same scores")
    assert "same scores: True" in out
    summary = _cell(lab, _index(src, "summary")).locator(".jp-OutputArea-output")
    assert "with python" in summary.first.inner_text()
    _save(lab, "experiment-table.png", summary.first)
