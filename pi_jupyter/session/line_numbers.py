"""The line number of each indexed entry, kept per run of consecutive lines rather than per line.

A 100k-entry file read a run of lines at a time (:mod:`.bulk`) is a few hundred runs: storing
``(first position, first line)`` per run instead of 100k integers spares the index most of a
megabyte and the time to fill it. Entries indexed one by one (a damaged stretch, entries
appended by the kernel) are stored one number each, as before.
"""

from __future__ import annotations

import bisect
from array import array


class LineNumbers:
    """Position -> 1-based line number (0: not from a file), appended in position order."""

    def __init__(self) -> None:
        self._starts: list[int] = []  # position of each segment's first entry
        self._firsts: list[int] = []  # its line number; -1 for a segment of numbers one by one
        self._numbers: list[array | None] = []  # the numbers of a one-by-one segment
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def append(self, line: int) -> None:
        """The line of the next position."""
        self.extend((line,))

    def extend(self, lines: list[int] | tuple[int, ...]) -> None:
        """The lines of the next positions, one number each."""
        if not lines:
            return
        numbers = self._numbers[-1] if self._numbers else None
        if numbers is None:
            numbers = array("q")
            self._starts.append(self._len)
            self._firsts.append(-1)
            self._numbers.append(numbers)
        numbers.extend(lines)
        self._len += len(lines)

    def add_run(self, first_line: int, count: int) -> None:
        """The next ``count`` positions are on consecutive lines from ``first_line``."""
        if count <= 0:
            return
        self._starts.append(self._len)
        self._firsts.append(first_line)
        self._numbers.append(None)
        self._len += count

    def __getitem__(self, position: int) -> int:
        if not 0 <= position < self._len:
            raise IndexError(position)
        k = bisect.bisect_right(self._starts, position) - 1
        numbers = self._numbers[k]
        offset = position - self._starts[k]
        return numbers[offset] if numbers is not None else self._firsts[k] + offset


__all__ = ["LineNumbers"]
