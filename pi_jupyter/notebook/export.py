"""``%pi export``: the current session as one self-contained HTML page, or a branch as Markdown (see :mod:`pi_jupyter.views.export`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from ..views.export import branch_markdown, export_html

USAGE = "%(prog)s [--branch REF] [--format html|markdown] [PATH]"


def export_session(agent: Any, args: list[str], resolve: Callable[[str], str]) -> str:
    """Write the export of ``agent``'s session; returns the path written (printed too).

    ``PATH`` defaults to the session file with ``.html`` (or ``.md``), or ``session-ID.html``
    in the working folder for a session in memory. ``--branch`` takes an entry id, a label or
    a cell id (through ``resolve``). Bad arguments raise ``SystemExit`` (the magic reports them).
    """
    parser = argparse.ArgumentParser(prog="%pi export", add_help=False, usage=USAGE)
    parser.add_argument("path", nargs="?", default=None)
    parser.add_argument("--branch", "-b", default=None)
    parser.add_argument("--format", choices=("html", "markdown"), default="html")
    opts = parser.parse_args(args)
    session = agent.session
    leaf = resolve(opts.branch) if opts.branch else None
    ext = ".html" if opts.format == "html" else ".md"
    path = opts.path
    if path is None:
        source = session.path
        path = (source[: -len(".jsonl")] if source and source.endswith(".jsonl") else f"session-{session.id[:8]}") + ext
    text = export_html(session, leaf) if opts.format == "html" else branch_markdown(session, leaf)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {path} ({os.path.getsize(path):,} bytes)")
    return path


__all__ = ["export_session"]
