"""``pi-jupyter``: the command line (also ``python -m pi_jupyter``).

Each subcommand is a module of this package with ``NAME``, ``HELP``, ``add_arguments(parser)``
and ``run(args) -> int``; adding one is adding a module and its name to :data:`COMMANDS`.

Exit status: 0 when the file is sound, 1 when problems were reported but the file loaded,
2 when it cannot be used (missing, a folder, not a session file, an unknown ``--leaf``...);
the reason is one line on stderr.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from .common import EXIT_UNUSABLE, CliError, fail

COMMANDS: tuple[str, ...] = (
    "context_cmd",
    "tree_cmd",
    "info_cmd",
    "prompt_cmd",
    "rpc_cmd",
    "export_cmd",
    "experiment_cmd",
    "gc_cmd",
    "class_cmd",
)
"""Modules of ``pi_jupyter.cli`` that provide a subcommand, in the order ``--help`` lists them."""

_DESCRIPTION = """\
pi-jupyter from a shell; context, tree and info look at pi-compatible session files
(JSONL session trees).

context, tree and info open files read-only: looking never rewrites a file, not even to
migrate an old version (the migration happens in memory only).

exit status: 0 the file is sound, 1 problems were reported but the file loaded,
2 the file cannot be used (the reason is printed on stderr)."""


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="pi-jupyter",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pi-jupyter {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = _load(name)
        command = sub.add_parser(
            module.NAME,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_UNUSABLE
    try:
        return int(run(args))
    except CliError as exc:
        return fail(str(exc), exc.code)
    except BrokenPipeError:
        # the reader (``| head``) went away: stop quietly, as shell tools do, and keep the
        # interpreter's final flush from complaining
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return fail("interrupted", 130)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
