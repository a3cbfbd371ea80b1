"""The server's pre-save hook keeps the static rendering of pi widgets in the saved file.

A dangling widget view reads "Error displaying widget: model not found" after a restart
with JupyterLab's default settings; marked outputs are written with their durable types only,
unless the notebook saved the widget state (then the widget can still be drawn).
"""

from __future__ import annotations

import copy

from pi_jupyter.notebook.durable.save_hook import WIDGET_VIEW, make_durable, pre_save_hook

WIDGET = {WIDGET_VIEW: {"version_major": 2, "version_minor": 1, "model_id": "m1"}}


def _nb(outputs, metadata=None):
    return {"cells": [{"cell_type": "code", "outputs": outputs, "source": ""}], "metadata": metadata or {}}


def _tree_output():
    data = {**WIDGET, "text/html": "<svg/>", "image/svg+xml": "<svg/>", "image/png": "iVBOR", "text/plain": "tree"}
    return {
        "output_type": "display_data",
        "data": data,
        "metadata": {"pi_jupyter": {"durable": ["image/svg+xml", "image/png", "text/plain"]}},
    }


def test_marked_widget_outputs_keep_only_their_durable_types():
    foreign = {"output_type": "display_data", "data": {**WIDGET, "text/plain": "slider"}, "metadata": {}}
    nb = _nb([_tree_output(), foreign])
    assert make_durable(nb) == 1
    assert nb["cells"][0]["outputs"][0]["data"] == {"image/svg+xml": "<svg/>", "image/png": "iVBOR", "text/plain": "tree"}
    assert nb["cells"][0]["outputs"][1] == foreign  # other libraries' widgets are not ours to change


def test_saved_widget_state_keeps_the_widget():
    state = {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {"m1": {}}}}}
    nb = _nb([_tree_output()], state)
    before = copy.deepcopy(nb)
    assert make_durable(nb) == 0 and nb == before


def test_hook_ignores_files_and_odd_outputs():
    model = {"type": "file", "content": "text"}
    pre_save_hook(model=model, path="a.txt", contents_manager=None)
    assert model == {"type": "file", "content": "text"}
    odd = _nb([{"output_type": "stream", "text": "x"}, {"data": {WIDGET_VIEW: "not a dict"}, "metadata": {"pi_jupyter": "odd"}}])
    assert make_durable(odd) == 0
    nb = {"type": "notebook", "content": _nb([_tree_output()])}
    pre_save_hook(model=nb, path="a.ipynb", contents_manager=None)
    assert WIDGET_VIEW not in nb["content"]["cells"][0]["outputs"][0]["data"]


def test_the_wheel_enables_the_hook_in_jupyter_server():
    import importlib
    import json
    from pathlib import Path

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[1]
    shared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    (source, target), *_ = shared.items()
    assert target == "etc/jupyter/jupyter_server_config.d"  # where jupyter_server looks for extension switches
    enabled = json.loads((root / source / "pi_jupyter.json").read_text())["ServerApp"]["jpserver_extensions"]
    for module, on in enabled.items():
        assert on is True
        points = importlib.import_module(module)._jupyter_server_extension_points()
        assert points == [{"module": module}]


def test_the_static_tree_is_a_picture_every_viewer_draws(tmp_path):
    import shutil

    from pi_jupyter import Agent
    from pi_jupyter.notebook.tree_view.display import show_tree
    from pi_jupyter.views import sample_session, session_graph_class

    graph = show_tree(Agent(sample_session(40, seed=1)), ["--static"])
    assert isinstance(graph, session_graph_class())
    data = graph._repr_mimebundle_()
    assert "text/html" not in data  # inline SVG in HTML is sanitized into loose text in an untrusted notebook
    if shutil.which("dot"):
        assert data["image/svg+xml"].startswith("<svg") and data["image/png"].startswith("iVBOR")
    assert "8 turns" in data["text/plain"] and "You: Which features matter most?" in data["text/plain"]  # the text tree
