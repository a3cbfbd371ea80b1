"""The model registry: ``provider/model`` strings to :class:`Model` descriptions.

Built in: the offline models (``offline/echo``), a curated list of Anthropic and OpenAI
models (context window, output limit, reasoning, image input; prices from genai-prices'
bundled data), and known OpenAI-compatible providers (OpenRouter, Groq, DeepSeek, xAI,
Mistral, and local servers: ``ollama``, ``llamacpp``, ``vllm``, ``lmstudio``) whose model
ids are open-ended: ``ollama/qwen3:8b`` works without registering anything.

Add your own with :func:`register_model`, or :func:`openai_compatible` for "the
OpenAI-compatible server at URL, model NAME"::

    register_model(openai_compatible("http://127.0.0.1:8080/v1", "smollm2", provider="llamacpp",
                                     context_window=4096))
    get_model("llamacpp/smollm2")
"""

from __future__ import annotations

import threading
from typing import Any

from .base import Model, ModelCost
from .cost import prices_from_genai

OFFLINE_API = "offline"
REPLAY_API = "replay"


class ProviderInfo:
    """What a provider name means: the api its models speak, the default base URL, key handling."""

    def __init__(
        self,
        api: str,
        base_url: str | None,
        *,
        no_api_key: bool = False,
        reasoning: bool = False,
        context_window: int = 128_000,
        max_tokens: int = 16_384,
    ) -> None:
        self.api = api
        self.base_url = base_url
        self.no_api_key = no_api_key
        self.reasoning = reasoning
        self.context_window = context_window
        self.max_tokens = max_tokens


PROVIDERS: dict[str, ProviderInfo] = {
    "anthropic": ProviderInfo("anthropic-messages", "https://api.anthropic.com", reasoning=True, context_window=200_000, max_tokens=64_000),
    "openai": ProviderInfo("openai-completions", "https://api.openai.com/v1"),
    "openrouter": ProviderInfo("openai-completions", "https://openrouter.ai/api/v1"),
    "groq": ProviderInfo("openai-completions", "https://api.groq.com/openai/v1"),
    "deepseek": ProviderInfo("openai-completions", "https://api.deepseek.com"),
    "xai": ProviderInfo("openai-completions", "https://api.x.ai/v1"),
    "mistral": ProviderInfo("openai-completions", "https://api.mistral.ai/v1"),
    "together": ProviderInfo("openai-completions", "https://api.together.xyz/v1"),
    "fireworks": ProviderInfo("openai-completions", "https://api.fireworks.ai/inference/v1"),
    "ollama": ProviderInfo("openai-completions", "http://127.0.0.1:11434/v1", no_api_key=True, context_window=8192, max_tokens=4096),
    "llamacpp": ProviderInfo("openai-completions", "http://127.0.0.1:8080/v1", no_api_key=True, context_window=8192, max_tokens=4096),
    "vllm": ProviderInfo("openai-completions", "http://127.0.0.1:8000/v1", no_api_key=True, context_window=32_768, max_tokens=4096),
    "lmstudio": ProviderInfo("openai-completions", "http://127.0.0.1:1234/v1", no_api_key=True, context_window=8192, max_tokens=4096),
    "offline": ProviderInfo(OFFLINE_API, None, no_api_key=True),
    "replay": ProviderInfo(REPLAY_API, None, no_api_key=True),
}
"""Known provider names."""

# (id, name, reasoning, images, context window, max output, fallback prices in/out/cache-read/cache-write)
_ANTHROPIC = [
    ("claude-opus-4-6", "Claude Opus 4.6", True, True, 1_000_000, 128_000, (5, 25, 0.5, 6.25)),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", True, True, 1_000_000, 64_000, (3, 15, 0.3, 3.75)),
    ("claude-opus-4-5", "Claude Opus 4.5", True, True, 200_000, 64_000, (5, 25, 0.5, 6.25)),
    ("claude-sonnet-4-5", "Claude Sonnet 4.5", True, True, 200_000, 64_000, (3, 15, 0.3, 3.75)),
    ("claude-haiku-4-5", "Claude Haiku 4.5", True, True, 200_000, 64_000, (1, 5, 0.1, 1.25)),
    ("claude-opus-4-1", "Claude Opus 4.1", True, True, 200_000, 32_000, (15, 75, 1.5, 18.75)),
    ("claude-sonnet-4-0", "Claude Sonnet 4", True, True, 200_000, 64_000, (3, 15, 0.3, 3.75)),
    ("claude-3-7-sonnet-20250219", "Claude Sonnet 3.7", True, True, 200_000, 64_000, (3, 15, 0.3, 3.75)),
    ("claude-3-5-haiku-20241022", "Claude Haiku 3.5", False, True, 200_000, 8192, (0.8, 4, 0.08, 1)),
]
_OPENAI = [
    ("gpt-5", "GPT-5", True, True, 400_000, 128_000, (1.25, 10, 0.125, 0)),
    ("gpt-5-mini", "GPT-5 mini", True, True, 400_000, 128_000, (0.25, 2, 0.025, 0)),
    ("gpt-5-nano", "GPT-5 nano", True, True, 400_000, 128_000, (0.05, 0.4, 0.005, 0)),
    ("gpt-4.1", "GPT-4.1", False, True, 1_047_576, 32_768, (2, 8, 0.5, 0)),
    ("gpt-4.1-mini", "GPT-4.1 mini", False, True, 1_047_576, 32_768, (0.4, 1.6, 0.1, 0)),
    ("gpt-4.1-nano", "GPT-4.1 nano", False, True, 1_047_576, 32_768, (0.1, 0.4, 0.03, 0)),
    ("gpt-4o", "GPT-4o", False, True, 128_000, 16_384, (2.5, 10, 1.25, 0)),
    ("gpt-4o-mini", "GPT-4o mini", False, True, 128_000, 16_384, (0.15, 0.6, 0.075, 0)),
    ("o3", "o3", True, True, 200_000, 100_000, (2, 8, 0.5, 0)),
    ("o4-mini", "o4-mini", True, True, 200_000, 100_000, (1.1, 4.4, 0.275, 0)),
]


