"""Context rebuild: pi's ``buildSessionContext`` over the index or over a root-first path of raw entries.

The walk finds the thinking level, model and latest compaction on the path; :mod:`.projection`
turns the entries it keeps into messages (pi 1.6's context edits and system messages included).
"""

from __future__ import annotations

from typing import Any

from .index import K_COMPACTION, K_MESSAGE, K_MODEL, K_OTHER, K_THINKING, KINDS, EntryIndex, RawEntry, is_assistant
from .projection import context_positions, project_positions


def build_context(index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False) -> dict[str, Any]:
    """pi's ``buildSessionContext`` on raw entries: ``{messages, thinkingLevel, model}``.

    ``explicit_none`` is pi's ``leafId === null`` (checked out before the first entry). An
    unknown leaf id falls back to the last entry in the file, as pi does. This works on the
    index's per-line kind codes, so a 100k-deep branch is rebuilt in milliseconds.
    """
    if explicit_none:
        return {"messages": [], "thinkingLevel": "off", "model": None}
    order = index.order
    if not leaf_id or leaf_id not in index.by_id:
        if not order:
            return {"messages": [], "thinkingLevel": "off", "model": None}
        # the last entry, walked by position: its id may be "", which names no leaf (as in pi)
        positions = index.path_positions_from(len(order) - 1)
    else:
        positions = index.path_positions(leaf_id)
    kinds = index.kinds
    thinking_at = model_at = compaction_at = -1
    # the last thinking change, model source and compaction on the path win: look backwards
    for j in range(len(positions) - 1, -1, -1):
        kind = kinds[positions[j]]
        if kind == K_THINKING:
            if thinking_at < 0:
                thinking_at = j
        elif kind == K_MODEL or (kind == K_MESSAGE and model_at < 0 and is_assistant(order[positions[j]])):
            if model_at < 0:
                model_at = j
        elif kind == K_COMPACTION:
            if compaction_at < 0:
                compaction_at = j
        else:
            continue
        if thinking_at >= 0 and model_at >= 0 and compaction_at >= 0:
            break
    thinking: Any = "off" if thinking_at < 0 else order[positions[thinking_at]].get("thinkingLevel")
    model: dict[str, Any] | None = None
    if model_at >= 0:
        source = order[positions[model_at]]
        if kinds[positions[model_at]] == K_MODEL:
            model = _model_ref(source, "provider", "modelId")
        else:
            model = _model_ref(source["message"], "provider", "model")
    messages = project_positions(order, kinds, context_positions(order, positions, compaction_at), compaction_at >= 0)
    ctx: dict[str, Any] = {"messages": messages}
    if thinking is not None:
        ctx["thinkingLevel"] = thinking
    ctx["model"] = model
    return ctx


def context_from_path(path: list[RawEntry]) -> dict[str, Any]:
    """The context for a root-first path of raw entries (what :func:`build_context` computes from the index)."""
    thinking: Any = "off"
    model: dict[str, Any] | None = None
    compaction: RawEntry | None = None
    compaction_at = -1
    for i, entry in enumerate(path):
        kind = entry.get("type")
        if kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model = _model_ref(message, "provider", "model")
        elif kind == "thinking_level_change":
            thinking = entry.get("thinkingLevel")
        elif kind == "model_change":
            model = _model_ref(entry, "provider", "modelId")
        elif kind == "compaction":
            compaction, compaction_at = entry, i
    kinds = bytes(KINDS.get(e.get("type"), K_OTHER) if type(e.get("type")) is str else K_OTHER for e in path)
    messages = project_positions(path, kinds, context_positions(path, list(range(len(path))), compaction_at), compaction is not None)
    ctx: dict[str, Any] = {"messages": messages}
    if thinking is not None:
        ctx["thinkingLevel"] = thinking
    ctx["model"] = model
    return ctx


def _model_ref(source: RawEntry, provider_key: str, model_key: str) -> dict[str, Any]:
    # pi builds {provider, modelId} from the fields; an absent field is left out of the JSON
    ref: dict[str, Any] = {}
    if provider_key in source:
        ref["provider"] = source[provider_key]
    if model_key in source:
        ref["modelId"] = source[model_key]
    return ref
