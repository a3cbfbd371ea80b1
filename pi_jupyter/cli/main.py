"""``pi-jupyter``: the command line (also ``python -m pi_jupyter``).

Each subcommand is a module of this package with ``DESCRIPTION``, ``add_arguments(parser)``
and ``run(args) -> int``; adding one is adding a module and a row to :data:`COMMANDS`. Only
the module of the command being run is imported, so ``--help`` and a small file's ``info``
start at once.

Exit status: 0 when the file is sound, 1 when problems were reported but the file loaded,
2 when it cannot be used (missing, a folder, not a session file, an unknown ``--leaf``...);
the reason is one line on stderr.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import NoReturn

from .common import EXIT_UNUSABLE, CliError, fail, release

COMMANDS: dict[str, tuple[str, str]] = {
    "context": ("context_cmd", "print the rebuilt context of the current branch (or of --leaf)"),
    "tree": ("tree_cmd", "print the session tree (current path marked with *, labels in [brackets])"),
    "info": ("info_cmd", "print the session's id, times, counts, models, token and cost totals, and its load report"),
    "prompt": ("prompt_cmd", "run one prompt through the agent and print the answer"),
    "rpc": ("rpc_cmd", "serve the agent over JSON lines on stdin/stdout (pi's RPC mode)"),
    "export": (
        "export_cmd",
        "write a session as one self-contained HTML page (the tree and every branch) or a branch as Markdown",
    ),
    "experiment": (
        "experiment_cmd",
        "run a grid of sibling branches (models, thinking levels, prompt bindings, repeats) and print the table",
    ),
    "gc": ("gc_cmd", "show and reclaim the space of a session folder's world store (.pi-world)"),
    "trust": ("trust_cmd", "list the trusted session folders, or trust one whose world objects someone else saved (can run code)"),
    "class": (
        "class_cmd",
        "one page over a folder of students' session files: students by cells, totals, answers side by side, trees",
    ),
}
"""Command name -> (module of ``pi_jupyter.cli``, one-line help), in the order ``--help`` lists them."""

_DESCRIPTION = """\
pi-jupyter from a shell; context, tree and info look at pi-compatible session files
(JSONL session trees).

context, tree and info open files read-only: looking never rewrites a file, not even to
migrate an old version (the migration happens in memory only).

exit status: 0 the file is sound, 1 problems were reported but the file loaded,
2 the file cannot be used (the reason is printed on stderr)."""


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def _chosen(argv: Sequence[str]) -> str | None:
    """The command named on the command line (the first word that is one), if any."""
    return next((word for word in argv if word in COMMANDS), None)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, told the terminal's width here: its own asks :mod:`shutil`, whose import (with
    its compression modules) every command would pay for a help text it rarely prints."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


def _columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` finds it: ``$COLUMNS``, the terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser: every command listed, the one named in ``argv`` (default: ``sys.argv[1:]``) with its options."""
    from .. import __version__

    chosen = _chosen(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="pi-jupyter",
        description=_DESCRIPTION,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"pi-jupyter {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        if name != chosen:
            sub.add_parser(name, help=help_text, formatter_class=_Formatter)  # listed by --help; only the chosen command is parsed
            continue
        module = _load(module_name)
        command = sub.add_parser(
            name,
            help=help_text,
            description=getattr(module, "DESCRIPTION", help_text),
            formatter_class=_Formatter,
        )
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _read_only=getattr(module, "READ_ONLY", False))
    return parser


def main(argv: Sequence[str] | None = None, *, exit_when_done: bool = False) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.

    ``exit_when_done``: end the process as soon as a read-only command (``context``, ``tree``,
    ``info``) has written its output, as the ``pi-jupyter`` script does (:func:`entry`).
    """
    words = list(argv) if argv is not None else sys.argv[1:]
    parser = build_parser(words)
    args = parser.parse_args(words)
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_UNUSABLE
    read_only = bool(getattr(args, "_read_only", False))
    collecting = gc.isenabled()
    if read_only:
        # a read-only command makes no garbage cycles worth a collection: the young collections
        # would only walk the file's hundreds of thousands of new containers again and again
        gc.disable()
    try:
        code = _run(run, args)
        if read_only and exit_when_done:
            _exit(code)
        return code
    finally:
        if collecting:
            gc.enable()
        release()


def _run(run: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        return int(run(args))
    except CliError as exc:
        return fail(str(exc), exc.code)
    except BrokenPipeError:
        _reader_gone()
        return 0
    except KeyboardInterrupt:
        return fail("interrupted", 130)


def _reader_gone() -> None:
    # the reader (``| head``) went away: stop quietly, as shell tools do, and keep the
    # interpreter's final flush from complaining
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _exit(code: int) -> NoReturn:
    """Flush what was written and end the process without tearing down what the command built."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        pass  # the reader went away: nothing more to say to it
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)


def entry() -> NoReturn:
    """The ``pi-jupyter`` script (and ``python -m pi_jupyter``): :func:`main`, then the process's exit.

    A read-only command on a 100k-entry file builds hundreds of thousands of small objects;
    freeing them one by one, then the interpreter's own teardown, would add about a twentieth
    to the command's time for nothing, so it ends with ``os._exit`` once its output is
    flushed. Every other command exits as usual.
    """
    sys.exit(main(exit_when_done=True))


if __name__ == "__main__":  # pragma: no cover
    entry()
