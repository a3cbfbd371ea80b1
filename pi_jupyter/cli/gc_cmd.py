"""``pi-jupyter gc [FOLDER]``: how much space the world store of a session folder takes, and reclaim it."""

from __future__ import annotations

import argparse
import os

from ..world.gc import GcError, collect
from .common import CliError

DESCRIPTION = """\
The variables and files the agent's tools change are kept in a content-addressed store,
.pi-world, in the folder of the session files. gc counts its objects and removes those no
session file of the folder refers to any more (a deleted session's, a run that never wrote
its entries). Objects saved or used in the last ten minutes are kept, and nothing is removed
while a session file of the folder cannot be read. Only the folder's own session files count:
a session copied elsewhere uses the store beside it there. --dry-run only counts."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``gc``."""
    parser.add_argument("folder", metavar="FOLDER", nargs="?", default="pi-sessions", help="a session folder (default: pi-sessions)")
    parser.add_argument("--dry-run", action="store_true", help="count what would be removed, remove nothing")
    parser.add_argument("--min-age", type=float, default=600.0, help="keep objects newer than this many seconds (default 600)")


def run(args: argparse.Namespace) -> int:
    """Count, and unless ``--dry-run`` remove, the objects nothing refers to."""
    if not os.path.isdir(args.folder):
        raise CliError(f"{args.folder}: no such folder (give the folder of the session files)")
    try:
        usage = collect(args.folder, dry_run=args.dry_run, min_age_s=args.min_age)
    except GcError as exc:
        raise CliError(str(exc)) from None
    print(usage.line(args.dry_run))
    return 0
