"""The records a session keeps of the notebooks that continue it, and the labels that tell sessions apart.

A record is a dead-end ``custom`` entry of type ``pi_jupyter.notebook`` (the context, here and in
pi, does not change): this notebook id, at this path, with this file, continues this session (or,
with ``fork``, a copy of it at that path continues a fork). :mod:`.binding` reads them to tell a
notebook from its copy and a moved notebook from one received from elsewhere.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ..session import Session, SessionError
from ..session.kinds import NOTEBOOK_TYPE
from ..session.listing import session_info


def short_id(session_id: str) -> str:
    """The 8 characters that tell sessions apart (the random end of the id: its start is a timestamp)."""
    return session_id.replace("-", "")[-8:]


def session_label(name: str | None, session_id: str) -> str:
    """``name · 1a2b3c4d`` (``session 1a2b3c4d`` without a name)."""
    return f"{name} · {short_id(session_id)}" if name else f"session {short_id(session_id)}"


class NotebookRecord(BaseModel):
    """That a notebook continues a session (or, with ``fork``, that a copy of it continues a fork)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    notebook: str
    path: str | None = None
    file_id: str | None = None
    """``device:inode`` of the notebook file: a rename keeps it (and Jupyter saves in place), a copy gets a new one."""
    opened: bool = False
    """The notebook took up a session it did not start (``%pi open``, ``--session``)."""
    moved_from: str | None = None
    copy_of: str | None = None
    ran: str | None = None
    """A run that was not told its notebook's path (nbclient, papermill): the notebook it found by its cells."""
    fork: str | None = None
    """The id of the fork a copy of the notebook (at ``path``) continues in."""
    fork_file: str | None = None
    fork_notebook: str | None = None
    at: str | None = Field(default=None, exclude=True)
    """When the record was written (the entry's timestamp; read back, never written into ``data``)."""

    def to_data(self) -> dict[str, Any]:
        """The ``data`` of the ``custom`` entry (camelCase, unset fields left out)."""
        return {"notebook": self.notebook} | self.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True)


def notebook_records(session: Session) -> list[NotebookRecord]:
    """The notebook records of ``session`` in file order (malformed ones skipped)."""
    out: list[NotebookRecord] = []
    for entry in session.custom_entries(NOTEBOOK_TYPE):
        data = entry.get("data")
        if not isinstance(data, dict):
            continue
        try:
            rec = NotebookRecord.model_validate({k: v for k, v in data.items() if k != "at"})
        except ValueError:
            continue
        stamp = entry.get("timestamp")
        out.append(rec.model_copy(update={"at": stamp if isinstance(stamp, str) else None}))
    return out


def file_id(path: str | None) -> str | None:
    """``device:inode`` of the file at ``path`` (``None`` when there is none)."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def record(session: Session, rec: NotebookRecord) -> None:
    """Append a notebook record (a dead-end entry: the leaf does not move); a read-only session gets none."""
    if session.readonly:
        return
    if rec.file_id is None and rec.fork is None:
        rec = rec.model_copy(update={"file_id": file_id(rec.path)})
    try:
        session.append_custom(NOTEBOOK_TYPE, rec.to_data())
    except SessionError:
        pass  # the binding still holds for this kernel; the next run looks again


def origin(session: Session, notebook_id: str | None) -> str | None:
    """Where the conversation of ``session`` started, when not in this notebook (for the header), else ``None``."""
    parent = session.header.parent_session
    if parent:
        info = session_info(parent) if os.path.isfile(parent) else None
        return f"forked from {session_label(info.name, info.id)}" if info else f"forked from {os.path.basename(parent)}"
    first = next((r for r in notebook_records(session) if not r.fork), None)
    if first is None:
        return None
    if first.notebook != notebook_id:
        where = first.path or first.ran
        return f"started in {os.path.basename(where)}" if where else "started in another notebook"
    return "started outside this notebook" if first.opened else None


def last_notebook(session_records: list[NotebookRecord]) -> str | None:
    """The path of the notebook that continued a session last (from its records), if any."""
    for rec in reversed(session_records):
        if not rec.fork and (rec.path or rec.ran):
            return rec.path or rec.ran
    return None


__all__ = ["NotebookRecord", "file_id", "last_notebook", "notebook_records", "origin", "record", "session_label", "short_id"]
