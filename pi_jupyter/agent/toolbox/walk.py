"""The directory walk behind ``grep`` and ``find``: ripgrep/fd-like, in pure Python.

Why not shell out to ``rg``/``fd``: they may be missing, and one implementation gives the
same results everywhere (tests included). The walk is depth-first in byte order of names
(deterministic, unlike the parallel tools), includes hidden files (pi passes ``--hidden``),
always skips ``.git`` and ``node_modules``, honours ``.gitignore`` and ``.ignore`` files from
the search root down and from its ancestors up to the git root (plus the tool's own ignore
file name), and does not follow symlinked directories (no loops, no escaping the root).
Each folder is opened relative to its parent's descriptor without following symlinks, so a
folder swapped for a link while the walk runs is skipped instead of entered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...resources.ignore import IgnoreMatcher
from .safe_open import open_resolved

__all__ = ["ALWAYS_SKIPPED", "Entry", "walk"]

ALWAYS_SKIPPED = frozenset({".git", "node_modules"})


@dataclass(frozen=True)
class Entry:
    """One file or directory found: absolute ``path``, posix ``rel`` path from the root.

    ``dir_fd`` is the open descriptor of its folder, valid only until the walk moves on (so a
    caller can open the entry without following links, see :meth:`open`); ``None`` where
    descriptors are not supported.
    """

    path: str
    rel: str
    is_dir: bool
    is_link: bool
    dir_fd: int | None = field(default=None, compare=False, repr=False)

    def open(self, flags: int = os.O_RDONLY) -> int:
        """Open this entry through its folder's descriptor, refusing a symlink (use it only for non-links)."""
        if self.dir_fd is None:
            return os.open(self.path, flags)
        return os.open(os.path.basename(self.path), flags | getattr(os, "O_NOFOLLOW", 0), dir_fd=self.dir_fd)


def walk(
    root: str,
    *,
    ignore_files: tuple[str, ...] = (".gitignore", ".ignore"),
    stop: Callable[[], bool] = lambda: False,
    skip_dir: Callable[[Entry], bool] = lambda _e: False,
    resolved_root: bool = False,
) -> Iterator[Entry]:
    """Yield every entry below ``root`` that is not ignored (directories before their contents).

    ``stop()`` is polled between directories and files; when true the walk ends.
    ``skip_dir(entry)`` prunes a directory the caller does not want to enter.
    ``resolved_root``: ``root`` is a checked real path; open it with no symlink on the way
    (:func:`~.safe_open.open_resolved`), so it cannot be swapped for a link after the check.
    """
    root = os.path.abspath(root)
    matcher = IgnoreMatcher.for_root(root, file_names=ignore_files, from_git_root=True)
    by_fd = os.scandir in os.supports_fd and os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
    dir_flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

    def listing(directory: str, parent_fd: int | None, name: str | None) -> tuple[int | None, list[os.DirEntry[str]]]:
        if not by_fd:
            with os.scandir(directory) as it:
                return None, sorted(it, key=lambda e: e.name)
        if parent_fd is None:  # the root: resolved by the caller, opened without following a link swapped in since
            fd = open_resolved(directory, dir_flags) if resolved_root else os.open(directory, dir_flags)
        else:
            fd = os.open(name, dir_flags, dir_fd=parent_fd)  # type: ignore[arg-type]
        try:
            with os.scandir(fd) as it:
                return fd, sorted(it, key=lambda e: e.name)
        except OSError:
            os.close(fd)
            raise

    def visit(directory: str, rel: str, m: IgnoreMatcher, parent_fd: int | None, name: str | None) -> Iterator[Entry]:
        try:
            fd, entries = listing(directory, parent_fd, name)
        except OSError:
            return
        try:
            if rel:
                m = m.descend(directory, rel, present={e.name for e in entries})
            for de in entries:
                if stop():
                    return
                child_rel = f"{rel}/{de.name}" if rel else de.name
                try:
                    is_link = de.is_symlink()
                    is_dir = de.is_dir()  # follows a link; a broken link is a file
                except OSError:
                    continue
                if is_dir and de.name in ALWAYS_SKIPPED:
                    continue
                if m.ignored(child_rel, is_dir):
                    continue
                entry = Entry(os.path.join(directory, de.name), child_rel, is_dir, is_link, fd)
                yield entry
                if is_dir and not is_link and not skip_dir(entry):
                    yield from visit(entry.path, child_rel, m, fd, de.name)
        finally:
            if fd is not None:
                os.close(fd)

    yield from visit(root, "", matcher, None, None)
