"""What the kernel ran: every cell's code, printed output, result, displays and error, as it happened.

The kernel is the source, never the browser, so this works the same under JupyterLab,
nbclient, papermill and ``jupyter execute``. IPython's ``pre_run_cell`` starts a record and
``post_run_cell`` ends it; in between, three hooks note what the cell showed, each on the
cell's own thread and only while a cell runs:

* ``print`` and other writes to ``sys.stdout``/``sys.stderr`` (the stream's ``write`` is
  wrapped on the instance, as IPython 9 does for its history; the stream object stays the
  same, so ipykernel's checks and the user's output are untouched);
* ``display()`` and matplotlib's inline figures (flushed in ``post_execute``, before
  ``post_run_cell``): the display publisher's ``publish``; ``clear_output`` clears what the
  record had shown, as it clears the cell;
* the cell's result (``Out[n]``), as the display hook formats it (``log_output``), so nothing
  is formatted twice.

Writes and displays from other threads (a background agent's tools, a user's worker threads)
are not recorded. Each record keeps the head and the tail of long outputs and a bounded number
of displays; an error is formatted when the cell ends (its last frames), so no traceback and
no frame's variables are kept alive. Cells that ran before the extension was loaded are known
from IPython's history (``In``/``Out``): their code and result only.

A cell is kept out of the agent's view by a comment line ``# pi: skip`` (the kernel does not
see cell tags: they live in the notebook file, which nbclient and papermill do not send).
``%%pi`` cells are the agent's own turns and are not recorded as cells.
"""

from __future__ import annotations

import re
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SKIP_MARKER", "CellLog", "CellRecord", "StreamText", "format_error", "install", "uninstall"]

SKIP_MARKER = "# pi: skip"
"""A comment line that keeps a cell out of what the agent is told (and out of the ``notebook`` tool)."""

_SKIP = re.compile(r"(?:^|\s)#\s*pi:\s*skip\b", re.MULTILINE | re.IGNORECASE)
_PI_ONLY = re.compile(r"^\s*(%pi\b|%(?:re|un)?load_ext\s+pi_jupyter\b|%config\s+PiMagics\b|#|$)")

MAX_CELLS = 1000
"""Records kept (the oldest go first)."""
STREAM_HEAD = 16 * 1024
STREAM_TAIL = 16 * 1024
"""Characters of a stream kept from its start and from its end (the middle is counted)."""
MAX_DISPLAYS = 16
"""Displays kept per cell (the latest)."""
MAX_IMAGE_CHARS = 4 * 1024 * 1024
"""The largest image (base64 characters) kept; a larger one is named, not kept."""
MAX_IMAGE_TOTAL = 48 * 1024 * 1024
"""Image data kept over all records (the oldest images are dropped first)."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Image types a vision model takes."""
TRACE_FRAMES = 6
"""Frames of a traceback kept (the cell's own frames and the last ones before the error)."""


