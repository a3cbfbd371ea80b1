"""``%%pi`` and ``%pi``: the agent in a notebook cell, and everything else a notebook user does."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import os
import shlex
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from IPython.display import display
from traitlets.config import Config

from ..agent.agent import Agent, AgentBusyError
from ..providers.registry import ModelNotFoundError
from ..session import CycleError, EntryNotFoundError, SessionError, SessionFileError
from . import cell_log, kernel_notebook, notebook_context, world_cells
from .agent_view.siblings import siblings_footer
from .cells import CellRun, record_run, start_for
from .config import PiConfig, file_settings
from .durable import page_bridge
from .failure import CellFailed, CompactionAdvice, cell_failure
from .freshness import fresh_agent
from .line_commands import SUBCOMMANDS, LineCommands
from .prompt_secrets import guard_prompt
from .prompt_text import PromptFormatError, fill_prompt_parts, filled_note
from .replay_cell import cell_replay, no_pace_for_grids
from .result import CellResult
from .runner import BackgroundRun, PendingRun
from .state import NotebookState
from .typos import OptionError, command_error, named, option_error, session_label

_USER_ERRORS = (
    SessionError,
    SessionFileError,
    EntryNotFoundError,
    CycleError,
    FileNotFoundError,
    ValueError,
    PromptFormatError,
    AgentBusyError,
    ModelNotFoundError,  # a KeyError; compaction errors are ValueErrors
)


def _cell_id(shell: Any, source: str) -> str:
    info = getattr(shell, "_pi_cell_id", None)
    if info:
        return str(info)
    parent: dict[str, Any] = {}
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        try:
            parent = kernel.get_parent() or {}
        except Exception:  # noqa: BLE001 - older kernels have no get_parent
            parent = getattr(shell, "parent_header", {}) or {}
    cell_id = (parent.get("metadata") or {}).get("cellId")
    if cell_id:
        return str(cell_id)
    # nbclient and papermill do not send cell ids: fall back to the cell's text
    return "src:" + hashlib.sha1(source.encode()).hexdigest()[:16]


def _execution_count(shell: Any) -> int | None:
    """The number of the cell being run (``In [n]``).

    IPython 9 increments ``shell.execution_count`` before the cell runs and IPython 8 after,
    so the count is read from the running cell's own result, which both versions set.
    """
    result = getattr(getattr(shell, "displayhook", None), "exec_result", None)
    count = getattr(result, "execution_count", None)
    if isinstance(count, int):
        return count
    count = getattr(shell, "execution_count", None)
    return count if isinstance(count, int) else None


@magics_class
class PiMagics(LineCommands, Magics, PiConfig):
    """The ``%%pi`` cell magic and the ``%pi`` line magic (``%config PiMagics`` lists the defaults)."""

    def __init__(self, shell: Any) -> None:
        settings, self._config_files = file_settings(os.getcwd())
        cfg = Config({"PiConfig": settings})
        if shell is not None and getattr(shell, "config", None) is not None:
            cfg.merge(shell.config)
        super().__init__(shell=shell, config=cfg)
        self.state = NotebookState(self, shell.user_ns if shell is not None else {})
        self._awaited = False  # True while pi_async runs the cell: the wait is left to it
        self._model_note = ""

    # ---------------------------------------------------------------- %%pi

    @magic_arguments(name="%pi")  # the usage line reads ``%%pi [...]``: IPython adds one ``%``
    @argument("--session", "-s", default=None, help="session name (in the session folder) or path of a .jsonl file")
    @argument(
        "--model",
        "-m",
        default=None,
        help="model as provider/model (e.g. anthropic/claude-sonnet-4-5, offline/echo); the session keeps it for later cells",
    )
    @argument("--thinking", "-t", default=None, help="thinking level: off, minimal, low, medium, high, xhigh (kept for later cells)")
    @argument("--tools", default=None, help="comma-separated tool names for this cell ('' for none), e.g. read,python")
    @argument("--continue", "-c", dest="continue_", action="store_true", help="append after the current leaf instead of forking on re-run")
    @argument("--background", "-b", action="store_true", help="return at once with a handle (await it, .result(), .abort())")
    @argument("--no-notebook", action="store_true", help="tell the agent nothing of the cells run since its last turn (this cell only)")
    @argument("--name", "-n", default=None, help="also store the result (or the background handle) in this variable")
    @argument("--vary", action="append", default=None, metavar="KEY=V1,V2", help="a grid: one sibling branch per value (repeatable)")
    @argument("--repeat", type=int, default=None, help="a grid: runs per combination")
    @argument("--concurrency", type=int, default=None, help="a grid: branches at once (default 128)")
    @argument("--budget", type=float, default=None, help="a grid: US dollars; no branch is launched past it")
    @argument("--score", action="append", default=None, metavar="NAME", help="a grid: a registered scorer (judge, length, answered)")
    @argument("--replay", action="store_true", help="serve the recorded answers: this cell's, at the recorded pace (a grid: each branch's)")
    @argument("--pace", default=None, help="a replay's speed: 1x (as recorded, the default), 2x, 0.5x, instant")
    @argument("--step", action="store_true", help="a replay: hold before each tool call and branch point until Go on is pressed")
    @argument("--yes", action="store_true", help="a grid: run more branches than the limit (64)")
    @argument("--until-decided", action="store_true", help="a grid: repeats in rounds until every comparison is decided")
    @argument("--compare", action="append", default=None, metavar="KEY", help="a grid: the key whose values are compared")
    @argument("--rate-limit", type=float, default=None, help="a grid: requests per second to each provider, whole grid")
    @argument("--executor", default=None, help="a grid: local, dask (a LocalCluster) or a scheduler address tcp://host:8786")
    @cell_magic
    def pi(self, line: str, cell: str) -> Any:
        """Send the cell's text to the agent and show its work live; the cell's value is the result.

        ``{expr}`` in the text is replaced by its value in the notebook's namespace
        (``{df.shape}``, ``{len(xs)}``, ``{x:.2f}``), as in IPython's ``!`` commands; write
        ``{{`` and ``}}`` for literal braces. Code blocks and ``inline code`` are sent as
        written (an f-string there keeps its braces), and the cell says what it filled in. An
        unknown name is an error, never sent. The options expand ``{expr}`` as any IPython
        magic's do (``%%pi --model {MODEL}``).

        The agent is told what the notebook ran since its last turn: before the prompt, the
        cells run since then (code, output, result, error, plots) are recorded and sent with it
        as one message, shown as a folded line (``--no-notebook``: not for this cell;
        ``PiMagics.notebook_context``: not at all; a ``# pi: skip`` comment keeps a cell out).

        Each cell is a node of the session tree: re-running a cell forks from where it
        started, so the new answer is a sibling of the old one (``--continue`` appends after
        the current leaf instead). The cell blocks until the agent is done; the stop button
        aborts cleanly (the partial answer is kept as ``aborted``). ``--background`` returns
        a handle at once; a second run on a session that is busy is refused.

        The value (``_``, ``Out[n]``, ``--name VAR``) is a ``CellResult``: ``text``,
        ``entry_ids``, ``usage``, ``cost``, ``session``.

        ``--vary KEY=V1,V2`` (and ``--repeat``, ``--concurrency``, ``--budget``, ``--score``,
        ``--replay``, ``--yes``, ``--until-decided``, ``--compare``, ``--rate-limit``,
        ``--executor``) runs a grid of sibling branches instead; its value is an
        ``ExperimentResult`` (``.summary()``, ``.table()``, ``.branches``, ``.compare()``,
        ``.plot()``), or with ``--background`` a handle whose result it is.
        """
        try:
            # shell-style words, so quotes group and are removed: --tools '' and --session "my study.jsonl"
            # (IPython's own splitting keeps the quotes inside the values)
            args = self.pi.parser.parse_args(shlex.split(line))
        except ValueError as exc:
            raise UsageError(f"%%pi: {exc} in the options {line!r}") from None
        except UsageError as exc:  # IPython's parser says "bad option" this way
            raise UsageError(option_error(self.pi.parser, str(exc))) from None
        except SystemExit as exc:  # argparse's way of saying "bad option"
            raise UsageError(f"%%pi: bad options: {line!r}") from exc
        try:
            from .experiments.cell import is_experiment, run_experiment_cell

            if is_experiment(args):  # a grid of sibling branches (see experiment_cell)
                no_pace_for_grids(args)
                return run_experiment_cell(self, args, cell, _cell_id(self.shell, cell), _execution_count(self.shell))
            return self._run_cell(args, cell)
        except _USER_ERRORS as exc:
            raise UsageError(f"%%pi: {named(exc, self.state)}") from None

    def _run_cell(self, args: argparse.Namespace, cell: str) -> Any:
        text = cell.strip()
        if not text:
            raise UsageError("%%pi: the cell is empty; write the prompt below %%pi")
        filled = fill_prompt_parts(text, self._user_ns())  # prose only: code blocks and inline code are sent as written
        prompt, warning = guard_prompt(filled.text, text)
        if warning:
            print(warning, file=sys.stderr)
        state = self.state
        agent = state.agent_for(state.find_session(args.session, create=True) if args.session else None)
        busy = state.busy(agent)
        if busy is not None or agent.is_running:
            raise UsageError(
                f"%%pi: session {session_label(agent.session)} is busy with a background run "
                f"({busy.label if busy else 'running'}); await it, or stop it with %pi abort"
            )
        agent = fresh_agent(state, agent)  # what other writers appended since the last cell (or a reopened file)
        replay = cell_replay(args, agent, self.base_url or None)  # --replay, --pace, --step (see replay_cell)
        self._configure(agent, args)
        cell_id = _cell_id(self.shell, cell)
        start, forked = start_for(agent.session, cell_id, continue_=args.continue_)
        if start != agent.session.leaf_id:
            agent.session.checkout(start, persist=False)
            agent.reload()
        moved, start = world_cells.move_for_cell(agent, start)  # a re-run starts in its start's world (and the user's own changes)
        world_cells.say(moved, "pi: ")
        told = notebook_context.for_cell(self, agent, start, off=args.no_notebook, world_line=moved)  # what ran since the last turn
        tools_before = agent.tools
        if args.tools is not None:
            agent.tools = agent.resolve_tools([t.strip() for t in args.tools.split(",") if t.strip()])
        view = self._make_view(agent)
        if replay is not None:
            replay.attach(view)
        binding = state.binding(agent.session)  # the notebook's saved outputs say which conversation it continues
        note = filled_note(filled.fields, code_kept=filled.code_kept)  # the widget shows the prompt as sent, this line why
        if view is not None and note:
            view.notice(note)
        handle = display(view, display_id=True, metadata=binding) if view is not None else None
        if view is None:
            print(f"[{state.header(agent.session)}]")
            if note:
                print(f"pi: {note}")
        finish_actions = page_bridge.connect_view(view, agent, state.runner, handle) if view is not None else (lambda: None)
        count = _execution_count(self.shell)
        advice = CompactionAdvice()

        async def run() -> CellResult:
            unsubscribe = agent.subscribe(view.handle) if view is not None else (lambda: None)
            unadvise = agent.subscribe(advice)
            result = None
            try:
                with replay.serving(agent) if replay is not None else contextlib.nullcontext():
                    result = await agent.prompt(prompt, context=told)
                return CellResult.from_run(result, session=agent.session, cell_id=cell_id, forked=forked, prompt=prompt)
            finally:
                unsubscribe()
                unadvise()
                agent.tools = tools_before
                world_cells.settle(agent)
                produced = list(result.entry_ids) if result is not None else []
                try:
                    record_run(
                        agent.session,
                        CellRun(
                            cell_id=cell_id,
                            started_from=start,
                            produced=produced,
                            end=agent.session.leaf_id,
                            execution_count=count,
                            filled=note,
                        ),
                    )
                except SessionError:
                    pass
                if view is not None and handle is not None:
                    try:  # the static rendering replaces the widget: it reads the same once the kernel is gone
                        finish_actions()  # the "forget this" clicked during the run
                        view.set_footer(*siblings_footer(agent.session, cell_id, start, agent.session.leaf_id))
                        handle.update(view.final_bundle(), raw=True, metadata=binding)
                        view.close()
                    except Exception:  # noqa: BLE001 - the transcript update is best effort
                        pass

        future = state.runner.submit(run())
        if args.background:
            key = agent.session.path or f"memory:{agent.session.id}"
            bg = BackgroundRun(future, agent.abort, label=f"cell [{count}]" if count else "background run", runner=state.runner)
            state.background[key] = bg
            if view is not None:
                view.on_stop(agent.abort, any_thread=True)
            if args.name:
                self._user_ns()[args.name] = bg
            return bg
        stopped = lambda: bool(view and view.stop_requested)  # noqa: E731
        finish = lambda r: self._finish_cell(args, view, r, cell_failure(agent, r, advice.text))  # noqa: E731
        pending = PendingRun(state.runner, future, agent.abort, finish, stopped)
        return pending if self._awaited else pending.wait()

    def _finish_cell(self, args: argparse.Namespace, view: Any, result: CellResult, failed: CellFailed | None = None) -> CellResult:
        if args.name:
            self._user_ns()[args.name] = result
        if view is None:
            print(result.text)
        if failed is not None:
            raise failed
        return result

    async def pi_async(self, line: str, cell: str) -> Any:
        """``%%pi`` as a kernel awaits it (see :mod:`.async_cell`): the same cell, and Stop works while it blocks."""
        self._awaited = True
        try:
            # the options expand {expr} and $name as IPython's run_cell_magic expands them (the cell's frame)
            value = self.pi(self.shell.var_expand(line, 1) if self.shell is not None else line, cell)
        finally:
            self._awaited = False
        if not isinstance(value, PendingRun):
            return value
        try:
            return await value.wait_async()
        except _USER_ERRORS as exc:
            raise UsageError(f"%%pi: {named(exc, self.state)}") from None

    def _configure(self, agent: Agent, args: argparse.Namespace) -> None:
        from ..providers import resolve_model

        if args.model:
            model = resolve_model(args.model, base_url=self.base_url or None)
            if not args.replay:  # before switching: a failed cell must not change the session's model
                self._require_key(model, "%%pi")
            if agent.model.ref != model.ref:
                agent.set_model(model)
                self._model_note = f"model is now {model.ref} for the next cells"
        elif not args.replay:  # a replay needs no key
            self._require_key(agent.model, "%%pi")
        if args.thinking:
            agent.set_thinking_level(args.thinking)

    def _make_view(self, agent: Agent) -> Any:
        if not self.widget:
            return None
        from .agent_view.view import AgentView

        view = AgentView(
            title=self.state.header(agent.session),
            model=agent.model.ref,
            max_rate=self.stream_rate,
            scale=self.scale,
        )
        if self._model_note:  # --model changed the session's model: say so where the user looks
            view.set_status(note=self._model_note)
            self._model_note = ""
        view.on_stop(agent.abort, any_thread=True)
        return view

    # ---------------------------------------------------------------- %pi

    # IPython types line_magic("name") as returning ``_F | Callable[[_F], _F]`` with _F unbound,
    # so mypy sees the decorated method as Never; the decorator returns the function unchanged.
    @line_magic("pi")  # type: ignore[arg-type]
    def pi_line(self, line: str) -> Any:
        """``%pi COMMAND [ARGS]``: everything else a notebook user does with the agent and its sessions.

        ``%pi help`` prints the commands; ``%%pi?`` explains the cell magic.
        """
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%pi: {exc}") from None
        if not words or words[0] in ("help", "-h", "--help"):
            print("%pi COMMAND [ARGS]\n\n" + SUBCOMMANDS)
            return None
        command, rest = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command.replace('-', '_')}", None)
        if handler is None:
            raise UsageError(command_error(command, [n[5:] for n in dir(self) if n.startswith("_cmd_")]))
        try:
            return handler(rest)
        except UsageError:
            raise
        except OptionError as exc:  # already the one line, naming the command and the option
            raise UsageError(str(exc)) from None
        except SystemExit:
            raise UsageError(f"%pi {command}: bad arguments {' '.join(rest)!r}") from None
        except _USER_ERRORS as exc:
            raise UsageError(f"%pi {command}: {named(exc, self.state)}") from None

    # dedented like the docstring above, so ``%pi?`` lines the commands up under their heading
    pi_line.__doc__ = inspect.cleandoc(pi_line.__doc__ or "") + "\n\nCommands:\n" + SUBCOMMANDS  # type: ignore[assignment]  # Never: see @line_magic

    def _user_ns(self) -> dict[str, Any]:
        """The notebook's namespace: where prompts read ``{names}`` and ``--name`` binds its result."""
        if self.shell is None:  # a PiMagics built by hand, not registered with a shell
            raise UsageError("%%pi: no IPython shell; load the extension in a notebook with %load_ext pi_jupyter")
        return self.shell.user_ns


# an abbreviation is a typo taken silently (``--tool`` for ``--tools``): every option is written whole
PiMagics.pi.parser.allow_abbrev = False  # the parser @magic_arguments made


def register(shell: Any) -> PiMagics:
    """Register the magics (what ``%load_ext pi_jupyter`` does)."""
    magics = PiMagics(shell)
    shell.register_magics(magics)
    if magics not in shell.configurables:
        shell.configurables.append(magics)

    def remember_cell(info: Any) -> None:
        shell._pi_cell_id = getattr(info, "cell_id", None)
        if shell._pi_cell_id:
            magics.state.seen_cells.add(str(shell._pi_cell_id))

    magics.state.seen_cells.add(_cell_id(shell, ""))  # the cell that loads the extension
    magics.state.cell_log = cell_log.install(shell)  # what the kernel runs, for the agent's notebook context

    shell.events.register("pre_run_cell", remember_cell)
    shell.events.register("pre_run_cell", kernel_notebook.watch(shell, magics.state.notebook))  # which notebook, which cell
    world_cells.watch_cells(shell, magics.state.tracker)  # what the user's own cells may change in place is compared, not trusted
    from .async_cell import install, stop_note

    if not install(shell) and (note := stop_note(shell)):
        print(note)
    return magics
