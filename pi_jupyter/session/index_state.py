"""What an :class:`~.index.EntryIndex` holds, shared by the parts it is made of.

The index is one class in three modules: :mod:`.index` (building it entry by entry, the
tree queries), :mod:`.index_runs` (runs of lines indexed at once, positions found when
needed) and :mod:`.index_stubs` (entries left on disk as stubs, read back when needed).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .kinds import RawEntry
from .line_numbers import LineNumbers

if TYPE_CHECKING:  # pragma: no cover
    from .lazy import LineSource
    from .report import LoadReport


class IndexState:
    """The state of an entry index (see :class:`~.index.EntryIndex`)."""

    def __init__(self, *, defer_positions: bool = False) -> None:
        """``defer_positions``: runs of lines (:meth:`extend_run`) may leave their ids out of the
        dict of positions until something needs it (reading a file once, for its context)."""
        self._by_id: dict[str, RawEntry] = {}
        self._unlisted: list[tuple[list[str], list[RawEntry]]] = []  # runs indexed by extend_run, not yet in _by_id
        self.order: list[RawEntry] = []
        self.labels: dict[str, tuple[str, str]] = {}
        self.leaf: str | None = None
        self.name: str | None = None
        self._posd: dict[str, int] = {}  # id -> position in order of the line that stands for it (see _pos)
        # runs extend_run indexed without adding their ids to _posd yet: (first position, ids); while there are
        # any, _seen holds every id (a repeated id shows in its size) and _misses the lines whose parent is
        # not the line before, as (position, parent id), their parent positions still to be found
        self._pending: list[tuple[int, list[str]]] = []
        self._seen: set[str] | None = None
        self._misses: list[tuple[int, str]] = []
        self._lazy = defer_positions  # extend_run may leave runs pending (until something needs every position)
        self._parent = array("q")  # per line: position of its parent, -1 for none
        self._kind = bytearray()  # per line: a K_* code
        self._lines = LineNumbers()  # per line: its 1-based line number in the file (0: not from a file)
        self._children: dict[str | None, list[str]] | None = None  # built on first use
        self._cells: dict[str, list[int]] = {}  # notebook cell id -> positions of its run records, in file order
        # per line: byte offset of a line read as a stub, -1 for a whole entry, and its length; kept only as
        # far as the last line given with offsets (the lines after it are whole)
        self._stub_off = array("q")
        self._stub_len = array("q")
        self._stubs = 0  # how many lines are stubs
        self._source: LineSource | None = None
        self._fill_lock = threading.Lock()
        self._irregular = False  # a repeated id or a parent not seen before: check_structure must look
        self._stale = False  # _parent must be resolved again (a later line replaced an id, or a forward parent)

    @property
    def kinds(self) -> bytearray:
        """Per line in file order, the entry's kind code (``K_*``); read it, do not modify it."""
        return self._kind

    @property
    def by_id(self) -> dict[str, RawEntry]:
        """Entry id -> the entry that stands for it (the later line of a repeated id); do not modify it.

        Built on first use for the runs :meth:`extend_run` indexed: finding a branch and its
        context needs only the positions.
        """
        if self._unlisted:
            for ids, entries in self._unlisted:
                self._by_id.update(zip(ids, entries, strict=True))
            self._unlisted.clear()
        return self._by_id

    if TYPE_CHECKING:  # pragma: no cover - defined by EntryIndex, used by its parts

        def extend(
            self,
            entries: Iterable[RawEntry],
            lines: Iterable[int],
            report: LoadReport | None = None,
            *,
            bulk: bool = True,
            offsets: Sequence[int] | None = None,
            lengths: Sequence[int] | None = None,
        ) -> int: ...

        def _note(
            self, entry: RawEntry, eid: str, parent: str | None, kind: int, line: int, position: int, report: LoadReport | None
        ) -> str | None: ...

        def _place(self, first: int, offsets: array, lengths: array, stubs: int) -> None: ...


__all__ = ["IndexState"]
