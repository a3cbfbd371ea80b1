"""Thinking levels a model supports, and pi's rule for clamping a requested level to them."""

from __future__ import annotations

from ..messages import THINKING_LEVELS
from ..providers.base import Model


def available_thinking_levels(model: Model) -> list[str]:
    """Thinking levels a model supports (pi's rule: off only without reasoning; xhigh when supported)."""
    if not model.reasoning:
        return ["off"]
    levels = ["off", "minimal", "low", "medium", "high"]
    if model.supports_xhigh:
        levels.append("xhigh")
    return levels


def clamp_thinking(level: str, model: Model) -> str:
    """Clamp a requested level to the model: search upward, then downward, then the first level."""
    available = available_thinking_levels(model)
    if level in available:
        return level
    order = list(THINKING_LEVELS)
    if level in order:
        i = order.index(level)
        for candidate in order[i + 1 :]:
            if candidate in available:
                return candidate
        for candidate in reversed(order[:i]):
            if candidate in available:
                return candidate
    return available[0] if available else "off"
