"""``ExperimentView``: the compact live view of a running grid (one row per branch), as an anywidget.

Transport: a timer on the experiment's event loop sends, at most ``RATE`` times a second in
total whatever the branch count, one custom message holding only the rows that changed and
the progress line; the ``snapshot`` trait (every row) is set when the grid ends and every
``SNAPSHOT_S`` seconds, so a view rendered again (a second output, a reload) shows everything.
The Stop button stops launching and aborts the running branches.
"""

from __future__ import annotations

import asyncio
import html
import pathlib
import threading
import time
from collections.abc import Callable
from typing import Any

import anywidget
import traitlets

from ...experiment.core import progress_line
from ..early_stop import hear_stop_early

_STATIC = pathlib.Path(__file__).parent.parent / "static"
RATE = 10.0
"""Messages per second at most (the view's whole budget; DESIGN says about 30)."""
SNAPSHOT_S = 2.0
_SETTLED = ("queued", "done", "failed", "aborted", "skipped")


def _row(status: Any) -> dict[str, Any]:
    return {
        "i": status.index,
        "label": status.label,
        "state": status.state,
        "tail": status.tail[-80:],
        "tokens": status.tokens,
        "cost": round(status.cost, 6),
        "elapsed": round(status.elapsed, 1),
        "error": (status.error or "")[:200],
    }


class ExperimentView(anywidget.AnyWidget):
    """One row per branch (variant, state, answer tail, tokens, cost, elapsed), a progress line and Stop."""

    _esm = _STATIC / "experiment_view.js"
    _css = _STATIC / "experiment_view.css"

    title = traitlets.Unicode("").tag(sync=True)
    snapshot: traitlets.List[Any] = traitlets.List().tag(sync=True)
    """Every row, as of the last snapshot."""
    progress = traitlets.Dict().tag(sync=True)

    def __init__(self, title: str = "", **kwargs: Any) -> None:
        super().__init__(title=title, **kwargs)
        self._sent: dict[int, dict[str, Any]] = {}
        self._progress: dict[str, Any] = {}
        self._stop: list[tuple[Callable[[], Any], bool]] = []
        self._heard_early = False
        self._lock = threading.Lock()
        self.messages_sent = 0
        """Messages sent to the browser (custom messages and trait updates), for the benchmark."""
        self.on_msg(self._on_frontend_msg)
        hear_stop_early(self, self._on_early_stop)

    def on_stop(self, callback: Callable[[], Any], *, any_thread: bool = False) -> None:
        """Call ``callback()`` when Stop is pressed (``any_thread``: safe from any thread, so called as soon as the click arrives)."""
        self._stop.append((callback, any_thread))

    def _on_early_stop(self) -> None:
        # on the kernel's shell channel thread, while the main thread may run a branch's python code (see .early_stop)
        early = [fn for fn, any_thread in self._stop if any_thread]
        self._heard_early = bool(early)
        for fn in early:
            fn()

    def _on_frontend_msg(self, widget: Any, content: Any, buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "stop":
            heard, self._heard_early = self._heard_early, False
            for fn, any_thread in list(self._stop):
                if not (heard and any_thread):
                    fn()
        elif isinstance(content, dict) and content.get("type") == "sync":
            self.send({"type": "rows", "rows": list(self._sent.values()), "progress": self._progress})

    def tick(self, experiment: Any) -> None:
        """Send the rows that changed since the last tick with the progress line: one message."""
        with self._lock:
            changed = []
            for status in experiment.statuses:
                sent = self._sent.get(status.index)
                if sent is not None and status.state in _SETTLED and sent["state"] == status.state:
                    continue  # queued or ended and already sent as such: nothing of it moves (a thousand rows, ten times a second)
                row = _row(status)
                if self._sent.get(status.index) != row:
                    self._sent[status.index] = row
                    changed.append(row)
            self._progress = _progress(experiment)
            self.send({"type": "rows", "rows": changed, "progress": self._progress})
            self.messages_sent += 1

    def take_snapshot(self) -> None:
        """Put every row and the progress line in the traits (what a re-rendered view starts from)."""
        with self._lock:
            self.snapshot = [self._sent[i] for i in sorted(self._sent)]
            self.progress = self._progress
            self.messages_sent += 2

    async def follow(self, experiment: Any) -> None:
        """Tick until cancelled (run it as a task beside the experiment)."""
        # the first state goes into the traits at once: custom messages sent before the browser
        # has rendered the view are lost, and its "sync" request waits while the cell blocks
        self.tick(experiment)
        self.take_snapshot()
        last_snapshot = time.monotonic()
        try:
            while True:
                self.tick(experiment)
                if time.monotonic() - last_snapshot >= SNAPSHOT_S:
                    self.take_snapshot()
                    last_snapshot = time.monotonic()
                await asyncio.sleep(1.0 / RATE)
        finally:
            self.tick(experiment)
            self.take_snapshot()


def _progress(experiment: Any) -> dict[str, Any]:
    p = experiment.progress()
    return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in p.items() if k != "elapsed"} | {"elapsed": round(p["elapsed"], 1)}


def variant_words(values: dict[str, Any]) -> str:
    """A branch's variant as the cell wrote it: ``tone=terse, model=offline/echo``."""
    return ", ".join(f"{k}={v}" for k, v in values.items())


def final_bundle(result: Any, progress: dict[str, Any], replayed: int, *, stopped: bool = False) -> dict[str, Any]:
    """What the live view's output becomes when the grid ends: durable HTML and text (no widget).

    A grid stopped by Stop all (or the interrupt) ends its cell in an error, so the cell shows no
    result table: then this output keeps the table of what finished and what was stopped.
    """
    line = progress_line(progress)
    if replayed:
        line += f" · {replayed} replayed from the recording"
    leaf = result.continue_from
    if leaf:
        row = next((r for r in result.rows if r.leaf == leaf), None)
        # a grid without --vary has no values: its branches are repeats, named by the repeat alone
        words = variant_words(row.values) if row else ""
        shown = (f"#{row.index} ({words})" if words else f"#{row.index} (repeat {row.repeat})") if row else "?"
        where = f"cells below continue from branch {shown}, leaf {leaf}; %pi checkout LEAF picks another"
    else:
        where = "no branch finished: cells below continue from where this cell started"
    text = f"{line}\n{where}"
    markup = f'<div class="pi-experiment-done"><b>{html.escape(line)}</b><br>{html.escape(where)}</div>'
    if stopped:
        markup += result.table_html()
        text += "\n" + result.text()
    return {"text/html": markup, "text/plain": text}
