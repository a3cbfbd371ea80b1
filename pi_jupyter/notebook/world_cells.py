"""The notebook's side of the world: each session's agent gets a :class:`~pi_jupyter.world.World` over ``user_ns``.

Every checkout of the agent (``%pi checkout``, "continue from this one", a click in the tree,
compact-up-to-here) moves the world with it, through the agent's ``checkout`` event, unless
the user chose to rewind the conversation alone (:func:`rewind`); a cell moves it to the node
it starts from (a re-run starts in the world of its start, not in the world its previous run
left) and first records on the branch what the user changed outside the agent since; a grid
moves it to the branch the cells below continue from. Each move's one line (what was
restored, what could not be) is what :func:`note` returns once. All sessions of a kernel share
one tracker, because they share one namespace: switching to another session (``%pi open``,
``--session``, a fork) moves the world from where the other session left it.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..agent.redact import find_secrets, redact
from ..world import UNKNOWN, Tracker, World, world_at
from ..world.names import called_on, user_candidates
from ..world.record import shown, slot_refs
from ..world.rewind import MODES
from ..world.rewind import rewind as world_rewind

__all__ = ["Tracker", "World", "attach", "follow_fork", "move_for_cell", "note", "rewind", "switch_to", "watch_cells", "world_of"]

REWIND_MODES = MODES


def _has_secret(text: str) -> bool:
    return bool(find_secrets(text))


def attach(agent: Any, namespace: dict[str, Any], tracker: Tracker) -> World:
    """Give ``agent`` a world over ``namespace`` (its tools record into it; its checkouts move it)."""
    world = World(agent.session, namespace, cwd=agent.cwd, tracker=tracker, has_secret=_has_secret)
    agent.tool_extra["world"] = world
    ref = weakref.ref(agent)  # a run of any session of the kernel uses the namespace: checkouts wait for it
    tracker.running.append(lambda: bool(getattr(ref(), "is_running", False)))

    world.attach(agent)
    return world


def watch_cells(shell: Any, tracker: Tracker) -> None:
    """After each cell of the user's own, the names it may have changed in place are compared by content before any move trusts them."""
    if getattr(tracker, "watching", False):
        return

    def after(result: Any) -> None:
        code = getattr(getattr(result, "info", None), "raw_cell", None)
        if not isinstance(code, str) or not tracker.known or code.lstrip().startswith(("%%pi", "%pi ")):
            return
        try:
            code = shell.transform_cell(code)  # magics and shell escapes as the Python IPython ran
        except Exception:  # noqa: BLE001 - read as typed
            pass
        try:
            tracker.touched(user_candidates(code, shell.user_ns, tracker.known.keys()), shell.user_ns, called_on(code))
        except Exception:  # noqa: BLE001 - looking must never break the user's cell
            tracker.dirty |= tracker.known.keys()

    shell.events.register("post_run_cell", after)
    tracker.watching = True


def world_of(agent: Any) -> World | None:
    """The world of a notebook agent (``None`` for an agent made elsewhere)."""
    world = agent.tool_extra.get("world") if isinstance(getattr(agent, "tool_extra", None), dict) else None
    return world if isinstance(world, World) else None


def note(agent: Any) -> str:
    """The line of the last move of ``agent``'s world (once; empty when it changed nothing)."""
    world = world_of(agent)
    return world.take_line() if world is not None else ""


def say(line: str, prefix: str = "") -> None:
    """Print a world line in the cell's output, when there is one."""
    if line:
        print(prefix + line)


def settle(agent: Any) -> None:
    """After a run: the live world is the session's leaf (its tools recorded their changes on the way)."""
    world = world_of(agent)
    if world is not None:
        world.settle()


def suffix(agent: Any) -> str:
    """:func:`note` as the end of a line that says a checkout happened (``"; restored plan"``)."""
    line = note(agent)
    return f"; {line}" if line else ""


def move_for_cell(agent: Any, start: str | None) -> tuple[str, str | None]:
    """Before a cell runs from ``start``: bring the world there, and record what the user changed since on the branch.

    Returns the line to show (may be empty) and the node the run starts from: ``start``, or
    the record of the user's own changes below it (the session's leaf then).
    """
    world = world_of(agent)
    if world is None:
        return "", start
    report = world.move(start)
    kept = world.keep_users()
    if kept.recorded:  # the user's own versions are not "left as they are": the run starts from them, recorded
        agent.reload()
        report.kept = [k for k in report.kept if k not in kept.recorded]
        report.recorded, report.recorded_at = kept.recorded, kept.recorded_at
        start = kept.recorded_at
    return note(agent), start


def force_next(agent: Any, force: bool) -> None:
    """``%pi checkout --force``: the agent's next move also restores what the user changed outside the agent."""
    world = world_of(agent)
    if world is not None:
        world.force_next = force


async def rewind(agent: Any, target: str | None, mode: str = "both", *, force: bool = False, sep: str = "\n", **checkout: Any) -> str:
    """``%pi checkout`` and the tree's *Check out*: see :func:`pi_jupyter.world.rewind.rewind`."""
    return await world_rewind(world_of(agent), agent, target, mode, force=force, sep=sep, **checkout)


