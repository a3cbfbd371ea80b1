"""The ``pi-jupyter rpc`` server: JSON-lines commands in, responses and the event stream out.

pi's RPC mode (pi-design §9) with the fixes of §10 item 21: every command is answered with
its own ``id`` and ``command``, commands are handled one at a time in the order they came
(a queue), and ``abort`` is handled the moment it is read, never behind the queue.
``prompt`` is answered as soon as its run has started; the run goes on in the background
while its events stream, so ``steer``, ``follow_up``, ``get_state``... are answered during
it. A second ``prompt`` during a run needs ``streamingBehavior`` (``"steer"`` or
``"followUp"``), as in pi. Commands that replace the session (``new_session``, ``fork``,
``switch_session``) and ``compact`` first abort the run and wait until it is persisted
(pi drops the aborted message; we keep it). End of input waits for the run to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import IO, Any

from ..agent.agent import Agent, AgentBusyError, AgentSettings
from ..agent.compaction_runner import CompactionCancelled
from ..agent.redact import find_secrets, redact, redact_json
from ..agent.typed_text import scrub
from ..compaction import SummaryAborted, estimate_tokens_pi
from ..messages import UserMessage
from ..providers import Model, ModelNotFoundError, api_key_for, resolve_model
from ..providers.keys import env_key_names
from ..session import Session, SessionError
from ..world import Tracker, World
from . import rpc_views as views
from .json_events import PiEventStream, compaction_end, compaction_result, compaction_start
from .rpc_more import MoreCommands
from .rpc_protocol import (
    BadCommand,
    CheckoutCommand,
    Command,
    CommandError,
    CompactCommand,
    EncodedLine,
    FollowUpCommand,
    ForkCommand,
    GetTreeCommand,
    LineSplitter,
    LineTooLong,
    NewSessionCommand,
    PromptCommand,
    SetModelCommand,
    SetQueueModeCommand,
    SetSessionNameCommand,
    SetThinkingLevelCommand,
    SteerCommand,
    SwitchSessionCommand,
    decode_line,
    encode_line,
    failure,
    is_ui_response,
    parse_command,
    success,
)

ALREADY_RUNNING = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
"""pi's answer to a second ``prompt`` without ``streamingBehavior`` while a run is going on."""


_EXPECTED = (CommandError, SessionError, ValueError, AgentBusyError, ModelNotFoundError, OSError)


class Output:
    """One JSON object per line on the protocol stream, redacted, flushed per line; thread-safe."""

    def __init__(self, stream: IO[bytes], on_broken: Callable[[], None] | None = None) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self.on_broken = on_broken
        """Called once when the reader has gone away (the server sets it to shut down)."""
        self.closed = False

    def write(self, obj: Any) -> None:
        """Write ``obj`` as one line; a reader that went away stops the output (and asks for shutdown)."""
        text = obj if isinstance(obj, EncodedLine) else encode_line(obj)
        line = redact_json(text).encode("utf-8", "surrogatepass") + b"\n"
        with self._lock:
            if self.closed:
                return
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                self.closed = True
                if self.on_broken is not None:
                    self.on_broken()


