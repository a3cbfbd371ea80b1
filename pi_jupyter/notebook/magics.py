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
from ..agent.typed_text import scrub
from ..providers.registry import ModelNotFoundError
from ..session import CycleError, EntryNotFoundError, SessionError, SessionFileError
from . import context_commands, page_bridge, world_cells
from .cells import CellRun, record_run, start_for
from .config import PiConfig, file_settings
from .failure import CellFailed, CompactionAdvice, cell_failure
from .freshness import fresh_agent
from .prompt_secrets import guard_prompt
from .prompt_text import PromptFormatError, fill_prompt
from .replay_cell import cell_replay, no_pace_for_grids
from .result import CellResult
from .runner import BackgroundRun, PendingRun
from .siblings import siblings_footer
from .state import NotebookState
from .typos import command_error, named, option_error, session_label

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

SUBCOMMANDS = """\
  model [PROVIDER/MODEL]     show or set the model of the current session
  models                     list the models the registry knows
  sessions                   list the sessions in the session folder
  new [NAME]                 start a new session (and make it current)
  open PATH|NAME|ID          open a session file (and make it current)
  status                     the current session, model, leaf and runs
  checkout ID [--summarize] [--instructions TEXT] [--label TEXT] [--force]
                             move to another node (ID: id, id prefix, label, cell id, or 'root');
                             its variables and files come back (--force: over your own changes)
  fork [ID]                  copy the branch up to ID into a new session file (and switch to it)
  label ID TEXT              label an entry ('' clears)
  forget ID                  drop an entry from what the model sees (the file keeps it)
  edit ID TEXT               replace what the model sees of an entry (the file keeps the original)
  name TEXT                  name the current session
  compact [INSTRUCTIONS]     summarize older history into a compaction entry
  context                    what the next request would send: system prompt, messages, tokens
  tree [--full] [--text]     draw the session tree (Graphviz; text without it)
  compare A B [C ...]        compare branches (ids, labels, root, In[n], cell ids, CELL@2; --turns)
  score REF NAME [NAME ...]  score an experiment (its id, 'last', or a branch leaf) with registered scorers
  world [gc [--dry-run]]     the variables and files the tools changed on this branch; the store's space (gc reclaims it)
  judge [EXP] [--by KEY] [--as NAME] [--model MODEL]
                             blind pairwise judging of an experiment's answers (a widget; --model: a model judges)
  log [N]                    the last N events of the current session (JSON lines)
  abort                      stop the current session's background run
  export [--branch REF] [--format html|markdown] [--force] [PATH]
                             write the session as one self-contained HTML page (or a branch as Markdown)
  skills                     the skills found for this project, with their warnings
  class FOLDER [--reference FILE] [-o PAGE]
                             a class's session files: students by cells, answers side by side, trees
  ext [load MODULE | remove NAME]
                             list, load or remove extensions of the current session's agent
"""


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
class PiMagics(Magics, PiConfig):
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
        ``{{`` and ``}}`` for literal braces. An unknown name is an error, never sent. The
        options expand ``{expr}`` as any IPython magic's do (``%%pi --model {MODEL}``).

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
            from .experiment_cell import is_experiment, run_experiment_cell

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
        prompt, warning = guard_prompt(fill_prompt(text, self._user_ns()), text)
        if warning:
            print(warning, file=sys.stderr)
        state = self.state
        agent = state.agent_for(state.find_session(args.session, create=True) if args.session else None)
        if said := state.take_said():  # a copy forked, a notebook moved: said once, in the cell where it happened
            print(f"pi: {said}")
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
        world_cells.say(world_cells.move_for_cell(agent, start), "pi: ")  # a re-run starts in its start's world
        tools_before = agent.tools
        if args.tools is not None:
            agent.tools = agent.resolve_tools([t.strip() for t in args.tools.split(",") if t.strip()])
        view = self._make_view(agent)
        if replay is not None:
            replay.attach(view)
        binding = state.binding(agent.session)  # the notebook's saved outputs say which conversation it continues
        handle = display(view, display_id=True, metadata=binding) if view is not None else None
        if view is None:
            print(f"[{state.header(agent.session)}]")
        finish_actions = page_bridge.connect_view(view, agent, state.runner, handle) if view is not None else (lambda: None)
        count = _execution_count(self.shell)
        advice = CompactionAdvice()

        async def run() -> CellResult:
            unsubscribe = agent.subscribe(view.handle) if view is not None else (lambda: None)
            unadvise = agent.subscribe(advice)
            result = None
            try:
                with replay.serving(agent) if replay is not None else contextlib.nullcontext():
                    result = await agent.prompt(prompt)
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
                        CellRun(cell_id=cell_id, started_from=start, produced=produced, end=agent.session.leaf_id, execution_count=count),
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
            bg = BackgroundRun(future, agent.abort, label=f"cell [{count}]" if count else "background run")
            state.background[key] = bg
            if view is not None:
                view.on_stop(agent.abort)
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

    def _require_key(self, model: Any, where: str) -> None:
        from ..providers import api_key_for
        from ..providers.keys import env_key_names

        if api_key_for(model) is None:
            names = " or ".join(env_key_names(model.provider)) or "the provider's API key variable"
            raise UsageError(f"{where}: no API key for {model.provider}: set {names} (or choose the offline model, offline/echo)")

    def _make_view(self, agent: Agent) -> Any:
        if not self.widget:
            return None
        from .agent_view import AgentView

        view = AgentView(
            title=self.state.header(agent.session),
            model=agent.model.ref,
            max_rate=self.stream_rate,
            scale=self.scale,
        )
        if self._model_note:  # --model changed the session's model: say so where the user looks
            view.set_status(note=self._model_note)
            self._model_note = ""
        view.on_stop(agent.abort)
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

    def _agent(self) -> Agent:
        return self.state.agent_for()

    def _cmd_model(self, rest: list[str]) -> Any:
        agent = self._agent()
        if rest:
            from ..providers import resolve_model

            model = resolve_model(rest[0], base_url=self.base_url or None)
            self._require_key(model, "%pi model")
            agent.set_model(model)
        print(f"{agent.model.ref} (thinking {agent.thinking_level}, context window {agent.model.context_window:,} tokens)")
        return None

    def _cmd_models(self, rest: list[str]) -> Any:
        from ..providers import list_models

        for model in list_models():
            print(f"{model.ref:45s} context {model.context_window:>9,}  reasoning {'yes' if model.reasoning else 'no '}")
        return None

    def _cmd_sessions(self, rest: list[str]) -> Any:
        from .session_commands import sessions_listing

        print(sessions_listing(self.state))
        return None

    def _cmd_new(self, rest: list[str]) -> Any:
        agent = self.state.new_session(" ".join(rest) or None)
        return agent.session

    def _cmd_open(self, rest: list[str]) -> Any:
        if not rest:
            raise UsageError("%pi open: give a path, a session name or an id prefix")
        session = self.state.find_session(rest[0], create=False)
        agent = self.state.switch(session)
        report = session.load_report
        if not report.ok:
            print(str(report), file=sys.stderr)
        return agent.session

    def _cmd_status(self, rest: list[str]) -> Any:
        agent = self._agent()
        s = agent.session
        busy = self.state.busy(agent)
        lines = [
            f"session  {self.state.header(s)}  ({s.path or 'in memory'})",
            f"entries  {len(s)}, leaf {s.leaf_id}",
            f"model    {agent.model.ref}, thinking {agent.thinking_level}",
            f"tools    {', '.join(t.name for t in agent.tools) or '(none)'}",
            f"state    {'running: ' + busy.label if busy else ('running' if agent.is_running else 'idle')}",
        ]
        if not s.load_report.ok:
            lines.append(f"problems {len(s.load_report.problems)} (see %pi open or pi-jupyter info)")
        print("\n".join(lines))
        return None

    def _cmd_checkout(self, rest: list[str]) -> Any:
        parser = argparse.ArgumentParser(prog="%pi checkout", add_help=False)
        parser.add_argument("target")
        parser.add_argument("--summarize", action="store_true")
        parser.add_argument("--instructions", default=None)
        parser.add_argument("--label", default=None)
        parser.add_argument("--force", action="store_true")
        opts = parser.parse_args(rest)
        agent = self._agent()
        target = None if opts.target in ("root", "none", "null") else self._resolve_ref(agent, opts.target)
        world_cells.force_next(agent, opts.force)
        leaf = self.state.runner.wait(
            self.state.runner.submit(agent.checkout(target, summarize=opts.summarize, instructions=opts.instructions, label=opts.label)),
            on_interrupt=agent.abort,
        )
        print(f"checked out {target or 'the point before the first entry'}; leaf is now {leaf}")
        world_cells.say(world_cells.note(agent))  # what came back with it
        return None

    def _resolve_ref(self, agent: Agent, ref: str) -> str:
        from .cells import last_run

        try:
            return agent.session.resolve(ref)
        except EntryNotFoundError:
            run = last_run(agent.session, ref)
            if run is not None and run.end:
                return run.end
            raise

    def _cmd_fork(self, rest: list[str]) -> Any:
        agent = self._agent()
        target = self._resolve_ref(agent, rest[0]) if rest else agent.session.leaf_id
        if target is None:
            raise UsageError("%pi fork: the session is empty; nothing to fork")
        new = agent.session.fork(target, dir=self.state.session_dir)
        moved = world_cells.carry(agent, target, self.state.switch(new))  # the new session goes on in the world of ID
        print(f"forked into {self.state.header(new)} ({len(new)} entries); the notebook's next %%pi cells continue in it")
        world_cells.say(moved)
        return new

    def _cmd_label(self, rest: list[str]) -> Any:
        if not rest:
            raise UsageError("%pi label: give an entry id and a label ('' clears it)")
        agent = self._agent()
        target = self._resolve_ref(agent, rest[0])
        text = scrub(" ".join(rest[1:]))  # typed text: a key in a label is never stored as typed
        agent.session.label(target, text or None)
        print(f"labelled {target}: {text!r}" if text else f"cleared the label of {target}")
        return None

    def _cmd_forget(self, rest: list[str]) -> Any:
        if len(rest) != 1:
            raise UsageError("%pi forget: give one entry id (id, id prefix, label or cell id)")
        agent = self._agent()
        print(context_commands.forget(agent, self._resolve_ref(agent, rest[0])))

    def _cmd_edit(self, rest: list[str]) -> Any:
        if len(rest) < 2:
            raise UsageError("%pi edit: give an entry id and the text the model should see instead")
        agent = self._agent()
        print(context_commands.edit(agent, self._resolve_ref(agent, rest[0]), " ".join(rest[1:])))

    def _cmd_name(self, rest: list[str]) -> Any:
        agent = self._agent()
        agent.session.set_name(scrub(" ".join(rest)))
        print(f"session named {agent.session.name!r}")
        return None

    def _cmd_compact(self, rest: list[str]) -> Any:
        agent = self._agent()
        instructions = " ".join(rest) or None
        result = self.state.runner.wait(self.state.runner.submit(agent.compact(instructions)), on_interrupt=agent.abort)
        print(f"compacted: {getattr(result, 'tokens_before', '?')} tokens before; kept from {getattr(result, 'first_kept_entry_id', '?')}")
        return result

    def _cmd_context(self, rest: list[str]) -> Any:
        from .context_view import context_bundle

        display(context_bundle(self._agent()), raw=True)  # prose wraps at word boundaries (HTML), text wrapped too
        return None

    def _cmd_tree(self, rest: list[str]) -> Any:
        from .tree_display import show_tree

        return show_tree(self._agent(), rest)

    def _cmd_compare(self, rest: list[str]) -> Any:
        by = "turns" if "--turns" in rest else "auto"
        refs = [r for r in rest if r != "--turns"]
        if len(refs) < 2:
            raise UsageError("%pi compare: give two or more branches (ids, labels, root, In[n], cell ids, CELL@2) [--turns]")
        # Session.compare resolves every form the tree shows (In[20], root, CELL@2, labels, ids)
        return world_cells.show_compare(self._agent().session.compare(*refs, by=by), self._agent().session)  # and their worlds

    def _cmd_world(self, rest: list[str]) -> Any:
        return world_cells.command(self, rest)

    def _cmd_log(self, rest: list[str]) -> Any:
        if rest and not rest[0].isdigit():
            raise UsageError(f"%pi log: N must be a number of events, not {rest[0]!r}")
        limit = int(rest[0]) if rest else 50
        lines = self.state.log_lines(self._agent(), limit)
        if not lines:
            print("no events yet in this kernel for the current session (a %%pi cell produces them)")
        for line in lines:
            print(line)
        return None

    def _cmd_abort(self, rest: list[str]) -> Any:
        agent = self._agent()
        busy = self.state.busy(agent)
        if busy is None and not agent.is_running:
            print("nothing is running on the current session")
            return None
        if busy is not None:
            busy.abort()  # the run's own abort: a background grid stops all its branches
        else:
            agent.abort()
        print("aborting; the partial answer is kept as 'aborted'")
        return None

    def _cmd_ext(self, rest: list[str]) -> Any:
        from ..agent.extensions import HOOKS

        agent = self._agent()
        if rest and rest[0] == "load":
            if len(rest) != 2:
                raise UsageError("%pi ext load: give one module name, e.g. pi_jupyter.extensions.audit")
            failures: list[str] = []

            def watch(event: Any) -> None:
                if event.type == "extension_error":
                    failures.append(f"{event.event}: {event.error}")

            unsubscribe = agent.subscribe(watch)
            try:
                ext = agent.extensions.add(rest[1])
            except ImportError as exc:
                raise UsageError(f"%pi ext load: cannot import {rest[1]!r}: {exc}") from None
            except TypeError as exc:
                raise UsageError(f"%pi ext load: {exc}") from None
            finally:
                unsubscribe()
            name = agent.extensions.names()[-1]
            if failures:
                # registered (its other hooks may work), but the user must see that setup failed
                print(f"loaded extension {name}, but its {'; '.join(failures)}", file=sys.stderr)
            else:
                print(f"loaded extension {name}")
            return ext
        if rest and rest[0] == "remove":
            if len(rest) != 2:
                raise UsageError("%pi ext remove: give the extension's name (%pi ext lists them)")
            try:
                agent.extensions.remove(rest[1])
            except KeyError as exc:
                raise UsageError(f"%pi ext remove: {exc.args[0]}") from None
            print(f"removed extension {rest[1]}")
            return None
        if rest:
            raise UsageError("%pi ext: use %pi ext, %pi ext load MODULE, or %pi ext remove NAME")
        if not len(agent.extensions):
            print("no extensions (load one with %pi ext load MODULE, e.g. pi_jupyter.extensions.dataframes)")
        for name, ext in zip(agent.extensions.names(), agent.extensions, strict=True):
            hooks = [h for h in HOOKS if callable(getattr(ext, h, None))]
            print(f"{name}: {', '.join(hooks)}")
        return None

    def _cmd_export(self, rest: list[str]) -> Any:
        from .export import export_session

        export_session(self._agent(), rest, resolve=lambda ref: self._resolve_ref(self._agent(), ref))
        return None

    def _cmd_score(self, rest: list[str]) -> Any:
        from .experiment_cell import score_command

        return score_command(self, rest)

    def _cmd_class(self, rest: list[str]) -> Any:
        from .class_command import class_command

        return class_command(rest)

    def _cmd_judge(self, rest: list[str]) -> Any:
        from .judge_command import judge_command

        return judge_command(self, rest)

    def _cmd_skills(self, rest: list[str]) -> Any:
        from .context_view import skills_report

        _show_markdown(skills_report(self._agent()))
        return None


def _show_markdown(text: str) -> None:
    # the Markdown source doubles as text/plain, so a terminal or a text export reads it instead of an object repr
    display({"text/markdown": text, "text/plain": text}, raw=True)


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

    shell.events.register("pre_run_cell", remember_cell)
    from .async_cell import install, stop_note

    if not install(shell) and (note := stop_note(shell)):
        print(note)
    return magics
