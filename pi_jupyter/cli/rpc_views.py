"""Read-only answers of ``pi-jupyter rpc``: the model, stats and tree in the shapes pi's clients expect.

Each function takes the objects it reads (a model, a session, a list of messages) and
returns plain JSON-ready dicts; nothing here changes state.
"""

from __future__ import annotations

import json
from typing import Any

from ..compaction import calculate_context_tokens, estimate_context_tokens, estimate_tokens_pi
from ..compaction.entries import latest_compaction_index
from ..providers import Model
from ..session import CycleError, Session, TreeNode
from .render import entry_summary, is_checkout_marker, visible_children

PREVIEW_CHARS = 80
"""Length of the one-line preview of each node in ``get_tree``."""


def model_to_pi(model: Model) -> dict[str, Any]:
    """pi's ``Model`` object: ``{id, name, api, provider, baseUrl, reasoning, input, cost, contextWindow, maxTokens}``.

    ``headers`` are left out (they can hold credentials) and so is ``compat`` (pi-jupyter's
    own settings, not pi's compat flags). ``baseUrl`` is left out for models without one
    (offline, replay).
    """
    out: dict[str, Any] = {"id": model.id, "name": model.name or model.id, "api": model.api, "provider": model.provider}
    if model.base_url:
        out["baseUrl"] = model.base_url
    out["reasoning"] = model.reasoning
    out["input"] = list(model.input)
    out["cost"] = {
        "input": model.cost.input,
        "output": model.cost.output,
        "cacheRead": model.cost.cache_read,
        "cacheWrite": model.cost.cache_write,
    }
    out["contextWindow"] = model.context_window
    out["maxTokens"] = model.max_tokens
    return out


def _as_dict(message: Any) -> dict[str, Any]:
    if isinstance(message, dict):
        return message
    to_dict = getattr(message, "to_dict", None)
    return to_dict() if to_dict is not None else {}


def messages_to_pi(messages: list[Any]) -> list[dict[str, Any]]:
    """Agent messages in pi's JSON shape."""
    return [_as_dict(m) for m in messages]


def user_text(content: Any) -> str:
    """pi's ``extractUserMessageText``: a string as is, else the text blocks joined with ``""``."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        b = _as_dict(block) if not isinstance(block, dict) else block
        if b.get("type") == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
    return "".join(parts)


def last_assistant_text(messages: list[Any]) -> str | None:
    """pi's ``getLastAssistantText``: the text of the last assistant message (aborted empty ones skipped), or ``None``."""
    for message in reversed(messages):
        m = _as_dict(message)
        if m.get("role") != "assistant":
            continue
        content = m.get("content") or []
        if m.get("stopReason") == "aborted" and not content:
            continue
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        return text.strip() or None
    return None


def context_usage(model: Model, session: Session, messages: list[Any]) -> dict[str, Any] | None:
    """pi's ``getContextUsage``: ``{tokens, contextWindow, percent}``; ``tokens`` is ``None`` after a
    compaction until a reply reports usage again."""
    window = model.context_window or 0
    if window <= 0:
        return None
    branch = session.raw_branch()
    compaction_at = latest_compaction_index(branch)
    if compaction_at >= 0:
        trusted = False
        for entry in reversed(branch[compaction_at + 1 :]):
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                if message.get("stopReason") not in ("aborted", "error"):
                    trusted = calculate_context_tokens(message.get("usage") or {}) > 0
                    break
        if not trusted:
            return {"tokens": None, "contextWindow": window, "percent": None}
    tokens = estimate_context_tokens(messages_to_pi(messages), estimate_tokens_pi).tokens
    return {"tokens": tokens, "contextWindow": window, "percent": tokens / window * 100}


def session_stats(model: Model, session: Session, messages: list[Any]) -> dict[str, Any]:
    """pi's ``getSessionStats``: message counts, tool calls, token totals and cost over the agent's messages."""
    dicts = messages_to_pi(messages)
    counts = {"user": 0, "assistant": 0, "toolResult": 0}
    tool_calls = 0
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for m in dicts:
        role = m.get("role")
        if role in counts:
            counts[role] += 1
        if role != "assistant":
            continue
        tool_calls += sum(1 for b in m.get("content") or () if isinstance(b, dict) and b.get("type") == "toolCall")
        usage = m.get("usage") or {}
        for key in tokens:
            tokens[key] += int(usage.get(key) or 0)
        cost += float((usage.get("cost") or {}).get("total") or 0.0)
    out: dict[str, Any] = {}
    if session.path:
        out["sessionFile"] = session.path
    out.update(
        sessionId=session.id,
        userMessages=counts["user"],
        assistantMessages=counts["assistant"],
        toolCalls=tool_calls,
        toolResults=counts["toolResult"],
        totalMessages=len(dicts),
        tokens={**tokens, "total": sum(tokens.values())},
        cost=cost,
    )
    usage = context_usage(model, session, messages)
    if usage is not None:
        out["contextUsage"] = usage
    return out


