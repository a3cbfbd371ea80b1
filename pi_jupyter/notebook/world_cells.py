"""The notebook's side of the world: each session's agent gets a :class:`~pi_jupyter.world.World` over ``user_ns``.

Every checkout of the agent (``%pi checkout``, "continue from this one", a click in the tree,
compact-up-to-here) moves the world with it, through the agent's ``checkout`` event; a cell
moves it to the node it starts from (a re-run starts in the world of its start, not in the
world its previous run left); a grid moves it to the branch the cells below continue from.
Each move's one line (what was restored, what could not be) is what :func:`note` returns once.
All sessions of a kernel share one tracker, because they share one namespace.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..agent.events import Event, SessionEvent
from ..agent.redact import find_secrets, redact
from ..world import Report, Tracker, World, world_at
from ..world.record import shown

__all__ = ["Tracker", "World", "attach", "follow_fork", "move_for_cell", "note", "world_of"]


def _has_secret(text: str) -> bool:
    return bool(find_secrets(text))


def attach(agent: Any, namespace: dict[str, Any], tracker: Tracker) -> World:
    """Give ``agent`` a world over ``namespace`` (its tools record into it; its checkouts move it)."""
    world = World(agent.session, namespace, cwd=agent.cwd, tracker=tracker, has_secret=_has_secret)
    agent.tool_extra["world"] = world
    ref = weakref.ref(agent)  # a run of any session of the kernel uses the namespace: checkouts wait for it
    tracker.running.append(lambda: bool(getattr(ref(), "is_running", False)))

    def follow(event: Event) -> None:
        if isinstance(event, SessionEvent) and event.action == "checkout":
            try:
                world.move(agent.session.leaf_id)
            except Exception as exc:  # noqa: BLE001 - the conversation moved; say that its world could not
                world.last_report = Report(refused=f"variables and files not restored: {exc}")

    agent.subscribe(follow)
    return world


def world_of(agent: Any) -> World | None:
    """The world of a notebook agent (``None`` for an agent made elsewhere)."""
    world = agent.tool_extra.get("world") if isinstance(getattr(agent, "tool_extra", None), dict) else None
    return world if isinstance(world, World) else None


def note(agent: Any) -> str:
    """The line of the last move of ``agent``'s world (once; empty when it changed nothing)."""
    world = world_of(agent)
    if world is None or world.last_report is None:
        return ""
    line = world.last_report.line()
    world.last_report = None
    return line


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


def move_for_cell(agent: Any, start: str | None) -> str:
    """Before a cell runs from ``start``: bring the world there; returns the line to show (may be empty)."""
    world = world_of(agent)
    if world is None:
        return ""
    world.move(start)
    return note(agent)


def force_next(agent: Any, force: bool) -> None:
    """``%pi checkout --force``: the agent's next move also restores what the user changed outside the agent."""
    world = world_of(agent)
    if world is not None:
        world.force_next = force


def carry(agent: Any, target: str, new_agent: Any) -> str:
    """After ``%pi fork``: the live world moves to ``target`` and belongs to the fork, whose store gets its objects."""
    old, new = world_of(agent), world_of(new_agent)
    if old is None or new is None:
        return ""
    report = old.move(target)
    line = note(agent)
    new.store.take(old.store, [s for vars_files in world_at(new.session, new.session.leaf_id) for s in vars_files.values()])
    if not report.refused:  # else the live world is still where it was: the fork's first move restores it all
        new.vars_at = new.files_at = new.session.leaf_id
    return line


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

    from ..views.world_compare import compare_worlds

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
