"""The class view: a whole class's sessions of a course notebook in one table (``pi-jupyter class``).

Owns reading a folder of students' files (:mod:`.read`, :mod:`.load`, :mod:`.lines`, :mod:`.session`),
grouping them by course (:mod:`.courses`), what it counts (:mod:`.stats`), the table (:mod:`.view`) and
the page (:mod:`.page`). Reads session files as data; never loads a world object.
"""

from typing import Any

__all__ = ["ClassView", "class_view"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.view"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
