"""HTML for the TreeView's side panel: one entry rendered (messages as markdown, tool output
clipped, summaries, one-line settings), all text escaped; and ``json_safe`` for what goes to the browser."""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable
from typing import Any

from ...messages.notebook_context import folded_body, folded_line
from ...views import digest as _digest
from ...views.scores import scores_text as _scores_text
from ...world import delta_of, summarize

MAX_TOOL_OUTPUT = 4000
"""Characters of a tool result shown in the side panel."""
MAX_DETAIL_ENTRIES = 60
"""Entries rendered in the side panel for one node (the rest are listed by id)."""
MAX_LISTED_IDS = 400


def _markdown_renderer() -> Callable[[str], str]:
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune comes with nbconvert / JupyterLab
        return lambda text: f'<div class="pitv-pre">{html.escape(text)}</div>'
    md = mistune.create_markdown(escape=True, plugins=["strikethrough", "table"])
    return lambda text: str(md(text))


_MARKDOWN: Callable[[str], str] | None = None


def render_markdown(text: str) -> str:
    """Markdown as HTML with any raw HTML in it escaped (model text never becomes live markup)."""
    global _MARKDOWN
    if _MARKDOWN is None:
        _MARKDOWN = _markdown_renderer()
    return _MARKDOWN(text)


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON that can be written as UTF-8 (what a widget sends to the browser).

    An odd file may hold a lone surrogate (``"\\ud83d"``) or a number JSON cannot write
    (``1e400`` reads as infinity); the kernel's message packer refuses both. Lone surrogates
    become U+FFFD and non-finite numbers ``None``.
    """
    kind = type(value)
    if kind is str:  # the common case first: a redraw sends thousands of short ASCII strings
        return value if value.isascii() else _digest.utf8_safe(value)
    if kind is dict:
        return {k if type(k) is str and k.isascii() else json_safe(str(k)): json_safe(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [json_safe(v) for v in value]
    if isinstance(value, str):
        return _digest.utf8_safe(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {json_safe(str(k)): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


_text = _digest.as_text


def entry_html(entry: dict[str, Any]) -> str:
    """One entry for the side panel: a message rendered, a summary, or a one-line setting."""
    eid = html.escape(_text(entry.get("id")))
    kind = entry.get("type")
    msg = _digest.message(entry)
    if msg is not None:
        role = msg.get("role")
        if role == "user":
            return _block("user", "You", eid, render_markdown(_digest.content_text(msg.get("content"))) + _images(msg.get("content")))
        if role == "assistant":
            return _assistant_html(msg, eid)
        if role == "toolResult":
            name = html.escape(_text(msg.get("toolName") or "tool"))
            text = _digest.content_text(msg.get("content"), "")
            shown = (
                text if len(text) <= MAX_TOOL_OUTPUT else text[:MAX_TOOL_OUTPUT] + f"\n… [{len(text) - MAX_TOOL_OUTPUT} characters more]"
            )
            error = " pitv-error" if msg.get("isError") else ""
            return (
                f'<details class="pitv-msg pitv-result{error}" data-entry="{eid}"><summary>result of {name}'
                f'{" (error)" if error else ""} <code class="pitv-id">{eid}</code></summary>'
                f'<pre class="pitv-pre">{html.escape(shown)}</pre></details>'
            )
        if role == "bashExecution":
            command = html.escape(_text(msg.get("command") or ""))
            output = html.escape(_text(msg.get("output") or "")[:MAX_TOOL_OUTPUT])
            body = f'<pre class="pitv-pre">$ {command}\n{output}</pre>'
            return _block("user", "You ran", eid, body)
        return _block("meta", html.escape(_text(role)), eid, html.escape(_digest.preview(json.dumps(msg, default=str), 200)))
    if kind == "custom_message" and (fold := folded_line(entry.get("customType"), entry.get("content"))) is not None:
        body = render_markdown(folded_body(_digest.content_text(entry.get("content")))) + _images(entry.get("content"))
        return (
            f'<details class="pitv-msg pitv-user" data-entry="{eid}"><summary>{html.escape(fold)} '
            f'<code class="pitv-id">{eid}</code></summary><div class="pitv-md">{body}</div></details>'
        )
    if kind == "custom_message":
        title = html.escape(_text(entry.get("customType") or "extension"))
        return _block("user", f"Extension message · {title}", eid, render_markdown(_digest.content_text(entry.get("content"))))
    if kind == "compaction":
        before = entry.get("tokensBefore")
        title = "Compaction" + (f" · {before:,} tokens before" if isinstance(before, int) and not isinstance(before, bool) else "")
        return _block("summary", title, eid, render_markdown(_text(entry.get("summary") or "")))
    if kind == "branch_summary":
        return _block("summary", "Branch summary", eid, render_markdown(_text(entry.get("summary") or "")))
    return _meta_line(_digest.entry_text(entry), eid)


def _meta_line(text: str, eid: str) -> str:
    """A one-line entry (``eid`` already escaped)."""
    return f'<div class="pitv-msg pitv-meta" data-entry="{eid}">{html.escape(text)} <code class="pitv-id">{eid}</code></div>'


def _block(kind: str, title: str, eid: str, body: str) -> str:
    return (
        f'<div class="pitv-msg pitv-{kind}" data-entry="{eid}"><div class="pitv-role">{title} '
        f'<code class="pitv-id">{eid}</code></div><div class="pitv-md">{body}</div></div>'
    )


def _images(content: Any) -> str:
    return '<div class="pitv-meta">[image]</div>' if _digest.has_images(content) else ""


def _assistant_html(msg: dict[str, Any], eid: str) -> str:
    parts: list[str] = []
    raw = msg.get("content")
    content = raw if isinstance(raw, list) else []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "thinking" and block.get("thinking"):
            parts.append(f'<details class="pitv-thinking"><summary>thinking</summary>{render_markdown(_text(block["thinking"]))}</details>')
        elif kind == "text":
            parts.append(render_markdown(_text(block.get("text") or "")))
        elif kind == "toolCall":
            args = json.dumps(block.get("arguments"), ensure_ascii=False, default=str)
            args = args if len(args) <= 600 else args[:600] + "…"
            parts.append(f'<div class="pitv-call"><code>{html.escape(_text(block.get("name") or "?"))}({html.escape(args)})</code></div>')
    stop = msg.get("stopReason")
    if stop == "error":
        parts.append(f'<div class="pitv-err">error: {html.escape(_text(msg.get("errorMessage") or "unknown"))}</div>')
    elif stop == "aborted":
        parts.append('<div class="pitv-warn">aborted</div>')
    elif stop == "length":
        parts.append('<div class="pitv-warn">cut at the token limit</div>')
    tokens, cost, _ = _digest.usage(msg)
    model = html.escape(_digest.model_ref(msg.get("provider"), msg.get("model")))
    title = f"Assistant · {model} · {_digest.tokens_text(tokens)} tok · {_digest.cost_text(cost)}"
    return _block("assistant", title, eid, "".join(parts))


def node_details(session: Any, key: str, node: Any) -> dict[str, Any]:
    """What the side panel shows for one drawn node: its messages as HTML, usage, models, stop reasons, ids."""
    usage = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    models: list[str] = []
    stops: dict[str, int] = {}
    parts: list[str] = []
    for i, eid in enumerate(node.entry_ids):
        entry = _digest.lookup(session, eid)
        if entry is None:
            continue
        msg = _digest.message(entry)
        if msg is not None and msg.get("role") == "assistant":
            tokens, _cost, split = _digest.usage(msg)
            usage["total"] += tokens
            for k, v in split.items():
                usage[k] += v
            ref = _digest.model_ref(msg.get("provider"), msg.get("model"))
            if ref not in models:
                models.append(ref)
            stop = str(msg.get("stopReason") or "stop")
            stops[stop] = stops.get(stop, 0) + 1
        if node.folded:
            if _digest.is_head(entry) and len(parts) < MAX_DETAIL_ENTRIES:
                parts.append(_meta_line(_digest.preview(_digest.entry_text(entry), 90), html.escape(eid)))
        elif i < MAX_DETAIL_ENTRIES:
            parts.append(entry_html(entry))
    if not node.folded and len(node.entry_ids) > MAX_DETAIL_ENTRIES:
        parts.append(f'<div class="pitv-meta">… {len(node.entry_ids) - MAX_DETAIL_ENTRIES} more entries</div>')
    if node.folded:
        parts.insert(0, f'<div class="pitv-meta">{html.escape(node.title)}: {node.entries:,} entries. Expand to see them.</div>')
    changed = summarize([d for eid in node.entry_ids for d in [_world_delta(session, eid)] if d])
    if changed:  # what the turn's tools changed in the world (variables, files)
        parts.insert(0, f'<div class="pitv-meta pitv-world">changed: {html.escape(changed)}</div>')
    scores = getattr(node, "scores", None) or {}
    if scores:  # an experiment branch's leaf: its scores first, as the tree's badge shows them
        parts.insert(0, f'<div class="pitv-meta pitv-scores">scores: {html.escape(_scores_text(scores))}</div>')
    details = {
        "kind": "node",
        "key": key,
        "nodeKind": node.kind,
        "title": node.title,
        "labels": node.labels,
        "folded": node.folded,
        "onPath": node.on_path,
        "isLeaf": node.is_leaf,
        "target": node.target_id,
        "firstId": node.first_id,
        "entryIds": node.entry_ids[:MAX_LISTED_IDS],
        "entryCount": len(node.entry_ids),
        "usage": usage,
        "cost": node.cost,
        "costText": _digest.cost_text(node.cost),
        "tokensText": _digest.tokens_text(usage["total"]),
        "models": models,
        "stopReasons": stops,
        "cell": node.cell_id,
        "executionCount": node.execution_count,
        "scores": scores,
        "changed": changed,
        "html": "".join(parts),
    }
    return json_safe(details)  # what an odd file holds must still reach the browser


def _world_delta(session: Any, eid: str) -> Any:
    entry = _digest.lookup(session, eid)
    return delta_of(entry) if isinstance(entry, dict) else None
