"""The AgentView widget: one agent's live event stream in a cell, and what its browser half sends back.

Owns the widget (:mod:`.view`), the items it sends (:mod:`.blocks`), its transport (:mod:`.transport`),
"Forget this" (:mod:`.actions`), step mode (:mod:`.step`) and sibling answers (:mod:`.siblings`).
May import the layers above ``notebook`` and the notebook's own shared modules; nothing imports it
but the notebook face.
"""

from typing import Any

__all__ = ["AgentView", "ViewState"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.view"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
