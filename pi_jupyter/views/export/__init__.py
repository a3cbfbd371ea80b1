"""A session as a file someone else opens: one self-contained HTML page with playback, or Markdown.

Owns the page (:mod:`.page`), its playback timings (:mod:`.playback`), and writing pages where the
user asked without destroying anything (:mod:`.files`, :mod:`.page_file`).
"""

from typing import Any

__all__ = ["branch_markdown", "export_html", "script_json"]


def __getattr__(name: str) -> Any:
    # the names the single module before this package offered, still found here (imported on first use, so
    # importing one module of the package does not import them all)
    if name in __all__:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.page"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
