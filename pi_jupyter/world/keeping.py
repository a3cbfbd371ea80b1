"""Keeping a world the record does not hold yet, and offering to make again what cannot be restored.

:func:`keep` appends a ``pi_jupyter.world`` record (a ``custom`` entry pi ignores) as a child
of a node: the live values and files that differ from that node's world, each with what the
node held before. It is how nothing the user had is lost or left off the tree: the user's own
versions before a run starts from them or before ``--force`` replaces them, the world a
``--conversation-only`` checkout keeps, the world a ``--world-only`` one brings in.

:func:`offer` names, for a value that cannot be restored (a connection, a lock, a file opened
for writing), the python call that made it, so the line can say ``%pi rerun ID runs `conn =
sqlite3.connect('x.db')` again``; :func:`rerun` does that when the user asks, never by itself.
"""

from __future__ import annotations

from typing import Any

from .record import RECORD_TYPE, Delta, FileChange, Slot, VarChange
from .restore import ABSENT, Decision, Report
from .state import UNKNOWN, Plan, world_at
from .values import describe


def keep(
    recorder: Any,
    session: Any,
    at: Any,
    decisions: list[Decision],
    *,
    why: str,
    keep_leaf: bool,
    note: bool = False,
    at_target: bool = True,
) -> str | None:
    """Record the live values and files of ``decisions`` as a child of node ``at`` of ``session``; the record's id.

    Each change's "before" is what ``at`` holds: its world's value, else the decision's target
    value (``at_target``: ``at`` is the move's target) or its current one (``at`` is where the
    move started). ``keep_leaf``: the session's leaf stays where it was (a checkout marker is
    written when the record is not on it); otherwise the record becomes the leaf. ``note``: the
    live values become the world's (the tracker learns their slots). ``None`` when the session
    cannot be written.
    """
    if at is UNKNOWN:
        at = session.leaf_id
    vars_at, files_at = world_at(session, at)
    live_vars = {d.target.key: d.live for d in decisions if d.kind == "vars" and d.live is not ABSENT}
    saved = recorder.save_names(live_vars) if live_vars else {}
    delta = Delta()
    for d in decisions:
        key = d.target.key
        before = _before(d, vars_at if d.kind == "vars" else files_at, at_target)
        if d.kind == "vars":
            slot, _shape = saved.get(key, (None, None))
            delta.vars.append(VarChange(key, before, slot, describe(live_vars[key]) if key in live_vars else ""))
        else:
            delta.files.append(FileChange(key, before, recorder.file_slot(d.live)))
    data = delta.to_data()
    data["why"] = why
    try:
        rid = _append_at(session, at, data, keep_leaf=keep_leaf)
    except Exception:  # noqa: BLE001 - a session opened read-only, a full disk: nothing was kept
        return None
    if note:
        for key, (slot, shape) in saved.items():
            recorder.tracker.note(key, live_vars[key], slot, shape)
        for d in decisions:
            if d.kind == "vars" and d.target.key not in saved:
                recorder.tracker.forget(d.target.key)
    return rid


def is_file(path: Any) -> bool:
    """True when ``path`` is a regular file or nothing (what a checkout may replace and a record can keep)."""
    import os

    return isinstance(path, str) and (not os.path.lexists(path) or os.path.isfile(path))


def _before(d: Decision, fold: dict[str, Slot], at_target: bool) -> Slot:
    if d.target.key in fold:
        return fold[d.target.key]
    there = d.target.then if at_target else d.target.now
    return None if there is UNKNOWN else there


def _append_at(session: Any, parent: Any, data: dict[str, Any], *, keep_leaf: bool) -> str:
    leaf = session.leaf_id
    if parent != leaf:
        session.checkout(parent, persist=False)
    try:
        rid = str(session.append_custom(RECORD_TYPE, data))
    except BaseException:
        if parent != leaf:
            session.checkout(leaf, persist=False)
        raise
    if keep_leaf:
        session.checkout(leaf)  # persisted: the file resumes where the conversation is, not on the record
    return rid


