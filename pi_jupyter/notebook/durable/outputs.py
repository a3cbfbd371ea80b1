"""Which types of a pi output read without the kernel, and how a notebook is cut down to them.

Outputs of pi-jupyter widgets name their durable types in ``metadata["pi_jupyter"]["durable"]``;
the server's save hook (:mod:`.save_hook`) and nbconvert's preprocessor (:mod:`.nbconvert_durable`)
both keep only those. A part of the notebook of an unexpected type (a cell that is not an object,
outputs that are not a list, widget state of any odd shape) is left as it is. No IPython,
widget or nbconvert import here.
"""

from __future__ import annotations

from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


STATIC_SIGNATURES = ('<div class="pi-static"', '<div class="pi-experiment-done"')
"""How the HTML of a finished pi output begins (a finished run's output replaces the widget and carries no metadata)."""


def is_pi_output(output: dict[str, Any]) -> bool:
    """True for an output pi-jupyter made: marked in its metadata, or a finished run's static rendering."""
    data = output.get("data")
    if not isinstance(data, dict):
        return False
    metadata = output.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("pi_jupyter"), dict):
        return True
    page = data.get("text/html")
    page = "".join(page) if isinstance(page, list) else page
    return isinstance(page, str) and page.lstrip().startswith(STATIC_SIGNATURES)


def _get(value: Any, key: str) -> Any:
    """``value[key]`` when ``value`` is a dict, else ``None``: a malformed notebook is read, never trusted."""
    return value.get(key) if isinstance(value, dict) else None


def outputs_of(nb: Any) -> list[dict[str, Any]]:
    """Every output of ``nb`` that is an object, in cells that are objects with a list of outputs (anything else is skipped)."""
    cells = _get(nb, "cells")
    out: list[dict[str, Any]] = []
    for cell in cells if isinstance(cells, list) else []:
        outputs = _get(cell, "outputs")
        out.extend(o for o in (outputs if isinstance(outputs, list) else []) if isinstance(o, dict))
    return out


def _saved_models(nb: dict[str, Any]) -> set[str]:
    models = _get(_get(_get(_get(nb, "metadata"), "widgets"), WIDGET_STATE), "state")
    return {k for k in models if isinstance(k, str)} if isinstance(models, dict) else set()


def make_durable(nb: dict[str, Any], *, keep_saved_widgets: bool = True) -> int:
    """Drop the widget view (and other live-only types) from marked outputs of ``nb`` in place; returns how many changed.

    With ``keep_saved_widgets`` (the save hook), a widget whose state the notebook saved stays;
    without it (exports: :mod:`.nbconvert_durable`), every marked output keeps its durable types only.
    """
    saved = _saved_models(nb) if keep_saved_widgets else set()
    changed = 0
    for output in outputs_of(nb):
        data = output.get("data")
        durable = _get(_get(output.get("metadata"), "pi_jupyter"), "durable")
        if not isinstance(data, dict) or WIDGET_VIEW not in data or not isinstance(durable, list):
            continue
        if not all(isinstance(k, str) for k in durable):
            continue  # a list of MIME type names, or a mark this version does not understand: left alone
        keep = set(durable)
        if not keep & data.keys():
            continue
        model_id = _get(data.get(WIDGET_VIEW), "model_id")
        if isinstance(model_id, str) and model_id in saved:
            continue
        output["data"] = {k: v for k, v in data.items() if k in keep}
        changed += 1
    return changed


__all__ = ["STATIC_SIGNATURES", "WIDGET_STATE", "WIDGET_VIEW", "is_pi_output", "make_durable", "outputs_of"]
