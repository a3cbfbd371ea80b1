"""``%pi export``: the session as one self-contained HTML page, or a branch as Markdown (see :mod:`pi_jupyter.views.export.page`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..agent.redact import redact
from ..views.export.files import write_export
from ..views.export.page import branch_markdown, export_html
from .typos import CommandParser

USAGE = "%(prog)s [--branch REF] [--format html|markdown] [--force] [PATH]"


def export_session(agent: Any, args: list[str], resolve: Callable[[str], str]) -> str:
    """Write the export of ``agent``'s session; returns the path written (printed too).

    ``PATH`` defaults to the session file with ``.html`` (or ``.md``), or ``session-ID.html``
    in the working folder for a session in memory. ``--branch`` takes an entry id, a label or
    a cell id (through ``resolve``). Bad arguments raise :class:`~.typos.OptionError` (one line, naming the option).
    A session file is never overwritten; any other existing file that is not an earlier
    export needs ``--force`` (:mod:`pi_jupyter.views.export.files`: a refusal is a ``ValueError``).
    """
    parser = CommandParser("%pi export", usage=USAGE)
    parser.add_argument("path", nargs="?", default=None)
    parser.add_argument("--branch", "-b", default=None)
    parser.add_argument("--format", choices=("html", "markdown"), default="html")
    parser.add_argument("--force", action="store_true")
    opts = parser.parse_args(args)
    session = agent.session
    leaf = resolve(opts.branch) if opts.branch else None
    ext = ".html" if opts.format == "html" else ".md"
    path = opts.path
    if path is None:
        source = session.path
        path = (source[: -len(".jsonl")] if source and source.endswith(".jsonl") else f"session-{session.id[:8]}") + ext
    # every text redacted before it is drawn or written: a key in a label or a name never reaches the page
    text = export_html(session, leaf, clean=redact) if opts.format == "html" else branch_markdown(session, leaf, clean=redact)
    size = write_export(path, text, force=opts.force)
    print(f"wrote {path} ({size:,} bytes)")
    return path


__all__ = ["export_session"]
