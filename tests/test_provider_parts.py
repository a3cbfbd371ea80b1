"""Partial JSON, overflow detection, cost and key handling."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from pi_jupyter.messages import AssistantMessage, Usage
from pi_jupyter.providers import (
    ModelCost,
    StreamingJson,
    calculate_cost,
    genai_cost,
    is_context_overflow,
    parse_streaming_json,
    prices_from_genai,
    scrub,
)
from pi_jupyter.providers.base import Model
from pi_jupyter.providers.keys import env_api_key

# ---------------------------------------------------------------- partial JSON


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("   ", {}),
        ('{"path": "a.txt"}', {"path": "a.txt"}),
        ('{"path": "a.t', {"path": "a.t"}),
        ('{"path": "a.txt", "li', {"path": "a.txt"}),
        ('{"path": "a.txt", "limit":', {"path": "a.txt"}),
        ('{"path": "a.txt", "limit": 1', {"path": "a.txt", "limit": 1}),
        ('{"a": [1, 2, {"b": tr', {"a": [1, 2, {"b": True}]}),
        ('{"a": "line\\', {"a": "line"}),
        ('{"a": "\\u00e9\\u00', {"a": "é"}),
        ('{"code": "print(1)\nprint(2)"}', {"code": "print(1)\nprint(2)"}),  # raw newline repaired
        ('{"p": "C:\\dir"}', {"p": "C:\\dir"}),  # invalid escape repaired
        ("[1, 2]", {}),  # arguments are an object or nothing
        ("not json", {}),
    ],
)
def test_parse_streaming_json(text, expected):
    assert parse_streaming_json(text) == expected
    acc = StreamingJson()
    for ch in text:
        acc.feed(ch)
    assert acc.parse() == expected


SAFE_INTS = st.integers(min_value=-(2**53), max_value=2**53)


@settings(deadline=None)  # each example re-parses every prefix; a loaded CI machine is slow
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8),
        # integers a JSON number holds exactly in JavaScript (the SDKs' tool arguments are JS numbers too)
        st.one_of(st.text(max_size=20), SAFE_INTS, st.booleans(), st.none(), st.lists(SAFE_INTS, max_size=3)),
        max_size=4,
    )
)
def test_every_prefix_parses_and_the_whole_parses_exactly(value):
    text = json.dumps(value)
    acc = StreamingJson()
    for i, ch in enumerate(text):
        acc.feed(ch)
        partial = acc.parse()
        assert isinstance(partial, dict)
        assert partial == parse_streaming_json(text[: i + 1])
    assert acc.parse() == value


# ---------------------------------------------------------------- overflow


def msg(stop="error", error=None, **usage):
    return AssistantMessage(stop_reason=stop, error_message=error, usage=Usage(**usage))


@pytest.mark.parametrize(
    "text",
    [
        "400 prompt is too long: 213462 tokens > 200000 maximum",
        "400 Your input exceeds the context window of this model",
        "400 This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
        "400 the request exceeds the available context size, try increasing it",
        "prompt too long; exceeded max context length by 12 tokens",
        "413 status code (no body)",
    ],
)
def test_overflow_errors(text):
    assert is_context_overflow(msg(error=text))
    assert is_context_overflow(msg(error=text).to_dict())  # pi-shaped dicts too


def test_rate_limits_are_not_overflow_and_silent_overflow_is():
    assert not is_context_overflow(msg(error="429 Too many tokens, rate limit exceeded"))
    assert not is_context_overflow(msg(error="500 internal error"))
    assert is_context_overflow(msg(stop="stop", input=900, cache_read=200), context_window=1000)
    assert not is_context_overflow(msg(stop="stop", input=900, cache_read=200))
    assert is_context_overflow(msg(stop="length", input=995, output=0), context_window=1000)
    assert not is_context_overflow(msg(stop="length", input=995, output=3), context_window=1000)


# ---------------------------------------------------------------- cost


def test_calculate_cost_per_million():
    model = Model(id="m", provider="p", api="x", cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75))
    usage = Usage(input=1_000_000, output=2_000_000, cache_read=1_000_000, cache_write=400_000)
    cost = calculate_cost(model, usage)
    assert (cost.input, cost.output, cost.cache_read, cost.cache_write) == pytest.approx((3.0, 30.0, 0.3, 1.5))
    assert cost.total == pytest.approx(34.8) and usage.cost is cost


def test_genai_prices_offline_and_its_input_counting():
    prices = prices_from_genai("anthropic", "claude-sonnet-4-5")
    assert prices == ModelCost(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    assert prices_from_genai("nobody", "nothing") is None
    # genai-prices counts cache tokens inside input; genai_cost converts from pi's counting
    usage = Usage(input=1000, cache_read=500, cache_write=0, output=100)
    exact = genai_cost(usage, "anthropic", "claude-sonnet-4-5")
    model = Model(id="claude-sonnet-4-5", provider="anthropic", api="anthropic-messages", cost=prices)
    ours = calculate_cost(model, usage)
    assert exact.total == pytest.approx(ours.total)


# ---------------------------------------------------------------- keys


def test_scrub_removes_given_keys_and_key_shapes():
    assert scrub("bad key sk-live-123456 here", ["sk-live-123456"]) == "bad key *** here"
    assert scrub("key sk-proj-abcdefghijklmnopqrstuv!", []) == "key sk-proj-***!"
    assert scrub("Authorization: Bearer abcdefghijklmnopqrstuvwxyz", []) == "Authorization: Bearer ***"
    assert scrub("x", [SecretStr("x")]) == "x"  # too short to be a key: left alone
    assert scrub("plain words", []) == "plain words"


def test_env_api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    assert env_api_key("anthropic").get_secret_value() == "sk-ant-env"
    monkeypatch.setenv("MY_LAB_API_KEY", "lab-key")
    assert env_api_key("my-lab").get_secret_value() == "lab-key"
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    assert env_api_key("openrouter") is None
