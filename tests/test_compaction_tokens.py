"""Token estimates (pi's and ours), context sizes, and the automatic-compaction decision."""

from __future__ import annotations

import base64
import struct

import pytest
from test_compaction_gen import Builder

from pi_jupyter.compaction import (
    CompactionSettings,
    branch_context_tokens,
    calculate_context_tokens,
    compaction_trigger,
    estimate_context_tokens,
    estimate_image_tokens,
    estimate_text_tokens,
    estimate_tokens,
    estimate_tokens_pi,
    is_context_overflow,
    should_compact,
)
from pi_jupyter.messages import AssistantMessage, TextContent, ToolCall, UserMessage
from pi_jupyter.session import Session


def _png(w: int, h: int) -> str:
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", w, h) + b"\x08\x02\x00\x00\x00"
    return base64.b64encode(header + b"\x00" * 40).decode()


def _jpeg(w: int, h: int) -> str:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, h, w) + b"\x03" + b"\x00" * 9
    return base64.b64encode(b"\xff\xd8" + app0 + sof + b"\xff\xd9").decode()


def test_pi_estimate_is_chars_over_four_in_utf16_units() -> None:
    assert estimate_tokens_pi({"role": "user", "content": "abcde"}) == 2
    assert estimate_tokens_pi({"role": "user", "content": "🎉🎉"}) == 1  # 4 UTF-16 units
    image = {"type": "image", "data": "x", "mimeType": "image/png"}
    assert estimate_tokens_pi({"role": "user", "content": [{"type": "text", "text": "abcd"}, image]}) == 1  # images in user messages: 0
    assert estimate_tokens_pi({"role": "toolResult", "content": [image], "toolCallId": "1"}) == 1200
    call = {"type": "toolCall", "id": "1", "name": "edit", "arguments": {"n": 1.0, "x": "é"}}
    assert estimate_tokens_pi({"role": "assistant", "content": [call]}) == -(-(4 + len('{"n":1,"x":"é"}')) // 4)
    assert estimate_tokens_pi({"role": "bashExecution", "command": "ls", "output": "ab"}) == 1
    assert estimate_tokens_pi({"role": "compactionSummary", "summary": "x" * 9}) == 3
    assert estimate_tokens_pi({"role": "somethingElse", "content": "x" * 100}) == 0


def test_models_and_dicts_estimate_the_same() -> None:
    model = AssistantMessage(content=[TextContent(text="hello world"), ToolCall(id="1", name="read", arguments={"path": "a.py"})])
    for fn in (estimate_tokens_pi, estimate_tokens):
        assert fn(model) == fn(model.to_dict())
    user = UserMessage.text("中文")
    assert estimate_tokens(user) == estimate_tokens(user.to_dict())


def test_fix_pi_10_14_cjk_and_dense_text_are_not_grossly_undercounted() -> None:
    """pi-design §10 item 14: chars/4 counts Chinese at a quarter of a token per character."""
    chinese = "会话树中的每一步都被保存下来，重启内核也不会丢失任何内容。" * 20
    assert estimate_text_tokens(chinese) >= 1.0 * len(chinese)
    assert estimate_tokens({"role": "user", "content": chinese}) > 3 * estimate_tokens_pi({"role": "user", "content": chinese})
    digest = base64.b64encode(bytes(range(256)) * 8).decode()
    assert estimate_text_tokens(digest) > len(digest) / 2.5
    prose = "The session tree keeps every step, and a restart loses nothing at all. " * 20
    assert 0.8 < estimate_text_tokens(prose) / (len(prose) / 4) < 1.3  # close to pi for English


def test_fix_pi_10_14_images_count_in_user_messages_by_their_size() -> None:
    """pi-design §10 item 14: pi counts images in user messages as 0 tokens."""
    small = {"type": "image", "data": _png(640, 480), "mimeType": "image/png"}
    big = {"type": "image", "data": _png(4000, 3000), "mimeType": "image/png"}
    unknown = {"type": "image", "data": "not an image at all", "mimeType": "image/png"}
    assert estimate_image_tokens(small) == max(-(-640 * 480 // 750), 85 + 170 * 2)
    assert 1500 <= estimate_image_tokens(big) <= 1600
    assert estimate_image_tokens(unknown) == 1200
    assert estimate_image_tokens({"type": "image", "data": _jpeg(1024, 768)}) == estimate_image_tokens(
        {"type": "image", "data": _png(1024, 768)}
    )
    message = {"role": "user", "content": [{"type": "text", "text": "look"}, small]}
    assert estimate_tokens(message) > 400 and estimate_tokens_pi(message) == 1


def test_excluded_bash_counts_nothing() -> None:
    bash = {"role": "bashExecution", "command": "cat secrets", "output": "x" * 400, "excludeFromContext": True}
    assert estimate_tokens(bash) == 0 and estimate_tokens_pi(bash) == 103  # pi counts it: ceil(411 / 4)


def test_context_tokens_are_last_usage_plus_estimates_after_it() -> None:
    usage = {"input": 100, "output": 20, "cacheRead": 30, "cacheWrite": 0, "totalTokens": 0}
    messages = [
        {"role": "user", "content": "x" * 40},
        {"role": "assistant", "content": [], "usage": usage, "stopReason": "stop"},
        {"role": "user", "content": "y" * 40},
        {"role": "assistant", "content": [], "usage": {"totalTokens": 999}, "stopReason": "error"},  # not trusted
        {"role": "toolResult", "toolCallId": "1", "content": [{"type": "text", "text": "z" * 8}]},
    ]
    assert calculate_context_tokens(usage) == 150
    pi = estimate_context_tokens(messages, estimate_tokens_pi)
    assert (pi.tokens, pi.usage_tokens, pi.trailing_tokens, pi.last_usage_index) == (150 + 10 + 0 + 2, 150, 12, 1)
    nothing = estimate_context_tokens(messages[:1], estimate_tokens_pi)
    assert nothing.last_usage_index is None and nothing.tokens == 10


def test_usage_from_before_the_latest_compaction_is_not_trusted() -> None:
    s = Session.in_memory()
    b = Builder(s)
    for i in range(4):
        b.turn(f"r{i} " + "w " * 100, total=90_000)  # large contexts reported before the compaction
    kept = s.raw_branch()[-2]["id"]
    s.append_compaction("short summary", kept, 90_000)
    estimate = branch_context_tokens(s.raw_branch())
    assert estimate.last_usage_index is None and estimate.tokens < 1000  # summary + kept, estimated
    b.turn("after", total=1234)
    after = branch_context_tokens(s.raw_branch())
    assert after.usage_tokens == 1234 and after.last_usage_index == len(s.raw_branch()) - 1


def test_zero_usage_is_no_usage() -> None:
    s = Session.in_memory()
    b = Builder(s)
    b.turn("hello " * 1000, total=0)  # a provider that reports no usage
    estimate = branch_context_tokens(s.raw_branch())
    assert estimate.last_usage_index is None and estimate.tokens > 1000


def test_should_compact_is_strictly_above_window_minus_reserve() -> None:
    settings = CompactionSettings(reserve_tokens=1000)
    assert not should_compact(9000, 10_000, settings)
    assert should_compact(9001, 10_000, settings)
    assert not should_compact(10**6, 10_000, CompactionSettings(enabled=False))
    assert CompactionSettings.model_validate({"reserveTokens": 5, "keepRecentTokens": 7}).keep_recent_tokens == 7


def test_settings_fit_a_small_window() -> None:
    default = CompactionSettings()
    assert default.fit_to(200_000) is default
    small = default.fit_to(16_000)
    assert small.reserve_tokens == 4000 and small.keep_recent_tokens == 4000
    assert small.keep_recent_tokens + small.reserve_tokens < 16_000


@pytest.mark.parametrize(
    ("message", "window", "expected"),
    [
        ({"stopReason": "error", "errorMessage": "prompt is too long: 213462 tokens > 200000 maximum"}, None, True),
        ({"stopReason": "error", "errorMessage": "This model's maximum context length is 8192 tokens"}, None, True),
        ({"stopReason": "error", "errorMessage": "ThrottlingException: Too many tokens, rate limit"}, None, False),
        ({"stopReason": "error", "errorMessage": "413 (no body)"}, None, True),
        ({"stopReason": "error", "errorMessage": "overloaded_error"}, None, False),
        ({"stopReason": "stop", "usage": {"input": 9000, "cacheRead": 2000, "output": 5}}, 10_000, True),
        ({"stopReason": "length", "usage": {"input": 9950, "cacheRead": 0, "output": 0}}, 10_000, True),
        ({"stopReason": "stop", "usage": {"input": 9000, "cacheRead": 0, "output": 5}}, 10_000, False),
    ],
)
def test_context_overflow_detection(message: dict, window: int | None, expected: bool) -> None:
    assert is_context_overflow({"role": "assistant", "content": [], **message}, window) is expected


def test_trigger_threshold_overflow_stale_and_other_model() -> None:
    s = Session.in_memory()
    b = Builder(s)
    b.turn("hi", total=5000)
    settings = CompactionSettings(reserve_tokens=1000)
    assert compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings) is None
    b.turn("more", total=9500)
    trig = compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings)
    assert trig is not None and trig.reason == "threshold" and trig.context_tokens == 9500
    overflow = b.assistant(None, stop="error", errorMessage="prompt is too long: 12000 tokens > 10000 maximum")
    trig = compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings, model=("anthropic", "claude-sonnet-4-5"))
    assert trig is not None and trig.reason == "overflow" and trig.entry_id == overflow
    other = compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings, model=("openai", "gpt-5"))
    assert other is not None and other.reason == "threshold"  # another model's overflow is not ours; the size still is
    s.append_compaction("summary", s.raw_branch()[-2]["id"], 9500)
    assert compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings) is None  # the reply predates the compaction
    b.assistant("aborted", stop="aborted", total=9900)
    assert compaction_trigger(s.raw_branch(), context_window=10_000, settings=settings) is None
    assert compaction_trigger(s.raw_branch(), context_window=10_000, settings=CompactionSettings(enabled=False)) is None


def test_each_pi_version_sizes_user_images_and_system_messages_its_own_way() -> None:
    from pi_jupyter.compaction import estimate_tokens_pi073, estimate_tokens_pi16

    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    user = {"role": "user", "content": [{"type": "text", "text": "abcd"}, image]}
    assert estimate_tokens_pi073(user) == 1 and estimate_tokens_pi16(user) == -(-(4 + 4800) // 4)  # 1.6 counts the image
    system = {"role": "system", "content": "abcd", "sections": {"a": "x" * 8}, "toolsAdded": [{"name": "t"}]}
    assert estimate_tokens_pi073(system) == 0  # 0.73.1 knows no system message
    assert estimate_tokens_pi16(system) == -(-(4 + 8 + len('[{"name":"t"}]')) // 4)
