"""Settings apply to the next cell: what ``%config PiMagics.X = ...`` changes in an agent that already exists.

A notebook's agent is made by its first ``%%pi`` cell; the user may change ``confirm``,
``tools``, ``tool_timeout``, ``max_turns``, ``model``, ``thinking`` or ``base_url`` at any time after. Before
each cell (and ``%pi`` command) the settings are compared with the ones the agent last took,
and only what changed is applied, so a model chosen with ``%pi model`` or ``%%pi --model``
stays until the setting itself changes. ``widget``, ``stream_rate``, ``session_dir`` and the
notebook context's (``notebook_context``, ``notebook_chars``, ``notebook_images``) are read when
used; ``durability`` applies to the sessions opened after it changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..agent.agent import Agent
from ..agent.policy import Policy
from ..agent.toolbox import BuiltinTool, PythonTool, builtin_tools

__all__ = ["LIVE_SETTINGS", "apply_settings", "settings_snapshot"]

LIVE_SETTINGS = ("model", "base_url", "thinking", "confirm", "tools", "tool_timeout", "max_turns")
"""The settings an existing agent takes from the configuration before each cell."""


def settings_snapshot(cfg: Any) -> dict[str, Any]:
    """The current values of :data:`LIVE_SETTINGS` (lists copied, so later edits show as changes)."""
    return {name: list(v) if isinstance(v := getattr(cfg, name), list) else v for name in LIVE_SETTINGS}


def python_timeout(seconds: float) -> float | None:
    """``tool_timeout`` as the python tool takes it: 0 means no limit."""
    return float(seconds) if seconds and seconds > 0 else None


def apply_settings(agent: Agent, cfg: Any, applied: dict[str, Any], *, make_policy: Callable[[str], Policy]) -> dict[str, Any]:
    """Bring ``agent`` in line with the settings in ``cfg`` that changed since ``applied``; returns the new snapshot.

    ``make_policy(confirm)`` builds the policy for a ``confirm`` value. A model whose API key
    is missing raises ``ValueError`` before anything changes (the setting is tried again at
    the next cell).
    """
    now = settings_snapshot(cfg)
    changed = {name for name in LIVE_SETTINGS if now[name] != applied.get(name)}
    if not changed:
        return applied
    if now["model"] and changed & {"model", "base_url"}:
        from ..providers import api_key_for, resolve_model
        from ..providers.keys import env_key_names

        model = resolve_model(now["model"], base_url=now["base_url"] or None)
        if model.provider not in ("offline", "replay") and api_key_for(model) is None:
            names = " or ".join(env_key_names(model.provider)) or "the provider's API key variable"
            raise ValueError(f"PiMagics.model = {now['model']!r}: no API key for {model.provider}: set {names}")
        if model.ref != agent.model.ref:
            agent.set_model(model)
    if now["thinking"] and "thinking" in changed:
        agent.set_thinking_level(now["thinking"])
    if "max_turns" in changed:
        agent.settings.max_turns = now["max_turns"]
    if changed & {"confirm", "tools", "tool_timeout"}:
        _apply_tools(agent, now, make_policy(now["confirm"]))
    return now


def _apply_tools(agent: Agent, now: dict[str, Any], policy: Policy) -> None:
    timeout = python_timeout(now["tool_timeout"])
    agent.policy = policy
    agent.tool_extra["timeout"] = now["tool_timeout"]
    # The python tool keeps state across calls (a run that timed out and is still going):
    # the same object stays, with the new policy and timeout.
    previous = {t.name: t for t in agent.tools if isinstance(t, BuiltinTool)}
    fresh = builtin_tools(list(now["tools"]), cwd=agent.cwd, namespace=agent.tool_extra.get("namespace"), policy=policy)
    tools: list[Any] = []
    for tool in fresh:
        kept = previous.get(tool.name)
        if isinstance(kept, PythonTool):
            kept.policy = policy
            kept.timeout = timeout
            tools.append(kept)
        else:
            if isinstance(tool, PythonTool):
                tool.timeout = timeout
            tools.append(tool)
    tools.extend(t for t in agent.tools if not isinstance(t, BuiltinTool))  # the user's own tools stay
    agent.tools = tools
