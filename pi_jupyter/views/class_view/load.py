"""Reading a class's files into rows, on every core the machine lends.

Each file is read and counted on its own (:func:`~.class_read.read_session_file`, then
:func:`~.class_session.student_row`), and its entries are let go at once: a row keeps only
what the view shows. A large class from a command line is shared out among worker processes
(fork, one per core, at most four); in a process that runs other threads (a Jupyter kernel),
forking is not safe, so the files are read one after the other there.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import ProcessPoolExecutor

from ...session.jsonl import paused_gc
from .read import FileNote, SessionFile, read_session_file
from .session import student_row
from .stats import StudentRow

Read = tuple[SessionFile | FileNote, StudentRow | None]

PARALLEL_FROM = 24
"""Fewer files than this are read in this process (starting workers would cost more)."""


def read_one(path: str) -> Read:
    """One file: its row, or why it is not a session (the row's entries are not kept)."""
    found = read_session_file(path)
    if isinstance(found, FileNote):
        return found, None
    row = student_row(found)
    found.entries = []
    return found, row


def _read_many(paths: list[str]) -> list[Read]:
    with paused_gc():  # a million small dicts: the collector's rescans would cost more than reading them
        return [read_one(p) for p in paths]


def workers_for(count: int) -> int:
    """How many processes to read ``count`` files with (1: this one)."""
    if count < PARALLEL_FROM or threading.active_count() > 1 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return max(1, min(4, os.cpu_count() or 1, count // (PARALLEL_FROM // 2)))


def read_rows(paths: list[str], workers: int | None = None) -> list[Read]:
    """Every file of ``paths``, in order (see the module doc for when workers read them)."""
    n = workers if workers is not None else workers_for(len(paths))
    if n <= 1:
        return _read_many(paths)
    chunks = [paths[i::n] for i in range(n)]  # interleaved: large and small files spread evenly
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(_read_many, chunks))
    out: list[Read | None] = [None] * len(paths)
    for i, part in enumerate(parts):
        out[i::n] = part
    return [r for r in out if r is not None]


__all__ = ["read_one", "read_rows", "workers_for"]
