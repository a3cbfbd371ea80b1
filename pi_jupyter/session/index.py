"""The in-memory tree of a session: entries by id, children, labels, and the leaf.

Entries are the dicts read from the file. Lookups by id and children are O(1), a path walk
is O(depth) and guarded against parent cycles, and adding an entry is O(1).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..messages.text import ms_from_iso
from .entries import ENTRY_TYPES
from .report import CycleError, LoadReport

RawEntry = dict[str, Any]

CHECKOUT_TYPE = "pi_jupyter.checkout"
"""``customType`` of the marker entry that persists a checkout (see ``Session.checkout``)."""


@dataclass(slots=True)
class TreeNode:
    """One entry in :meth:`Session.tree`, with its children in pi's order (oldest first)."""

    entry: RawEntry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None

    @property
    def id(self) -> str:
        """The entry id."""
        return self.entry["id"]

    @property
    def type(self) -> str:
        """The entry type (``message``, ``compaction``, ...)."""
        return self.entry.get("type", "")

    def typed(self) -> Any:
        """The entry as a pydantic model."""
        from .entries import entry_from_dict

        return entry_from_dict(self.entry)


class EntryIndex:
    """Entries of one session file in file order, indexed for tree queries."""

    def __init__(self) -> None:
        self.by_id: dict[str, RawEntry] = {}
        self.order: list[RawEntry] = []
        self.children: dict[str | None, list[str]] = {}
        self.labels: dict[str, tuple[str, str]] = {}
        self.line_of: dict[str, int] = {}
        self.leaf: str | None = None
        self.name: str | None = None
        self.has_assistant = False

    def __len__(self) -> int:
        return len(self.by_id)

    def add(self, entry: RawEntry, line: int = 0, report: LoadReport | None = None) -> bool:
        """Index one entry (file order). Returns False when it is not an entry at all."""
        eid = entry.get("id")
        if not isinstance(eid, str) or not isinstance(entry.get("type"), str):
            if report is not None:
                report.add(line, "not_an_entry", "a JSON object without a string 'id' and 'type'; ignored", "error")
            return False
        previous = self.by_id.get(eid)
        parent = entry.get("parentId")
        key = parent if isinstance(parent, str) and parent else None
        if previous is not None:
            if report is not None:
                report.add(
                    line,
                    "duplicate_id",
                    f"id {eid!r} was already used on line {self.line_of.get(eid, '?')}; the later line wins, as in pi",
                    "warning",
                    eid,
                )
            old_parent = previous.get("parentId")
            old_key = old_parent if isinstance(old_parent, str) and old_parent else None
            siblings = self.children.get(old_key)
            if siblings is not None and eid in siblings:
                siblings.remove(eid)
        elif report is not None and entry["type"] not in ENTRY_TYPES:
            report.add(
                line,
                "unknown_type",
                f"entry type {entry['type']!r} is not known to this version; kept as a tree node that adds nothing to the context",
                "info",
                eid,
            )
        self.by_id[eid] = entry
        self.order.append(entry)
        self.line_of[eid] = line
        self.children.setdefault(key, []).append(eid)
        kind = entry["type"]
        # a checkout marker stands for "the leaf is my parent": it is a dead-end child of the
        # target, so the branch (and pi's context, which walks through it) is the target's
        self.leaf = key if kind == "custom" and entry.get("customType") == CHECKOUT_TYPE else eid
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                self.has_assistant = True
        elif kind == "label":
            target = entry.get("targetId")
            label = entry.get("label")
            if isinstance(target, str):
                if label:
                    self.labels[target] = (label, entry.get("timestamp", ""))
                else:
                    self.labels.pop(target, None)
        elif kind == "session_info":
            name = entry.get("name")
            self.name = name.strip() or None if isinstance(name, str) else None
        return True

    # -- structure checks ----------------------------------------------------------------

    def check_structure(self, report: LoadReport) -> None:
        """Report orphans, self-parents and parent cycles (one O(n) pass)."""
        roots: list[str] = list(self.children.get(None, ()))
        for eid, entry in self.by_id.items():
            parent = entry.get("parentId")
            if not isinstance(parent, str) or not parent:
                continue
            if parent == eid:
                report.add(self.line_of.get(eid, 0), "self_parent", f"entry {eid!r} is its own parent; treated as a root", "warning", eid)
                roots.append(eid)
            elif parent not in self.by_id:
                report.add(
                    self.line_of.get(eid, 0),
                    "orphan",
                    f"entry {eid!r} names parent {parent!r}, which is not in the file; its branch starts there",
                    "warning",
                    eid,
                )
                roots.append(eid)
        reached = set(roots)
        stack = list(roots)
        while stack:
            for child in self.children.get(stack.pop(), ()):
                if child not in reached:
                    reached.add(child)
                    stack.append(child)
        if len(reached) >= len(self.by_id):
            return
        done: set[str] = set(reached)
        for eid in self.by_id:
            if eid in done:
                continue
            walk: list[str] = []
            seen: dict[str, int] = {}
            cur: str | None = eid
            while cur is not None and cur not in done and cur not in seen:
                seen[cur] = len(walk)
                walk.append(cur)
                parent = self.by_id[cur].get("parentId")
                cur = parent if isinstance(parent, str) and parent in self.by_id else None
            if cur is not None and cur in seen:
                loop = walk[seen[cur] :]
                report.add(
                    self.line_of.get(loop[0], 0),
                    "cycle",
                    f"parent cycle {' -> '.join(loop)} -> {loop[0]}; these entries and their descendants "
                    "are unreachable from any root (walking their path raises CycleError)",
                    "error",
                    loop[0],
                )
            done.update(walk)

    # -- queries -------------------------------------------------------------------------

    def path(self, leaf_id: str | None) -> list[RawEntry]:
        """Entries from the root to ``leaf_id`` (inclusive), root first. Raises :class:`CycleError`."""
        out: list[RawEntry] = []
        cur = self.by_id.get(leaf_id) if leaf_id else None
        limit = len(self.by_id)
        while cur is not None:
            out.append(cur)
            if len(out) > limit:
                raise CycleError(leaf_id or "", [e["id"] for e in out[-min(len(out), 16) :]])
            parent = cur.get("parentId")
            if not parent or parent == cur["id"]:
                break
            cur = self.by_id.get(parent)
        out.reverse()
        return out

    def child_ids(self, entry_id: str | None) -> list[str]:
        """Ids of the direct children of ``entry_id`` (``None``: the roots), in file order."""
        return list(self.children.get(entry_id, ()))

    def tree(self) -> list[TreeNode]:
        """The whole tree as pi's ``getTree`` builds it: roots in file order, children by time."""
        nodes: dict[str, TreeNode] = {}
        for eid, entry in self.by_id.items():
            label = self.labels.get(eid)
            nodes[eid] = TreeNode(entry, [], label[0] if label else None, label[1] if label else None)
        roots: list[TreeNode] = []
        placed: set[str] = set()
        for entry in self.order:
            eid = entry["id"]
            if eid in placed or self.by_id.get(eid) is not entry:
                continue  # an earlier duplicate; the later line stands for the id
            placed.add(eid)
            node = nodes[eid]
            parent = entry.get("parentId")
            if parent is None or parent == eid:
                roots.append(node)
            else:
                parent_node = nodes.get(parent) if isinstance(parent, str) else None
                if parent_node is not None:
                    parent_node.children.append(node)
                else:
                    roots.append(node)
        # placement above follows file order for the first occurrence: use file order of the
        # surviving line, as pi does when ids are unique
        for node in nodes.values():
            if len(node.children) > 1:
                node.children.sort(key=_time_key)
        return roots


