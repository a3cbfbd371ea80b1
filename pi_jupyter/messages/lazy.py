"""Names a package exports without importing their modules until one is asked for.

``import pi_jupyter`` and the shell's start stay fast because a package's ``__init__`` maps
each public name to the module that defines it and imports that module on first use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps a public name to its module (relative to ``package``).

    The value is imported once and kept in the package's namespace, so later lookups are plain.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
