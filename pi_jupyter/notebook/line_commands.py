"""The ``%pi`` line commands: everything a notebook user does besides running a ``%%pi`` cell.

:class:`LineCommands` is a part of :class:`~pi_jupyter.notebook.magics.PiMagics`: one method
``_cmd_NAME`` per ``%pi NAME``, dispatched by ``PiMagics.pi_line``; the longer commands live in
modules of their own (sessions, context, tree, world, export, score, judge, class).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from ..agent.agent import Agent
from ..agent.typed_text import scrub
from ..session import EntryNotFoundError
from ..views.digest import plural
from ..views.reader_bundle import MARK
from . import context_commands, world_cells
from .typos import CommandParser

if TYPE_CHECKING:  # pragma: no cover
    from .state import NotebookState

ABORT_WAIT_S = 5.0
"""How long ``%pi abort`` waits for the run to wind down before it returns (it says which it did)."""

SUBCOMMANDS = """\
  model [PROVIDER/MODEL]     show or set the model of the current session
  models                     list the models the registry knows
  sessions                   list the sessions in the session folder
  new [NAME]                 start a new session (and make it current)
  open PATH|NAME|ID          open a session file (and make it current)
  status                     the current session, model, leaf and runs
  checkout ID [--summarize] [--instructions TEXT] [--label TEXT] [--force]
           [--conversation-only | --world-only]
                             move to another node (ID: id, id prefix, label, cell id, or 'root');
                             its variables and files come back (--force: over your own changes,
                             which are kept on the branch); --conversation-only keeps the live
                             variables and files; --world-only brings ID's into this conversation
  rerun CALL                 run a python call again for what could not be restored (a line offers it)
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
  world trust [--revoke] [FOLDER]
                             list the trusted session folders, or trust one whose objects someone else saved (can run code)
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


