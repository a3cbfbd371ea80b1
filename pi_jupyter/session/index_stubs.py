"""Entries left on disk as stubs: where their lines are, and reading them back when they are needed."""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from itertools import chain
from typing import TYPE_CHECKING

from .index_state import IndexState
from .jsonl import paused_gc
from .report import SessionError

if TYPE_CHECKING:  # pragma: no cover
    from .lazy import LineSource

_SINGLE_READS = 32  # stubs read back one line at a time; more are read in one span of the file


class StubLines(IndexState):
    """The part of :class:`~.index.EntryIndex` that reads stubs back (see :mod:`.stubs`)."""

    def attach(self, source: LineSource) -> None:
        """Read the lines of stubs back from ``source`` when their entries are needed."""
        self._source = source
        if not self._stubs:
            source.done()

    @property
    def stubs(self) -> int:
        """How many entries are still stubs (0: every entry is whole)."""
        return self._stubs

    def materialize(self, positions: Iterable[int], data: bytes | None = None) -> None:
        """Read back whole the entries at ``positions`` that are stubs (from ``data``, the file's bytes, when given)."""
        if not self._stubs:
            return
        offs = self._stub_off
        stub = self._is_stub
        wanted = [p for p in positions if stub(p)]
        if not wanted:
            return
        source = self._need_source()
        lens = self._stub_len
        with self._fill_lock, paused_gc():
            wanted = [p for p in wanted if stub(p)]
            if data is None and len(wanted) <= _SINGLE_READS:
                for p in wanted:
                    self._fill(p, source.read(offs[p], lens[p]), source)
                return
            first = 0
            if data is None:  # a long branch: one read of the bytes that hold it, rather than a read per line
                first = min(offs[p] for p in wanted)
                data = source.read(first, max(offs[p] + lens[p] for p in wanted) - first)
            view = memoryview(data)
            for p in wanted:
                start = offs[p] - first
                self._fill(p, view[start : start + lens[p]], source)

    def materialize_all(self) -> None:
        """Read back every stub (one read of the file), before handing out every entry."""
        if not self._stubs:
            return
        source = self._need_source()
        with self._fill_lock, paused_gc():
            if not self._stubs:
                return
            view = memoryview(source.whole())
            lens = self._stub_len
            for p, off in enumerate(self._stub_off):
                if off >= 0:
                    self._fill(p, view[off : off + lens[p]], source)

    def _place(self, first: int, offsets: array, lengths: array, stubs: int) -> None:
        """The file places of the lines from position ``first`` on (offset -1: a whole entry)."""
        stub_off, stub_len = self._stub_off, self._stub_len
        if len(stub_off) < first:
            stub_off.frombytes(b"\xff" * (8 * (first - len(stub_off))))  # the lines before: whole
            stub_len.frombytes(bytes(8 * (first - len(stub_len))))
        stub_off.extend(offsets)
        stub_len.extend(lengths)
        self._stubs += stubs

    def _is_stub(self, p: int) -> bool:
        offs = self._stub_off
        return p < len(offs) and offs[p] >= 0

    def _need_source(self) -> LineSource:
        if self._source is None:
            raise SessionError("entries were read as stubs but there is no file to read them back from")
        return self._source

    def _fill(self, p: int, raw: bytes | memoryview, source: LineSource) -> None:
        stub = self.order[p]
        eid = stub["id"]
        entry = source.parse(raw, eid)
        self.order[p] = entry
        if self.by_id.get(eid) is stub:
            self.by_id[eid] = entry
        self._stub_off[p] = -1
        self._stubs -= 1
        if not self._stubs:
            source.done()
            self._source = None

    def whole_positions(self) -> Iterable[int]:
        """Positions of the entries read whole (not stubs), in file order."""
        if not self._stubs:
            return range(len(self.order))
        offs = self._stub_off
        return chain((p for p in range(len(offs)) if offs[p] < 0), range(len(offs), len(self.order)))


__all__ = ["StubLines"]
