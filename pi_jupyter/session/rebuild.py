"""The context rebuild (pi's ``buildSessionContext``): which entries of a branch a model is given, and as what.

:func:`context_plan` makes the choices on an :class:`~.index.EntryIndex` (the latest
compaction, the entries it keeps, thinking level and model); :func:`build_context` emits the
messages of an index held in memory through :mod:`.projection` (pi 1.6's context edits and
system messages included); a streaming reader emits them one entry at a time with
:func:`~.projection.entry_messages`. :func:`context_from_path` does the same from a list of entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .index import (
    K_BRANCH_SUMMARY,
    K_COMPACTION,
    K_CUSTOM_MESSAGE,
    K_MESSAGE,
    K_MODEL,
    K_OTHER,
    K_THINKING,
    KINDS,
    EntryIndex,
    RawEntry,
    is_assistant,
)
from .projection import context_positions, project_positions


class ContextPlan(msgspec.Struct):
    """What a context rebuild takes from a branch: the context entries, thinking level and model.

    ``positions`` are index positions in emitting order (pi's ``buildContextEntries``: the
    latest compaction, the entries it keeps, everything after it); when ``compaction_head``
    the first of them is that compaction, which gives its summary (and system snapshot).
    """

    positions: list[int]
    compaction_head: bool
    thinking: Any
    model: dict[str, Any] | None

    def settings(self) -> dict[str, Any]:
        """``{thinkingLevel?, model}`` as :func:`build_context` returns them (after ``messages``)."""
        out: dict[str, Any] = {}
        if self.thinking is not None:
            out["thinkingLevel"] = self.thinking
        out["model"] = self.model
        return out


EMITTING_KINDS = frozenset({K_MESSAGE, K_CUSTOM_MESSAGE, K_BRANCH_SUMMARY, K_COMPACTION})
"""Kind codes of the entries that can give a message to a context."""


def context_plan(
    index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False, whole: Callable[[int], RawEntry] | None = None
) -> ContextPlan:
    """pi's ``buildSessionContext`` choices on the index: the context entries, thinking level and model.

    ``explicit_none`` is pi's ``leafId === null`` (checked out before the first entry). An
    unknown leaf id falls back to the last entry in the file, as pi does. Raises
    :class:`CycleError` when the branch has no root. ``whole(position)`` reads the entry
    the model comes from whole, when the index holds stubs that keep less than its model.
    """
    if explicit_none:
        return ContextPlan([], False, "off", None)
    order = index.order
    if not leaf_id or leaf_id not in index:
        if not order:
            return ContextPlan([], False, "off", None)
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
        source = order[positions[model_at]] if whole is None else whole(positions[model_at])
        if kinds[positions[model_at]] == K_MODEL:
            model = _model_ref(source, "provider", "modelId")
        else:
            model = _model_ref(source["message"], "provider", "model")
    return ContextPlan(context_positions(order, positions, compaction_at), compaction_at >= 0, thinking, model)


def build_context(index: EntryIndex, leaf_id: str | None, *, explicit_none: bool = False) -> dict[str, Any]:
    """pi's ``buildSessionContext`` on raw entries: ``{messages, thinkingLevel, model}``.

    See :func:`context_plan`. This works on the index's per-line kind codes, so a 100k-deep
    branch is rebuilt in milliseconds.
    """
    plan = context_plan(index, leaf_id, explicit_none=explicit_none)
    index.materialize(plan.positions)
    messages = project_positions(index.order, index.kinds, plan.positions, plan.compaction_head)
    return {"messages": messages, **plan.settings()}


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
    kinds = bytes(KINDS.get(etype, K_OTHER) if type(etype := e.get("type")) is str else K_OTHER for e in path)
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
