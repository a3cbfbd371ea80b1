"""``pi-jupyter tree FILE``: the session tree as indented text."""

from __future__ import annotations

import argparse
import shutil
import sys

from ..session import CHECKOUT_TYPE, CycleError, Session, TreeNode
from .common import note_problems, open_session, safe_stdout, status
from .render import entry_summary

NAME = "tree"
HELP = "print the session tree (current path marked with *, labels in [brackets])"
DESCRIPTION = """\
Print every entry of the session as a tree. A linear run of entries stays at one
indentation level, however long; indentation grows only where the conversation branches
(├─ / └─ mark the children of a branch point, oldest first, as pi orders them).
Entries on the current branch are marked with *, the leaf with "← leaf", labels are shown
in [brackets]; pi-jupyter's checkout markers are hidden. The file is opened read-only."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``tree``."""
    parser.add_argument("file", metavar="FILE", help="a session file (.jsonl)")
    parser.add_argument("--width", type=int, default=0, help="cut lines to this many characters (default: the terminal's)")


def _visible_children(node: TreeNode) -> list[TreeNode]:
    """Children with checkout markers replaced by whatever hangs below them (pi may continue after one)."""
    out: list[TreeNode] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if child.entry.get("type") == "custom" and child.entry.get("customType") == CHECKOUT_TYPE:
            stack.extend(reversed(child.children))
        else:
            out.append(child)
    return out


def render_tree(session: Session, width: int = 0) -> list[str]:
    """The tree's lines (iterative, so a 100k-deep branch is fine)."""
    try:
        on_path = set(session.branch_ids())
    except CycleError:
        on_path = set()
    leaf = session.leaf_id
    root = TreeNode({"type": "root", "id": ""}, session.tree())
    lines: list[str] = []
    # a stack of (node, prefix for its own line, prefix for lines below it)
    stack: list[tuple[TreeNode, str, str]] = []
    roots = _visible_children(root)
    many = len(roots) > 1
    for i in range(len(roots) - 1, -1, -1):
        last = i == len(roots) - 1
        stack.append((roots[i], ("└─ " if last else "├─ ") if many else "", ("   " if last else "│  ") if many else ""))
    while stack:
        node, head, body = stack.pop()
        eid = node.id
        mark = "*" if eid in on_path else " "
        label = f" [{node.label}]" if node.label else ""
        tail = "  ← leaf" if eid == leaf else ""
        line = f"{mark} {head}{eid} {entry_summary(node.entry)}{label}{tail}"
        if width and len(line) > width:
            line = line[: width - 1] + "…"
        lines.append(line)
        children = _visible_children(node)
        if len(children) == 1:
            stack.append((children[0], body, body))
        elif children:
            for i in range(len(children) - 1, -1, -1):
                last = i == len(children) - 1
                stack.append((children[i], body + ("└─ " if last else "├─ "), body + ("   " if last else "│  ")))
    return lines


def run(args: argparse.Namespace) -> int:
    """Print the tree; the exit status follows the file's load report."""
    session = open_session(args.file)
    note_problems(session)
    safe_stdout()
    width = args.width
    if not width and sys.stdout.isatty():
        width = shutil.get_terminal_size().columns
    lines = render_tree(session, width)
    if not lines:
        print("(no entries)")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
    return status(session)
