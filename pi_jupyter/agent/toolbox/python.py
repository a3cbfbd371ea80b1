"""``python``: run code in the notebook's own namespace, like a cell.

All statements but a final expression are executed, the final expression is evaluated and
its value shown (``None`` shows nothing), as in a notebook cell. ``print`` output and
``stderr`` are captured in order (tail-truncated like bash, the full text saved to a file
when long). Rich values become text for the model (see :mod:`.display`); their MIME
bundle goes to ``details["result"]`` for the widget. Images (a plot shown or returned, a PNG
displayed) reach the model as image content, at most :data:`MAX_IMAGES` per call, and are
stored once, in the content (``send_images=False`` names them instead); a model that takes no
images reads a short placeholder. Exceptions give a short traceback of the code's frames.

``display()`` in the code. In a notebook, ``ctx.extra["display_capture"]`` (given by the
notebook layer) routes what the code's thread displays through this tool: every string of
the bundle is redacted before the notebook shows it (HTML, Markdown, any MIME type), and the
model reads it in the output, in order with the prints, as ``[display text/html, ...]`` and
its text (see :func:`.display.bundle_to_text`), its images as image content. ``clear_output()`` from tool code is ignored:
it would clear the cell that shows the agent.

What the code changes. In a notebook, ``ctx.extra["world"]`` (a
:class:`~pi_jupyter.world.Recorder`) records the variables each run set, changed or deleted in
``details["world"]`` (see :mod:`pi_jupyter.world`), so a checkout can bring them back.

Where the code runs. In a notebook (``ctx.extra["main_thread"]``, given by the notebook
layer) synchronous code runs on the kernel's main thread, where the user's cells run, so what it
makes there (a ``sqlite3`` connection, numpy's error settings, a ``decimal`` context) is the
user's in the next cell (see :mod:`.main_thread`). The calls of all agents, and of a grid's
branches, take turns there, one at a time; a call that finds a cell running waits for it and
says so. The timeout counts from the moment the code starts. Stop, the timeout and the kernel's
interrupt stop the code with a ``SIGINT`` (a blocking call such as ``time.sleep`` is woken);
the output so far is kept.

Elsewhere (a plain script, a test), synchronous code runs in a worker thread so the event loop
keeps serving, and a timeout (default 30 s) can be reported. Python threads cannot be killed:
on timeout or abort the thread is asked to stop by raising :class:`PythonInterrupt` in it
(``PyThreadState_SetAsyncExc``). Pure-Python code stops at its next bytecode; code blocked in C
(``time.sleep``, I/O, a long numpy call) only stops when that call returns. While such a thread
is still running, further output is discarded and new python calls are refused with a clear
message, so two runs never share the namespace at once. Create the tool with
``in_thread=False`` to run on the caller's thread (no timeout then). Code using top-level
``await`` runs on the agent's event loop, where the timeout cancels it (and output printed by
other tasks meanwhile is captured with it). If the tool call itself is cancelled, the code is
interrupted the same way.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import itertools
import linecache
import threading
import time
import traceback
import weakref
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from ...messages import ImageContent, TextContent
from ..redact import redact_value
from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError, attach_world
from .display import bundle_to_text, value_to_display
from .main_thread import MainThreadJob, async_raise
from .output import OutputAccumulator
from .truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

__all__ = ["PythonInterrupt", "PythonParams", "PythonTool"]

DEFAULT_TIMEOUT = 30.0
MAX_IMAGES = 4
"""Images one call attaches for the model (displayed ones first, then the value's)."""
MAX_IMAGE_CHARS = 3_000_000
"""The largest image attached (base64 characters, about 2.2 MB); a larger one is named only."""
_STOP_GRACE = 1.0
_ABORT_GRACE = 0.3  # the agent's loop gives an aborted tool 0.5 s before it cancels it
_WAIT_NOTE_S = 1.0  # a call that waits this long for the main thread says so
_POLL = 0.1
_counter = itertools.count(1)


class PythonInterrupt(BaseException):
    """Raised inside running tool code to stop it (timeout or abort). A ``BaseException``,
    so ``except Exception`` in the code does not swallow it."""


class PythonParams(BaseModel):
    """Arguments of ``python``."""

    code: str = Field(
        description="Python code to run in the notebook's namespace. Variables persist between calls and are shared with the user."
        " The value of a final expression is shown, as in a notebook cell."
    )
    timeout: float | None = Field(default=None, description="Timeout in seconds (default: 30)")


class _Run:
    """State shared between the event loop and the thread running the code."""

    def __init__(self) -> None:
        self.value: Any = None
        self.has_value = False
        self.exc: BaseException | None = None
        self.chunks: list[str] = []
        self.lock = threading.Lock()
        self.discard = False
        self.images: list[ImageContent] = []
        self.send_images = True

    def on_display(self, data: Any, metadata: Any) -> tuple[Any, Any] | None:
        """A display the code made: redacted for the notebook, its text (and images) added to the output for the model."""
        with self.lock:
            if self.discard:
                return None  # a run that outlived its call shows nothing more
        data = redact_value(data) if isinstance(data, dict) else data
        metadata = redact_value(metadata) if isinstance(metadata, dict) else metadata
        if isinstance(data, dict):
            self.sink("display", bundle_to_text(data, attached=self.attach(data)))
        return data, metadata

    def attach(self, bundle: dict[str, Any]) -> bool:
        """Take the bundle's images for the model, within the budget; True if any was taken."""
        taken = False
        for kind in ("image/png", "image/jpeg"):
            data = bundle.get(kind)
            if self.send_images and isinstance(data, str) and len(data) <= MAX_IMAGE_CHARS and len(self.images) < MAX_IMAGES:
                self.images.append(ImageContent(data=data, mime_type=kind))
                taken = True
        return taken

    def sink(self, _stream: str, text: str) -> None:
        with self.lock:
            if not self.discard:
                self.chunks.append(text)

    def drain(self) -> str:
        with self.lock:
            text, self.chunks = "".join(self.chunks), []
        return text


class PythonTool(BuiltinTool[PythonParams]):
    """Run Python code in a namespace dict (in a notebook: the kernel's ``user_ns``).

    ``namespace``: the dict code runs in (default: ``ctx.extra["namespace"]`` if the loop
    provides one, else a private dict kept by this tool). ``timeout``: default seconds per
    call (``None``: no limit). ``in_thread``: run synchronous code in a worker thread (see the
    module notes). ``send_images``: give the images the code shows or returns to the model (default).
    """

    name = "python"
    label = "python"
    description = (
        "Run Python code in the user's live notebook kernel namespace. Variables, imports and data persist between calls and are"
        " shared with the user's notebook. Prints and the value of a final expression are returned (as in a notebook cell);"
        f" long output is truncated to the last lines / {DEFAULT_MAX_BYTES // 1024}KB. Optionally provide a timeout in seconds."
    )
    parameters = PythonParams
    mutating = True
    prompt_snippet = "Run Python code in the notebook's kernel namespace (state persists and is shared with the user)"
    prompt_guidelines = (
        "The python tool runs in the user's live notebook namespace: inspect existing variables before recreating data, and do not"
        " overwrite or delete the user's variables unless asked",
    )
    command_arg: ClassVar = "code"

    def __init__(
        self,
        namespace: dict[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        in_thread: bool = True,
        send_images: bool = True,
        cwd: Any = None,
        policy: Any = None,
    ) -> None:
        super().__init__(cwd, policy)
        self.namespace = namespace
        self._own_namespace: dict[str, Any] = {"__name__": "__main__"}
        self.timeout = timeout
        self.in_thread = in_thread
        self.send_images = send_images
        self._runaway: threading.Thread | None = None
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    def namespace_for(self, ctx: ToolContext) -> dict[str, Any]:
        """The dict the code of this call runs in."""
        if self.namespace is not None:
            return self.namespace
        extra = ctx.extra.get("namespace") if ctx.extra else None
        return extra if isinstance(extra, dict) else self._own_namespace

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    async def run(self, args: PythonParams, ctx: ToolContext) -> ToolResult:
        async with self._lock():  # calls of one turn run in parallel; one namespace, one run at a time
            if self._runaway is not None:
                if self._runaway.is_alive():
                    raise ToolError(
                        "A previous python call is still running in the background (it timed out or was aborted, and Python threads"
                        " cannot be killed; it stops when its current blocking call returns). Wait and try again, or ask the user"
                        " to interrupt or restart the kernel."
                    )
                self._runaway = None
            return await self._run(args, ctx)

    async def _run(self, args: PythonParams, ctx: ToolContext) -> ToolResult:
        filename = f"<python-tool-{next(_counter)}>"
        try:
            body, expr = _compile(args.code, filename)
        except SyntaxError as exc:
            text = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
            return ToolResult.error(text, details={"status": "error", "error": {"type": "SyntaxError", "message": str(exc)}})
        linecache.cache[filename] = (len(args.code), None, args.code.splitlines(True), filename)
        ns = self.namespace_for(ctx)
        timeout = args.timeout if args.timeout is not None else self.timeout
        if timeout is not None and timeout <= 0:
            timeout = None
        state = _Run()
        state.send_images = self.send_images
        output = OutputAccumulator("pi-python")
        is_async = any(c is not None and c.co_flags & inspect.CO_COROUTINE for c in (body, expr))
        capture = ctx.extra.get("display_capture") if ctx.extra else None
        main = ctx.extra.get("main_thread") if ctx.extra else None

        def stream() -> None:
            text = state.drain()
            if text:
                output.append_text(text)
                snap = output.snapshot()
                ctx.update(ToolResult.text(snap.content))

        if main is not None and not is_async:
            on_main = await _OnMain(main, ctx, stream).run(body, expr, ns, state, capture, args.code, timeout)
            if on_main is not None:
                return self._finish(state, output, on_main.status, timeout, on_main.still_running, filename, on_main)
        recording = _start_recording(ctx, ns, args.code)  # what the code changes, for its branch
        status = "ok"
        still_running = False
        started = time.monotonic()
        mine = getattr(recording, "runs_here", None)  # the world keeps the files written from the code's own thread
        if is_async:
            if mine is not None:
                mine()
            status = await self._run_async(body, expr, ns, state, timeout, ctx, capture)
        elif not self.in_thread:
            if mine is not None:
                mine()
            _execute(body, expr, ns, state, capture)
        else:
            loop = asyncio.get_running_loop()
            finished = loop.create_future()

            def finish() -> None:
                if not finished.done():
                    finished.set_result(None)

            def work() -> None:
                if mine is not None:
                    mine()
                _execute(body, expr, ns, state, capture)
                try:
                    loop.call_soon_threadsafe(finish)
                except RuntimeError:  # the loop is gone: nobody waits any more
                    pass

            thread = threading.Thread(target=work, name=f"pi-python {filename}", daemon=True)
            thread.start()
            try:
                while not finished.done():
                    remaining = None if timeout is None else timeout - (time.monotonic() - started)
                    if remaining is not None and remaining <= 0:
                        status = "timeout"
                        break
                    if ctx.signal is not None and ctx.signal.aborted:
                        status = "aborted"
                        break
                    wait = _POLL if remaining is None else min(_POLL, remaining)
                    await asyncio.wait({finished}, timeout=wait)
                    stream()
            except asyncio.CancelledError:
                # The run itself was cancelled (e.g. the kernel was interrupted): stop the code too.
                if thread.ident is not None and thread.is_alive():
                    async_raise(thread.ident, PythonInterrupt)
                    self._runaway = thread
                stream()  # what it printed so far is the partial result the loop keeps
                raise
            if status != "ok":
                if thread.ident is not None:
                    async_raise(thread.ident, PythonInterrupt)
                try:
                    await asyncio.wait_for(asyncio.shield(finished), _ABORT_GRACE if status == "aborted" else _STOP_GRACE)
                except asyncio.TimeoutError:
                    still_running = True
                    self._runaway = thread
        delta: Any = None
        if recording is not None:
            try:
                delta = recording.finish()
            except Exception as exc:  # noqa: BLE001 - the call's own result matters more than its record
                delta = _unrecorded(exc)
        return self._finish(state, output, status, timeout, still_running, filename, _CallEnd(status, still_running, delta))

    def _finish(
        self, state: _Run, output: OutputAccumulator, status: str, timeout: float | None, still: bool, filename: str, how: _CallEnd
    ) -> ToolResult:
        text_out = state.drain()
        if still:
            with state.lock:
                state.discard = True
        if text_out:
            output.append_text(text_out)
        output.finish()
        result = self._result(state, output, status, timeout, still, filename, how.on_main, how.never_ran)
        if how.waited >= _WAIT_NOTE_S and not how.never_ran:
            result.details = {**(result.details or {}), "waitedS": round(how.waited, 1)}
            why = f" ({how.waited_for} was running there)" if how.waited_for else ""
            note = f"[Waited {how.waited:.1f} s for the kernel's main thread{why} before the code ran.]"
            result.content[0] = TextContent(text=result.content[0].text + "\n" + note)  # type: ignore[union-attr]
        if how.delta is not None:
            attach_world(result, [how.delta])
        return result

    async def _run_async(
        self, body: Any, expr: Any, ns: dict[str, Any], state: _Run, timeout: float | None, ctx: ToolContext, capture: Any = None
    ) -> str:
        from .capture import ThreadCapture

        async def go() -> None:
            with ThreadCapture(state.sink), _displays(capture, state):
                try:
                    for code, is_expr in ((body, False), (expr, True)):
                        if code is None:
                            continue
                        out = eval(code, ns)  # noqa: S307 - running the model's code is this tool's job
                        if code.co_flags & inspect.CO_COROUTINE:
                            out = await out
                        if is_expr:
                            state.value, state.has_value = out, True
                except asyncio.CancelledError:
                    raise
                except BaseException as exc:  # noqa: BLE001 - reported to the model
                    state.exc = exc

        task = asyncio.ensure_future(go())
        aborter = asyncio.ensure_future(ctx.signal.wait()) if ctx.signal is not None else None
        try:
            done, _ = await asyncio.wait({task} | ({aborter} if aborter else set()), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if aborter is not None:
                aborter.cancel()
        if task in done:
            return "ok"
        task.cancel()
        try:
            await task
        except BaseException:  # noqa: BLE001 - the cancellation we asked for
            pass
        return "aborted" if aborter is not None and aborter in done else "timeout"

    def _result(
        self,
        state: _Run,
        output: OutputAccumulator,
        status: str,
        timeout: float | None,
        still_running: bool,
        filename: str,
        on_main: bool = False,
        never_ran: bool = False,
    ) -> ToolResult:
        parts: list[str] = []
        details: dict[str, Any] = {"status": status}
        snap = output.snapshot()
        if snap.content:
            text = snap.content.rstrip("\n")
            if snap.truncated:
                start = snap.total_lines - snap.output_lines + 1
                text += (
                    f"\n\n[Output: showing lines {start}-{snap.total_lines} of {snap.total_lines}"
                    f"{'' if snap.truncated_by == 'lines' else f' ({format_size(DEFAULT_MAX_BYTES)} limit)'}."
                    f" Full output: {output.full_output_path}]"
                )
                details["truncation"] = snap.details()
                details["fullOutputPath"] = output.full_output_path
            parts.append(text)
        is_error = status != "ok"
        exc = state.exc
        if status == "ok" and exc is not None and not isinstance(exc, PythonInterrupt):
            is_error = True
            details["status"] = "error"
            details["error"] = {"type": type(exc).__name__, "message": str(exc)}
            parts.append(_format_traceback(exc, filename))
        elif status == "ok" and state.has_value and state.value is not None:
            value_text, bundle = value_to_display(state.value)
            cut = truncate_head(value_text)
            value_text = cut.content
            if cut.truncated:
                value_text += f"\n[Value text truncated: showing {cut.output_lines} of {cut.total_lines} lines]"
            images = [k for k in ("image/png", "image/jpeg") if isinstance(bundle.get(k), str)]
            if images and state.attach(bundle):
                value_text += f"\n[{', '.join(images)} attached]"
                for k in images:  # stored once: in the content the model reads
                    del bundle[k]
            elif images or "image/svg+xml" in bundle:
                shown = images + (["image/svg+xml"] if "image/svg+xml" in bundle else [])
                value_text += f"\n[{', '.join(shown)} shown to the user, not sent to the model]"
            parts.append(f"Out: {value_text}" if "\n" not in value_text else f"Out:\n{value_text}")
            details["result"] = bundle
        if status in ("timeout", "aborted", "interrupted"):
            what = {"timeout": f"Timed out after {_seconds(timeout)} seconds", "aborted": "Aborted"}.get(
                status, "Interrupted by the kernel's interrupt"
            )
            if still_running:
                details["stillRunning"] = True
            if still_running and on_main:
                parts.append(
                    f"[{what}. The code is still running on the kernel's main thread, inside a call that cannot be interrupted;"
                    " it stops when that call returns. Its further output is discarded, and the next python call waits for it.]"
                )
            elif still_running:
                parts.append(
                    f"[{what}. The code is still running in a background thread: Python threads cannot be killed, so it runs"
                    " until its current blocking call returns and is interrupted then. Its further output is discarded, and the"
                    " python tool refuses new calls until it has ended.]"
                )
            elif never_ran:
                parts.append(f"[{what} before the code ran: it was waiting for the kernel's main thread.]")
            else:
                parts.append(f"[{what}: the code was interrupted and has stopped.]")
        text = "\n".join(parts) if parts else "(no output)"
        content: list[TextContent | ImageContent] = [TextContent(text=text), *state.images]
        return ToolResult(content=content, details=details, is_error=is_error)


class _CallEnd:
    """How a call ended: its status, whether the code still runs, what it changed, how long it waited for its turn."""

    def __init__(
        self, status: str, still_running: bool, delta: Any, *, on_main: bool = False, waited: float = 0.0, waited_for: str = ""
    ) -> None:
        self.status = status
        self.still_running = still_running
        self.delta = delta
        self.on_main = on_main
        self.waited = waited
        self.waited_for = waited_for
        self.never_ran = False  # stopped while it waited for its turn


class _OnMain:
    """One call's code as a job on the kernel's main thread (``ctx.extra["main_thread"]``), watched from the agent's loop."""

    def __init__(self, main: Any, ctx: ToolContext, stream: Any) -> None:
        self.main = main
        self.ctx = ctx
        self.stream = stream
        self.recording: Any = None

    async def _record(self) -> Any:
        """The world's record of the call, saved off the main thread: a value slow to pickle holds up no cell of the user's."""
        recording = self.recording
        if recording is None:
            return None
        try:
            return await asyncio.shield(asyncio.to_thread(recording.finish))
        except Exception as exc:  # noqa: BLE001 - the call's own result matters more than its record
            return _unrecorded(exc)

    async def run(
        self, body: Any, expr: Any, ns: dict[str, Any], state: _Run, capture: Any, code: str, timeout: float | None
    ) -> _CallEnd | None:
        """Run the code there and wait for it; ``None`` when the main thread cannot take it (the caller runs it elsewhere)."""
        ctx = self.ctx

        def work(guard: Any) -> None:
            # on the main thread: the world is read before and after the code there, so a cell run meanwhile is not the call's
            recording = _start_recording(ctx, ns, code)
            mine = getattr(recording, "runs_here", None)
            if mine is not None:
                mine()
            self.recording = recording
            try:
                _execute(body, expr, ns, state, capture, guard)
            finally:
                stop = getattr(recording, "stop", None)
                if stop is not None:
                    stop()  # here: what the code left, and its files, before any cell runs next

        job = MainThreadJob(work, PythonInterrupt)
        if not self.main.submit(job):
            return None
        done = asyncio.wrap_future(job.done)
        status, waiting_said, waited_for = "ok", False, ""
        try:
            while not done.done():
                now = time.monotonic()
                if ctx.signal is not None and ctx.signal.aborted:
                    status = "aborted"
                    break
                if job.started_at is not None and timeout is not None and now - job.started_at >= timeout:
                    status = "timeout"
                    break
                if job.started_at is None and now - job.queued_at >= _WAIT_NOTE_S:
                    waited_for = self.main.busy_with() or waited_for
                    if not waiting_said:  # the card says why nothing happens yet
                        waiting_said = True
                        what = f"{waited_for} is running there" if waited_for else "it is busy"
                        ctx.update(ToolResult.text(f"[waiting for the kernel's main thread: {what}; the code runs when it is free]"))
                left = _POLL if job.started_at is None or timeout is None else max(0.0, min(_POLL, job.started_at + timeout - now))
                await asyncio.wait({done}, timeout=left)
                self.stream()
        except asyncio.CancelledError:
            job.stop("aborted")  # the run itself was cancelled: stop the code too
            self.stream()  # what it printed so far is the partial result the loop keeps
            raise
        still = False
        if status != "ok":
            job.stop(status)
            try:
                await asyncio.wait_for(asyncio.shield(done), _ABORT_GRACE if status == "aborted" else _STOP_GRACE)
            except asyncio.TimeoutError:
                still = True  # inside a C call that no signal interrupts
        if job.user_interrupted:
            status = "interrupted"
            if not job.passes_on and ctx.signal is not None:
                ctx.signal.abort("interrupted")  # no cell waits to hear it: the interrupt stops this run
        delta = _unrecorded_still() if still else await self._record()
        waited = (job.started_at if job.started_at is not None else time.monotonic()) - job.queued_at
        outcome = _CallEnd(status, still, delta, on_main=True, waited=waited, waited_for=waited_for)
        outcome.never_ran = job.started_at is None
        return outcome


def _start_recording(ctx: ToolContext, ns: dict[str, Any], code: str) -> Any:
    """The world's recording of this run (``None`` outside a notebook, or when the world cannot look)."""
    world = ctx.extra.get("world") if ctx.extra else None
    if world is None:
        return None
    try:
        return world.python_call(ns, code)
    except Exception:  # noqa: BLE001 - an odd object in the namespace must not stop the code from running
        return None


def _unrecorded(exc: BaseException) -> Any:
    from ...world import Delta

    return Delta(untracked=[f"python (not recorded: {type(exc).__name__})"])


def _unrecorded_still() -> Any:
    from ...world import Delta

    return Delta(untracked=["python (still running when the call ended: not recorded)"])


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _compile(code: str, filename: str) -> tuple[Any, Any]:
    """(body code or None, final expression code or None), compiled with top-level ``await`` allowed."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(code, filename, mode="exec")
    last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    body_nodes = tree.body[:-1] if last is not None else tree.body
    body = compile(ast.Module(body=body_nodes, type_ignores=[]), filename, "exec", flags=flags) if body_nodes else None
    expr = compile(ast.Expression(body=last.value), filename, "eval", flags=flags) if last is not None else None
    return body, expr


def _displays(capture: Any, state: _Run) -> Any:
    """``capture(transform)`` (the notebook's display router) for this run, or nothing outside a notebook."""
    return capture(state.on_display) if callable(capture) else contextlib.nullcontext()


def _execute(body: Any, expr: Any, ns: dict[str, Any], state: _Run, capture: Any = None, guard: Any = contextlib.nullcontext) -> None:
    """Run the compiled pieces in the current thread, capturing its output (and displays) into ``state``.

    ``guard()`` is entered around the code alone: where a stop request may interrupt it.
    """
    from .capture import ThreadCapture

    with ThreadCapture(state.sink), _displays(capture, state):
        try:
            with guard():
                if body is not None:
                    exec(body, ns)  # noqa: S102 - running the model's code is this tool's job
                if expr is not None:
                    state.value = eval(expr, ns)  # noqa: S307
                    state.has_value = True
        except BaseException as exc:  # noqa: BLE001 - reported to the model (PythonInterrupt included)
            state.exc = exc


def _format_traceback(exc: BaseException, filename: str, max_frames: int = 8) -> str:
    """A traceback starting at the code's own frames, at most ``max_frames`` deep per exception."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    if tb is None:
        tb = exc.__traceback__
    te = traceback.TracebackException(type(exc), exc, tb, limit=-max_frames)
    return "".join(te.format()).rstrip()