class StreamText:
    """Text written to one stream: its head and tail, and how much was written in all."""

    __slots__ = ("_head", "_head_len", "_tail", "_tail_len", "total")

    def __init__(self) -> None:
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def write(self, text: str) -> None:
        """Add ``text`` (keeps the first and last few kilobytes)."""
        self.total += len(text)
        room = STREAM_HEAD - self._head_len
        if room > 0:
            piece = text[:room]
            self._head.append(piece)
            self._head_len += len(piece)
            text = text[room:]
            if not text:
                return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len - len(self._tail[0]) >= STREAM_TAIL:
            self._tail_len -= len(self._tail.popleft())

    def clear(self) -> None:
        """Forget what was written (``clear_output``)."""
        self._head, self._head_len, self._tail, self._tail_len, self.total = [], 0, deque(), 0, 0

    def parts(self) -> tuple[str, str, int]:
        """``(head, tail, characters left out between them)``."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        if len(tail) > STREAM_TAIL:
            tail = tail[-STREAM_TAIL:]
        return head, tail, max(0, self.total - len(head) - len(tail))

    def __bool__(self) -> bool:
        return self.total > 0


@dataclass(eq=False)
class CellRecord:
    """One cell the kernel ran."""

    seq: int
    """Its place among the cells of this kernel (1, 2, ...; never reused)."""
    count: int | None = None
    """Its execution count (``In[n]``), once known."""
    cell_id: str | None = None
    """The notebook cell id, when the front end sent one (JupyterLab does; nbclient and papermill may not)."""
    code: str = ""
    started: float = 0.0
    """When it started (``time.time()``)."""
    duration_s: float | None = None
    stdout: StreamText = field(default_factory=StreamText)
    stderr: StreamText = field(default_factory=StreamText)
    result: dict[str, Any] | None = None
    """The result's MIME bundle (``Out[n]``), as IPython formatted it."""
    displays: list[dict[str, Any]] = field(default_factory=list)
    displays_dropped: int = 0
    error: str | None = None
    """``KeyError: 'revenue_eur'``: the exception's last line."""
    traceback: str | None = None
    """The exception with its last frames."""
    skipped: bool = False
    """Kept out by :data:`SKIP_MARKER`."""
    agent_turn: bool = False
    """A ``%%pi`` cell (or one of ``%pi`` commands only): the agent's own, not told as a cell."""
    from_history: bool = False
    """Known from IPython's history only (it ran before the extension was loaded)."""
    running: bool = False
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    """Texts made from the record once it finished (its streams joined, its displays as text), for rendering it again."""

    @property
    def label(self) -> str:
        """``In[3]`` (or ``cell #3 of this kernel`` when no count is known)."""
        return f"In[{self.count}]" if self.count is not None else f"cell #{self.seq}"

    @property
    def told(self) -> bool:
        """True for a cell the agent may be told of (not skipped, not the agent's own)."""
        return not self.skipped and not self.agent_turn


def _is_agent_cell(code: str) -> bool:
    text = code.lstrip()
    if text.startswith("%%pi"):
        return True
    return all(_PI_ONLY.match(line) for line in code.splitlines()) and bool(code.strip())


