"""What every subcommand shares: opening a file read-only, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from ..session.errors import SessionError

if TYPE_CHECKING:  # pragma: no cover - imported where used: --help imports no session code
    from ..session import Session
    from ..session.scan import ScannedSession

EXIT_OK = 0
"""The file is sound."""
EXIT_PROBLEMS = 1
"""Problems were reported (see ``pi-jupyter info FILE``), but the file loaded."""
EXIT_UNUSABLE = 2
"""The file cannot be used, or the request cannot be answered (the reason is on stderr)."""


NAME_SHOWN = 200
"""Characters of a name or label the command line prints; a longer one is cut with a marker."""


def cut_name(text: str, limit: int = NAME_SHOWN, *, rest: str = "") -> str:
    """A session name or label cut to ``limit`` characters, with its length (``rest``: where the whole text is)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters{'; ' + rest if rest else ''})"


class CliError(Exception):
    """A failure the command line reports as one line on stderr, with an exit status."""

    def __init__(self, message: str, code: int = EXIT_UNUSABLE):
        super().__init__(message)
        self.code = code


def fail(message: str, code: int = EXIT_UNUSABLE) -> int:
    """Print ``pi-jupyter: error: MESSAGE`` (one line) on stderr and return ``code``."""
    line = " ".join(str(message).split("\n"))
    print(f"pi-jupyter: error: {line}", file=sys.stderr)
    return code


_HELD: list[Any] = []
"""The files a command opened, held until the process ends (see :func:`release`)."""


def release() -> None:
    """Let go of the files the last command opened (a command run in-process frees them here).

    The ``pi-jupyter`` console script ends a read-only command without freeing them one by
    one: for 100k entries that is hundreds of thousands of small objects whose freeing the
    exit makes unnecessary (see :func:`~pi_jupyter.cli.main.entry`).
    """
    _HELD.clear()


def _held(opened: Any) -> Any:
    _HELD.append(opened)
    return opened


def open_session(path: str) -> Session:
    """Open ``path`` read-only (never rewritten, not even migrated on disk); failures become :class:`CliError`."""
    from ..session.store import Session

    if os.path.isdir(path):
        raise CliError(f"{path}: is a folder, not a session file")
    try:
        return _held(Session.open(path, readonly=True))
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except SessionError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None


def scan_session(path: str, **options: Any) -> ScannedSession | None:
    """``path`` read as stubs (:func:`~pi_jupyter.session.scan.scan`), or ``None`` for a file to open whole.

    Failures become :class:`CliError`, as in :func:`open_session`.
    """
    from ..session.scan import NeedsFullRead, scan

    if os.path.isdir(path):
        raise CliError(f"{path}: is a folder, not a session file")
    try:
        return _held(scan(path, **options))
    except NeedsFullRead:
        return None
    except FileNotFoundError:
        raise CliError(f"{path}: no such file") from None
    except SessionError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from None


def resolve_leaf(session: Session | ScannedSession, ref: str | None) -> Any:
    """``--leaf`` as an entry id: an id, a unique id prefix, a label, or ``null`` (before the first entry).

    Returns the id, ``None`` for ``null``, or :data:`CURRENT` when no ``--leaf`` was given.
    """
    if ref is None:
        return CURRENT
    if ref == "null":
        return None
    try:
        return session.resolve(ref)
    except SessionError as exc:
        raise CliError(f"--leaf {ref}: {exc}") from None


CURRENT: Any = object()
"""Stands for "the session's current leaf" in :func:`resolve_leaf`."""


def status(session: Session | ScannedSession) -> int:
    """The exit status for a file that loaded: 0 when its load report is clean, else 1."""
    return EXIT_OK if session.load_report.ok else EXIT_PROBLEMS


def note_problems(session: Session | ScannedSession) -> None:
    """One line on stderr when the load report lists problems (the output is still complete)."""
    report = session.load_report
    problems = [p for p in report.problems if p.severity != "info"]
    if problems:
        first = problems[0]
        more = f" (and {report.serious - 1} more)" if report.serious > 1 else ""
        print(
            f"pi-jupyter: note: {session.path}: {first}{more}; `pi-jupyter info {session.path}` lists them all",
            file=sys.stderr,
        )


def write_json(obj: Any) -> None:
    """Write one JSON document (UTF-8, one line) to stdout."""
    import orjson

    try:
        blob = orjson.dumps(obj, default=_default)
    except TypeError:
        # lone surrogates (which JSON.parse accepts) are escaped rather than refused
        blob = json.dumps(obj, default=_default, ensure_ascii=True, separators=(",", ":")).encode()
    out = sys.stdout
    out.flush()
    out.buffer.write(blob + b"\n")
    out.buffer.flush()


def _default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def safe_stdout() -> None:
    """Never fail on a character the terminal's encoding lacks (emoji, U+2028): replace it."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        try:
            reconfigure(errors="replace")
        except (ValueError, OSError):  # pragma: no cover - detached streams
            pass
