"""Views of a session for people: the tree as a graph (Graphviz or text) and branch comparisons.

Pure Python over the session store (no IPython): :func:`build_graph` is what
``Session.graph()`` returns, :func:`compare` what ``Session.compare()`` returns (the package root
provides them to the store through :mod:`pi_jupyter.session.viewers`). The notebook
widgets (``pi_jupyter.notebook.tree_view.view``) are built on these.
"""

from __future__ import annotations

from typing import Any

from .compare.branches import AnswerDiff, BranchStats, Comparison, TurnStats, compare
from .figure import SvgFigure
from .graph.digraph import GraphModel, GraphOptions, build_graph, build_model, parse_options, session_graph_class
from .graph.nodes import GraphNode
from .graph.render import INSTALL_HINT, RenderResult, available_backends, find_program, render_svg
from .graph.text_tree import TextTree
from .sample import sample_session, write_turn


def __getattr__(name: str) -> Any:
    if name == "SessionGraph":
        return session_graph_class()
    raise AttributeError(f"module 'pi_jupyter.views' has no attribute {name!r}")


__all__ = [
    "INSTALL_HINT",
    "AnswerDiff",
    "BranchStats",
    "Comparison",
    "SvgFigure",
    "TurnStats",
    "compare",
    "GraphModel",
    "GraphNode",
    "GraphOptions",
    "RenderResult",
    "TextTree",
    "available_backends",
    "build_graph",
    "build_model",
    "find_program",
    "parse_options",
    "render_svg",
    "sample_session",
    "session_graph_class",
    "write_turn",
]
