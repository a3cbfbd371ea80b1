"""Request-side normalization (pi's transformMessages) and the adapters' id rules."""

from __future__ import annotations

from pi_jupyter.messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.providers import Model, transform_messages
from pi_jupyter.providers.anthropic_messages import normalize_tool_call_id as anthropic_id
from pi_jupyter.providers.normalize import NO_RESULT_TEXT, USER_IMAGE_PLACEHOLDER
from pi_jupyter.providers.openai_completions import normalize_tool_call_id as openai_id

TARGET = Model(id="claude-x", provider="anthropic", api="anthropic-messages", input=("text", "image"))


def assistant(*blocks, same=True, stop="stop"):
    if same:
        return AssistantMessage(content=list(blocks), api=TARGET.api, provider=TARGET.provider, model=TARGET.id, stop_reason=stop)
    return AssistantMessage(content=list(blocks), api="openai-completions", provider="openai", model="gpt-x", stop_reason=stop)


def test_failed_and_aborted_replies_are_dropped():
    msgs = [
        UserMessage.text("a"),
        assistant(TextContent(text="oops"), stop="error"),
        assistant(TextContent(text="half"), stop="aborted"),
        UserMessage.text("b"),
    ]
    out = transform_messages(msgs, TARGET)
    assert [m.role for m in out] == ["user", "user"]


def test_orphaned_tool_calls_get_synthetic_results_in_place():
    call_a, call_b = ToolCall(id="a", name="read"), ToolCall(id="b", name="ls")
    msgs = [
        UserMessage.text("go"),
        assistant(call_a, call_b, stop="toolUse"),
        ToolResultMessage(tool_call_id="a", tool_name="read", content=[TextContent(text="A")]),
        UserMessage.text("never mind"),
        assistant(ToolCall(id="c", name="bash"), stop="toolUse"),
    ]
    out = transform_messages(msgs, TARGET)
    assert [(m.role, getattr(m, "tool_call_id", None)) for m in out] == [
        ("user", None),
        ("assistant", None),
        ("toolResult", "a"),
        ("toolResult", "b"),
        ("user", None),
        ("assistant", None),
        ("toolResult", "c"),  # pi 0.73 also patches calls left open at the very end
    ]
    synthetic = out[3]
    assert synthetic.is_error and synthetic.text == NO_RESULT_TEXT and synthetic.tool_name == "ls"


def test_foreign_thinking_is_dropped_and_signatures_are_stripped():
    foreign = assistant(
        ThinkingContent(thinking="plan", thinking_signature="sig"),
        ThinkingContent(thinking="  ", thinking_signature=None),
        ThinkingContent(thinking="hidden", thinking_signature="opaque", redacted=True),
        TextContent(text="hi", text_signature="ts"),
        ToolCall(id="call|weird+id", name="read", thought_signature="th"),
        same=False,
        stop="toolUse",
    )
    result = ToolResultMessage(tool_call_id="call|weird+id", tool_name="read", content=[TextContent(text="R")])
    out = transform_messages([UserMessage.text("q"), foreign, result], TARGET, anthropic_id)
    blocks = out[1].content
    # another model's thinking is not sent (pi 1.6), neither as thinking nor as text
    assert [(type(b).__name__, getattr(b, "text", None)) for b in blocks[:1]] == [("TextContent", "hi")]
    assert blocks[0].text_signature is None
    assert blocks[1].id == "call_weird_id" and blocks[1].thought_signature is None
    assert out[2].tool_call_id == "call_weird_id"
    # the input is untouched
    assert foreign.content[0].thinking_signature == "sig" and result.tool_call_id == "call|weird+id"


def test_same_model_keeps_signed_thinking_even_when_empty():
    mine = assistant(
        ThinkingContent(thinking="", thinking_signature="encrypted"),
        ThinkingContent(thinking="", thinking_signature=None),
        ThinkingContent(thinking="x", thinking_signature="r", redacted=True),
        TextContent(text="t", text_signature="keep"),
    )
    out = transform_messages([UserMessage.text("q"), mine], TARGET)
    kinds = [(type(b).__name__, getattr(b, "thinking_signature", None)) for b in out[1].content]
    assert kinds == [("ThinkingContent", "encrypted"), ("ThinkingContent", "r"), ("TextContent", None)]
    assert out[1].content[2].text_signature == "keep"


def test_images_are_replaced_for_text_only_models():
    text_only = TARGET.model_copy(update={"input": ("text",)})
    img = ImageContent(data="AAAA", mime_type="image/png")
    msgs = [UserMessage(content=[TextContent(text="look"), img, img])]
    out = transform_messages(msgs, text_only)
    assert [b.text for b in out[0].content] == ["look", USER_IMAGE_PLACEHOLDER]
    assert transform_messages(msgs, TARGET)[0] is msgs[0]


def test_vendor_id_rules():
    assert anthropic_id("toolu_01-AB") == "toolu_01-AB"
    assert anthropic_id("a.b/c" + "x" * 80) == ("a_b_c" + "x" * 80)[:64]
    openai = Model(id="gpt", provider="openai", api="openai-completions")
    local = Model(id="m", provider="llamacpp", api="openai-completions")
    assert openai_id("call_" + "9" * 50, openai) == ("call_" + "9" * 50)[:40]
    assert openai_id("call_" + "9" * 50, local) == "call_" + "9" * 50
    assert openai_id("call_abc|" + "Z+/=" * 100, local) == "call_abc"
