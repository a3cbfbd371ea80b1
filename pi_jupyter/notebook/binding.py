"""Which conversation a notebook continues: the notebook decides, never its file name nor the order its cells run in.

The rule (DESIGN decision 14), as the manual states it (``docs/notebook.md``, *A notebook owns its
conversation*). At the first ``%%pi`` or ``%pi`` of a kernel, whichever cell it is (an old one, or
a new one typed after a restart):

1. **The notebook's path** is the one Jupyter gave the kernel (``JPY_SESSION_NAME``), followed
   through the renames and moves the server logged since the kernel started (:mod:`.moves`),
   or VS Code's ``__vsc_ipynb_file__``. ``jupyter execute``, papermill and nbclient give none:
   see 5.
2. **Its saved outputs** name the session: the newest binding (:mod:`.notebook_file`) by id,
   its file looked for beside the notebook, at its recorded path, then by id in the session
   folder. Outputs never saved (a restart before the first save) are found by the notebook's
   cell ids in the sessions' cell records, then by the session records that name this very
   file (same path, same file, unchanged since): never by its name alone.
3. **The session's records** (``custom`` entries of type ``pi_jupyter.notebook``: notebook id,
   path, file id) tell the notebook from a copy: the same notebook id at the same path
   continues. At another path, when the recorded notebook is still there (whatever inode the
   file system gave the new one), this one is a **copy** (JupyterLab's Duplicate, a ``cp``): its
   conversation goes on in a fork, said once, and later runs of the copy find that fork through
   the record. When it is gone, the notebook was **moved or renamed**: the conversation goes
   on, said once, and the session's name follows the notebook's.
4. **A session outside the notebook's session folder** (``session_dir``) is taken up only when
   its own records vouch for this notebook: the same notebook id at this path, at a path it was
   moved from (the same file), or beside it (a Duplicate of a notebook that is still there). A
   notebook from elsewhere naming a session the user has (a received or downloaded notebook, a
   copy in another folder) never opens, creates or appends to it: a new session starts and the
   cell says so in one line, with the command that opens the other.
5. **Without a path** (``jupyter execute``, papermill, nbclient) the kernel finds its notebook
   among the notebooks of its working folder by the text of the ``%pi`` cells it ran. Such a run
   cannot tell the notebook from a copy of it (papermill's output is one), so it continues the
   notebook's conversation in a **fork**, said once, and the notebook's own session is left as it
   was; ``JPY_SESSION_NAME=path/to/notebook.ipynb`` makes it continue in place.
6. Otherwise a new session starts, named after the notebook; when the conversation named is not
   found (its file deleted), the cell says so in one line and names the way back.

The records are dead-end ``custom`` entries: the context, here and in pi, does not change.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..agent.typed_text import scrub
from ..messages.text import ms_from_iso
from ..session import Session, SessionError
from ..session.files import read_regular
from .binding_records import NotebookRecord, file_id, notebook_records, origin, record, session_label, short_id
from .cells import CellRun, cell_runs, record_run
from .notebook_file import Binding, NotebookFile, is_cell_id, new_notebook_id, read_notebook

_CELL_ID_RE = re.compile(rb'"cellId"\s*:\s*"([^"\\]{1,200})"')
RECENT_SESSIONS = 64
"""How many of the most recently written session files a notebook without saved outputs is looked for in."""


def _recent(folder: Path, limit: int) -> list[Path]:
    """The ``limit`` most recently modified session files of ``folder``, newest first (a restart before the first save is recent)."""
    stamped = []
    for file in folder.glob("*.jsonl"):
        try:
            stamped.append((file.stat().st_mtime, file))
        except OSError:
            continue
    stamped.sort(key=lambda item: item[0], reverse=True)
    return [file for _, file in stamped[:limit]]


def _first_line(file: Path) -> str:
    """The start of a file's first line (a session's header), never blocking on a FIFO."""
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return ""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return ""
        return os.read(fd, 4096).split(b"\n", 1)[0].decode(errors="replace")
    except OSError:
        return ""
    finally:
        os.close(fd)


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


def _stem(path: str | None) -> str | None:
    return scrub(Path(path).stem).strip() or None if path else None


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

    def choose(
        self, path: str | None, seen: set[str], found: Iterable[NotebookFile] = (), came_from: Iterable[tuple[str, float]] = ()
    ) -> Choice:
        """The session of the notebook at ``path``, given the cell ids this kernel ran.

        ``path`` is ``None`` when the front end did not say (then ``found``: the notebooks of the
        working folder holding the ``%pi`` cells this kernel ran). ``came_from``: where the file
        was before the renames the server logged (:func:`.moves.history`).
        """
        if path is None:
            return self._headless(list(found))
        ran = {c for c in seen if is_cell_id(c)}
        nb = read_notebook(path)
        binding = nb.latest() if nb is not None else None
        if nb is not None and binding is not None:
            session, refused = self._locate(binding.session, binding.notebook, nb.session_files(binding), path)
            if session is not None:
                return self._place(session, binding.notebook, path, nb)
            return self._new(_stem(path), path, self._not_taken(binding, refused))
        by_cells = self._by_cells(ran | (nb.cell_ids if nb is not None else set()), path)
        if by_cells is not None:
            session, notebook_id = by_cells
            return self._place(session, notebook_id or new_notebook_id(), path, nb)
        by_file = self._by_file(path, list(came_from))
        if by_file is not None:
            return self._place(by_file[0], by_file[1], path, nb)
        return self._new(_stem(path), path)

    def adopt(self, session: Session, notebook_id: str, path: str | None) -> None:
        """Record that this notebook now continues ``session`` (chosen with ``%pi open``, ``new``, ``fork`` or ``--session``)."""
        records = [r for r in notebook_records(session) if not r.fork]
        if any(r.notebook == notebook_id and (_same(r.path, path) or r.path == path) for r in records):
            return
        record(session, NotebookRecord(notebook=notebook_id, path=path, opened=bool(records) or len(session) > 2))

    def follow(self, session: Session, notebook_id: str, old: str, new: str) -> None:
        """The notebook was renamed or moved from ``old`` to ``new`` while its kernel ran: record it, and its name follows."""
        record(session, NotebookRecord(notebook=notebook_id, path=new, moved_from=old))
        self._rename(session, old, new)

    # ------------------------------------------------------------ the steps

    def _new(self, stem: str | None, path: str | None, said: str | None = None, ran: str | None = None) -> Choice:
        session = self._create(stem)
        notebook_id = new_notebook_id()
        record(session, NotebookRecord(notebook=notebook_id, path=path, ran=ran))
        return Choice(session, notebook_id, said)

    def inside(self, file: str | None) -> bool:
        """Is ``file`` in this notebook's session folder (the kernel's ``session_dir``)?"""
        if not file:
            return False
        try:  # the file itself resolved: a link in the folder that points out of it is outside
            return os.path.dirname(os.path.realpath(file)) == os.path.realpath(self.session_dir)
        except (OSError, ValueError):
            return False

    def _candidates(self, session_id: str, files: list[str]) -> list[str]:
        """Where a session may be: ``files`` in order, then its file in the session folder (named ``…_ID.jsonl``)."""
        out = [f for f in files if f and os.path.isabs(f)]
        if self.session_dir.is_dir() and re.fullmatch(r"[0-9A-Za-z-]{1,100}", session_id):
            named = sorted(self.session_dir.glob(f"*_{session_id}.jsonl"))
            out += [str(p) for p in named or [p for p in sorted(self.session_dir.glob("*.jsonl")) if session_id in _first_line(p)]]
        return list(dict.fromkeys(out))

    def _locate(self, session_id: str, notebook_id: str, files: list[str], path: str | None) -> tuple[Session | None, str | None]:
        """The session ``session_id`` (looked for at ``files``, then in the session folder) if it may be taken up here.

        Else ``(None, where it was found outside the session folder, if it was)``.
        """
        refused = None
        for file in self._candidates(session_id, files):
            if not os.path.isfile(file):
                continue
            try:
                session = self._open(file)
            except (SessionError, OSError):
                continue
            if session.id != session_id:
                continue
            if self.inside(session.path) or (path is not None and self._vouches(session, notebook_id, path)):
                return session, None
            refused = refused or file
        return None, refused

    def _vouches(self, session: Session, notebook_id: str, path: str) -> bool:
        """Do ``session``'s records say that the notebook at ``path`` is theirs?

        Here; or moved here (the same file, gone from where it was recorded); or a copy beside
        the recorded notebook, which is still there (JupyterLab's Duplicate: only someone who can
        write into that folder puts a file there).
        """
        mine = [r for r in notebook_records(session) if r.notebook == notebook_id and not r.fork and r.path]
        if not mine:
            return False
        last = mine[-1]
        if _same(last.path, path):
            return True
        if self._still_there(last.path, notebook_id, None):
            return os.path.dirname(os.path.abspath(last.path or "")) == os.path.dirname(os.path.abspath(path))
        here = file_id(path)
        return here is not None and here == last.file_id

    def _not_taken(self, binding: Binding, refused: str | None) -> str:
        """The line said when the conversation a notebook's outputs name is not taken up."""
        short = short_id(binding.session)
        if refused:
            return (
                f"this notebook's outputs name a conversation (session {short}) in {refused}, outside this notebook's session "
                f"folder {self.session_dir}: it was left alone and a new one starts here; %pi open {refused} continues it"
            )
        return (
            f"the conversation this notebook continued (session {short}) is not in {self.session_dir} "
            f"(its file was deleted or moved): a new one starts here; %pi open FILE continues it if you have it"
        )

    def _place(self, session: Session, notebook_id: str, path: str, nb: NotebookFile | None, depth: int = 0) -> Choice:
        records = notebook_records(session)
        for rec in reversed(records):  # a copy of this notebook that has its fork already
            if rec.fork and rec.notebook == notebook_id and _same(rec.path, path) and depth < 8:
                fork, _ = self._locate(rec.fork, rec.fork_notebook or notebook_id, [rec.fork_file or ""], path)
                if fork is not None:
                    return self._place(fork, rec.fork_notebook or notebook_id, path, nb, depth + 1)
        mine = [r for r in records if r.notebook == notebook_id and not r.fork]
        if not mine:
            record(session, NotebookRecord(notebook=notebook_id, path=path))
            return Choice(session, notebook_id)
        last = next((r for r in reversed(mine) if r.path), None)
        if last is None or _same(last.path, path):
            if last is None or (last.file_id is None and file_id(path)):
                record(session, NotebookRecord(notebook=notebook_id, path=path))  # the path, or the file id it lacked
            return Choice(session, notebook_id)
        # another path: a copy while the recorded notebook is still there, whatever inode this file got
        original = last.path if self._still_there(last.path, notebook_id, nb) else self._twin(path, last.file_id, notebook_id)
        if original:
            return self._fork_for_copy(session, notebook_id, path, str(original))
        record(session, NotebookRecord(notebook=notebook_id, path=path, moved_from=last.path))
        self._rename(session, last.path or "", path)
        label = session_label(session.name, session.id)
        said = f"this notebook was {_where(last.path or '', path)}: its conversation ({label}) goes on here"
        return Choice(session, notebook_id, said)

    def _rename(self, session: Session, old: str, new: str) -> None:
        """The name a session took from its notebook follows the notebook (a name the user gave stays)."""
        if old and session.name == _stem(old) and not session.readonly and (stem := _stem(new)):
            try:
                session.set_name(stem)
            except SessionError:
                pass

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

    def _fork(self, session: Session, stem: str | None) -> Session:
        """A fork of ``session`` at its leaf in the session folder (its cells' runs kept, so re-running one forks where it started)."""
        if session.leaf_id is None:
            return self._create(stem)
        fork = session.fork(session.leaf_id, dir=self.session_dir)
        if stem:
            fork.set_name(stem)
        for run in cell_runs(session):
            if run.end in fork and (run.started_from is None or run.started_from in fork):
                record_run(fork, CellRun(**run.model_dump(exclude={"entry_id"})))
        return fork

    def _fork_for_copy(self, session: Session, notebook_id: str, path: str, original: str) -> Choice:
        fork = self._fork(session, _stem(path))
        copy_id = new_notebook_id()
        record(fork, NotebookRecord(notebook=copy_id, path=path, copy_of=original))
        record(session, NotebookRecord(notebook=notebook_id, path=path, fork=fork.id, fork_file=fork.path, fork_notebook=copy_id))
        said = (
            f"this notebook is a copy of {os.path.basename(original)}: it continues that conversation in a fork "
            f"({session_label(session.name, session.id)} → {session_label(fork.name, fork.id)}); "
            "the original does not see this copy's cells"
        )
        return Choice(fork, copy_id, said)

    def _headless(self, found: list[NotebookFile]) -> Choice:
        """A run that was not told its notebook's path (rule 5): ``found`` are the notebooks holding the cells it ran."""
        bound = {b.session: nb for nb in found if (b := nb.latest()) is not None}
        if not bound:
            nb = found[0] if len(found) == 1 else None
            return self._new(_stem(nb.path) if nb else None, None, ran=nb.path if nb else None)
        if len(bound) > 1:
            names = ", ".join(sorted(os.path.basename(nb.path) for nb in bound.values()))
            said = (
                f"this run was not told its notebook's path, and {names} hold its cells with different conversations: "
                "a new one starts; run it with JPY_SESSION_NAME=path/to/notebook.ipynb to continue one"
            )
            return self._new(None, None, said)
        nb = next(iter(bound.values()))
        binding = nb.latest()
        assert binding is not None
        session, refused = self._locate(binding.session, binding.notebook, nb.session_files(binding), None)
        name = os.path.basename(nb.path)
        if session is None:
            return self._new(_stem(nb.path), None, self._not_taken(binding, refused), ran=nb.path)
        fork = self._fork(session, _stem(nb.path))
        run_id = new_notebook_id()
        record(fork, NotebookRecord(notebook=run_id, copy_of=nb.path, ran=nb.path))
        said = (
            f"this run was not told its notebook's path (nbclient, papermill, jupyter execute): it found {name} by its cells "
            f"and continues its conversation in a fork ({session_label(session.name, session.id)} → "
            f"{session_label(fork.name, fork.id)}), leaving the notebook's own as it was; JPY_SESSION_NAME={name} continues that one"
        )
        return Choice(fork, run_id, said)

    def _scan(self, needle: bytes | None, match: Callable[[bytes], bool]) -> list[Session]:
        """The recent sessions of the folder whose bytes ``match`` (``needle``: a quick test first), newest first."""
        if not self.session_dir.is_dir():
            return []
        out: list[Session] = []
        for file in _recent(self.session_dir, RECENT_SESSIONS):
            try:
                data = read_regular(str(file))
            except (OSError, SessionError):
                continue
            if (needle is not None and needle not in data) or not match(data):
                continue
            try:
                out.append(self._open(str(file)))
            except (OSError, SessionError):
                continue
        return out

    def _by_cells(self, cell_ids: set[str], path: str | None) -> tuple[Session, str | None] | None:
        """The session whose cell records hold one of ``cell_ids`` (real cell ids only: text hashes repeat across notebooks)."""
        ids = {c for c in cell_ids if is_cell_id(c)}
        if not ids:
            return None
        found = self._scan(b'"cellId"', lambda data: bool({m.decode(errors="replace") for m in _CELL_ID_RE.findall(data)} & ids))
        for session in found:  # a session that this notebook, at this path, continued (the newest first)
            for rec in reversed(notebook_records(session)):
                if not rec.fork and _same(rec.path, path):
                    return session, rec.notebook
        if not found:
            return None
        last = next((r for r in reversed(notebook_records(found[0])) if not r.fork), None)
        return found[0], last.notebook if last else None

    def _by_file(self, path: str, came_from: list[tuple[str, float]]) -> tuple[Session, str] | None:
        """The session that recorded this very file, here or where the server saw it renamed from, unchanged since.

        A restart before any save. A new notebook given the same name (and maybe the inode of a
        deleted one) was written after the record, so it never matches; a logged rename after
        the record explains a later change time.
        """
        here = file_id(path)
        try:
            changed = os.stat(path).st_ctime
        except OSError:
            return None
        if here is None:
            return None
        places = [(path, None), *came_from]
        for session in self._scan(here.encode(), lambda data: True):
            records = [r for r in notebook_records(session) if not r.fork and r.path]
            for place, renamed_at in places:
                rec = next((r for r in reversed(records) if _same(r.path, place) or r.path == place), None)
                ms = ms_from_iso(rec.at) if rec is not None else None
                if rec is None or ms is None or rec.file_id != here:
                    continue
                at = ms / 1000
                if renamed_at is None and changed <= at + 0.001:
                    return session, rec.notebook
                if renamed_at is not None and at <= renamed_at and changed <= max(t for _, t in came_from) + 1:
                    return session, rec.notebook
        return None


__all__ = ["Binder", "Choice", "NotebookRecord", "notebook_records", "origin", "record", "session_label", "short_id"]
