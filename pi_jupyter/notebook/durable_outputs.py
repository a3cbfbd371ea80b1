"""Which types of a pi output read without the kernel, and how a notebook is cut down to them.

Outputs of pi-jupyter widgets name their durable types in ``metadata["pi_jupyter"]["durable"]``;
the server's save hook (:mod:`.save_hook`) and nbconvert's preprocessor (:mod:`.nbconvert_durable`)
both keep only those. No IPython, widget or nbconvert import here.
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


def _saved_models(nb: dict[str, Any]) -> set[str]:
    state = ((nb.get("metadata") or {}).get("widgets") or {}).get(WIDGET_STATE) or {}
    return set((state.get("state") or {}).keys())


def make_durable(nb: dict[str, Any], *, keep_saved_widgets: bool = True) -> int:
    """Drop the widget view (and other live-only types) from marked outputs of ``nb`` in place; returns how many changed.

    With ``keep_saved_widgets`` (the save hook), a widget whose state the notebook saved stays;
    without it (exports: :mod:`.nbconvert_durable`), every marked output keeps its durable types only.
    """
    saved = _saved_models(nb) if keep_saved_widgets else set()
    changed = 0
    for cell in nb.get("cells") or []:
        for output in cell.get("outputs") or []:
            data = output.get("data")
            meta = (output.get("metadata") or {}).get("pi_jupyter")
            if not isinstance(data, dict) or WIDGET_VIEW not in data or not isinstance(meta, dict):
                continue
            keep = meta.get("durable")
            if not isinstance(keep, list) or not any(k in data for k in keep):
                continue
            model_id = (data.get(WIDGET_VIEW) or {}).get("model_id") if isinstance(data.get(WIDGET_VIEW), dict) else None
            if model_id in saved:
                continue
            output["data"] = {k: v for k, v in data.items() if k in keep}
            changed += 1
    return changed


__all__ = ["STATIC_SIGNATURES", "WIDGET_STATE", "WIDGET_VIEW", "is_pi_output", "make_durable"]
