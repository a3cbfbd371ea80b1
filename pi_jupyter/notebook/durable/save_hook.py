"""A Jupyter server pre-save hook: saved notebooks hold the static rendering, never a dangling widget.

JupyterLab and Notebook 7 draw an ``application/vnd.jupyter.widget-view+json`` output before
any other type in its bundle; with the default settings the widget's state is not saved, so
after a restart such an output reads "Error displaying widget: model not found" even though
the bundle carries a static rendering. Outputs of pi-jupyter widgets mark the types that read
without the kernel (``metadata["pi_jupyter"]["durable"]``); on save, this hook keeps only
those in the file, unless the notebook saved the widget's state (then the widget can still be
drawn and nothing changes). The page keeps its live widgets; the file on disk is durable.

Enabled by ``jupyter-config/jupyter_server_config.d/pi_jupyter.json``, which the wheel installs;
the same server extension enables the nbconvert preprocessor (:mod:`.nbconvert_durable`) for
JupyterLab's "Save and Export Notebook As", and logs the server's renames for the kernels
(:mod:`.moves`). No IPython or widget import here (it runs in the server process).
"""

from __future__ import annotations

from typing import Any

from .outputs import WIDGET_STATE, WIDGET_VIEW, make_durable


def pre_save_hook(model: dict[str, Any], **_: Any) -> None:
    """The hook itself (``ContentsManager.register_pre_save_hook``): notebooks only."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        make_durable(model["content"])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pi_jupyter.notebook.durable.save_hook"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.contents_manager.register_pre_save_hook(pre_save_hook)
    serverapp.log.info("pi-jupyter: saved notebooks keep the static rendering of pi widgets")
    from ..moves import listen

    listen(serverapp)  # renames reach the running kernels: a notebook's session follows it (see moves)
    try:  # "Save and Export Notebook As" runs nbconvert in the server, with the server's configuration
        from .nbconvert import enable
    except ImportError:  # nbconvert is not installed: there is no export to fix
        return
    enable(serverapp.config)


__all__ = ["WIDGET_STATE", "WIDGET_VIEW", "make_durable", "pre_save_hook"]
