"""Stop heard while the kernel's main thread is busy: the widget's Stop reaches the run at once.

The agent's python code runs on the kernel's main thread (see :mod:`.main_thread`), and a
widget's messages are handled there too, after whatever runs: a Stop pressed while the agent's
code runs would wait for that code to end. ipykernel 7 reads every shell message first on a
thread of its own (the shell channel thread), and asks each comm there which subshell should get
it (``Comm._reply_subshell_for``). :func:`hear_stop_early` wraps that question for one widget's
comm: a Stop message is acted on right there (the run's abort is thread-safe, and it stops the
code with the same ``SIGINT`` a timeout uses), and the message then goes its usual way, where
the widget takes it as already heard. Elsewhere (an older kernel) nothing changes: Stop acts
once the code ends, and the kernel's interrupt stops the code at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["hear_stop_early", "is_stop"]

_ROUTE = "_reply_subshell_for"  # ipykernel's per-comm routing hook, called on the shell channel thread


def is_stop(data: Any) -> bool:
    """True for the comm data of a widget's Stop message (anywidget's ``model.send({"type": "stop"})``)."""
    if not isinstance(data, dict) or data.get("method") != "custom":
        return False
    content = data.get("content")
    return isinstance(content, dict) and content.get("type") == "stop"


def hear_stop_early(widget: Any, on_stop: Callable[[], None]) -> bool:
    """Call ``on_stop()`` on the shell channel thread as soon as ``widget``'s Stop message arrives; False where the kernel cannot."""
    comm = getattr(widget, "comm", None)
    route = getattr(comm, _ROUTE, None)
    if comm is None or not callable(route):
        return False

    def routed(data: Any, default: Any) -> Any:
        if is_stop(data):
            try:
                on_stop()
            except Exception:  # noqa: BLE001 - the message still goes its usual way, where a failure is shown
                pass
        return route(data, default)

    setattr(comm, _ROUTE, routed)
    return True