def _time_key(node: TreeNode) -> int:
    ms = ms_from_iso(node.entry.get("timestamp"))
    return ms if ms is not None else 0


def build_context(index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False) -> dict[str, Any]:
    """pi's ``buildSessionContext`` on raw entries: ``{messages, thinkingLevel, model}``.

    ``explicit_none`` is pi's ``leafId === null`` (checked out before the first entry). An
    unknown leaf id falls back to the last entry in the file, as pi does.
    """
    if explicit_none:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    leaf = index.by_id.get(leaf_id) if leaf_id else None
    if leaf is None:
        leaf = index.order[-1] if index.order else None
    if leaf is None:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    path = index.path(leaf["id"])
    return context_from_path(path)


def context_from_path(path: list[RawEntry]) -> dict[str, Any]:
    """The context for a root-first path of raw entries (the core of :func:`build_context`)."""
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    compaction: RawEntry | None = None
    compaction_at = -1
    for i, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model = _model_ref(message.get("provider"), message.get("model"))
        elif kind == "thinking_level_change":
            thinking = entry.get("thinkingLevel")
        elif kind == "model_change":
            model = _model_ref(entry.get("provider"), entry.get("modelId"))
        elif kind == "compaction":
            compaction, compaction_at = entry, i
    messages: list[dict[str, Any]] = []
    if compaction is not None:
        summary: dict[str, Any] = {"role": "compactionSummary", "summary": compaction.get("summary")}
        if "tokensBefore" in compaction:
            summary["tokensBefore"] = compaction["tokensBefore"]
        summary["timestamp"] = ms_from_iso(compaction.get("timestamp"))
        messages.append(summary)
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in path[:compaction_at]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping:
                _emit(entry, messages)
        for entry in path[compaction_at + 1 :]:
            _emit(entry, messages)
    else:
        for entry in path:
            _emit(entry, messages)
    ctx: dict[str, Any] = {"messages": messages}
    if thinking is not None:
        ctx["thinkingLevel"] = thinking
    ctx["model"] = model
    return ctx


def _model_ref(provider: Any, model_id: Any) -> dict[str, Any]:
    ref: dict[str, Any] = {}
    if provider is not None:
        ref["provider"] = provider
    if model_id is not None:
        ref["modelId"] = model_id
    return ref


def _emit(entry: RawEntry, out: list[dict[str, Any]]) -> None:
    kind = entry.get("type")
    if kind == "message":
        if "message" in entry:
            out.append(entry["message"])
    elif kind == "custom_message":
        msg: dict[str, Any] = {"role": "custom"}
        for key in ("customType", "content", "display", "details"):
            if key in entry:
                msg[key] = entry[key]
        msg["timestamp"] = ms_from_iso(entry.get("timestamp"))
        out.append(msg)
    elif kind == "branch_summary" and entry.get("summary"):
        msg = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            msg["fromId"] = entry["fromId"]
        msg["timestamp"] = ms_from_iso(entry.get("timestamp"))
        out.append(msg)
