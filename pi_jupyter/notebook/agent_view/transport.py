"""How an AgentView reaches the browser: coalesced ops, rate-limited flushes and transcript snapshots.

Every change the view makes is an *op* with a sequence number. Ops are coalesced (consecutive
deltas of one content block become one op with the concatenated text, consecutive partial
outputs of one tool call keep only the last) and sent as one custom message at most
``max_rate`` times a second, whatever the token rate. A snapshot of the whole transcript
(traits ``transcript`` and ``transcript_seq``) is written at message boundaries, at most
``snapshot_rate`` times a second and always at ``agent_end``, so a re-rendered or reloaded
view shows everything. The frontend keeps the ops it applied after its snapshot and replays
those newer than each new snapshot, so a delta already folded into a snapshot is never applied
twice, whichever of the two arrives first. A view rendered in the middle of a run asks for the
current state (``sync``) and gets it at once.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import orjson

_log = logging.getLogger(__name__)


class _Flusher:
    """One daemon thread that runs due flushes for every view (a timer per flush would be a thread each)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._count = itertools.count()
        self._thread: threading.Thread | None = None

    def schedule(self, due: float, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the flusher thread at ``time.monotonic() >= due``."""
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._count), fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="pi-jupyter-widget-flush", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                due = self._heap[0][0]
                delay = due - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                _, _, fn = heapq.heappop(self._heap)
            try:
                fn()
            except Exception:  # noqa: BLE001 - one broken view must not stop the others' flushes
                _log.exception("AgentView flush failed")


FLUSHER = _Flusher()


class Transport:
    """The op log, the flush scheduling and the snapshot of an AgentView (a mixin: the view owns the state)."""

    # The state AgentView.__init__ creates and this mixin reads and writes (annotations only).
    _lock: threading.RLock
    _interval: float
    _snapshot_interval: float
    _seq: int
    _ids: Iterator[int]
    _items: list[dict[str, Any]]
    _by_id: dict[str, dict[str, Any]]
    _chunks: dict[int, list[str]]
    _open_blocks: dict[int, dict[str, Any]]
    _sequence: list[Any]
    _pending: list[dict[str, Any]]
    _notices: dict[str, dict[str, Any]]
    _last_flush: float
    _last_snapshot: float
    _scheduled_due: float | None
    _snapshot_dirty: bool
    _status_dirty: bool
    _force: bool
    transcript: list[Any]  # the synced traits
    transcript_seq: int
    status: dict[str, Any]

    if TYPE_CHECKING:  # provided by AgentView (and its widget base) at run time

        def _status_dict(self) -> dict[str, Any]: ...

        def send(self, content: Any, buffers: Any = None) -> None: ...

        def hold_sync(self) -> AbstractContextManager[None]: ...

    def _op(self, name: str, **fields: Any) -> None:
        self._seq += 1
        self._pending.append({"s": self._seq, "o": name, **fields})

    def _add(self, item: dict[str, Any]) -> dict[str, Any]:
        item = {"id": f"i{next(self._ids)}", **item}
        self._items.append(item)
        self._by_id[item["id"]] = item
        if item.get("kind") == "notice":
            self._sequence.append(item)  # the same dict: later updates of the notice show in the static rendering
        self._op("add", item=dict(item))
        return item

    def _update_notice(self, key: str, text: str, tone: str, active: bool = False) -> None:
        item = self._notices.get(key)
        if item is None:
            self._notices[key] = self._add({"kind": "notice", "tone": tone, "active": active, "text": text})
            return
        item.update(text=text, tone=tone, active=active)
        self._op("set", item=dict(item))

    def _block_at(self, item: dict[str, Any], index: int | None, kind: str) -> dict[str, Any]:
        blocks = item["blocks"]
        index = len(blocks) if index is None else index
        while len(blocks) <= index:
            blocks.append({"type": "other", "text": ""})
        block = blocks[index]
        want = "toolCall" if kind.startswith("toolcall") else kind.split("_")[0]
        if block.get("type") != want:
            block.clear()
            block.update({"type": want, "text": ""})
            if want == "toolCall":
                block.update(id="", name="")
        return block

    def _append_delta(self, item: dict[str, Any], index: int, block: dict[str, Any], delta: str) -> None:
        if not delta:
            return
        key = id(block)
        parts = self._chunks.get(key)
        if parts is None:
            parts = self._chunks[key] = [block.get("text", "")]
            self._open_blocks[key] = block
        parts.append(delta)
        self._seq += 1
        last = self._pending[-1] if self._pending else None
        if last is not None and last["o"] == "d" and last["i"] == item["id"] and last["b"] == index:
            last["t"].append(delta)
            last["s"] = self._seq
        else:
            self._pending.append({"s": self._seq, "o": "d", "i": item["id"], "b": index, "t": [delta]})

    def _close_block(self, block: dict[str, Any]) -> None:
        parts = self._chunks.pop(id(block), None)
        self._open_blocks.pop(id(block), None)
        if parts is not None:
            block["text"] = "".join(parts)

    def _finish_block(self, item: dict[str, Any], index: int, block: dict[str, Any], content: str) -> None:
        self._close_block(block)
        if block.get("text", "") != content:  # the provider's final text wins over the deltas
            block["text"] = content
            self._op("blk", i=item["id"], b=index, block=dict(block))

    def _materialize(self) -> None:
        """Join the text parts of blocks still streaming, so the items hold the full text."""
        for key, parts in self._chunks.items():
            if len(parts) > 1:
                joined = "".join(parts)
                parts[:] = [joined]
            self._open_blocks[key]["text"] = parts[0] if parts else ""

    def _after_event(self) -> None:
        """Flush now if the last flush is old enough, else make sure one is scheduled."""
        if self._force:
            self._force = False
            self._flush_locked(force=True)
            return
        if not (self._pending or self._status_dirty or self._snapshot_dirty):
            return
        now = time.monotonic()
        due = self._last_flush + self._interval
        if not self._pending and not self._status_dirty:  # only the snapshot waits, at its own rate
            due = max(due, self._last_snapshot + self._snapshot_interval)
        if due <= now:
            self._flush_locked()
        else:
            self._schedule(due)

    def _schedule(self, due: float) -> None:
        # A later callback already in the queue is harmless: it finds nothing due and reschedules.
        if self._scheduled_due is None or due < self._scheduled_due:
            self._scheduled_due = due
            FLUSHER.schedule(due, self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        with self._lock:
            self._scheduled_due = None
            self._after_event()

    def _flush_locked(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._pending:
            ops = self._pending
            self._pending = []
            for op in ops:
                if op["o"] == "d":
                    op["t"] = "".join(op["t"])
            self.send({"type": "ops", "ops": ops})
        # Forced (flush(), agent_end, display): the snapshot catches up with every op, deltas included.
        snapshot = (self._snapshot_dirty and now - self._last_snapshot >= self._snapshot_interval) or (
            force and (self._snapshot_dirty or self._seq != self.transcript_seq)
        )
        if snapshot or self._status_dirty:
            with self.hold_sync():
                if snapshot:
                    self._materialize()
                    self.transcript = orjson.loads(orjson.dumps(self._items))
                    self.transcript_seq = self._seq
                    self._snapshot_dirty = False
                    self._last_snapshot = now
                self.status = self._status_dict()
                self._status_dirty = False
        self._last_flush = now
        if self._snapshot_dirty:
            self._schedule(self._last_snapshot + self._snapshot_interval)

    def _sync_reply(self, have: Any) -> dict[str, Any]:
        """The state message for a view that asks to catch up (``have``: the seq it holds)."""
        # Pending ops first: a coalesced op must not straddle the state's seq (its text
        # would be partly in the state and applied again on top of it).
        if self._pending:
            self._flush_locked()
        reply: dict[str, Any] = {"type": "state", "seq": self._seq, "status": self._status_dict()}
        if have != self._seq:
            self._materialize()
            reply["items"] = orjson.loads(orjson.dumps(self._items))
        return reply


__all__ = ["FLUSHER", "Transport"]
