"""The directory walk behind ``grep`` and ``find``: ripgrep/fd-like, in pure Python.

Why not shell out to ``rg``/``fd``: they may be missing, and one implementation gives the
same results everywhere (tests included). The walk is depth-first in byte order of names
(deterministic, unlike the parallel tools), includes hidden files (pi passes ``--hidden``),
always skips ``.git`` and ``node_modules``, honours ``.gitignore`` and ``.ignore`` files from
the search root down and from its ancestors up to the git root (plus the tool's own ignore
file name), and does not follow symlinked directories (no loops, no escaping the root).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...resources.ignore import IgnoreMatcher

__all__ = ["ALWAYS_SKIPPED", "Entry", "walk"]

ALWAYS_SKIPPED = frozenset({".git", "node_modules"})


@dataclass(frozen=True)
class Entry:
    """One file or directory found: absolute ``path``, posix ``rel`` path from the root."""

    path: str
    rel: str
    is_dir: bool
    is_link: bool


def walk(
    root: str,
    *,
    ignore_files: tuple[str, ...] = (".gitignore", ".ignore"),
    stop: Callable[[], bool] = lambda: False,
    skip_dir: Callable[[Entry], bool] = lambda _e: False,
) -> Iterator[Entry]:
    """Yield every entry below ``root`` that is not ignored (directories before their contents).

    ``stop()`` is polled between directories and files; when true the walk ends.
    ``skip_dir(entry)`` prunes a directory the caller does not want to enter.
    """
    root = os.path.abspath(root)
    matcher = IgnoreMatcher.for_root(root, file_names=ignore_files, from_git_root=True)

    def visit(directory: str, rel: str, m: IgnoreMatcher) -> Iterator[Entry]:
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        if rel:
            m = m.descend(directory, rel, present={e.name for e in entries})
        for de in entries:
            if stop():
                return
            name = de.name
            child_rel = f"{rel}/{name}" if rel else name
            try:
                is_link = de.is_symlink()
                is_dir = de.is_dir()  # follows a link; a broken link is a file
            except OSError:
                continue
            if is_dir and name in ALWAYS_SKIPPED:
                continue
            if m.ignored(child_rel, is_dir):
                continue
            entry = Entry(de.path, child_rel, is_dir, is_link)
            yield entry
            if is_dir and not is_link and not skip_dir(entry):
                yield from visit(de.path, child_rel, m)

    yield from visit(root, "", matcher)
