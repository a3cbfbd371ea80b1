"""Opt-in smoke test against a real llama.cpp server (``PI_JUPYTER_LLAMA_SERVER=http://127.0.0.1:8083``).

It proves the plumbing against a server nobody here wrote: both SDKs stream a reply and the
usage is reported. It never asserts what the model says. See
``shared/tools/real-model/README.md`` for building and running the server.
"""

from __future__ import annotations

import os

import pytest
from wire.helpers import collect, user_request

from pi_jupyter.providers import Model, StreamOptions, openai_compatible

URL = os.environ.get("PI_JUPYTER_LLAMA_SERVER")
pytestmark = [pytest.mark.realmodel, pytest.mark.skipif(not URL, reason="set PI_JUPYTER_LLAMA_SERVER to a llama-server URL to run")]


def test_openai_completions_against_llama_server():
    model = openai_compatible(URL.rstrip("/") + "/v1", "smollm2", provider="llamacpp", context_window=4096, max_tokens=32)
    events, final = collect(model, user_request("Say hello."), StreamOptions(max_tokens=32))
    assert final.stop_reason in ("stop", "length"), final.error_message
    assert final.text and final.usage.output > 0
    assert [e.type for e in events].count("text_delta") > 1


def test_anthropic_messages_against_llama_server():
    model = Model(
        id="smollm2", provider="llamacpp", api="anthropic-messages", base_url=URL.rstrip("/"), max_tokens=32, compat={"no_api_key": True}
    )
    _, final = collect(model, user_request("Say hello."), StreamOptions(api_key="x", max_tokens=32))
    assert final.stop_reason in ("stop", "length"), final.error_message
    assert final.text
