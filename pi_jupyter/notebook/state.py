"""What a kernel remembers between cells: its sessions, their agents, background runs, event logs."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args

from ..agent.agent import Agent
from ..agent.events import Event
from ..agent.typed_text import scrub
from ..session import Session, SessionError
from .binding import Binder, origin, session_label
from .cell_text import notebook_source
from .display_capture import display_capture
from .kernel_notebook import KernelNotebook
from .live_settings import apply_settings
from .main_thread import KernelMainThread
from .moves import history
from .notebook_file import Binding, new_notebook_id, read_notebook
from .runner import BackgroundRun, KernelRunner
from .session_commands import describe
from .world_cells import Tracker, attach

LOG_LIMIT = 5000


ConfirmMode = Literal["none", "mutating", "all"]


def _is_confirm_mode(value: str) -> TypeGuard[ConfirmMode]:
    return value in get_args(ConfirmMode)


class NotebookState:
    """Sessions opened by this kernel, the agent of each, and the one that ``%%pi`` uses by default."""

    def __init__(self, config: Any, namespace: dict[str, Any]) -> None:
        self.config = config
        self.namespace = namespace
        self.runner = KernelRunner()
        self.main_thread = KernelMainThread(self.runner, getattr(config, "shell", None))
        """Where the agents' python code runs: the kernel's main thread (see :mod:`.main_thread`)."""
        self.agents: dict[str, Agent] = {}
        self.current: str | None = None
        self.background: dict[str, BackgroundRun] = {}
        self.logs: dict[str, collections.deque[dict[str, Any]]] = {}
        self.applied: dict[str, dict[str, Any]] = {}
        """Per agent: the settings it last took (see :mod:`.live_settings`)."""
        self.tracker = Tracker()
        """What the world knows of the namespace, shared by every session's world (see :mod:`.world_cells`)."""
        self.seen_cells: set[str] = set()
        """Ids of the cells this kernel ran (how it knows the notebook file it reads is its own)."""
        self.notebook_id: str | None = None
        """This notebook's id (see :mod:`.notebook_file`), known once a session is bound."""
        self.notebook = KernelNotebook(namespace)
        """What this kernel knows of its notebook: its path now, the ``%pi`` cells it ran."""
        self._bound_path: str | None = None
        self._told_path: str | None = None
        self.cell_log: Any = None
        """The kernel's :class:`~.cell_log.CellLog` (set when the magics are registered)."""
        self._origins: dict[str, str | None] = {}

    # ------------------------------------------------------------ sessions

    @property
    def session_dir(self) -> Path:
        """Where new session files go."""
        return Path(os.path.abspath(os.path.expanduser(self.config.session_dir)))

    @property
    def notebook_path(self) -> str | None:
        """The path of this kernel's notebook now, as the front end told it (``None`` under nbclient and papermill)."""
        return self._bound_path if self._bound_path is not None else self.notebook.path()

    def _binder(self) -> Binder:
        return Binder(self.session_dir, self._open, self._create)

    def _notebook_session(self) -> Session:
        """The session this notebook continues, or a new one (the rule of :mod:`.binding`); says once what it chose, if anything."""
        told = self.notebook.path()
        path = self.notebook.renamed_to(told, self.seen_cells)
        found = self.notebook.candidates() if path is None else []
        choice = self._binder().choose(path, self.seen_cells, found, history(path) if path else ())
        self.notebook_id = choice.notebook_id
        self._bound_path, self._told_path = path, told
        key = choice.session.path or f"memory:{choice.session.id}"
        self._origins[key] = origin(choice.session, choice.notebook_id)
        if choice.said:  # a copy forked, a notebook moved, a conversation not found: said once, in the cell where it happened
            print(f"pi: {choice.said}")
        return choice.session

    def _follow_notebook(self, session: Session) -> None:
        """A notebook renamed or moved while its kernel runs: its session records the new path and takes its new name."""
        if self._bound_path is None or self.notebook_id is None:
            return
        now = self.notebook.path()
        if now is not None and now != self._told_path:
            self._binder().follow(session, self.notebook_id, self._bound_path, now)
            self._bound_path = self._told_path = now

    def _create(self, name: str | None) -> Session:
        session = Session.create(self.session_dir, durability=self.config.durability)
        if name and (name := scrub(name).strip()):  # a name is typed text: never stored with a key in it
            session.set_name(name)
        return session

    def identity(self) -> str:
        """This notebook's id: the one its saved outputs carry, else a new one."""
        if self.notebook_id is None:
            nb = read_notebook(self.notebook_path)
            latest = nb.latest() if nb is not None else None
            self.notebook_id = latest.notebook if latest is not None else new_notebook_id()
        return self.notebook_id

    def _bind(self, key: str, session: Session) -> None:
        """``session`` becomes the one this notebook continues (``%pi open``, ``new``, ``fork``, ``--session``)."""
        if key in self._origins:
            return
        notebook_id = self.identity()
        self._origins[key] = origin(session, notebook_id)
        path = self.notebook_path
        self._binder().adopt(session, notebook_id, path)
        if self._bound_path is None:
            self._bound_path, self._told_path = path, self.notebook.path()

    def header(self, session: Session) -> str:
        """What the header of a ``%%pi`` output says of its session: ``name · short id``, and where it started if not here."""
        key = session.path or f"memory:{session.id}"
        started = self._origins.get(key)
        label = session_label(session.name, session.id)
        return f"{label} · {started}" if started else label

    def binding(self, session: Session) -> dict[str, Any]:
        """The output metadata that ties a ``%%pi`` output to ``session`` (see :mod:`.notebook_file`)."""
        return Binding.of(session.id, self.identity(), session.path, self.notebook_path).metadata()

    def named(self, ref: str) -> list[Any]:
        """The sessions of the session folder called ``ref``, or whose id starts or ends with it (a short id)."""
        infos = Session.list(self.session_dir)
        named = [i for i in infos if i.name == ref]
        if named:
            return named
        return [i for i in infos if len(ref) >= 4 and (i.id.startswith(ref) or i.id.replace("-", "").endswith(ref))]

    def find_session(self, ref: str, *, create: bool) -> Session:
        """A session by path (``x.jsonl`` or containing ``/``), by name, or by id prefix in the session folder."""
        if "/" in ref or os.sep in ref or ref.endswith(".jsonl"):
            path = os.path.abspath(os.path.expanduser(ref))
            if path in self.agents:
                return self.agents[path].session
            if not os.path.exists(path):
                if not create:
                    raise FileNotFoundError(f"no session file at {path}")
                # a new file in an existing folder is a new session; a missing folder is most likely a typo
                if not os.path.isdir(os.path.dirname(path)):
                    raise FileNotFoundError(f"no folder {os.path.dirname(path)} for the new session file {os.path.basename(path)}")
            return Session.open(path, create=True, durability=self.config.durability)
        matches = self.named(ref)
        if len(matches) > 1:
            which = "; ".join(describe(i) for i in matches)
            raise SessionError(f"{len(matches)} sessions are named {ref!r}, so none was picked: {which}; give the id (%pi open ID)")
        if matches:
            return self._open(matches[0].path)
        for agent in self.agents.values():  # an open session outside the folder (or in memory)
            if agent.session.name == ref:
                return agent.session
        if not create:
            raise SessionError(f"no session named {ref!r} in {self.session_dir} (%pi sessions lists them; %pi new {ref} makes one)")
        return self._create(ref)

    def _open(self, path: str) -> Session:
        path = os.path.abspath(path)
        if path in self.agents:
            return self.agents[path].session
        return Session.open(path, durability=self.config.durability)

    def agent_for(self, session: Session | None = None, *, make_current: bool = True) -> Agent:
        """The agent of ``session`` (default: the current session, else the notebook's default one)."""
        if session is None and self.current is not None and self.current in self.agents:
            key = self.current
        else:
            if session is None:
                session = self._notebook_session()
            key = session.path or f"memory:{session.id}"
        agent = self.agents.get(key)
        if agent is None:
            assert session is not None
            agent = self._new_agent(session)
            self.agents[key] = agent
            self.applied[key] = {name: getattr(self.config, name) for name in ("model", "base_url", "thinking")}
        if not agent.is_running:  # settings changed since the last cell apply now (never in the middle of a run)
            self.applied[key] = apply_settings(agent, self.config, self.applied.get(key, {}), make_policy=self._policy)
        if make_current:
            if key != self.current:
                self._bind(key, agent.session)
            self.current = key
            self._follow_notebook(agent.session)
        return agent

    def _policy(self, confirm: str) -> Any:
        from ..agent.policy import Policy

        # PiMagics.confirm is an Enum trait of these three, so a bad value never gets this far
        if not _is_confirm_mode(confirm):
            raise ValueError(f"confirm: {confirm!r} is not one of 'none', 'mutating', 'all'")
        return Policy(root=os.getcwd(), confirm=confirm, confirm_callback=self._confirm)

    def _new_agent(self, session: Session) -> Agent:
        cfg = self.config
        policy = self._policy(cfg.confirm)
        agent = Agent(
            session,
            model=cfg.model or None,
            thinking=cfg.thinking or None,
            tools=[],  # given by apply_settings, with the policy and the timeout
            base_url=cfg.base_url or None,
            cwd=os.getcwd(),
            tool_extra={
                "namespace": self.namespace,
                "timeout": cfg.tool_timeout,
                "display_capture": display_capture,
                "main_thread": self.main_thread,
                "notebook": notebook_source(self.cell_log),
            },
            policy=policy,
        )
        agent.extensions.load_entry_points()
        attach(agent, self.namespace, self.tracker)
        log: collections.deque[dict[str, Any]] = collections.deque(maxlen=LOG_LIMIT)
        self.logs[session.path or f"memory:{session.id}"] = log

        def record(event: Event) -> None:
            if event.type != "message_update":
                log.append(event.to_dict())
            else:
                log.append(event.to_dict(delta_only=True))

        agent.subscribe(record)
        return agent

    async def _confirm(self, tool_name: str, args: dict[str, Any]) -> bool:
        """Ask on the cell's input line whether a tool may run; a background run cannot ask (no)."""
        from ..agent.redact import redact_json

        preview = redact_json(json.dumps(args, ensure_ascii=False))  # shown in the cell's output
        if len(preview) > 300:
            preview = preview[:300] + "…"

        def ask() -> bool:
            try:
                answer = input(f"pi wants to run {tool_name} {preview}\nAllow? [y/N] ")
            except Exception:  # noqa: BLE001 - a frontend without stdin (nbclient, papermill) cannot answer
                return False
            return answer.strip().lower() in ("y", "yes")

        try:
            return await self.runner.ask_main(ask)
        except RuntimeError:
            return False

    def new_session(self, name: str | None = None) -> Agent:
        """Start a new session file in the session folder and make it current."""
        return self.agent_for(self._create(name))

    def switch(self, session: Session, *, move_world: bool = True) -> Agent:
        """Make ``session`` the current one; the live world moves to where its world stands (``move_world``), and the line is said."""
        from .world_cells import say, switch_to

        agent = self.agent_for(session)
        if move_world:
            say(switch_to(agent), "pi: ")
        return agent

    def busy(self, agent: Agent) -> BackgroundRun | None:
        """The background run currently using ``agent``'s session, if any."""
        key = agent.session.path or f"memory:{agent.session.id}"
        run = self.background.get(key)
        if run is not None and run.done:
            del self.background[key]
            return None
        return run if run is not None or not agent.is_running else self.background.get(key)

    def log_lines(self, agent: Agent, limit: int = 50) -> list[str]:
        """The last ``limit`` events of ``agent`` as JSON lines (secrets redacted, each line valid JSON)."""
        from ..agent.redact import redact_json

        log = self.logs.get(agent.session.path or f"memory:{agent.session.id}", collections.deque())
        return [redact_json(json.dumps(e, ensure_ascii=False, default=str)) for e in list(log)[-limit:]]
