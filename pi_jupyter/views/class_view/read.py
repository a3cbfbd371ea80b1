"""A folder of students' session files, read for the class view: each file as far as it goes.

Every ``*.jsonl`` in the folder is read on its own and nothing stops the others: a file that
is not a session (no session header, another program's JSON lines, not UTF-8 JSON at all) or
cannot be read (a FIFO, no permission, a link leading out of the folder) is listed with its
problem; unreadable lines inside a session are skipped and counted; a last line cut off
mid-write (a student's kernel still writing) is left out and said so. Old pi files (version 1
and 2) are migrated in memory, so pi's own sessions are read as ours are. Other files
(notebooks, CSVs, the page itself) are listed as not read. Files are opened read-only and never changed.

This is a light reader on purpose: a class of 200 sessions of 1,000 entries each must open in
about a second, so it parses each file once and keeps the raw entry dicts.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...session.files import read_regular
from ...session.jsonl import strip_bom
from ...session.migrate import migrate, needs_migration
from ...session.report import LoadReport, SessionError
from .lines import parse_session_lines

SESSION_SUFFIX = ".jsonl"


class SessionFile(BaseModel):
    """One student's session file, as far as it could be read."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str
    student: str
    """Who it is: the file's name without ``.jsonl`` (a course notebook names every session alike)."""
    session_id: str = ""
    name: str | None = None
    """The session's own name (``session_info``), often the course notebook's."""
    entries: list[dict[str, Any]] = Field(default_factory=list, repr=False)
    problems: list[str] = Field(default_factory=list)
    """One line per kind of problem found while reading (unreadable lines, a cut last line)."""
    still_writing: bool = False
    """The last line was cut off: a writer may still be at work; what was complete is read."""


class FileNote(BaseModel):
    """A file of the folder that is not in the view, and why (one line)."""

    path: str
    name: str
    why: str


class ClassFolder(BaseModel):
    """What a folder holds: the sessions read (their entries let go once counted), the files that could not be, the files not read."""

    folder: str
    sessions: list[SessionFile] = Field(default_factory=list)
    unreadable: list[FileNote] = Field(default_factory=list)
    """``.jsonl`` files that are not sessions or could not be opened."""
    ignored: list[FileNote] = Field(default_factory=list)
    """Other files (not ``.jsonl``)."""


def list_folder(folder: str | os.PathLike[str]) -> tuple[ClassFolder, list[str]]:
    """The folder (its other files listed as not read) and its ``.jsonl`` files to read, sorted by name.

    A missing folder raises ``FileNotFoundError``, a file ``NotADirectoryError``.
    """
    path = os.path.abspath(os.fspath(folder))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no folder {path}")
    if not os.path.isdir(path):
        raise NotADirectoryError(f"{path} is not a folder (give the folder that holds the students' session files)")
    out = ClassFolder(folder=path)
    candidates = []
    root = os.path.realpath(path)
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if name.startswith("."):
            continue
        if name.endswith(SESSION_SUFFIX):
            if os.path.islink(full) and not os.path.realpath(full).startswith(root + os.sep):
                # a submission is what the folder holds: a link out of it would put someone else's file into the page
                out.unreadable.append(FileNote(path=full, name=name, why="a link to a file outside the folder: not read"))
                continue
            candidates.append(full)
        elif os.path.isfile(full):
            out.ignored.append(FileNote(path=full, name=name, why=_not_read(name)))
    return out, candidates


def _not_read(name: str) -> str:
    if name.endswith(".ipynb"):
        return "a notebook, not read: the class view reads the session file its %%pi cells wrote (a .jsonl)"
    return "not a session file (.jsonl): not read"


def read_session_file(path: str) -> SessionFile | FileNote:
    """One file: a :class:`SessionFile` with what could be read, or a :class:`FileNote` saying why it is not a session."""
    name = os.path.basename(path)

    def note(why: str) -> FileNote:
        return FileNote(path=path, name=name, why=why)

    try:
        data = strip_bom(read_regular(path))
    except SessionError as exc:
        return note(getattr(exc, "reason", str(exc)))
    except OSError as exc:
        return note(f"cannot be read: {exc.strerror or exc}")
    if not data.strip():
        return note("an empty file (no session header)")
    report = LoadReport(path=path)
    objs, line_numbers, torn = parse_session_lines(data, report)
    if not objs:
        return note("no JSON object in it: not a session file")
    header = objs[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        kind = header.get("type")
        what = f"a {kind!r} entry" if isinstance(kind, str) else "a JSON object without a 'type'"
        return note(f"not a session file: line {line_numbers[0]} is {what}, not a session header")
    entries = objs[1:]
    if needs_migration(header):
        migrate(header, entries)
    usable = [e for e in entries if type(e.get("id")) is str and type(e.get("type")) is str]
    problems = _problems(report, len(entries) - len(usable))
    names = [e.get("name") for e in reversed(usable) if e["type"] == "session_info"][:1]
    session_name = names[0] if names and isinstance(names[0], str) else None
    return SessionFile(
        path=path,
        student=name[: -len(SESSION_SUFFIX)],
        session_id=header["id"],
        name=session_name,
        entries=usable,
        problems=problems,
        still_writing=torn,
    )


def _problems(report: LoadReport, odd: int) -> list[str]:
    lines: list[str] = []
    torn = [p for p in report.problems if p.kind == "torn_tail"]
    bad = [p for p in report.problems if p.kind != "torn_tail" and p.severity == "error"]
    skipped = report.counts.get("malformed", 0)
    if bad:
        lines.append(f"{skipped} unreadable line{'s' if skipped != 1 else ''} skipped (first: line {bad[0].line}: {bad[0].message})")
    if odd:
        lines.append(f"{odd} line{'s' if odd != 1 else ''} without an id or a type skipped")
    if torn:
        lines.append(f"the last line (line {torn[0].line}) is cut off: still being written? The view shows what was complete")
    return lines


__all__ = ["ClassFolder", "FileNote", "SessionFile", "list_folder", "read_session_file"]
