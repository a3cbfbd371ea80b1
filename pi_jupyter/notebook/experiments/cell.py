"""``%%pi --vary KEY=V1,V2 ...``: a grid of sibling branches from the cell's start, with a live view.

The branches start where the cell starts (the same rule as every ``%%pi`` cell, so a re-run
adds a new set of siblings beside the old one). While the grid runs, an
:class:`~pi_jupyter.notebook.experiments.view.ExperimentView` shows one row per branch; when it
ends, that output becomes a durable progress line saying which branch the cells below continue
from, and the cell's value is the :class:`~pi_jupyter.experiment.ExperimentResult`, whose
output is the table and the figure as plain HTML and SVG (readable after reopening, in
nbconvert, on GitHub).

The cells below continue from the first combination's first repeat when it finished (else the
first branch that did); ``%pi checkout LEAF`` (a leaf from the table) continues from another.

Each branch's agent is configured as the notebook's own: its tools get the notebook's namespace,
confirm policy, tool timeout and display capture, its extensions are the notebook agent's, and
``PiMagics.base_url`` serves its model.
``--background`` returns a :class:`~pi_jupyter.notebook.runner.BackgroundRun` whose result is
the :class:`~pi_jupyter.experiment.ExperimentResult`.
"""

from __future__ import annotations

import argparse
import contextlib
from collections import ChainMap
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.display import display

from .. import world_cells
from ..cells import CellRun, record_run, start_for
from ..prompt_text import fill_prompt_parts, filled_note
from ..runner import BackgroundRun, PendingRun, RunStopped

if TYPE_CHECKING:  # pragma: no cover - a plain %%pi cell does not import the experiment package
    from ...experiment import Experiment, ExperimentResult

GRID_OPTIONS = ("vary", "repeat", "concurrency", "budget", "score", "replay", "yes", "until_decided", "compare", "rate_limit", "executor")


def is_experiment(args: argparse.Namespace) -> bool:
    """True when the cell's options ask for a grid."""
    given = [getattr(args, name, None) for name in GRID_OPTIONS if name not in ("replay", "yes")]
    # a number given is a grid option given, 0 included (``--repeat 0`` is refused by the grid, never ignored)
    return any(value is not None and value is not False and value != [] for value in given)


