"""Runs of lines indexed at once, and the dict of positions filled only when something needs it.

:meth:`RunIndexing.extend_run` indexes a run of lines decoded together (:mod:`.bulk`) in a
few native passes. When the index is built to answer once (the command line's context),
the run's ids go into a set, which shows a repeated id, and not into the dict of positions:
the branch needs the positions of a few parents (found by one pass over the pending ids),
and the dict is built when something needs every position.
"""

from __future__ import annotations

import itertools
import operator
from array import array

from .index_state import IndexState
from .kinds import K_MESSAGE, K_OTHER, KINDS, RawEntry
from .report import LoadReport


class RunIndexing(IndexState):
    """The part of :class:`~.index.EntryIndex` that indexes runs of lines."""

    @property
    def _pos(self) -> dict[str, int]:
        """Id -> position of the line that stands for it, every pending run added first."""
        if self._seen is not None:
            posd = self._posd
            for first, ids in self._pending:
                posd.update(zip(ids, range(first, first + len(ids)), strict=True))
            self._pending.clear()
            self._seen = None
            self._lazy = False  # from now on every run is added as it comes
        if self._misses:
            self._settle()
        return self._posd

    def _position(self, entry_id: str) -> int:
        """The position of ``entry_id`` (-1: not in the file); a pending run is searched rather than listed whole."""
        if self._seen is None:
            return self._pos.get(entry_id, -1)
        if entry_id not in self._seen:
            return -1
        p = self._posd.get(entry_id)
        if p is not None:
            return p
        for first, ids in reversed(self._pending):  # the usual leaf: near the end
            if entry_id in ids:
                return first + ids.index(entry_id)
        return -1  # (not reached: every id in _seen is in one of them)

    def _settle(self) -> None:
        """Find the parents of the lines :meth:`extend_run` left pending: one pass over the pending ids."""
        if not self._misses:
            return
        misses, self._misses = self._misses, []
        wanted = {parent for _, parent in misses}
        posd = self._posd
        found = {eid: posd[eid] for eid in wanted if eid in posd}
        for first, ids in self._pending:
            for k in itertools.compress(range(len(ids)), map(wanted.__contains__, ids)):
                found[ids[k]] = first + k
        parents = self._parent
        for p, parent in misses:
            q = found.get(parent, -1)
            parents[p] = q
            if q < 0 or q >= p:
                # a parent missing, the line itself or later in the file: check_structure must look, and
                # the parent positions must be resolved again, as extend decides line by line
                self._irregular = self._stale = True

    def extend_run(
        self,
        entries: list[RawEntry],
        ids: list[str],
        parents: list[str | None],
        others: list[int],
        first_line: int,
        report: LoadReport,
        *,
        offsets: array | None = None,
        lengths: array | None = None,
    ) -> None:
        """Index the entries of consecutive lines from ``first_line`` in a few native passes (see :mod:`.bulk`).

        ``ids`` and ``parents`` are the entries' string ids and ``parentId`` (``None`` where
        absent); ``others`` the positions (in ``entries``) of those that are not ``message``
        entries with a message; no entry is a session header. Gives the index and the reports
        :meth:`extend` gives, and hands the run to it when the run holds an id seen before or the
        children lists are built already. ``offsets`` and ``lengths`` place the lines of stubs in
        the file, as for :meth:`extend`.
        """
        count = len(ids)
        lines = range(first_line, first_line + count)
        first = len(self.order)
        if self._children is not None:
            self.extend(entries, lines, report, offsets=offsets, lengths=lengths)
            return
        # the ids go into a set now and into the dict of positions when something needs it: for a
        # context, finding the branch needs the positions of a few parents, not of 100k ids
        lazy = self._lazy and not self._posd
        if lazy:
            seen = self._seen if self._seen is not None else set()
            self._seen = seen
            known = len(seen)
            seen.update(ids)
            clash = len(seen) != known + count or ("" in seen and "" in parents)
        else:
            known = len(self._posd)
            self._posd.update(zip(ids, range(first, first + count), strict=True))
            clash = len(self._posd) != known + count or ("" in self._posd and "" in parents)
        if clash:
            # an id seen before, or the id "" with children (which extend reads as roots): line by line,
            # which reports them; the positions as they were before this run
            if lazy:
                seen.difference_update(ids)
            else:
                self._posd.clear()
                self._posd.update((entry["id"], i) for i, entry in enumerate(self.order))
            self.extend(entries, lines, report, offsets=offsets, lengths=lengths)
            return
        if lazy:
            self._pending.append((first, ids))
        pos = self._posd
        order = self.order
        # most lines follow their parent: the line before (a string comparison, where a lookup in a
        # dict of 100k ids misses the processor's caches)
        before = [order[-1]["id"] if order else None]
        before += ids[:-1]
        parent_pos = array("q", range(first - 1, first + count - 1))
        for j in itertools.compress(range(count), map(operator.ne, parents, before)):
            parent = parents[j]
            if parent is None:
                parent_pos[j] = -1
            elif lazy:
                self._misses.append((first + j, parent))  # found by _settle
            else:
                found = parent_pos[j] = pos.get(parent, -1)
                # a parent not indexed before its child (later in the file, missing, the entry itself): check_structure
                # must look, and the parent positions must be resolved again, as extend decides line by line
                if found >= first + j or found < 0:
                    self._irregular = self._stale = True
        self._unlisted.append((ids, entries))
        order.extend(entries)
        self._parent.extend(parent_pos)
        self._lines.add_run(first_line, count)
        if offsets is not None and lengths is not None:
            self._place(first, offsets, lengths, count - len(others))
        kinds = self._kind
        kinds.extend(bytes((K_MESSAGE,)) * count)
        leaf: str | None = ids[-1] if count else None
        for j in others:
            entry, kind = entries[j], KINDS.get(entries[j]["type"], K_OTHER)
            kinds[first + j] = kind
            leaf = self._note(entry, ids[j], parents[j], kind, first_line + j, first + j, report)
        if count:
            self.leaf = leaf if others and others[-1] == count - 1 else ids[-1]


__all__ = ["RunIndexing"]
