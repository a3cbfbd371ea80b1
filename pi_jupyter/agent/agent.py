"""``Agent``: the agent loop bound to a session store, with retry, compaction and one event stream.

This is pi's ``AgentSession`` under the name users meet: give it a :class:`Session` (or a
path), a model (default: the built-in offline model) and tools, then ``await
agent.prompt(...)``. Every event goes to the subscribers in order; the first subscriber is
persistence, which appends each finished message to the session file, so a crash loses at
most the message being streamed.

``Agent`` is the assembly of its parts, each with its own state and module: the loop
(:mod:`.loop`), the store (:mod:`pi_jupyter.session`) and its persistence subscriber
(:mod:`.persistence`), compaction (:mod:`.compaction_runner`), extensions (:mod:`.extensions`),
retry (:mod:`.retry`), the policy and tool hooks (:mod:`.policy`, :mod:`.tool_hooks`) and the
run state with its abort signal (:mod:`.run_state`). The parts see the agent only through a
:class:`~.run_context.RunContext` (:class:`_Run` here).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import IO, Any

from pydantic import SecretStr

from ..messages import THINKING_LEVELS, UserMessage, as_message
from ..providers.base import AbortSignal, Model
from ..session import Session
from .carry_edits import carry_edits
from .compaction_runner import Compactor
from .events import EntryAppendedEvent, Event, SessionEvent
from .extensions import HANDLED, ExtensionManager, GuardError
from .initial import initial_model, initial_thinking
from .loop import AfterToolCall, BeforeToolCall, LoopConfig, ToolDecision, run_loop
from .persistence import persistence
from .result import AgentBusyError, RunResult, usage_total
from .retry import RETRYABLE, Retry
from .run_context import StreamFn
from .run_state import RunState
from .settings import AgentSettings, RetrySettings
from .thinking import available_thinking_levels, clamp_thinking
from .tool_hooks import PolicyContext, after_tool, before_tool
from .tools import Tool, ToolResult
from .transcript_system import prepare_run, reuse_recorded
from .typed_text import scrub

log = logging.getLogger("pi_jupyter.agent")

__all__ = [
    "RETRYABLE",
    "Agent",
    "AgentBusyError",
    "AgentSettings",
    "RetrySettings",
    "RunResult",
    "available_thinking_levels",
    "clamp_thinking",
    "usage_total",
]


class Agent:
    """An agent working on a session: prompt it, subscribe to its events, steer, abort, compact.

    ``session``: a :class:`Session`, a path (opened, or created when missing), or ``None``
    for an in-memory session. ``model``: ``"provider/model"`` or a
    :class:`~pi_jupyter.providers.Model`; default: the model recorded on the session's branch
    when it is available with a key, else the built-in offline model. ``tools``: tool
    objects or built-in tool names. ``api_key`` is kept as a secret (never persisted,
    printed or logged). ``extensions``: extension objects or modules to register (see
    :mod:`pi_jupyter.agent.extensions`). Installed extensions (the ``pi_jupyter.extensions``
    entry point group) are not loaded implicitly: call ``agent.extensions.load_entry_points()``
    (the notebook, ``pi-jupyter prompt`` and ``pi-jupyter rpc`` do).
    """

    def __init__(
        self,
        session: Session | str | os.PathLike[str] | None = None,
        *,
        model: str | Model | None = None,
        thinking: str | None = None,
        tools: Sequence[Tool[Any] | str] | None = None,
        system_prompt: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        cwd: str | None = None,
        settings: AgentSettings | None = None,
        stream: Callable[..., Any] | None = None,
        before_tool_call: Callable[[BeforeToolCall], Any] | None = None,
        after_tool_call: Callable[[AfterToolCall], Any] | None = None,
        tool_extra: dict[str, Any] | None = None,
        policy: Any = None,
        resources: Any = None,
        extensions: Sequence[Any] = (),
    ) -> None:
        if session is None:
            session = Session.in_memory(cwd)
        elif isinstance(session, (str, os.PathLike)):  # else a Session, or a view with its own leaf (experiments)
            session = Session.open(session, create=True, cwd=cwd)
        self.session: Session = session
        self.settings = settings or AgentSettings()
        self.cwd = os.path.abspath(cwd or session.cwd or os.getcwd())
        self._api_key = SecretStr(api_key) if api_key else None
        self._base_url = base_url
        self._stream = stream
        self._listeners: list[Callable[[Event], Any]] = []
        self._steering: list[Any] = []
        self._follow_ups: list[Any] = []
        self._state = RunState()
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.tool_extra: dict[str, Any] = dict(tool_extra or {})
        self._system_prompt_override = system_prompt
        self.policy = policy
        """A :class:`~pi_jupyter.agent.policy.Policy` checked before every tool call (``None``: none)."""
        self._resources = resources

        ctx = session.context()
        self.messages: list[Any] = list(ctx.messages)
        self.model: Model = initial_model(session, model, ctx.model, self._base_url)
        self.tools: list[Tool[Any]] = self.resolve_tools(tools)
        self.thinking_level: str = initial_thinking(session, thinking, ctx.thinking_level, self.settings.default_thinking_level, self.model)
        self._subscribe_persistence()
        run = _Run(self, self._state)
        self.extensions = ExtensionManager(run, self)
        """Registered extensions (see :mod:`pi_jupyter.agent.extensions`)."""
        self._listeners.insert(1, self.extensions.on_event)
        self._retry = Retry(run)
        self._compactor = Compactor(run, self.extensions)
        for ext in extensions:
            self.extensions.add(ext)
        session.branch_summarizer = self._branch_summarizer_sync

    # ------------------------------------------------------------------ setup

    def _append_safely(self, fn: Callable[[], Any]) -> None:
        if self.session.readonly:
            return
        fn()

    def resolve_tools(self, tools: Sequence[Tool[Any] | str] | None) -> list[Tool[Any]]:
        """Tool objects for ``tools``: built-in tool names are built for this agent's cwd, policy and namespace."""
        if tools is None:
            return []
        out: list[Tool[Any]] = []
        names = [t for t in tools if isinstance(t, str)]
        if names:
            from . import toolbox

            kwargs: dict[str, Any] = {"cwd": self.cwd, "namespace": self.tool_extra.get("namespace")}
            if self.policy is not None:
                kwargs["policy"] = self.policy
            if self.tool_extra.get("timeout"):
                kwargs["python_timeout"] = float(self.tool_extra["timeout"])
            out.extend(toolbox.builtin_tools(names, **kwargs))
        out.extend(t for t in tools if not isinstance(t, str))
        return out

    @property
    def resources(self) -> Any:
        """Project context files (AGENTS.md / CLAUDE.md), SYSTEM.md and skills for :attr:`cwd`, loaded once."""
        if self._resources is None:
            from ..resources import load_resources

            self._resources = load_resources(self.cwd)
        return self._resources

    def reload_resources(self) -> None:
        """Read context files and skills again (after editing AGENTS.md or adding a skill)."""
        self._resources = None

    @property
    def system_prompt(self) -> str:
        """The system prompt of the next request (project context, skills and tools included)."""
        if self._system_prompt_override is not None:
            return self._system_prompt_override
        return self.resources.build_system_prompt(tools=self.tools)

    @system_prompt.setter
    def system_prompt(self, value: str | None) -> None:
        self._system_prompt_override = value

    # ------------------------------------------------------------------ events

    def subscribe(self, callback: Callable[[Event], Any]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order; returns an unsubscribe function.

        Callbacks run on the agent's event loop thread and should return quickly. An
        exception in a callback is logged and does not stop the run.
        """
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            try:
                listener(event)
            except Exception:  # noqa: BLE001 - a consumer's bug must not stop the agent
                log.exception("event subscriber %r failed on %s", listener, event.type)
        self._retry.after_event(event)

    def _subscribe_persistence(self) -> None:
        self._listeners.insert(0, persistence(self.session, self._state.entry_ids.append))

    def log_events(self, target: str | os.PathLike[str] | IO[str], *, delta_only: bool = False) -> Callable[[], None]:
        """Write every event as one JSON line (pi's JSON-mode shape) to a file path or stream.

        ``delta_only`` leaves the whole partial message out of ``message_update`` lines (pi
        repeats it in every line, which makes long streams quadratic). Returns a function
        that stops logging (and closes the file if a path was given).
        """
        from .event_log import log_events

        secrets = [self._api_key.get_secret_value()] if self._api_key else []
        return log_events(self.subscribe, target, delta_only=delta_only, secrets=secrets)

    # ------------------------------------------------------------------ state

    @property
    def is_running(self) -> bool:
        """True while a run (including its retries) is going on."""
        return self._state.running

    def serve_with(self, stream: Callable[..., Any] | None) -> Callable[..., Any] | None:
        """Send the next runs' model calls to ``stream(model, request, options)`` (``None``: the model's provider); returns the old one."""
        previous, self._stream = self._stream, stream
        return previous

    def set_model(self, model: str | Model) -> Model:
        """Switch the model (a ``model_change`` entry is written) and clamp the thinking level to it."""
        from .. import providers

        chosen = model if isinstance(model, Model) else providers.resolve_model(model, base_url=self._base_url)
        if (chosen.provider, chosen.id) != (self.model.provider, self.model.id):
            self._append_safely(lambda: self.session.append_model_change(chosen.provider, chosen.id))
        self.model = chosen
        self._emit(SessionEvent(action="set_model", data={"model": chosen.ref}))
        self.set_thinking_level(self.thinking_level)
        return chosen

    def set_thinking_level(self, level: str) -> str:
        """Set the thinking level, clamped to what the model supports (pi's rule); returns the level used."""
        if level not in THINKING_LEVELS:
            raise ValueError(f"unknown thinking level {level!r}; choose one of {', '.join(THINKING_LEVELS)}")
        clamped = clamp_thinking(level, self.model)
        # compared with the branch, not with the last level set: after a checkout the branch may say another
        recorded = [e.get("thinkingLevel") for e in self.session.raw_branch() if e.get("type") == "thinking_level_change"]
        if not recorded or recorded[-1] != clamped:
            self._append_safely(lambda: self.session.append_thinking_level_change(clamped))
        self.thinking_level = clamped
        return clamped

    def api_key(self) -> SecretStr | None:
        """The key used for the current model (explicit, else from the environment)."""
        from .. import providers

        return providers.api_key_for(self.model, self._api_key)

    def reload(self) -> None:
        """Rebuild the agent's messages from the session's current branch."""
        self.messages = list(self.session.context().messages)

    # ------------------------------------------------------------------ running

    async def prompt(self, text: str | Any, *, images: list[Any] | None = None, context: Sequence[Any] = ()) -> RunResult:
        """Send a user message and run until the agent stops; returns the :class:`RunResult`.

        ``text`` may also be a message object (e.g. a :class:`UserMessage` or
        :class:`CustomMessage`). ``/skill:NAME args`` is expanded as pi expands it.
        ``context``: messages recorded just before the prompt and sent with it (the notebook's
        cells since the last turn, as a :class:`CustomMessage`); nothing is recorded when the
        prompt is refused.
        """
        if isinstance(text, str) and len(self.extensions):
            try:
                text = await self.extensions.on_input(text)
            except GuardError as refused:  # a guard that failed: nothing is sent, the result says why
                return self._result([], self.session.leaf_id, 0.0).model_copy(
                    update={"stop_reason": "error", "error_message": str(refused)}
                )
            if text is HANDLED:
                return self._result([], self.session.leaf_id, 0.0)
        message = self._prompt_message(text, images)
        prompts = [*(as_message(m) for m in context), message]
        if len(self.extensions):
            prompts.extend(await self.extensions.before_prompt(text if isinstance(text, str) else ""))
        return await self._run(prompts)

    async def continue_(self) -> RunResult:
        """Run again from the current messages without a new prompt (after an error, for example).

        A failed or aborted last reply is asked for again: the new reply becomes its sibling
        in the tree, as an automatic retry does, and the failure stays in the file.
        """
        last = self.messages[-1] if self.messages else None
        if getattr(last, "role", None) == "assistant":
            queued = self._dequeue(self._steering, self.settings.steering_mode) or self._dequeue(
                self._follow_ups, self.settings.follow_up_mode
            )
            if queued:
                return await self._run(queued, skip_initial_steering=True)
            if last.stop_reason not in ("error", "aborted"):  # type: ignore[union-attr]
                raise RuntimeError("nothing to continue from: the last message is the assistant's (prompt instead)")
            if self._state.running:
                raise AgentBusyError("the agent is already running: use steer() or follow_up(), or wait for it")
            self.messages.pop()
            leaf = self.session.leaf_id
            entry = self.session.raw_entry(leaf) if leaf is not None else None
            if entry is not None and entry.get("type") == "message" and (entry.get("message") or {}).get("role") == "assistant":
                self.session.checkout(entry.get("parentId"), persist=False)
            return await self._run([])
        if not self.messages:
            raise RuntimeError("nothing to continue from: the session has no messages")
        return await self._run([])

    def steer(self, text: str) -> None:
        """Queue a message for the running agent: it is sent before the next model call."""
        self._steering.append(self._prompt_message(text, None))

    def follow_up(self, text: str) -> None:
        """Queue a message for when the agent would otherwise stop."""
        self._follow_ups.append(self._prompt_message(text, None))

    def edit_context(self, entry_id: str, replacement: Any) -> str:
        """Replace (or, with ``None``, drop) what an entry of the branch shows the model; see :meth:`Session.edit_context`.

        The agent's messages are rebuilt, so the next request sends the edited context, and an
        ``entry_appended`` event announces the edit. Returns the edit's entry id.
        """
        if self._state.running:
            raise AgentBusyError("the agent is running: edit the context when it is idle (or abort first)")
        edit_id = self.session.edit_context(entry_id, scrub(replacement))  # typed text: never sent or stored as typed
        self.reload()
        self.announce_entry(edit_id)
        return edit_id

    def announce_entry(self, entry_id: str) -> None:
        """Emit ``entry_appended`` for an entry written outside the message flow (pi 1.6's event)."""
        self._emit(EntryAppendedEvent(entry=self.session.raw_entry(entry_id)))

    def clear_queues(self) -> None:
        """Drop the queued steering and follow-up messages (pi's ``clearQueue``)."""
        self._steering.clear()
        self._follow_ups.clear()

    def abort_retry(self) -> None:
        """Cancel a pending automatic retry (pi's ``abortRetry``): the failed reply stands; nothing else stops."""
        self._retry.cancel()

    def abort(self) -> None:
        """Stop the running agent (from any thread). The partial answer is kept as ``aborted``.

        The request holds for the rest of the run: a retry or a compaction that has not
        started yet does not start.
        """
        self._state.abort()
        self._retry.cancel()
        if self.is_running:  # a tool's value being pickled (its own code may sleep): named "not saved" now, not at its deadline
            from ..world.values import stop_saves

            stop_saves()

    def _prompt_message(self, text: Any, images: list[Any] | None) -> Any:
        if not isinstance(text, str):
            return as_message(text)
        # a key pasted into a prompt is never sent or stored as typed (the notebook also warns)
        return UserMessage.text(scrub(self._expand_skill(text)), images)

    def _expand_skill(self, text: str) -> str:
        if not text.startswith("/skill:"):
            return text
        return self.resources.expand_skill_command(text)

    @staticmethod
    def _dequeue(queue: list[Any], mode: str) -> list[Any]:
        if not queue:
            return []
        if mode == "all":
            out = list(queue)
            queue.clear()
            return out
        return [queue.pop(0)]

    def _loop_config(self) -> LoopConfig:
        stream = self._stream_fn()
        has = {hook for ext in self.extensions for hook in ("transform_context", "after_tool_call") if callable(getattr(ext, hook, None))}
        return LoopConfig(
            model=self.model,
            stream=stream,
            system_prompt=self.system_prompt,
            tools=[*self.tools, *self.extensions.tools()],
            transform_context=self.extensions.transform_context if "transform_context" in has else None,
            reasoning=None if self.thinking_level == "off" else self.thinking_level,
            api_key=self.api_key,
            session_id=self.session.id,
            tool_execution=self.settings.tool_execution,
            max_turns=self.settings.max_turns,
            before_tool_call=self._before_tool,
            after_tool_call=self._after_tool if (self.after_tool_call or "after_tool_call" in has) else None,
            steering=lambda: self._dequeue(self._steering, self.settings.steering_mode),
            follow_ups=lambda: self._dequeue(self._follow_ups, self.settings.follow_up_mode),
            cwd=self.cwd,
            session=self.session,
            tool_extra=self.tool_extra,
        )

    def _stream_fn(self) -> StreamFn:
        from .. import providers

        return self._stream or providers.stream

    async def _before_tool(self, call: BeforeToolCall) -> ToolDecision | None:
        context = PolicyContext(self.cwd, self.tool_extra)
        hook = self.before_tool_call
        return await before_tool(call, policy=self.policy, policy_context=context, extensions=self.extensions, user_hook=hook)

    async def _after_tool(self, call: AfterToolCall) -> ToolResult | None:
        return await after_tool(call, extensions=self.extensions, user_hook=self.after_tool_call)

    async def _run(self, prompts: list[Any], *, skip_initial_steering: bool = False) -> RunResult:
        if carry_edits(self.session, self.announce_entry):  # forgotten on another branch: forgotten here too
            self.reload()
        self._state.start()
        started = time.monotonic()
        started_from = self.session.leaf_id
        all_new: list[Any] = []
        try:
            if prompts:
                self._compactor.new_prompt()
                if not skip_initial_steering:
                    await self._compactor.before_prompt()
            all_new.extend(await self._run_once(prompts, skip_initial_steering))
            while True:
                more = await self._retry.after_run(all_new)
                if more is None and not self._state.abort_requested:
                    more = await self._compactor.after_run(all_new)
                if more is None:
                    break
                all_new.extend(more)
        finally:
            self._state.finish()
            self.session.sync()
        return self._result(all_new, started_from, time.monotonic() - started)

    async def _run_once(self, prompts: list[Any], skip_initial_steering: bool) -> list[Any]:
        signal = self._state.turn_signal()
        config = self._loop_config()
        delta = prepare_run(self.messages, config, self.settings.record_system_prompt)
        delta = reuse_recorded(self.session, self.messages, delta)
        prompts = [delta, *prompts] if delta is not None else prompts
        return await run_loop(prompts, self.messages, config, self._emit, signal, skip_initial_steering=skip_initial_steering)

    @property
    def context_too_large(self) -> Any:
        """Why the last prompt's context could not fit the model's window when compaction could not help, else ``None``.

        A :class:`~pi_jupyter.compaction.oversize.ContextTooLarge`: ``reason`` (``"entry"``: one entry
        makes it too long, ``size.entry_id`` names it; ``"summary"``: the branch is too long to
        summarize in one request) and the numbers, in ``size``.
        """
        return self._compactor.too_large

    @property
    def is_compacting(self) -> bool:
        """True while a compaction (manual or automatic) is running."""
        return self._compactor.compacting

    def _result(self, new_messages: list[Any], started_from: str | None, duration: float) -> RunResult:
        assistants = [m for m in new_messages if getattr(m, "role", None) == "assistant"]
        last = assistants[-1] if assistants else None
        usage = usage_total(assistants)
        return RunResult(
            text=last.text if last is not None else "",
            stop_reason=last.stop_reason if last is not None else "stop",
            error_message=last.error_message if last is not None else None,
            messages=new_messages,
            entry_ids=list(self._state.entry_ids),
            started_from=started_from,
            leaf_id=self.session.leaf_id,
            usage=usage,
            model=self.model.ref,
            duration_s=duration,
        )

    # ------------------------------------------------------------------ tree moves

    def checkout_sync(self, target: str | None, **options: Any) -> str | None:
        """Synchronous :meth:`checkout` for code that is not async."""
        from .sync import run_blocking

        return run_blocking(self.checkout(target, **options))

    def _branch_summarizer_sync(self, target: str | None, **options: Any) -> str | None:
        return self.checkout_sync(target, summarize=True, **options)

    async def checkout(
        self,
        target: str | None,
        *,
        summarize: bool = False,
        instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> str | None:
        """Move to another node of the tree and rebuild the context from there.

        With ``summarize=True`` the branch being left is summarized by the model into a
        ``branch_summary`` entry attached where pi attaches it (pi-design §7.4);
        ``instructions`` add a focus (or replace the prompt with ``replace_instructions``),
        and ``label`` labels the resulting node. Returns the new leaf id.
        """
        if self._state.running:
            raise AgentBusyError("cannot move in the tree while the agent is running; abort() first")
        session = self.session
        target_id = session.resolve(target) if target is not None else None
        instructions, label = scrub(instructions), scrub(label)
        if not summarize:
            session.checkout(target_id)
            if label and target_id:
                session.label(target_id, label)
            self.reload()
            self._emit(SessionEvent(action="checkout", data={"target": target_id, "leaf": session.leaf_id}))
            return session.leaf_id
        carry_edits(session, self.announce_entry)  # the branch left behind is summarized without what was forgotten
        leaf = await self._compactor.summarize_branch_and_checkout(target_id, instructions, replace_instructions, label)
        self.reload()
        self._emit(SessionEvent(action="checkout", data={"target": target_id, "leaf": leaf, "summarized": True}))
        return leaf

    async def compact(self, instructions: str | None = None, *, keep_recent_tokens: int | None = None) -> Any:
        """Summarize older history into a ``compaction`` entry; returns the compaction result.

        Every original entry stays in the file; the context becomes the summary plus the
        recent messages (``keep_recent_tokens`` of them, default from the settings).
        """
        if self._state.running:
            raise AgentBusyError("cannot compact while the agent is running; abort() first")
        carry_edits(self.session, self.announce_entry)
        result = await self._compactor.compact(scrub(instructions), keep_recent_tokens=keep_recent_tokens)
        self.reload()
        return result

    def summarizer(self) -> Callable[..., Any]:
        """An async ``summarize(request) -> AssistantMessage`` that asks the agent's model."""
        return self._compactor.summarizer()

    def __repr__(self) -> str:
        state = "running" if self._state.running else "idle"
        tools = [t.name for t in self.tools]
        where = self.session.path or "in memory"
        return f"<Agent {self.model.ref} thinking={self.thinking_level} tools={tools} {state} session={where}>"


class _Run:
    """The :class:`~.run_context.RunContext` an agent hands its parts: a narrow view of the agent and its run."""

    def __init__(self, agent: Agent, state: RunState) -> None:
        self._agent = agent
        self._state = state

    @property
    def session(self) -> Session:
        return self._agent.session

    @property
    def model(self) -> Model:
        return self._agent.model

    @property
    def thinking_level(self) -> str:
        return self._agent.thinking_level

    @property
    def settings(self) -> AgentSettings:
        return self._agent.settings

    @property
    def messages(self) -> list[Any]:
        return self._agent.messages

    @property
    def is_running(self) -> bool:
        return self._state.running

    @property
    def abort_requested(self) -> bool:
        return self._state.abort_requested

    @property
    def run_entry_ids(self) -> Sequence[str]:
        return tuple(self._state.entry_ids)

    def api_key(self) -> SecretStr | None:
        return self._agent.api_key()

    def stream_fn(self) -> StreamFn:
        return self._agent._stream_fn()

    def emit(self, event: Event) -> None:
        self._agent._emit(event)

    def abortable(self) -> AbstractContextManager[AbortSignal]:
        return self._state.abortable()

    async def run_turn(self) -> list[Any]:
        return await self._agent._run_once([], False)

    def queue_steering(self, message: Any) -> None:
        self._agent._steering.append(message)

    def reload(self) -> None:
        self._agent.reload()