class AgentFactory:
    """How the server makes an :class:`Agent` for a session: the tools, the working folder, model resolution.

    ``base_url`` (``--base-url``) applies to models of ``base_provider`` (the provider of
    ``--model``), so ``set_model`` to another model of that provider reaches the same server.
    """

    def __init__(self, *, tools: list[str], cwd: str, base_url: str | None = None, base_provider: str | None = None) -> None:
        self.tools = list(tools)
        self.cwd = cwd
        self.base_url = base_url
        self.base_provider = base_provider
        self.start_model: Model | None = None
        """The model the server started with (listed as available even when the catalog does not hold it)."""
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        """The one namespace of the server's python tool, shared by every session it works on."""
        self.tracker = Tracker()

    def resolve(self, ref: str) -> Model:
        """The model for ``provider/id`` (raises ``ModelNotFoundError`` / ``ValueError``)."""
        provider = ref.split("/", 1)[0]
        base = self.base_url if self.base_url and provider == self.base_provider else None
        return resolve_model(ref, base_url=base)

    def model_for(self, session: Session, current: Model) -> Model:
        """The model to continue ``session`` with: the one recorded on its branch when usable, else ``current``."""
        recorded = session.context().model
        if recorded is None or not recorded.provider or not recorded.model_id:
            return current
        if (recorded.provider, recorded.model_id) == (current.provider, current.id):
            return current
        try:
            model = self.resolve(f"{recorded.provider}/{recorded.model_id}")
        except (ModelNotFoundError, ValueError):
            return current
        return model if api_key_for(model) is not None else current

    def make(self, session: Session, model: Model | None, thinking: str | None = None, settings: AgentSettings | None = None) -> Agent:
        """A new agent on ``session`` with this server's tools and folder (``settings`` kept across sessions), and its world.

        The world: the server's one namespace (every session shares it, as a kernel's do) and folder, for ``checkout``'s rewinds.
        """
        world = World(session, self.namespace, cwd=self.cwd, tracker=self.tracker, has_secret=lambda text: bool(find_secrets(text)))
        extra = {"namespace": self.namespace, "world": world}
        agent = Agent(session, model=model, thinking=thinking, tools=list(self.tools), cwd=self.cwd, settings=settings, tool_extra=extra)
        world.attach(agent)
        return agent

    def world_of(self, agent: Agent) -> World | None:
        """The world of an agent this factory made (``None`` for another one)."""
        world = agent.tool_extra.get("world")
        return world if isinstance(world, World) else None


