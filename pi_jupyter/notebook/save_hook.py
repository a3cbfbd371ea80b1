"""A Jupyter server pre-save hook: saved notebooks hold the static rendering, never a dangling widget.

JupyterLab and Notebook 7 draw an ``application/vnd.jupyter.widget-view+json`` output before
any other type in its bundle; with the default settings the widget's state is not saved, so
after a restart such an output reads "Error displaying widget: model not found" even though
the bundle carries a static rendering. Outputs of pi-jupyter widgets mark the types that read
without the kernel (``metadata["pi_jupyter"]["durable"]``); on save, this hook keeps only
those in the file, unless the notebook saved the widget's state (then the widget can still be
drawn and nothing changes). The page keeps its live widgets; the file on disk is durable.

Enabled by ``jupyter-config/jupyter_server_config.d/pi_jupyter.json``, which the wheel installs;
no IPython or widget import here (it runs in the server process).
"""

from __future__ import annotations

from typing import Any

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


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


def pre_save_hook(model: dict[str, Any], **_: Any) -> None:
    """The hook itself (``ContentsManager.register_pre_save_hook``): notebooks only."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        make_durable(model["content"])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pi_jupyter.notebook.save_hook"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(pre_save_hook)
    serverapp.log.info("pi-jupyter: saved notebooks keep the static rendering of pi widgets")
    try:  # "Save and Export Notebook As" runs nbconvert in the server, with the server's configuration
        from .nbconvert_durable import enable
    except ImportError:  # nbconvert is not installed: there is no export to fix
        return
    enable(serverapp.config)


__all__ = ["WIDGET_STATE", "WIDGET_VIEW", "make_durable", "pre_save_hook"]
