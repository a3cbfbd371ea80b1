"""Seeing and reclaiming the space of a session folder's world store (``pi-jupyter gc``).

The objects any session file of the folder refers to are kept; the others (from sessions
deleted since, or from runs whose entries were never written) are removed. Objects newer
than ``min_age_s`` are kept too, so a kernel that has just saved a value and is about to
append the entry that refers to it does not lose it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .record import delta_of, slot_refs
from .store import FOLDER_NAME, Store
from .values import format_bytes

_REF = re.compile(r"^[0-9a-f]{40}$")
_REF_IN_TEXT = re.compile(rb"(?<![0-9a-f])[0-9a-f]{40}(?![0-9a-f])")


@dataclass
class Usage:
    """What a store holds and what a collection removed."""

    folder: str
    objects: int = 0
    bytes: int = 0
    referenced: int = 0
    referenced_bytes: int = 0
    sessions: int = 0
    removed: int = 0
    removed_bytes: int = 0

    def line(self, dry_run: bool = False) -> str:
        """One line for people."""
        text = (
            f"{self.folder}: {self.objects:,} objects, {format_bytes(self.bytes)}; "
            f"{self.referenced:,} ({format_bytes(self.referenced_bytes)}) referred to by {self.sessions:,} session files"
        )
        if self.removed or dry_run:
            verb = "would remove" if dry_run else "removed"
            text += f"; {verb} {self.removed:,} ({format_bytes(self.removed_bytes)})"
        return text


class GcError(Exception):
    """gc removed nothing; the message says why, in one line."""


def referenced(folder: Path) -> tuple[set[str], int]:
    """Every object ref the session files of ``folder`` mention, and how many files there are.

    A line that does not parse (damaged, or being written) keeps every ref-like string in it.
    A session file that cannot be read raises :class:`GcError`: its objects cannot be told apart.
    Only regular files are read, without blocking (a named pipe called ``x.jsonl`` would wait
    for a writer forever, a link to ``/dev/zero`` never end); a link to a session file elsewhere
    is read, since its refs only keep more objects.
    """
    from ..session.files import read_regular_fd
    from ..session.report import SessionError

    refs: set[str] = set()
    files = sorted(p for p in folder.glob("*.jsonl"))
    for path in files:
        try:
            with read_regular_fd(str(path)) as fh:
                for line in fh:
                    _scan(line, refs)
        except SessionError as exc:
            raise GcError(f"{path}: {getattr(exc, 'reason', None) or exc}; nothing removed") from None
        except OSError as exc:
            raise GcError(f"{path}: cannot be read ({exc.strerror or exc}); nothing removed") from None
    return refs, len(files)


def _scan(line: bytes, refs: set[str]) -> None:
    if b'"world' not in line and b"pi_jupyter.world" not in line:
        return
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        refs.update(m.decode("ascii") for m in _REF_IN_TEXT.findall(line))
        return
    if isinstance(entry, dict):
        refs.update(_refs(entry))


def _refs(entry: dict[str, Any]) -> Iterator[str]:
    delta = delta_of(entry)
    if not delta:
        return
    slots = [s for c in delta.vars for s in (c.before, c.after)] + [s for f in delta.files for s in (f.before, f.after)]
    yield from (r for s in slots for r in slot_refs(s) if _REF.match(r))  # a group's object too


def collect(session_folder: str | Path, *, dry_run: bool = False, min_age_s: float = 600.0) -> Usage:
    """Remove the objects of ``session_folder``'s store that no session file refers to (``dry_run``: only count).

    Objects saved or used again in the last ``min_age_s`` seconds are kept (a run may not
    have written the entry that refers to them yet). The sweep holds the store's lock, so a
    writer that uses an object again meanwhile either finds it kept or writes it again.
    Raises :class:`GcError` when a session file of the folder cannot be read.
    """
    folder = Path(session_folder)
    store = Store(folder / FOLDER_NAME)
    keep, sessions = referenced(folder)
    usage = Usage(folder=str(folder / FOLDER_NAME), sessions=sessions)
    with store.locked(exclusive=not dry_run):
        cutoff = time.time() - min_age_s
        for ref, size in list(store.refs()):  # regular files in the store's own folders: links are never followed
            usage.objects += 1
            usage.bytes += size
            if ref in keep:
                usage.referenced += 1
                usage.referenced_bytes += size
                continue
            when = store.mtime(ref)
            if when is None or when >= cutoff:
                continue  # young, or gone already: not ours to remove
            usage.removed += 1
            usage.removed_bytes += size
            if not dry_run:
                store.remove(ref)
        for name, size, when in list(store.leftovers()):  # half-written objects of a crash
            if when >= cutoff:
                continue
            usage.removed += 1
            usage.removed_bytes += size
            if not dry_run:
                store.remove_leftover(name)
    return usage