class RpcServer(MoreCommands):
    """Serve one agent over JSON lines (see the module docstring); :meth:`serve` returns the exit status."""

    def __init__(self, agent: Agent, factory: AgentFactory, output: Output, *, full_updates: bool = False) -> None:
        self.agent = agent
        self.factory = factory
        self.out = output
        self.events = PiEventStream(full_updates=full_updates)
        """Our events as pi 1.6's JSON events (``full_updates``: pi 0.73's ``message_update`` with the partial message)."""
        self._unsubscribe: Callable[[], None] | None = None
        self._run_task: asyncio.Task[Any] | None = None
        self._side_tasks: set[asyncio.Task[Any]] = set()
        self._queue: asyncio.Queue[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seq = 0
        self._abort_seq = 0
        self._pending: dict[str, list[str]] = {"steering": [], "followUp": []}
        self._pending_bash = []
        self._compacting = False
        self._auto_compacting = False
        self._exit_code = 0
        self._terminating = False

    # ------------------------------------------------------------------ lifetime

    async def serve(self, stdin_fd: int) -> int:
        """Read commands from ``stdin_fd`` until end of input; then wait for the run and return 0."""
        self._loop = asyncio.get_running_loop()
        self._queue = asyncio.Queue()
        self._bind(self.agent)
        for signum, code in ((signal.SIGTERM, 143), (signal.SIGINT, 130), (getattr(signal, "SIGHUP", None), 129)):
            if signum is not None:
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    self._loop.add_signal_handler(signum, self.terminate, code)
        reader = threading.Thread(target=self._read, args=(stdin_fd,), name="pi-jupyter-rpc-stdin", daemon=True)
        reader.start()
        try:
            await self._work()
            await self._wait_run()
            while self._side_tasks:
                await asyncio.wait(set(self._side_tasks))
        finally:
            if self._unsubscribe is not None:
                self._unsubscribe()
            with contextlib.suppress(SessionError, OSError):
                self.agent.session.close()
        return self._exit_code

    def terminate(self, code: int = 0) -> None:
        """Stop: drop queued commands, abort the run, persist it, exit with ``code`` (signals, a closed stdout)."""
        if self._terminating or self._queue is None:
            return
        self._terminating = True
        self._exit_code = code
        self._abort_bash()  # its own process group: a signal to ours would not reach it
        self._abort_seq = self._seq + 1
        task = asyncio.ensure_future(self._stop_run())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)
        self._queue.put_nowait(None)

    def _read(self, fd: int) -> None:
        splitter = LineSplitter()
        loop = self._loop
        assert loop is not None
        try:
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except InterruptedError:  # pragma: no cover - retried by Python itself since PEP 475
                    continue
                except OSError:
                    chunk = b""
                lines = splitter.feed(chunk) if chunk else splitter.finish()
                if lines:
                    loop.call_soon_threadsafe(self._on_lines, lines)
                if not chunk:
                    loop.call_soon_threadsafe(self._on_end)
                    return
        except RuntimeError:  # the loop closed while we were reading (after a signal)
            return

    def _on_lines(self, lines: list[bytes | LineTooLong]) -> None:
        for raw in lines:
            try:
                self._on_line(raw)
            except Exception as exc:  # noqa: BLE001 - one line's surprise must not lose the lines read with it
                self._queue.put_nowait((0, BadCommand(f"Failed to parse command: {_message(exc)}")))  # type: ignore[union-attr]

    def _on_end(self) -> None:
        if self._queue is not None:
            self._queue.put_nowait(None)

    def _on_line(self, raw: bytes | LineTooLong) -> None:
        assert self._queue is not None
        if self._terminating:
            return
        try:
            text = decode_line(raw)  # a line too long, or not UTF-8: one error answer
        except BadCommand as exc:
            self._queue.put_nowait((0, exc))
            return
        if not text.strip():
            return  # blank lines separate nothing and mean nothing
        if '"extension_ui_response"' in text and is_ui_response(text):
            return  # pi answers nothing to these either; we never ask (no extension UI requests are sent)
        self._seq += 1
        try:
            command = parse_command(text)
        except BadCommand as exc:
            self._queue.put_nowait((self._seq, exc))
            return
        if command.type == "abort_bash":
            self._abort_bash()  # at once, as pi: the bash command it stops is what the queue waits on
            self.out.write(success(command.id, "abort_bash"))
            return
        if command.type == "abort":
            # decided now, as the line is read: prompts read before it and not started are dropped
            self._abort_seq = self._seq
            task = asyncio.ensure_future(self._abort(command))
            self._side_tasks.add(task)
            task.add_done_callback(self._side_tasks.discard)
            return
        self._queue.put_nowait((self._seq, command))

    async def _work(self) -> None:
        assert self._queue is not None
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if self._terminating:
                continue
            seq, command = item
            if isinstance(command, BadCommand):
                self.out.write(failure(command.id, command.command, str(command)))
                continue
            try:
                response = await self._handle(seq, command)
            except _EXPECTED as exc:
                response = failure(command.id, command.type, _message(exc))
            except Exception as exc:  # noqa: BLE001 - one command's bug must not stop the server
                print(redact(f"pi-jupyter rpc: {command.type} failed:\n{traceback.format_exc()}"), file=sys.stderr, flush=True)
                response = failure(command.id, command.type, _message(exc))
            if response is not None:
                self.out.write(response)

    # ------------------------------------------------------------------ events

    def _bind(self, agent: Agent) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.agent = agent
        self._pending = {"steering": [], "followUp": []}
        self._unsubscribe = agent.subscribe(self._on_event)
        # installed extensions (the pi_jupyter.extensions entry point group), as a notebook loads
        # them; each new agent (new_session, fork, switch_session) gets them again, so their
        # setup rebuilds state from that session; a broken one is an extension_error line
        agent.extensions.load_entry_points()

    def _on_event(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start" and getattr(event.message, "role", None) == "user":
            self._delivered(views.user_text(event.message.content))
        elif kind == "auto_compaction_start":
            self._auto_compacting = True
        elif kind == "auto_compaction_end":
            self._auto_compacting = False
        line = self.events(event)
        if line is not None:
            self.out.write(line)

    def _delivered(self, text: str) -> None:
        """A queued message reached the model: take it off the pending lists (pi matches by text too)."""
        for kind in ("steering", "followUp"):
            queue = self._pending[kind]
            if text in queue:
                queue.remove(text)
                self._queue_update()
                return

    def _queue_update(self) -> None:
        self.out.write({"type": "queue_update", "steering": list(self._pending["steering"]), "followUp": list(self._pending["followUp"])})

    # ------------------------------------------------------------------ runs

    def _running(self) -> bool:
        return (self._run_task is not None and not self._run_task.done()) or self.agent.is_running

    async def _stop_run(self) -> None:
        """Abort the run going on (if any) and wait until it has ended and been persisted."""
        task = self._run_task
        if task is not None and not task.done():
            # a run task that has not taken its first step has no signal to abort yet
            while not task.done() and not self.agent.is_running:
                await asyncio.sleep(0)
            self.agent.abort()
            await asyncio.wait({task})
        else:
            self.agent.abort()

    async def _wait_run(self) -> None:
        task = self._run_task
        if task is not None and not task.done():
            await asyncio.wait({task})

    async def _abort(self, command: Command) -> None:
        await self._stop_run()
        self.out.write(success(command.id, "abort"))

    async def _run(self, command: PromptCommand) -> None:
        images = list(command.images) if command.images else None
        try:
            try:
                result = await self.agent.prompt(command.message, images=images)
            finally:
                self.flush_bash()
            # pi 1.6: the run, its retries and compactions are over (the last event of a prompt)
            self.out.write({"type": "agent_settled", "aborted": result.stop_reason == "aborted"})
        except Exception as exc:  # noqa: BLE001 - reported to the client, not raised into the loop
            # the run itself crashed (a bug, not a model failure, which ends as an error message)
            print(redact(f"pi-jupyter rpc: the run failed:\n{traceback.format_exc()}"), file=sys.stderr, flush=True)
            self.out.write(failure(command.id, "prompt", _message(exc)))

    def _enqueue(self, kind: str, command: PromptCommand | SteerCommand | FollowUpCommand) -> None:
        text = command.message
        if text.startswith("/skill:"):
            # expanded here, so the text the model gets is the text we track (pi shows it expanded too)
            text = self.agent.resources.expand_skill_command(text)
        message: Any = UserMessage.text(text, list(command.images)) if command.images else text
        if kind == "steering":
            self.agent.steer(message)
        else:
            self.agent.follow_up(message)
        self._pending[kind].append(text)
        self._queue_update()

    def _prompt(self, seq: int, command: PromptCommand) -> dict[str, Any]:
        if seq < self._abort_seq:
            raise CommandError("aborted before it started (an abort came after this prompt)")
        if self._running():
            if command.streaming_behavior is None:
                raise CommandError(ALREADY_RUNNING)
            self._enqueue("followUp" if command.streaming_behavior == "followUp" else "steering", command)
            return success(command.id, "prompt", {"disposition": "queued"})
        model = self.agent.model
        if self.agent.api_key() is None:
            names = " or ".join(env_key_names(model.provider)) or "the provider's key variable"
            raise CommandError(f"No API key found for {model.provider}: set {names}")
        self._run_task = asyncio.ensure_future(self._run(command))
        return success(command.id, "prompt", {"disposition": "started"})  # pi 1.6 says what became of the prompt

    # ------------------------------------------------------------------ commands

    async def _handle(self, seq: int, command: Command) -> dict[str, Any] | EncodedLine | None:
        cid, kind = command.id, command.type
        agent = self.agent
        if isinstance(command, PromptCommand):
            return self._prompt(seq, command)
        if isinstance(command, SteerCommand):
            self._enqueue("steering", command)
            return success(cid, kind, {"disposition": "queued"})
        if isinstance(command, FollowUpCommand):
            self._enqueue("followUp", command)
            return success(cid, kind, {"disposition": "queued"})
        if kind == "get_state":
            return success(cid, kind, self._state())
        if kind == "get_messages":
            return success(cid, kind, {"messages": views.messages_to_pi(agent.messages)})
        if isinstance(command, SetModelCommand):
            model = self.factory.resolve(f"{command.provider}/{command.model_id}")
            if api_key_for(model) is None:
                names = " or ".join(env_key_names(model.provider)) or "the provider's key variable"
                raise CommandError(f"No API key found for {model.provider}: set {names}")
            with self.level_watch():
                agent.set_model(model)
            return success(cid, kind, views.model_to_pi(agent.model))
        if isinstance(command, SetThinkingLevelCommand):
            with self.level_watch():
                agent.set_thinking_level(command.level)
            return success(cid, kind)
        if isinstance(command, SetQueueModeCommand):
            if kind == "set_steering_mode":
                agent.settings.steering_mode = command.mode
            else:
                agent.settings.follow_up_mode = command.mode
            return success(cid, kind)
        if isinstance(command, CompactCommand):
            return success(cid, kind, await self._compact(command))
        if isinstance(command, NewSessionCommand):
            await self._new_session(command)
            return success(cid, kind, {"cancelled": False})
        if isinstance(command, SwitchSessionCommand):
            await self._switch_session(command)
            return success(cid, kind, {"cancelled": False})
        if isinstance(command, ForkCommand):
            return success(cid, kind, {"text": await self._fork(command), "cancelled": False})
        if kind == "get_session_stats":
            return success(cid, kind, views.session_stats(agent.model, agent.session, agent.messages))
        if isinstance(command, SetSessionNameCommand):
            name = scrub(command.name.strip())  # typed text: a key in it is never stored as typed
            if not name:
                raise CommandError("Session name cannot be empty")
            agent.session.set_name(name)
            self.out.write({"type": "session_info_changed", "name": agent.session.name})  # pi 1.6's event
            return success(cid, kind)
        if kind == "get_last_assistant_text":
            return success(cid, kind, {"text": views.last_assistant_text(agent.messages)})
        if kind == "get_fork_messages":
            return success(cid, kind, {"messages": views.fork_messages(agent.session)})
        if isinstance(command, GetTreeCommand):
            if command.flat:
                return success(cid, kind, views.tree_view(agent.session))
            return self._tree_response(command)
        if isinstance(command, CheckoutCommand):
            line = await self._checkout(command)
            return success(cid, kind, {"leafId": self.agent.session.leaf_id, "line": line})
        more = await self._handle_more(command, seq)
        if more is not None:
            return more
        raise CommandError(f"Unknown command: {kind}")  # pragma: no cover - parse_command refuses it first

    def _state(self) -> dict[str, Any]:
        agent = self.agent
        session = agent.session
        compaction = agent.settings.compaction
        state: dict[str, Any] = {
            "model": views.model_to_pi(agent.model),
            "thinkingLevel": agent.thinking_level,
            "isStreaming": self._running(),
            "isCompacting": self._compacting or self._auto_compacting,
            "steeringMode": agent.settings.steering_mode,
            "followUpMode": agent.settings.follow_up_mode,
        }
        if session.path:
            state["sessionFile"] = session.path
        state["sessionId"] = session.id
        if session.name:
            state["sessionName"] = session.name
        state["autoCompactionEnabled"] = bool(getattr(compaction, "enabled", True))
        state["messageCount"] = len(agent.messages)
        state["pendingMessageCount"] = len(self._pending["steering"]) + len(self._pending["followUp"])
        return state

    @contextlib.contextmanager
    def level_watch(self) -> Any:
        """Write pi's ``thinking_level_changed`` when the block changed the thinking level (set, cycled or clamped)."""
        before = self.agent.thinking_level
        yield
        if self.agent.thinking_level != before:
            self.out.write({"type": "thinking_level_changed", "level": self.agent.thinking_level})

    def _tree_response(self, command: GetTreeCommand) -> EncodedLine:
        """pi's ``{tree, leafId}``, encoded here: the nested tree is too deep for a recursive encoder."""
        session = self.agent.session
        marker = f"\u0000tree-{id(command)}\u0000"
        line = encode_line(success(command.id, command.type, {"tree": marker, "leafId": session.leaf_id}))
        return EncodedLine(line.replace(encode_line(marker), views.tree_json(session), 1))

    async def _compact(self, command: CompactCommand) -> Any:
        await self._stop_run()
        self._compacting = True
        self.out.write(compaction_start("manual"))
        try:
            result = await self.agent.compact(command.custom_instructions)
        except BaseException as exc:
            aborted = isinstance(exc, (asyncio.CancelledError, SummaryAborted, CompactionCancelled))
            error = None if aborted else f"Compaction failed: {_message(exc)}"
            self.out.write(compaction_end("manual", None, aborted=aborted, error=error))
            raise
        finally:
            self._compacting = False
        data = compaction_result(result)
        if isinstance(data, dict):
            # pi 1.6's CompactionResult: the estimate of the context now, and what the summary cost
            after = sum(estimate_tokens_pi(m) for m in views.messages_to_pi(self.agent.messages))
            data = {**data, "estimatedTokensAfter": after}
            usage = getattr(result, "usage", None)
            if usage is not None:
                data["usage"] = usage
            data["details"] = data.pop("details", None)
        self.out.write(compaction_end("manual", data))
        return data

    def _replace(self, session: Session, model: Model, thinking: str | None) -> None:
        old = self.agent.session
        try:
            agent = self.factory.make(session, model, thinking, self.agent.settings)
        except BaseException:
            if session is not old:
                session.close()
            raise
        self._bind(agent)
        world = self.factory.world_of(agent)
        if world is not None:  # the one namespace and folder go on in that session's world (a new one takes them as they are)
            world.move(session.leaf_id)
        if old is not session:
            with contextlib.suppress(SessionError, OSError):
                old.close()

    async def _new_session(self, command: NewSessionCommand) -> None:
        await self._stop_run()
        current = self.agent.session
        if current.path is None:
            session = Session.in_memory(current.cwd or self.factory.cwd)
        else:
            session = Session.create(current.session_dir, cwd=self.factory.cwd, parent_session=command.parent_session)
        self._replace(session, self.agent.model, self.agent.thinking_level)

    async def _switch_session(self, command: SwitchSessionCommand) -> None:
        path = os.path.abspath(os.path.expanduser(command.session_path))
        if os.path.isdir(path):
            raise CommandError(f"{path}: is a folder, not a session file")
        if not os.path.exists(path):
            raise CommandError(f"{path}: no such session file")
        # open first, so a file that cannot be used leaves the run and the session alone
        session = Session.open(path)
        current = self.agent.session
        await self._stop_run()
        if current.path is not None and os.path.exists(current.path) and os.path.samefile(current.path, path):
            session.close()
            session = Session.open(path)  # reread: the stopped run may have appended to this very file
        self._replace(session, self.factory.model_for(session, self.agent.model), None)

    async def _fork(self, command: ForkCommand) -> str:
        current = self.agent.session
        entry_id = current.resolve(command.entry_id)
        entry = current.raw_entry(entry_id)
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "user":
            what = f"a {message.get('role')} message" if isinstance(message, dict) else f"a {entry.get('type')} entry"
            raise CommandError(
                f"Invalid entry ID for forking: {entry_id} is {what}; fork takes a user message (checkout moves to any entry)"
            )
        text = views.user_text(message.get("content"))
        await self._stop_run()
        parent = entry.get("parentId")
        if parent is None:
            if current.path is None:
                session = Session.in_memory(current.cwd or self.factory.cwd)
            else:
                session = Session.create(current.session_dir, cwd=self.factory.cwd, parent_session=current.path)
        else:
            session = current.fork(parent)
        self._replace(session, self.factory.model_for(session, self.agent.model), None if parent else self.agent.thinking_level)
        return text


def _message(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KeyError) and text.startswith(("'", '"')):
        text = text[1:-1]
    return text or type(exc).__name__
