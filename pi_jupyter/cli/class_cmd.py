"""``pi-jupyter class FOLDER``: a whole class's sessions of a course notebook as one self-contained HTML page."""

from __future__ import annotations

import argparse
import os
import sys

from ..views.class_view.view import class_view
from ..views.export.page_file import PageWriteError, write_page
from .common import EXIT_OK, EXIT_PROBLEMS, CliError

DESCRIPTION = """\
Read every session file (.jsonl) in FOLDER (pi's own or pi-jupyter's) and write one HTML
page that needs no network: one row per student (the file's name), the course notebook's
cells as columns, each with turns, tool calls, tool errors, tokens, cost and the distance of
the answer from the reference answer (--reference, the teacher's session of the course) or
else from the class's common answer (0: the same words, 1: none shared). Click a cell for
every student's answer side by side, a student for their tree. Totals: cost per student and
per cell, who never ran a cell, who branched most, which prompts led to tool errors.
Sessions of different course notebooks are shown as separate courses; a damaged or foreign
file is listed with its problem; a file still being written is read as far as it goes. Files
are opened read-only.

The page goes to class-view.html in the current folder unless -o says otherwise (- for
stdout). It never replaces a session file, nor a file it did not write unless --force.
Exit status: 0 every file was read cleanly, 1 some files had problems (listed on stderr),
2 nothing was written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``class``."""
    parser.add_argument("folder", metavar="FOLDER", help="the folder holding the students' session files")
    parser.add_argument(
        "--reference", "-r", default=None, metavar="FILE", help="the teacher's session of the course: distances are from its answers"
    )
    parser.add_argument("-o", "--output", default="class-view.html", help="where to write the page (default class-view.html; - for stdout)")
    parser.add_argument("--force", action="store_true", help="replace a file that pi-jupyter did not write (never a session file)")


def run(args: argparse.Namespace) -> int:
    """Write the page; exit 0, or 1 when some files had problems (one line each on stderr)."""
    try:
        view = class_view(args.folder, reference=args.reference)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    page = view.page()
    if args.output == "-":
        sys.stdout.write(page)
    else:
        try:
            out = write_page(args.output, page, force=args.force)
        except PageWriteError as exc:
            raise CliError(f"-o {args.output}: {exc}") from None
        shown = os.path.relpath(out) if not os.path.relpath(out).startswith("..") else out
        print(f"wrote {shown} ({os.path.getsize(out):,} bytes): {view.summary()}", file=sys.stderr)
    folder = view.folder
    for note in folder.unreadable:
        print(f"pi-jupyter: note: {note.name}: {note.why}", file=sys.stderr)
    for s in folder.sessions:
        for problem in s.problems:
            print(f"pi-jupyter: note: {os.path.basename(s.path)}: {problem}", file=sys.stderr)
    bad = folder.unreadable or any(s.problems for s in folder.sessions)
    return EXIT_PROBLEMS if bad else EXIT_OK
