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
from typing import Any

from ..messages import AssistantMessage, CustomMessage, ToolResultMessage, as_message, text_of
from .highlight import markdown_html
from .playback import playback_tags
from .static_html import Notice, render_item, render_markdown
from .transcript import DEFAULT_MAX_OUTPUT

_MAX_GRAPH_NODES = 2000


def _message(raw: dict[str, Any]) -> Any | None:
    """The message shown for a raw entry (``None`` for entries a reader does not need)."""
    kind = raw.get("type")
    try:
        if kind == "message" and isinstance(raw.get("message"), dict):
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


def branch_markdown(session: Any, leaf: str | None = None, *, max_output: int = DEFAULT_MAX_OUTPUT) -> str:
    """One branch of ``session`` (default: the current one) as Markdown, with labels and summaries."""
    raws = session.raw_entries()
    parents = {r["id"]: r.get("parentId") for r in raws if isinstance(r.get("id"), str)}
    by_id = {r["id"]: r for r in raws if isinstance(r.get("id"), str)}
    labels = session.labels
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
    return render_markdown(items, title=str(title), max_output=max_output)


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


def export_html(session: Any, leaf: str | None = None, *, max_output: int = DEFAULT_MAX_OUTPUT) -> str:
    """``session`` as one self-contained HTML page: the tree, every entry, branch switching and search.

    ``leaf`` is the branch shown first (default: the current one).
    """
    raws = [r for r in session.raw_entries() if isinstance(r.get("id"), str)]
    parents = {r["id"]: r.get("parentId") for r in raws}
    labels = dict(session.labels)
    msgs = {r["id"]: _message(r) for r in raws}
    results = {m.tool_call_id: m for m in msgs.values() if isinstance(m, ToolResultMessage)}
    called = {c.id for m in msgs.values() if isinstance(m, AssistantMessage) for c in m.tool_calls if c.id in results}
    entries = "".join(_entry_html(r, msgs[r["id"]], results, called, labels.get(r["id"]), max_output) for r in raws)
    start = leaf if leaf is not None else session.leaf_id
    graph = session.graph(mode="turns", max_nodes=_MAX_GRAPH_NODES)
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
    title = html.escape(str(session.name or os.path.basename(session.path or "") or "session"))
    branch_list = "".join(
        f'<li><a href="#e-{html.escape(x)}" data-leaf="{html.escape(x)}">{html.escape(_branch_name(x, parents, msgs, labels))}</a></li>'
        for x in leaves
    )
    return _PAGE.format(
        title=title,
        meta=html.escape(f"{len(raws):,} entries · {len(leaves)} branches · session {session.id}" + (f" · {session.path or ''}")),
        tree=tree,
        branches=branch_list,
        entries=entries,
        data=json.dumps(data).replace("</", "<\\/"),
        css=_CSS,
        js=_JS,
        playback=playback_tags(raws),  # the player: its own style, data and script (views/playback.py)
    )


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


_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff;height:100vh;overflow:hidden;
  display:flex;flex-direction:column}
header{padding:.6em 1em;border-bottom:1px solid #d0d7de;display:flex;gap:1em;align-items:center;flex-wrap:wrap}
header h1{font-size:1.15em;margin:0} header .meta{opacity:.7;font-size:.85em;overflow-wrap:anywhere}
#search{margin-left:auto;padding:.3em .5em;min-width:16em}
main{display:grid;grid-template-columns:minmax(18em,38%) 1fr;flex:1;min-height:0}
#side{overflow:auto}
#tree{overflow:auto;border-right:1px solid #d0d7de;padding:.5em} #tree svg{max-width:none}
#tree g.node{cursor:pointer} #tree g.node.sel polygon,#tree g.node.sel path{stroke:#cf222e;stroke-width:3}
#side ul{padding-left:1.2em;margin:.3em 0} #hits a{display:block}
#transcript{overflow:auto;padding:.5em 1.5em;position:relative}
.entry{margin:.3em 0;padding:.2em 0;border-top:1px dashed #eaeef2}
.js .entry{display:none} .js .entry.on{display:block} .js.searching .entry.hit{display:block;background:#fff8c5}
.eid{font:11px monospace;opacity:.5} .label{background:#dafbe1;border-radius:3px;padding:0 .4em;margin-left:.5em;opacity:1;font-weight:bold}
.summary{border-left:3px solid #8250df;padding-left:.7em;background:#fbefff}
"""

_JS = """
(function(){
const D=JSON.parse(document.getElementById('pi-data').textContent);
document.body.classList.add('js');
function path(id){const out=[];const seen={};while(id&&!seen[id]&&id in D.parents){seen[id]=1;out.push(id);id=D.parents[id];}return out;}
function show(leaf,scrollTo){
  document.querySelectorAll('.entry.on').forEach(e=>e.classList.remove('on'));
  path(leaf).forEach(id=>{const e=document.getElementById('e-'+id);if(e)e.classList.add('on');});
  document.querySelectorAll('#tree g.node').forEach(g=>{const t=g.querySelector('title');const ids=t&&D.nodes[t.textContent];
    g.classList.toggle('sel',!!ids&&ids.indexOf(leaf)>=0);});
  const target=document.getElementById('e-'+(scrollTo||leaf));const pane=document.getElementById('transcript');
  if(target)pane.scrollTop=target.offsetTop-pane.offsetTop;
}
document.querySelectorAll('#tree g.node').forEach(g=>g.addEventListener('click',ev=>{ev.preventDefault();
  const t=g.querySelector('title');const ids=t&&D.nodes[t.textContent];if(ids)show(ids[ids.length-1],ids[0]);}));
document.querySelectorAll('a[data-leaf]').forEach(a=>a.addEventListener('click',ev=>{ev.preventDefault();show(a.dataset.leaf);}));
const box=document.getElementById('search'),hits=document.getElementById('hits');
box.addEventListener('input',()=>{const q=box.value.trim().toLowerCase();hits.innerHTML='';
  document.querySelectorAll('.entry.hit').forEach(e=>e.classList.remove('hit'));
  if(!q){return;}
  document.querySelectorAll('.entry').forEach(e=>{if(e.textContent.toLowerCase().includes(q)){e.classList.add('hit');
    const a=document.createElement('a');a.href='#'+e.id;const n=e.dataset.id.length;
    a.textContent=e.dataset.id+': '+e.textContent.slice(n,n+60);
    a.addEventListener('click',ev=>{ev.preventDefault();let leaf=e.dataset.id;
      for(const l of D.leaves){if(path(l).indexOf(e.dataset.id)>=0){leaf=l;break;}} show(leaf,e.dataset.id);});
    hits.appendChild(a);}});});
show(D.leaf);
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{css}</style></head>
<body><header><h1>{title}</h1><span class="meta">{meta}</span>
<input id="search" type="search" placeholder="Search every branch" aria-label="Search every branch"></header>
<main><div id="side"><div id="tree">{tree}</div><div style="padding:.5em"><strong>Branches</strong><ul>{branches}</ul>
<div id="hits"></div></div></div>
<div id="transcript">{entries}</div></main>
<script type="application/json" id="pi-data">{data}</script>
<script>{js}</script>{playback}</body></html>
"""


__all__ = ["branch_markdown", "export_html"]
