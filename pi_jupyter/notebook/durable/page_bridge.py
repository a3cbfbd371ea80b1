"""The page bridge: finished (static) ``%%pi`` outputs act on their session while its kernel lives.

A finished run replaces its live AgentView with a static rendering (DESIGN decision 6), so its
buttons ("continue from this one", "forget this") have no widget model to talk through. One
tiny invisible widget per session and kernel, :class:`PageBridge`, carries them: its ESM
(``static/page_bridge.js``) runs in anywidget's ``initialize`` (no view needed) and registers
``window.__piJupyter.bridges[sessionId]`` with the bridge's ``token``. The static output names
both (``data-pi-session``, ``data-pi-bridge``); its script acts through the bridge only when both
match, so two notebooks in one page never act on each other's kernel, and an output from before
a kernel restart (a new token) falls back to copying the ``%pi checkout ID`` / ``%pi forget ID``
command. The model is closed with the kernel; the page drops its entry when the model goes.

Why not keep each finished AgentView alive instead: that would keep every cell's transcript
in the kernel and in the page for the notebook's life; one small model per session is enough.

The kernel side (:func:`act`) runs the same code as ``%pi checkout`` and ``%pi forget`` and
answers in one line.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anywidget
import traitlets
from pydantic import BaseModel

from ...agent.agent import AgentBusyError
from ...session.report import SessionError
from .. import context_commands, world_cells

Action = Literal["checkout", "forget"]
ACTIONS: tuple[str, ...] = ("checkout", "forget")

MAX_WATCHED = 64
"""Finished outputs per session whose "not sent any more" marks the bridge keeps up to date (the most recent)."""

_TOKEN = secrets.token_hex(8)
"""One per kernel process: outputs written before a restart do not reach the new kernel's bridge."""


class ActionResult(BaseModel):
    """What the kernel answers to an action: ``ok`` and the one line the output shows."""

    ok: bool
    text: str


def act(agent: Any, action: str, target: Any, runner: Any = None) -> ActionResult:
    """Do ``action`` (``checkout`` or ``forget``) on ``target`` (an entry id) for ``agent``; never raises.

    ``checkout`` moves the session's leaf there as ``%pi checkout ID`` does (through ``runner``
    when given, the notebook's agent loop); ``forget`` drops the entry from the context as
    ``%pi forget ID`` does. Refusals (a running agent, an unknown entry, an entry that cannot
    carry content) come back as one line.
    """
    if action not in ACTIONS:
        return ActionResult(ok=False, text=f"unknown action {action!r}; expected one of {', '.join(ACTIONS)}")
    if not isinstance(target, str) or not target:
        return ActionResult(ok=False, text=f"{action}: no entry id given")
    try:
        if action == "checkout":
            if agent.is_running:
                raise AgentBusyError("the agent is running; wait for it or stop it first")
            if runner is not None:  # the coroutine is made only where it is awaited
                leaf = runner.wait(runner.submit(agent.checkout(target)), on_interrupt=agent.abort)
            else:
                leaf = agent.checkout_sync(target)
            return ActionResult(ok=True, text=f"checked out {leaf}: cells below continue from here" + world_cells.suffix(agent))
        line = context_commands.forget(agent, target)
        return ActionResult(ok=True, text=f"not sent any more: {line}")
    except (AgentBusyError, SessionError, KeyError, ValueError, RuntimeError) as exc:
        reason = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        return ActionResult(ok=False, text=f"{action} refused: {reason}")


_STATIC = Path(__file__).parent.parent / "static"
_ESM = "\n".join((_STATIC / name).read_text(encoding="utf-8") for name in ("cell_insert.js", "page_bridge.js"))
"""The bridge's module: inserting a cell (shared with the AgentView), then the bridge itself."""


