"""What one tool call changed in the world, as it is written in the session file.

A :class:`Delta` lists the variables a call set, changed or deleted and the files it wrote,
each with what it was before and what it is after. It is stored as ``details.world`` of the
call's ``toolResult`` entry: pi ignores ``details`` when it rebuilds the context, so the file
opens in pi with the same context, and nothing but refs (content hashes) is inline; the data
is in the store (:mod:`.store`).

A slot (before or after) is one of: a ref (a string, the object's content hash), ``None``
(the name or file did not exist), ``{"module": "numpy"}`` (a module, imported again by name),
``{"unsaved": "sqlite3.Connection: not serializable"}`` (what could not be kept, and why; an open
file adds ``"handle": {"path", "mode", "pos"}``), ``{"group": ref, "name": "a"}`` (one of names
saved together because their objects are shared, see :mod:`.aliases`: the object ``ref`` is a
dict of those names) or ``{"unknown": true}`` (existed, but was never seen before the call
changed it in place).

A world record that is not a tool's (``customType`` :data:`RECORD_TYPE`) carries a delta of its
own and says why in ``data["why"]``: ``"user"`` (the user's own changes, kept on the branch
before a run starts from them or before ``--force`` replaces them), ``"stay"`` (a checkout of
the conversation alone: the world it kept), ``"bring"`` (the world of another node brought into
this conversation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DETAILS_KEY = "world"
RECORD_TYPE = "pi_jupyter.world"
"""``customType`` of a world record that is not a tool's (a user's version saved by ``--force``)."""

Slot = Any
"""A ref string, ``None`` (absent), or a dict: ``{"module": ...}``, ``{"unsaved": reason}``, ``{"unknown": True}``."""


def is_ref(slot: Slot) -> bool:
    """True for a slot that names a stored object."""
    return isinstance(slot, str)


def group_of(slot: Slot) -> tuple[str, str] | None:
    """``(ref, name)`` of a slot saved with others as one group; ``None`` for any other slot."""
    if isinstance(slot, dict) and isinstance(slot.get("group"), str) and isinstance(slot.get("name"), str):
        return slot["group"], slot["name"]
    return None


def slot_refs(slot: Slot) -> list[str]:
    """The stored objects a slot needs (gc keeps them, a fork copies them)."""
    if isinstance(slot, str):
        return [slot]
    found = group_of(slot)
    return [found[0]] if found else []


def is_saved(slot: Slot) -> bool:
    """True for a slot whose content is in the store (alone or in a group)."""
    return bool(slot_refs(slot))


def unsaved_reason(slot: Slot) -> str | None:
    """Why a slot holds no data (``None`` when it does, or is absent)."""
    if isinstance(slot, dict):
        if isinstance(slot.get("unsaved"), str):
            return slot["unsaved"]
        if slot.get("unknown"):
            return "its earlier value was never seen"
    return None


def same_slot(a: Slot, b: Slot) -> bool:
    """Two slots that stand for the same content (unsaved or unknown ones never match: nobody knows)."""
    if is_ref(a) or a is None:
        return a == b
    if isinstance(a, dict) and "module" in a:
        return isinstance(b, dict) and b.get("module") == a["module"]
    found = group_of(a)
    if found is not None:
        return found == group_of(b)
    held = a.get("held") if isinstance(a, dict) else None  # the same object, held by this kernel
    return isinstance(held, str) and isinstance(b, dict) and b.get("held") == held


@dataclass
class VarChange:
    """A variable a call set, changed or deleted."""

    name: str
    before: Slot
    after: Slot
    what: str = ""
    """A short description of the value after (``DataFrame 1,000×4``), empty when deleted."""
    was: str = ""
    """The same of the value before, when it was saved (a frame the user made, then the agent changed):
    readers describe it from here and never load it."""

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "before": self.before, "after": self.after}
        if self.what:
            out["what"] = self.what
        if self.was:
            out["was"] = self.was
        return out


@dataclass
class FileChange:
    """A file a call wrote (``path`` relative to the project folder, ``/`` separated)."""

    path: str
    before: Slot
    after: Slot

    def to_data(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}


@dataclass
class Delta:
    """Everything one call changed, and what it could not keep track of."""

    vars: list[VarChange] = field(default_factory=list)
    files: list[FileChange] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    """Effects the world cannot follow: ``"bash"`` (a command may change anything), ``"python files"``."""

    def __bool__(self) -> bool:
        return bool(self.vars or self.files or self.untracked)

    def to_data(self) -> dict[str, Any]:
        """The ``details.world`` object."""
        out: dict[str, Any] = {"v": 1}
        if self.vars:
            out["vars"] = [c.to_data() for c in self.vars]
        if self.files:
            out["files"] = [c.to_data() for c in self.files]
        if self.untracked:
            out["untracked"] = list(self.untracked)
        return out

    @classmethod
    def from_data(cls, data: Any) -> Delta | None:
        """Read a ``details.world`` object leniently (``None`` when it is not one)."""
        if not isinstance(data, dict) or data.get("v") != 1:
            return None
        delta = cls()
        for item in data.get("vars") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                what, was = (v if isinstance(v := item.get(k), str) else "" for k in ("what", "was"))
                delta.vars.append(VarChange(item["name"], item.get("before"), item.get("after"), what, was))
        for item in data.get("files") or []:
            if isinstance(item, dict) and isinstance(item.get("path"), str):
                delta.files.append(FileChange(item["path"], item.get("before"), item.get("after")))
        untracked = data.get("untracked")
        if isinstance(untracked, list):
            delta.untracked = [u for u in untracked if isinstance(u, str)]
        return delta

    def summary(self) -> str:
        """One line: ``set df2 (DataFrame 1,000×4), result; deleted tmp; wrote notes.txt``."""
        return summarize([self])


def delta_of(entry: dict[str, Any]) -> Delta | None:
    """The world delta an entry carries: a tool result's ``details.world``, or a world record's data."""
    if entry.get("type") == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "toolResult":
            details = message.get("details")
            if isinstance(details, dict) and DETAILS_KEY in details:
                return Delta.from_data(details[DETAILS_KEY])
        return None
    if entry.get("type") == "custom" and entry.get("customType") == RECORD_TYPE:
        return Delta.from_data(entry.get("data"))
    return None


SHOWN_NAMES = 10
"""Names one line lists before it says how many more there are."""
WHAT_WIDTH = 80
"""The longest description of a value a line shows (``DataFrame 1,000×4``; a crafted record may hold any length)."""


def shown(name: str) -> str:
    """A name as a line shows it: characters that are not printable (a newline, a tab, NUL) written as escapes."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)


