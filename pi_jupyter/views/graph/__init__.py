"""The session tree drawn: ``Session.graph()`` as Graphviz, folded into units, laid out, rendered.

Owns cutting the tree into units (:mod:`.units`), folding (:mod:`.layout`), what a node says
(:mod:`.nodes`), the digraph (:mod:`.digraph`) and its cache (:mod:`.cache`), rendering with ``dot``
(:mod:`.render`, :mod:`.dot_pipe`, :mod:`.raster`) and the text fallback (:mod:`.text_tree`).
"""

from typing import Any

__all__ = ["GraphModel", "GraphOptions", "build_graph", "build_model", "parse_options"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.digraph"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
