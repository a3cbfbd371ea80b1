"""The session graph as a text tree: what is shown when no Graphviz is around (and on request)."""

from __future__ import annotations

import html

from .. import digest
from ..edit_marks import mark_summary
from ..markdown_safe import md_fence
from ..reader_bundle import pi_bundle
from ..scores import scores_text
from .nodes import GraphNode

PATH_MARK = "*"
LEAF_MARK = "▶"


def node_line(node: GraphNode) -> str:
    """One node on one line: badges, title, answer, stats."""
    parts: list[str] = []
    if node.labels:
        parts.append(" ".join(f"[{label}]" for label in node.labels))
    parts.append(node.title)
    if node.answer:
        parts.append(node.answer)
    parts.extend(stat_parts(node))
    if node.status == "error":
        parts.append("ERROR" + (f": {digest.clip(digest.one_line(digest.error_summary(node.error)), 60)}" if node.error else ""))
    elif node.status == "aborted" or node.aborts:
        parts.append("ABORTED")
    elif node.status == "length":
        parts.append("cut at max tokens")
    if node.models:
        parts.append("model → " + node.models[-1])
    if node.scores:
        parts.append("★ " + scores_text(node.scores))
    elif node.scores_inside:
        parts.append("★ " + node.scores_inside)
    if node.context_edits:
        parts.append(mark_summary(node.context_edits, node.editable))
    if node.is_leaf:
        parts.append("← current leaf")
    return "  ".join(parts)


def stat_parts(node: GraphNode) -> list[str]:
    """The small facts of a node: cell, tool calls, tokens, cost, size of a fold."""
    out: list[str] = []
    if node.cell_id:
        out.append((f"In [{node.execution_count}] " if node.execution_count is not None else "") + f"cell {node.cell_id[:8]}")
    if node.kind == "compaction":
        before, after = node.tokens_before or 0, node.tokens_after or 0
        # a compaction made elsewhere (pi, an older version) may not have shrunk the context: say so, never a bare "→ more"
        grew = " (did not shrink the context)" if after >= before and before else ""
        out.append(f"≈{digest.tokens_text(before)} → ≈{digest.tokens_text(after)} tokens{grew}")
    if node.folded:
        out.append(f"{len(node.entry_ids):,} entries")
    if node.tool_calls:
        out.append(f"{node.tool_calls} tool{'s' if node.tool_calls != 1 else ''}")
    if node.tool_errors:
        out.append(f"{node.tool_errors} tool error{'s' if node.tool_errors != 1 else ''}")
    if node.tokens:
        out.append(f"{digest.tokens_text(node.tokens)} tok")
    if node.cost:
        out.append(digest.cost_text(node.cost))
    return out


def text_tree(nodes: dict[str, GraphNode], roots: list[str], *, header: str = "", hint: str | None = None) -> str:
    """Draw ``nodes`` as an indented tree (``*`` marks the current path, ``▶`` the leaf)."""
    lines: list[str] = [header] if header else []
    if not roots:
        lines.append("(no entries)")
    stack: list[tuple[str, str, bool, bool]] = [(k, "", i == len(roots) - 1, True) for i, k in reversed(list(enumerate(roots)))]
    while stack:
        key, prefix, last, top = stack.pop()
        node = nodes[key]
        mark = LEAF_MARK if node.is_leaf else PATH_MARK if node.on_path else " "
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(f"{mark} {prefix}{branch}{node_line(node)}")
        child_prefix = prefix if top else prefix + ("   " if last else "│  ")
        kids = node.children
        if len(kids) == 1:
            # an only child continues the line at the same depth: only branch points indent
            stack.append((kids[0], child_prefix, True, True))
            continue
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], child_prefix, i == len(kids) - 1, False))
    if hint:
        lines.append(hint)
    return "\n".join(lines)


class TextTree:
    """A text tree that displays itself (plain text, and ``<pre>`` in HTML front ends)."""

    def __init__(self, text: str, note: str | None = None) -> None:
        self.text = text
        self.note = note
        """Why this is text and not a picture, when it is not by choice."""

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def _repr_pretty_(self, p: object, cycle: bool) -> None:
        p.text(self.text)  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        return f'<pre class="pi-text-tree" style="line-height:1.3">{html.escape(self.text)}</pre>'

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> tuple[dict[str, str], dict[str, object]]:
        return pi_bundle(self._repr_html_(), md_fence(self.text), self.text, "tree-text")
