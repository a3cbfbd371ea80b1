"""A session as one self-contained HTML file (the tree and every branch), or one branch as Markdown.

The page needs no network: its CSS, its small script, the tree's SVG and every entry are
inline. Each entry is rendered once by the static rendering (:mod:`.static_html`, the same
code as a notebook's durable outputs); the page shows one branch at a time (the current one,
or the one asked for) and switches branch when a node of the tree, a branch in the list or a
search hit is clicked. Labels, compactions, branch summaries and model changes are shown
where they happened. Without JavaScript every entry reads in file order.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...messages import AssistantMessage, CustomMessage, ToolResultMessage, as_message, text_of
from ...messages.system import system_message_note
from ..highlight import markdown_html
from ..static_html import Notice, render_item, render_markdown
from ..transcript import DEFAULT_MAX_OUTPUT
from .files import HTML_MARKER, MARKDOWN_MARKER
from .playback import playback_tags

_MAX_GRAPH_NODES = 2000


def _message(raw: dict[str, Any]) -> Any | None:
    """The message shown for a raw entry (``None`` for entries a reader does not need)."""
    kind = raw.get("type")
    try:
        if kind == "message" and isinstance(raw.get("message"), dict):
            if raw["message"].get("role") == "system":  # the recorded prompt: one line, as the notebook shows it
                note = system_message_note(raw["message"])
                return Notice(text=note[:1].upper() + note[1:] + " (the prompt itself is in the session file)")
            return as_message(raw["message"])
        if kind == "custom_message" and raw.get("display") is not False:
            return CustomMessage(custom_type=str(raw.get("customType") or ""), content=raw.get("content") or "", display=True)
    except TypeError:
        return Notice(text=f"entry {raw.get('id')}: a message this version cannot read", tone="warn")
    if kind == "compaction":
        before = raw.get("tokensBefore")
        size = f" ({before:,} tokens before)" if isinstance(before, int) else ""
        return ("Compaction" + size, str(raw.get("summary") or ""))
    if kind == "branch_summary":
        return ("Branch summary", str(raw.get("summary") or ""))
    if kind == "model_change":
        return Notice(text=f"Model: {raw.get('provider')}/{raw.get('modelId')}")
    if kind == "thinking_level_change":
        return Notice(text=f"Thinking level: {raw.get('thinkingLevel')}")
    return None


def _branch(parents: dict[str, str | None], leaf: str | None) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    while leaf is not None and leaf in parents and leaf not in seen:
        seen.add(leaf)
        out.append(leaf)
        leaf = parents[leaf]
    return out[::-1]


Clean = Callable[[str], str]
"""What an export does to every text it shows before it is drawn or written (the shell and the
notebook pass their secret redaction: a key held in a label, a name or a message never reaches the page)."""

_IDS = frozenset({"id", "parentId", "targetId", "fromId", "firstKeptEntryId", "toolCallId"})


def clean_value(value: Any, clean: Clean) -> Any:
    """``value`` with ``clean`` applied to every string in it (an entry's ids and the keys of its objects left as they are)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, list):
        return [clean_value(v, clean) for v in value]
    if isinstance(value, dict):
        return {k: v if k in _IDS and isinstance(v, str) else clean_value(v, clean) for k, v in value.items()}
    return value


def _keep(text: str) -> str:
    return text


def branch_markdown(session: Any, leaf: str | None = None, *, max_output: int = DEFAULT_MAX_OUTPUT, clean: Clean | None = None) -> str:
    """One branch of ``session`` (default: the current one) as Markdown, with labels and summaries.

    ``clean`` is applied to every text before it is written (see :data:`Clean`).
    """
    clean = clean or _keep
    raws = [clean_value(r, clean) for r in session.raw_entries()]
    parents = {r["id"]: r.get("parentId") for r in raws if isinstance(r.get("id"), str)}
    by_id = {r["id"]: r for r in raws if isinstance(r.get("id"), str)}
    labels = {k: clean(v) for k, v in session.labels.items()}
    items: list[Any] = []
    for eid in _branch(parents, leaf if leaf is not None else session.leaf_id):
        shown = _message(by_id[eid])
        if isinstance(shown, tuple):
            shown = Notice(text=f"{shown[0]}: {shown[1]}")
        if shown is not None:
            items.append(shown)
        if eid in labels:
            items.append(Notice(text=f"label: {labels[eid]}"))
    title = session.name or (session.path or "session")
    return MARKDOWN_MARKER + "\n\n" + render_markdown(items, title=clean(str(title)), max_output=max_output)


def _entry_html(
    raw: dict[str, Any], shown: Any, results: dict[str, ToolResultMessage], called: set[str], label: str | None, max_output: int
) -> str:
    if shown is None:
        return ""
    if isinstance(shown, tuple):
        head, text = shown
        body = f'<div class="summary"><p><strong>{html.escape(head)}</strong></p>{markdown_html(text)}</div>'
    elif isinstance(shown, ToolResultMessage) and shown.tool_call_id in called:
        return ""  # drawn in the card of its call, with the assistant message
    else:
        body = render_item(shown, results, set(), max_output)
    if not body:
        return ""
    badge = f'<span class="label">{html.escape(label)}</span>' if label else ""
    eid = html.escape(str(raw["id"]))
    return f'<section class="entry" id="e-{eid}" data-id="{eid}"><div class="eid">{eid}{badge}</div>{body}</section>'


def export_html(session: Any, leaf: str | None = None, *, max_output: int = DEFAULT_MAX_OUTPUT, clean: Clean | None = None) -> str:
    """``session`` as one self-contained HTML page: the tree, every entry, branch switching and search.

    ``leaf`` is the branch shown first (default: the current one). ``clean`` is applied to every
    text before it is drawn (Graphviz, which writes ``-`` as ``&#45;``, included) or written into
    the page and its data (see :data:`Clean`).
    """
    clean = clean or _keep
    raws = [clean_value(r, clean) for r in session.raw_entries() if isinstance(r.get("id"), str)]
    parents = {r["id"]: r.get("parentId") for r in raws}
    labels = {k: clean(v) for k, v in session.labels.items()}
    msgs = {r["id"]: _message(r) for r in raws}
    results = {m.tool_call_id: m for m in msgs.values() if isinstance(m, ToolResultMessage)}
    called = {c.id for m in msgs.values() if isinstance(m, AssistantMessage) for c in m.tool_calls if c.id in results}
    entries = "".join(_entry_html(r, msgs[r["id"]], results, called, labels.get(r["id"]), max_output) for r in raws)
    start = leaf if leaf is not None else session.leaf_id
    graph = session.graph(mode="turns", max_nodes=_MAX_GRAPH_NODES, clean=clean)
    result = graph.render_result()
    tree = result.svg if result.svg else f"<pre>{html.escape(graph.text())}</pre>"
    model = getattr(graph, "model", None)
    nodes = {k: n.entry_ids for k, n in (model.nodes.items() if model is not None else []) if n.entry_ids}
    # a branch ends at a content entry with no content below it (labels, cell records, checkout markers do not count)
    below: set[str] = set()
    for r in reversed(raws):  # children come after their parents in an append-only file
        parent = parents.get(r["id"])
        if parent and (r.get("type") in _CONTENT or r["id"] in below):
            below.add(parent)
    leaves = [r["id"] for r in raws if r.get("type") in _CONTENT and r["id"] not in below]
    data = {"parents": parents, "nodes": nodes, "leaf": start, "leaves": leaves, "labels": labels}
    file_name = clean(os.path.basename(session.path or ""))
    title = clean(str(session.name or file_name or "session"))
    # the file's name, never its folder (an export is shared; where it was made is nobody's business)
    facts = ([file_name] if file_name and file_name != title else []) + [
        f"{len(raws):,} entries",
        f"{len(leaves)} branch{'es' if len(leaves) != 1 else ''}",
        f"session {str(session.id)[:8]}",
    ]
    branch_list = "".join(
        f'<li><a href="#e-{html.escape(x)}" data-leaf="{html.escape(x)}">{html.escape(_branch_name(x, parents, msgs, labels))}</a></li>'
        for x in leaves
    )
    return _PAGE.format(
        title=html.escape(title),
        meta=html.escape(" · ".join(facts)),
        tree=tree,
        branches=branch_list,
        entries=entries,
        data=script_json(data),
        css=_asset("export_page.css"),
        js=_asset("export_page.js"),
        marker=HTML_MARKER,
        playback=playback_tags(raws, script_json),  # the player: its own style, data and script (views/playback.py)
    )


def script_json(value: Any) -> str:
    """``value`` as JSON that can sit inside a ``<script>`` element whatever its strings hold.

    No ``<`` (so no ``</script>`` and no ``<!--``, which would make the browser read past the
    element's end), no ``>`` or ``&``, and no character outside ASCII (U+2028 and lone
    surrogates included): all are written as ``\\uXXXX`` escapes, which JSON reads back as they were.
    """
    text = json.dumps(value, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return (Path(__file__).parent.parent / "assets" / name).read_text(encoding="utf-8")


_CONTENT = frozenset({"message", "compaction", "branch_summary", "custom_message"})


def _branch_name(leaf: str, parents: dict[str, str | None], msgs: dict[str, Any], labels: dict[str, str]) -> str:
    """How the branch list names a branch: its last label, else its last prompt."""
    ids = _branch(parents, leaf)
    for eid in reversed(ids):
        if eid in labels:
            return f"{labels[eid]} ({leaf})"
    for eid in reversed(ids):
        m = msgs.get(eid)
        if m is not None and getattr(m, "role", None) == "user":
            text = " ".join(text_of(m.content, " ").split())
            return (text[:60] + "…" if len(text) > 60 else text) + f" ({leaf})"
    return leaf


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">{marker}<title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{css}</style></head>
<body><header><h1>{title}</h1><span class="meta">{meta}</span>
<div id="find"><input id="search" type="search" placeholder="Search every branch" aria-label="Search every branch">
<span id="search-count" aria-live="polite"></span>
<button id="search-prev" type="button" title="previous match (Shift+Enter)" aria-label="previous match">↑</button>
<button id="search-next" type="button" title="next match (Enter)" aria-label="next match">↓</button></div></header>
<main><div id="side"><div id="tree-bar"><strong>Tree</strong>
<button id="tree-fit" type="button" title="the whole tree in the pane, or large enough to read">whole tree</button></div>
<div id="tree">{tree}</div>
<div id="lists"><div id="hits-box" hidden><h2>Matches</h2><div id="hits"></div></div>
<h2>Branches</h2><ul>{branches}</ul></div></div>
<div id="split" role="separator" aria-orientation="vertical" title="drag to give the tree more room"></div>
<div id="transcript">{entries}</div></main>
<script type="application/json" id="pi-data">{data}</script>
<script>{js}</script>{playback}</body></html>
"""


__all__ = ["branch_markdown", "export_html", "script_json"]
