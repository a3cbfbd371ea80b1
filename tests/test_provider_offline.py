"""The offline model: deterministic text, thinking, tool calls, answers from tool results, summaries."""

from __future__ import annotations

import asyncio

from wire.helpers import collect

from pi_jupyter.messages import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX, TextContent, ToolResultMessage, UserMessage
from pi_jupyter.providers import AbortSignal, LlmRequest, StreamOptions, ToolSpec, is_context_overflow, offline_model, stream

SUMMARIZATION_SYSTEM = "You are a context summarization assistant. ... ONLY output the structured summary."
TOOLS = [
    ToolSpec(name="read", parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    ToolSpec(name="python", parameters={"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
    ToolSpec(name="ls", parameters={"type": "object", "properties": {"path": {"type": "string"}}}),
]


def ask(text, tools=TOOLS, **opts):
    return collect("offline/echo", LlmRequest(messages=[UserMessage.text(text)], tools=tools), StreamOptions(**opts))


def test_echo_is_deterministic_streamed_and_says_what_it_is():
    events, final = ask("The sky is green today.")
    again = ask("The sky is green today.")[1]
    assert final.text == again.text
    assert final.text.startswith("[offline model]") and "The sky is green today." in final.text
    assert "not a language model" in final.text and "`use NAME`" in final.text
    assert [e.type for e in events].count("text_delta") > 3
    assert final.stop_reason == "stop" and final.provider == "offline" and final.model == "echo"
    assert final.usage.input > 0 and final.usage.output > 0 and final.usage.cost.total == 0


def test_thinking_when_a_level_is_set():
    events, final = ask("hello", reasoning="high")
    assert final.content[0].type == "thinking" and "'high'" in final.content[0].thinking
    assert final.content[0].thinking.startswith("[offline model]")
    assert "thinking_delta" in [e.type for e in events]
    assert ask("hello")[1].content[0].type == "text"


def test_call_with_json_makes_several_calls():
    _, final = ask('call read with {"path": "a.txt"} and then call bash with {"command": "ls -la"}')
    assert final.stop_reason == "toolUse"
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("read", {"path": "a.txt"}), ("bash", {"command": "ls -la"})]
    assert len({c.id for c in final.tool_calls}) == 2


def test_use_tool_infers_arguments():
    _, final = ask("Please use read on `data/results.csv` and tell me.")
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("read", {"path": "data/results.csv"})]
    _, final = ask("use python:\n```python\nprint(6 * 7)\n```")
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("python", {"code": "print(6 * 7)"})]
    _, final = ask("run bash `echo hi`")
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("bash", {"command": "echo hi"})]
    _, final = ask("use ls")
    assert [(c.name, c.arguments) for c in final.tool_calls] == [("ls", {})]


def test_tools_not_offered_are_not_called():
    _, final = ask("use `grep` please", tools=TOOLS[:1])
    assert final.tool_calls == [] and "`grep`" in final.text and "not offered" in final.text
    _, final = ask("use read on notes.txt", tools=[])
    assert final.tool_calls == []


def test_answers_by_quoting_tool_results():
    first = ask('call read with {"path": "a.txt"}')[1]
    call = first.tool_calls[0]
    result = ToolResultMessage(tool_call_id=call.id, tool_name="read", content=[TextContent(text="alpha\nbeta")])
    _, final = collect(
        "offline/echo", LlmRequest(messages=[UserMessage.text('call read with {"path": "a.txt"}'), first, result], tools=TOOLS)
    )
    assert final.stop_reason == "stop" and final.tool_calls == []
    assert "`read` returned:\n```\nalpha\nbeta\n```\n" in final.text


def answer_to(*results):
    """The offline model's answer to ``results`` (text, or ``(text, is_error)``) of one call each."""
    first = ask('call read with {"path": "a.txt"}')[1]
    call = first.tool_calls[0]
    messages = []
    for n, r in enumerate(results):
        text, is_error = r if isinstance(r, tuple) else (r, False)
        content = [TextContent(text=text)] if text else []
        messages.append(ToolResultMessage(tool_call_id=f"{call.id}_{n}", tool_name="python", content=content, is_error=is_error))
    return collect("offline/echo", LlmRequest(messages=[UserMessage.text("go"), first, *messages], tools=TOOLS))[1].text


def test_tool_output_is_quoted_verbatim_in_a_code_block_so_a_table_keeps_its_lines():
    table = (
        "              x         y\n"
        "count  3.000000  3.000000\n"
        "mean   2.000000  5.000000\n"
        "std    1.000000  1.000000\n"
        "> not a quote\n"
        "  indented"
    )
    text = answer_to(table)
    assert f"`python` returned:\n```\n{table}\n```\n" in text
    outside = text.replace(table, "")
    assert not any(line.startswith(">") for line in outside.split("\n"))  # no blockquote: renderers join its lines


