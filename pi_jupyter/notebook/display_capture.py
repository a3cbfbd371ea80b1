"""Route what tool code displays through the tool: ``display()`` from the python tool's thread.

IPython's ``display()`` hands every bundle to the shell's display publisher, which sends it
to the notebook. While the python tool runs code, :func:`display_capture` sends bundles
published from that code's thread to a ``transform(data, metadata)`` first (the tool
redacts them and notes their text for the model); ``None`` drops one. Other threads (the
widget, the user's own cells) are untouched. The publisher is wrapped once, on first use,
and passes everything else through unchanged.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

__all__ = ["Transform", "display_capture"]

Transform = Callable[[Any, Any], "tuple[Any, Any] | None"]
"""``transform(data, metadata) -> (data, metadata)``, or ``None`` to show nothing."""

_lock = threading.Lock()
_transforms: dict[int, Transform] = {}


class _RoutingPublisher(DisplayPublisher):
    """The shell's publisher, with bundles from captured threads passed through their transform."""

    def __init__(self, original: DisplayPublisher) -> None:
        super().__init__(shell=getattr(original, "shell", None))
        self.__dict__["_original"] = original

    def __getattr__(self, name: str) -> Any:  # the kernel's publisher has more (session, set_parent, hooks)
        original = self.__dict__.get("_original")
        if original is None:
            raise AttributeError(name)
        return getattr(original, name)

    @property
    def is_publishing(self) -> bool:  # the text a terminal's publisher prints is its own echo, not the cell's output
        return bool(getattr(self.__dict__.get("_original"), "is_publishing", False))

    def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        transform = _transforms.get(threading.get_ident())
        if transform is not None:
            out = transform(data, metadata or {})
            if out is None:
                return None
            data, metadata = out
        return self._original.publish(data, metadata, *args, **kwargs)

    def clear_output(self, wait: bool = False) -> None:
        if threading.get_ident() in _transforms:
            return None  # tool code must not clear the cell that shows the agent
        return self._original.clear_output(wait)


@contextlib.contextmanager
def display_capture(transform: Transform) -> Iterator[None]:
    """Send the bundles the current thread displays to ``transform`` until the block ends."""
    shell = InteractiveShell.instance() if InteractiveShell.initialized() else None
    if shell is None or shell.display_pub is None:
        yield  # no notebook: display() prints, and the tool captures prints anyway
        return
    ident = threading.get_ident()
    with _lock:
        if not isinstance(shell.display_pub, _RoutingPublisher):
            shell.display_pub = _RoutingPublisher(shell.display_pub)
        _transforms[ident] = transform
    try:
        yield
    finally:
        with _lock:
            _transforms.pop(ident, None)
