"""Which conversation a notebook continues: the notebook decides, never its file name (DESIGN decision 14).

The rule, as the README states it: *a notebook continues the conversation its own saved
``%%pi`` outputs name; a new notebook, whatever its name, starts a new one.* In detail, at the
first ``%%pi`` (or ``%pi`` command) of a kernel:

1. The kernel reads its notebook file (:mod:`.notebook_file`). Unless the file holds one of the
   cells this kernel ran (the path Jupyter gave the kernel may be stale after a rename), it is
   not trusted and the notebook counts as new.
2. The latest binding of its outputs names the session (by id; the file is looked for beside the
   notebook, at its absolute path, then by id in the session folder). A notebook whose outputs
   were never saved (a restart before the first save) is found by its cell ids in the sessions'
   cell records, never by its name.
3. The session keeps records (``custom`` entries of type ``pi_jupyter.notebook``: notebook id and
   path) of the notebooks that continue it. The same notebook id at the same path continues. At
   another path: when the recorded notebook is still there, this one is a **copy** (JupyterLab's
   Duplicate, a ``cp``): its conversation goes on in a fork, said once in the cell, and later runs
   of the copy find that fork through the record. When it is gone, the notebook was **moved or
   renamed**: the conversation goes on, and the new path is recorded.
4. Otherwise a new session starts, named after the notebook (names repeat; the header and
   ``%pi sessions`` show the short id that tells them apart).

``jupyter execute`` and papermill do not tell the kernel which notebook it runs, so each of their
runs starts a new session (set ``JPY_SESSION_NAME`` to the notebook's path to continue one).
The records are dead-end ``custom`` entries: the context, here and in pi, does not change.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ..session import Session, SessionError
from ..session.files import read_regular
from ..session.kinds import NOTEBOOK_TYPE
from ..session.listing import session_info
from .cells import CellRun, cell_runs, record_run
from .notebook_file import NotebookFile, is_cell_id, new_notebook_id, read_notebook

_CELL_ID_RE = re.compile(rb'"cellId"\s*:\s*"([^"\\]{1,200})"')
RECENT_SESSIONS = 64
"""How many of the most recently written session files a notebook without saved outputs is looked for in."""


def _recent(folder: Path, limit: int) -> list[Path]:
    """The ``limit`` most recently modified session files of ``folder`` (a restart before the first save is recent)."""
    stamped = []
    for file in folder.glob("*.jsonl"):
        try:
            stamped.append((file.stat().st_mtime, file))
        except OSError:
            continue
    stamped.sort(key=lambda item: item[0], reverse=True)
    return [file for _, file in stamped[:limit]]


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
    fork: str | None = None
    """The id of the fork a copy of the notebook (at ``path``) continues in."""
    fork_file: str | None = None
    fork_notebook: str | None = None

    def to_data(self) -> dict[str, Any]:
        """The ``data`` of the ``custom`` entry (camelCase, unset fields left out)."""
        return {"notebook": self.notebook} | self.model_dump(exclude_none=True, exclude_defaults=True, by_alias=True)


def notebook_records(session: Session) -> list[NotebookRecord]:
    """The notebook records of ``session`` in file order (malformed ones skipped)."""
    out: list[NotebookRecord] = []
    for entry in session.custom_entries(NOTEBOOK_TYPE):
        if not isinstance(entry.get("data"), dict):
            continue
        try:
            out.append(NotebookRecord.model_validate(entry["data"]))
        except ValueError:
            continue
    return out


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
        return f"started in {os.path.basename(first.path)}" if first.path else "started in another notebook"
    return "started outside this notebook" if first.opened else None


def file_id(path: str | None) -> str | None:
    """``device:inode`` of the file at ``path`` (``None`` when there is none)."""
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}"


def _same(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _where(old: str, new: str) -> str:
    """The old path as the user knows it: its name, or where it was seen from the new folder when only the folder changed."""
    if os.path.basename(old) != os.path.basename(new):
        return os.path.basename(old)
    return os.path.relpath(old, os.path.dirname(new))


@dataclass
class Choice:
    """The session a notebook continues, its notebook id, and a line to say once (or ``None``)."""

    session: Session
    notebook_id: str
    said: str | None = None


class Binder:
    """Applies the rule of this module with a kernel's session folder; ``open``/``create`` make sessions as the kernel does."""

    def __init__(self, session_dir: Path, open: Callable[[str], Session], create: Callable[[str | None], Session]) -> None:
        self.session_dir = session_dir
        self._open = open
        self._create = create

    def choose(self, path: str | None, seen: set[str]) -> Choice:
        """The session of the notebook at ``path`` (``None``: not known), given the cell ids this kernel ran."""
        ran = {c for c in seen if is_cell_id(c)}
        nb = read_notebook(path)
        if nb is not None and ran and not ran & nb.cell_ids:
            nb = None  # not the notebook this kernel runs (a path gone stale after a rename): trust nothing in it
        stem = Path(path).stem if path else None
        binding = nb.latest() if nb is not None else None
        if nb is not None and binding is not None:
            found = self._locate(binding.session, *nb.session_files(binding))
            if found is None:
                said = (
                    f"the conversation this notebook continued (session {short_id(binding.session)}) is not in "
                    f"{self.session_dir}: a new one starts; %pi open FILE goes on with the old one"
                )
                return self._new(stem, path, said)
            return self._place(found, binding.notebook, path, nb)
        by_cells = self._by_cells(ran | (nb.cell_ids if nb is not None else set()), path)
        if by_cells is not None:
            session, notebook_id = by_cells
            return self._place(session, notebook_id or new_notebook_id(), path, nb)
        return self._new(stem, path)

    def adopt(self, session: Session, notebook_id: str, path: str | None) -> None:
        """Record that this notebook now continues ``session`` (chosen with ``%pi open``, ``new``, ``fork`` or ``--session``)."""
        records = [r for r in notebook_records(session) if not r.fork]
        if any(r.notebook == notebook_id and (_same(r.path, path) or r.path == path) for r in records):
            return
        record(session, NotebookRecord(notebook=notebook_id, path=path, opened=bool(records) or len(session) > 2))

    # ------------------------------------------------------------ the steps

    def _new(self, stem: str | None, path: str | None, said: str | None = None) -> Choice:
        session = self._create(stem)
        notebook_id = new_notebook_id()
        record(session, NotebookRecord(notebook=notebook_id, path=path))
        return Choice(session, notebook_id, said)

    def _locate(self, session_id: str, *files: str | None) -> Session | None:
        for file in files:
            if file and os.path.isabs(file) and os.path.isfile(file):
                try:
                    session = self._open(file)
                except (SessionError, OSError):
                    continue
                if session.id == session_id:
                    return session
        for info in Session.list(self.session_dir):
            if info.id == session_id:
                return self._open(info.path)
        return None

    def _place(self, session: Session, notebook_id: str, path: str | None, nb: NotebookFile | None, depth: int = 0) -> Choice:
        records = notebook_records(session)
        for rec in reversed(records):  # a copy of this notebook that has its fork already
            if rec.fork and rec.notebook == notebook_id and _same(rec.path, path) and depth < 8:
                fork = self._locate(rec.fork, rec.fork_file)
                if fork is not None:
                    return self._place(fork, rec.fork_notebook or notebook_id, path, nb, depth + 1)
        mine = [r for r in records if r.notebook == notebook_id and not r.fork]
        if not mine:
            record(session, NotebookRecord(notebook=notebook_id, path=path))
            return Choice(session, notebook_id)
        last = next((r for r in reversed(mine) if r.path), None)
        if last is None or path is None or _same(last.path, path):
            if path is not None and (last is None or (last.file_id is None and file_id(path))):
                record(session, NotebookRecord(notebook=notebook_id, path=path))  # the path, or the file id it lacked
            return Choice(session, notebook_id)
        here = file_id(path)
        moved = here is not None and here == last.file_id  # the very file, renamed or moved
        if not moved:
            original = last.path if self._still_there(last.path, notebook_id, nb) else self._twin(path, last.file_id, notebook_id)
            if original:
                return self._fork_for_copy(session, notebook_id, path, str(original))
        record(session, NotebookRecord(notebook=notebook_id, path=path, moved_from=last.path))
        if last.path and session.name == Path(last.path).stem and not session.readonly:
            session.set_name(Path(path).stem)  # the name it got from the notebook follows the notebook
        label = session_label(session.name, session.id)
        said = f"this notebook was {_where(last.path or '', path)}: its conversation ({label}) goes on here"
        return Choice(session, notebook_id, said)

    def _still_there(self, other_path: str | None, notebook_id: str, nb: NotebookFile | None) -> bool:
        """Is the notebook recorded at ``other_path`` still there (so the one running is a copy of it)?"""
        other = read_notebook(other_path)
        if other is None:
            return False
        if notebook_id in other.notebook_ids():
            return True
        ours = {c for c in (nb.cell_ids if nb is not None else set()) if is_cell_id(c)}
        return bool(ours & other.cell_ids)

    def _twin(self, path: str, recorded: str | None, notebook_id: str) -> Path | None:
        """The notebook file of this folder that is the recorded one (renamed since, not run yet), if it carries ``notebook_id``."""
        if not recorded:
            return None
        for other in Path(path).parent.glob("*.ipynb"):
            if not _same(str(other), path) and file_id(str(other)) == recorded:
                found = read_notebook(str(other))
                if found is not None and notebook_id in found.notebook_ids():
                    return other
        return None

    def _fork_for_copy(self, session: Session, notebook_id: str, path: str, original: str) -> Choice:
        stem = Path(path).stem
        if session.leaf_id is None:
            fork = self._create(stem)
        else:
            fork = session.fork(session.leaf_id, dir=self.session_dir)
            fork.set_name(stem)
            for run in cell_runs(session):  # so re-running a copied cell forks from where it started, as in the original
                if run.end in fork and (run.started_from is None or run.started_from in fork):
                    record_run(fork, CellRun(**run.model_dump(exclude={"entry_id"})))
        copy_id = new_notebook_id()
        record(fork, NotebookRecord(notebook=copy_id, path=path, copy_of=original))
        record(session, NotebookRecord(notebook=notebook_id, path=path, fork=fork.id, fork_file=fork.path, fork_notebook=copy_id))
        said = (
            f"this notebook is a copy of {os.path.basename(original)}: it continues that conversation in a fork "
            f"({session_label(session.name, session.id)} → {session_label(fork.name, fork.id)}); "
            "the original does not see this copy's cells"
        )
        return Choice(fork, copy_id, said)

    def _by_cells(self, cell_ids: set[str], path: str | None) -> tuple[Session, str | None] | None:
        """The session whose cell records hold one of ``cell_ids`` (real cell ids only: text hashes repeat across notebooks)."""
        ids = {c for c in cell_ids if is_cell_id(c)}
        if not ids or not self.session_dir.is_dir():
            return None
        found: list[tuple[float, Session]] = []
        for file in _recent(self.session_dir, RECENT_SESSIONS):
            try:
                data = read_regular(str(file))
            except (OSError, SessionError):
                continue
            if b'"cellId"' not in data or not {m.decode(errors="replace") for m in _CELL_ID_RE.findall(data)} & ids:
                continue
            try:
                found.append((file.stat().st_mtime, self._open(str(file))))
            except (OSError, SessionError):
                continue
        if not found:
            return None
        found.sort(key=lambda item: item[0], reverse=True)
        for _, session in found:  # a session that this notebook, at this path, continued
            for rec in reversed(notebook_records(session)):
                if not rec.fork and _same(rec.path, path):
                    return session, rec.notebook
        session = found[0][1]
        last = next((r for r in reversed(notebook_records(session)) if not r.fork), None)
        return session, last.notebook if last else None


__all__ = ["Binder", "Choice", "NotebookRecord", "notebook_records", "origin", "record", "session_label", "short_id"]
