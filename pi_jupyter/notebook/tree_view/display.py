"""``%pi tree``: the TreeView when widgets work here, else the graph (SVG, or text without Graphviz).

The TreeView's output carries the durable bundle of the tree beside the widget (saying when it was
drawn: what is done later in the live tree is not in it): the picture as
``image/svg+xml`` (which GitHub, nbviewer, nbconvert and a trusted JupyterLab draw) and as
``image/png`` (which an untrusted JupyterLab draws: it shows SVG only in trusted outputs), and
the text tree; the output's metadata names these types, so the save hook
(:mod:`.save_hook`) writes only them to the file when the widget's state is not saved.
"""

from __future__ import annotations

import argparse
import base64
import time
from typing import Any

from ...views import TextTree
from ...views.display_scale import display_scale, scaled_svg
from ...views.graph.raster import render_png
from ..durable.save_hook import WIDGET_VIEW
from ..typos import CommandParser

DURABLE_TREE_TYPES = ["image/svg+xml", "image/png", "text/plain"]

USAGE = "%(prog)s [--full] [--text] [--static] [--max-nodes N] [--lr] [--expand KEY ...]"


def _parser() -> argparse.ArgumentParser:
    parser = CommandParser("%pi tree", usage=USAGE)
    parser.add_argument("--full", action="store_true", help="one node per entry instead of per turn")
    parser.add_argument("--text", action="store_true", help="a text tree")
    parser.add_argument("--static", action="store_true", help="the picture without the widget")
    parser.add_argument("--max-nodes", type=int, default=None, help="most nodes drawn (default 250)")
    parser.add_argument("--lr", action="store_true", help="time runs left to right")
    parser.add_argument("--expand", action="append", default=[], help="open a folded node by key")
    return parser


def _widgets_usable(shell: Any) -> bool:
    """True inside a kernel that can show widgets (not a terminal IPython, not a plain script)."""
    if shell is None or getattr(shell, "kernel", None) is None:
        return False
    magics = getattr(shell, "_pi_magics", None)
    if magics is not None and not getattr(magics, "widget", True):
        return False
    try:
        import anywidget  # noqa: F401
    except ImportError:
        return False
    return True


def show_tree(agent: Any, args: list[str], *, shell: Any = None) -> Any:
    """What ``%pi tree`` returns for ``agent``'s session: a TreeView, a graph, or a text tree.

    ``--text`` gives the text tree, ``--static`` the picture without the widget; ``--full``
    draws one node per entry. Bad arguments raise :class:`~.typos.OptionError` (one line, naming the option).
    """
    opts = _parser().parse_args(args)
    graph_options: dict[str, Any] = {"mode": "full" if opts.full else "turns"}
    if opts.max_nodes is not None:
        graph_options["max_nodes"] = opts.max_nodes
    if opts.lr:
        graph_options["rankdir"] = "LR"
    if opts.expand:
        graph_options["expand"] = list(opts.expand)
    session = agent.session
    if opts.text:
        return TextTree(session.graph(**graph_options).text())
    if shell is None:
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:  # pragma: no cover - the notebook layer runs under IPython
            shell = None
    if opts.static or not _widgets_usable(shell):
        return durable_graph(session.graph(**graph_options))
    magics = getattr(shell, "_pi_magics", None)
    state = getattr(magics, "state", None)
    runner = getattr(state, "runner", None)
    on_fork = state.switch if state is not None else None
    mode = graph_options.pop("mode")
    expand = graph_options.pop("expand", [])
    view = _durable_tree_view_class()(agent, mode=mode, runner=runner, on_fork=on_fork, **graph_options)
    for key in expand:
        view.expand(key)
    return view


def static_tree_bundle(graph: Any, svg: str | None) -> dict[str, Any]:
    """The tree as every viewer draws it: ``image/svg+xml``, ``image/png`` (when ``dot`` is here), ``text/plain``."""
    data: dict[str, Any] = {"text/plain": graph.text() if graph is not None else "(empty session)"}
    if svg:
        scale = display_scale()  # %config PiMagics.scale: the picture grows with the widgets' text
        data["image/svg+xml"] = scaled_svg(svg, scale)
        png = render_png(graph.source, dpi=round(72 * scale)) if graph is not None else None
        if png is not None:
            data["image/png"] = base64.b64encode(png).decode("ascii")
    return data


def drawn_now(graph: Any, svg: str | None) -> dict[str, Any]:
    """The durable bundle of a live tree: its picture as it is now, saying so (the live tree may change after).

    The picture a notebook keeps is taken when the cell runs; labels, forgets and forks made
    later in the live tree are in the session, not in this picture, so it says when it was drawn.
    """
    if not svg or getattr(graph, "model", None) is None or not hasattr(type(graph), "from_model"):
        return static_tree_bundle(graph, svg)  # nothing drawn here (no Graphviz): the text tree
    caption = f"Drawn at {time.strftime('%H:%M')} when the cell ran; later changes made in the live tree are not shown"
    captioned = type(graph).from_model(graph.model, caption=caption)
    data = static_tree_bundle(captioned, captioned.render_result().svg)
    data["text/plain"] = f"{caption}\n{data['text/plain']}"
    return data


_DURABLE_CLASS: Any = None
_DURABLE_GRAPHS: dict[type, type] = {}


def durable_graph(graph: Any) -> Any:
    """``graph`` (a SessionGraph) displayed as a picture every viewer draws: SVG and PNG, no inline-SVG HTML.

    An untrusted JupyterLab sanitizes inline SVG in ``text/html`` into loose text and refuses
    ``image/svg+xml``; without ``text/html`` it draws the PNG, and a trusted one the SVG.
    """
    cls = type(graph)
    sub = _DURABLE_GRAPHS.get(cls)
    if sub is None:

        def _repr_mimebundle_(self: Any, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
            data = cls._repr_mimebundle_(self, include=include, exclude=exclude, **kwargs)
            if "image/svg+xml" not in data:
                return data  # no picture here: the text tree as the graph gives it
            return static_tree_bundle(self, data["image/svg+xml"])

        sub = _DURABLE_GRAPHS[cls] = type(cls.__name__, (cls,), {"_repr_mimebundle_": _repr_mimebundle_, "__module__": cls.__module__})
    graph.__class__ = sub
    return graph


def _durable_tree_view_class() -> Any:
    """A TreeView whose display bundle adds the durable picture (built once, on first use)."""
    global _DURABLE_CLASS
    if _DURABLE_CLASS is None:
        from .view import TreeView

        class DurableTreeView(TreeView):
            """The live tree, with its picture in the bundle for readers without the kernel."""

            def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
                result = super()._repr_mimebundle_(**kwargs)
                if result is None:
                    return None
                data, metadata = result
                if WIDGET_VIEW not in data:
                    return result
                data = {**data, **drawn_now(self.graph, self.svg)}
                metadata = {**metadata, "pi_jupyter": {"durable": [t for t in DURABLE_TREE_TYPES if t in data]}}
                return data, metadata

        _DURABLE_CLASS = DurableTreeView
    return _DURABLE_CLASS
