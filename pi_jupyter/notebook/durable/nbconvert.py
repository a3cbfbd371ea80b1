"""An nbconvert preprocessor: every export shows what pi outputs read without a kernel, never an empty widget.

``jupyter nbconvert --execute`` (and nbclient, papermill) saves the widget state, so the save hook
(:mod:`.save_hook`) would keep a TreeView's widget view, and nbconvert's HTML would draw it with
a widget manager fetched from a CDN: an empty tree on an offline page, in a PDF, on nbviewer.
This preprocessor gives every marked pi output its durable types only (the tree as
``image/svg+xml`` and ``image/png``, the transcript as HTML and Markdown) and drops the state of
pi widgets, so a notebook holding no other widget needs no widget JavaScript at all. Other
libraries' widgets and their state are left as they are, and so is any part of a malformed
notebook this module does not understand (an export never fails because of pi).

Enabled (:func:`enable`) for every ``jupyter nbconvert`` run by ``jupyter-config/jupyter_nbconvert_config.py``,
which the wheel installs, and for JupyterLab's "Save and Export Notebook As" by the server extension
of :mod:`.save_hook`. Imported by nbconvert and the server only; no IPython or widget import here.
"""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor

from .outputs import WIDGET_STATE, make_durable, outputs_of
from .readers import for_reader

PI_WIDGET_PREFIX = "pi_jupyter."
"""anywidget records the widget's class (``_anywidget_id``: module and name) in its saved state."""

MODEL_REF = "IPY_MODEL_"


def _refs(value: Any) -> set[str]:
    """Model ids a widget's state points at (``"IPY_MODEL_<id>"`` anywhere in it: layout, style, children).

    Walked with a stack, not recursion: a saved state nested as deep as JSON allows is still read.
    """
    found: set[str] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            if item.startswith(MODEL_REF):
                found.add(item[len(MODEL_REF) :])
        elif isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return found


def _reachable(models: dict[str, Any], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = [r for r in roots if r in models]
    while todo:
        model_id = todo.pop()
        if model_id in seen:
            continue
        seen.add(model_id)
        model = models[model_id]
        state = model.get("state") if isinstance(model, dict) else None
        todo.extend(r for r in _refs(state) if r in models and r not in seen)
    return seen


def _is_pi_widget(model: Any) -> bool:
    state = model.get("state") if isinstance(model, dict) else None
    kind = state.get("_anywidget_id") if isinstance(state, dict) else None
    return isinstance(kind, str) and kind.startswith(PI_WIDGET_PREFIX)


def drop_pi_widget_state(nb: dict[str, Any]) -> int:
    """Remove pi widgets (and the layout models only they use) from ``nb``'s saved widget state; returns how many models went.

    When no model is left, the widget metadata goes too, so nbconvert adds no widget manager to the page.
    """
    metadata = nb.get("metadata")
    widgets = metadata.get("widgets") if isinstance(metadata, dict) else None
    state = widgets.get(WIDGET_STATE) if isinstance(widgets, dict) else None
    models = state.get("state") if isinstance(state, dict) else None
    if not (isinstance(metadata, dict) and isinstance(widgets, dict) and isinstance(models, dict)):
        return 0
    ours = {model_id for model_id, model in models.items() if _is_pi_widget(model)}
    if not ours:
        return 0
    gone = _reachable(models, ours) - _reachable(models, set(models) - _reachable(models, ours))
    for model_id in gone:
        del models[model_id]
    if not models:
        del widgets[WIDGET_STATE]
        if not widgets:
            del metadata["widgets"]
    return len(gone)


def _pi_outputs(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        o
        for o in outputs_of(nb)
        if isinstance(o.get("data"), dict) and isinstance(o.get("metadata"), dict) and isinstance(o["metadata"].get("pi_jupyter"), dict)
    ]


class PiDurableOutputs(Preprocessor):
    """Every pi output in an export shows its static rendering.

    It must run after ``ExecutePreprocessor`` (``--execute`` adds the outputs) and before
    ``SVG2PDFPreprocessor`` (LaTeX exports): the configuration inserts it there.
    """

    def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
        """Strip the widget views of pi outputs and pi widgets' saved state (other widgets untouched).

        For LaTeX and PDF the tree goes as its PNG: nbconvert would turn the SVG into PDF with
        Inkscape and fail where Inkscape is missing, and LaTeX takes the PNG anyway.
        """
        make_durable(nb, keep_saved_widgets=False)
        drop_pi_widget_state(nb)
        for_reader(nb, self.parent)  # Markdown files and sanitized HTML: the transcript, not tags and scripts
        from nbconvert.exporters import LatexExporter

        if isinstance(self.parent, LatexExporter):
            for output in _pi_outputs(nb):
                if "image/png" in output["data"]:
                    output["data"].pop("image/svg+xml", None)
        return nb, resources


NAME = f"{__name__}.PiDurableOutputs"
EXECUTE = "nbconvert.preprocessors.ExecutePreprocessor"


def enable(config: Any) -> None:
    """Add :class:`PiDurableOutputs` to the nbconvert preprocessors of ``config`` (a traitlets ``Config``).

    It goes right after ``ExecutePreprocessor`` in ``Exporter.default_preprocessors`` (``--execute``
    adds the outputs; ``SVG2PDFPreprocessor`` comes later), as an insertion, so a list the user
    configured is kept; ``Exporter.preprocessors`` would run too late for LaTeX.
    """
    from nbconvert.exporters import Exporter

    listed = config.Exporter.default_preprocessors  # the user's list, or a lazy value that edits the default
    if isinstance(listed, list):
        current = listed
    else:
        current = list(Exporter.class_traits()["default_preprocessors"].default() or [])
        if any(obj == NAME for _, obj in listed.to_dict().get("inserts", [])):
            return
    if NAME in current:
        return
    listed.insert(current.index(EXECUTE) + 1 if EXECUTE in current else len(current), NAME)
    config.PiDurableOutputs.enabled = True


__all__ = ["PiDurableOutputs", "drop_pi_widget_state", "enable"]
