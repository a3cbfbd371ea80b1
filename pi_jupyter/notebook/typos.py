"""Errors a notebook user reads: one line, with the magic's name, a guess at a typo, and sessions by name.

``%%pi --modle x`` is answered "did you mean --model?"; ``%pi chekout`` "did you mean checkout?";
a session file is named by its session name (or the file's name), never by its absolute path.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
from collections.abc import Iterable
from typing import Any

_UNRECOGNIZED = re.compile(r"unrecognized arguments: (.*)")
_OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")


def _guess(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def option_error(parser: argparse.ArgumentParser, message: str, magic: str = "%%pi") -> str:
    """``argparse``'s complaint about ``magic``'s options, with a guess for each option that looks like a typo."""
    options = _OPTION.findall(parser.format_usage())
    match = _UNRECOGNIZED.search(message)
    lists = f"{magic}? lists the options" if magic == "%%pi" else "%pi help lists the commands and their options"
    if match is None:
        return f"{magic}: {message} ({lists})"
    unknown = [word for word in match.group(1).split() if word.startswith("-")]
    guesses = [f"{word} (did you mean {guess}?)" if (guess := _guess(word.split("=", 1)[0], options)) else word for word in unknown]
    what = ", ".join(guesses) if guesses else match.group(1)
    return f"{magic}: unknown option {what}; {lists}"


class OptionError(ValueError):
    """A magic's options could not be read; the message is the one line a user reads."""


class CommandParser(argparse.ArgumentParser):
    """The parser of a ``%pi`` command's options: no abbreviations (``--tex`` is not taken for ``--text``),
    and a bad option is an :class:`OptionError` naming it, with a guess at a typo."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        super().__init__(prog=prog, add_help=False, allow_abbrev=False, **kwargs)

    def error(self, message: str) -> Any:  # raises instead of exiting
        raise OptionError(option_error(self, message, self.prog))


def command_error(command: str, commands: Iterable[str]) -> str:
    """``%pi COMMAND`` with an unknown command, and the command it most likely meant."""
    guess = _guess(command, commands)
    hint = f" (did you mean {guess}?)" if guess else ""
    return f"%pi: unknown command {command!r}{hint}; %pi help lists them"


def session_label(session: Any) -> str:
    """How errors name a session: its name, else its file's name (never a full path)."""
    name = getattr(session, "name", None)
    path = getattr(session, "path", None)
    return name or (os.path.basename(path) if path else "in-memory session")


def without_paths(text: str, sessions: Iterable[Any]) -> str:
    """``text`` with the file path of each of ``sessions`` replaced by its name (see :func:`session_label`)."""
    for session in sessions:
        path = getattr(session, "path", None)
        if path and path in text:
            text = text.replace(path, session_label(session))
    return text


def named(exc: BaseException, state: Any) -> str:
    """An error's text with the files of the sessions ``state`` (the notebook's) has open shown by their names."""
    return without_paths(str(exc), [agent.session for agent in state.agents.values()])


__all__ = ["command_error", "named", "option_error", "session_label", "without_paths"]
