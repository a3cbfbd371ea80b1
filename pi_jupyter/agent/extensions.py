"""Extensions: observe, intercept and rewrite what the agent does, through the same event stream.

An extension is any object or module with some of these hooks (all optional, sync or async;
``ctx`` is an :class:`ExtensionContext`):

``setup(ctx)``
    Called once when registered. Rebuild private state from ``ctx.entries(...)``: the
    ``custom`` entries this extension wrote earlier, so state survives a kernel restart.
``on_event(event, ctx)``
    Every agent event (observe only).
``on_input(text, ctx)``
    The user's prompt before anything else: return a new string to transform it, or
    :data:`HANDLED` to consume it (no model call).
``before_prompt(text, ctx)``
    Return messages to send along with the prompt (a string, a
    :class:`~pi_jupyter.messages.CustomMessage`, or a list of them): they are stored as
    ``custom_message`` entries and the model sees them (pi's ``before_agent_start``).
``transform_context(messages, ctx)``
    The messages of each model call before ``convert_to_llm`` (pi's ``context``): return a
    new list to prune or inject. Do not modify the given messages in place.
``before_tool_call(call, ctx)``
    Return :class:`~pi_jupyter.agent.loop.ToolDecision` to block a call (with a reason the
    model sees) or to change its arguments.
``after_tool_call(call, ctx)``
    Return a :class:`~pi_jupyter.agent.tools.ToolResult` to replace the result.
``before_compact(request, ctx)`` / ``before_checkout(request, ctx)``
    Return :data:`CANCEL` to stop a compaction or a summarized checkout, or a string to use
    as the summary instead of asking the model (stored with ``fromHook: true``). Compaction
    asks for manual and automatic compactions alike; its request is ``{reason: "manual" |
    "threshold" | "overflow", instructions, preparation}`` (the
    :class:`~pi_jupyter.compaction.CompactionPreparation`: what would be summarized and
    kept). A summarized checkout's request is ``{target, instructions, label, entries,
    commonAncestorId}`` (``entries``: the entries of the branch being left).
``tools()``
    Tools this extension adds.

Private state goes into ``custom`` entries with ``ctx.append_entry(custom_type, data)``: kept
in the session file, never sent to the model. ``ctx.send_message(custom_type, content,
display=True)`` writes a ``custom_message``, which the model does see, on purpose.

A hook that raises becomes an ``extension_error`` event naming the extension and the hook (the
one line the user sees). An *observer* (``setup``, ``on_event``, ``before_prompt``, ``tools``)
fails open: the run goes on as if it were not there. A *guard*, a hook whose answer can stop or
narrow what runs or what is sent (``on_input``, ``transform_context``, ``before_tool_call``,
``after_tool_call``, ``before_compact``, ``before_checkout``), fails closed: the prompt or the
request is not sent, the tool call is refused, the tool's output is withheld from the model, the
compaction or summarized checkout does not happen; the model (or the caller) is told which
extension failed and how, and the run goes on where it can. A guard with a bug never lets
through what it was written to stop. Extensions are registered in code
(``agent.extensions.add(obj)``), by the entry point group ``pi_jupyter.extensions``
(``agent.extensions.load_entry_points()``), or from a notebook (``%pi ext load MODULE``).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from ..messages import CustomMessage
from .events import EntryAppendedEvent, ExtensionErrorEvent, MessageEndEvent, MessageStartEvent
from .run_context import RunContext

ENTRY_POINT_GROUP = "pi_jupyter.extensions"

HANDLED = object()
"""Returned by ``on_input``: the input was dealt with; the agent does not call the model."""

CANCEL = object()
"""Returned by ``before_compact`` / ``before_checkout``: do not compact / do not move."""


class GuardError(RuntimeError):
    """A guard hook raised, so what it guards does not happen (see the module's docstring)."""

    def __init__(self, extension: str, hook: str, error: str, outcome: str) -> None:
        self.extension, self.hook, self.error = extension, hook, error
        super().__init__(f"extension {extension}'s {hook} failed ({error}): {outcome}")


GUARD_HOOKS = ("on_input", "transform_context", "before_tool_call", "after_tool_call", "before_compact", "before_checkout")
"""Hooks that fail closed: their answer can stop or narrow what runs or what is sent."""

HOOKS = (
    "setup",
    "on_event",
    "on_input",
    "before_prompt",
    "transform_context",
    "before_tool_call",
    "after_tool_call",
    "before_compact",
    "before_checkout",
    "tools",
)


def extension_name(ext: Any) -> str:
    """The name an extension is listed under (its ``name``/``NAME``, else its module or class)."""
    for attr in ("name", "NAME"):
        value = getattr(ext, attr, None)
        if isinstance(value, str) and value:
            return value
    if isinstance(ext, ModuleType):
        return ext.__name__
    return f"{type(ext).__module__}.{type(ext).__qualname__}"


class ExtensionContext:
    """What a hook may use: the agent, its session, the notebook namespace, and state helpers."""

    def __init__(self, manager: ExtensionManager, ext: Any) -> None:
        self._manager = manager
        self._ext = ext

    @property
    def agent(self) -> Any:
        """The :class:`~pi_jupyter.agent.Agent` the extension is registered with."""
        return self._manager.agent

    @property
    def session(self) -> Any:
        """The agent's :class:`~pi_jupyter.session.Session`."""
        return self._manager.run.session

    @property
    def namespace(self) -> dict[str, Any] | None:
        """The notebook's user namespace, when the agent runs in a notebook."""
        return self._manager.namespace()

    def append_entry(self, custom_type: str, data: Any = None) -> str:
        """Persist private state as a ``custom`` entry (never seen by the model); returns its id.

        Written at the current leaf. It does not change the context; like pi's ``custom``
        entries it is a tree node, so prefer few, meaningful entries.
        """
        entry_id = self.session.append_custom(custom_type, data)
        self._manager.run.emit(EntryAppendedEvent(entry=self.session.raw_entry(entry_id)))  # pi 1.6's event
        return entry_id

    def entries(self, custom_type: str | None = None, *, branch: bool = True) -> list[Any]:
        """The ``data`` of ``custom`` entries of ``custom_type`` (all types when ``None``).

        ``branch=True`` (default) looks at the current branch only, so state follows the tree
        when the user checks out another node; ``False`` reads the whole file.
        """
        raw = self.session.raw_branch() if branch else self.session.raw_entries()
        return [e.get("data") for e in raw if e.get("type") == "custom" and (custom_type is None or e.get("customType") == custom_type)]

    def send_message(self, custom_type: str, content: Any, *, display: bool = True, details: Any = None) -> None:
        """Put a message the model sees into the conversation (a ``custom_message`` entry).

        During a run it is delivered before the next model call (like steering); otherwise it
        is appended now and the next prompt carries it. ``display`` says whether views show it.
        """
        message = CustomMessage(custom_type=custom_type, content=content, display=display, details=details)
        run = self._manager.run
        if run.is_running:
            run.queue_steering(message)
            return
        run.emit(MessageStartEvent(message=message))
        run.messages.append(message)
        run.emit(MessageEndEvent(message=message))


_ADVERTISED: tuple[tuple[tuple[str, int], ...], list[Any]] | None = None
_ADVERTISED_LOCK = threading.Lock()


def _path_state() -> tuple[tuple[str, int], ...]:
    """Each import folder with its modification time: an install or a new folder on the path changes it."""
    state = []
    for folder in sys.path:
        try:
            state.append((folder, os.stat(folder or ".").st_mtime_ns))
        except OSError:
            continue
    return tuple(state)


def advertised_extensions() -> list[Any]:
    """The entry points of the ``pi_jupyter.extensions`` group, read again only when the installed packages changed.

    Reading them walks the metadata of every installed distribution (tens of milliseconds in a
    large environment): a kernel pays that once, not for every session it opens, and again after
    a ``%pip install`` (which changes the folder it installs into).
    """
    global _ADVERTISED
    state = _path_state()
    with _ADVERTISED_LOCK:  # a prefetch may be reading them: wait for it rather than read twice
        if _ADVERTISED is None or _ADVERTISED[0] != state:
            from importlib.metadata import entry_points

            _ADVERTISED = (state, list(entry_points(group=ENTRY_POINT_GROUP)))
        return _ADVERTISED[1]


def prefetch_advertised_extensions() -> None:
    """Read the advertised extensions in a background thread (``%load_ext`` does, so the first cell finds them read)."""
    threading.Thread(target=advertised_extensions, name="pi-jupyter-extensions", daemon=True).start()


class ExtensionManager:
    """The extensions of one agent, and the code that calls their hooks safely.

    ``run`` is what the manager uses of the agent (publish an event, queue a steering
    message); ``agent`` is the object hooks see as ``ctx.agent``.
    """

    def __init__(self, run: RunContext, agent: Any = None) -> None:
        self.run = run
        self.agent: Any = agent if agent is not None else run  # the Agent itself in practice: hooks see all of it
        self._items: list[tuple[str, Any, ExtensionContext]] = []

    def __iter__(self) -> Iterator[Any]:
        return iter(ext for _, ext, _ in self._items)

    def namespace(self) -> dict[str, Any] | None:
        """The notebook's user namespace of the agent (``None`` outside a notebook)."""
        extra = getattr(self.agent, "tool_extra", None)
        return extra.get("namespace") if isinstance(extra, dict) else None

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        """Names of the registered extensions, in call order."""
        return [name for name, _, _ in self._items]

    def add(self, ext: Any, *, name: str | None = None) -> Any:
        """Register an extension object, a module, or a module name (``"pkg.mod"``); returns it.

        A module name is imported; if the module has ``extension`` (an object) or
        ``make_extension()`` (a factory), that is registered, else the module itself.
        """
        if isinstance(ext, str):
            ext = _from_module(importlib.import_module(ext))
        label = name or extension_name(ext)
        if label in self.names():
            raise ValueError(f"an extension named {label!r} is already registered")
        if not any(callable(getattr(ext, hook, None)) for hook in HOOKS):
            raise TypeError(f"{label!r} has none of the extension hooks ({', '.join(HOOKS)})")
        ctx = ExtensionContext(self, ext)
        self._items.append((label, ext, ctx))
        setup = getattr(ext, "setup", None)
        if callable(setup):
            self._call_sync(label, "setup", setup, ctx)
        return ext

    def remove(self, name: str) -> None:
        """Unregister the extension called ``name``."""
        before = len(self._items)
        self._items = [item for item in self._items if item[0] != name]
        if len(self._items) == before:
            raise KeyError(f"no extension named {name!r} (registered: {', '.join(self.names()) or 'none'})")

    def load_entry_points(self) -> list[str]:
        """Register every extension advertised in the ``pi_jupyter.extensions`` entry point group.

        Returns the names registered. A plugin that cannot be imported, built or registered
        (no hooks) is reported as an ``extension_error`` event (hook ``"load"``) and skipped.
        """
        loaded: list[str] = []
        for ep in advertised_extensions():
            if ep.name in self.names():
                continue
            try:
                target = ep.load()
                obj = _from_module(target) if isinstance(target, ModuleType) else (target() if inspect.isclass(target) else target)
                self.add(obj, name=ep.name)
            except Exception as exc:  # noqa: BLE001 - a broken plugin must not stop the agent (or the notebook)
                self._error(ep.name, "load", exc)
                continue
            loaded.append(ep.name)
        return loaded

    # ------------------------------------------------------------ calling hooks

    def _error(self, name: str, hook: str, exc: BaseException) -> None:
        self.run.emit(ExtensionErrorEvent(extension_path=name, event=hook, error=f"{type(exc).__name__}: {exc}"))

    def _call_sync(self, name: str, hook: str, fn: Any, *args: Any) -> Any:
        try:
            out = fn(*args)
            if inspect.isawaitable(out):
                # a coroutine from a sync call site: run it to completion where we are
                try:
                    asyncio.get_running_loop()
                except RuntimeError:
                    return asyncio.run(_await(out))
                task = asyncio.ensure_future(out)

                def report(t: asyncio.Future[Any]) -> None:
                    error = None if t.cancelled() else t.exception()
                    if error is not None:
                        self._error(name, hook, error)

                task.add_done_callback(report)
                return None
            return out
        except Exception as exc:  # noqa: BLE001 - reported as extension_error
            self._error(name, hook, exc)
            return None

    async def _guard(self, name: str, hook: str, fn: Any, *args: Any, outcome: str) -> Any:
        """Call a guard hook: its failure is reported once and raised as :class:`GuardError` (fail closed)."""
        try:
            out = fn(*args)
            if inspect.isawaitable(out):
                out = await out
            return out
        except Exception as exc:  # noqa: BLE001 - reported, then refused
            self._error(name, hook, exc)
            raise GuardError(name, hook, f"{type(exc).__name__}: {exc}", outcome) from None

    async def _call(self, name: str, hook: str, fn: Any, *args: Any) -> Any:
        try:
            out = fn(*args)
            if inspect.isawaitable(out):
                out = await out
            return out
        except Exception as exc:  # noqa: BLE001 - reported as extension_error
            self._error(name, hook, exc)
            return None

    def _with(self, hook: str) -> Iterable[tuple[str, Any, ExtensionContext]]:
        for name, ext, ctx in list(self._items):
            fn = getattr(ext, hook, None)
            if callable(fn):
                yield name, fn, ctx

    def on_event(self, event: Any) -> None:
        """Hand ``event`` to every ``on_event`` hook (extension errors are not re-dispatched)."""
        if not self._items or isinstance(event, ExtensionErrorEvent):
            return
        for name, fn, ctx in self._with("on_event"):
            self._call_sync(name, "on_event", fn, event, ctx)

    async def on_input(self, text: str) -> Any:
        """Chain the ``on_input`` hooks; returns the text, or :data:`HANDLED` (a failing one: :class:`GuardError`, nothing is sent)."""
        for name, fn, ctx in self._with("on_input"):
            out = await self._guard(name, "on_input", fn, text, ctx, outcome="the prompt was not sent")
            if out is HANDLED:
                return HANDLED
            if isinstance(out, str):
                text = out
        return text

    async def before_prompt(self, text: str) -> list[Any]:
        """Messages the ``before_prompt`` hooks want sent with the prompt."""
        extra: list[Any] = []
        for name, fn, ctx in self._with("before_prompt"):
            out = await self._call(name, "before_prompt", fn, text, ctx)
            for item in out if isinstance(out, (list, tuple)) else ([out] if out is not None else []):
                if isinstance(item, str):
                    item = CustomMessage(custom_type=name, content=item, display=True)
                if isinstance(item, CustomMessage):
                    extra.append(item)
                else:
                    self._error(name, "before_prompt", TypeError(f"expected a string or CustomMessage, got {type(item).__name__}"))
        return extra

    async def transform_context(self, messages: list[Any], signal: Any = None) -> list[Any]:
        """Chain the ``transform_context`` hooks over a copy of ``messages`` (a failing one: :class:`GuardError`, no request)."""
        current = list(messages)
        for name, fn, ctx in self._with("transform_context"):
            out = await self._guard(name, "transform_context", fn, list(current), ctx, outcome="the request was not sent")
            if isinstance(out, list):
                current = out
        return current

    async def before_tool_call(self, call: Any) -> Any:
        """The first blocking decision wins; argument changes carry on to later hooks; a failing hook refuses the call."""
        from .loop import ToolDecision

        decision = None
        for name, fn, ctx in self._with("before_tool_call"):
            try:
                out = await self._guard(name, "before_tool_call", fn, call, ctx, outcome=f"the {call.tool.name} call was not run")
            except GuardError as refused:
                return ToolDecision(block=True, reason=f"Refused: {refused}")
            if out is None:
                continue
            if getattr(out, "block", False):
                return out
            if getattr(out, "args", None) is not None:
                call.args = out.args
                decision = out
        return decision

    async def after_tool_call(self, call: Any) -> Any:
        """Chain the ``after_tool_call`` hooks; each sees the previous replacement; a failing hook withholds the output."""
        from .tools import ToolResult

        replaced = None
        for name, fn, ctx in self._with("after_tool_call"):
            try:
                out = await self._guard(name, "after_tool_call", fn, call, ctx, outcome="the tool's output was withheld from the model")
            except GuardError as withheld:
                call.result = ToolResult.error(str(withheld))
                return call.result
            if out is not None and hasattr(out, "content"):
                call.result = out
                replaced = out
        return replaced

    async def decide(self, hook: str, request: Any) -> Any:
        """``before_compact`` / ``before_checkout``: :data:`CANCEL`, a summary string, or ``None``; a failing hook: :class:`GuardError`."""
        for name, fn, ctx in self._with(hook):
            what = "the compaction did not run" if hook == "before_compact" else "the checkout did not happen"
            out = await self._guard(name, hook, fn, request, ctx, outcome=what)
            if out is CANCEL or isinstance(out, str):
                return out
        return None

    def tools(self) -> list[Any]:
        """Tools added by extensions."""
        out: list[Any] = []
        for name, fn, _ctx in self._with("tools"):
            got = self._call_sync(name, "tools", fn)
            if got:
                out.extend(got)
        return out


def _from_module(module: ModuleType) -> Any:
    if hasattr(module, "extension"):
        return module.extension
    factory = getattr(module, "make_extension", None)
    if callable(factory):
        return factory()
    return module


async def _await(awaitable: Any) -> Any:
    return await awaitable