def run_experiment_cell(magics: Any, args: argparse.Namespace, cell: str, cell_id: str, count: int | None) -> Any:
    """Run the grid of a ``%%pi --vary`` cell: its result, or a :class:`PendingRun` when the kernel awaits the cell."""
    text = cell.strip()
    if not text:
        raise UsageError("%%pi: the cell is empty; write the prompt below %%pi")
    if args.continue_:
        raise UsageError("%%pi: --continue does not apply to a grid (--vary/--repeat): its branches are siblings from the cell's start")
    from ...experiment import Experiment, parse_vary
    from ...experiment.variants import AGENT_KEYS

    vary = parse_vary(args.vary or [])
    state = magics.state
    agent = state.agent_for(state.find_session(args.session, create=True) if args.session else None)
    busy = state.busy(agent)
    if busy is not None or agent.is_running:
        raise UsageError(f"%%pi: session {agent.session.name or agent.session.path} is busy with a background run; await it first")
    session = agent.session
    start, _ = start_for(session, cell_id)
    namespace = magics.shell.user_ns
    world = world_cells.world_of(agent)
    moved, start = world_cells.move_for_cell(agent, start)  # the branches start in the world of the start, the user's changes kept
    if moved:
        print(f"pi: {moved}")

    filled: list[tuple[str, str]] = []
    code_kept = False

    def render(variant: Any) -> str:
        nonlocal code_kept
        parts = fill_prompt_parts(text, ChainMap(variant.bindings, namespace))  # prose only, as every %%pi cell
        filled.extend(parts.fields)
        code_kept = code_kept or parts.code_kept
        return parts.text

    tools = args.tools.replace(",", " ").split() if args.tools is not None else list(magics.tools)
    # each branch's tools are built as the plain cell's agent builds them: the notebook's namespace,
    # its confirm policy, tool_timeout and display capture (the builtin tools redact their results);
    # its extensions too (their tools and guards), each set up again for the branch's agent
    agent_options = {"tool_extra": dict(agent.tool_extra), "policy": agent.policy, "extensions": list(agent.extensions)}
    options = {
        "vary": vary,
        "repeat": args.repeat if args.repeat is not None else 1,
        "concurrency": args.concurrency,
        "budget": args.budget,
        "scorers": args.score or [],
        "model": args.model or agent.model.ref,
        "thinking": args.thinking or agent.thinking_level,
        "tools": tools,
        "replay": True if args.replay else None,
        "yes": args.yes,
        "render": render,
        "cwd": agent.cwd,
        "base_url": magics.base_url or None,
        "agent_options": agent_options,
        "until_decided": args.until_decided,
        "compare": args.compare,
        "rate_limit": args.rate_limit,
    }
    exp = Experiment(session, text, start=start, **options)
    _check_bound(vary, filled)
    if note := filled_note(filled, per_branch={k: v for k, v in vary.items() if k not in AGENT_KEYS}, code_kept=code_kept):
        print(f"pi: {note}")
    # checked before anything is shown or written: a scheduler that does not answer, a worker without the folder
    runner = exp.prepare(args.executor or magics.executor or "local")
    grid_start = _notebook_record(magics, agent, start, args, moved)  # the branches share one notebook context
    if grid_start != start:  # the grid grows from it
        exp = Experiment(session, text, start=grid_start, **options)
        runner = exp.prepare(runner)
    view = None
    if magics.widget:
        from .view import ExperimentView

        title = f"experiment · {exp.grid.size} branch{'es' if exp.grid.size != 1 else ''} · {state.header(session)}"
        view = ExperimentView(title=title)
        view.on_stop(lambda: state.runner.loop.call_soon_threadsafe(exp.abort), any_thread=True)
    handle = display(view, display_id=True, metadata=state.binding(session)) if view is not None else None
    produced: list[str] = [grid_start] if grid_start is not None and grid_start != start else []
    unsubscribe = session.on_append(lambda entry: produced.append(entry["id"]))

    async def go() -> ExperimentResult:
        import asyncio

        ticker = asyncio.ensure_future(view.follow(exp)) if view is not None else None
        try:
            with world.running() if world is not None else contextlib.nullcontext():
                return await exp.run(runner)
        finally:
            if ticker is not None:
                ticker.cancel()
                try:
                    await ticker
                except asyncio.CancelledError:
                    pass
            unsubscribe()
            end = exp.grid.continue_from or start
            try:
                record_run(session, CellRun(cell_id=cell_id, started_from=start, produced=produced, end=end, execution_count=count))
            except Exception:  # noqa: BLE001 - the record is best effort; the branches are written
                pass
            agent.reload()
            if world is not None:  # the cells below continue in the world of the branch they continue from
                world.grid_ended()
                world.move(session.leaf_id)
            # stopped or interrupted too: the output becomes the durable line (stopped branches are rows of the table)
            if handle is not None and exp.result is not None:
                from .view import final_bundle

                handle.update(
                    final_bundle(exp.result, exp.progress(), exp.replayed, stopped=exp.stopped), raw=True, metadata=state.binding(session)
                )

    def finish(result: ExperimentResult) -> ExperimentResult:
        brought = world_cells.note(agent)
        if brought:
            print(f"pi: {brought}")
        if handle is None and exp.replayed:
            print(f"{exp.replayed} of {exp.grid.size} branches replayed from the recording")
        if args.name:
            magics.shell.user_ns[args.name] = result
        return result

    future = state.runner.submit(go())
    if args.background:  # as a --background cell: a handle at once; a plain cell on this session waits for it
        label = f"grid [{count}]" if count else "background grid"
        bg = BackgroundRun(future, exp.abort, label=label, stopped=lambda: exp.stopped, runner=state.runner)
        state.background[session.path or f"memory:{session.id}"] = bg
        if args.name:
            magics.shell.user_ns[args.name] = bg
        return bg

    def stopped_error(result: Any, reason: str) -> RunStopped:
        if args.name and exp.result is not None:
            magics.shell.user_ns[args.name] = exp.result
        return RunStopped(reason=reason, where=stopped_summary(exp, args.name))

    # as every blocking %%pi cell: awaited on the kernel's loop where it can (Stop is heard), else waited for;
    # Stop or the interrupt ends the cell in RunStopped (Run All stops), the table stays in the session
    pending = PendingRun(state.runner, future, exp.abort, finish, stopped=lambda: exp.stopped, stopped_error=stopped_error)
    return pending if getattr(magics, "_awaited", False) else pending.wait()