class LineCommands:
    """The ``_cmd_*`` methods of ``%pi`` (see the module docstring)."""

    state: NotebookState
    base_url: str

    def _require_key(self, model: Any, where: str) -> None:
        from ..providers import api_key_for
        from ..providers.keys import env_key_names

        if api_key_for(model) is None:
            names = " or ".join(env_key_names(model.provider)) or "the provider's API key variable"
            raise UsageError(f"{where}: no API key for {model.provider}: set {names} (or choose the offline model, offline/echo)")

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
        # the session is the value (``s = %pi new NAME``); it shows as a line, not an object's repr
        return self.state.new_session(" ".join(rest) or None).session

    def _cmd_open(self, rest: list[str]) -> Any:
        if not rest:
            raise UsageError("%pi open: give a path, a session name or an id prefix")
        session = self.state.find_session(rest[0], create=False)
        agent = self.state.switch(session)  # the live world moves to where this session's world stands
        report = session.load_report
        if not report.ok:
            print(str(report), file=sys.stderr)
        return agent.session  # the value (``s = %pi open NAME``); it shows as a line, not an object's repr

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
        parser = CommandParser("%pi checkout")
        parser.add_argument("target")
        parser.add_argument("--summarize", action="store_true")
        parser.add_argument("--instructions", default=None)
        parser.add_argument("--label", default=None)
        parser.add_argument("--force", action="store_true")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--conversation-only", action="store_true")
        which.add_argument("--world-only", action="store_true")
        opts = parser.parse_args(rest)
        agent = self._agent()
        target = None if opts.target in ("root", "none", "null") else self._resolve_ref(agent, opts.target)
        mode = "conversation" if opts.conversation_only else "world" if opts.world_only else "both"
        if mode == "world" and (opts.summarize or opts.label):
            raise UsageError("%pi checkout --world-only moves no conversation: --summarize and --label do not apply")
        if mode == "conversation" and opts.force:
            raise UsageError("%pi checkout --conversation-only keeps the variables and files as they are: --force does not apply")
        runner = self.state.runner
        how = {"summarize": opts.summarize, "instructions": opts.instructions, "label": opts.label} if mode != "world" else {}
        print(runner.wait(runner.submit(world_cells.rewind(agent, target, mode, force=opts.force, **how)), on_interrupt=agent.abort))
        return None

    def _cmd_rerun(self, rest: list[str]) -> Any:
        if len(rest) != 1:
            raise UsageError("%pi rerun: give the call id a line offered (%pi rerun offline_3_0)")
        world = world_cells.world_of(self._agent())
        if world is None:
            raise UsageError("%pi rerun: this session has no world")
        print(world.rerun(rest[0]))
        return None

    def _resolve_ref(self, agent: Agent, ref: str) -> str:
        """An entry id, id prefix or label; else a cell as ``compare`` takes it: ``In[9]`` (this kernel's run
        when it made one), ``CELL@2`` (the cell's second run), a cell id (its latest run)."""
        from ..views.compare.cells import Kernels, cell_records, resolve_cell_ref
        from .cells import KERNEL

        try:
            return agent.session.resolve(ref)
        except EntryNotFoundError:
            records = cell_records(agent.session.cell_records())
            try:
                end = resolve_cell_ref(ref, records, Kernels(records, KERNEL))
            except LookupError as exc:
                raise UsageError(str(exc)) from None
            if end:
                return end
            raise

    def _cmd_fork(self, rest: list[str]) -> Any:
        agent = self._agent()
        target = self._resolve_ref(agent, rest[0]) if rest else agent.session.leaf_id
        if target is None:
            raise UsageError("%pi fork: the session is empty; nothing to fork")
        new = agent.session.fork(target, dir=self.state.session_dir)
        moved = world_cells.carry(agent, target, self.state.switch(new, move_world=False))  # the fork goes on in the world of ID
        size = plural(len(new), "entry", "entries")
        print(f"forked into {self.state.header(new)} ({size}); the notebook's next %%pi cells continue in it")
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
        # the value is the result; it shows as one line (CompactionResult's display), not the summary's text
        return self.state.runner.wait(self.state.runner.submit(agent.compact(instructions)), on_interrupt=agent.abort)

    def _cmd_context(self, rest: list[str]) -> Any:
        from .context_view import context_bundle

        # prose wraps at word boundaries (HTML), text wrapped too; marked, so exports show the Markdown (see views.reader_bundle)
        display(context_bundle(self._agent()), raw=True, metadata={MARK: {"view": "context"}})
        return None

    def _cmd_tree(self, rest: list[str]) -> Any:
        from .tree_view.display import show_tree

        return show_tree(self._agent(), rest)

    def _cmd_compare(self, rest: list[str]) -> Any:
        by = "turns" if "--turns" in rest else "auto"
        refs = [r for r in rest if r != "--turns"]
        if len(refs) < 2:
            raise UsageError("%pi compare: give two or more branches (ids, labels, root, In[n], cell ids, CELL@2) [--turns]")
        # Session.compare resolves every form the tree shows (In[20], root, CELL@2, labels, ids)
        from .cells import KERNEL

        session = self._agent().session
        return world_cells.show_compare(session.compare(*refs, by=by, kernel=KERNEL), session)  # and their worlds

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
        deadline = time.monotonic() + ABORT_WAIT_S  # most runs wind down at once: say so, and the next cell can start
        while (busy is not None and not busy.done) or (busy is None and agent.is_running):
            if time.monotonic() > deadline:
                print("aborting; the partial answer is kept as 'aborted' (the run is still winding down)")
                return None
            time.sleep(0.02)
        print("aborted; the partial answer is kept as 'aborted'")
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
        from .experiments.cell import score_command

        return score_command(self, rest)

    def _cmd_class(self, rest: list[str]) -> Any:
        from .class_command import class_command

        return class_command(rest)

    def _cmd_judge(self, rest: list[str]) -> Any:
        from .experiments.judge_command import judge_command

        return judge_command(self, rest)

    def _cmd_skills(self, rest: list[str]) -> Any:
        from .context_view import skills_report

        _show_markdown(skills_report(self._agent()))
        return None


def _show_markdown(text: str) -> None:
    # the Markdown source doubles as text/plain, so a terminal or a text export reads it instead of an object repr
    # marked as pi's, so a sanitized HTML export draws it with the tags a sanitizer keeps (see views.reader_bundle)
    display({"text/markdown": text, "text/plain": text}, raw=True, metadata={MARK: {"view": "markdown"}})
