"""How ``Session.graph()`` and ``Session.compare()`` reach the views without the store importing them.

The views layer sits below the session store (it reads sessions), so the store must not import
it. The package root (:mod:`pi_jupyter`) provides the two functions here when it is imported,
which Python does before any of its modules; another program may provide its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import SessionError

_VIEWERS: dict[str, Callable[..., Any]] = {}


def provide(**viewers: Callable[..., Any]) -> None:
    """Set the functions behind ``Session.<name>(...)``: ``provide(graph=fn, compare=fn)``; each gets the session first."""
    _VIEWERS.update(viewers)


def viewer(name: str) -> Callable[..., Any]:
    """The function provided for ``name``; a clear error when none was."""
    fn = _VIEWERS.get(name)
    if fn is None:
        raise SessionError(f"Session.{name}() needs the views layer, which nobody provided: import pi_jupyter (or pi_jupyter.views)")
    return fn
