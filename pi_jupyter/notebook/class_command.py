"""``%pi class FOLDER [--reference FILE] [-o PAGE]``: the class view in a notebook.

The cell's value is the :class:`~pi_jupyter.views.class_view.view.ClassView`: the notebook shows it
(the table of students by cells, the totals, every answer by cell and every student's tree,
which read without JavaScript too), and ``_.table()`` is a DataFrame for your own analysis.
``-o PAGE`` also writes the one-page version (``pi-jupyter class`` writes the same page).
"""

from __future__ import annotations

import sys

from IPython.core.error import UsageError

from ..views.class_view.view import ClassView, class_view
from ..views.export.page_file import PageWriteError, write_page
from .typos import CommandParser, OptionError


def class_command(rest: list[str]) -> ClassView:
    """Build the class view of ``FOLDER``; bad input is a one-line ``UsageError``."""
    parser = CommandParser("%pi class")
    parser.add_argument("folder")
    parser.add_argument("--reference", "-r", default=None)
    parser.add_argument("-o", "--output", default=None)
    parser.add_argument("--force", action="store_true")
    try:
        opts = parser.parse_args(rest)
    except OptionError as exc:
        if "unknown option" in str(exc):
            raise UsageError(str(exc)) from None
        raise UsageError("%pi class: give the folder of session files: %pi class FOLDER [--reference FILE] [-o PAGE] [--force]") from None
    try:
        view = class_view(opts.folder, reference=opts.reference)
    except ValueError as exc:
        raise UsageError(f"%pi class: {exc}") from None
    if opts.output:
        try:
            path = write_page(opts.output, view.page(), force=opts.force)
        except PageWriteError as exc:
            raise UsageError(f"%pi class -o: {exc}") from None
        print(f"wrote {path}", file=sys.stderr)
    bad = [f"{n.name}: {n.why}" for n in view.folder.unreadable] + [f"{s.student}: {p}" for s in view.folder.sessions for p in s.problems]
    if bad:
        print("\n".join(bad), file=sys.stderr)
    return view


__all__ = ["class_command"]
