"""Turn DOT source into SVG: a system ``dot`` when there is one, else ``graphviz-pure``, else nothing.

``graphviz-pure`` (PyPI) is a self-contained port of Graphviz 16 that installs a
``graphviz-pure`` command and no ``dot``, so a pip-only install can still draw. When neither
is found (or layout fails or takes too long) :func:`render_svg` says why, and callers show a
text tree with :data:`INSTALL_HINT`. Nothing here raises for a missing program.

The environment variable ``PI_JUPYTER_RENDERER`` (``auto``, ``dot``, ``graphviz-pure`` or
``text``) sets the default backend.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import time
from collections import OrderedDict
from typing import Literal

from pydantic import BaseModel

from . import dot_pipe

Backend = Literal["auto", "dot", "graphviz-pure", "text"]
"""Which program draws: ``auto`` tries ``dot``, then ``graphviz-pure``; ``text`` draws nothing."""

BACKENDS: tuple[str, ...] = ("auto", "dot", "graphviz-pure", "text")

INSTALL_HINT = (
    "For the picture install Graphviz (apt install graphviz, brew install graphviz, conda install graphviz) or `pip install graphviz-pure`."
)
"""The one line that says how to get a picture instead of text."""

DEFAULT_TIMEOUT_S = 60.0

_CACHE: OrderedDict[tuple[str, str], str] = OrderedDict()
_CACHE_SIZE = 16
_CACHE_LOCK = threading.Lock()


class RenderResult(BaseModel):
    """What :func:`render_svg` produced: an SVG, or the reason there is none."""

    svg: str | None = None
    backend: str = "text"
    """``dot``, ``graphviz-pure``, or ``text`` when no SVG was made."""
    program: str | None = None
    """The program that ran."""
    problem: str | None = None
    """Why there is no SVG (no program found, layout failed, too slow)."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when there is an SVG."""
        return self.svg is not None


def default_backend() -> str:
    """The backend ``auto`` stands for here (from ``PI_JUPYTER_RENDERER``, else ``auto``)."""
    value = os.environ.get("PI_JUPYTER_RENDERER", "auto").strip().lower() or "auto"
    return value if value in BACKENDS else "auto"


def find_program(backend: str, path: str | None = None) -> str | None:
    """The executable for ``dot`` or ``graphviz-pure``, searched on ``path`` (default ``PATH``).

    ``graphviz-pure`` is also looked for next to the running Python, where pip puts it: a
    kernel started from a virtual environment often has that folder off ``PATH``.
    """
    if backend == "dot":
        return shutil.which("dot", path=path)
    if backend == "graphviz-pure":
        found = shutil.which("graphviz-pure", path=path)
        if found or path is not None:
            return found
        exe = "graphviz-pure.exe" if os.name == "nt" else "graphviz-pure"
        for folder in (os.path.dirname(sys.executable), sysconfig.get_path("scripts")):
            candidate = os.path.join(folder, exe) if folder else ""
            if candidate and os.access(candidate, os.X_OK):
                return candidate
    return None


def available_backends() -> list[str]:
    """The drawing programs found here, in the order ``auto`` tries them."""
    return [b for b in ("dot", "graphviz-pure") if find_program(b)]


def render_svg(source: str, *, backend: str | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> RenderResult:
    """Lay out DOT ``source`` as SVG with the chosen backend (default: :func:`default_backend`).

    Never raises for a missing or failing program: the result's ``problem`` says what went
    wrong, and ``svg`` is ``None``. Results are cached by source, so showing the same graph
    twice runs Graphviz once.
    """
    chosen = (backend or default_backend()).strip().lower()
    if chosen not in BACKENDS:
        raise ValueError(f"render backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if chosen == "text":
        return RenderResult(problem="text output was asked for")
    order = ["dot", "graphviz-pure"] if chosen == "auto" else [chosen]
    digest = hashlib.sha1(source.encode("utf-8", "surrogatepass")).hexdigest()
    problems: list[str] = []
    for name in order:
        program = find_program(name)
        if program is None:
            problems.append(f"no `{name}` program found")
            continue
        key = (program, digest)
        with _CACHE_LOCK:
            cached = _CACHE.get(key)
            if cached is not None:
                _CACHE.move_to_end(key)
                return RenderResult(svg=cached, backend=name, program=program)
        started = time.perf_counter()
        svg, problem = _run(program, source, timeout)
        elapsed = time.perf_counter() - started
        if svg is not None:
            with _CACHE_LOCK:
                _CACHE[key] = svg
                while len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
            return RenderResult(svg=svg, backend=name, program=program, seconds=elapsed)
        problems.append(f"`{name}` failed: {problem}")
        if problem and problem.startswith("took longer"):
            break  # another layout program would be as slow
    return RenderResult(problem="; ".join(problems) or "no drawing program")


def _run(program: str, source: str, timeout: float) -> tuple[str | None, str | None]:
    if os.path.basename(program).split(".")[0] == "dot":
        svg, slow = dot_pipe.layout(program, source, timeout)  # a running dot: no 18 ms start per drawing
        if slow:
            return None, _too_slow(timeout)
        if svg is not None:
            start = svg.find("<svg")
            return svg[start:], None
    try:
        proc = subprocess.run(
            [program, "-Tsvg", "-q"],
            input=source.encode("utf-8", "replace"),  # a lone surrogate (no UTF-8) becomes "?", never an error
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, _too_slow(timeout)
    except OSError as exc:
        return None, str(exc)
    if proc.returncode != 0 or not proc.stdout:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        return None, f"exit status {proc.returncode}" + (f": {err[-1]}" if err else "")
    svg = proc.stdout.decode("utf-8", "replace")
    start = svg.find("<svg")
    return (svg[start:] if start >= 0 else svg), None


def _too_slow(timeout: float) -> str:
    return f"took longer than {timeout:.0f} s (fold more: fewer nodes with max_nodes=...)"
