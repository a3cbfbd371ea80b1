"""The notebook since the agent's last turn, as the ``custom_message`` recorded before a ``%%pi`` prompt (DESIGN 16).

:func:`notebook_message` looks at the branch the cell starts from to find what the agent was
last told: the notebook context of the turn it starts from (its ``details`` name the kernel
and the last cell it covered), else the time of that turn's prompt. The cells the kernel ran
after that (:mod:`.cell_log`), less the agent's own cells and those marked ``# pi: skip``, are
written newest-first into a budget of characters: the newest in full, older ones shorter, the
oldest as one line each (the ``notebook`` tool reads any of them whole). Images displayed by
those cells are attached (newest first, up to a number), and named where they are not.

Because the start is the cell's own start node, a re-run (a sibling) is told what ran since the
turn it starts from, a grid's branches share one record made at the grid's start, and a
checkout or a replay never carries another branch's record along: what the model was told is
part of the branch it was told on.

When the turn the branch ended with was made in another kernel (a restart, or a conversation
opened from a file), the message begins by saying so, with the variables the branch's world
expects and which of them the kernel does not hold.

The text is redacted once, as a whole (every cut falls between lines, so a secret is kept
whole or left out, and the redaction finds it); ``details`` hold numbers, ids and exception
type names only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ..agent.redact import redact_typed
from ..messages import CustomMessage, ImageContent, TextContent
from ..messages.notebook_context import NOTEBOOK_CONTEXT_HEAD, NOTEBOOK_CONTEXT_TYPE
from ..messages.text import ms_from_iso
from .cell_log import CellLog, CellRecord
from .cell_text import ImageBudget, Level, Rendered, number_images, render_cell

__all__ = ["ContextBudget", "Since", "for_cell", "last_told", "notebook_message", "restart_facts"]

NOTE = (
    "The user ran these cells in the notebook's kernel since your last turn, oldest first; long code and output are cut"
    "{tool}. They are context for the request that follows, not a request themselves."
)
TOOL_NOTE = " (the `notebook` tool reads a whole cell, lists older ones and describes the variables)"


@dataclass(frozen=True)
class ContextBudget:
    """How much of the notebook one turn is told: characters of text, images attached, and the largest image."""

    chars: int = 24_000
    images: int = 4
    image_chars: int = 3_000_000
    """Base64 characters of the largest image attached (about 2.2 MB)."""


@dataclass
class Since:
    """Which cells the next turn is told of: after kernel seq ``seq``, or after time ``after``.

    ``changed``: the last turn was made in another kernel; ``had_turn``: the branch has a turn before.
    """

    seq: int = 0
    after: float | None = None
    changed: bool = False
    had_turn: bool = False


def _is_record(entry: dict[str, Any]) -> bool:
    return entry.get("type") == "custom_message" and entry.get("customType") == NOTEBOOK_CONTEXT_TYPE


def _is_user(entry: dict[str, Any]) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user"


def last_told(session: Any, start: str | None, log: CellLog) -> Since:
    """What the turn starting at ``start`` was last told (see the module docstring); walks back one turn at most."""
    eid = start
    for _ in range(100_000):
        if not isinstance(eid, str) or not eid or eid not in session:
            break
        entry = session.raw_entry(eid)
        if _is_record(entry):
            details = entry.get("details") if isinstance(entry.get("details"), dict) else {}
            if details.get("kernel") == log.kernel and isinstance(details.get("upTo"), int):
                return Since(seq=details["upTo"], had_turn=True)
            return Since(changed=True, had_turn=True)
        if _is_user(entry):
            record = _record_before(session, entry)
            if record is not None:
                eid = record
                continue
            # a turn told nothing of the notebook (the feature was off, or another program wrote it): its time says
            ms = ms_from_iso(entry.get("timestamp"))
            if ms is None or ms / 1000 < log.started:
                return Since(changed=True, had_turn=True)
            return Since(after=ms / 1000, had_turn=True)
        eid = entry.get("parentId")
    return Since()


_BETWEEN = frozenset({"custom", "label", "model_change", "thinking_level_change", "session_info"})


def _record_before(session: Any, entry: dict[str, Any]) -> str | None:
    """The notebook context a prompt was sent with: just above it, past settings and records (a grid's variant)."""
    eid = entry.get("parentId")
    for _ in range(64):
        if not isinstance(eid, str) or not eid or eid not in session:
            return None
        above = session.raw_entry(eid)
        if _is_record(above):
            return eid
        if above.get("type") not in _BETWEEN and not (
            above.get("type") == "message" and (above.get("message") or {}).get("role") == "system"
        ):
            return None
        eid = above.get("parentId")
    return None


@dataclass
class _Parts:
    chunks: list[str] = field(default_factory=list)
    images: list[ImageContent] = field(default_factory=list)
    cells: list[dict[str, Any]] = field(default_factory=list)


def notebook_message(
    log: CellLog,
    session: Any,
    start: str | None,
    *,
    budget: ContextBudget | None = None,
    has_tool: bool = True,
    restart: dict[str, Any] | None = None,
    since: Since | None = None,
) -> CustomMessage | None:
    """The notebook context for a turn starting at ``start``, or ``None`` when there is nothing to tell.

    ``restart`` (from :func:`restart_facts`) is what to say when the last turn was made in another
    kernel; ``since`` is :func:`last_told`'s answer when the caller has it.
    """
    budget = budget or ContextBudget()
    since = since or last_told(session, start, log)
    records = log.since(since.seq, since.after)
    told = [r for r in records if r.told]
    skipped = sum(1 for r in records if r.skipped)
    changed = since.changed
    if not told and not changed:
        return None
    parts = _Parts()
    rendered = _render(told, budget, parts)
    errors = sum(1 for r in told if r.error)
    images = len(parts.images)
    head = [f"{len(told)} cell{'s' if len(told) != 1 else ''}"]
    if changed:
        head.insert(0, "kernel restarted")
    if errors:
        head.append(f"{errors} error{'s' if errors != 1 else ''}")
    if images:
        head.append(f"{images} image{'s' if images != 1 else ''}")
    if skipped:
        head.append(f"{skipped} kept out")
    lines = [f"{NOTEBOOK_CONTEXT_HEAD} {', '.join(head)}", ""]
    if changed:
        lines += [_restart_text(restart or {}), ""]
    if told:
        lines += [NOTE.format(tool=TOOL_NOTE if has_tool else ""), "", rendered]
    if skipped:
        lines += ["", f"({skipped} cell{'s' if skipped != 1 else ''} kept out by the user with `# pi: skip`.)"]
    text = redact_typed("\n".join(lines).rstrip("\n"))
    content: list[Any] = [TextContent(text=text), *parts.images]
    details: dict[str, Any] = {
        "kernel": log.kernel,
        "upTo": log.current_seq,
        "cells": parts.cells,
        "errors": errors,
        "images": images,
        "skipped": skipped,
        "chars": len(text),
    }
    if changed:
        details["kernelChanged"] = True
        details["restart"] = {k: v for k, v in (restart or {}).items() if k in ("expected", "missing", "files_missing")}
    return CustomMessage(custom_type=NOTEBOOK_CONTEXT_TYPE, content=content, display=True, details=details)


def _render(told: list[CellRecord], budget: ContextBudget, parts: _Parts) -> str:
    """The cells within the budget: every cell as one line first (the oldest left out when even those do not
    fit half of it), then, newest first, each made whole, else short, where the rest of the budget allows
    (after three cells in a row that fit neither, the budget is spent)."""
    lines = [render_cell(r, "line") for r in told]
    used = sum(len(r.text) + 2 for r in lines)
    first = 0
    while first < len(told) and used > budget.chars // 2:
        used -= len(lines[first].text) + 2
        first += 1
    chosen: list[tuple[Rendered, str]] = [(r, "line") for r in lines[first:]]
    left = budget.chars - used
    pictures = ImageBudget(budget.images, budget.image_chars)
    misses = 0
    for i in range(len(chosen) - 1, -1, -1):
        if misses >= 3:
            break  # the budget is spent: the older cells stay one line each
        record = told[first + i]
        line = chosen[i][0]
        misses += 1
        levels: tuple[Level, ...] = ("full", "short")
        for level in levels:
            trial = pictures.copy()
            done = render_cell(record, level, images=trial)
            if len(done.text) - len(line.text) <= left:
                left -= len(done.text) - len(line.text)
                chosen[i] = (done, level)
                pictures = trial
                misses = 0
                break
    text_parts = [f"[{first} earlier cell{'s' if first != 1 else ''} left out (over the notebook budget)]"] if first else []
    for (rendered, shown), record in zip(chosen, told[first:], strict=True):
        text_parts.append(rendered.text)
        parts.cells.append(_cell_details(record, shown, len(rendered.images)))
        parts.images.extend(ImageContent(mime_type=mime, data=data) for mime, data in rendered.images)
    return number_images("\n\n".join(text_parts))


def _cell_details(record: CellRecord, level: str, images: int) -> dict[str, Any]:
    item: dict[str, Any] = {"seq": record.seq, "shown": level}
    if record.count is not None:
        item["n"] = record.count
    if record.cell_id:
        item["id"] = record.cell_id
    if record.error:
        item["error"] = record.error.split(":", 1)[0].strip()[:80]  # the exception's type: no message, no secret
    if images:
        item["images"] = images
    return item


def restart_facts(session: Any, start: str | None, namespace: dict[str, Any], cwd: str, world_line: str = "") -> dict[str, Any]:
    """What a turn after a kernel change is told of its branch's world: the names it expects and which the kernel lacks."""
    from ..world import world_at

    facts: dict[str, Any] = {"world_line": world_line}
    try:
        variables, files = world_at(session, start)
    except Exception:  # noqa: BLE001 - a record that cannot be read: say nothing of the world
        return facts
    expected = sorted(k for k, v in variables.items() if v is not None)
    facts["expected"] = expected
    facts["missing"] = [k for k in expected if k not in namespace]
    written = sorted(k for k, v in files.items() if v is not None)
    facts["files_missing"] = [f for f in written if not os.path.exists(f if os.path.isabs(f) else os.path.join(cwd, f))]
    return facts


def _restart_text(facts: dict[str, Any]) -> str:
    lines = [
        "The kernel is not the one your last turn on this branch ran in: it was restarted, or this conversation was opened"
        " in a new kernel. Variables and imports from before are gone unless restored, and cell numbers started again at In[1]."
    ]
    expected = facts.get("expected") or []
    missing = facts.get("missing") or []
    if expected:
        lines.append(f"Variables your branch's tools set: {_names(expected)}.")
        held = [n for n in expected if n not in missing]
        if held:
            lines.append(f"The kernel holds them again: {_names(held)}.")
        if missing:
            lines.append(f"Not in the kernel now (run the cells that make them, or make them again): {_names(missing)}.")
    if facts.get("files_missing"):
        lines.append(f"Files your branch's tools wrote that are missing now: {_names(facts['files_missing'])}.")
    if facts.get("world_line"):
        lines.append(f"Restoring the branch's world said: {facts['world_line']}.")
    return " ".join(lines)


def _names(names: list[str], limit: int = 30) -> str:
    shown = ", ".join(f"`{n}`" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def for_cell(magics: Any, agent: Any, start: str | None, *, off: bool = False, world_line: str = "") -> list[CustomMessage]:
    """The notebook context of a ``%%pi`` cell starting at ``start``: ``[]`` when off (``--no-notebook``, the setting) or nothing new."""
    log = getattr(magics.state, "cell_log", None)
    if off or not getattr(magics, "notebook_context", True) or not isinstance(log, CellLog):
        return []
    budget = ContextBudget(chars=magics.notebook_chars, images=magics.notebook_images)
    since = last_told(agent.session, start, log)
    restart = None
    if since.changed:
        restart = restart_facts(agent.session, start, magics.state.namespace, agent.cwd, world_line)
    has_tool = any(getattr(t, "name", None) == "notebook" for t in agent.tools)
    message = notebook_message(log, agent.session, start, budget=budget, has_tool=has_tool, restart=restart, since=since)
    return [message] if message is not None else []