class PageBridge(anywidget.AnyWidget):
    """An invisible widget through which a session's finished outputs act (see the module docstring).

    Never displayed: the page creates its model when the comm opens, and the ESM's
    ``initialize`` registers it. Messages ``{"type": "act", "rid", "action", "target",
    "token"}`` are answered with ``{"type": "acted", "rid", "ok", "text"}``.
    """

    _esm = _ESM
    session_id = traitlets.Unicode("").tag(sync=True)
    token = traitlets.Unicode("").tag(sync=True)

    def __init__(self, agent: Any, runner: Any = None, **kwargs: Any) -> None:
        """Bridge for ``agent``'s session; ``runner`` is the notebook's agent loop (``None``: run inline)."""
        self._agent = agent
        self._runner = runner
        self._outputs: deque[tuple[Any, Any]] = deque(maxlen=MAX_WATCHED)
        super().__init__(session_id=str(agent.session.id), token=_TOKEN, **kwargs)
        self.on_msg(self._on_msg)

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict) or content.get("type") != "act":
            return
        if content.get("token") != self.token:  # an output of another kernel or of before a restart
            result = ActionResult(ok=False, text="this output belongs to another kernel; copy the command instead")
        else:
            result = act(self._agent, str(content.get("action")), content.get("target"), self._runner)
            if result.ok and content.get("action") == "forget":
                self._mark_outputs(str(content.get("target")))
        self.send({"type": "acted", "rid": content.get("rid"), "ok": result.ok, "text": result.text})

    def watch(self, view: Any, handle: Any) -> None:
        """Remember a finished output (its view and display handle) to mark what is forgotten later; the last few are kept."""
        self._outputs.append((view, handle))

    def _mark_outputs(self, entry_id: str) -> None:
        # re-render the outputs that show the entry through their display ids, so the saved
        # notebook says "not sent any more" too (the page's script only marks the page)
        for view, handle in list(self._outputs):
            if view.has_entry(entry_id):
                view.mark_forgotten(entry_id)
                try:
                    handle.update(view.final_bundle(), raw=True)
                except Exception:  # noqa: BLE001 - the page is marked anyway; the session holds the edit
                    pass


_BRIDGES: dict[int, PageBridge] = {}


def bridge_for(agent: Any, runner: Any = None) -> PageBridge:
    """The bridge of ``agent``'s session in this kernel, opened on first use (one per agent)."""
    bridge = _BRIDGES.get(id(agent))
    if bridge is None or bridge.comm is None or bridge._agent is not agent:
        bridge = _BRIDGES[id(agent)] = PageBridge(agent, runner)
    return bridge


def connect_view(view: Any, agent: Any, runner: Any = None, handle: Any = None) -> Callable[[], None]:
    """Wire ``view``'s "forget this" and its static buttons to ``agent``; returns ``finish()`` for the end of the run.

    A forget asked while the agent runs is kept and done by ``finish()`` (the agent refuses
    context edits mid-run); one refused then is unmarked and said in the status line. With
    the output's display ``handle``, a later forget through the bridge re-renders the output.
    """
    bridge = bridge_for(agent, runner)
    if handle is not None:
        bridge.watch(view, handle)
    view.set_actions(bridge.session_id, bridge.token)
    deferred: list[str] = []

    def forget(entry: str) -> tuple[bool, str]:
        if agent.is_running:
            deferred.append(entry)
            return True, "will be forgotten when this run ends: the next cells do not send it (the file keeps it)"
        result = act(agent, "forget", entry)
        return result.ok, result.text

    def finish() -> None:
        for entry in deferred:
            result = act(agent, "forget", entry)
            if not result.ok:
                view.unmark_forgotten(entry)
                view.set_status(note=result.text)
        deferred.clear()

    view.on_forget(forget)
    return finish


def page_token() -> str:
    """This kernel's bridge token (what a static output names in ``data-pi-bridge``)."""
    return _TOKEN


__all__ = ["ACTIONS", "ActionResult", "PageBridge", "act", "bridge_for", "connect_view", "page_token"]
