"""The TreeView widget: the session graph in a cell that follows the session, with actions on any node.

Owns the widget (:mod:`.view`), ``%pi tree`` (:mod:`.display`), quick redraws and patches
(:mod:`.quick`, :mod:`.patch`), the side panel (:mod:`.html`), the browser's messages (:mod:`.messages`)
and the node actions (:mod:`.actions`, :mod:`.compact`). Draws through :mod:`pi_jupyter.views.graph`.
"""

from typing import Any

__all__ = ["TreeView", "presentation_scale"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.view"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
