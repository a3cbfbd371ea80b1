"""Comparison: branches side by side (``Session.compare()``), cell by cell, and by their worlds.

Owns the branch comparison (:mod:`.branches`), the cell-by-cell alignment (:mod:`.cells`), the world
comparison (:mod:`.world`) and the small text diffs they share (:mod:`.diff`).
"""

from typing import Any

__all__ = ["AnswerDiff", "BranchStats", "Comparison", "TurnStats", "compare"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.branches"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
