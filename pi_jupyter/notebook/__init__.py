"""The notebook face: ``%%pi`` / ``%pi`` magics, the kernel runner, the AgentView and TreeView widgets.

This is the only layer that imports IPython, ipywidgets and anywidget.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext pi_jupyter``: register ``%%pi`` and ``%pi``."""
    from IPython.core.error import UsageError

    from .magics import register

    try:
        shell._pi_magics = register(shell)
    except ValueError as exc:  # a bad setting in pyproject.toml or the config file: one line naming the file
        raise UsageError(f"pi_jupyter not loaded: {exc}") from None
    from ..agent.extensions import prefetch_advertised_extensions

    prefetch_advertised_extensions()  # while the user writes the first cell


def unload_ipython_extension(shell: Any) -> None:
    """``%unload_ext pi_jupyter``."""
    magics = getattr(shell, "_pi_magics", None)
    if magics is not None:
        shell.magics_manager.magics["cell"].pop("pi", None)
        shell.magics_manager.magics["line"].pop("pi", None)
        shell._pi_magics = None
        magics.state.main_thread.close()
        from .async_cell import uninstall
        from .cell_log import uninstall as stop_cell_log

        uninstall(shell)
        stop_cell_log(shell)


def current_agent() -> Any:
    """The :class:`~pi_jupyter.Agent` that ``%%pi`` cells in this kernel use now."""
    from IPython import get_ipython

    shell = get_ipython()
    magics = getattr(shell, "_pi_magics", None) if shell is not None else None
    if magics is None:
        raise RuntimeError("pi_jupyter is not loaded in this kernel: run %load_ext pi_jupyter first")
    return magics.state.agent_for()


def current_session() -> Any:
    """The :class:`~pi_jupyter.Session` that ``%%pi`` cells in this kernel use now."""
    return current_agent().session
