"""``%pi sessions``: the sessions of the session folder, told apart by more than an id.

Each row: the label (``name · short id``), the notebook that continued it last (from its
records), its message count, when it was last active, and its first prompt. ``%pi open NAME``
with several sessions of that name lists the same descriptions (:func:`describe`) instead of
picking one.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..session import Session, SessionError
from ..session.files import read_regular
from ..session.kinds import NOTEBOOK_TYPE
from ..session.listing import SessionInfo
from .binding_records import session_label

_RECORD_LINE = re.compile(rb'^.*"customType"\s*:\s*"' + re.escape(NOTEBOOK_TYPE.encode()) + rb'".*$', re.M)


def notebook_of(path: str) -> str | None:
    """The file name of the notebook that continued the session at ``path`` last (``None``: none recorded)."""
    try:
        data = read_regular(path)
    except (OSError, SessionError):
        return None
    for line in reversed(_RECORD_LINE.findall(data)):
        try:
            record = json.loads(line).get("data")
        except ValueError:
            continue
        if isinstance(record, dict) and not record.get("fork"):
            where = record.get("path") or record.get("ran")
            if isinstance(where, str) and where:
                return os.path.basename(where)
    return None


def _first(info: SessionInfo, width: int) -> str:
    first = info.first_message.replace("\n", " ")
    return first if len(first) <= width else first[: width - 1] + "…"


def describe(info: SessionInfo) -> str:
    """One session in a line: ``Untitled · 1a2b3c4d (study.ipynb, 4 messages, 2026-12-05 10:31, "first prompt")``."""
    notebook = notebook_of(info.path)
    parts = [notebook or "no notebook", f"{info.message_count} messages", f"{info.modified.astimezone():%Y-%m-%d %H:%M}"]
    if info.message_count:
        parts.append(json.dumps(_first(info, 40), ensure_ascii=False))
    return f"{session_label(info.name, info.id)} ({', '.join(parts)})"


def sessions_listing(state: Any) -> str:
    """One line per session of ``state``'s folder, most recent first: ``*`` marks the one this notebook continues."""
    infos = Session.list(state.session_dir)
    if not infos:
        return f"no sessions in {state.session_dir}"
    rows = []
    for info in infos:
        mark = "*" if info.path == state.current else " "
        when = info.modified.astimezone().strftime("%Y-%m-%d %H:%M")
        notebook = notebook_of(info.path) or "-"
        rows.append((mark, session_label(info.name, info.id), notebook, f"{info.message_count} msgs", when, _first(info, 50)))
    label_w = max(len(r[1]) for r in rows)
    nb_w = max(len(r[2]) for r in rows)
    return "\n".join(f"{m} {label:<{label_w}}  {nb:<{nb_w}}  {count:>9}  {when}  {first}" for m, label, nb, count, when, first in rows)


__all__ = ["describe", "notebook_of", "sessions_listing"]
