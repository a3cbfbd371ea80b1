"""``pi-jupyter tree FILE``: the session tree as indented text."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from typing import Any

from ..session import CycleError, Session, TreeNode
from ..session.scan import ScannedSession
from ..views.edit_marks import MARK_SIGNS, MARK_WORDS, branch_edit_marks
from .common import note_problems, open_session, safe_stdout, scan_session, status
from .render import cut_name, entry_summary, visible_children

READ_ONLY = True
"""The command only reads: the ``pi-jupyter`` script ends the process as soon as its output is written."""

DESCRIPTION = """\
Print every entry of the session as a tree. A linear run of entries stays at one
indentation level, however long; indentation grows only where the conversation branches
(├─ / └─ mark the children of a branch point, oldest first, as pi orders them).
Entries on the current branch are marked with *, the leaf with "← leaf", labels are shown
in [brackets]; entries a context edit on the current branch changed say "✂ forgotten" or
"✎ edited"; pi-jupyter's checkout markers are hidden. Branch points nested more than
16 deep are drawn at that depth, after a ⋯ that says the line sits deeper than shown.
Entries on a parent cycle (unreachable from any root) are listed after the tree. The file
is opened read-only."""

MAX_PREFIX = 48
"""Columns of tree drawing (16 levels) before a line's indentation is cut to its innermost levels."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``tree``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument("--width", type=int, default=0, help="cut lines to this many characters (default: the terminal's)")


def _below(body: str, deep: bool, extension: str) -> tuple[str, bool]:
    """The prefix one level further in; only its innermost :data:`MAX_PREFIX` columns are kept."""
    prefix = body + extension
    if len(prefix) > MAX_PREFIX:
        return prefix[-MAX_PREFIX:], True
    return prefix, deep


def render_tree(session: Session | ScannedSession, width: int = 0, summary: Callable[[dict[str, Any]], str] = entry_summary) -> list[str]:
    """The tree's lines (iterative, so a 100k-deep branch is fine), then a note on unreachable entries.

    ``summary`` gives an entry's one-line description (for a scanned file: the one kept while scanning).
    """
    try:
        on_path = set(session.branch_ids())
    except CycleError:
        on_path = set()
    leaf = session.leaf_id
    # context edits on the current branch (a scanned file has none: pi 1.x entries are read whole)
    marks = branch_edit_marks(session.raw_branch(leaf)) if on_path and isinstance(session, Session) and leaf else {}
    root = TreeNode({"type": "root", "id": ""}, session.tree())
    lines: list[str] = []
    # a stack of (node, prefix for its own line, prefix for lines below it, whether outer levels were cut)
    stack: list[tuple[TreeNode, str, str, bool]] = []
    roots, seen = visible_children(root)  # seen: entries reached from a root, checkout markers included
    many = len(roots) > 1
    for i in range(len(roots) - 1, -1, -1):
        last = i == len(roots) - 1
        stack.append((roots[i], ("└─ " if last else "├─ ") if many else "", ("   " if last else "│  ") if many else "", False))
    while stack:
        node, head, body, deep = stack.pop()
        eid = node.id
        star = "*" if eid in on_path else " "
        label = f" [{cut_name(node.label)}]" if node.label else ""
        tail = "  ← leaf" if eid == leaf else ""
        mark = marks.get(eid)
        if mark is not None and mark.state != "restored":
            tail = f"  {MARK_SIGNS[mark.state]} {MARK_WORDS[mark.state]} (context edit {mark.edit_id})" + tail
        if deep or len(head) > MAX_PREFIX:
            head = "⋯  " + head[-(MAX_PREFIX - 3) :]
        line = f"{star} {head}{eid} {summary(node.entry)}{label}{tail}"
        if width and len(line) > width:
            line = line[: width - 1] + "…"
        lines.append(line)
        children, hidden = visible_children(node)
        seen += 1 + hidden
        if len(children) == 1:
            stack.append((children[0], body, body, deep))
        elif children:
            for i in range(len(children) - 1, -1, -1):
                last = i == len(children) - 1
                child_head, head_deep = _below(body, deep, "└─ " if last else "├─ ")
                child_body, body_deep = _below(body, deep, "   " if last else "│  ")
                stack.append((children[i], child_head, child_body, head_deep or body_deep))
    missing = len(session) - seen
    if missing > 0:
        lines.append(_unreachable_note(session, root.children, missing))
    return lines


def _unreachable_note(session: Session | ScannedSession, roots: list[TreeNode], missing: int) -> str:
    """One line naming the entries no root leads to (they sit on, or below, a parent cycle)."""
    reached: set[str] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        reached.add(node.id)
        stack.extend(node.children)
    ids = [e["id"] for e in session.raw_entries() if e["id"] not in reached]
    ids = list(dict.fromkeys(ids))
    shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
    return (
        f"({missing} {'entry cannot' if missing == 1 else 'entries cannot'} be reached from a root: they sit on or below "
        f"a parent cycle: {shown}; `pi-jupyter info {session.path}` says where)"
    )


def _kept_summary(stub: dict[str, Any]) -> str:
    return stub["_keep"]


def run(args: argparse.Namespace) -> int:
    """Print the tree; the exit status follows the file's load report."""
    scanned = scan_session(args.file, keep=entry_summary)  # stubs and each entry's line: flat memory
    session: Session | ScannedSession = scanned if scanned is not None else open_session(args.file)
    note_problems(session)
    safe_stdout()
    width = args.width
    if not width and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    lines = render_tree(session, width, _kept_summary if scanned is not None else entry_summary)
    if not lines:
        print("(no entries)")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return status(session)
