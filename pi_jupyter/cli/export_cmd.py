"""``pi-jupyter export FILE``: a session as one self-contained HTML page, or one branch as Markdown."""

from __future__ import annotations

import argparse
import sys

from ..agent.redact import redact
from ..session import SessionError
from ..views.export.files import ExportRefused, write_export
from ..views.export.page import branch_markdown, export_html
from .common import CliError, note_problems, open_session, status

DESCRIPTION = """\
Write the session as one HTML file that needs no network (CSS, script, the tree drawn
by Graphviz and every entry inline): click a node of the tree or a branch to read that
branch, search every branch, see labels, compactions and branch summaries where they
happened. --format markdown writes one branch (the current one, or --branch) instead.
The default output is FILE with .html (or .md) in place of .jsonl; -o - writes to stdout.
The session file is opened read-only.

An export never overwrites a session file (not even with --force), replaces an earlier
export, and replaces any other existing file only with --force. It is written to a
temporary file beside the output and renamed over it: a reader sees the old file or the
new one, whole. A named pipe, a device or a folder as the output is refused."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``export``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument("--branch", "-b", default=None, help="the branch shown first (an entry id, id prefix or label; default: current)")
    parser.add_argument("-o", "--output", default=None, help="where to write (default: next to FILE; - for stdout)")
    parser.add_argument("--format", choices=("html", "markdown"), default="html", help="html (default) or markdown (one branch)")
    parser.add_argument("--force", action="store_true", help="replace an existing file that is not an export (never a session file)")


def default_output(path: str, fmt: str) -> str:
    """``path`` with ``.html`` or ``.md`` in place of its ``.jsonl``."""
    base = path[: -len(".jsonl")] if path.endswith(".jsonl") else path
    return base + (".html" if fmt == "html" else ".md")


def run(args: argparse.Namespace) -> int:
    """Write the export; exit 0, or 1 when the file had problems (they are listed on stderr)."""
    session = open_session(args.file)
    note_problems(session)
    leaf = None
    if args.branch is not None:
        try:
            leaf = session.resolve(args.branch)
        except SessionError as exc:
            raise CliError(f"--branch {args.branch!r}: {exc}") from None
    # every text redacted before it is drawn or written: a key in a label or a name never reaches the page
    text = export_html(session, leaf, clean=redact) if args.format == "html" else branch_markdown(session, leaf, clean=redact)
    out = args.output or default_output(args.file, args.format)
    if out == "-":
        sys.stdout.write(text)
    else:
        try:
            size = write_export(out, text, force=args.force)
        except ExportRefused as exc:
            raise CliError(str(exc)) from None
        print(f"wrote {out} ({size:,} bytes)", file=sys.stderr)
    return status(session)