class ModelNotFoundError(KeyError):
    """A model reference that the registry cannot resolve."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "model not found"


class ModelRegistry:
    """Models by ``provider/id``. The module-level functions use one shared instance."""

    def __init__(self) -> None:
        self._models: dict[str, Model] = {}
        self._builtins_loaded = False
        self._lock = threading.Lock()

    def _ensure_builtins(self) -> None:
        if self._builtins_loaded:
            return
        with self._lock:
            if self._builtins_loaded:
                return
            from .offline import builtin_offline_models

            for model in builtin_offline_models():
                self._models.setdefault(model.ref, model)
            # OpenAI's own models speak the Responses API (as in pi): their reasoning survives tool calls.
            for provider, api, table in (("anthropic", "anthropic-messages", _ANTHROPIC), ("openai", "openai-responses", _OPENAI)):
                info = PROVIDERS[provider]
                for mid, name, reasoning, images, window, max_out, fallback in table:
                    cost = prices_from_genai(provider, mid) or ModelCost(
                        input=fallback[0], output=fallback[1], cache_read=fallback[2], cache_write=fallback[3]
                    )
                    model = Model(
                        id=mid,
                        provider=provider,
                        api=api,
                        name=name,
                        base_url=info.base_url,
                        reasoning=reasoning,
                        input=("text", "image") if images else ("text",),
                        context_window=window,
                        max_tokens=max_out,
                        cost=cost,
                    )
                    self._models.setdefault(model.ref, model)
            self._builtins_loaded = True

    def register(self, model: Model, *, replace: bool = True) -> Model:
        """Add ``model`` under ``model.ref`` (replacing one of the same ref unless ``replace=False``)."""
        if not isinstance(model, Model):
            raise TypeError(f"register_model expects a Model, got {type(model).__name__}")
        if not model.provider or not model.id:
            raise ValueError(f"a model needs a provider and an id, got provider={model.provider!r} id={model.id!r}")
        self._ensure_builtins()
        with self._lock:
            if not replace and model.ref in self._models:
                raise ValueError(f"model {model.ref!r} is already registered")
            self._models[model.ref] = model
        return model

    def unregister(self, ref: str) -> None:
        """Remove a registered model (no error if absent)."""
        with self._lock:
            self._models.pop(ref, None)

    def list(self, provider: str | None = None) -> list[Model]:
        """All known models (optionally of one provider), in registration order."""
        self._ensure_builtins()
        return [m for m in self._models.values() if provider is None or m.provider == provider]

    def get(self, ref: str | Model) -> Model:
        """Resolve ``ref``: a :class:`Model` (returned as is), ``provider/id``, or a unique bare id.

        An unknown id of a known OpenAI-compatible provider (``ollama/llama3.2``,
        ``openrouter/anthropic/claude-sonnet-4.5``) gives a model with that provider's
        defaults. Raises :class:`ModelNotFoundError` naming what was asked and what exists.
        """
        if isinstance(ref, Model):
            return ref
        if not isinstance(ref, str) or not ref.strip():
            raise ModelNotFoundError(f"a model reference is a 'provider/model' string, got {ref!r}")
        ref = ref.strip()
        self._ensure_builtins()
        found = self._models.get(ref)
        if found is not None:
            return found
        if "/" in ref:
            provider, mid = ref.split("/", 1)
            info = PROVIDERS.get(provider)
            if info is not None and info.api not in (OFFLINE_API, REPLAY_API) and mid:
                cost = prices_from_genai(provider, mid) or ModelCost()
                compat: dict[str, Any] = {"no_api_key": True} if info.no_api_key else {}
                return Model(
                    id=mid,
                    provider=provider,
                    api=info.api,
                    name=mid,
                    base_url=info.base_url,
                    reasoning=info.reasoning,
                    context_window=info.context_window,
                    max_tokens=info.max_tokens,
                    cost=cost,
                    compat=compat,
                )
            known = ", ".join(sorted(m.ref for m in self._models.values() if m.provider == provider)) or "none"
            hint = (
                f"known {provider} models: {known}"
                if provider in PROVIDERS
                else f"unknown provider {provider!r}; known providers: {', '.join(sorted(PROVIDERS))}"
            )
            raise ModelNotFoundError(f"no model {ref!r} ({hint}); register one with register_model(...)")
        matches = [m for m in self._models.values() if m.id == ref]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ModelNotFoundError(f"model id {ref!r} is ambiguous: {', '.join(m.ref for m in matches)}; write provider/model")
        raise ModelNotFoundError(f"no model {ref!r}; write 'provider/model' (e.g. 'anthropic/claude-sonnet-4-5', 'offline/echo')")


REGISTRY = ModelRegistry()
"""The shared registry used by :func:`get_model`, :func:`register_model` and :func:`list_models`."""


def get_model(ref: str | Model) -> Model:
    """The :class:`Model` for ``"provider/model"`` (see :meth:`ModelRegistry.get`).

    ``"replay/PATH"`` replays the session file at ``PATH`` (see :mod:`.replay`), so a notebook
    recorded with a real model re-runs with ``%%pi --model replay/recorded.jsonl``.
    """
    if isinstance(ref, str) and ref.startswith("replay/"):
        import os

        path = ref[len("replay/") :]
        try:
            return REGISTRY.get(ref)
        except ModelNotFoundError:
            if not os.path.isfile(path):
                raise ModelNotFoundError(f"replay/{path}: no session file at {os.path.abspath(path)} to replay") from None
            from .replay import replay_model

            return replay_model(path)
    return REGISTRY.get(ref)


def register_model(model: Model | None = None, /, **fields: Any) -> Model:
    """Register a model, given as a :class:`Model` or as its fields, and return it.

    ``register_model(id="my-model", provider="local", api="openai-completions",
    base_url="http://127.0.0.1:8080/v1", context_window=8192)``. The provider's default
    ``api`` and ``base_url`` are used when left out for a known provider.
    """
    if model is None:
        provider = fields.get("provider")
        info = PROVIDERS.get(provider or "")
        if info is not None:
            fields.setdefault("api", info.api)
            fields.setdefault("base_url", info.base_url)
            if info.no_api_key:
                fields["compat"] = {"no_api_key": True, **fields.get("compat", {})}
        if "cost" in fields and isinstance(fields["cost"], dict):
            fields["cost"] = ModelCost(**fields["cost"])
        missing = [k for k in ("id", "provider", "api") if not fields.get(k)]
        if missing:
            raise ValueError(f"register_model: missing {', '.join(missing)} (a model needs id, provider and api)")
        model = Model(**fields)
    elif fields:
        model = model.model_copy(update=fields)
    return REGISTRY.register(model)


def list_models(provider: str | None = None) -> list[Model]:
    """All registered models, optionally of one provider."""
    return REGISTRY.list(provider)


def openai_compatible(
    base_url: str,
    model: str,
    *,
    provider: str = "local",
    name: str | None = None,
    api_key_env: str | None = None,
    context_window: int = 8192,
    max_tokens: int = 4096,
    reasoning: bool = False,
    images: bool = False,
    cost: ModelCost | None = None,
    compat: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Model:
    """A :class:`Model` for "the OpenAI-compatible server at ``base_url``, model ``model``".

    ``base_url`` is the API root the ``openai`` SDK expects (usually ending in ``/v1``).
    Without ``api_key_env`` no key is required (local servers); with it the key is read
    from that environment variable unless passed in. Pass the result to
    :func:`register_model` to use it by name (``f"{provider}/{model}"``).
    """
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"openai_compatible: base_url must start with http:// or https://, got {base_url!r}")
    extra: dict[str, Any] = dict(compat or {})
    if api_key_env:
        extra["api_key_env"] = api_key_env
    else:
        extra.setdefault("no_api_key", True)
    return Model(
        id=model,
        provider=provider,
        api="openai-completions",
        name=name or model,
        base_url=base_url.rstrip("/"),
        reasoning=reasoning,
        input=("text", "image") if images else ("text",),
        context_window=context_window,
        max_tokens=max_tokens,
        cost=cost or ModelCost(),
        compat=extra,
        headers=dict(headers or {}),
    )