def rewinding(agent: Any, target: str | None, mode: str, *, force: bool = False, **checkout: Any) -> tuple[Any, Any]:
    """:func:`rewind` for a view: the coroutine (its value the new leaf) and what to say of it once done (the status line)."""
    said: list[str] = []

    async def go() -> str | None:
        said.append(await rewind(agent, target, mode, force=force, sep="; ", **checkout))
        return agent.session.leaf_id

    return go(), lambda _leaf: said[-1].replace("; leaf is now", "; the leaf is now", 1)


def carry(agent: Any, target: str, new_agent: Any) -> str:
    """After ``%pi fork``: the live world moves to ``target`` and belongs to the fork, whose store gets its objects."""
    old, new = world_of(agent), world_of(new_agent)
    if old is None or new is None:
        return ""
    new.store.take(
        old.store, [r for vars_files in world_at(new.session, new.session.leaf_id) for s in vars_files.values() for r in slot_refs(s)]
    )
    new.fresh = False  # a fork is not a new world: it goes on in the world of the node it copies
    new.move(new.session.leaf_id)
    return note(new_agent)


def switch_to(agent: Any) -> str:
    """The notebook goes on in ``agent``'s session (``%pi open``): the live world moves to where that session's world stands."""
    world = world_of(agent)
    if world is None or world.tracker.standing() in (None, world):
        return ""
    target = world.position if world.position is not UNKNOWN else agent.session.leaf_id
    world.move(target)
    return note(agent)


def follow_fork(agent: Any, target: str, follow: Any) -> str:
    """After a fork in the tree: the agent that goes on with it (``follow``) gets a world of its own, which the live one moves into.

    A world belongs to one session (it moves on that session's checkouts, its store is beside
    that file), so an agent made by copying ``agent``'s tool options must not keep ``agent``'s
    world: it is replaced by one over the same namespace. Returns :func:`carry`'s line.
    """
    old = world_of(agent)
    if old is None or not isinstance(getattr(follow, "tool_extra", None), dict):
        return ""
    if world_of(follow) in (None, old):
        follow.tool_extra.pop("world", None)
        attach(follow, old.namespace, old.tracker)
    return carry(agent, target, follow)


def show_compare(comparison: Any, session: Any) -> Any:
    """Under ``%pi compare``: the variables and files that differ between the branches (shown only when some do); returns ``comparison``."""
    from IPython.display import display

    from ..views.compare.world import compare_worlds

    branches = [(b.name, b.leaf_id) for b in getattr(comparison, "branches", [])]
    found = compare_worlds(session, branches, clean=redact)
    if found:
        display(found)
    return comparison


def trust_command(rest: list[str]) -> None:
    """``%pi world trust [--revoke] [FOLDER]``: list the trusted session folders, trust one, or stop trusting it.

    A world object that needs pickle (a function, a class, a model) loads only when your own
    key signed it; trusting a folder lets the objects its store holds now load although someone
    else saved them (loading a pickle can run code). Plain data never needs it.
    """
    from ..world import folder_trust, trust

    revoke = "--revoke" in rest
    folders = [r for r in rest if r != "--revoke"]
    try:
        if not folders:
            if revoke:
                raise ValueError("%pi world trust --revoke: give the folder to stop trusting")
            print("\n".join(folder_trust.listing_lines()))
            return
        for folder in folders:
            print(folder_trust.revoke_folder(folder) if revoke else folder_trust.trust_folder(folder))
    except trust.TrustError as exc:
        print(f"pi: {exc}")


def command(magics: Any, rest: list[str]) -> None:
    """``%pi world [gc [--dry-run] | trust [--revoke] [FOLDER]]``: what the current branch's world holds and the store's space.

    ``gc`` reclaims the space of objects no session refers to; ``trust`` lists, trusts or stops
    trusting a session folder whose objects someone else saved (see :func:`trust_command`).
    """
    import os

    from ..world import world_at
    from ..world.gc import GcError, collect

    if rest[:1] == ["trust"]:
        trust_command(rest[1:])
        return
    agent = magics.state.agent_for()
    session = agent.session
    folder = os.path.dirname(session.path) if session.path else None
    if rest[:1] == ["gc"]:
        if folder is None:
            print("this session is in memory: its world is too, and goes with the kernel")
            return
        try:
            print(collect(folder, dry_run="--dry-run" in rest).line("--dry-run" in rest))
        except GcError as exc:
            print(f"pi: {exc}")
        return
    if rest:
        raise ValueError(f"unknown world command {rest[0]!r}; %pi world, %pi world gc [--dry-run], or %pi world trust [--revoke] [FOLDER]")
    vars_, files = world_at(session, session.leaf_id)
    held = sorted(shown(k) for k, v in vars_.items() if v is not None)  # names from a record: shown, never interpreted
    written = sorted(shown(k) for k, v in files.items() if v is not None)
    print(f"variables the tools set on this branch: {', '.join(held) or '(none)'}")
    print(f"files the tools wrote on this branch: {', '.join(written) or '(none)'}")
    if folder is not None:
        try:
            print(collect(folder, dry_run=True, min_age_s=float("inf")).line())
        except GcError as exc:
            print(f"pi: {exc}")
