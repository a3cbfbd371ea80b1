"""The session graph as PNG, for viewers that refuse SVG (JupyterLab draws SVG only in trusted outputs)."""

from __future__ import annotations

import subprocess

from .render import find_program

MAX_PNG_BYTES = 2_000_000
"""A bigger picture is left out of a notebook (the SVG stays)."""


def render_png(source: str, *, dpi: int = 72, timeout: float = 30.0) -> bytes | None:
    """DOT ``source`` as PNG bytes with Graphviz ``dot``, or ``None`` (no ``dot``, a failure, too big)."""
    program = find_program("dot")
    if program is None:
        return None
    try:
        proc = subprocess.run(
            [program, "-Tpng", f"-Gdpi={dpi}", "-q"],
            input=source.encode("utf-8", "replace"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError):
        return None
    if proc.returncode != 0 or not proc.stdout.startswith(b"\x89PNG") or len(proc.stdout) > MAX_PNG_BYTES:
        return None
    return proc.stdout


__all__ = ["MAX_PNG_BYTES", "render_png"]
