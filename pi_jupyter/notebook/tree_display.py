"""``%pi tree``: the TreeView when widgets work here, else the graph (SVG, or text without Graphviz)."""

from __future__ import annotations

import argparse
from typing import Any

from ..views import TextTree

USAGE = "%(prog)s [--full] [--text] [--static] [--max-nodes N] [--lr] [--expand KEY ...]"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%pi tree", add_help=False, usage=USAGE)
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
    draws one node per entry. Bad arguments raise ``SystemExit`` (the magic reports them).
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
        return session.graph(**graph_options)
    from .tree_view import TreeView

    magics = getattr(shell, "_pi_magics", None)
    state = getattr(magics, "state", None)
    runner = getattr(state, "runner", None)
    on_fork = state.switch if state is not None else None
    mode = graph_options.pop("mode")
    expand = graph_options.pop("expand", [])
    view = TreeView(agent, mode=mode, runner=runner, on_fork=on_fork, **graph_options)
    for key in expand:
        view.expand(key)
    return view
