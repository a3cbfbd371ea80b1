"""Malformed notebooks that nbconvert still exports (issue 29): pi's preprocessor leaves what it does not understand as it is.

Hand-edited files, other tools and old versions leave notebooks whose parts have the wrong
type: a cell or an output that is not an object, outputs that are not a list, metadata that
is a list, widget state of every wrong shape, a durable list naming types that are not
there (or are not even strings). nbformat reads them with a warning and nbconvert exports
them; pi's preprocessor must not turn them into a traceback. Every case holds a well-formed
pi output too, which still loses its widget view, and the odd parts are compared before and
after: untouched. The entry point users hit, ``jupyter nbconvert``, runs on each case too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_jupyter.notebook.durable.nbconvert import PiDurableOutputs
from pi_jupyter.notebook.durable.outputs import make_durable

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATE = "application/vnd.jupyter.widget-state+json"


def good_output() -> dict[str, Any]:
    data = {WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": "m1"}, "image/png": "iVBOR", "text/plain": "tree"}
    return {"output_type": "display_data", "data": data, "metadata": {"pi_jupyter": {"durable": ["image/png", "text/plain"]}}}


def notebook(*, cells: Any = None, metadata: Any = None, extra_outputs: Any = ()) -> dict[str, Any]:
    good = {"cell_type": "code", "source": "%pi tree", "metadata": {}, "execution_count": 1, "outputs": [good_output(), *extra_outputs]}
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {} if metadata is None else metadata,
        "cells": [good, *(cells or [])],
    }


def _state(models: Any) -> dict[str, Any]:
    return {"widgets": {STATE: {"version_major": 2, "version_minor": 0, "state": models}}}


PI_TREE = "pi_jupyter.notebook.tree_view.display.DurableTreeView"
DEEP = json.loads("[" * 300 + '"IPY_MODEL_m1"' + "]" * 300)
VIEW = {"version_major": 2, "version_minor": 0, "model_id": "m5"}
ANYWIDGET = {"model_module": "anywidget", "model_name": "AnyModel", "model_module_version": "*"}

EXPORTABLE: dict[str, dict[str, Any]] = {
    # nbconvert exports each of these without pi's preprocessor; with it, each was a traceback
    "durable-names-an-object": notebook(
        extra_outputs=[
            {
                "output_type": "display_data",
                "data": {WIDGET_VIEW: VIEW, "text/plain": "x"},
                "metadata": {"pi_jupyter": {"durable": [{"a": 1}, "text/plain"]}},
            }
        ]
    ),
    "durable-names-a-list": notebook(
        extra_outputs=[
            {
                "output_type": "display_data",
                "data": {WIDGET_VIEW: VIEW, "text/plain": "x"},
                "metadata": {"pi_jupyter": {"durable": [["text/plain"]]}},
            }
        ]
    ),
    "widget-model-state-a-list": notebook(metadata=_state({"m1": {**ANYWIDGET, "state": ["x"]}})),
    "widget-model-state-a-string": notebook(metadata=_state({"m1": {**ANYWIDGET, "state": "x"}})),
    "widget-models-odd": notebook(
        metadata=_state(
            {"m1": "x", "m2": None, "m3": {**ANYWIDGET, "state": {"_anywidget_id": ["pi_jupyter.x"]}}, "m4": {**ANYWIDGET, "state": []}}
        )
    ),
    # another library's widget whose state nests as deep as a notebook can, beside a pi widget that goes
    "widget-state-deep": notebook(
        metadata=_state({"p": {**ANYWIDGET, "state": {"_anywidget_id": PI_TREE}}, "m1": {**ANYWIDGET, "state": {"deep": DEEP}}})
    ),
}

CASES: dict[str, dict[str, Any]] = {
    **EXPORTABLE,
    "cell-not-an-object": notebook(cells=["just a string", 7, None]),
    "outputs-not-a-list": notebook(cells=[{"cell_type": "code", "source": "", "metadata": {}, "outputs": {"a": 1}}]),
    "outputs-a-string": notebook(cells=[{"cell_type": "code", "source": "", "metadata": {}, "outputs": "oops"}]),
    "output-not-an-object": notebook(extra_outputs=["text", 3, None, [1]]),
    "output-metadata-a-list": notebook(extra_outputs=[{"output_type": "display_data", "data": {"text/plain": "x"}, "metadata": [1, 2]}]),
    "pi-metadata-a-string": notebook(
        extra_outputs=[{"output_type": "display_data", "data": {WIDGET_VIEW: {}, "text/plain": "x"}, "metadata": {"pi_jupyter": "yes"}}]
    ),
    "durable-not-strings": notebook(
        extra_outputs=[
            {
                "output_type": "display_data",
                "data": {WIDGET_VIEW: {"model_id": ["a"]}, "text/plain": "x"},
                "metadata": {"pi_jupyter": {"durable": [{"a": 1}, ["text/plain"], None, "text/plain"]}},
            }
        ]
    ),
    "durable-types-missing": notebook(
        extra_outputs=[
            {
                "output_type": "display_data",
                "data": {WIDGET_VIEW: {"model_id": "m2"}},
                "metadata": {"pi_jupyter": {"durable": ["image/svg+xml", "text/html"]}},
            }
        ]
    ),
    "data-not-an-object": notebook(
        extra_outputs=[{"output_type": "display_data", "data": ["text/plain"], "metadata": {"pi_jupyter": {"durable": ["text/plain"]}}}]
    ),
    "metadata-a-list": notebook(metadata=[1, 2, 3]),
    "widgets-a-list": notebook(metadata={"widgets": ["x"]}),
    "widget-state-a-string": notebook(metadata={"widgets": {STATE: "broken"}}),
    "widget-models-a-list": notebook(metadata=_state([1, 2])),
    "widget-model-state-a-list": notebook(
        metadata=_state(
            {
                "m1": {"model_module": "anywidget", "model_name": "AnyModel", "state": ["not", "an", "object"]},
                "m2": "a string",
                "m3": {"state": {"_anywidget_id": ["pi_jupyter.x"], "layout": "IPY_MODEL_m4"}},
                "m4": {"state": None},
            }
        )
    ),
    "widget-model-id-not-a-string": notebook(
        metadata=_state({"m1": {"state": {"_anywidget_id": 7, "children": [["IPY_MODEL_m1"], {"x": "IPY_MODEL_m9"}]}}})
    ),
}


def clone(nb: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(nb))  # copy.deepcopy recurses deeper than the deepest case allows


def _odd_parts(nb: dict[str, Any]) -> Any:
    """Everything but the well-formed pi output, which the preprocessor is meant to change."""
    out = clone(nb)
    out["cells"][0]["outputs"] = out["cells"][0]["outputs"][1:]
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_preprocessor_leaves_what_it_does_not_understand(name):
    nb = clone(CASES[name])
    before = _odd_parts(nb)
    PiDurableOutputs().preprocess(nb, {})
    assert nb["cells"][0]["outputs"][0]["data"] == {"image/png": "iVBOR", "text/plain": "tree"}  # the sound output is made durable
    after = _odd_parts(nb)
    if name == "durable-types-missing":
        assert after == before  # nothing durable to keep: the widget view stays rather than an empty output
    elif not name.startswith("widget"):
        assert after == before, name
    elif name == "widget-state-deep":  # the pi widget's state goes, the other library's stays whole
        del before["metadata"]["widgets"][STATE]["state"]["p"]
        assert after == before
    else:  # none of these odd models is a pi widget: all of them stay
        assert after == before, name


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_save_hooks_cut_leaves_what_it_does_not_understand(name):
    """The save hook shares the cut (keeping saved widgets): the same shapes must not break saving."""
    nb = clone(CASES[name])
    before = _odd_parts(nb)
    make_durable(nb, keep_saved_widgets=True)
    assert _odd_parts(nb) == before


@pytest.mark.parametrize("name", sorted(EXPORTABLE))
def test_jupyter_nbconvert_exports_them_as_it_does_without_pi(tmp_path, name):
    path = tmp_path / f"{name}.ipynb"
    path.write_text(json.dumps(EXPORTABLE[name]))
    user = tmp_path / "user-config"
    user.mkdir()
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config"), "JUPYTER_CONFIG_DIR": str(user)}
    done = subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    html = (tmp_path / f"{name}.html").read_text()
    assert 'src="data:image/png;base64,iVBOR' in html  # the sound pi output shows its picture