def fork_messages(session: Session) -> list[dict[str, str]]:
    """pi's ``getUserMessagesForForking``: every user message in the file (all branches) with its text."""
    out: list[dict[str, str]] = []
    for entry in session.raw_entries():
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "user":
            text = user_text(message.get("content"))
            if text:
                out.append({"entryId": entry["id"], "text": text})
    return out


def tree_json(session: Session) -> str:
    """pi 1.6's ``get_tree`` tree as JSON text: ``[{entry, children: [...], label?, labelTimestamp?}]``.

    pi's ``SessionManager.getTree``: every entry of the file (roots in file order, children
    oldest first, orphans as roots), labels resolved. Written iteratively, not with a
    recursive encoder: a linear session of n entries nests 2n deep, more than Python's
    ``json`` can encode.
    """
    parts: list[str] = ["["]
    # a stack of nodes still to write and text to write between them, popped from the end
    stack: list[TreeNode | str] = []
    for i, root in enumerate(reversed(session.tree())):
        if i:
            stack.append(",")
        stack.append(root)
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
            continue
        parts.append('{"entry":' + _dumps(item.entry) + ',"children":[')
        tail = "]"
        if item.label is not None:
            tail += ',"label":' + _dumps(item.label)
        if item.label_timestamp is not None:
            tail += ',"labelTimestamp":' + _dumps(item.label_timestamp)
        stack.append(tail + "}")
        for i, child in enumerate(reversed(item.children)):
            if i:
                stack.append(",")
            stack.append(child)
    parts.append("]")
    return "".join(parts)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tree_view(session: Session) -> dict[str, Any]:
    """``get_tree{flat: true}``, pi-jupyter's own: the session tree as flat JSON.

    ``{leafId, path, roots, nodes: [{id, type, parentId, children, ...}]}``.

    Flat (ids, not nesting) so a 100k-deep branch is no problem for any JSON parser. Nodes
    are in pi's tree order (roots in file order, children oldest first). pi-jupyter's
    checkout markers are left out: their children hang from the marker's parent, as
    ``pi-jupyter tree`` shows them. Each node: ``id``, ``type``, ``parentId`` (``null`` for a
    root), ``children`` (ids), ``timestamp``, ``preview`` (one line), ``onPath``, and when
    they apply ``role``, ``customType``, ``label``.
    """
    try:
        on_path = session.branch_ids()
    except CycleError:
        on_path = []
    path_set = set(on_path)
    nodes: list[dict[str, Any]] = []
    roots: list[str] = []
    # iterative depth-first walk; each item is (node, visible parent id)
    stack: list[tuple[TreeNode, str | None]] = [(n, None) for n in reversed(session.tree())]
    while stack:
        node, parent = stack.pop()
        if is_checkout_marker(node):
            stack.extend((c, parent) for c in reversed(node.children))
            continue
        item = _node(node, parent, node.id in path_set)
        if parent is None:
            roots.append(node.id)
        nodes.append(item)
        children, _hidden = visible_children(node)
        item["children"] = [c.id for c in children]
        stack.extend((c, node.id) for c in reversed(children))
    shown = {n["id"] for n in nodes}
    return {"leafId": session.leaf_id, "path": [i for i in on_path if i in shown], "roots": roots, "nodes": nodes}


def _node(node: TreeNode, parent: str | None, on_path: bool) -> dict[str, Any]:
    entry = node.entry
    item: dict[str, Any] = {"id": node.id, "type": node.type, "parentId": parent}
    message = entry.get("message")
    if node.type == "message" and isinstance(message, dict) and isinstance(message.get("role"), str):
        item["role"] = message["role"]
    if isinstance(entry.get("customType"), str):
        item["customType"] = entry["customType"]
    if node.label:
        item["label"] = node.label
    if isinstance(entry.get("timestamp"), str):
        item["timestamp"] = entry["timestamp"]
    item["preview"] = entry_summary(entry, PREVIEW_CHARS)
    item["onPath"] = on_path
    return item
