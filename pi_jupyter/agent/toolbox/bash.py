"""``bash``: run a shell command in the working directory, as pi's bash tool.

The command runs in its own process group (``bash -c``, or ``sh -c`` without bash), stdin
closed, stdout and stderr merged in order. Partial output streams through ``ctx.update`` at
most every 100 ms. The model sees the last 2000 lines / 50 KB; past that, the whole output
is saved to a file the result names. Timeout and abort (``ctx.signal``) kill the whole
process group. A non-zero exit code is an error result ending in pi's
``Command exited with code N``; ``details["exitCode"]`` always holds the code.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal as _signal
import time
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from ..tools import ToolContext, ToolResult
from .base import BuiltinTool, ToolError
from .output import OutputAccumulator
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size

__all__ = ["BashParams", "BashTool", "shell_command"]

UPDATE_INTERVAL = 0.1
_DRAIN_GRACE = 0.25  # after the shell exits, how long background children may hold the pipe
_EXIT_POLL = 0.02


class BashParams(BaseModel):
    """Arguments of ``bash``."""

    command: str = Field(description="Bash command to execute")
    timeout: float | None = Field(default=None, description="Timeout in seconds (optional, no default timeout)")


def shell_command() -> list[str]:
    """``[bash, -c]`` when bash is on PATH, else ``[/bin/sh, -c]``."""
    return [shutil.which("bash") or "/bin/sh", "-c"]


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, _signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, _signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Let go of a pipe a background child still holds (else the transport outlives the loop)."""
    transport = getattr(proc, "_transport", None)  # no public way; the shell itself has exited
    if transport is not None:
        transport.close()


class BashTool(BuiltinTool[BashParams]):
    """Run a shell command. ``default_timeout`` (seconds, ``None`` = none, pi's default) applies when the call gives none."""

    name = "bash"
    label = "bash"
    description = (
        "Execute a bash command in the current working directory. Returns stdout and stderr. "
        f"Output is truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). "
        "If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    parameters = BashParams
    mutating = True
    prompt_snippet = "Execute bash commands (ls, grep, find, etc.)"
    command_arg: ClassVar = "command"
    untracked_effects: ClassVar = "bash"

    def __init__(
        self, cwd: Any = None, policy: Any = None, *, default_timeout: float | None = None, env: dict[str, str] | None = None
    ) -> None:
        super().__init__(cwd, policy)
        self.default_timeout = default_timeout
        self.env = env

    async def run(self, args: BashParams, ctx: ToolContext) -> ToolResult:
        cwd = self.work_dir(ctx)
        if not os.path.isdir(cwd):
            raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
        timeout = args.timeout if args.timeout is not None else self.default_timeout
        if timeout is not None and timeout <= 0:
            timeout = None
        output = OutputAccumulator("pi-bash")
        proc = await asyncio.create_subprocess_exec(
            *shell_command(),
            args.command,
            cwd=cwd,
            env=self.env if self.env is not None else dict(os.environ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        loop = asyncio.get_running_loop()
        last_update = 0.0
        pending: asyncio.TimerHandle | None = None

        def emit() -> None:
            nonlocal last_update, pending
            pending = None
            last_update = time.monotonic()
            snap = output.snapshot()
            ctx.update(ToolResult.text(snap.content, details=_details(snap, output, None)))

        def schedule() -> None:
            nonlocal pending
            delay = UPDATE_INTERVAL - (time.monotonic() - last_update)
            if delay <= 0:
                if pending is not None:
                    pending.cancel()
                emit()
            elif pending is None:
                pending = loop.call_later(delay, emit)

        ctx.update(ToolResult(content=[]))

        async def pump() -> None:
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(65536)
                if not chunk:
                    return
                output.append(chunk)
                schedule()

        async def exited() -> None:
            # Not proc.wait(): in asyncio it also waits until every pipe is closed, which a
            # child left running in the background ("server &") may never do.
            while proc.returncode is None:
                await asyncio.sleep(_EXIT_POLL)

        reader = asyncio.ensure_future(pump())
        waiter = asyncio.ensure_future(exited())
        aborter = asyncio.ensure_future(ctx.signal.wait()) if ctx.signal is not None else None
        outcome = "exit"
        try:
            watched = {waiter} | ({aborter} if aborter else set())
            done, _ = await asyncio.wait(watched, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if waiter not in done:
                outcome = "aborted" if aborter is not None and aborter in done else "timeout"
                _kill_group(proc.pid)
                await waiter
            # Children the command left running ("server &") keep running, as in pi, and may
            # hold the pipe open: read what is there, but do not wait for them.
            try:
                await asyncio.wait_for(asyncio.shield(reader), _DRAIN_GRACE if outcome == "exit" else 1.0)
            except asyncio.TimeoutError:
                reader.cancel()
                _close_pipes(proc)
        except asyncio.CancelledError:
            _kill_group(proc.pid)
            reader.cancel()
            raise
        finally:
            if aborter is not None:
                aborter.cancel()
            if pending is not None:
                pending.cancel()
        output.finish()
        snap = output.snapshot()
        code = proc.returncode
        text = _format(snap, output, "(no output)" if outcome == "exit" else "")
        details = _details(snap, output, code if outcome == "exit" else None)
        if outcome == "aborted":
            return ToolResult.error(_status(text, "Command aborted"), details=details)
        if outcome == "timeout":
            return ToolResult.error(_status(text, f"Command timed out after {_seconds(timeout)} seconds"), details=details)
        if code is not None and code < 0:
            try:
                name = _signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return ToolResult.error(_status(text, f"Command was terminated by {name}"), details=details)
        if code:
            return ToolResult.error(_status(text, f"Command exited with code {code}"), details=details)
        return ToolResult.text(text, details=details)


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


def _status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def _format(snap: Any, output: OutputAccumulator, empty: str) -> str:
    text = snap.content or empty
    if not snap.truncated:
        return text
    start = snap.total_lines - snap.output_lines + 1
    end = snap.total_lines
    path = output.full_output_path
    if snap.last_line_partial:
        line_size = format_size(output.last_line_bytes)
        return f"{text}\n\n[Showing last {format_size(snap.output_bytes)} of line {end} (line is {line_size}). Full output: {path}]"
    if snap.truncated_by == "lines":
        return f"{text}\n\n[Showing lines {start}-{end} of {snap.total_lines}. Full output: {path}]"
    return f"{text}\n\n[Showing lines {start}-{end} of {snap.total_lines} ({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {path}]"


def _details(snap: Any, output: OutputAccumulator, code: int | None) -> dict[str, Any] | None:
    details: dict[str, Any] = {}
    if snap.truncated:
        details["truncation"] = snap.details()
        if output.full_output_path:
            details["fullOutputPath"] = output.full_output_path
    if code is not None:
        details["exitCode"] = code
    return details or None
