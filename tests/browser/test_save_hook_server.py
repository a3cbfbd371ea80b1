"""The save hook, through the real save path: Jupyter Server's contents API, and JupyterLab's Save.

With JupyterLab's default settings the widget state is not saved, and a saved widget view would
read "Error displaying widget": the hook keeps only the static types of pi's widget outputs. A
user who turned *Save Widget State Automatically* on has the state in the file: then the widget
can still be drawn, and the hook must keep its view. Both are checked on what lands in the file.
"""

from __future__ import annotations

import json

import pytest

from pi_jupyter.notebook.durable.outputs import WIDGET_STATE, WIDGET_VIEW

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

DURABLE = ["image/svg+xml", "text/plain"]


def _widget_output(model_id: str) -> dict:
    return {
        "output_type": "display_data",
        "data": {
            WIDGET_VIEW: {"version_major": 2, "version_minor": 1, "model_id": model_id},
            "image/svg+xml": "<svg xmlns='http://www.w3.org/2000/svg'/>",
            "text/plain": "the tree",
        },
        "metadata": {"pi_jupyter": {"durable": DURABLE}},
    }


def _notebook(saved_models: list[str] | None) -> dict:
    import nbformat

    nb = nbformat.v4.new_notebook()
    for model_id in ("saved-model", "gone-model"):
        cell = nbformat.v4.new_code_cell("%pi tree")
        cell.outputs = [nbformat.from_dict(_widget_output(model_id))]
        nb.cells.append(cell)
    if saved_models is not None:
        nb.metadata["widgets"] = {WIDGET_STATE: {"version_major": 2, "version_minor": 0, "state": {m: {} for m in saved_models}}}
    return json.loads(nbformat.writes(nb))


def _put(server, name: str, content: dict) -> dict:
    (server.root / "hook").mkdir(exist_ok=True)
    server.api(f"/api/contents/hook/{name}", method="PUT", body={"type": "notebook", "format": "json", "content": content})
    return json.loads((server.root / "hook" / name).read_text())


def test_a_notebook_that_saved_widget_state_keeps_its_widget_views(jupyter_server):
    saved = _put(jupyter_server, "with_state.ipynb", _notebook(["saved-model"]))
    kept, dropped = (cell["outputs"][0]["data"] for cell in saved["cells"])
    assert WIDGET_VIEW in kept  # its model's state is in the file: the widget can still be drawn
    assert WIDGET_VIEW not in dropped and set(dropped) == set(DURABLE)  # no state for this one: the static types only
    assert saved["metadata"]["widgets"][WIDGET_STATE]["state"] == {"saved-model": {}}


def test_a_notebook_without_widget_state_keeps_the_static_types_only(jupyter_server):
    saved = _put(jupyter_server, "no_state.ipynb", _notebook(None))
    for cell in saved["cells"]:
        assert set(cell["outputs"][0]["data"]) == set(DURABLE)


def test_jupyterlab_save_with_widget_state_on_keeps_the_tree_widget(lab, save_widget_state, jupyter_server):
    setup = '%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"\n%pi new saved-state'
    lab.write_notebook("tree_state.ipynb", [setup, "%%pi\nHello.", "%pi tree"])
    lab.open_notebook("tree_state.ipynb")
    lab.run_all()
    lab.cell(2).locator(".pitv-root").wait_for(timeout=60_000)
    lab.wait_for_output(1, "pi: stop")
    lab.save()
    saved = json.loads((jupyter_server.root / "tree_state.ipynb").read_text())
    state = saved["metadata"]["widgets"][WIDGET_STATE]["state"]
    views = [o["data"][WIDGET_VIEW]["model_id"] for o in saved["cells"][2]["outputs"] if WIDGET_VIEW in o.get("data", {})]
    assert views and views[0] in state  # the user's choice: the live tree comes back from the saved state
    tree = next(o for o in saved["cells"][2]["outputs"] if WIDGET_VIEW in o.get("data", {}))
    assert "image/svg+xml" in tree["data"]  # and the picture is still there for viewers without widgets
