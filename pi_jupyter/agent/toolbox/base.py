"""What every builtin tool shares: its working directory, the policy, redaction, clear errors."""

from __future__ import annotations

import asyncio
import os
import secrets
from typing import Any, ClassVar, Literal

from ..policy import PathNotAllowed, Policy, tool_output_dir
from ..tools import P, Tool, ToolContext, ToolResult, redact_result  # redact_result: re-exported, it lived here
from .safe_open import PathChanged, open_resolved

__all__ = ["BuiltinTool", "ToolError", "attach_world", "new_output_path", "redact_result"]


def attach_world(result: ToolResult, deltas: list[Any]) -> None:
    """Put what a call changed (world deltas, merged) in ``result.details["world"]``; nothing when it changed nothing."""
    deltas = [d for d in deltas if d]
    if not deltas:
        return
    merged = deltas[0]
    for d in deltas[1:]:
        merged.vars.extend(d.vars)
        merged.files.extend(d.files)
        merged.untracked.extend(d.untracked)
    if result.details is None:
        result.details = {}
    if isinstance(result.details, dict):
        result.details["world"] = merged.to_data()


class ToolError(Exception):
    """A failure the model should read: the message becomes an error result (``details`` optional)."""

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


def new_output_path(prefix: str) -> str:
    """A fresh file name in :func:`~pi_jupyter.agent.policy.tool_output_dir` (``PREFIX-<hex>.log``)."""
    return os.path.join(tool_output_dir(), f"{prefix}-{secrets.token_hex(8)}.log")


class BuiltinTool(Tool[P]):
    """Base of the builtin tools.

    ``cwd`` (default: the call's ``ctx.cwd``) is where relative paths start; ``policy``
    (default: confine to ``cwd``) is checked by file tools on every path. Subclasses implement
    :meth:`run`; its results, partial updates and error messages are redacted by
    :func:`~pi_jupyter.agent.tools.run_tool`, as every tool's are.

    ``path_args`` maps argument names to the access they need, so :meth:`Policy.check` can
    refuse a call before it runs; ``command_arg`` names the argument holding a command or code.

    The world (``ctx.extra["world"]``, a :class:`~pi_jupyter.world.Recorder`, given in a
    notebook) records what a call changed in ``details.world``: the files a tool writes (the
    ``write`` paths of ``path_args``), or, for a tool with ``untracked_effects``, that it ran
    a command whose effects nobody follows.
    """

    path_args: ClassVar[dict[str, Literal["read", "write"]]] = {}
    command_arg: ClassVar[str | None] = None
    untracked_effects: ClassVar[str | None] = None

    def __init__(self, cwd: str | os.PathLike[str] | None = None, policy: Policy | None = None) -> None:
        self.cwd = os.fspath(cwd) if cwd is not None else None
        self.policy = policy if policy is not None else Policy()

    def work_dir(self, ctx: ToolContext) -> str:
        """The directory relative paths start from."""
        return os.path.abspath(self.cwd or ctx.cwd or os.getcwd())

    def resolve(self, path: str, ctx: ToolContext, access: Literal["read", "write"] = "read") -> str:
        """The real path for ``path`` if the policy allows ``access``; else a :class:`ToolError` naming path and rule."""
        try:
            return self.policy.check_path(path, cwd=self.work_dir(ctx), access=access)
        except PathNotAllowed as exc:
            raise ToolError(str(exc)) from None

    def open_path(
        self, path: str, ctx: ToolContext, access: Literal["read", "write"], flags: int, *, make_parents: bool = False
    ) -> tuple[int, str]:
        """Check ``path`` (:meth:`resolve`) and open the checked real path without following a symlink
        that appeared since (:func:`~.safe_open.open_resolved`): ``(fd, real path)``. The caller closes ``fd``."""
        real = self.resolve(path, ctx, access)
        world = ctx.extra.get("world") if ctx.extra else None
        redirect = getattr(world, "redirect", None)  # a branch of a grid keeps its files to itself
        opened = redirect(real, access) if callable(redirect) else real
        try:
            return open_resolved(opened, flags, make_parents=make_parents), real
        except PathChanged as exc:
            raise ToolError(f"Path not allowed: {exc.strerror}.") from None
        except OSError as exc:
            exc.filename = real  # the path that was checked, for the tool's message
            raise

    async def execute(self, args: P, ctx: ToolContext) -> ToolResult:
        """Run :meth:`run`; errors become error results."""
        world = ctx.extra.get("world") if ctx.extra else None
        calls = self._world_calls(args, ctx, world) if world is not None else []
        try:
            if ctx.signal is not None and ctx.signal.aborted:
                raise ToolError("Operation aborted")
            out = await self.run(args, ctx)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            out = ToolResult.error(str(exc), details=exc.details)
        except Exception as exc:  # noqa: BLE001 - a tool's failure is the model's information
            out = ToolResult.error(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        if isinstance(out, str):
            out = ToolResult.text(out)
        if world is not None:
            deltas = [c.finish() for c in calls]
            if self.untracked_effects:
                deltas.append(world.untracked(self.untracked_effects))
            attach_world(out, deltas)
        return out

    def _world_calls(self, args: P, ctx: ToolContext, world: Any) -> list[Any]:
        """A recording of each file this call may write (its ``write`` path arguments that the policy allows)."""
        calls = []
        for arg, access in self.path_args.items():
            value = getattr(args, arg, None)
            if access != "write" or not isinstance(value, str):
                continue
            try:
                calls.append(world.file_call(self.resolve(value, ctx, "write")))
            except ToolError:
                continue  # refused: the call fails the same way and writes nothing
        return calls

    async def run(self, args: P, ctx: ToolContext) -> ToolResult | str:
        """The tool's work; raise :class:`ToolError` for failures the model should read."""
        raise NotImplementedError
