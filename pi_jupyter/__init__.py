"""pi-jupyter: an LLM agent inside the Jupyter kernel, with a forkable, pi-compatible session tree.

In a notebook: ``%load_ext pi_jupyter``, then ``%%pi`` cells. From Python::

    from pi_jupyter import Session, Agent
    s = Session.open("experiment.jsonl")
    agent = Agent(s)                      # default: the built-in offline model
    result = await agent.prompt("Why does the loss diverge?")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .session import viewers

if TYPE_CHECKING:  # pragma: no cover
    from .session import Session

__version__ = "0.1.0"


def _graph(session: Session, **opts: Any) -> Any:
    from .views import build_graph

    return build_graph(session, **opts)


def _compare(session: Session, *refs: str, **opts: Any) -> Any:
    from .views import compare

    return compare(session, *refs, **opts)


# The store offers s.graph() and s.compare() without importing the views layer below it; the
# package root, imported before any of its modules, provides them (views load on first use).
viewers.provide(graph=_graph, compare=_compare)


def __getattr__(name: str) -> Any:
    # nothing is imported before it is asked for: ``import pi_jupyter`` (and the shell's start) stays instant
    if name == "Session":
        from .session.store import Session

        return Session
    if name in ("Agent", "AgentSettings", "RunResult"):
        from .agent import agent as _agent

        return getattr(_agent, name)
    if name in ("Experiment", "load_experiment"):
        import importlib

        # ``pi_jupyter.experiment`` is the subpackage; its ``experiment()`` is imported from there
        return getattr(importlib.import_module(".experiment", __name__), name)
    if name == "tool":
        from .agent.tools import tool

        return tool
    if name in ("current_agent", "current_session"):
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'pi_jupyter' has no attribute {name!r}")


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext pi_jupyter``: register the ``%%pi`` and ``%pi`` magics."""
    from .notebook import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext pi_jupyter``."""
    from .notebook import unload_ipython_extension as unload

    unload(shell)


__all__ = [
    "Agent",
    "AgentSettings",
    "Experiment",
    "RunResult",
    "Session",
    "__version__",
    "current_agent",
    "current_session",
    "load_experiment",
    "load_ipython_extension",
    "tool",
]