def listing(names: list[str], *, last: str = ", ") -> str:
    """``a, b, c`` (``last`` before the last one), at most :data:`SHOWN_NAMES` names, then ``and N more``."""
    names = [shown(n) for n in names]
    if len(names) > SHOWN_NAMES:
        return ", ".join(names[:SHOWN_NAMES]) + f" and {len(names) - SHOWN_NAMES:,} more"
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + last + names[-1]


def summarize(deltas: list[Delta]) -> str:
    """What several calls changed together, in one line (the last change of a name wins)."""
    vars_: dict[str, VarChange] = {}
    first_before: dict[str, Any] = {}
    files: dict[str, FileChange] = {}
    untracked: dict[str, int] = {}
    for d in deltas:
        for c in d.vars:
            first_before.setdefault(c.name, c.before)
            vars_[c.name] = c
        for f in d.files:
            files[f.path] = f
        for u in d.untracked:
            untracked[u] = untracked.get(u, 0) + 1
    set_, deleted = [], []
    for name, c in vars_.items():
        if c.after is None:
            if first_before.get(name) is not None:
                deleted.append(name)
        else:
            why = c.after.get("unsaved") if isinstance(c.after, dict) else None
            if isinstance(why, str):  # what a checkout cannot bring back is said where the change is shown
                set_.append(f"{name} (not saved: {_cut(why.removesuffix(', not saved'))})")
                continue
            what = _cut(c.what)  # a record may come from anyone
            set_.append(f"{name} ({what})" if what and not what.startswith(("int", "float", "bool", "str")) else name)
    # (names and descriptions are escaped by ``listing``: a session from elsewhere may hold any text there)
    parts = []
    if set_:
        parts.append("set " + listing(set_))
    if deleted:
        parts.append("deleted " + listing(deleted))
    wrote = [p for p, f in files.items() if f.after is not None]
    removed = [p for p, f in files.items() if f.after is None]
    if wrote:
        parts.append("wrote " + listing(wrote))
    if removed:
        parts.append("removed " + listing(removed))
    for kind, n in untracked.items():
        parts.append(f"{n} {kind} {'command' if n == 1 else 'commands'} (effects not tracked)")
    return "; ".join(parts)


def _cut(text: str) -> str:
    return text if len(text) <= WHAT_WIDTH else text[: WHAT_WIDTH - 1] + "…"
