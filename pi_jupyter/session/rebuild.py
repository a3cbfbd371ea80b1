"""The context rebuild (pi's ``buildSessionContext``): which entries of a branch a model is given, and as what.

:func:`context_plan` makes the choices on an :class:`~.index.EntryIndex` (the latest
compaction, the kept range, thinking level and model); :func:`build_context` emits the
messages of an index held in memory; a streaming reader emits them one entry at a time
with :func:`entry_messages`. :func:`context_from_path` does the same from a list of entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .index import (
    K_BRANCH_SUMMARY,
    K_COMPACTION,
    K_CUSTOM_MESSAGE,
    K_MESSAGE,
    K_MODEL,
    K_THINKING,
    EntryIndex,
    RawEntry,
    js_date_ms,
)

_MISSING: Any = object()


def _is_assistant(entry: RawEntry) -> bool:
    message = entry.get("message")
    return type(message) is dict and message.get("role") == "assistant"


@dataclass
class ContextPlan:
    """What a context rebuild takes from a branch: its settings, a compaction summary, and which entries to emit.

    ``positions`` are index positions in emitting order (the kept entries before the latest
    compaction, then everything after it); only message, custom-message and branch-summary
    entries among them give messages. A reader that holds entries elsewhere (on disk) can emit
    them one at a time with :func:`entry_messages`.
    """

    positions: list[int]
    summary: dict[str, Any] | None
    thinking: Any
    model: dict[str, Any] | None

    def settings(self) -> dict[str, Any]:
        """``{thinkingLevel?, model}`` as :func:`build_context` returns them (after ``messages``)."""
        out: dict[str, Any] = {}
        if self.thinking is not None:
            out["thinkingLevel"] = self.thinking
        out["model"] = self.model
        return out


EMITTING_KINDS = frozenset({K_MESSAGE, K_CUSTOM_MESSAGE, K_BRANCH_SUMMARY})
"""Kind codes of the entries that can give a message to a context."""


def context_plan(index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False) -> ContextPlan:
    """pi's ``buildSessionContext`` choices on the index: the latest compaction, the kept range, thinking, model.

    ``explicit_none`` is pi's ``leafId === null`` (checked out before the first entry). An
    unknown leaf id falls back to the last entry in the file, as pi does. Raises
    :class:`CycleError` when the branch has no root.
    """
    if explicit_none:
        return ContextPlan([], None, "off", None)
    order = index.order
    if not leaf_id or leaf_id not in index.by_id:
        if not order:
            return ContextPlan([], None, "off", None)
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
        elif kind == K_MODEL or (kind == K_MESSAGE and model_at < 0 and _is_assistant(order[positions[j]])):
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
    if compaction_at < 0:
        return ContextPlan(positions, None, thinking, model)
    compaction = order[positions[compaction_at]]
    first_kept = compaction.get("firstKeptEntryId", _MISSING)
    kept_from = compaction_at
    for j in range(compaction_at):
        if order[positions[j]]["id"] == first_kept:
            kept_from = j
            break
    emitted = positions[kept_from:compaction_at] + positions[compaction_at + 1 :]
    return ContextPlan(emitted, _compaction_summary(compaction), thinking, model)


def build_context(index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False) -> dict[str, Any]:
    """pi's ``buildSessionContext`` on raw entries: ``{messages, thinkingLevel, model}``.

    See :func:`context_plan`. This works on the index's per-line kind codes, so a 100k-deep
    branch is rebuilt in milliseconds.
    """
    plan = context_plan(index, leaf_id, explicit_none=explicit_none)
    messages: list[dict[str, Any]] = [plan.summary] if plan.summary is not None else []
    _emit_positions(index.order, index.kinds, plan.positions, messages)
    return {"messages": messages, **plan.settings()}


def entry_messages(entry: RawEntry) -> list[dict[str, Any]]:
    """The messages one entry gives a context (none, or one), as the rebuild emits them."""
    out: list[dict[str, Any]] = []
    _emit(entry, out)
    return out


def _emit_positions(order: list[RawEntry], kinds: bytearray, positions: list[int], out: list[dict[str, Any]]) -> None:
    add = out.append
    for i in positions:
        kind = kinds[i]
        if kind == K_MESSAGE:
            message = order[i].get("message", _MISSING)
            if message is not _MISSING:
                add(message)
        elif kind == K_CUSTOM_MESSAGE or kind == K_BRANCH_SUMMARY:
            _emit(order[i], out)


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
    messages: list[dict[str, Any]] = []
    if compaction is not None:
        messages.append(_compaction_summary(compaction))
        first_kept = compaction.get("firstKeptEntryId", _MISSING)
        keeping = False
        for entry in path[:compaction_at]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping:
                _emit(entry, messages)
        for entry in path[compaction_at + 1 :]:
            _emit(entry, messages)
    else:
        for entry in path:
            _emit(entry, messages)
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


def _compaction_summary(compaction: RawEntry) -> dict[str, Any]:
    summary: dict[str, Any] = {"role": "compactionSummary"}
    if "summary" in compaction:
        summary["summary"] = compaction["summary"]
    if "tokensBefore" in compaction:
        summary["tokensBefore"] = compaction["tokensBefore"]
    summary["timestamp"] = js_date_ms(compaction.get("timestamp"))
    return summary


def _emit(entry: RawEntry, out: list[dict[str, Any]]) -> None:
    kind = entry.get("type")
    if kind == "message":
        if "message" in entry:
            out.append(entry["message"])
    elif kind == "custom_message":
        msg: dict[str, Any] = {"role": "custom"}
        for key in ("customType", "content", "display", "details"):
            if key in entry:
                msg[key] = entry[key]
        msg["timestamp"] = js_date_ms(entry.get("timestamp"))
        out.append(msg)
    elif kind == "branch_summary" and entry.get("summary"):
        msg = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            msg["fromId"] = entry["fromId"]
        msg["timestamp"] = js_date_ms(entry.get("timestamp"))
        out.append(msg)