def test_the_fence_is_longer_than_any_backtick_run_in_the_output():
    inner = "Here is code:\n```python\nprint(1)\n```\nand ````four````"
    text = answer_to(inner)
    assert f"\n`````\n{inner}\n`````\n" in text
    # what follows the block is outside it: the closing fence is the first line of five backticks
    body = text.split("`````\n", 1)[1]
    assert body.split("\n`````", 1)[0] == inner


def test_long_output_empty_output_and_failures():
    long = "\n".join(f"line {i}" for i in range(25))
    text = answer_to(long, "", ("Traceback: boom", True))
    block = "\n".join(f"line {i}" for i in range(20))
    assert f"```\n{block}\n```\n… (5 more lines)\n" in text and "line 20" not in text
    assert "returned:\n(no text)\n" in text
    assert "`python` (failed) returned:\n```\nTraceback: boom\n```" in text


def test_tiny_context_window_overflows_like_a_vendor():
    tiny = offline_model("tiny", context_window=10)
    _, final = collect(tiny, LlmRequest(messages=[UserMessage.text("x" * 100)]))
    assert final.stop_reason == "error" and final.error_message.startswith("prompt is too long: 25 tokens > 10 maximum")
    assert is_context_overflow(final)


def test_abort_between_deltas():
    slow = offline_model("slow", delta_delay_s=0.05)
    signal = AbortSignal()

    async def main():
        events = []
        async for e in stream(
            slow, LlmRequest(messages=[UserMessage.text("one two three four five six seven")]), StreamOptions(signal=signal)
        ):
            events.append(e)
            if e.type == "text_delta":
                signal.abort()
        return events

    events = asyncio.run(main())
    assert events[-1].type == "error" and events[-1].error.stop_reason == "aborted"
    assert events[-1].error.text.startswith("[offline model]")


def _summary_request(conversation, previous=None, instructions="Use this EXACT format:\n\n## Goal\n...\n## Critical Context\n..."):
    text = f"<conversation>\n{conversation}\n</conversation>\n\n"
    if previous:
        text += f"<previous-summary>\n{previous}\n</previous-summary>\n\n"
    text += instructions
    return LlmRequest(system_prompt=SUMMARIZATION_SYSTEM, messages=[UserMessage.text(text)])


def test_summary_quotes_facts_and_keeps_them_across_compactions():
    conv1 = (
        "[User]: My cat is called Pixel.\n\n[Assistant]: Noted.\n\n"
        '[Assistant tool calls]: read(path="pets.txt")\n\n[Tool result]: Pixel, 3 years\n\n[User]: What else?'
    )
    _, first = collect("offline/echo", _summary_request(conv1))
    s1 = first.text
    for heading in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in s1
    assert '"My cat is called Pixel."' in s1 and 'read(path="pets.txt")' in s1 and "Pixel, 3 years" in s1
    assert s1.startswith("[offline model]")
    # second compaction: the old summary comes back as previous-summary; the fact survives
    conv2 = "[User]: " + COMPACTION_SUMMARY_PREFIX + s1 + COMPACTION_SUMMARY_SUFFIX + "\n\n[User]: Now the dog is Rex."
    _, second = collect("offline/echo", _summary_request(conv2, previous=s1))
    assert '"My cat is called Pixel."' in second.text and '"Now the dog is Rex."' in second.text
    assert collect("offline/echo", _summary_request(conv1))[1].text == s1  # deterministic


def test_turn_prefix_summary_sections():
    req = _summary_request(
        "[User]: Build the parser.", instructions="## Original Request\n...\n## Early Progress\n...\n## Context for Suffix\n..."
    )
    _, final = collect("offline/echo", req)
    assert "## Original Request" in final.text and '"Build the parser."' in final.text and "## Context for Suffix" in final.text


def test_tool_call_ids_stay_unique_when_compaction_shortened_the_history():
    # Ids were offline_<assistant count>_<n>: after a compaction drops older turns the count
    # goes down, and a new call could reuse the id of a kept call (vendors refuse duplicates).
    from pi_jupyter.messages import AssistantMessage, ToolCall, Usage

    kept = AssistantMessage(
        content=[ToolCall(id="offline_1_0", name="ls", arguments={"path": "."})],
        api="offline", provider="offline", model="echo", usage=Usage(), stop_reason="toolUse",
    )  # fmt: skip
    messages = [
        UserMessage.text("summary of what came before"),
        kept,
        ToolResultMessage(tool_call_id="offline_1_0", tool_name="ls", content=[TextContent(text="a.txt")]),
        UserMessage.text('use ls on `src/` and call read with {"path": "a.txt"}'),
    ]
    _, final = collect("offline/echo", LlmRequest(messages=messages, tools=TOOLS), StreamOptions())
    ids = [c.id for c in final.tool_calls]
    assert len(ids) == 2 and len(set(ids)) == 2 and "offline_1_0" not in ids
    assert ids == [c.id for c in collect("offline/echo", LlmRequest(messages=messages, tools=TOOLS), StreamOptions())[1].tool_calls]
