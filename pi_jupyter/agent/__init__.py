"""The agent: events, the loop, tools, policy, retry, compaction and extensions, assembled by ``Agent``.

Each part keeps its own state and sees the agent only through a ``RunContext`` (:mod:`.run_context`).
"""

from .agent import Agent, AgentBusyError, AgentSettings, RetrySettings, RunResult, clamp_thinking
from .events import Event
from .loop import AfterToolCall, BeforeToolCall, ToolDecision
from .tools import Tool, ToolContext, ToolResult, tool

__all__ = [
    "AfterToolCall",
    "Agent",
    "AgentBusyError",
    "AgentSettings",
    "BeforeToolCall",
    "Event",
    "RetrySettings",
    "RunResult",
    "Tool",
    "ToolContext",
    "ToolDecision",
    "ToolResult",
    "clamp_thinking",
    "tool",
]