# ------------------------------------------------------------------ %pi rerun


def call_of(session: Any, entry_id: str | None) -> tuple[str, str, str] | None:
    """``(call id, tool name, code)`` of the python call whose result is entry ``entry_id`` (``None`` for anything else)."""
    if entry_id is None:
        return None
    try:
        entry = session.raw_entry(entry_id)
    except Exception:  # noqa: BLE001 - an entry of another session, or gone
        return None
    message = entry.get("message") if entry.get("type") == "message" else None
    if not isinstance(message, dict) or message.get("role") != "toolResult":
        return None
    call_id = message.get("toolCallId")
    parent = entry.get("parentId")
    for _ in range(200):  # the assistant message that made the call is a few entries up
        if parent is None:
            return None
        try:
            up = session.raw_entry(parent)
        except Exception:  # noqa: BLE001
            return None
        msg = up.get("message") if up.get("type") == "message" else None
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            for block in msg.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall" and block.get("id") == call_id:
                    args = block.get("arguments")
                    code = args.get("code") if isinstance(args, dict) else None
                    return str(call_id), str(block.get("name")), code if isinstance(code, str) else ""
            return None
        parent = up.get("parentId")
    return None


def offer(session: Any, steps: Plan, report: Report) -> None:
    """For each value that could not be restored, the python call that made it (:attr:`Report.offers`)."""
    failed = {name for name, _why in report.failed}
    if not failed:
        return
    for t in steps.vars:
        if t.key in failed and t.origin is not None and isinstance(t.then, dict) and "unsaved" in t.then:
            found = call_of(session, t.origin)
            if found is not None and found[1] == "python" and found[2]:
                report.offers[t.key] = (found[0], statement(found[2], t.key))


def statement(code: str, name: str) -> str:
    """The statement of ``code`` that binds ``name`` (``conn = sqlite3.connect('x.db')``), else the code itself."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return ast.get_source_segment(code, node) or code
    return code


def find_call(session: Any, call_id: str) -> tuple[str, str] | None:
    """``(entry id of its result, code)`` of the python call ``call_id`` in ``session``."""
    for entry in session.raw_entries():
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult" and message.get("toolCallId") == call_id:
            found = call_of(session, entry.get("id"))
            if found is not None and found[1] == "python":
                return str(entry["id"]), found[2]
    return None


def rerun(world: Any, call_id: str) -> str:
    """Run the code of python call ``call_id`` again (see :meth:`World.rerun`); the line says what came back."""
    from .record import delta_of

    found = find_call(world.session, call_id)
    if found is None:
        return f"no python call {call_id!r} in this session (the line that offered it names the call)"
    entry_id, code = found
    delta = delta_of(world.session.raw_entry(entry_id))
    made = {c.name: c.after for c in (delta.vars if delta else []) if isinstance(c.after, dict) and "unsaved" in c.after}
    if not made:
        return f"{call_id} made nothing that could not be restored; nothing run"
    live = world.namespace
    wanted = {n: slot for n, slot in made.items() if n not in live or not world.tracker.is_seen(n, live[n])}  # what is missing here
    if not wanted:
        return f"{', '.join(made)} of {call_id} are here already; nothing run"
    scratch = dict(world.namespace)  # the call's other names stay as they are
    try:
        exec(compile(code, f"<rerun {call_id}>", "exec"), scratch)  # noqa: S102 - the user asked for this call to run again
    except Exception as exc:  # noqa: BLE001 - the line says what failed
        return f"rerun of {call_id} failed: {type(exc).__name__}: {exc}"
    back = []
    for name, slot in wanted.items():
        if name in scratch:
            value = scratch[name]
            world.namespace[name] = value
            world.tracker.note(name, value, slot)
            world.tracker.hold_as(slot, value)
            back.append(f"{name} ({describe(value)})")
    if not back:
        return f"reran {call_id}, but it made none of {', '.join(wanted)} this time"
    return f"reran {call_id}: {', '.join(back)} made again"
