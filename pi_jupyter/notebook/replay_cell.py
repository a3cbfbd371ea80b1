"""``%%pi --replay [--pace 2x] [--step]``: a recorded answer performed in class, at the pace it was recorded.

The teacher records the notebook once with a real model (the night before, with a key); in
class, with no key and no network, ``%%pi --replay`` serves each cell the answer recorded for
it in the notebook's own session (``--model replay/PATH`` serves another file's), streamed
over the time it took when recorded: thinking, text and tool cards appear as they did. The
cell forks from where it started, as every re-run does, so the replay is a new sibling branch
and the recording is never rewritten. The tools really run, in this kernel.

``--pace`` is a speed factor (``2x``, ``0.5x``; ``instant`` for tests); the default is the
recorded pace. ``--step`` holds the replay before each tool call and at each branch point of
the recording, with a "Go on ▶" button in the cell's view, so the class can guess what the
agent will do. A view no browser shows (nbclient, papermill) cannot be pressed: after a few
seconds the replay goes on and the view says so.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

from IPython.core.error import UsageError

from ..providers.pace import Pause, StepGate, parse_pace
from ..providers.replay import REPLAY_API, ReplayProvider

NO_BROWSER_GRACE_S = 3.0
"""How long a held replay waits for a browser to show its view before it plays on."""


class CellReplay:
    """What serves one ``%%pi`` cell from a recording: the player, and step mode once a view is attached."""

    def __init__(self, player: ReplayProvider, step: bool) -> None:
        self.player = player
        self.step = step

    def attach(self, view: Any) -> None:
        """Show the recording's notes and step mode's pauses in ``view`` (``None``: no live view)."""
        if view is None:
            if self.step:
                print("%%pi --step: step mode needs the live view (PiMagics.widget); the replay plays through", file=sys.stderr)
            return
        self.player.on_note = view.note
        if self.step:
            self.player.step = _gate_for(view)

    @contextlib.contextmanager
    def serving(self, agent: Any) -> Iterator[None]:
        """The agent's model calls go to the recording inside the block."""
        player = self.player

        def stream(model: Any, request: Any, options: Any = None) -> Any:
            # the recording is matched on its own terms: a class without the recorded model's key
            # runs the agent on a stand-in model, which must not count as another variant
            return player.stream(player.model, request, options)

        previous = agent.serve_with(stream)
        try:
            yield
        finally:
            agent.serve_with(previous)


def no_pace_for_grids(args: Any) -> None:
    """A grid's replay is instant: ``--pace`` and ``--step`` on a grid are a one-line ``UsageError``."""
    if args.pace is not None or args.step:
        raise UsageError("%%pi: --pace and --step apply to one cell's replay, not to a grid (--vary, --repeat); a grid replays at once")


def cell_replay(args: Any, agent: Any, base_url: str | None = None) -> CellReplay | None:
    """The replay serving this plain ``%%pi`` cell (``None`` for a cell that is not one); bad options are a one-line ``UsageError``.

    A cell is a replay with ``--replay``, or when its model (``--model``, else the session's) is a replay model.
    """
    from ..providers import resolve_model

    model = resolve_model(args.model, base_url=base_url) if args.model else agent.model
    if not (args.replay or model.api == REPLAY_API):
        if args.pace is not None or args.step:
            raise UsageError("%%pi: --pace and --step apply to a replay: add --replay (this session's answers) or use a replay/PATH model")
        return None
    try:
        pace = parse_pace(args.pace) if args.pace is not None else 1.0
    except ValueError as exc:
        raise UsageError(f"%%pi --{exc}") from None
    if model.api == REPLAY_API:
        recording = str(model.compat.get("session_path") or "")
    elif agent.session.path:
        recording = agent.session.path
    else:
        raise UsageError("%%pi --replay: the session is in memory, so there is no recording to replay; open a session file (%pi open PATH)")
    if not os.path.exists(recording):
        raise UsageError(f"%%pi --replay: no session file at {recording} to replay")
    return CellReplay(ReplayProvider(recording, pace=pace), step=bool(args.step))


def _gate_for(view: Any) -> StepGate:
    gate = StepGate()
    view.on_go(gate.go)

    def paused(pause: Pause) -> None:
        view.set_status(note=f"paused: press {GO}")  # first: the pause's forced flush then carries it with the button
        view.pause(pause.text)
        if view.shown.is_set():
            return

        def nobody_to_press() -> None:
            if not view.shown.wait(NO_BROWSER_GRACE_S) and gate.paused is pause:
                view.note("step mode: no browser shows this cell, so the replay does not stop here", tone="info")
                gate.go()

        threading.Thread(target=nobody_to_press, name="pi-step-grace", daemon=True).start()

    def resumed() -> None:
        view.set_status(note="")
        view.resume()

    gate.on_pause(paused)
    gate.on_resume(resumed)
    return gate


GO = "Go on ▶"

__all__ = ["CellReplay", "cell_replay", "no_pace_for_grids"]
