"""Recognising a context-window overflow in an assistant message (pi's ``isContextOverflow``).

Vendors report an oversized prompt in many wordings; some accept it silently and either
report more input tokens than the window holds or truncate and stop with no output. The
agent session uses :func:`is_context_overflow` to decide to compact and retry instead of
treating the error as final. It lives in the bottom layer because both the providers and
compaction (which may not import providers) need it.
"""

from __future__ import annotations

import re
from typing import Any

OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt is too long",  # Anthropic
        r"request_too_large",  # Anthropic, request bytes (HTTP 413)
        r"input is too long for requested model",  # Amazon Bedrock
        r"exceeds the context window",  # OpenAI
        r"input token count.*exceeds the maximum",  # Google Gemini
        r"maximum prompt length is \d+",  # xAI
        r"reduce the length of the messages",  # Groq
        r"maximum context length is \d+ tokens",  # OpenRouter, vLLM
        r"exceeds the limit of \d+",  # GitHub Copilot
        r"exceeds the available context size",  # llama.cpp server
        r"greater than the context length",  # LM Studio
        r"context window exceeds limit",  # MiniMax
        r"exceeded model token limit",  # Kimi
        r"too large for model with \d+ maximum context length",  # Mistral
        r"model_context_window_exceeded",  # z.ai
        r"prompt too long; exceeded (?:max )?context length",  # Ollama
        r"context[_ ]length[_ ]exceeded",  # generic
        r"too many tokens",  # generic
        r"token limit exceeded",  # generic
        r"^4(?:00|13)\s*(?:status code)?\s*\(no body\)",  # Cerebras: no body at all
    )
)
"""Error texts that mean "the prompt did not fit"."""

NON_OVERFLOW_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE) for p in (r"^(Throttling error|Service unavailable):", r"rate limit", r"too many requests")
)
"""Error texts that look like an overflow but are rate limits (checked first)."""


def _get(obj: Any, name: str, camel: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(camel, obj.get(name))
    return getattr(obj, name, None)


def is_context_overflow(message: Any, context_window: int | None = None) -> bool:
    """True if the assistant ``message`` (a model or pi-shaped dict) means the context overflowed.

    Three cases, as pi: an error whose text matches :data:`OVERFLOW_PATTERNS` (and no
    rate-limit pattern); with ``context_window`` given, a successful reply whose
    ``input + cache_read`` exceeds it (silent overflow); and a ``length`` stop with zero
    output whose input fills at least 99% of the window (silent truncation).
    """
    stop = _get(message, "stop_reason", "stopReason")
    error = _get(message, "error_message", "errorMessage")
    if stop == "error" and error:
        if not any(p.search(error) for p in NON_OVERFLOW_PATTERNS) and any(p.search(error) for p in OVERFLOW_PATTERNS):
            return True
    if not context_window:
        return False
    usage = _get(message, "usage", "usage")
    if usage is None:
        return False
    tokens_in = (_get(usage, "input", "input") or 0) + (_get(usage, "cache_read", "cacheRead") or 0)
    if stop == "stop" and tokens_in > context_window:
        return True
    if stop == "length" and (_get(usage, "output", "output") or 0) == 0 and tokens_in >= context_window * 0.99:
        return True
    return False