class CellLog:
    """The cells this kernel ran (see the module docstring); one per kernel (:func:`install`)."""

    def __init__(self, shell: Any = None) -> None:
        self.shell = shell
        self.kernel = uuid.uuid4().hex[:12]
        """This kernel's id: a notebook context made here names it, so the next one knows whether the kernel changed."""
        self.started = _session_start(shell) or time.time()
        """When this kernel's IPython session started (``time.time()``)."""
        self.records: deque[CellRecord] = deque(maxlen=MAX_CELLS)
        self._running: list[tuple[Any, CellRecord]] = []
        self._echoes: tuple[Any, Any, Any] = (None, None, None)
        self._seq = 0
        self._thread: int | None = None
        self._undo: list[Callable[[], None]] = []
        self._image_chars: deque[tuple[CellRecord, dict[str, Any], int]] = deque()
        self._image_total = 0

    # ------------------------------------------------------------ reading

    def since(self, seq: int = 0, after: float | None = None) -> list[CellRecord]:
        """The finished records after ``seq`` (and started after time ``after``), oldest first."""
        out = [r for r in self.records if r.seq > seq and not r.running and (after is None or r.started > after)]
        return out

    def find(self, ref: str) -> CellRecord | None:
        """A record by ``In[n]``, ``n``, ``#seq`` or cell id (the latest run of that cell); ``None`` if unknown."""
        ref = ref.strip()
        match = re.fullmatch(r"(?:In\s*\[\s*(\d+)\s*\]|(\d+))", ref)
        for record in reversed(self.records):
            if record.running:
                continue
            if match and record.count == int(match.group(1) or match.group(2)):
                return record
            if ref.startswith("#") and ref[1:].isdigit() and record.seq == int(ref[1:]):
                return record
            if record.cell_id and record.cell_id == ref:
                return record
        return None

    def end_all(self) -> None:
        """End every running record and stop noting (the extension is unloaded in the middle of a cell)."""
        self._stop()
        for _, record in reversed(self._running):
            self._finish(record, None)
        self._running.clear()

    @property
    def current_seq(self) -> int:
        """The seq of the cell running now (``0`` before any)."""
        return self.current.seq if self.current is not None else self._seq

    # ------------------------------------------------------------ the hooks

    def pre_run_cell(self, info: Any) -> None:
        """IPython's ``pre_run_cell``: start a record and begin noting the cell's output.

        A cell may run another (``run_cell`` from a cell): the inner one is noted while it runs,
        then the outer one again.
        """
        self._stop()
        self._seq += 1
        code = str(getattr(info, "raw_cell", "") or "")
        cell_id = getattr(info, "cell_id", None)
        record = CellRecord(seq=self._seq, cell_id=str(cell_id) if cell_id else None, code=code, started=time.time(), running=True)
        record.agent_turn = _is_agent_cell(code)
        record.skipped = bool(_SKIP.search(code))
        self.records.append(record)
        self._running.append((info, record))
        self._resume()

    def post_run_cell(self, result: Any) -> None:
        """IPython's ``post_run_cell``: the record gets its count and its error, and noting stops (or goes back to an outer cell)."""
        self._stop()
        info = getattr(result, "info", None)
        at = next((i for i in range(len(self._running) - 1, -1, -1) if self._running[i][0] is info), len(self._running) - 1)
        if at < 0:
            return
        # cells started inside this one and never ended (``run_cell_async`` from a cell) end with it
        ended = [record for _, record in self._running[at:]]
        del self._running[at:]
        for record in ended[1:]:
            self._finish(record, None)
        self._finish(ended[0], result)
        self._resume()

    @property
    def current(self) -> CellRecord | None:
        """The record of the cell running now (the innermost one), if any."""
        return self._running[-1][1] if self._running else None

    def _resume(self) -> None:
        record = self.current
        if record is not None and record.told:
            self._thread = threading.get_ident()
            self._start(record)

    def _finish(self, record: CellRecord, result: Any) -> None:
        record.running = False
        record.duration_s = max(0.0, time.time() - record.started)
        count = getattr(result, "execution_count", None)
        record.count = count if isinstance(count, int) else None
        if not record.told:
            return
        error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
        if isinstance(error, BaseException):
            record.error, record.traceback = format_error(error, self._cell_names())
        self._keep_images(record)

    # ------------------------------------------------------------ noting output

    def _start(self, record: CellRecord) -> None:
        shell = self.shell
        import sys

        # looked up once per cell: the shell's traits are slow to read on every write
        self._echoes = (shell, getattr(shell, "displayhook", None), getattr(shell, "display_pub", None))

        for name, sink in (("stdout", record.stdout), ("stderr", record.stderr)):
            self._wrap(getattr(sys, name, None), "write", self._stream_writer(sink))
        if shell is None:
            return
        publisher = getattr(shell, "display_pub", None)
        self._wrap(publisher, "publish", self._publisher(record))
        self._wrap(publisher, "clear_output", self._clearer(record))
        self._wrap(getattr(shell, "displayhook", None), "log_output", self._result_logger(record))

    def _wrap(self, target: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
        original = getattr(target, name, None) if target is not None else None
        if original is None:
            return
        wrapper = make(original)
        try:
            setattr(target, name, wrapper)
        except (AttributeError, TypeError):  # a C stream (a terminal's TextIOWrapper): not noted
            return
        had_own = name in getattr(target, "__dict__", {})

        def undo() -> None:
            if getattr(target, name, None) is wrapper:
                try:
                    if had_own:
                        setattr(target, name, original)
                    else:
                        delattr(target, name)
                except (AttributeError, TypeError):
                    pass

        self._undo.append(undo)

    def _stop(self) -> None:
        undo, self._undo = self._undo, []
        for step in reversed(undo):
            step()
        self._thread = None

    def _mine(self) -> bool:
        return threading.get_ident() == self._thread

    def _echo(self) -> bool:
        """True while IPython itself writes to the stream (a terminal's ``Out[n]:``, a display's text, a traceback)."""
        shell, hook, pub = self._echoes
        return bool(getattr(shell, "showing_traceback", False) or getattr(hook, "is_active", False) or getattr(pub, "is_publishing", False))

    def _stream_writer(self, sink: StreamText) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def write(data: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(data, *args, **kwargs)
                if isinstance(data, str) and data and self._mine() and not self._echo():
                    sink.write(data)
                return out

            return write

        return make

    def _publisher(self, record: CellRecord) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def publish(data: Any = None, metadata: Any = None, *args: Any, **kwargs: Any) -> Any:
                out = original(data, metadata, *args, **kwargs)
                if isinstance(data, dict) and self._mine():
                    record.displays.append(dict(data))  # a copy: IPython's history keeps the original
                    if len(record.displays) > MAX_DISPLAYS:
                        record.displays.pop(0)
                        record.displays_dropped += 1
                return out

            return publish

        return make

    def _clearer(self, record: CellRecord) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def clear_output(*args: Any, **kwargs: Any) -> Any:
                out = original(*args, **kwargs)
                if self._mine():  # what the cell showed so far is gone from it, and from the record
                    record.stdout.clear()
                    record.stderr.clear()
                    record.displays.clear()
                return out

            return clear_output

        return make

    def _result_logger(self, record: CellRecord) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def log_output(format_dict: Any, *args: Any, **kwargs: Any) -> Any:
                if isinstance(format_dict, dict) and self._mine():
                    record.result = dict(format_dict)
                return original(format_dict, *args, **kwargs)

            return log_output

        return make

    def _keep_images(self, record: CellRecord) -> None:
        """Bound the image data kept: a too large image is named only, the oldest images go first."""
        for bundle in [*record.displays, *([record.result] if record.result else [])]:
            for mime in IMAGE_TYPES:
                data = bundle.get(mime)
                if not isinstance(data, str):
                    continue
                size = len(data)
                if size > MAX_IMAGE_CHARS:
                    continue  # the context names it as too large
                self._image_chars.append((record, bundle, size))
                self._image_total += size
        while self._image_total > MAX_IMAGE_TOTAL and self._image_chars:
            _, bundle, size = self._image_chars.popleft()
            for mime in IMAGE_TYPES:
                if isinstance(bundle.get(mime), str):
                    bundle[mime] = None  # dropped: the context says the image is no longer held
            self._image_total -= size

    def _cell_names(self) -> dict[str, int]:
        compiler = getattr(self.shell, "compile", None)
        names = getattr(compiler, "_filename_map", None)  # IPython's own map: cell file name -> In[n]
        return names if isinstance(names, dict) else {}

    # ------------------------------------------------------------ history

    def adopt_running_cell(self) -> None:
        """Note the cell running now (the one loading the extension): its code, and what it shows from here on."""
        result = getattr(getattr(self.shell, "displayhook", None), "exec_result", None)  # set only while a cell runs
        info = getattr(result, "info", None)
        if info is None or any(i is info for i, _ in self._running):
            return
        self.pre_run_cell(info)

    def backfill(self) -> None:
        """Records for the cells that ran before the extension was loaded (IPython's ``In`` and ``Out``)."""
        shell = self.shell
        ns = getattr(shell, "user_ns", None) or {}
        inputs = ns.get("In")
        outputs = ns.get("Out") or {}
        if not isinstance(inputs, list):
            return
        running = getattr(getattr(getattr(shell, "displayhook", None), "exec_result", None), "execution_count", None)
        for count, code in enumerate(inputs[1:], start=1):
            if count == running or not isinstance(code, str) or not code.strip():
                continue  # the cell loading the extension is noted as it runs (adopt_running_cell)
            self._seq += 1
            record = CellRecord(seq=self._seq, count=count, code=code, started=self.started, from_history=True)
            record.agent_turn = _is_agent_cell(code)
            record.skipped = bool(_SKIP.search(code))
            if count in outputs and record.told:
                record.result = {"text/plain": _safe_repr(outputs[count])}
            self.records.append(record)


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken repr is still information
        return f"<{type(value).__name__} (repr failed: {type(exc).__name__})>"
    return text if len(text) <= 4000 else text[:4000] + "…"


def _session_start(shell: Any) -> float | None:
    """When IPython's history session began (the kernel's start), as ``time.time()``; ``None`` if unknown."""
    manager = getattr(shell, "history_manager", None)
    try:
        info = manager.get_session_info() if manager is not None else None
        started = info[1] if info else None
        return started.timestamp() if started is not None else None
    except Exception:  # noqa: BLE001 - no history database: the log's own start stands in
        return None


def _frames(tb: Any) -> Iterator[traceback.FrameSummary]:
    yield from traceback.extract_tb(tb)


def format_error(error: BaseException, cell_names: dict[str, int] | None = None, limit: int = TRACE_FRAMES) -> tuple[str, str]:
    """``(last line, traceback)`` of ``error``: the cell's own frames and the last ones, IPython's ``Cell In[n]`` names.

    Frames of IPython's machinery before the cell's code are left out; the frames in between
    are counted. A chained exception adds one line for its cause.
    """
    names = cell_names or {}
    last = "".join(traceback.format_exception_only(type(error), error)).strip()
    if isinstance(error, SyntaxError) and not error.__traceback__:
        return last.splitlines()[-1] if last else type(error).__name__, last
    frames = list(_frames(error.__traceback__))
    first_cell = next((i for i, f in enumerate(frames) if f.filename in names), None)
    if first_cell is not None:
        frames = frames[first_cell:]
    keep_head = [i for i, f in enumerate(frames) if f.filename in names][:2]
    tail_start = max(0, len(frames) - (limit - len(keep_head)))
    shown = sorted(set(keep_head) | set(range(tail_start, len(frames))))
    lines = ["Traceback (most recent call last):"]
    previous = -1
    for i in shown:
        if i > previous + 1:
            lines.append(f"  ... {i - previous - 1} frame{'s' if i - previous - 1 != 1 else ''} left out ...")
        frame = frames[i]
        where = f"Cell In[{names[frame.filename]}]" if frame.filename in names else f'File "{_short_path(frame.filename)}"'
        lines.append(f"  {where}, line {frame.lineno}, in {frame.name}")
        if frame.line:
            lines.append(f"    {frame.line.strip()}")
        previous = i
    lines.append(last)
    cause = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    if cause is not None:
        said = "".join(traceback.format_exception_only(type(cause), cause)).strip().splitlines()
        if said and said[-1] == last.splitlines()[-1]:
            said = []  # the same error re-raised (pandas' KeyError from its index's KeyError) says nothing more
        how = "caused by" if error.__cause__ is not None else "raised while handling"
        if said:
            lines.append(f"({how} {said[-1]})")
    summary = last.splitlines()[-1] if last else type(error).__name__
    return summary, "\n".join(lines)


def _short_path(path: str) -> str:
    for marker in ("site-packages/", "dist-packages/"):
        at = path.rfind(marker)
        if at >= 0:
            return "…/" + path[at + len(marker) :]
    return path


def install(shell: Any) -> CellLog:
    """The kernel's :class:`CellLog`, hooked into ``shell`` (made once: a reloaded extension keeps what it knew)."""
    log = getattr(shell, "_pi_cell_log", None)
    if not isinstance(log, CellLog):
        log = CellLog(shell)
        log.backfill()
        shell._pi_cell_log = log
    callbacks = shell.events.callbacks
    if log.pre_run_cell not in callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", log.pre_run_cell)
    if log.post_run_cell not in callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", log.post_run_cell)
        log.adopt_running_cell()
    return log


def uninstall(shell: Any) -> None:
    """Stop noting cells (``%unload_ext``); what was noted stays for a later ``%load_ext``."""
    log = getattr(shell, "_pi_cell_log", None)
    if not isinstance(log, CellLog):
        return
    log.end_all()
    for event, callback in (("pre_run_cell", log.pre_run_cell), ("post_run_cell", log.post_run_cell)):
        if callback in shell.events.callbacks[event]:
            shell.events.unregister(event, callback)
