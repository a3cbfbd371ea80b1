"""What one drawn node says: its title, answer preview, badges, stats and tooltip."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import digest
from ..digest import RawEntry, plural
from ..scores import branch_variant, scores_range_text, scores_text, variant_text
from .layout import Shown
from .units import Unit, last_assistant

TOOLTIP_CHARS = 400
SEARCH_CHARS = 4_000
"""Characters of folded turns' prompts a fold's own search text holds (the kernel searches every entry anyway)."""


@dataclass(slots=True)
class GraphNode:
    """One node of :meth:`Session.graph`: a turn, an entry, a compaction, or a fold standing for many.

    ``key`` is the Graphviz node name, which is also the ``<title>`` of the node's group in
    the SVG: an entry id (the node's first entry) for a plain node, ``fold:ID`` for a folded
    run, ``sub:ID`` for a collapsed branch and ``more:ID`` for merged siblings.
    """

    key: str
    kind: str
    """``turn``, ``continuation``, ``compaction``, ``branch_summary``, ``start``, ``meta``, ``fold``, ``sub`` or ``more``."""
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    entry_ids: list[str] = field(default_factory=list)
    """Every entry the node stands for, in tree order (checkout markers and cell records left out)."""
    turns: int = 0
    labels: list[str] = field(default_factory=list)
    on_path: bool = False
    """On the branch from the root to the current leaf."""
    is_leaf: bool = False
    """Holds the current leaf."""
    tips: int = 0
    """Tips of the tree (entries without children) it holds."""
    status: str = "ok"
    """The worst stop reason inside: ``ok``, ``length``, ``aborted`` or ``error``."""
    error: str | None = None
    errors: int = 0
    aborts: int = 0
    tokens: int = 0
    cost: float = 0.0
    tool_calls: int = 0
    tool_errors: int = 0
    models: list[str] = field(default_factory=list)
    """Models switched to inside (``model_change`` entries), in order."""
    cell_id: str | None = None
    execution_count: int | None = None
    title: str = ""
    answer: str = ""
    summary: str = ""
    tokens_before: int | None = None
    """A compaction: the estimated context just before it (the same estimate as ``tokens_after``)."""
    tokens_after: int | None = None
    recorded_tokens_before: int | None = None
    """A compaction: the ``tokensBefore`` its entry records (often the model's own count)."""
    """For a compaction: the context before, and an estimate (chars / 4) of the context right after."""
    tooltip: str = ""
    search: str = ""
    """Lower-case text the TreeView's search looks in (labels, previews, ids)."""
    target: str | None = None
    context_edits: dict[str, str] = field(default_factory=dict)
    """Entries inside whose model-visible content a ``context_edit`` on the current branch changed: id -> ``edited`` or ``dropped``."""
    editable: int = 0
    """Entries inside that give the model content a context edit can change (user, assistant, tool-result, custom)."""
    struck: bool = False
    """The message the title shows (a turn's prompt) is forgotten on the current branch: the title is struck through."""
    """Entries inside that give the model content a context edit can change (user, assistant, tool-result, custom)."""
    scores: dict[str, float | int | bool] = field(default_factory=dict)
    """Experiment scores recorded on the node's last scored entry (an experiment branch's leaf)."""
    scores_inside: str = ""
    """For a fold: how many branches inside were scored and the range of each score (``3 scored: judge 2–9``)."""
    variant: str = ""
    """The experiment variant whose branch starts in this node, as one line (``model=…, tone=warm``)."""

    @property
    def entries(self) -> int:
        """How many entries the node stands for."""
        return len(self.entry_ids)

    @property
    def first_id(self) -> str | None:
        """The node's first entry id."""
        return self.entry_ids[0] if self.entry_ids else None

    @property
    def last_id(self) -> str | None:
        """The node's last entry id (for a plain node, the end of its linear run)."""
        return self.entry_ids[-1] if self.entry_ids else None

    @property
    def target_id(self) -> str | None:
        """The entry actions on this node use: its last entry that is not a setting or a label.

        A label entry is appended after whatever was the leaf, so it often ends a turn's
        run; checking out, comparing or forking "this turn" means its last real step.
        """
        return self.target if self.target is not None else self.last_id

    @property
    def folded(self) -> bool:
        """True for a node that stands for several units (a fold, a collapsed branch, merged siblings)."""
        return self.kind in ("fold", "sub", "more")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary (what the TreeView sends to the browser)."""
        return {
            "key": self.key,
            "kind": self.kind,
            "title": self.title,
            "labels": self.labels,
            "onPath": self.on_path,
            "isLeaf": self.is_leaf,
            "folded": self.folded,
            "entries": len(self.entry_ids),
            "firstId": self.first_id,
            "lastId": self.last_id,
            "target": self.target_id,
            "parent": self.parent,
            "children": self.children,
            "search": self.search,
            "contextEdits": self.context_edits,
            "editable": self.editable,
            "scores": self.scores,
            "variant": self.variant,
        }


def describe(
    shown: Shown,
    *,
    full: bool,
    preview_chars: int,
    path_of: Callable[[str], list[RawEntry]],
    scores: Mapping[str, dict[str, float | int | bool]] | None = None,
) -> GraphNode:
    """The :class:`GraphNode` for one drawn node; ``scores`` maps scored entry ids to their scores."""
    units = shown.units
    node = GraphNode(key=shown.key, kind=shown.kind, on_path=shown.on_path)
    for unit in units:
        node.entry_ids.extend(e["id"] for e in unit.entries)
        node.turns += unit.turns
        node.labels.extend(unit.labels)
        node.tokens += unit.tokens
        node.cost += unit.cost
        node.tool_calls += unit.tool_calls
        node.tool_errors += unit.tool_errors
        node.models.extend(unit.models)
        node.is_leaf = node.is_leaf or unit.is_leaf
        if not unit.children:
            node.tips += 1
        if unit.status == "error":
            node.errors += 1
            node.error = node.error or unit.error
        elif unit.status == "aborted":
            node.aborts += 1
        if _rank(unit.status) > _rank(node.status):
            node.status = unit.status
        if node.cell_id is None and unit.cell is not None:
            node.cell_id, node.execution_count = unit.cell
    if shown.kind not in ("fold", "sub", "more"):
        for unit in reversed(units):
            real = next((e["id"] for e in reversed(unit.entries) if not digest.is_meta(e)), None)
            if real is not None:
                node.target = real
                break
    first = units[0]
    if shown.kind in ("fold", "sub", "more"):
        _describe_fold(node, shown, preview_chars)
    elif first.kind == "compaction":
        _describe_compaction(node, first, preview_chars, path_of)
    elif first.kind == "branch_summary":
        node.title = "Branch summary"
        node.summary = _strip_prefix(digest.entry_text(first.entries[0]))
        node.answer = digest.preview(node.summary, preview_chars)
    elif full:
        _describe_entry(node, first, preview_chars)
    else:
        _describe_unit(node, first, preview_chars)
    if not node.folded:
        node.variant = variant_text(branch_variant([e for unit in units for e in unit.entries]))
    if scores and not node.folded:
        node.scores = next((dict(scores[eid]) for eid in reversed(node.entry_ids) if eid in scores), {})
    elif scores:
        # a fold stands for many branches: it shows the range, each expanded node its own scores
        inside = [scores[eid] for eid in node.entry_ids if eid in scores]
        if inside:
            node.scores_inside = f"{len(inside)} scored: {scores_range_text(inside)}"
    node.tooltip = _tooltip(node, units)
    node.search = _search(node, units)
    return node


def _rank(status: str) -> int:
    return {"ok": 0, "length": 1, "aborted": 2, "error": 3}.get(status, 0)


def _head_title(entry: RawEntry, limit: int) -> str:
    r = digest.role(entry)
    text = digest.entry_text(entry)
    if r == "bashExecution":
        return digest.preview(text, limit)
    if r == "custom":
        return digest.preview(f"{digest.as_text(entry.get('customType') or 'custom')}: {text}", limit)
    msg = digest.message(entry) or {}
    images = " [image]" if digest.has_images(msg.get("content")) else ""
    return "You: " + digest.preview(text, limit - 5 - len(images)) + images


def _entry_title(entry: RawEntry, limit: int) -> str:
    """A few words for any entry (a fold that starts inside a turn names its first step)."""
    if digest.is_head(entry):
        return _head_title(entry, limit)
    r = digest.role(entry)
    if r == "assistant":
        answer = _answer([entry], limit - 10)
        return f"Assistant {answer}" if answer else "Assistant"
    if r == "toolResult":
        msg = digest.message(entry) or {}
        return f"Tool result: {digest.as_text(msg.get('toolName') or '?')}"
    text = digest.entry_text(entry)
    return digest.preview(text, limit) if text.strip() else digest.as_text(entry.get("type") or "entry")


def _answer(entries: list[RawEntry], limit: int) -> str:
    msg = last_assistant(entries)
    if msg is None:
        return ""
    text = digest.content_text(msg.get("content"))
    if text.strip():
        return "→ " + digest.preview(text, limit - 2)
    calls = [digest.as_text(c.get("name") or "?") for c in digest.tool_calls(msg)]
    if calls:
        return "→ calls " + digest.clip(", ".join(calls), limit - 8)
    if msg.get("stopReason") in ("error", "aborted"):
        return ""
    return "→ (no text)"


def _describe_unit(node: GraphNode, unit: Unit, limit: int) -> None:
    if unit.head is not None:
        node.title = _head_title(unit.head, limit)
        node.answer = _answer(unit.entries, limit)
    elif unit.kind == "continuation":
        answer = _answer(unit.entries, limit)
        node.title = "↻ continued" + (f" ({_role_words(unit.entries[0])})" if answer == "" else "")
        node.answer = answer
    elif unit.kind == "start":
        node.title = "Session start"
        node.answer = _settings(unit.entries, limit)
    else:
        node.title = "Settings"
        node.answer = _settings(unit.entries, limit)


_ENTRY_WORDS = {
    "session_info": "session named",
    "label": "label",
    "model_change": "model changed",
    "thinking_level_change": "thinking level changed",
    "custom": "extension state",
    "custom_message": "extension message",
    "context_edit": "context edited",
}
"""What an entry that continues a turn is, in words (not pi's type names)."""


def _role_words(entry: RawEntry) -> str:
    r = digest.role(entry)
    kind = digest.as_text(entry.get("type") or "entry")
    return {"assistant": "assistant", "toolResult": "tool result"}.get(r or "", _ENTRY_WORDS.get(kind, kind.replace("_", " ")))


def _settings(entries: list[RawEntry], limit: int) -> str:
    parts = []
    for entry in entries:
        kind = entry.get("type")
        if kind == "model_change":
            continue  # shown as a model badge
        if kind == "thinking_level_change":
            parts.append(f"thinking {digest.as_text(entry.get('thinkingLevel'))}")
        elif kind == "session_info":
            name = entry.get("name")
            parts.append(f"named {name!r}" if isinstance(name, str) else f"named {digest.as_text(name)}")
        elif kind == "label":
            parts.append("label")
        elif kind == "message" and digest.role(entry) == "system":
            parts.append("system prompt")
        else:
            parts.append(digest.as_text(entry.get("customType") or kind))
    return digest.clip(", ".join(dict.fromkeys(parts)), limit)


def _describe_entry(node: GraphNode, unit: Unit, limit: int) -> None:
    entry = unit.entries[0]
    kind = entry.get("type")
    r = digest.role(entry)
    if unit.head is not None:
        node.title = _head_title(entry, limit)
    elif r == "assistant":
        msg = digest.message(entry) or {}
        node.title = "Assistant"
        node.answer = _answer([entry], limit)
        model = digest.model_ref(msg.get("provider"), msg.get("model"))
        node.summary = model
    elif r == "toolResult":
        msg = digest.message(entry) or {}
        node.title = f"Tool result: {digest.as_text(msg.get('toolName') or '?')}" + (" (error)" if msg.get("isError") else "")
        node.answer = digest.preview(digest.entry_text(entry), limit)
    elif kind == "model_change":
        node.title = "Model change"
    elif kind == "label":
        node.title = "Label entry"
        node.answer = digest.preview(digest.entry_text(entry), limit)
    else:
        node.title = digest.preview(digest.entry_text(entry), limit) or digest.as_text(kind)


def _describe_compaction(node: GraphNode, unit: Unit, limit: int, path_of: Callable[[str], list[RawEntry]]) -> None:
    entry = unit.entries[0]
    node.title = "Compaction"
    before = entry.get("tokensBefore")
    node.recorded_tokens_before = digest.count(before) if isinstance(before, (int, float)) and not isinstance(before, bool) else None
    node.summary = digest.as_text(entry.get("summary") or "")
    # before and after by the same estimate of the rebuilt context (the recorded figure may be a model's
    # count, which compared with an estimate made a compaction look as if it grew the context)
    parent = entry.get("parentId")
    node.tokens_before = estimate_context_tokens(path_of(parent)) if isinstance(parent, str) and parent else 0
    node.tokens_after = estimate_context_tokens(path_of(entry["id"]))
    node.answer = digest.preview(node.summary, limit)


def estimate_context_tokens(path: list[RawEntry]) -> int:
    """An estimate (characters / 4) of the context a branch ending at ``path[-1]`` rebuilds to."""
    from ...session.rebuild import context_from_path

    chars = 0
    for msg in context_from_path(path)["messages"]:
        if not isinstance(msg, dict):
            continue  # a message entry holding null or a number: no text
        if msg.get("role") in ("compactionSummary", "branchSummary"):
            chars += len(digest.as_text(msg.get("summary") or ""))
            continue
        content = msg.get("content")
        chars += len(digest.content_text(content))
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    if block.get("type") == "toolCall":
                        chars += len(str(block.get("name") or "")) + len(str(block.get("arguments") or ""))
                    elif block.get("type") == "thinking":
                        chars += len(str(block.get("thinking") or ""))
                    elif block.get("type") == "image":
                        chars += 4800
        if msg.get("role") == "bashExecution":
            chars += len(str(msg.get("command") or "")) + len(str(msg.get("output") or ""))
    return math.ceil(chars / 4)


def _describe_fold(node: GraphNode, shown: Shown, limit: int) -> None:
    units = shown.units
    turns = sum(u.turns for u in units)
    first = next((u for u in units if u.head is not None), units[0])
    first_title = _head_title(first.head, limit - 7) if first.head is not None else _entry_title(first.entries[0], limit - 7)
    if shown.kind == "fold":
        node.title = f"⋯ {plural(turns, 'turn')} folded" if turns else f"⋯ {plural(len(node.entry_ids), 'entry', 'entries')} folded"
        side = sum(1 for u in units if not u.on_path and u.parent is not None and u.parent.on_path)
        if shown.on_path and side:
            node.title += f", {side} side branch{'es' if side != 1 else ''}"
        last = next((u for u in reversed(units) if u.head is not None), None)
        node.answer = "from " + first_title
        if last is not None and last is not first:
            node.summary = "to " + _head_title(last.head, limit - 3)  # type: ignore[arg-type]
    elif shown.kind == "sub":
        node.title = f"⋯ branch: {plural(turns, 'turn')}, {plural(node.tips, 'tip')}"
        node.answer = "from " + first_title
    else:
        inside = {id(u) for u in units}
        heads = sum(1 for u in units if u.parent is None or id(u.parent) not in inside)
        node.title = f"⋯ {heads:,} more branch{'es' if heads != 1 else ''} ({plural(turns, 'turn')})"
        node.answer = "from " + first_title


def _strip_prefix(summary: str) -> str:
    preamble = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    return summary[len(preamble) :] if summary.startswith(preamble) else summary


def _tooltip(node: GraphNode, units: list[Unit]) -> str:
    # a turn's title is the start of its prompt, which the next line shows in full
    lines = [] if not node.folded and units[0].head is not None else [node.title]
    if node.labels:
        lines.append("labels: " + ", ".join(node.labels))
    if not node.folded:
        unit = units[0]
        if unit.head is not None:
            lines.append("You: " + digest.clip(digest.one_line(digest.entry_text(unit.head)[: TOOLTIP_CHARS * 2]), TOOLTIP_CHARS))
        msg = last_assistant(unit.entries)
        if msg is not None:
            text = digest.content_text(msg.get("content"))
            if text.strip():
                lines.append("Assistant: " + digest.clip(digest.one_line(text[: TOOLTIP_CHARS * 2]), TOOLTIP_CHARS))
        if node.summary and node.kind in ("compaction", "branch_summary"):
            lines.append(digest.clip(digest.one_line(node.summary[: TOOLTIP_CHARS * 2]), TOOLTIP_CHARS))
    elif node.answer:
        lines.append(node.answer)
        if node.summary:
            lines.append(node.summary)
    if node.kind == "compaction":
        lines.append(f"context: ≈{node.tokens_before or 0:,} tokens before, ≈{node.tokens_after or 0:,} after (estimated alike)")
        if node.recorded_tokens_before is not None:
            lines.append(f"recorded before: {node.recorded_tokens_before:,} tokens")
    stats = f"tokens {node.tokens:,} · cost {digest.cost_text(node.cost)}"
    if node.tool_calls:
        stats += f" · {node.tool_calls} tool call{'s' if node.tool_calls != 1 else ''}"
    lines.append(stats)
    if node.turns > 1 or node.folded:
        lines.append(f"{plural(node.turns, 'turn')}, {plural(len(node.entry_ids), 'entry', 'entries')}")
    if node.error:
        lines.append("error: " + digest.clip(digest.one_line(digest.error_summary(node.error)), 300))
    elif node.status == "aborted":
        lines.append("aborted")
    if node.models:
        lines.append("model → " + ", ".join(node.models))
    if node.variant:
        lines.append("variant: " + node.variant)
    if node.scores:
        lines.append("scores: " + scores_text(node.scores))
    if node.scores_inside:
        lines.append("scores inside, " + node.scores_inside)
    if node.cell_id:
        lines.append(f"cell {node.cell_id}" + (f" (In [{node.execution_count}])" if node.execution_count is not None else ""))
    ids = node.entry_ids
    shown_ids = ", ".join(ids[:6]) + (f", … ({len(ids)} in all)" if len(ids) > 6 else "")
    lines.append("entries: " + shown_ids)
    if node.is_leaf:
        lines.append("current leaf")
    return "\n".join(lines)


def _search(node: GraphNode, units: list[Unit]) -> str:
    parts = [node.title, node.answer, *node.labels, *(node.entry_ids[:1] if not node.folded else ())]
    budget = SEARCH_CHARS
    for unit in units:
        if budget <= 0:
            break
        for label in unit.labels:
            parts.append(label)
        if unit.head is not None:
            text = digest.preview(digest.entry_text(unit.head), 200)
            parts.append(text)
            budget -= len(text)
        if node.folded:
            parts.append(unit.key)
    if node.cell_id:
        parts.append(node.cell_id)
    parts.extend(node.scores)
    return " ".join(p for p in parts if p).lower()
