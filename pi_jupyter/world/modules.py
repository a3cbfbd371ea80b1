"""A module a record names (``{"module": "numpy"}``) is imported again only when it is this environment's own.

Importing runs the module's code, and the name comes from a session file that may have come
from elsewhere. So a checkout brings a module back when it is already imported in this kernel
(nothing runs), or when it is installed here: in the standard library or in an installed
distribution, and found there, not in the session's folder, the project's (the notebook's)
folder or the working folder, which are on ``sys.path`` and where anyone who sent the folder
could have put a ``numpy.py``. A few standard modules act when imported (``this`` prints the
Zen of Python, ``antigravity`` opens a browser, a package's ``__main__`` runs its program):
they are never imported by a checkout. Anything refused is named, with why, and the user can
import it in a cell.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import sysconfig
import threading
from collections.abc import Iterable
from types import ModuleType

ACTS_WHEN_IMPORTED = frozenset(
    {"this", "antigravity", "__hello__", "__phello__", "idlelib.idle", "idlelib.pyshell", "turtledemo", "tkinter.__main__"}
)
"""Standard modules whose import does something visible (prints, opens a browser or a window)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_installed: dict[str, list[str]] | None = None
_lock = threading.Lock()


class Refused(Exception):
    """The module is not imported; ``str(exc)`` says why, for a person."""


def import_recorded(name: str, folders: Iterable[str | os.PathLike[str] | None]) -> ModuleType:
    """The module ``name`` (imported when it is this environment's own); :class:`Refused` otherwise.

    ``folders``: the session's folder, the project folder and the like, where a module of that
    name is never taken from (the working folder and ``sys.path``'s ``""`` always count).
    """
    if not isinstance(name, str) or len(name) > 200 or not _NAME.fullmatch(name):
        raise Refused("not a module name")
    loaded = sys.modules.get(name)
    if isinstance(loaded, ModuleType):
        return loaded
    parts = name.split(".")
    if "__main__" in parts or name in ACTS_WHEN_IMPORTED or parts[0] in ACTS_WHEN_IMPORTED:
        raise Refused(f"module {name} does something when it is imported; a checkout does not import it (import it yourself)")
    top = parts[0]
    if top not in sys.modules:
        where = _origin(top)
        if where is None:
            raise Refused(f"module {name} cannot be imported")
        banned = _banned(folders)
        if any(_under(w, banned) for w in where):
            raise Refused(
                f"module {top} is in the session's or the project's folder, not installed: a checkout imports only installed"
                " modules (import it yourself if you trust it)"
            )
        if not (_standard(top, where) or _is_installed(top)):
            raise Refused(f"module {top} is not installed in this environment: a checkout imports only installed modules")
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - a module that no longer imports
        raise Refused(f"module {name} cannot be imported") from exc


def _origin(top: str) -> list[str] | None:
    """Where the top-level module ``top`` would be imported from (file and package folders), without importing it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    where: list[str] = []
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        where.append(spec.origin)
    where.extend(spec.submodule_search_locations or [])
    if not where and spec.origin not in ("built-in", "frozen"):
        return None
    return where


def _banned(folders: Iterable[str | os.PathLike[str] | None]) -> list[str]:
    out = {os.path.realpath(os.getcwd())}
    out.update(os.path.realpath(os.fspath(f)) for f in folders if f)
    out.update(os.path.realpath(p or os.curdir) for p in sys.path if p in ("", os.curdir))
    return sorted(out)


def _under(path: str, folders: list[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == f or real.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def _standard(top: str, where: list[str]) -> bool:
    """A module of the standard library, found where the standard library is."""
    if top not in getattr(sys, "stdlib_module_names", ()):
        return False
    roots = {os.path.realpath(p) for key in ("stdlib", "platstdlib") if (p := sysconfig.get_paths().get(key))}
    return not where or all(_under(w, sorted(roots)) for w in where)


def _is_installed(top: str) -> bool:
    """True when an installed distribution provides the top-level package ``top``."""
    global _installed
    with _lock:
        if _installed is None:
            from importlib.metadata import packages_distributions

            try:
                _installed = dict(packages_distributions())
            except Exception:  # noqa: BLE001 - a broken distribution's metadata: nothing counts as installed
                _installed = {}
        return top in _installed
