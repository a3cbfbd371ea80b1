"""Listing sessions with pi's ``SessionInfo`` fields (pi-design §1.13).

One recency definition is used everywhere (listing and "continue the most recent"): the time
of the last user or assistant message, else the header time, else the file's mtime. pi uses
that for ``/resume`` but the file mtime for ``--continue``; here they agree.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..messages.text import ms_from_iso
from .files import read_regular
from .jsonl import parse_lines, strip_bom
from .paths import sessions_root
from .report import LoadReport, SessionFileError


@dataclass(kw_only=True)
class SessionInfo:
    """What a session listing shows about one file (a dataclass: listing a folder imports no models)."""

    path: str
    id: str
    cwd: str = ""
    name: str | None = None
    parent_session_path: str | None = None
    created: datetime | None = None
    modified: datetime
    message_count: int = 0
    first_message: str = "(no messages)"
    all_messages_text: str = ""
    problems: int = 0

    def __str__(self) -> str:
        name = f" {self.name!r}" if self.name else ""
        when = self.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        first = self.first_message.replace("\n", " ")
        if len(first) > 60:
            first = first[:59] + "…"
        return f"{when}{name} {self.message_count:4d} msgs  {first}  [{os.path.basename(self.path)}]"


def session_info(path: str | os.PathLike[str]) -> SessionInfo | None:
    """Info on one file, or ``None`` when it is not a session file."""
    p = os.fspath(path)
    try:
        data = strip_bom(read_regular(p))  # a FIFO in the folder must not hang a listing
        mtime = os.stat(p).st_mtime
    except (OSError, SessionFileError):
        return None
    report = LoadReport(path=p)
    chunk = parse_lines(data, report)
    if not chunk.objs:
        return None
    header = chunk.objs[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        return None
    problems = report.serious
    return info_from_entries(p, header, chunk.objs[1:], problems=problems, mtime=mtime)


def info_from_entries(
    path: str, header: dict[str, Any], entries: Iterable[dict[str, Any]], *, problems: int = 0, mtime: float | None = None
) -> SessionInfo:
    """pi's ``SessionInfo`` fields computed from a header and the entries in file order."""
    builder = InfoBuilder()
    for entry in entries:
        builder.add(entry)
    return builder.build(path, header, problems=problems, mtime=mtime)


class InfoBuilder:
    """pi's ``SessionInfo`` fields gathered one entry at a time (file order), for readers that stream.

    ``keep_text=False`` leaves out ``all_messages_text`` (the text of every message, which a
    listing searches but a one-file summary does not need), so memory stays flat.
    """

    def __init__(self, *, keep_text: bool = True) -> None:
        self.message_count = 0
        self.first = ""
        self.texts: list[str] | None = [] if keep_text else None
        self.name: str | None = None
        self.last_ms: int | None = None

    def add(self, entry: dict[str, Any]) -> None:
        """Take one entry into account."""
        kind = entry.get("type")
        if kind == "session_info":
            raw = entry.get("name")
            self.name = raw.strip() or None if isinstance(raw, str) else None
        if kind != "message":
            return
        self.message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant") or "content" not in message:
            return
        ts = message.get("timestamp")
        if isinstance(ts, (int, float)) and not isinstance(ts, bool):
            if math.isfinite(ts):  # 1e400 reads as Infinity, an invalid date for pi
                self.last_ms = max(self.last_ms or 0, int(ts))
        else:
            ms = ms_from_iso(entry.get("timestamp"))
            if ms is not None:
                self.last_ms = max(self.last_ms or 0, ms)
        if self.texts is None and self.first:
            return  # no text to keep and the first message is known
        text = content_text(message.get("content"))
        if not text:
            return
        if self.texts is not None:
            self.texts.append(text)
        if not self.first and message.get("role") == "user":
            self.first = text

    def build(self, path: str, header: dict[str, Any], *, problems: int = 0, mtime: float | None = None) -> SessionInfo:
        """The :class:`SessionInfo` of what was added."""
        created_ms = ms_from_iso(header.get("timestamp"))
        if self.last_ms:
            modified = _dt(self.last_ms)
        elif created_ms is not None:
            modified = _dt(created_ms)
        elif mtime is not None:
            modified = datetime.fromtimestamp(mtime, tz=timezone.utc)
        else:
            modified = datetime.now(timezone.utc)
        parent = header.get("parentSession")
        cwd = header.get("cwd")
        return SessionInfo(
            path=os.path.abspath(path),
            id=header["id"],
            cwd=cwd if isinstance(cwd, str) else "",
            name=self.name,
            parent_session_path=parent if isinstance(parent, str) else None,
            created=_dt(created_ms) if created_ms is not None else None,
            modified=modified,
            message_count=self.message_count,
            first_message=self.first or "(no messages)",
            all_messages_text=" ".join(self.texts or ()),
            problems=problems,
        )


def list_sessions(folder: str | os.PathLike[str]) -> list[SessionInfo]:
    """Every session file (``*.jsonl``) directly in ``folder``, most recently active first."""
    base = Path(folder)
    if not base.is_dir():
        return []
    infos = [info for f in sorted(base.glob("*.jsonl")) if (info := session_info(f)) is not None]
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def list_all_sessions(root: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
    """Every session in every project folder under pi's sessions root, most recently active first."""
    base = Path(root) if root is not None else sessions_root()
    if not base.is_dir():
        return []
    infos: list[SessionInfo] = []
    for sub in sorted(p for p in base.iterdir() if p.is_dir()):
        infos.extend(list_sessions(sub))
    infos.sort(key=lambda i: i.modified, reverse=True)
    return infos


def content_text(content: Any) -> str:
    """The text blocks of a message's content joined with spaces (pi's ``SessionInfo`` texts).

    Content of an unexpected shape (a number, blocks whose text is not a string) gives what
    can be read of it rather than an error: one odd file must not break a whole listing.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    blocks = [b for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return " ".join(b["text"] for b in blocks)


def _dt(ms: int) -> datetime:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):  # beyond datetime's years 1 to 9999
        return datetime.max.replace(tzinfo=timezone.utc) if ms > 0 else datetime.min.replace(tzinfo=timezone.utc)


__all__: list[Any] = [
    "InfoBuilder",
    "SessionInfo",
    "content_text",
    "info_from_entries",
    "list_all_sessions",
    "list_sessions",
    "session_info",
]
