"""Blocking ``%%pi`` cells that still hear their widget: the cell awaits its run on the kernel's loop.

A cell magic is a plain function, so a ``%%pi`` cell used to block the kernel's main thread
while it waited; widget messages (the Stop button) queued behind it and arrived after the
answer. ipykernel 7 handles comm messages while an *awaiting* cell runs, so in such a kernel
this module rewrites a ``%%pi`` cell (after IPython turned it into a ``run_cell_magic`` call)
into ``await`` of the same magic's asynchronous twin: the cell still blocks (Run All, nbclient
and papermill see it finish in order), and Stop reaches the run. The kernel's interrupt
cancels the awaiting cell; the run is aborted and the cell ends in :class:`~.runner.RunStopped`.
Elsewhere (a terminal IPython, older kernels) nothing changes; in a kernel that cannot hear
Stop while a cell blocks (ipykernel 6, or ``%autoawait`` off or on another runner) loading the
extension prints one line saying so and what to do (:func:`stop_note`).
"""

from __future__ import annotations

import re
from typing import Any

_CALL = re.compile(r"^get_ipython\(\)\.run_cell_magic\('pi', (?P<args>.*)\)\s*$", re.S)


def kernel_hears_comms_while_awaiting(shell: Any) -> bool:
    """True in an ipykernel that dispatches widget messages while a cell awaits (ipykernel 7 and later)."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None or not hasattr(kernel, "_main_asyncio_lock"):
        return False
    try:
        from IPython.core.async_helpers import _asyncio_runner
    except ImportError:  # pragma: no cover - every supported IPython has it
        return False
    return getattr(shell, "autoawait", False) and getattr(shell, "loop_runner", None) is _asyncio_runner


def stop_note(shell: Any) -> str | None:
    """One line for a kernel whose widgets cannot stop a blocking ``%%pi`` cell (``None`` when they can, or with no kernel)."""
    if getattr(shell, "kernel", None) is None or kernel_hears_comms_while_awaiting(shell):
        return None
    if not hasattr(shell.kernel, "_main_asyncio_lock"):
        try:
            from ipykernel import __version__ as version
        except ImportError:  # pragma: no cover - a kernel object comes from ipykernel
            version = "?"
        why = f"this kernel (ipykernel {version}) hears widget messages only between cells"
        fix = "or upgrade: pip install 'ipykernel>=7'"
    else:
        why = "with %autoawait off (or on another runner) this kernel hears widget messages only between cells"
        fix = "or run %autoawait asyncio"
    return (
        f"pi-jupyter: {why}, so the Stop button of a blocking %%pi cell acts only once the answer ends; "
        f"stop one with the notebook's interrupt (■), use --background, {fix}."
    )


def await_pi_cells(lines: list[str]) -> list[str]:
    """The input transformer: ``get_ipython().run_cell_magic('pi', L, C)`` becomes ``await ...pi_async(L, C)``."""
    if len(lines) != 1:
        return lines
    m = _CALL.match(lines[0])
    if m is None:
        return lines
    from IPython import get_ipython

    if getattr(get_ipython(), "_pi_magics", None) is None:  # unloaded: IPython says the magic is unknown
        return lines
    return [f"await get_ipython()._pi_magics.pi_async({m.group('args')})\n"]


def install(shell: Any) -> bool:
    """Add the transformer when this kernel can use it; returns whether it did."""
    if not kernel_hears_comms_while_awaiting(shell):
        return False
    if await_pi_cells not in shell.input_transformers_post:
        shell.input_transformers_post.append(await_pi_cells)
    return True


def uninstall(shell: Any) -> None:
    """Remove the transformer (``%unload_ext pi_jupyter``)."""
    transformers = getattr(shell, "input_transformers_post", None)
    if transformers is not None and await_pi_cells in transformers:
        transformers.remove(await_pi_cells)


__all__ = ["await_pi_cells", "install", "kernel_hears_comms_while_awaiting", "stop_note", "uninstall"]
