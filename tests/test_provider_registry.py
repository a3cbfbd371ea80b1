"""The model registry and dispatch by api."""

from __future__ import annotations

import pytest

from pi_jupyter.providers import (
    Model,
    ModelNotFoundError,
    OfflineProvider,
    ReplayProvider,
    get_model,
    get_provider,
    list_models,
    openai_compatible,
    register_model,
)
from pi_jupyter.providers.registry import REGISTRY


def test_builtin_models_have_limits_and_prices():
    sonnet = get_model("anthropic/claude-sonnet-4-5")
    assert (sonnet.api, sonnet.context_window, sonnet.max_tokens, sonnet.reasoning) == ("anthropic-messages", 200_000, 64_000, True)
    assert sonnet.cost.input == 3.0 and sonnet.cost.cache_read == 0.3 and sonnet.cost.cache_write == 3.75
    assert sonnet.base_url == "https://api.anthropic.com" and "image" in sonnet.input
    mini = get_model("openai/gpt-4o-mini")
    assert mini.api == "openai-responses" and mini.cost.output == 0.6
    assert str(mini) == "openai/gpt-4o-mini"
    assert get_model("claude-haiku-4-5").provider == "anthropic"  # a unique bare id
    assert any(m.ref == "offline/echo" for m in list_models("offline"))


def test_open_ended_providers_and_errors():
    m = get_model("ollama/qwen3:8b")
    assert (m.provider, m.id, m.api, m.base_url) == ("ollama", "qwen3:8b", "openai-completions", "http://127.0.0.1:11434/v1")
    r = get_model("openrouter/anthropic/claude-sonnet-4.5")
    assert r.id == "anthropic/claude-sonnet-4.5" and r.base_url == "https://openrouter.ai/api/v1"
    with pytest.raises(ModelNotFoundError, match="unknown provider 'nope'"):
        get_model("nope/model")
    # a new vendor model id works before the table knows it, with the provider's defaults
    fresh = get_model("anthropic/claude-next-9")
    assert (fresh.api, fresh.base_url, fresh.context_window) == ("anthropic-messages", "https://api.anthropic.com", 200_000)
    with pytest.raises(ModelNotFoundError, match="no model 'offline/nothing'"):
        get_model("offline/nothing")
    with pytest.raises(ModelNotFoundError, match="provider/model"):
        get_model("no-such-model-anywhere")


def test_register_user_models():
    try:
        m = register_model(openai_compatible("http://127.0.0.1:8083/v1/", "smollm2", provider="llamacpp", context_window=4096))
        assert m.base_url == "http://127.0.0.1:8083/v1"
        assert get_model("llamacpp/smollm2") is m
        custom = register_model(
            id="lab-7b", provider="lab", api="openai-completions", base_url="http://lab:9000/v1", cost={"input": 1, "output": 2}
        )
        assert get_model("lab/lab-7b").cost.output == 2 and custom.context_window == 128_000
        with pytest.raises(ValueError, match="missing api"):
            register_model(id="x", provider="unknown-provider")
        with pytest.raises(ValueError, match="base_url must start"):
            openai_compatible("localhost:8080", "m")
    finally:
        REGISTRY.unregister("llamacpp/smollm2")
        REGISTRY.unregister("lab/lab-7b")


def test_dispatch_by_api(tmp_path):
    assert isinstance(get_provider("offline/echo"), OfflineProvider)
    assert type(get_provider("anthropic/claude-sonnet-4-5")).__name__ == "AnthropicMessagesProvider"
    # OpenAI's own models speak Responses; an id the table lacks, and every compatible server, chat completions
    assert type(get_provider(get_model("openai/gpt-4o"))).__name__ == "OpenAIResponsesProvider"
    assert type(get_provider(get_model("openai/gpt-99-preview"))).__name__ == "OpenAICompletionsProvider"
    assert type(get_provider(get_model("ollama/qwen3:8b"))).__name__ == "OpenAICompletionsProvider"
    with pytest.raises(ValueError, match="no provider for api 'carrier-pigeon'"):
        get_provider(Model(id="m", provider="p", api="carrier-pigeon"))
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n')
    from pi_jupyter.providers import replay_model

    assert isinstance(get_provider(replay_model(path)), ReplayProvider)


def test_helpers_the_agent_uses(monkeypatch):
    from pydantic import SecretStr

    from pi_jupyter.providers import api_key_for, default_model, find_model, resolve_model

    assert find_model("nope/nothing") is None and find_model("offline/echo").id == "echo"
    moved = resolve_model("openai/gpt-4o-mini", base_url="http://127.0.0.1:9/v1/")
    assert moved.base_url == "http://127.0.0.1:9/v1" and moved.cost.output == 0.6
    lab = resolve_model("lab/qwen3", base_url="http://127.0.0.1:9/v1")
    assert (lab.provider, lab.id, lab.api) == ("lab", "qwen3", "openai-completions")
    monkeypatch.delenv("PI_JUPYTER_MODEL", raising=False)
    assert default_model().ref == "offline/echo"
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    sonnet = get_model("anthropic/claude-sonnet-4-5")
    assert api_key_for(sonnet) is None
    assert api_key_for(sonnet, "sk-given").get_secret_value() == "sk-given"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-env")
    assert api_key_for(sonnet).get_secret_value() == "sk-env"
    assert isinstance(api_key_for(get_model("ollama/llama3.2")), SecretStr)
