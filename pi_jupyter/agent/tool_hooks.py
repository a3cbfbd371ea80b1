"""The checks around each tool call, in their order: the policy, then extensions, then the user's hooks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .loop import AfterToolCall, BeforeToolCall, ToolDecision
from .tools import ToolResult


class PolicyContext:
    """What :meth:`Policy.check` reads of a tool context: the working directory and extras."""

    def __init__(self, cwd: str, extra: dict[str, Any]) -> None:
        self.cwd = cwd
        self.extra = extra


async def _call(hook: Callable[[Any], Any], call: Any) -> Any:
    out = hook(call)
    return await out if asyncio.iscoroutine(out) else out


async def before_tool(
    call: BeforeToolCall,
    *,
    policy: Any,
    policy_context: PolicyContext,
    extensions: Any,
    user_hook: Callable[[BeforeToolCall], Any] | None,
) -> ToolDecision | None:
    """A blocking answer wins at the first check that gives one; argument changes carry on to later ones."""
    if policy is not None:
        reason = await policy.check(call.tool, call.args if isinstance(call.args, dict) else {}, policy_context)
        if reason is not None:
            return ToolDecision(block=True, reason=reason)
    decision = await extensions.before_tool_call(call) if len(extensions) else None
    if decision is not None and decision.block:
        return decision
    if user_hook is None:
        return decision
    out = await _call(user_hook, call)
    return out if out is not None else decision


async def after_tool(call: AfterToolCall, *, extensions: Any, user_hook: Callable[[AfterToolCall], Any] | None) -> ToolResult | None:
    """Extensions may replace the result, then the user's hook (each sees the previous replacement)."""
    replaced = await extensions.after_tool_call(call) if len(extensions) else None
    if user_hook is None:
        return replaced
    out = await _call(user_hook, call)
    return out if out is not None else replaced
