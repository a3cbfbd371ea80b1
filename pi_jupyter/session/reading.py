"""Reading a session: header and properties, entry lookup by id, prefix or label, branches, the tree, the context.

The reading half of :class:`~pi_jupyter.session.Session`; its state is set by ``Session.__init__``
(:mod:`pi_jupyter.session.store`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import ValidationError

from .context import SessionContext
from .entries import Entry, SessionHeader, entry_from_dict
from .index import K_CUSTOM, EntryIndex, RawEntry, TreeNode
from .listing import SessionInfo
from .rebuild import build_context
from .report import LoadReport
from .viewers import viewer

Durability = Literal["entry", "turn", "never"]
"""When appends are forced to disk: after every entry, after each assistant message, or never."""

CURRENT_LEAF: Any = object()
"""The default of ``leaf=`` arguments: the current leaf (``None`` means before the first entry)."""


class SessionReading:
    """Everything that reads a session and changes nothing (a base of :class:`~pi_jupyter.session.Session`)."""

    _header: RawEntry
    _index: EntryIndex
    _path: str | None
    _report: LoadReport
    _durability: Durability
    _readonly: bool

    # ---------------------------------------------------------------- properties

    @property
    def path(self) -> str | None:
        """The session file, or ``None`` for an in-memory session."""
        return self._path

    @property
    def id(self) -> str:
        """The session id (a UUID, from the header)."""
        return self._header["id"]

    @property
    def header(self) -> SessionHeader:
        """The header line as a model (a field of the wrong type, which pi ignores, reads as unset)."""
        return typed_header(self._header)[0]

    @property
    def raw_header(self) -> RawEntry:
        """The header line as read (after a migration, as migrated); do not modify it."""
        return self._header

    @property
    def cwd(self) -> str:
        """The working directory recorded in the header."""
        cwd = self._header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def session_dir(self) -> str | None:
        """The folder of the session file; forks go there."""
        return os.path.dirname(self._path) if self._path else None

    @property
    def leaf_id(self) -> str | None:
        """The current leaf: new entries become its children. ``None``: before the first entry."""
        return self._index.leaf

    @property
    def name(self) -> str | None:
        """The session's name (the last ``session_info`` entry in the file), if any."""
        return self._index.name

    @property
    def load_report(self) -> LoadReport:
        """Every problem found while reading the file, with line numbers."""
        return self._report

    @property
    def durability(self) -> Durability:
        """When appends are fsynced: ``"entry"``, ``"turn"`` (default) or ``"never"``."""
        return self._durability

    @property
    def readonly(self) -> bool:
        """True when opened with ``readonly=True``: nothing is ever written."""
        return self._readonly

    @property
    def labels(self) -> dict[str, str]:
        """Entry id -> label, for every labelled entry in the file."""
        return {k: v[0] for k, v in self._index.labels.items()}

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._index.by_id

    def __repr__(self) -> str:
        where = self._path or "in memory"
        name = f" {self.name!r}" if self.name else ""
        return f"<Session{name} {where}: {len(self)} entries, leaf {self.leaf_id}>"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        # what a notebook shows for a session (the repr is for debugging)
        name = f"session {self.name!r}" if self.name else "session"
        count = f"{len(self):,} entr{'y' if len(self) == 1 else 'ies'}"
        p.text(f"{name} · {self.id.replace('-', '')[-8:]}: {count}, leaf {self.leaf_id or '(none)'}\n{self._path or 'in memory'}")

    # ---------------------------------------------------------------- reading

    def entry(self, ref: str) -> Entry:
        """The entry with id (or unique id prefix, or label) ``ref``, as a model."""
        return entry_from_dict(self.raw_entry(ref))

    def raw_entry(self, ref: str) -> RawEntry:
        """The entry dict exactly as read from the file (do not modify it)."""
        entry = self._index.get(self.resolve(ref))
        assert entry is not None  # resolve found it
        return entry

    def entries(self) -> list[Entry]:
        """Every entry in file order, as models."""
        self._index.materialize_all()
        return [entry_from_dict(e) for e in self._index.order if self._index.by_id.get(e["id"]) is e]

    def raw_entries(self) -> list[RawEntry]:
        """Every entry dict in file order (the fast path for large sessions; the first call on a large file reads it whole)."""
        self._index.materialize_all()
        return list(self._index.order)

    def custom_entries(self, *custom_types: str) -> list[RawEntry]:
        """The ``custom`` entries of these ``customType`` s (of any, when none is given) as dicts, in file order.

        Found by the index's kind codes, so a 100k-entry session is not read whole for a
        handful of records (its message lines stay on disk).
        """
        index = self._index
        positions = index.positions_of(K_CUSTOM)
        index.materialize(positions)
        order = index.order
        entries = (order[p] for p in positions)
        if not custom_types:
            return list(entries)
        return [entry for entry in entries if entry.get("customType") in custom_types]

    def cell_records(self, cell_id: str | None = None) -> list[RawEntry]:
        """The ``pi_jupyter.cell`` records of notebook cell ``cell_id`` (of every cell with ``None``), in file order.

        Kept in an index as the file is read and appended to, so a cell finds its earlier runs
        without reading the whole session.
        """
        return self._index.cell_records(cell_id)

    def info(self) -> SessionInfo:
        """This session's listing info (pi's ``SessionInfo`` fields: name, counts, first message, times)."""
        from .listing import info_from_entries

        mtime = None
        if self._path is not None:
            try:
                mtime = os.stat(self._path).st_mtime
            except OSError:
                mtime = None
        self._index.materialize_all()
        order = self._index.order
        by_id = self._index.by_id
        entries = (e for e in order if by_id.get(e["id"]) is e)
        problems = self._report.serious
        return info_from_entries(self._path or "", self._header, entries, problems=problems, mtime=mtime)

    def label_of(self, entry_id: str) -> str | None:
        """The label of an entry, if it has one."""
        label = self._index.labels.get(entry_id)
        return label[0] if label else None

    def resolve(self, ref: str) -> str:
        """Turn an entry id, a unique id prefix (4+ characters) or a label into an entry id."""
        return self._index.resolve(ref, self._path)

    def branch(self, leaf: str | None = CURRENT_LEAF) -> list[Entry]:
        """The entries from the root to ``leaf`` (default: the current leaf), root first, as models."""
        return [entry_from_dict(e) for e in self.raw_branch(leaf)]

    def raw_branch(self, leaf: str | None = CURRENT_LEAF) -> list[RawEntry]:
        """Like :meth:`branch`, but the entry dicts (O(depth), no validation)."""
        leaf_id = self._index.leaf if leaf is CURRENT_LEAF else (self.resolve(leaf) if leaf is not None else None)
        return self._index.path(leaf_id)

    def branch_ids(self, leaf: str | None = CURRENT_LEAF) -> list[str]:
        """The ids on the branch ending at ``leaf``, root first."""
        return [e["id"] for e in self.raw_branch(leaf)]

    def children(self, entry_id: str | None) -> list[Entry]:
        """The direct children of an entry (``None``: the roots), in file order. O(children)."""
        key = self.resolve(entry_id) if entry_id is not None else None
        return [entry_from_dict(self.raw_entry(c)) for c in self._index.child_ids(key)]

    def child_ids(self, entry_id: str | None) -> list[str]:
        """Ids of the direct children of an entry (``None``: the roots), in file order."""
        key = self.resolve(entry_id) if entry_id is not None else None
        return self._index.child_ids(key)

    def tree(self) -> list[TreeNode]:
        """The whole tree in pi's order: roots in file order, children oldest first, labels resolved."""
        return self._index.tree()

    def graph(self, **opts: Any) -> Any:
        """The session tree as a ``graphviz.Digraph`` (a ``SessionGraph``) that displays itself.

        One node per turn (``full=True``: per entry); long linear runs are folded into one
        node saying how many turns it holds, and at most ``max_nodes`` (250) are drawn. The
        current leaf and its path, branch points, labels, compactions, branch summaries,
        notebook cells, errors, aborts and model changes are marked; tooltips preview each
        node's text with its tokens and cost. Displayed with a system ``dot``, else
        ``graphviz-pure``, else as a text tree. Options: ``full``, ``fold``, ``fold_min``,
        ``keep_recent``, ``max_nodes``, ``expand``, ``rankdir``, ``preview_chars``,
        ``backend``, ``header`` (see :class:`pi_jupyter.views.GraphOptions`). ``.model`` holds the nodes
        by key, ``.text()`` the text tree, ``.svg()`` the SVG.
        """
        return viewer("graph")(self, **opts)

    def compare(self, *refs: str, **opts: Any) -> Any:
        """Compare branches: ``compare("baseline", "variant")`` (ids, id prefixes, labels or cell ids).

        Returns a :class:`pi_jupyter.views.Comparison`: the common ancestor, and per branch
        the turns, tool calls, tokens, cost, duration, stop reasons and final answer. It
        displays as an HTML table with a figure of tokens and cost per turn; ``to_frame()``
        gives a pandas DataFrame, ``diff()`` a side-by-side diff of the final answers,
        ``figure()`` the SVG figure. One ref is compared with the current leaf; with none,
        the most recent tips of the tree are compared.
        """
        return viewer("compare")(self, *refs, **opts)

    def context(self, leaf: str | None = CURRENT_LEAF) -> SessionContext:
        """The rebuilt context of the branch ending at ``leaf`` (default: the current leaf).

        Matches pi's ``buildSessionContext``: the latest compaction on the branch becomes a
        summary message followed by the kept messages, custom messages and branch summaries
        become their message kinds, and the model and thinking level are the last ones set
        on the branch. ``leaf=None`` is the point before the first entry (an empty context).
        """
        leaf_id = self._index.leaf if leaf is CURRENT_LEAF else (self.resolve(leaf) if leaf is not None else None)
        raw = build_context(self._index, leaf_id, explicit_none=leaf_id is None)
        return SessionContext.from_raw(raw, leaf_id)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries())


def typed_header(raw: RawEntry) -> tuple[SessionHeader, list[str]]:
    """The header as a model, and the keys whose values had the wrong type (left unset in the model)."""
    try:
        return SessionHeader.model_validate(raw), []
    except ValidationError as exc:
        bad = sorted({str(err["loc"][0]) for err in exc.errors() if err.get("loc")} - {"type", "id"})
        data = {k: v for k, v in raw.items() if k not in bad}
        if "version" in bad:
            data["version"] = None  # unknown, rather than the current version's default
        return SessionHeader.model_validate(data), bad
