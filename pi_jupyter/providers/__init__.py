"""Providers: the model registry, the vendor adapters, and the offline and replay stand-ins.

Everything a caller needs::

    from pi_jupyter.providers import LlmRequest, StreamOptions, get_model, stream, complete

    model = get_model("anthropic/claude-sonnet-4-5")     # or "offline/echo", "ollama/qwen3:8b"
    async for event in stream(model, LlmRequest(messages=[UserMessage.text("Hi")])):
        ...                                              # start, *_start/_delta/_end, done|error
    message = await complete(model, request)            # just the final AssistantMessage

``stream`` dispatches on ``model.api``: ``anthropic-messages``, ``openai-responses`` (the
built-in OpenAI models), ``openai-completions`` (every other OpenAI-compatible server),
``offline`` and ``replay``; :func:`register_provider` adds more. A provider never raises:
failures and aborts end the stream with an ``error`` event.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from typing import Any

from pydantic import SecretStr

from .base import (
    AbortSignal,
    AssistantEvent,
    DoneEvent,
    ErrorEvent,
    LlmRequest,
    Model,
    ModelCost,
    Provider,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolSpec,
    final_message,
)
from .cost import calculate_cost, genai_cost, prices_from_genai
from .keys import env_api_key, scrub
from .normalize import transform_messages
from .offline import OfflineProvider, offline_model
from .overflow import is_context_overflow
from .pace import Pause, StepGate, parse_pace
from .partial_json import StreamingJson, parse_streaming_json
from .registry import (
    PROVIDERS,
    REGISTRY,
    ModelNotFoundError,
    ModelRegistry,
    get_model,
    list_models,
    openai_compatible,
    register_model,
)
from .replay import ReplayProvider, replay_model
from .retry_after import retry_after_ms
from .transcript import collapse_request, sent_messages, wire_request

_providers: dict[str, Any] = {}
_replays: dict[str, ReplayProvider] = {}
_lock = threading.Lock()


def register_provider(api: str, provider: Provider) -> None:
    """Serve models whose ``api`` is ``api`` with ``provider`` (replaces a built-in one)."""
    if not hasattr(provider, "stream"):
        raise TypeError(f"register_provider: {provider!r} has no stream(model, request, options) method")
    with _lock:
        _providers[api] = provider


def get_provider(api_or_model: str | Model) -> Provider:
    """The provider for a model (or a model ref like ``"offline/echo"``, or an api name).

    A replay model gets the :class:`ReplayProvider` of its session file.
    """
    model: Model | None = None
    if isinstance(api_or_model, Model):
        model = api_or_model
        api = model.api
    elif isinstance(api_or_model, str) and "/" in api_or_model:
        model = get_model(api_or_model)
        api = model.api
    else:
        api = api_or_model
    with _lock:
        if api in _providers:
            return _providers[api]
        if api == "replay":
            if model is None or not model.compat.get("session_path"):
                raise ValueError("a replay model names its session file: use replay_model(path) or ReplayProvider(path)")
            path = os.path.abspath(model.compat["session_path"])
            if path not in _replays:
                _replays[path] = ReplayProvider(path)
            return _replays[path]
        provider = _builtin(api)
        _providers[api] = provider
        return provider


def _builtin(api: str) -> Any:
    if api == "offline":
        return OfflineProvider()
    if api == "openai-completions":
        from .openai_completions import OpenAICompletionsProvider

        return OpenAICompletionsProvider()
    if api == "anthropic-messages":
        from .anthropic_messages import AnthropicMessagesProvider

        return AnthropicMessagesProvider()
    if api == "openai-responses":
        from .openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider()
    known = ", ".join(sorted({"offline", "replay", "openai-completions", "openai-responses", "anthropic-messages", *_providers}))
    raise ValueError(f"no provider for api {api!r}; known apis: {known} (add one with register_provider)")


def find_model(ref: str | Model) -> Model | None:
    """Like :func:`get_model`, but ``None`` instead of an error for an unknown reference."""
    try:
        return get_model(ref)
    except ModelNotFoundError:
        return None


def resolve_model(ref: str | Model, *, base_url: str | None = None) -> Model:
    """The model for ``ref``, pointed at ``base_url`` when one is given.

    With ``base_url``, a ``provider/model`` the registry does not know becomes an
    OpenAI-compatible model at that URL (e.g. ``resolve_model("lab/qwen", base_url=URL)``).
    """
    if base_url is None:
        return get_model(ref)
    found = find_model(ref)
    if found is not None:
        return found.model_copy(update={"base_url": base_url.rstrip("/")})
    if isinstance(ref, str) and "/" in ref:
        provider, mid = ref.split("/", 1)
        return openai_compatible(base_url, mid, provider=provider)
    return openai_compatible(base_url, str(ref))


def default_model() -> Model:
    """The model used when none is chosen: ``$PI_JUPYTER_MODEL`` if set, else ``offline/echo``."""
    ref = os.environ.get("PI_JUPYTER_MODEL")
    return get_model(ref) if ref else get_model("offline/echo")


def api_key_for(model: Model, api_key: str | SecretStr | None = None) -> SecretStr | None:
    """The key a call to ``model`` would use: ``api_key`` if given, else the environment.

    Models that need no key (offline, replay, local servers) get a placeholder; ``None``
    means "no key available".
    """
    if isinstance(api_key, SecretStr) and api_key.get_secret_value():
        return api_key
    if isinstance(api_key, str) and api_key:
        return SecretStr(api_key)
    key = env_api_key(model.provider)
    if key is None and model.compat.get("api_key_env"):
        value = os.environ.get(model.compat["api_key_env"])
        key = SecretStr(value) if value else None
    if key is None and (model.compat.get("no_api_key") or model.api in ("offline", "replay")):
        return SecretStr("not-needed")
    return key


async def stream(model: str | Model, request: LlmRequest, options: StreamOptions | None = None) -> AsyncIterator[AssistantEvent]:
    """Stream the reply of ``model`` to ``request`` (see the module docstring). Never raises for a model failure."""
    resolved = get_model(model)
    provider = get_provider(resolved)
    events = provider.stream(resolved, collapse_request(request), options or StreamOptions())
    try:
        async for event in events:
            yield event
    finally:
        aclose = getattr(events, "aclose", None)  # a consumer that stops early closes the provider's stream too
        if aclose is not None:
            await aclose()


async def complete(model: str | Model, request: LlmRequest, options: StreamOptions | None = None) -> Any:
    """Run :func:`stream` to the end and return the final :class:`~pi_jupyter.messages.AssistantMessage`."""
    final = None
    async for event in stream(model, request, options):
        message = final_message(event)
        if message is not None:
            final = message
    if final is None:  # a third-party provider broke the contract
        raise RuntimeError(f"the provider for {model} ended its stream without a done or error event")
    return final


__all__ = [
    "AbortSignal",
    "AssistantEvent",
    "DoneEvent",
    "ErrorEvent",
    "LlmRequest",
    "Model",
    "ModelCost",
    "ModelNotFoundError",
    "ModelRegistry",
    "OfflineProvider",
    "PROVIDERS",
    "Provider",
    "REGISTRY",
    "ReplayProvider",
    "StartEvent",
    "StreamOptions",
    "StreamingJson",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolSpec",
    "api_key_for",
    "calculate_cost",
    "complete",
    "default_model",
    "env_api_key",
    "final_message",
    "find_model",
    "genai_cost",
    "get_model",
    "get_provider",
    "is_context_overflow",
    "retry_after_ms",
    "list_models",
    "offline_model",
    "openai_compatible",
    "parse_streaming_json",
    "prices_from_genai",
    "register_model",
    "register_provider",
    "replay_model",
    "parse_pace",
    "Pause",
    "StepGate",
    "resolve_model",
    "scrub",
    "stream",
    "transform_messages",
    "sent_messages",
    "wire_request",
]