def _names_in(expression: str) -> set[str]:
    """The names an f-string field's expression reads (its text alone when it does not parse)."""
    import ast

    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return {expression.strip()}
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _check_bound(vary: dict[str, list[str]], filled: list[tuple[str, str]]) -> None:
    """A varied name the prompt's prose never uses would give every branch the same prompt: refused, saying why."""
    from ...experiment.variants import AGENT_KEYS

    used: set[str] = set()
    for shown, _ in filled:  # ``{how}``, ``{INSTRUCTIONS[how]}``, ``{n * 2:.1f}``: every name the field's expression reads
        used |= _names_in(shown[1:].split("}")[0].split("!")[0].split(":")[0])
    for key in vary:
        if key not in AGENT_KEYS and key not in used:
            raise UsageError(
                f"%%pi: --vary {key}: the prompt has no {{{key}}} outside code, so every branch would get the same prompt "
                f"({{{key}}} in a code block or `inline code` is sent as written); write it in the prose, e.g. 'use {key} = {{{key}}}'"
            )


def _notebook_record(magics: Any, agent: Any, start: str | None, args: argparse.Namespace, moved: str) -> str | None:
    """The grid's notebook context, recorded once at its start: the node its branches grow from (``start`` if none)."""
    from .. import notebook_context

    told = notebook_context.for_cell(magics, agent, start, off=getattr(args, "no_notebook", False), world_line=moved)
    if not told:
        return start
    session = agent.session
    if session.leaf_id != start:
        session.checkout(start, persist=False)
    m = told[0]
    return session.append_custom_message(m.custom_type, m.content, display=m.display, details=m.details)


def stopped_summary(exp: Experiment, name: str | None = None) -> str:
    """How a stopped grid ended, in one line: finished, stopped, failed and not started branches, and where they are."""
    states = [s.state for s in exp.statuses]
    count = states.count
    parts = [f"grid stopped: {count('done')} of {len(states)} branches finished"]
    if count("aborted"):
        parts.append(f"{count('aborted')} stopped (partial answers kept as aborted)")
    if count("failed"):
        parts.append(f"{count('failed')} failed")
    if count("running"):
        parts.append(f"{count('running')} still winding down")
    budget = sum(1 for s in exp.statuses if s.state == "skipped" and s.error == "budget")
    parts.append(f"{count('queued') + count('skipped') - budget} not started")
    if budget:
        parts.append(f"{budget} skipped for the budget")
    where = f"the result is in {name}" if name and exp.result is not None else "pi_jupyter.experiment.load_experiment rebuilds its table"
    return ", ".join(parts) + f"; every branch is a row of experiment {exp.grid.id} in the session ({where})"


def score_command(magics: Any, rest: list[str]) -> ExperimentResult:
    """``%pi score REF NAME [NAME ...]``: score an experiment (REF: its id, ``last``, or a branch's leaf)."""
    if len(rest) < 2:
        raise UsageError("%pi score: give an experiment (its id, 'last', or a branch leaf) and one or more scorer names")
    session = magics.state.agent_for().session
    ref, names = rest[0], rest[1:]
    from ...experiment import load_experiment
    from ...experiment.records import experiment_ids

    if ref == "last" or any(i.startswith(ref) for i in experiment_ids(session)):
        result = load_experiment(session, None if ref == "last" else ref)
        only = None
    else:
        leaf = session.resolve(ref)
        found = [r for i in experiment_ids(session) for r in [load_experiment(session, i)] if leaf in r.branches]
        if not found:
            raise UsageError(f"%pi score: {ref!r} is neither an experiment id nor the leaf of an experiment's branch")
        result, only = found[-1], [next(r.index for r in found[-1].rows if r.leaf == leaf)]
    from ...experiment.result import score_rows
    from ...experiment.scorers import get_scorer

    scorers = [get_scorer(n) for n in names]
    rows = [r for r in result.rows if only is None or r.index in only]
    magics.state.runner.wait(magics.state.runner.submit(score_rows(session, result.id, rows, scorers)), on_interrupt=lambda: None)
    return result
