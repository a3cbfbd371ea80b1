"""The shipped notebooks as a reader first sees them: opened in JupyterLab (default settings), nothing run.

Each saved notebook is opened as it is in the repository; every code cell that was saved with
outputs is scrolled into view and its outputs must show something (text, a table, a picture; a picture where one was saved):
never "Error displaying widget", never "Loading widget", never an empty box. Each cell's
outputs are photographed into ``artifacts/reader/<notebook>/``.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import nbformat
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
BAD = ("Error displaying widget", "Loading widget", "Traceback")

# what each rendered output shows: its text, and whether it holds a picture or a drawing
_SHOWN = """els => els.map(e => { const r = e.getBoundingClientRect();
  return {text: e.innerText.trim(), pictures: e.querySelectorAll('img, svg, canvas').length, height: r.height}; })"""


def _shown(cell, wait: float = 10) -> list[dict]:
    """The cell's rendered outputs, once none of them is still loading (a widget's first words)."""
    outputs = cell.locator(".jp-OutputArea-output")
    deadline = time.monotonic() + wait
    while True:
        seen = outputs.evaluate_all(_SHOWN)
        if seen and not any("Loading widget" in o["text"] for o in seen) or time.monotonic() > deadline:
            return seen
        time.sleep(0.25)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_saved_output_shows_without_running_the_notebook(lab, path):
    shutil.copy(path, lab.server.root / path.name)
    data = lab.server.root / "data"
    if not data.exists():
        shutil.copytree(path.parent / "data", data)
    lab.open_notebook(path.name)
    shots = ROOT / "artifacts" / "reader" / path.stem
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    problems: list[str] = []
    cells = nbformat.read(path, as_version=4).cells
    for index, saved in enumerate(cells):
        if saved.cell_type != "code" or not saved.outputs:
            continue
        cell = lab.show_cell(index)
        seen = _shown(cell)
        where = f"cell {index} ({saved.get('id')})"
        if not seen:
            problems.append(f"{where}: saved with {len(saved.outputs)} output(s), none shown")
        for number, output in enumerate(seen):
            bad = [b for b in BAD if b in output["text"]]
            if bad:
                problems.append(f"{where}, output {number}: shows {bad[0]!r}: {output['text'][:120]!r}")
            elif not output["text"] and not output["pictures"] or output["height"] < 4:
                problems.append(f"{where}, output {number}: an empty box")
        pictures = sum(1 for o in saved.outputs if {"image/png", "image/svg+xml"} & set(o.get("data", {})))
        if pictures > sum(1 for o in seen if o["pictures"]):
            problems.append(f"{where}: saved with {pictures} picture(s), shows {sum(1 for o in seen if o['pictures'])}")
        # a comparison of two branches' variables reads left to right, as the rest of the page (JupyterLab right-aligns table cells)
        aligned = cell.locator(".pi-world-compare td").evaluate_all("els => els.map(e => getComputedStyle(e).textAlign)")
        if any(a not in ("left", "start") for a in aligned):
            problems.append(f"{where}: the cells of 'Variables and files that differ' are aligned {sorted(set(aligned))}")
        cell.locator(".jp-OutputArea").screenshot(path=str(shots / f"{index:02d}-{saved.get('id')}.png"))
    assert not [line for line in lab.console if "pageerror" in line], lab.console[-10:]
    assert not problems, "\n".join(problems)
